"""Whether a text is Python at all: the interpreter that runs devlint decides, not libcst.

DEV000 means "Python cannot run this file", so it comes from CPython's own compiler and sits
where CPython puts the error. libcst only builds the tree the analysis reads, and its grammar
differs from CPython's at the edges both ways:

* libcst accepts what CPython refuses: invalid escapes (`"\\u12"`, `b"é"`), `[*a for a in b]`,
  `(*a) = b`, `f"{*x}"`, a `return` outside a function, syntax newer than the interpreter.
  These are DEV000 here, at CPython's line and column.
* CPython accepts what libcst cannot parse (some mixes of tabs and spaces, a form feed in
  indentation, thousands of adjacent string literals, `(x): int = 1`, a CRLF file ending in a
  backslash). Such a file is valid Python, so it is no DEV000: the engine leaves it unanalysed
  and says nothing (there is nothing it could prove about it).

The whole compile runs (`compile(text, path, "exec")`, never executed), not only the parse:
`python file.py` refuses a `return` outside a function or a `nonlocal` at module level as a
SyntaxError too. The compiler's recursion budget is the one a fresh interpreter gives a script
(the default recursion limit, counted from the bottom of the stack), so the verdict does not
depend on how deep in devlint's own call stack it is asked.
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass

__all__ = ["SyntaxProblem", "syntax_problem"]

# a fresh interpreter's recursion limit: the compiler's budget for nesting derives from it
_SCRIPT_RECURSION_LIMIT = 1000

# a Python 2 statement that CPython rejects with a message about something else
_PYTHON2 = re.compile(r"^[ \t]*except[^:\n]*,[ \t]*\w+[ \t]*:", re.MULTILINE)


@dataclass(frozen=True)
class SyntaxProblem:
    """CPython's reason for refusing a text, and where (1-based line and column)."""

    message: str
    line: int = 1
    column: int = 1


def syntax_problem(text: str | bytes, path: str = "<unknown>") -> SyntaxProblem | None:
    """Why CPython refuses to compile `text` (bytes are decoded as the interpreter decodes a
    file: BOM, coding cookie, UTF-8), or None when it compiles."""
    limit = sys.getrecursionlimit()
    depth = _stack_depth()
    try:
        # the compiler's budget is counted from the current depth: give it a script's
        sys.setrecursionlimit(depth + _SCRIPT_RECURSION_LIMIT)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences are warnings, not errors
            compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:  # IndentationError and TabError too
        return SyntaxProblem(_explained(exc, text), max(exc.lineno or 1, 1), max(exc.offset or 1, 1))
    except RecursionError:
        return SyntaxProblem("Python cannot compile it: it nests too deeply for the interpreter's compiler "
                             "(maximum recursion depth exceeded during compilation)")
    except MemoryError:
        return SyntaxProblem("Python cannot compile it: the interpreter's compiler runs out of memory on it "
                             "(usually nesting thousands of levels deep)")
    except (ValueError, OverflowError) as exc:  # NUL bytes, numbers beyond the interpreter's limits
        return SyntaxProblem(f"Python cannot compile it: {exc}")
    finally:
        sys.setrecursionlimit(limit)
    return None


def _explained(exc: SyntaxError, text: str | bytes) -> str:
    message = exc.msg
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if "Missing parentheses in call to 'print'" in message or "Missing parentheses in call to 'exec'" in message \
            or (_PYTHON2.search(text) and "must be parenthesized" in message):
        message += "; this is Python 2 code, devlint reads Python 3"
    return message


def _stack_depth() -> int:
    frame = sys._getframe()
    depth = 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth
