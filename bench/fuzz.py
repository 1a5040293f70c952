"""Fuzzing `devlint check` (issue 31): every input gets a clear answer.

    python bench/fuzz.py                       # 10,000 inputs, batches of 200 files
    python bench/fuzz.py --inputs 2000 --seed 7 --generated 0.1

Inputs are the fixture programs under tests/fixtures (real-style code), mutated (lines deleted,
duplicated, swapped or re-indented; brackets, colons, tabs, form feeds, backslashes, CRLF,
escapes, stars, keywords or suppression comments inserted; files truncated; a BOM added; a
fragment CPython accepts and libcst does not), plus valid programs from hypothesmith. They are
written in batches to a scratch folder and checked by the real command line
(`devlint check --format json --no-cache -j 1`), and every batch must show:

  - an exit status of 0 or 1 (never 3, never killed by a signal), nothing on stderr but the
    summary (no traceback, no "internal error");
  - for each file, a DEV000 exactly when CPython's `compile()` of its bytes fails, on the line
    CPython names; a file that compiles may have a DEV000 only for one of devlint's stated
    limits (devlint.limits: its message says "devlint analyses"), counted apart.

A failed batch is re-run file by file to name the input; failures are written to
`<scratch>/failures/` (the input and what went wrong) and the script exits 1. Nothing here
imports devlint: the command line is the system under test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures"

INSERTS = ["(", ")", "[", "]", "{", "}", ":", ",", "\t", "\f", "\\", "\\\n", "\r\n", "\r", "*", "**", "'", '"',
           '"""', "\\u12", "\\N{", "b'\u00e9'", "elif ", "else:", "lambda: ", "not ", "return ", "yield ",
           "await ", "async ", "f'{", "f'{x!r:>{w}}'", "}", "# noqa", "  # devlint: ignore", "\n# devlint: noqa\n",
           "nonlocal x\n", "global x\n", "break\n", "continue\n", "[*a for a in b]", "(*a) = b\n", "f\"{*x}\"",
           ":=", "@", "->", "...", "del ", "import ", "from . import x\n", "\x00", "\u00e9", "\ufeff",
           "0" * 5000, "    ", "\n    ", "\n\t", "print 'x'\n", "except E, e:\n", "`x`", "1__0", "0o8", "09"]
CPYTHON_ONLY = ["(x): int = 1\n", "s = (" + " ".join(['"a"'] * 3100) + ")\n"]


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def seeds() -> list[bytes]:
    return [path.read_bytes() for path in sorted(FIXTURES.rglob("*.py"))]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three random edits of a seed."""
    text = data.decode("utf-8", "surrogateescape")
    for _ in range(rng.randint(1, 3)):
        lines = text.splitlines(keepends=True) or ["\n"]
        kind = rng.randrange(10)
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[j])
        elif kind == 2:
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3:
            lines[i] = rng.choice(["\t", " ", "  ", "\f", "        "]) + lines[i]
        elif kind == 4:
            lines = lines[: i + 1]
            lines[-1] = lines[-1][: rng.randrange(len(lines[-1]) + 1)]
        elif kind == 5:
            lines.insert(i, rng.choice(CPYTHON_ONLY))
        elif kind == 6:
            text = "".join(lines).replace("\n", "\r\n")
            continue
        else:
            at = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + rng.choice(INSERTS) + lines[i][at:]
        text = "".join(lines)
    out = text.encode("utf-8", "surrogateescape")
    if rng.random() < 0.03:
        out = b"\xef\xbb\xbf" + out
    if rng.random() < 0.02:
        at = rng.randrange(len(out) + 1)
        out = out[:at] + bytes([rng.randrange(128, 256)]) + out[at:]
    return out


def generated(count: int, seed: int) -> list[bytes]:
    """Valid programs from hypothesmith, with a device line so that the analysis runs on them."""
    if count <= 0:
        return []
    try:
        import hypothesmith
        from hypothesis import HealthCheck, given, settings
    except ImportError:
        say("hypothesmith is not installed: mutated fixtures only")
        return []
    out: list[bytes] = []

    @settings(max_examples=count, database=None, deadline=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(hypothesmith.from_grammar())
    def collect(source: str) -> None:
        out.append(("import torch\nx = torch.zeros(1).cuda()\n" + source).encode("utf-8", "surrogatepass"))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collect()
    return out[:count]


def compile_line(data: bytes) -> int | None:
    """The line of CPython's error for these bytes, 0 for one without a line, None if it compiles."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "fuzz.py", "exec", dont_inherit=True)
    except SyntaxError as exc:
        return exc.lineno or 0
    except (ValueError, RecursionError, MemoryError, OverflowError, UnicodeError):
        return 0
    return None


def run_devlint(folder: Path, targets: list[str]) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "NO_COLOR": "1"}
    proc = subprocess.run([sys.executable, "-m", "devlint", "check", "--format", "json", "--no-cache", "-j", "1",
                           "--select", "ALL", *targets], cwd=folder, capture_output=True, text=True, env=env,
                          timeout=1800)
    return proc.returncode, proc.stdout, proc.stderr


def judge(names: list[str], inputs: dict[str, bytes], rc: int, out: str, err: str) -> tuple[list[str], dict[str, int]]:
    """What is wrong with one run's answer (empty: nothing), and counts of what it showed."""
    problems: list[str] = []
    counts = {"dev000_syntax": 0, "dev000_limit": 0, "clean_or_findings": 0}
    if rc not in (0, 1):
        return [f"exit status {rc}: {err[-2000:]}"], counts
    if "Traceback" in err or "internal error" in err:
        return [f"stderr: {err[-2000:]}"], counts
    try:
        findings = json.loads(out)["findings"]
    except (ValueError, KeyError):
        return [f"not JSON on stdout: {out[:500]!r}"], counts
    dev000: dict[str, list[dict]] = {}
    for finding in findings:
        if finding["code"] == "DEV000":
            dev000.setdefault(finding["path"], []).append(finding)
    for name in names:
        expected = compile_line(inputs[name])
        got = dev000.get(name, [])
        if expected is None:
            if not got:
                counts["clean_or_findings"] += 1
            elif all("devlint analyses" in f["message"] or "too large" in f["message"] for f in got):
                counts["dev000_limit"] += 1
            else:
                problems.append(f"{name}: DEV000 where CPython compiles: {got[0]['message']}")
        elif len(got) != 1:
            problems.append(f"{name}: CPython fails at line {expected}, devlint gave {len(got)} DEV000")
        elif expected and got[0]["line"] != expected and "devlint analyses" not in got[0]["message"]:
            problems.append(f"{name}: CPython fails at line {expected}, DEV000 at {got[0]['line']}: "
                            f"{got[0]['message']}")
        else:
            counts["dev000_syntax"] += 1
    return problems, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--generated", type=float, default=0.1, help="share of hypothesmith programs")
    parser.add_argument("--scratch", default=None, help="folder for batches and failures (default: a temp folder)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="devlint-fuzz-"))
    failures = scratch / "failures"
    pool = seeds()
    made = generated(int(args.inputs * args.generated), args.seed)
    say(f"{len(pool)} seeds, {len(made)} generated programs, scratch {scratch}")
    totals = {"inputs": 0, "dev000_syntax": 0, "dev000_limit": 0, "clean_or_findings": 0, "failures": 0}
    started = time.monotonic()
    batch_number = 0
    while totals["inputs"] < args.inputs:
        size = min(args.batch, args.inputs - totals["inputs"])
        folder = scratch / f"batch{batch_number}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        inputs: dict[str, bytes] = {}
        for number in range(size):
            name = f"f{number:04d}.py"
            inputs[name] = made.pop() if made and rng.random() < args.generated * 1.5 else mutate(rng.choice(pool), rng)
            (folder / name).write_bytes(inputs[name])
        rc, out, err = run_devlint(folder, ["."])
        problems, counts = judge(sorted(inputs), inputs, rc, out, err)
        if problems and (rc not in (0, 1) or "Traceback" in err or "internal error" in err):
            problems = []  # name the input: one file at a time
            for name in sorted(inputs):
                rc, out, err = run_devlint(folder, [name])
                found, _ = judge([name], inputs, rc, out, err)
                problems += found
        for problem in problems:
            failures.mkdir(parents=True, exist_ok=True)
            name = problem.split(":", 1)[0]
            if name in inputs:
                (failures / f"b{batch_number}-{name}").write_bytes(inputs[name])
            with open(failures / "failures.txt", "a", encoding="utf-8") as handle:
                handle.write(f"batch {batch_number}: {problem}\n")
        totals["failures"] += len(problems)
        for key, value in counts.items():
            totals[key] += value
        totals["inputs"] += size
        shutil.rmtree(folder, ignore_errors=True)
        batch_number += 1
        say(f"{totals['inputs']} inputs, {time.monotonic() - started:.0f} s: {totals}")
    print(json.dumps(totals))
    return 1 if totals["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
