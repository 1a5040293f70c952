"""Writing fixed code cells back into a notebook, byte for byte everywhere else.

Re-serialising the whole document would respell what no fix touched: its indentation, line
endings, byte-order mark, string escapes and numbers, in every cell, output and metadata. So the
JSON text is scanned for the span of each cell's `"source"` value and only the spans of the
changed code cells are replaced, in the style they were written (a list of lines laid out as
the original list, or one string).
"""

from __future__ import annotations

import json
import re

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?\d[\d.eE+-]*|true|false|null|-?Infinity|NaN")
_SPACE = re.compile(r"[ \t\r\n]*")


class _Malformed(ValueError):
    pass


def _space(text: str, i: int) -> int:
    return _SPACE.match(text, i).end()  # type: ignore[union-attr]


def _value_end(text: str, i: int) -> int:
    """Where the JSON value starting at `i` ends (iteratively: outputs may nest deeply)."""
    depth = 0
    while True:
        i = _space(text, i)
        char = text[i:i + 1]
        if char == '"':
            match = _STRING.match(text, i)
            if match is None:
                raise _Malformed("unterminated string")
            i = match.end()
        elif char in ("{", "["):
            depth += 1
            i += 1
            continue
        elif char in ("}", "]"):
            depth -= 1
            i += 1
        elif char in (",", ":"):
            i += 1
            continue
        else:
            match = _SCALAR.match(text, i)
            if match is None:
                raise _Malformed(f"unexpected {char!r}")
            i = match.end()
        if depth <= 0:
            return i


def _members(text: str, i: int) -> list[tuple[str, int, int]]:
    """(key, value start, value end) of the object starting at `i`."""
    i = _space(text, i)
    if text[i:i + 1] != "{":
        raise _Malformed("not an object")
    i = _space(text, i + 1)
    out: list[tuple[str, int, int]] = []
    while text[i:i + 1] != "}":
        match = _STRING.match(text, i)
        if match is None:
            raise _Malformed("a key that is not a string")
        key = json.loads(match.group(0))
        i = _space(text, match.end())
        if text[i:i + 1] != ":":
            raise _Malformed("no colon")
        start = _space(text, i + 1)
        end = _value_end(text, start)
        out.append((key, start, end))
        i = _space(text, end)
        if text[i:i + 1] == ",":
            i = _space(text, i + 1)
    return out


def _elements(text: str, i: int) -> list[tuple[int, int]]:
    i = _space(text, i)
    if text[i:i + 1] != "[":
        raise _Malformed("not an array")
    i = _space(text, i + 1)
    out: list[tuple[int, int]] = []
    while text[i:i + 1] != "]":
        end = _value_end(text, i)
        out.append((i, end))
        i = _space(text, end)
        if text[i:i + 1] == ",":
            i = _space(text, i + 1)
    return out


def _code_source_spans(text: str) -> list[tuple[int, int]]:
    """The span of the `"source"` value of each code cell, in order."""
    start = 1 if text.startswith("\ufeff") else 0
    cells = next(((s, e) for key, s, e in _members(text, start) if key == "cells"), None)
    if cells is None:
        raise _Malformed("no cells")
    spans = []
    for cell_start, _ in _elements(text, cells[0]):
        members = {key: (s, e) for key, s, e in _members(text, cell_start)}
        kind = members.get("cell_type")
        if kind is None or json.loads(text[kind[0]:kind[1]]) != "code":
            continue
        source = members.get("source")
        spans.append(source if source is not None else (-1, -1))
    return spans


def _string(value: str, ascii_only: bool) -> str:
    dumped = json.dumps(value, ensure_ascii=ascii_only)
    try:
        dumped.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only its escape can be written
        dumped = json.dumps(value, ensure_ascii=True)
    return dumped


def _source_value(old: str, new: str, ascii_only: bool) -> str:
    """`new` written as `old` was: one string, or a list of lines laid out as the old list."""
    if not old.lstrip().startswith("["):
        return _string(new, ascii_only)
    lines = new.splitlines(keepends=True)
    inner = old.strip()[1:-1]
    parts = [m for m in _STRING.finditer(inner)]
    if len(parts) < 1:
        return "[" + ", ".join(_string(line, ascii_only) for line in lines) + "]"
    opening = inner[:parts[0].start()]
    closing = inner[parts[-1].end():]
    between = inner[parts[0].end():parts[1].start()] if len(parts) > 1 else "," + opening
    if not lines:
        return "[]"
    return "[" + opening + between.join(_string(line, ascii_only) for line in lines) + closing + "]"


def replace_code_cells(raw: bytes, old_cells: list[str], new_cells: list[str]) -> bytes | None:
    """The notebook bytes with the changed code cells' sources replaced; None when the document
    cannot be read that way (then it is not written)."""
    try:
        text = raw.decode("utf-8")
        spans = _code_source_spans(text)
    except (UnicodeDecodeError, _Malformed, ValueError, IndexError, RecursionError):
        return None
    if len(spans) != len(old_cells) or len(new_cells) != len(old_cells):
        return None
    ascii_only = text.isascii()
    out = text
    for (start, end), old, new in reversed(list(zip(spans, old_cells, new_cells))):
        if old == new:
            continue
        if start < 0:
            return None
        out = out[:start] + _source_value(text[start:end], new, ascii_only) + out[end:]
    try:
        document = json.loads(out.lstrip("\ufeff"))
    except ValueError:
        return None
    written = [cell.get("source", "") for cell in document.get("cells", [])
               if isinstance(cell, dict) and cell.get("cell_type") == "code"]
    written = ["".join(source) if isinstance(source, list) else source for source in written]
    if written != list(new_cells):
        return None
    return out.encode("utf-8", "surrogatepass")
