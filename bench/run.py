"""Speed benchmark (issue 9): devlint against the libcst parse floor and TorchFix.

    python bench/run.py                       # timm, transformers, accelerate, d2l
    python bench/run.py --corpus timm --corpus d2l
    python bench/run.py --quick               # timm + d2l, one repetition, no TorchFix

Everything in one table comes from one run on one machine, because only ratios measured
side by side survive a noisy machine; seconds alone do not. Each figure is the wall time of
a separate process (`time.perf_counter` around it), so interpreter start and imports are
counted the same way for every tool; quick measurements (< 10 s) are repeated and the
median kept. Peak memory is the largest resident set of the process tree (`os.wait4`
rusage, which covers worker processes). The corpora are pinned wheels in a cache folder
outside the repository (see bench/corpora.py); TorchFix 0.7.0 gets its own virtual
environment there, since it pins an older libcst and is never a devlint dependency.

The markdown it prints is what bench/README.md records; a JSON copy goes to
<cache>/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpora  # noqa: E402

BENCH = Path(__file__).resolve().parent
EXAMPLE = BENCH / "example_train.py"
TORCHFIX_VERSION = "0.7.0"
QUICK_S = 10.0  # a measurement shorter than this is repeated and its median kept
DEVLINT_TIMEOUT_S = 3600  # one devlint run; a run killed at this limit is reported, not timed
# issue 22: the corpora also measured with `-j 1` (one process: what a one-core CI runner waits
# for), and the small tree measured against TorchFix (the first files of a folder, by name)
SINGLE_PROCESS_CORPORA = ("timm",)
SUBSET = {"timm": ("timm/models", 30)}
TREE_FLOOR_LINES = 5_000  # trees smaller than this are measured, but their time is mostly start-up


# ---------------------------------------------------------------------------- processes


@dataclass
class Proc:
    wall: float
    rc: int
    stdout: str
    stderr: str
    maxrss_mib: float
    cpu: float = 0.0  # user + system seconds of the process and the workers it waited for
    timed_out: bool = False


def run_measured(cmd: list[str], cwd: Path | None = None, timeout: float | None = None) -> Proc:
    """Run one process; return its wall time and the peak RSS of its whole tree.

    `os.wait4` hands back the rusage of exactly this child (its own peak and that of the
    worker processes it waited for), unlike RUSAGE_CHILDREN, which is a running maximum
    over every child this script ever had.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        killed = []
        timer = None
        if timeout:
            def kill() -> None:
                killed.append(True)
                p.kill()
            timer = threading.Timer(timeout, kill)
            timer.start()
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        if timer:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Proc(
            wall=wall,
            rc=p.returncode,
            stdout=out.read().decode("utf-8", "replace"),
            stderr=err.read().decode("utf-8", "replace"),
            maxrss_mib=usage.ru_maxrss / 1024.0,  # Linux reports KiB
            cpu=usage.ru_utime + usage.ru_stime,
            timed_out=bool(killed),
        )


def repeated(fn, repeats: int) -> tuple[float, list[float], object]:
    """Call fn() (which returns (seconds, payload)); repeat quick ones, keep the median.

    A payload that is a dict may carry "cpu" (seconds); its median across runs is kept too.
    """
    seconds, payload = fn()
    walls = [seconds]
    cpus = [payload.get("cpu")] if isinstance(payload, dict) else []
    if seconds < QUICK_S:
        for _ in range(repeats - 1):
            s, payload = fn()
            walls.append(s)
            if isinstance(payload, dict):
                cpus.append(payload.get("cpu"))
    if isinstance(payload, dict) and cpus and None not in cpus:
        payload = dict(payload, cpu=statistics.median(cpus))
    return statistics.median(walls), walls, payload


# ---------------------------------------------------------------------------- the tools

PARSE_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import libcst
imp = time.perf_counter() - t0
paths = open(sys.argv[1], encoding="utf-8").read().splitlines()
sources = []
for p in paths:
    with open(p, "rb") as f:
        sources.append(f.read())
failed = 0
t0, c0 = time.perf_counter(), time.process_time()
for src in sources:
    try:
        libcst.parse_module(src)
    except Exception:
        failed += 1
loop, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"loop_s": loop, "cpu": cpu, "import_s": imp, "files": len(sources), "failed": failed}))
"""

SINGLE_PARSE = "import sys, libcst; libcst.parse_module(open(sys.argv[1], 'rb').read())"


def devlint_cmd() -> list[str]:
    """The console script next to this interpreter (a pyenv shim would add its own cost)."""
    script = Path(sys.executable).parent / "devlint"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from devlint.cli import main; sys.exit(main())"]


def compile_devlint() -> None:
    """Byte-compile devlint as `pip install` does for a wheel. An editable install under
    PYTHONDONTWRITEBYTECODE=1 would otherwise compile every changed module in every measured
    process (about 0.1 s for the interpreter module alone), which no installed copy pays."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("devlint")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            compileall.compile_dir(folder, quiet=1)


def devlint_ready() -> tuple[bool, str]:
    compile_devlint()
    probe = (
        "import devlint.engine as e, devlint.cli; e.check_text('x = 1\\n', 'x.py'); "
        "import devlint; print(getattr(devlint, '__version__', '?'))"
    )
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["?"])[-1]
        return False, last
    return True, p.stdout.strip()


def lib_version(dist: str, python: str = sys.executable) -> str:
    p = subprocess.run(
        [python, "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
        capture_output=True, text=True,
    )
    return p.stdout.strip() or "?"


def torchfix_python() -> Path:
    venv = corpora.cache_dir() / "torchfix-venv"
    return venv / "bin" / "python"


def ensure_torchfix() -> Path:
    """TorchFix in its own virtual environment in the cache folder; returns its script."""
    venv = corpora.cache_dir() / "torchfix-venv"
    script = venv / "bin" / "torchfix"
    if script.exists() and lib_version("torchfix", str(venv / "bin" / "python")) == TORCHFIX_VERSION:
        return script
    print(f"installing TorchFix {TORCHFIX_VERSION} into {venv} ...", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", f"torchfix=={TORCHFIX_VERSION}"], check=True)
    return script


def parse_floor(corpus: corpora.Corpus, repeats: int) -> dict:
    """Bare single-process libcst.parse_module of every file; the loop itself is timed."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(str(p) for p in corpus.files))
        listing = f.name
    rss = []

    def once():
        p = run_measured([sys.executable, "-c", PARSE_CHILD, listing])
        if p.rc != 0:
            raise RuntimeError(f"parse floor failed on {corpus.name}: {p.stderr[-2000:]}")
        rss.append(p.maxrss_mib)
        data = json.loads(p.stdout)
        data["process_s"] = p.wall
        return data["loop_s"], data

    try:
        median, walls, data = repeated(once, repeats)
    finally:
        os.unlink(listing)
    return {"seconds": median, "runs": walls, "cpu": data["cpu"], "failed": data["failed"],
            "import_s": data["import_s"], "process_s": data["process_s"], "maxrss_mib": max(rss)}


def cache_dirs(root: Path) -> list[Path]:
    return [d for d in (root / ".devlint_cache",) if d.exists()]


def devlint_run(corpus: corpora.Corpus, extra: list[str], repeats: int, *, clear_cache: bool,
                jobs: int | None, targets: list[str] | None = None) -> dict:
    cmd = devlint_cmd() + ["check", *(targets or ["."]), "--select", "ALL", "--format", "json"] + extra
    if jobs:
        cmd += ["-j", str(jobs)]
    rss = []
    info: dict = {}

    def once():
        if clear_cache:
            for d in cache_dirs(corpus.root):
                shutil.rmtree(d)
        p = run_measured(cmd, cwd=corpus.root, timeout=DEVLINT_TIMEOUT_S)
        rss.append(p.maxrss_mib)
        if p.timed_out:
            info["error"] = f"killed after {DEVLINT_TIMEOUT_S} s"
            return p.wall, {"cpu": p.cpu}
        if p.rc not in (0, 1):
            info["error"] = f"exit {p.rc}: {p.stderr.strip()[-1500:]}"
            return p.wall, {"cpu": p.cpu}
        try:
            report = json.loads(p.stdout)
        except json.JSONDecodeError:
            info["error"] = f"stdout is not JSON: {p.stdout[:300]!r}"
            return p.wall, {"cpu": p.cpu}
        return p.wall, {"cpu": p.cpu, "files_checked": report.get("files_checked"),
                        "findings": len(report.get("findings", []))}

    median, walls, payload = repeated(once, repeats)
    result = {"seconds": median, "runs": walls, "maxrss_mib": max(rss), "cmd": " ".join(cmd[1:])}
    result.update(payload or {})
    result.update(info)
    return result


def torchfix_run(corpus: corpora.Corpus, script: Path, repeats: int, jobs: int | None,
                 targets: list[str] | None = None) -> dict:
    cmd = [str(script), *(targets or ["."])]
    if jobs:
        cmd += ["-j", str(jobs)]
    rss = []

    def once():
        p = run_measured(cmd, cwd=corpus.root)
        rss.append(p.maxrss_mib)
        tail = p.stderr.strip().splitlines()[-2:] if p.stderr.strip() else []
        return p.wall, {"cpu": p.cpu, "rc": p.rc, "stderr_tail": tail}

    median, walls, payload = repeated(once, repeats)
    return {"seconds": median, "runs": walls, "maxrss_mib": max(rss), **payload}


def single_file(repeats: int) -> dict:
    """devlint on one file vs a process that only imports libcst and parses that file."""
    n = max(3, repeats)
    results = {}
    for label, cmd in (
        ("python_startup", [sys.executable, "-c", "pass"]),
        ("parse_process", [sys.executable, "-c", SINGLE_PARSE, str(EXAMPLE)]),
        ("devlint", devlint_cmd() + ["check", str(EXAMPLE), "--select", "ALL", "--format", "json", "--no-cache"]),
    ):
        walls, cpus, rss, rcs = [], [], [], []
        for _ in range(n):
            p = run_measured(cmd, cwd=BENCH)
            walls.append(p.wall)
            cpus.append(p.cpu)
            rss.append(p.maxrss_mib)
            rcs.append(p.rc)
        results[label] = {"seconds": statistics.median(walls), "runs": walls, "cpu": statistics.median(cpus),
                          "maxrss_mib": max(rss), "rc": rcs[-1]}
    return results


def tree_lines(root: Path) -> int:
    """Lines devlint reads in a tree: its .py files and the code cells of its notebooks (hidden
    folders such as .git left out)."""
    total = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            path = Path(folder) / name
            if name.endswith(".py"):
                total += corpora.count_lines(path)
            elif name.endswith(".ipynb"):
                try:
                    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
                except (OSError, ValueError, AttributeError):
                    continue
                for cell in cells if isinstance(cells, list) else []:
                    if isinstance(cell, dict) and cell.get("cell_type") == "code":
                        source = cell.get("source", "")
                        total += len(source) if isinstance(source, list) else source.count("\n") + 1
    return total


def trees_run(folder: Path, repeats: int, jobs: int | None) -> list[dict]:
    """devlint (no cache, default jobs) on each tree under `folder` (one repository per
    subfolder, such as the survey's exported trees): lines per second, slowest first."""
    rows = []
    for root in sorted(p for p in folder.iterdir() if p.is_dir()):
        lines = tree_lines(root)
        cmd = devlint_cmd() + ["check", ".", "--select", "ALL", "--format", "json", "--no-cache", "--fail-on", "never"]
        if jobs:
            cmd += ["-j", str(jobs)]

        def once(cmd: list[str] = cmd, root: Path = root):
            p = run_measured(cmd, cwd=root, timeout=DEVLINT_TIMEOUT_S)
            return p.wall, {"cpu": p.cpu, "rc": p.rc}

        median, walls, payload = repeated(once, repeats)
        rows.append({"tree": root.name, "lines": lines, "seconds": median, "runs": walls, **payload,
                     "lines_per_s": lines / median if median else None})
    rows.sort(key=lambda r: r["lines_per_s"] or 0)
    return rows


# ---------------------------------------------------------------------------- report


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def fmt_s(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


def fmt_ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}" if x < 1 else f"{x:.2f}"


def div(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


@dataclass
class CorpusResult:
    name: str
    version: str
    files: int
    lines: int
    parse: dict = field(default_factory=dict)
    nocache: dict = field(default_factory=dict)
    cold: dict = field(default_factory=dict)
    warm: dict = field(default_factory=dict)
    torchfix: dict = field(default_factory=dict)
    cold_j1: dict = field(default_factory=dict)  # devlint cold with -j 1 (issue 22)
    subset: dict = field(default_factory=dict)  # devlint on the first SUBSET_FILES model files
    subset_torchfix: dict = field(default_factory=dict)  # TorchFix on the same files

    def s(self, part: str) -> float | None:
        d = getattr(self, part)
        if not d or d.get("error"):
            return None
        return d.get("seconds")

    def cpu(self, part: str) -> float | None:
        d = getattr(self, part)
        if not d or d.get("error"):
            return None
        return d.get("cpu")

    @property
    def lps(self) -> float | None:
        cold = self.s("cold")
        return None if cold is None else self.lines / cold


def markdown(meta: dict, results: list[CorpusResult], single: dict | None, trees: list[dict] | None = None) -> str:
    out = []
    out.append(f"Measured {meta['date']} on {meta['cpus']} CPUs, Python {meta['python']}, libcst "
               f"{meta['libcst']}, devlint {meta['devlint']}, TorchFix {meta['torchfix']} "
               f"(libcst {meta['torchfix_libcst']}); devlint default jobs{meta['jobs_note']}; "
               f"load average {meta['load_start']} at the start, {meta.get('load_end', '?')} at the end.")
    out.append("")
    out.append("Wall seconds (what a user waits for):")
    out.append("")
    out.append("| corpus | files | lines | libcst parse | devlint cold | cold, --no-cache | devlint warm "
               "| TorchFix | devlint lines/s | parse lines/s | peak MiB devlint | peak MiB parse | findings |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        lps = "n/a" if r.lps is None else f"{r.lps:,.0f}"
        parse_s = r.s("parse")
        parse_lps = "n/a" if not parse_s else f"{r.lines / parse_s:,.0f}"
        peak = (r.cold or r.nocache).get("maxrss_mib")
        peak_s = "n/a" if peak is None else f"{peak:.0f}"
        parse_peak = r.parse.get("maxrss_mib")
        parse_peak_s = "n/a" if parse_peak is None else f"{parse_peak:.0f}"
        out.append(
            f"| {r.name} {r.version} | {r.files} | {r.lines:,} | {fmt_s(parse_s)} | {fmt_s(r.s('cold'))} "
            f"| {fmt_s(r.s('nocache'))} | {fmt_s(r.s('warm'))} | {fmt_s(r.s('torchfix'))} "
            f"| {lps} | {parse_lps} | {peak_s} | {parse_peak_s} | {r.cold.get('findings', 'n/a')} |"
        )
    out.append("")
    out.append("CPU seconds (user + system of the whole process tree; steadier than wall time when other "
               "work shares the machine, but blind to parallelism):")
    out.append("")
    out.append("| corpus | libcst parse loop | devlint cold | cold, --no-cache | devlint warm | TorchFix |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for r in results:
        out.append(f"| {r.name} | {fmt_s(r.cpu('parse'))} | {fmt_s(r.cpu('cold'))} | {fmt_s(r.cpu('nocache'))} "
                   f"| {fmt_s(r.cpu('warm'))} | {fmt_s(r.cpu('torchfix'))} |")
    out.append("")
    out.append("Ratios (the targets of issue 9; every figure from this run; 'met' judges the wall ratio):")
    out.append("")
    out.append("| ratio | wall | CPU | target | met |")
    out.append("|---|---:|---:|---:|:---:|")
    by = {r.name: r for r in results}

    def row(label: str, value: float | None, cpu_value: float | None, target: str, ok, judge_cpu: bool = False) -> None:
        judged = cpu_value if judge_cpu else value
        met = "n/a" if judged is None or target == "(info)" else ("yes" if ok(judged) else "**no**")
        out.append(f"| {label} | {fmt_ratio(value)} | {fmt_ratio(cpu_value)} | {target} | {met} |")

    for r in results:
        row(f"{r.name}: devlint cold / libcst parse", div(r.s("cold"), r.s("parse")),
            div(r.cpu("cold"), r.cpu("parse")), "<= 1.0" if r.name == "timm" else "(info)", lambda v: v <= 1.0)
    for r in results:
        if r.cold_j1:
            row(f"{r.name}: devlint cold with -j 1 / libcst parse (judged on CPU)", div(r.s("cold_j1"), r.s("parse")),
                div(r.cpu("cold_j1"), r.cpu("parse")), "<= 1.5", lambda v: v <= 1.5, judge_cpu=True)
    for r in results:
        if r.s("subset") is not None and r.s("subset_torchfix") is not None:
            folder, _ = SUBSET[r.name]
            row(f"{r.name}: devlint / TorchFix, first {r.subset.get('files')} files of {folder}",
                div(r.s("subset"), r.s("subset_torchfix")), div(r.cpu("subset"), r.cpu("subset_torchfix")),
                "<= 0.1", lambda v: v <= 0.1)
    for r in results:
        if r.s("torchfix") is not None:
            row(f"{r.name}: devlint cold / TorchFix", div(r.s("cold"), r.s("torchfix")),
                div(r.cpu("cold"), r.cpu("torchfix")), "<= 0.1" if r.name == "timm" else "(info)",
                lambda v: v <= 0.1)
    for r in results:
        row(f"{r.name}: devlint warm / cold", div(r.s("warm"), r.s("cold")), div(r.cpu("warm"), r.cpu("cold")),
            "<= 0.05", lambda v: v <= 0.05)
    if single:
        ok_rc = single["devlint"]["rc"] in (0, 1)
        row("one file: devlint / (import libcst + parse) process",
            div(single["devlint"]["seconds"] if ok_rc else None, single["parse_process"]["seconds"]),
            div(single["devlint"]["cpu"] if ok_rc else None, single["parse_process"]["cpu"]),
            "<= 2.0", lambda v: v <= 2.0)
    if "transformers" in by and "d2l" in by:
        t, d = by["transformers"], by["d2l"]
        cpu_lps = div(div(t.lines, t.cpu("cold")), div(d.lines, d.cpu("cold")))
        # "cost stays linear in size": transformers must not be slower per line than d2l. It is
        # faster, because d2l's lines are denser (the bare parse shows the same gap), so the ratio
        # is judged one-sided, and also per parsed line (devlint time over parse time)
        row("lines/s transformers / lines/s d2l", div(t.lps, d.lps), cpu_lps,
            ">= 0.77", lambda v: v >= 1 / 1.3)
        row("lines/s transformers / lines/s d2l, libcst parse alone", div(div(t.lines, t.s("parse")),
            div(d.lines, d.s("parse"))), None, "(info)", lambda v: True)
        row("(cold / parse) transformers over (cold / parse) d2l", div(div(t.s("cold"), t.s("parse")),
            div(d.s("cold"), d.s("parse"))), div(div(t.cpu("cold"), t.cpu("parse")),
            div(d.cpu("cold"), d.cpu("parse"))), "<= 1.3", lambda v: v <= 1.3)
        peak = max([dd.get("maxrss_mib", 0) for dd in (t.cold, t.nocache, t.warm) if dd] or [0]) or None
        out.append(f"| transformers: peak MiB of any devlint process | {fmt_s(peak)} | | <= 1024 | "
                   f"{'n/a' if peak is None else ('yes' if peak <= 1024 else '**no**')} |")
    if trees:
        slowest = trees[0]
        row(f"slowest tree of --trees: lines/s ({slowest['tree']}, {slowest['lines']:,} lines)",
            slowest["lines_per_s"], None, ">= 3000", lambda v: v >= 3000)
        sizable = [t for t in trees if t["lines"] >= TREE_FLOOR_LINES]
        if sizable:
            row(f"slowest tree of at least {TREE_FLOOR_LINES:,} lines: lines/s ({sizable[0]['tree']})",
                sizable[0]["lines_per_s"], None, "(info)", lambda v: True)
    if single:
        out.append("")
        out.append(f"One file (`bench/{EXAMPLE.name}`, {corpora.count_lines(EXAMPLE)} lines), median of "
                   f"{len(single['devlint']['runs'])} runs:")
        out.append("")
        out.append("| process | wall s | CPU s | peak MiB |")
        out.append("|---|---:|---:|---:|")
        for label, name in (("python -c pass", "python_startup"),
                            ("python: import libcst, parse the file", "parse_process"),
                            ("devlint check FILE --select ALL --format json --no-cache", "devlint")):
            d = single[name]
            bad = "" if d["rc"] in (0, 1) else f" (exit {d['rc']})"
            out.append(f"| {label}{bad} | {d['seconds']:.3f} | {d['cpu']:.3f} | {d['maxrss_mib']:.0f} |")
    if trees:
        out.append("")
        out.append("Trees (`--trees`): devlint check . --no-cache, default jobs, slowest first; a tree of a "
                   "few hundred lines is bound by the start-up (interpreter, libcst import) of the one-file row:")
        out.append("")
        out.append("| tree | lines | wall s | CPU s | lines/s |")
        out.append("|---|---:|---:|---:|---:|")
        for t in trees:
            out.append(f"| {t['tree']} | {t['lines']:,} | {t['seconds']:.2f} | {t.get('cpu', 0):.2f} "
                       f"| {t['lines_per_s']:,.0f} |")
    notes = []
    for r in results:
        for part in ("nocache", "cold", "warm", "cold_j1", "subset"):
            d = getattr(r, part)
            if d.get("error"):
                notes.append(f"- {r.name} devlint {part}: {d['error']}")
        if r.cold and r.cold.get("files_checked") not in (None, r.files):
            notes.append(f"- {r.name}: devlint checked {r.cold.get('files_checked')} of {r.files} .py files")
        if r.parse.get("failed"):
            notes.append(f"- {r.name}: libcst could not parse {r.parse['failed']} files")
        if r.torchfix and r.torchfix.get("rc") not in (0, None):
            notes.append(f"- {r.name}: TorchFix exit {r.torchfix['rc']}: {' / '.join(r.torchfix.get('stderr_tail', []))}")
    if meta.get("cache_note"):
        notes.append(f"- {meta['cache_note']}")
    if notes:
        out.append("")
        out.append("Notes:")
        out.append("")
        out.extend(notes)
    return "\n".join(out)


# ---------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", choices=corpora.ALL_CORPORA,
                    help="corpus to measure (repeatable; default: timm, transformers, accelerate, d2l)")
    ap.add_argument("--quick", action="store_true", help="timm and d2l, one repetition, no TorchFix")
    ap.add_argument("--repeats", type=int, default=3, help="repetitions of quick measurements (median kept)")
    ap.add_argument("--no-torchfix", action="store_true", help="skip TorchFix")
    ap.add_argument("--torchfix-transformers", action="store_true",
                    help="also run TorchFix on transformers (about 20 minutes on 2 cores)")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="pass -j to devlint and TorchFix")
    ap.add_argument("--no-devlint", action="store_true", help="measure only the parse floor and TorchFix")
    ap.add_argument("--trees", metavar="DIR",
                    help="also measure lines/s on each repository under DIR (one per subfolder), such as the "
                         "trees ../shared/realcode/survey.py exports into its --work folder")
    args = ap.parse_args(argv)

    names = args.corpus or (["timm", "d2l"] if args.quick else list(corpora.SPEED_CORPORA))
    repeats = 1 if args.quick else max(1, args.repeats)
    use_torchfix = not (args.no_torchfix or args.quick)

    ready, devlint_version = devlint_ready()
    if args.no_devlint:
        ready, devlint_version = False, "not measured"
    elif not ready:
        print(f"devlint is not ready ({devlint_version}); measuring the rest only", file=sys.stderr)
        devlint_version = "not ready"

    tf_script = ensure_torchfix() if use_torchfix else None
    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "libcst": lib_version("libcst"),
        "devlint": devlint_version,
        "torchfix": TORCHFIX_VERSION if tf_script else "not run",
        "torchfix_libcst": lib_version("libcst", str(torchfix_python())) if tf_script else "-",
        "jobs_note": f" (-j {args.jobs})" if args.jobs else f" ({os.cpu_count()} workers)",
        "load_start": load(),
    }

    def say(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    results = []
    for name in names:
        c = corpora.ensure(name)
        r = CorpusResult(name=name, version=c.version, files=len(c.files), lines=c.lines)
        say(f"{name}: libcst parse of {len(c.files)} files ...")
        r.parse = parse_floor(c, repeats)
        say(f"{name}: parse {r.parse['seconds']:.2f}s")
        if ready:
            r.nocache = devlint_run(c, ["--no-cache"], repeats, clear_cache=False, jobs=args.jobs)
            say(f"{name}: devlint --no-cache {r.nocache['seconds']:.2f}s {r.nocache.get('error', '')}")
            r.cold = devlint_run(c, [], repeats, clear_cache=True, jobs=args.jobs)
            if not cache_dirs(c.root):
                meta["cache_note"] = ("no .devlint_cache/ appeared in the corpus root after a run with the cache "
                                      "on, so 'cold' is an ordinary run and the warm run was skipped")
            say(f"{name}: devlint cold (empty cache) {r.cold['seconds']:.2f}s {r.cold.get('error', '')}")
            if cache_dirs(c.root) or r.cold.get("error"):
                r.warm = devlint_run(c, [], max(3, repeats), clear_cache=False, jobs=args.jobs)
                say(f"{name}: devlint warm {r.warm['seconds']:.2f}s {r.warm.get('error', '')}")
            else:  # nothing was cached, so a second run would only repeat the cold one
                say(f"{name}: no cache written; warm run skipped")
        if ready and name in SINGLE_PROCESS_CORPORA and args.jobs is None:
            r.cold_j1 = devlint_run(c, [], repeats, clear_cache=True, jobs=1)
            say(f"{name}: devlint cold -j 1 {r.cold_j1['seconds']:.2f}s {r.cold_j1.get('error', '')}")
        if name in SUBSET:
            folder, count = SUBSET[name]
            targets = [f for f in c.relative_files() if f.startswith(folder + "/")][:count]
            if ready:
                r.subset = devlint_run(c, ["--no-cache"], max(3, repeats), clear_cache=False, jobs=args.jobs,
                                       targets=targets)
                r.subset["files"] = len(targets)
                say(f"{name}: devlint on {len(targets)} files of {folder} {r.subset['seconds']:.2f}s")
            if tf_script:
                r.subset_torchfix = torchfix_run(c, tf_script, repeats, args.jobs, targets=targets)
                say(f"{name}: TorchFix on {len(targets)} files of {folder} {r.subset_torchfix['seconds']:.2f}s")
        if tf_script and (name != "transformers" or args.torchfix_transformers):
            say(f"{name}: TorchFix ...")
            r.torchfix = torchfix_run(c, tf_script, repeats, args.jobs)
            say(f"{name}: TorchFix {r.torchfix['seconds']:.2f}s")
        results.append(r)
        # partial results after each corpus, so a long run that is stopped still leaves its numbers
        partial = corpora.cache_dir() / "results" / "partial.json"
        partial.parent.mkdir(exist_ok=True)
        partial.write_text(json.dumps({"meta": meta, "corpora": [asdict(x) for x in results]}, indent=2))

    single = single_file(repeats) if ready else None
    trees = trees_run(Path(args.trees), repeats, args.jobs) if ready and args.trees else None
    meta["load_end"] = load()
    table = markdown(meta, results, single, trees)
    print(table)
    outdir = corpora.cache_dir() / "results"
    outdir.mkdir(exist_ok=True)
    dest = outdir / f"run-{time.strftime('%Y%m%d-%H%M%S')}.json"
    dest.write_text(json.dumps({"meta": meta, "corpora": [asdict(r) for r in results], "single": single,
                                "trees": trees}, indent=2))
    say(f"raw results: {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
