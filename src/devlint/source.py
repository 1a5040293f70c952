"""Reading one checked path into a SourceUnit: text to analyse, or the reason it cannot be read.

A file devlint cannot read must never be skipped silently: the runner turns `SourceUnit.error`
into a DEV000 finding for that file and goes on with the others. Decoding follows Python's own
rules (BOM, PEP 263 coding cookie, UTF-8 default) so that devlint reads exactly what the
interpreter would run. The newline style and encoding are kept for the fixer, which must write
a file back the way it found it.

Notebooks (`.ipynb`) are read as the concatenation of their code cells, with IPython magics
(`%time`, `!pip install`, `%%bash` cells) commented out so the result parses as Python, plus a
map from each line of that text back to (code cell, line in cell) for reporting.
"""

from __future__ import annotations

import ast
import codecs
import io
import json
import os
import re
import tokenize
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from devlint.limits import MAX_SOURCE_BYTES, size_problem
from devlint.regular import NotRegularFile, TooLarge, read_regular
from devlint.validity import syntax_problem

__all__ = ["SourceUnit", "read_source", "decode_source", "decode_notebook", "join_cells", "split_lines",
           "is_source_path"]

NOTEBOOK_SUFFIX = ".ipynb"
# a notebook's outputs (images, tables) may be large; its code is held to MAX_SOURCE_BYTES
MAX_NOTEBOOK_BYTES = 50 * MAX_SOURCE_BYTES
# byte-order marks of encodings Python cannot read source in (it reads only ASCII supersets)
_WIDE_BOMS = ((b"\x00\x00\xfe\xff", "UTF-32"), (b"\xff\xfe\x00\x00", "UTF-32"),
              (b"\xfe\xff", "UTF-16"), (b"\xff\xfe", "UTF-16"))

# Cell magics whose body is still Python; any other `%%magic` cell (bash, html, writefile, ...)
# is commented out whole.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3"})
# `x = !ls`, `files = %sx ls`: assignment from a shell/line magic.
_MAGIC_ASSIGN = re.compile(r"^\s*[\w.,\s()\[\]]+=\s*[%!]")
# `obj?`, `obj??`, `?obj`: IPython help syntax.
_HELP_LINE = re.compile(r"^\s*(\?{1,2}[\w.]+|[\w.]+\?{1,2})\s*$")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """Split on the line breaks Python itself recognises (not `str.splitlines`' form feeds etc.)."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


@dataclass(frozen=True)
class SourceUnit:
    """One checked file: where it is, its text (or why there is none), and how to write it back.

    `display` is the path as the user named it (relative stays relative); it is what reports
    show. For a notebook, `text` is the joined code cells and `cell_map[i]` gives the
    (1-based code cell, 1-based line in that cell) of joined line i + 1.
    """

    display: str
    path: str
    text: str | None = None
    error: str | None = None
    # line of the problem when the error has one (an undecodable byte), else None
    error_line: int | None = None
    encoding: str = "utf-8"
    bom: bool = False
    newline: str = "\n"
    cell_map: tuple[tuple[int, int], ...] | None = None
    cells: tuple[str, ...] | None = None  # original source of each code cell (notebooks)
    # bytes that are not valid in the encoding where CPython does not decode them (a comment):
    # the text holds U+FFFD for them, so it is analysed but never written back (the fixer skips it)
    lossy: bool = False
    # notebook cells that do not parse as Python (after IPython's own syntax is set aside):
    # (line of the joined text, column, message) each; those cells are left out of `text`
    # (commented out, same line count) so that the other cells are still checked
    cell_errors: tuple[tuple[int, int, str], ...] = ()

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def is_notebook(self) -> bool:
        return self.cell_map is not None

    def to_cell(self, line: int) -> tuple[int, int] | None:
        """(cell, line in cell) of a line of the joined notebook text; None for plain files."""
        if self.cell_map is None or not self.cell_map:
            return None
        index = min(max(line, 1), len(self.cell_map)) - 1
        return self.cell_map[index]

    def lines(self, cell: int | None = None) -> list[str]:
        """The source lines a report quotes: the file's, or one notebook cell's."""
        if cell is not None and self.cells is not None:
            if 1 <= cell <= len(self.cells):
                return split_lines(self.cells[cell - 1])
            return []
        return split_lines(self.text or "")


def read_source(path: str | os.PathLike[str], display: str | None = None) -> SourceUnit:
    """Read `path`; never raises for a bad file, the problem is returned in `.error`."""
    return read_source_bytes(path, display)[0]


def read_source_bytes(path: str | os.PathLike[str], display: str | None = None) -> tuple[SourceUnit, bytes | None]:
    """`read_source`, and the bytes the unit was decoded from (None when nothing was read:
    the file is missing, unreadable or too large, which is decided before reading it)."""
    display = str(path) if display is None else display
    fs_path = os.fspath(path)
    limit = MAX_NOTEBOOK_BYTES if fs_path.endswith(NOTEBOOK_SUFFIX) else MAX_SOURCE_BYTES
    try:
        data = read_regular(fs_path, limit)  # a FIFO or /dev/zero is refused, not waited for
    except TooLarge as exc:  # not even read: a 5 GB "script" must not exhaust memory
        return SourceUnit(display, fs_path, error=size_problem(exc.size) if limit == MAX_SOURCE_BYTES
                          else f"notebook too large to read ({exc.size / 1_000_000:.0f} MB)"), None
    except NotRegularFile:
        return SourceUnit(display, fs_path, error="not a regular file (a pipe, a device or a socket)"), None
    except IsADirectoryError:
        return SourceUnit(display, fs_path, error="is a directory, not a file"), None
    except FileNotFoundError:
        if os.path.islink(fs_path):
            return SourceUnit(display, fs_path, error="a symbolic link to nothing (dangling)"), None
        return SourceUnit(display, fs_path, error="file not found"), None
    except PermissionError:
        return SourceUnit(display, fs_path, error="permission denied"), None
    except OSError as exc:
        return SourceUnit(display, fs_path, error=f"cannot read file: {exc.strerror or exc}"), None
    if fs_path.endswith(NOTEBOOK_SUFFIX):
        return decode_notebook(data, display, fs_path), data
    return decode_source(data, display, fs_path), data


def decode_source(data: bytes, display: str, path: str | None = None) -> SourceUnit:
    """Decode Python source bytes the way the interpreter does (BOM, coding cookie, UTF-8)."""
    path = display if path is None else path
    for mark, name in _WIDE_BOMS:
        if data.startswith(mark):
            return SourceUnit(display, path, error=f"encoded as {name} with a byte-order mark, which Python "
                              "cannot run: save it as UTF-8")
    too_large = size_problem(len(data))
    if too_large is not None:
        return SourceUnit(display, path, error=too_large)
    if b"\x00" in data:
        return SourceUnit(display, path, error="binary file (contains NUL bytes), not Python source")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        # an unknown codec in the cookie, a BOM that contradicts it, or (with no cookie) a first
        # or second line that is not UTF-8: the plain UTF-8 decode below names the exact byte
        encoding = "utf-8"
        try:
            data.decode(encoding)
        except UnicodeDecodeError:
            pass
        else:
            return SourceUnit(display, path, error=f"cannot decode: {exc.msg}", error_line=exc.lineno)
    bom = encoding == "utf-8-sig"
    # the utf-8-sig codec counts error offsets after the BOM: decode what follows it as UTF-8,
    # so that the offset (and so the byte and line named) is one of `data`
    skip = len(codecs.BOM_UTF8) if bom and data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[skip:].decode("utf-8") if skip else data.decode(encoding)
    except UnicodeDecodeError as exc:
        start = exc.start + skip
        line = data.count(b"\n", 0, start) + 1
        # CPython decodes as it reads: a syntax error before the bad byte is what it reports,
        # and a bad byte inside a string spanning lines is reported on the string's last line
        python_says = syntax_problem(data, path)
        if python_says is None:  # the interpreter runs it (3.11 does not decode comments)
            return _lossy(data, skip, encoding, display, path)
        if python_says is not None and python_says.line != line:
            if "(unicode error)" not in python_says.message:
                return SourceUnit(display, path, error=f"{python_says.message} (line {python_says.line}; an "
                                  f"undecodable byte follows on line {line})", error_line=python_says.line,
                                  encoding=encoding)
        reported = line if python_says is None else python_says.line
        return SourceUnit(
            display,
            path,
            error=f"cannot decode as {encoding}: invalid byte {data[start:start + 1]!r} on line {line}",
            error_line=reported,
            encoding=encoding,
        )
    except LookupError:  # pragma: no cover - detect_encoding already checks the codec exists
        return SourceUnit(display, path, error=f"unknown encoding {encoding!r}")
    if bom and text.startswith("\ufeff"):
        text = text[1:]
    return SourceUnit(
        display,
        path,
        text=text,
        encoding="utf-8" if bom else encoding,
        bom=bom,
        newline=_newline_style(text),
    )


def _lossy(data: bytes, skip: int, encoding: str, display: str, path: str) -> SourceUnit:
    """A file CPython compiles although some of its bytes do not decode (in a comment): each
    such byte is U+FFFD in the text, which keeps every line and column where it was."""
    text = data[skip:].decode("utf-8" if skip else encoding, "replace")
    return SourceUnit(display, path, text=text, encoding="utf-8" if skip else encoding, bom=bool(skip),
                      newline=_newline_style(text), lossy=True)


def _newline_style(text: str) -> str:
    match = _LINE_BREAK.search(text)
    return match.group(0) if match else "\n"


# --- notebooks ---------------------------------------------------------------------------------


def decode_notebook(data: bytes, display: str, path: str | None = None) -> SourceUnit:
    """Join a notebook's code cells into one Python text, with a line map back to the cells."""
    path = display if path is None else path
    try:
        # an integer of more than 4,300 digits (a notebook's output, metadata) is beyond int()'s
        # limit: kept as its text, the code cells are still read
        document = json.loads(data.decode("utf-8-sig"), parse_int=_json_int)
    except UnicodeDecodeError as exc:
        return SourceUnit(display, path, error=f"notebook is not valid UTF-8: {exc.reason}")
    except json.JSONDecodeError as exc:
        return SourceUnit(display, path, error=f"notebook is not valid JSON: {exc.msg} (line {exc.lineno})")
    except RecursionError:
        return SourceUnit(display, path, error="notebook is not an nbformat 4 document (its JSON is nested too deeply)")
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        return SourceUnit(display, path, error="notebook has no `cells` list (nbformat 4 expected)")

    if not _is_python_notebook(document):
        # an R or Julia notebook has nothing for devlint to read
        return SourceUnit(display, path, text="", cell_map=(), cells=())

    sources: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(part for part in source if isinstance(part, str))
        sources.append(source if isinstance(source, str) else "")
    return join_cells(sources, display, path)


def _json_int(digits: str) -> int | str:
    try:
        return int(digits)
    except ValueError:
        return digits


def join_cells(sources: Sequence[str], display: str, path: str | None = None) -> SourceUnit:
    """One program from the code cells' sources, in order, with the map back to (cell, line):
    what `decode_notebook` reads from a file, and what the language server gets from an editor."""
    path = display if path is None else path
    joined: list[str] = []
    cell_map: list[tuple[int, int]] = []
    errors: list[tuple[int, int, str]] = []
    for code_index, source in enumerate(sources, start=1):
        lines = _python_lines_of_cell(source)
        problem = _cell_syntax_error(lines)
        if problem is not None:
            at, column, message = problem
            errors.append((len(joined) + min(max(at, 1), max(len(lines), 1)), column, message))
            lines = ["# " + line if line.strip() else line for line in lines]
        for line_no, line in enumerate(lines, start=1):
            joined.append(line)
            cell_map.append((code_index, line_no))
    text = "\n".join(joined) + ("\n" if joined else "")
    too_large = size_problem(len(text.encode("utf-8", "surrogatepass")))
    if too_large is not None:
        return SourceUnit(display, path, error=f"the notebook's code cells are {too_large}")
    return SourceUnit(
        display,
        path,
        text=text,
        cell_map=tuple(cell_map),
        cells=tuple(sources),
        cell_errors=tuple(errors),
    )


_CELL_FLAGS = ast.PyCF_ONLY_AST | getattr(ast, "PyCF_ALLOW_TOP_LEVEL_AWAIT", 0)  # IPython runs `await` in a cell


def _cell_syntax_error(lines: list[str]) -> tuple[int, int, str] | None:
    """(line in the cell, column, CPython's message) when the cell is not Python; IPython runs
    each cell on its own, so one broken cell does not stop the others."""
    if not lines:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile("\n".join(lines) + "\n", "<cell>", "exec", _CELL_FLAGS, dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 1, max(exc.offset or 1, 1), exc.msg
    except (ValueError, RecursionError, MemoryError, OverflowError):
        return None  # the whole text's parse decides (a NUL byte, nesting too deep)
    return None


def _is_python_notebook(document: dict) -> bool:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for table, key in (("kernelspec", "language"), ("language_info", "name")):
        info = metadata.get(table)
        if isinstance(info, dict) and isinstance(info.get(key), str) and info[key]:
            return info[key].lower().startswith("python")
    return True


# IPython's automagic (on by default): a line magic written without its `%` at the start of a
# line (`cd data`, `pip install x`, `ls -l`), its argument not an operator, so it cannot be the
# start of a Python statement (`cd = 1`, `pip.main()` and `ls(x)` stay Python)
_AUTOMAGIC = re.compile(r"^(cd|pip|conda|ls|pwd|env|mkdir|rm|cp|mv|cat|who|whos|reset|load_ext|matplotlib)"
                        r"(?:[ \t]+(?![=(\[.+*/%&|^<>!,:;@-]|(?:in|is|if|and|or|not|else|for)\b)\S.*|[ \t]*)$")


def _python_lines_of_cell(source: str) -> list[str]:
    """The cell's lines with IPython-only syntax commented out (same line count as the cell)."""
    lines = split_lines(source)
    if not lines:
        return []
    first = lines[0].lstrip()
    if first.startswith("%%"):
        magic = first[2:].split(maxsplit=1)[0] if first[2:].strip() else ""
        if magic not in _PYTHON_CELL_MAGICS:
            return ["# " + line if line.strip() else line for line in lines]
        # the body of `%%capture`, `%%time`: IPython code, its own line magics included
        return ["# " + lines[0]] + _python_lines_of_cell("\n".join(lines[1:]))[: len(lines) - 1]
    out = []
    continued = False  # inside an IPython line that a trailing backslash continues
    for line in lines:
        stripped = line.lstrip()
        if continued or stripped.startswith(("%", "!")) or _MAGIC_ASSIGN.match(line) or _HELP_LINE.match(line) \
                or _AUTOMAGIC.match(line):
            indent = line[: len(line) - len(stripped)]
            # keep the indentation so a magic inside a block leaves the block well formed; the
            # continuation lines of a shell command are part of it (IPython joins them)
            out.append(f"{indent}pass  # {stripped}" if indent and not continued else f"# {stripped}")
            continued = stripped.endswith("\\")
        else:
            out.append(line)
    return out


def is_source_path(path: str | Path) -> bool:
    """Whether discovery picks this file up inside a folder."""
    name = os.fspath(path)
    return name.endswith(".py") or name.endswith(NOTEBOOK_SUFFIX)
