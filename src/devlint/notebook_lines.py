"""Where a notebook finding is in the `.ipynb` file itself.

A notebook finding says "cell 2, line 3", counted inside the code cell, and that is what people
read. Code scanning (SARIF) and GitHub annotations place a finding on a line of the file on
disk, which for a notebook is JSON: line 3 of that file is somewhere in its metadata. This
module finds, for each code cell, the line and column of the JSON file where each of the cell's
source lines is written (a `"source"` list holds one string per line; a single string holds them
all on one line), so those reports point at the real place.
"""

from __future__ import annotations

import bisect
import json
import os
from functools import lru_cache
from json.decoder import scanstring  # type: ignore[attr-defined]  # (public, but not in typeshed)
from typing import Any

__all__ = ["raw_position"]

_WHITESPACE = " \t\n\r"
# a source line: (raw line, raw column of its first character)
Position = tuple[int, int]


def raw_position(path: str, cell: int, line: int, column: int) -> Position | None:
    """(line, column) in the file at `path` of column `column` of line `line` of code cell
    `cell` (all 1-based), or None when the file cannot be read or mapped."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    cells = _source_positions(os.path.abspath(path), stat.st_mtime_ns, stat.st_size)
    if cells is None or not 1 <= cell <= len(cells):
        return None
    lines = cells[cell - 1]
    if not lines:
        return None
    raw_line, raw_column = lines[min(max(line, 1), len(lines)) - 1]
    return raw_line, raw_column + max(column, 1) - 1


@lru_cache(maxsize=64)
def _source_positions(path: str, mtime_ns: int, size: int) -> tuple[tuple[Position, ...], ...] | None:
    try:
        with open(path, "rb") as handle:
            raw = handle.read().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return _Scanner(raw).code_cells()
    except (ValueError, IndexError, RecursionError):
        return None


class _Scanner:
    """A small JSON reader that keeps, for `cells[i].source`, where each string starts."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]

    def where(self, offset: int) -> Position:
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def code_cells(self) -> tuple[tuple[Position, ...], ...]:
        document, _ = self.value(self._skip(0), ())
        cells = document.get("cells") if isinstance(document, dict) else None
        if not isinstance(cells, list):
            raise ValueError("no cells")
        return tuple(tuple(cell.get("\0positions", ())) for cell in cells
                     if isinstance(cell, dict) and cell.get("cell_type") == "code")

    def _skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _WHITESPACE:
            pos += 1
        return pos

    def value(self, pos: int, path: tuple) -> tuple[Any, int]:
        char = self.text[pos]
        if char == "{":
            return self._object(pos + 1, path)
        if char == "[":
            return self._array(pos + 1, path)
        if char == '"':
            return scanstring(self.text, pos + 1)
        decoder = json.JSONDecoder()
        return decoder.raw_decode(self.text, pos)

    def _object(self, pos: int, path: tuple) -> tuple[dict, int]:
        out: dict[str, Any] = {}
        pos = self._skip(pos)
        if self.text[pos] == "}":
            return out, pos + 1
        while True:
            key, pos = scanstring(self.text, self._skip(pos) + 1)
            pos = self._skip(self._skip(pos) + 1)  # the colon
            if path[-2:-1] == ("cells",) and key == "source":
                out["\0positions"] = self._source_lines(pos)
            out[key], pos = self.value(pos, (*path, key))
            pos = self._skip(pos)
            if self.text[pos] == "}":
                return out, pos + 1
            pos += 1  # the comma

    def _array(self, pos: int, path: tuple) -> tuple[list, int]:
        out: list[Any] = []
        pos = self._skip(pos)
        if self.text[pos] == "]":
            return out, pos + 1
        while True:
            item, pos = self.value(self._skip(pos), (*path, len(out)))
            out.append(item)
            pos = self._skip(pos)
            if self.text[pos] == "]":
                return out, pos + 1
            pos += 1

    def _source_lines(self, pos: int) -> list[Position]:
        """Where each source line of a cell starts: one per string of a list, every line of a
        single string on the line where it is written (JSON strings hold no raw newlines)."""
        strings: list[tuple[int, str]] = []
        if self.text[pos] == '"':
            strings.append((pos, scanstring(self.text, pos + 1)[0]))
        elif self.text[pos] == "[":
            cursor = self._skip(pos + 1)
            while self.text[cursor] == '"':
                text, end = scanstring(self.text, cursor + 1)
                strings.append((cursor, text))
                cursor = self._skip(end)
                if self.text[cursor] == ",":
                    cursor = self._skip(cursor + 1)
        positions: list[Position] = []
        for start, text in strings:
            line, column = self.where(start)
            for _ in range(max(text.count("\n") + (0 if text.endswith("\n") else 1), 1)):
                positions.append((line, column + 1))  # + 1: past the opening quote
        return positions
