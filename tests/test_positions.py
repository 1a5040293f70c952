"""Positions come from libcst's PositionProvider run on the module directly (analysis/positions.py); they
must be the spans MetadataWrapper would give, node for node."""

from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from devlint.analysis.positions import resolve

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


def test_direct_positions_match_the_metadata_wrapper() -> None:
    assert EXAMPLES
    for path in EXAMPLES:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        direct = resolve(module)
        wrapped = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        assert len(direct) == len(wrapped) > 100
        assert all(direct[node] == wrapped[node] for node in wrapped), path.name
