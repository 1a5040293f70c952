"""bench/fuzz.py keeps working: a short run of it (the long one, 10,000 inputs, is run by hand;
its figures are in bench/README.md) finds nothing wrong, and its judge does see a wrong answer."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "fuzz.py"


def _fuzz():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("fuzz", BENCH)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def test_a_short_fuzz_run_is_clean(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(BENCH), "--inputs", "60", "--batch", "60", "--generated", "0",
                           "--seed", "3", "--scratch", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    totals = json.loads(proc.stdout.splitlines()[-1])
    assert totals["inputs"] == 60 and totals["failures"] == 0
    assert totals["dev000_syntax"] > 0 and totals["clean_or_findings"] > 0  # mutations break some, not all


def test_the_judge_sees_wrong_answers() -> None:
    fuzz = _fuzz()
    broken, valid = b"def f(:\n", b"x = 1\n"
    inputs = {"a.py": broken, "b.py": valid}
    dev000 = {"code": "DEV000", "path": "b.py", "line": 1, "message": "cannot parse this file: invalid syntax"}
    out = json.dumps({"findings": [dev000]})
    problems, _ = fuzz.judge(["a.py", "b.py"], inputs, 1, out, "")
    assert any(p.startswith("a.py") for p in problems) and any(p.startswith("b.py") for p in problems)
    assert fuzz.judge(["a.py"], inputs, 3, "", "internal error")[0]
    assert fuzz.judge(["a.py"], inputs, 1, out, "Traceback (most recent call last)")[0]
