"""Language-server latency: how long after an edit `devlint server` publishes diagnostics.

    python bench/server_latency.py                 # bench/large_train.py, 21 edits
    python bench/server_latency.py --edits 51 --debounce-ms 0
    python bench/server_latency.py --file path/to/script.py

It starts the real server over stdio with a real LSP client (pygls', through the scripted editor
of the test suite, tests/lsp_editor.py), opens the file (the 1,000-line training script
bench/large_train.py by default), waits for the first diagnostics (the first analysis: imports,
parse, everything), then makes small edits one after another, each an incremental didChange of
one number literal, as a keystroke sends it, and times each from sending the change to receiving
the diagnostics published for that version (debounce included: the server's default unless
--debounce-ms says otherwise). It prints the median and the spread. Not a test: nothing asserts
on time; the figure goes in bench/README.md.

For comparison it also times devlint's own check of the same text in this process (what one
re-analysis costs without the protocol), so the protocol's and the debounce's share is visible.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))  # the scripted LSP editor the server tests use
sys.path.insert(0, str(ROOT / "src"))

from lsp_editor import Editor  # noqa: E402

DEFAULT_FILE = BENCH / "large_train.py"
LITERAL = re.compile(r"(?m)^    lr: float = (3e-4)$")  # the edited spot in large_train.py


def edit_spot(text: str) -> tuple[int, int, int]:
    """(0-based line, start, end) of the literal to edit: the learning rate's default, else the
    first number on the last line that has one."""
    match = LITERAL.search(text)
    if match is not None:
        line = text.count("\n", 0, match.start(1))
        start = match.start(1) - (text.rfind("\n", 0, match.start(1)) + 1)
        return line, start, start + len(match.group(1))
    for line_no, line in reversed(list(enumerate(text.splitlines()))):
        number = re.search(r"\b\d+\b", line)
        if number:
            return line_no, number.start(), number.end()
    raise SystemExit("no number literal to edit in the file")


async def measure(path: Path, edits: int, debounce_ms: float | None) -> tuple[float, list[float], int]:
    options = {"debounceMs": debounce_ms} if debounce_ms is not None else None
    editor = await Editor.start(path.parent, initialization_options=options)
    try:
        text = path.read_text(encoding="utf-8")
        t0 = time.perf_counter()
        uri = editor.open(path.name, text)
        first = await editor.diagnostics(uri, version=1)
        first_s = time.perf_counter() - t0
        line, start, end = edit_spot(text)
        rest = text.splitlines()[line][start + 1:end]
        samples = []
        for index in range(edits):
            literal = f"{index % 9 + 1}{rest}"  # one digit changed: 3e-4 -> 1e-4, 2e-4, ...
            t0 = time.perf_counter()
            version = editor.edit(uri, (line, start), (line, end), literal)
            await editor.diagnostics(uri, version=version)
            samples.append(time.perf_counter() - t0)
        return first_s, samples, len(first)
    finally:
        await editor.stop()


def in_process_check(path: Path, repeats: int) -> float:
    """Median seconds of devlint's own check of the file's text (warm), without the server, with
    the collector thresholds the server sets."""
    import gc
    from dataclasses import replace

    from devlint.config import CheckSettings, load_config
    from devlint.runner import check_unit
    from devlint.selection import resolve
    from devlint.source import read_source

    unit = read_source(path, display=str(path))
    settings = CheckSettings(enabled=resolve([load_config(start=str(path.parent)).layer()]))
    gc.set_threshold(20_000, 50, 50)
    check_unit(unit, settings)
    times = []
    for index in range(repeats):
        edited = replace(unit, text=(unit.text or "") + f"\n# edit {index}\n")
        t0 = time.perf_counter()
        check_unit(edited, settings)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--edits", type=int, default=21)
    parser.add_argument("--debounce-ms", type=float, default=None, help="the server's default unless given")
    args = parser.parse_args()
    path = args.file.resolve()
    lines = path.read_text(encoding="utf-8").count("\n")
    first_s, samples, found = asyncio.run(measure(path, args.edits, args.debounce_ms))
    check_s = in_process_check(path, max(5, args.edits // 3))
    ms = sorted(s * 1000 for s in samples)
    print(f"file: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({lines} lines, {found} findings)")
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"first diagnostics after open: {first_s * 1000:.0f} ms")
    print(f"diagnostics after an edit ({len(ms)} edits): median {statistics.median(ms):.0f} ms, "
          f"min {ms[0]:.0f} ms, p90 {ms[int(0.9 * (len(ms) - 1))]:.0f} ms, max {ms[-1]:.0f} ms")
    print(f"devlint's check of the same text in-process (no server): median {check_s * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
