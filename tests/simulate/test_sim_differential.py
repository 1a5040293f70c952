"""bench/differential.py: the comparison logic that judges the simulation against real CUDA."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "differential.py"


@pytest.fixture(scope="module")
def differential():
    spec = importlib.util.spec_from_file_location("devlint_bench_differential", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_self_test_passes(differential, capsys):
    assert differential.self_test() == 0
    assert "self-test passed" in capsys.readouterr().out


def test_message_prefix(differential):
    assert differential.message_prefix(
        "Expected all tensors to be on the same device, but got mat1 is on cpu"
    ) == "Expected all tensors to be on the same device"
    assert differential.message_prefix(None) == ""


def test_simulate_only_check_reads_the_fixture_expectations(differential, tmp_path):
    fixture = tmp_path / "dev101_probe.py"
    fixture.write_text(
        "# devlint-fixture: runnable\nx = 1\ny = 2  # expect: DEV101\nz = 3  # crash-here\n", encoding="utf-8"
    )
    Record = differential.Record
    ok = Record("f", "sim", "error", "RuntimeError", "m", 3, devlint_status="device-error", devlint_line=4)
    wrong_line = Record("f", "sim", "error", "RuntimeError", "m", 2, devlint_status="device-error", devlint_line=2)
    clean = Record("f", "sim", "clean", devlint_status="clean")
    assert differential.check_simulation_against_expectations(ok, fixture) == []
    assert differential.check_simulation_against_expectations(wrong_line, fixture)
    assert differential.check_simulation_against_expectations(clean, fixture)


def test_runnable_fixtures_are_found(differential):
    found = differential.runnable_fixtures(differential.FIXTURES)
    assert len(found) >= 30
