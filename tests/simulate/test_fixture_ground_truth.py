"""Ground truth for the fixtures: every runnable fixture is executed under a simulated GPU.

Convention (how a fixture states what must happen when it runs):

- A fixture is *runnable* when its first line is exactly `# devlint-fixture: runnable`: it uses
  synthetic data only (no downloads, no network, no GPU needed) and runs in a few seconds.
- `# expect: CODE` sits on the line where the *static* finding is reported (rules.md says where
  for each rule). Several codes may share a comment: `# expect: DEV101, DEV107`.
- A runnable fixture with no DEV1xx expectation must run clean under simulation: a GPU run of it
  does not crash. (DEV2xx / DEV3xx expectations describe other machines or performance, and do
  not crash a run on one GPU.)
- A runnable fixture with DEV1xx expectations must crash under simulation, and the line the crash
  is reported at (see `devlint.simulate.classify.reported_frame`) must carry one of them, or the
  marker `# crash-here`. The marker is for bugs whose crash is not on the line the static rule
  names: DEV104 is reported at the `self.x = tensor` assignment in `__init__` but crashes in
  `forward`; DEV105 at the factory call but crashes where its result is used; DEV107's bare
  `t.to(device)` never crashes itself, the later use does (that line usually carries DEV101);
  DEV114 at the optimizer's construction but crashes in `optimizer.step()`.

The simulation runs in this process (runpy, like `python fixture.py`), with the fixture's folder
as the working directory, every DataLoader cut to two batches, and a time limit so that a fixture
that loops forever fails instead of hanging the suite.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from devlint.simulate.execute import Status, run  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MARKER = "# devlint-fixture: runnable"
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")
_CRASH_HERE = re.compile(r"#\s*crash-here\b")
# DEV1xx rules that crash a GPU run; a runnable corpus must show each of them crashing
CRASHING_RULES = {"DEV101", "DEV102", "DEV103", "DEV104", "DEV105", "DEV106", "DEV107", "DEV108", "DEV109", "DEV114"}
TIME_LIMIT_S = 120.0


def runnable_fixtures() -> list[Path]:
    found = []
    for path in sorted(FIXTURES.rglob("*.py")):
        with path.open(encoding="utf-8") as handle:
            if handle.readline().rstrip("\n") == MARKER:
                found.append(path)
    return found


def expectations(path: Path) -> tuple[dict[int, set[str]], set[int]]:
    """({line: codes} of the DEV1xx expectations, lines marked `# crash-here`)."""
    codes: dict[int, set[str]] = {}
    crash_lines: set[int] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            found = {c.strip() for c in match.group("codes").split(",")}
            dev1 = {c for c in found if c.startswith("DEV1")}
            if dev1:
                codes[number] = dev1
        if _CRASH_HERE.search(line):
            crash_lines.add(number)
    return codes, crash_lines


FIXTURE_FILES = runnable_fixtures()


def _describe(outcome) -> str:
    where = f"{outcome.location.path}:{outcome.location.line}" if outcome.location else "?"
    text = f"status={outcome.status.value} at {where}: {outcome.exception_type}: {outcome.message}"
    if outcome.traceback:
        text += "\n" + outcome.traceback
    return text


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[str(p.relative_to(FIXTURES)) for p in FIXTURE_FILES])
def test_runnable_fixture_behaves_as_its_expectations_say(path: Path, monkeypatch, capsys) -> None:
    codes, crash_lines = expectations(path)
    monkeypatch.chdir(path.parent)
    outcome = run(str(path), [], max_batches=2, max_seconds=TIME_LIMIT_S)
    capsys.readouterr()  # the fixture's own prints
    if not codes:
        assert outcome.status is Status.CLEAN, f"expected a clean run; got {_describe(outcome)}"
        return
    assert outcome.status is Status.DEVICE_ERROR, f"expected a device crash; got {_describe(outcome)}"
    assert outcome.location is not None
    assert Path(outcome.location.path).resolve() == path, _describe(outcome)
    allowed = set(codes) | crash_lines
    assert outcome.location.line in allowed, (
        f"crash reported at line {outcome.location.line}, expected one of {sorted(allowed)}: "
        + _describe(outcome)
    )
    assert outcome.finding is not None and outcome.finding.code.startswith("DEV1")


def test_there_are_enough_runnable_fixtures_and_every_crashing_rule_is_covered() -> None:
    assert len(FIXTURE_FILES) >= 30
    covered: set[str] = set()
    for path in FIXTURE_FILES:
        for found in expectations(path)[0].values():
            covered |= found
    missing = CRASHING_RULES - covered
    assert not missing, f"no runnable fixture expects {sorted(missing)}"


def test_expectation_parser(tmp_path: Path) -> None:
    sample = tmp_path / "probe.py"
    lines = [
        "x = 1  # expect: DEV101",
        "y = 2  # expect: DEV101, DEV107",
        "z = 3  # expect: DEV201",
        "w = 4  # crash-here",
        "v = 5  # expected nothing",
    ]
    sample.write_text("\n".join(lines) + "\n", encoding="utf-8")
    codes, crash = expectations(sample)
    assert codes == {1: {"DEV101"}, 2: {"DEV101", "DEV107"}}
    assert crash == {4}
