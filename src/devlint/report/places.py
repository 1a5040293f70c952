"""Where a finding is, said the way the tools that read a report want it.

CI services place a finding on a file of the checkout, so their reports name paths relative to
the working directory (the checkout in a job) with `/` separators, and a notebook finding at the
line of the `.ipynb` file that holds its cell line (the line numbers such a service knows for a
notebook are those of its JSON). One helper for each, shared by the formats.
"""

from __future__ import annotations

import os

from devlint.findings import Finding

__all__ = ["working_path", "disk_position", "disk_span", "cell_prefix"]


def working_path(path: str, root: str | None = None) -> str:
    """`path` relative to `root` (default: the working directory) with `/` separators; absolute
    when it lies outside it."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute, os.path.abspath(root or os.getcwd()))
    except ValueError:  # another drive on Windows
        return absolute.replace(os.sep, "/")
    if relative == ".." or relative.startswith(".." + os.sep):
        return absolute.replace(os.sep, "/")
    return relative.replace(os.sep, "/")


def disk_position(path: str, cell: int | None, line: int, column: int, end_line: int, end_column: int
                  ) -> tuple[int, int, int, int]:
    """A notebook position (inside a code cell) as a position in the .ipynb file on disk; other
    positions (and a notebook that cannot be mapped) as they are."""
    if cell is None:
        return line, column, end_line, end_column
    from devlint.notebook_lines import raw_position

    start = raw_position(path, cell, line, column)
    if start is None:
        return line, column, end_line, end_column
    end = raw_position(path, cell, end_line, end_column) or start
    return (*start, *end) if end >= start else (*start, *start)


def disk_span(finding: Finding) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) of `finding` in the file on disk, end not before start."""
    line, column, end_line, end_column = disk_position(finding.path, finding.cell, finding.line, finding.column,
                                                       finding.end_line, finding.end_column)
    end_line = max(end_line, line)
    if end_line == line:
        end_column = max(end_column, column)
    return line, column, end_line, end_column


def cell_prefix(finding: Finding) -> str:
    """"cell 2, line 3: " before the message of a notebook finding placed in the .ipynb file,
    so that the reader still learns the cell and line they see in the notebook; "" otherwise."""
    return f"cell {finding.cell}, line {finding.line}: " if finding.cell is not None else ""
