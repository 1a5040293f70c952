"""Source spans of syntax nodes, resolved only for files with something to report: libcst's
position metadata is a code generation of the whole file."""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

Span = tuple[int, int, int, int]  # line, column, end line, end column (1-based; end column exclusive)


def resolve(module: cst.Module) -> dict:
    """node -> CodeRange for every node of the module.

    PositionProvider is one code generation that records spans. Through MetadataWrapper it also
    costs a visit of the whole tree for batchable providers (there are none), which doubles the
    time; the provider runs on the module directly when it allows."""
    provider = PositionProvider()
    generate = getattr(provider, "_gen_impl", None)
    computed = getattr(provider, "_computed", None)
    if generate is None or not isinstance(computed, dict):
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    generate(module)
    return computed


def span_of(positions: dict, node: cst.CSTNode) -> Span | None:
    rng = positions.get(node)
    if rng is None:
        return None
    return rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1
