"""Source spans of syntax nodes, resolved only for files with something to report: libcst's
position metadata is a code generation of the whole file.

libcst's PositionProvider builds two dataclass objects per node and splits every token on a
newline regex; its code generation alone costs a third of that. `_SpanState` is the same
generation recording plain tuples, with the regex only for tokens that hold a line break (the
same positions: tests/test_positions.py compares them node for node)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

Span = tuple[int, int, int, int]  # line, column, end line, end column (1-based; end column exclusive)

try:  # libcst's own state, specialised; without it (another libcst), its provider
    from libcst.metadata.position_provider import NEWLINE_RE, PositionProvidingCodegenState
except ImportError:  # pragma: no cover - depends on the installed libcst
    PositionProvidingCodegenState = None  # type: ignore[assignment,misc]


if PositionProvidingCodegenState is not None:
    class _SpanState(PositionProvidingCodegenState):
        """Records (start line, start column, end line, end column), 0-based columns."""

        spans: dict[cst.CSTNode, Span]
        _starts: list[tuple[int, int]]  # (line, column) where each node being generated began

        def _update_position(self, value: str) -> None:
            if "\n" not in value and "\r" not in value:
                self.column += len(value)
                return
            segments = NEWLINE_RE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])

        def before_codegen(self, node: cst.CSTNode) -> None:
            self._starts.append((self.line, self.column))

        def after_codegen(self, node: cst.CSTNode) -> None:
            start = self._starts.pop()
            spans = self.spans
            if node not in spans:
                spans[node] = (start[0], start[1], self.line, self.column)

        @contextmanager
        def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                      end_node: cst.CSTNode | None = None) -> Iterator[None]:
            line, column = self.line, self.column
            # no `finally`: when the generation is cut short (an interrupt), the start and end
            # nodes have no span yet, and a KeyError here would replace the interrupt
            yield
            spans = self.spans
            end = (self.line, self.column)
            if start_node is not None:
                line, column = spans[start_node][:2]
            if end_node is not None:
                end = spans[end_node][2:]
            spans[node] = (line, column, end[0], end[1])


def resolve(module: cst.Module) -> dict[cst.CSTNode, Span]:
    """node -> (line, column, end line, end column) for every node of the module (columns 0-based)."""
    if PositionProvidingCodegenState is not None:
        try:
            state = _SpanState(default_indent=module.default_indent, default_newline=module.default_newline,
                               provider=None)  # type: ignore[arg-type]
            state.spans = {}
            state._starts = []
            module._codegen(state)
            return state.spans
        except (AttributeError, TypeError):  # pragma: no cover - another libcst's state
            pass
    ranges = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return {node: (r.start.line, r.start.column, r.end.line, r.end.column) for node, r in ranges.items()}


def span_of(positions: dict, node: cst.CSTNode) -> Span | None:
    found = positions.get(node)
    if found is None:
        return None
    return found[0], found[1] + 1, found[2], found[3] + 1
