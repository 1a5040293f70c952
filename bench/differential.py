"""Differential check of `devlint run`: real CUDA against the simulation, fixture by fixture.

For every runnable fixture (first line `# devlint-fixture: runnable`), the script runs it twice,
each time in a fresh child process: once with plain PyTorch on a real GPU, once under devlint's
simulated GPU on the CPU. It compares

- the outcome (ran clean, or raised),
- the exception type a user sees (RuntimeError, TypeError, ...),
- the message prefix (the text before the first comma of its first line: "Expected all tensors
  to be on the same device", "can't convert cuda:0 device type tensor to numpy. Use ..."),
- the user line (the innermost traceback frame inside the fixture file),

and writes a table (Markdown) and the raw records (JSON). Every disagreement is a bug in the
simulation or an allow-list to revisit (spec/simulate.md lists the open questions: the 0-dim
rule, which ops take CPU index tensors, cuDNN's RNN wording).

Usage:

    python bench/differential.py                    # on a machine with a GPU: real vs simulated
    python bench/differential.py --simulate-only    # anywhere: simulated runs, checked against
                                                    # each fixture's own expectations
    python bench/differential.py --self-test        # the comparison logic on synthetic records

Both sides run the whole fixture (no --max-batches cut), so any difference comes from the
device model, not from the fast-forwarding. Fixtures run in chunks (`--jobs`), several per child
process, each under its own time limit.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import runpy
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"
MARKER = "# devlint-fixture: runnable"
_EXPECT = re.compile(r"#\s*expect:\s*(?P<codes>DEV\d{3}(?:\s*,\s*DEV\d{3})*)")
_CRASH_HERE = re.compile(r"#\s*crash-here\b")


@dataclass
class Record:
    """What one run of one fixture did."""

    fixture: str
    mode: str  # "real" or "sim"
    outcome: str  # "clean", "error", "timeout", "skipped"
    exception: str | None = None  # builtin type name
    message: str | None = None
    line: int | None = None  # innermost frame in the fixture file
    seconds: float = 0.0
    # simulation only: what devlint run itself reports
    devlint_status: str | None = None
    devlint_code: str | None = None
    devlint_line: int | None = None
    note: str = ""


@dataclass
class Comparison:
    fixture: str
    real: Record
    sim: Record
    differences: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "match" if not self.differences else "DIFF: " + ", ".join(self.differences)


def runnable_fixtures(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("*.py")):
        try:
            with path.open(encoding="utf-8") as handle:
                if handle.readline().rstrip("\n") == MARKER:
                    found.append(path)
        except OSError:
            continue
    return found


def expectations(path: Path) -> tuple[set[int], set[int]]:
    """(lines with a DEV1xx expectation, lines marked `# crash-here`)."""
    expect, crash = set(), set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        match = _EXPECT.search(line)
        if match and any(c.strip().startswith("DEV1") for c in match.group("codes").split(",")):
            expect.add(number)
        if _CRASH_HERE.search(line):
            crash.add(number)
    return expect, crash


def message_prefix(message: str | None) -> str:
    if not message:
        return ""
    first = message.strip().splitlines()[0] if message.strip() else ""
    return first.split(",")[0].strip()


def builtin_type_name(exc: BaseException) -> str:
    for klass in type(exc).__mro__:
        if klass.__module__ == "builtins":
            return klass.__name__
    return type(exc).__name__


def innermost_line(exc: BaseException, fixture: Path) -> int | None:
    line = None
    tb = exc.__traceback__
    target = str(fixture.resolve())
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == target:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def compare(real: Record, sim: Record) -> Comparison:
    """Where the simulated run disagrees with the real one."""
    result = Comparison(real.fixture, real, sim)
    if "skipped" in (real.outcome, sim.outcome):
        result.differences.append("skipped")
        return result
    if real.outcome != sim.outcome:
        result.differences.append(f"outcome {real.outcome} vs {sim.outcome}")
        return result
    if real.outcome == "error":
        if real.exception != sim.exception:
            result.differences.append(f"type {real.exception} vs {sim.exception}")
        if message_prefix(real.message) != message_prefix(sim.message):
            result.differences.append("message prefix")
        if real.line != sim.line:
            result.differences.append(f"line {real.line} vs {sim.line}")
    return result


# --------------------------------------------------------------------------- child process


class _Timeout(BaseException):
    pass


def _run_one(path: Path, mode: str, timeout: float) -> Record:
    record = Record(fixture=str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path), mode=mode, outcome="clean")
    started = time.perf_counter()
    saved_argv, saved_path, saved_cwd = sys.argv[:], sys.path[:], os.getcwd()
    sys.argv = [str(path)]
    sys.path.insert(0, str(path.parent))
    os.chdir(path.parent)
    sink = io.StringIO()
    try:
        if mode == "sim":
            _run_simulated(path, record, timeout, sink)
        else:
            _run_real(path, record, timeout, sink)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
        record.seconds = round(time.perf_counter() - started, 3)
    return record


def _run_real(path: Path, record: Record, timeout: float, sink: io.StringIO) -> None:
    import torch

    def on_alarm(signum: int, frame: Any) -> None:
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            runpy.run_path(str(path), run_name="__main__")
    except _Timeout:
        record.outcome = "timeout"
    except SystemExit as exc:
        if exc.code not in (None, 0):
            record.outcome = "error"
            record.exception = "SystemExit"
            record.message = str(exc.code)
    except BaseException as exc:  # noqa: BLE001 - every failure is a result here
        record.outcome = "error"
        record.exception = builtin_type_name(exc)
        record.message = str(exc)
        record.line = innermost_line(exc, path)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        torch.set_default_device(None)
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()


def _run_simulated(path: Path, record: Record, timeout: float, sink: io.StringIO) -> None:
    from devlint.simulate.budget import Limits, StopSimulation
    from devlint.simulate.execute import run as devlint_run
    from devlint.simulate.session import Simulation

    error: BaseException | None = None
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            with Simulation(Limits(max_batches=None, max_seconds=timeout)):
                try:
                    runpy.run_path(str(path), run_name="__main__")
                except StopSimulation:
                    record.outcome = "timeout"
                except SystemExit as exc:
                    if exc.code not in (None, 0):
                        error = exc
                except BaseException as exc:  # noqa: BLE001
                    error = exc
    except StopSimulation:
        record.outcome = "timeout"
    if error is not None:
        record.outcome = "error"
        record.exception = builtin_type_name(error) if not isinstance(error, SystemExit) else "SystemExit"
        record.message = str(error) if not isinstance(error, SystemExit) else str(error.code)
        record.line = innermost_line(error, path)
    # what `devlint run` itself reports (its own location rule, classification, limits)
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        outcome = devlint_run(str(path), [], max_batches=None, max_seconds=timeout)
    record.devlint_status = outcome.status.value
    record.devlint_code = outcome.finding.code if outcome.finding else None
    record.devlint_line = outcome.location.line if outcome.location else None


def child_main(mode: str, files: list[str], result_file: str, timeout: float) -> int:
    records = []
    for name in files:
        records.append(asdict(_run_one(Path(name).resolve(), mode, timeout)))
    Path(result_file).write_text(json.dumps(records), encoding="utf-8")
    return 0


# --------------------------------------------------------------------------- parent


def _chunks(items: list[Path], n: int) -> list[list[Path]]:
    n = max(1, min(n, len(items)))
    return [items[i::n] for i in range(n)]


def run_mode(mode: str, fixtures: list[Path], jobs: int, timeout: float) -> dict[str, Record]:
    """Run every fixture in `mode` in child processes; records by fixture name."""
    procs = []
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH", "")]))
    for chunk in _chunks(fixtures, jobs):
        handle, result_file = tempfile.mkstemp(suffix=".json", prefix=f"differential-{mode}-")
        os.close(handle)
        command = [sys.executable, str(Path(__file__).resolve()), "--child", mode, "--result-file", result_file,
                   "--timeout", str(timeout), *map(str, chunk)]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        procs.append((proc, result_file, chunk))
    records: dict[str, Record] = {}
    for proc, result_file, chunk in procs:
        _, err = proc.communicate(timeout=timeout * len(chunk) * 2 + 300)
        try:
            data = json.loads(Path(result_file).read_text(encoding="utf-8") or "[]")
        except (OSError, json.JSONDecodeError):
            data = []
        finally:
            with contextlib.suppress(OSError):
                os.unlink(result_file)
        for item in data:
            record = Record(**item)
            records[record.fixture] = record
        for path in chunk:
            name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
            if name not in records:
                records[name] = Record(name, mode, "skipped", note=f"child failed: {err.strip()[-300:]}")
    return records


def check_simulation_against_expectations(record: Record, path: Path) -> list[str]:
    """--simulate-only: a fixture without DEV1xx expectations must run clean; one with them must
    crash, and devlint's reported line must carry one (or `# crash-here`)."""
    expect, crash = expectations(path)
    problems = []
    if not expect:
        if record.outcome != "clean":
            problems.append(f"expected clean, got {record.outcome} {record.exception}: {message_prefix(record.message)}")
    else:
        if record.devlint_status != "device-error":
            problems.append(f"expected a device error, devlint run says {record.devlint_status}")
        elif record.devlint_line not in expect | crash:
            problems.append(f"reported line {record.devlint_line} not in {sorted(expect | crash)}")
    return problems


def _cell(text: Any) -> str:
    text = "" if text is None else str(text)
    text = " ".join(text.split())
    if len(text) > 70:
        text = text[:67] + "..."
    return text.replace("|", "\\|")


def table_differential(comparisons: list[Comparison]) -> str:
    lines = [
        "| fixture | real | simulated | real message | simulated message | real line | sim line | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in comparisons:
        lines.append(
            f"| {_cell(c.fixture)} | {_cell(c.real.outcome if c.real.outcome != 'error' else c.real.exception)} "
            f"| {_cell(c.sim.outcome if c.sim.outcome != 'error' else c.sim.exception)} "
            f"| {_cell(message_prefix(c.real.message))} | {_cell(message_prefix(c.sim.message))} "
            f"| {c.real.line or ''} | {c.sim.line or ''} | {_cell(c.verdict)} |"
        )
    matched = sum(1 for c in comparisons if not c.differences)
    lines.append("")
    lines.append(f"{matched} of {len(comparisons)} fixtures match.")
    return "\n".join(lines) + "\n"


def table_simulated(rows: list[tuple[Record, list[str]]]) -> str:
    lines = [
        "| fixture | outcome | code | reported line | message | check |",
        "|---|---|---|---|---|---|",
    ]
    for record, problems in rows:
        outcome = record.outcome if record.outcome != "error" else record.exception
        lines.append(
            f"| {_cell(record.fixture)} | {_cell(outcome)} | {record.devlint_code or ''} | {record.devlint_line or ''} "
            f"| {_cell(message_prefix(record.message))} | {'ok' if not problems else _cell('; '.join(problems))} |"
        )
    good = sum(1 for _, p in rows if not p)
    lines.append("")
    lines.append(f"{good} of {len(rows)} fixtures behave as their expectations say.")
    return "\n".join(lines) + "\n"


def self_test() -> int:
    """The comparison flags each kind of disagreement, and only those."""
    base = dict(fixture="f.py", exception="RuntimeError", line=7,
                message="Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!")
    real = Record(mode="real", outcome="error", **base)
    cases = [
        (Record(mode="sim", outcome="error", **base), []),
        (Record(mode="sim", outcome="clean", fixture="f.py"), ["outcome error vs clean"]),
        (Record(mode="sim", outcome="error", **{**base, "exception": "TypeError"}), ["type RuntimeError vs TypeError"]),
        (Record(mode="sim", outcome="error", **{**base, "line": 8}), ["line 7 vs 8"]),
        (Record(mode="sim", outcome="error", **{**base, "message": "indices should be either on cpu"}), ["message prefix"]),
        (Record(mode="sim", outcome="error", **{**base, "message": base["message"].replace("found at least", "got mat1")}), []),
    ]
    failures = 0
    for sim, expected in cases:
        got = compare(real, sim).differences
        if got != expected:
            failures += 1
            print(f"self-test FAILED: {sim} -> {got}, expected {expected}")
    clean = compare(Record("g.py", "real", "clean"), Record("g.py", "sim", "clean"))
    if clean.differences:
        failures += 1
        print("self-test FAILED: two clean runs differ")
    assert message_prefix("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu()") == (
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu()"
    )
    print("self-test passed" if not failures else f"self-test: {failures} failure(s)")
    return 1 if failures else 0


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simulate-only", action="store_true", help="no GPU: check simulated runs against the fixtures' expectations")
    parser.add_argument("--self-test", action="store_true", help="check the comparison logic and exit")
    parser.add_argument("--fixtures", type=Path, default=FIXTURES, help="folder searched for runnable fixtures")
    parser.add_argument("--filter", default="", help="only fixtures whose path contains this text")
    parser.add_argument("--jobs", type=int, default=max(1, min(8, (os.cpu_count() or 2) // 2)))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per fixture run")
    parser.add_argument("--output", type=Path, default=REPO / "bench" / "differential-results.md")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw records here")
    parser.add_argument("--child", choices=("real", "sim"), help=argparse.SUPPRESS)
    parser.add_argument("--result-file", help=argparse.SUPPRESS)
    parser.add_argument("files", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(list(argv) if argv is not None else None)

    if args.child:
        return child_main(args.child, args.files, args.result_file, args.timeout)
    if args.self_test:
        return self_test()

    fixtures = [p for p in runnable_fixtures(args.fixtures) if args.filter in str(p)]
    if not fixtures:
        print("no runnable fixtures found", file=sys.stderr)
        return 2
    import torch

    header = (
        f"torch {torch.__version__}, python {sys.version.split()[0]}, {len(fixtures)} runnable fixtures, "
        f"{time.strftime('%Y-%m-%d %H:%M')}\n\n"
    )
    if args.simulate_only:
        sim = run_mode("sim", fixtures, args.jobs, args.timeout)
        rows = []
        for path in fixtures:
            name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
            record = sim[name]
            rows.append((record, check_simulation_against_expectations(record, path) if record.outcome != "skipped" else ["skipped: " + record.note]))
        text = "# devlint run: simulated runs checked against fixture expectations\n\n" + header + table_simulated(rows)
        exit_code = 0 if all(not p for _, p in rows) else 1
        records = [asdict(r) for r, _ in rows]
    else:
        if not torch.cuda.is_available():
            print("no CUDA device here: run with --simulate-only, or on a machine with a GPU", file=sys.stderr)
            return 2
        header = f"GPU: {torch.cuda.get_device_name(0)}, " + header
        real = run_mode("real", fixtures, args.jobs, args.timeout)
        sim = run_mode("sim", fixtures, args.jobs, args.timeout)
        comparisons = []
        for path in fixtures:
            name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)
            comparisons.append(compare(real[name], sim[name]))
        text = "# devlint run: real CUDA vs simulated GPU\n\n" + header + table_differential(comparisons)
        exit_code = 0 if all(not c.differences for c in comparisons) else 1
        records = [{"real": asdict(c.real), "sim": asdict(c.sim), "differences": c.differences} for c in comparisons]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(records, indent=2), encoding="utf-8")
    print(text)
    print(f"written to {args.output}", file=sys.stderr)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
