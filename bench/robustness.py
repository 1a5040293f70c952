"""Robustness run (issue 10): devlint on real code nobody here wrote, and on hostile input.

    python bench/robustness.py                      # all five corpora, every .py file
    python bench/robustness.py --corpus timm
    python bench/robustness.py --property           # long property-based run of engine.check_text
    python bench/robustness.py --property --examples 20000 --seconds 1800

Real-code mode runs `devlint check <every .py file> --select ALL --format json --exit-zero
--no-cache` per corpus and fails (exit 1) on any of:
  - exit code 3 (an internal error in devlint) or any other non-zero exit,
  - an internal error reported on stderr (a traceback, "internal error"),
  - a finding with a code the rule registry does not know,
  - a DEV000 (parse error) on a file that `ast.parse` accepts.
It prints the findings per code and per corpus and writes every error/warning finding with
its source line to <cache>/robustness/findings.md (and .jsonl) for review: on real code,
a false alarm is the most expensive bug a linter can have.

Property mode feeds `devlint.engine.check_text` generated programs (hypothesmith, installed
into a side virtual environment in the cache folder when it is not importable here) and
mutated real programs (lines deleted, statements swapped, names renamed, files truncated),
and reports every exception it raises (and every call that hangs). Invalid input must give
a DEV000 finding, never an exception.
"""

from __future__ import annotations

import argparse
import ast
import collections
import io
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import tokenize
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpora  # noqa: E402

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
TIMEOUT_S = 3600  # one corpus through the CLI (transformers is the long one)


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def devlint_cmd() -> list[str]:
    script = Path(sys.executable).parent / "devlint"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from devlint.cli import main; sys.exit(main())"]


def known_codes() -> set[str]:
    from devlint.rules import all_rules

    return {r.code for r in all_rules()}


def ast_accepts(path: Path) -> tuple[bool, str]:
    try:
        ast.parse(path.read_bytes(), filename=str(path))
        return True, ""
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError) as e:
        return False, f"{type(e).__name__}: {e}"


def source_line(path: Path, line: int) -> str:
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = text.splitlines()
    return lines[line - 1].rstrip() if 0 < line <= len(lines) else ""


def context_lines(path: Path, line: int, before: int = 3, after: int = 1) -> str:
    try:
        lines = path.read_bytes().decode("utf-8", "replace").splitlines()
    except OSError:
        return ""
    lo, hi = max(1, line - before), min(len(lines), line + after)
    return "\n".join(f"{'>' if n == line else ' '}{n:>5} {lines[n - 1]}" for n in range(lo, hi + 1))


INTERNAL_MARKERS = ("Traceback (most recent call last)", "internal error", "Internal error")


# ---------------------------------------------------------------------------- real code


def run_corpus(c: corpora.Corpus, codes: set[str], jobs: int | None, exclude: frozenset[str] = frozenset()) -> dict:
    """One devlint process over every .py file of one corpus; returns what it found."""
    rel = [r for r in c.relative_files() if f"{c.name}/{r}" not in exclude]
    cmd = devlint_cmd() + ["check", "--select", "ALL", "--format", "json", "--exit-zero", "--no-cache"]
    if jobs:
        cmd += ["-j", str(jobs)]
    cmd += ["--"] + rel
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=c.root, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"problems": [f"{c.name}: devlint did not finish in {TIMEOUT_S} s"], "findings": [],
                "seconds": TIMEOUT_S}
    wall = time.perf_counter() - t0
    problems: list[str] = []
    if p.returncode == 3:
        problems.append(f"{c.name}: exit code 3 (internal error): {p.stderr.strip()[-3000:]}")
    elif p.returncode != 0:
        problems.append(f"{c.name}: exit code {p.returncode} with --exit-zero: {p.stderr.strip()[-3000:]}")
    for marker in INTERNAL_MARKERS:
        if marker in p.stderr:
            problems.append(f"{c.name}: stderr reports an internal error:\n{p.stderr.strip()[-3000:]}")
            break
    try:
        report = json.loads(p.stdout) if p.stdout.strip() else {"findings": []}
    except json.JSONDecodeError:
        problems.append(f"{c.name}: stdout is not one JSON object: {p.stdout[:500]!r}")
        report = {"findings": []}
    findings = report.get("findings", [])
    checked = report.get("files_checked")
    if checked is not None and checked != len(rel):
        problems.append(f"{c.name}: files_checked is {checked}, but {len(rel)} files were named")
    dev000_files = set()
    for f in findings:
        f["corpus"] = c.name
        code = f.get("code", "?")
        if code not in codes:
            problems.append(f"{c.name}: unknown code {code} at {f.get('path')}:{f.get('line')}: {f.get('message')}")
        if "internal error" in str(f.get("message", "")).lower():
            problems.append(f"{c.name}: internal error reported as a finding at {f.get('path')}: {f.get('message')}")
        if code == "DEV000":
            path = c.root / f["path"]
            dev000_files.add(f["path"])
            ok, _ = ast_accepts(path)
            if ok:
                problems.append(f"{c.name}: DEV000 on {f['path']}, which ast.parse accepts: {f.get('message')}")
    # the other direction is not a failure (libcst may accept what ast rejects), but is worth a line
    ast_rejects = [r for r in rel if not ast_accepts(c.root / r)[0]]
    missed = [r for r in ast_rejects if r not in dev000_files]
    return {"problems": problems, "findings": findings, "seconds": wall, "rc": p.returncode,
            "files": len(rel), "lines": c.lines, "ast_rejects": ast_rejects, "dev000_missed": missed}


def _check_one(job: tuple[str, str]) -> tuple[list[dict], str | None]:
    """One file the way `devlint check` does it (runner.check_unit), in a worker process.

    Used when the CLI run of a corpus stops on an internal error: every file still gets
    checked, so one crash neither hides the others nor the findings of the rest.
    """
    path, rel = job
    try:
        from devlint.runner import CheckSettings, check_unit
        from devlint.rules import all_rules
        from devlint.source import read_source

        unit = read_source(Path(path), display=rel)
        found = check_unit(unit, CheckSettings(enabled=frozenset(r.code for r in all_rules())))
    except Exception:  # noqa: BLE001 - the crash is what this pass reports
        return [], f"{rel}: check raised\n{traceback.format_exc(limit=-6)}"
    rows = [{"code": f.code, "name": f.name, "severity": getattr(f.severity, "value", str(f.severity)),
             "path": f.path, "line": f.line, "column": f.column, "message": f.message} for f in found]
    return rows, None


def in_process_pass(c: corpora.Corpus, jobs: int | None) -> tuple[list[str], list[dict]]:
    """Check each file separately (worker processes); return the crashes and the findings.

    The workers run in the corpus root, as the CLI run does: the project index is found
    from the working folder and the relative path, and without it the analysis sees a
    different program (imports of the package's own modules stay unresolved).
    """
    from concurrent.futures import ProcessPoolExecutor

    problems, findings = [], []
    work = [(str(p), rel) for p, rel in zip(c.files, c.relative_files())]
    with ProcessPoolExecutor(max_workers=jobs or os.cpu_count() or 1, initializer=os.chdir,
                             initargs=(str(c.root),)) as pool:
        for rows, problem in pool.map(_check_one, work, chunksize=8):
            findings += rows
            if problem:
                problems.append(f"{c.name}/{problem}")
    return problems, findings


def write_review(findings: list[dict], roots: dict[str, Path], dest: Path) -> int:
    """Every error/warning finding, with its source, for a person to judge."""
    serious = [f for f in findings if f.get("severity") in ("error", "warning")]
    serious.sort(key=lambda f: (f.get("code", ""), f["corpus"], f.get("path", ""), f.get("line", 0)))
    with open(dest.with_suffix(".jsonl"), "w", encoding="utf-8") as out:
        for f in serious:
            path = roots[f["corpus"]] / f["path"]
            row = {k: f.get(k) for k in ("corpus", "path", "line", "column", "code", "severity", "message")}
            row["source"] = source_line(path, f.get("line", 0))
            out.write(json.dumps(row) + "\n")
    with open(dest, "w", encoding="utf-8") as out:
        out.write(f"# devlint robustness run: {len(serious)} error/warning findings\n\n")
        out.write("Verdict per finding: true bug / false alarm, and why.\n")
        for f in serious:
            path = roots[f["corpus"]] / f["path"]
            out.write(f"\n## {f.get('code')} {f['corpus']}/{f['path']}:{f.get('line')}:{f.get('column')} "
                      f"({f.get('severity')}, {f.get('name', '')})\n\n{f.get('message')}\n\n```\n")
            out.write(context_lines(path, f.get("line", 0)) + "\n```\n\nverdict: \n")
    return len(serious)


def real_code(args: argparse.Namespace) -> int:
    names = args.corpus or list(corpora.ALL_CORPORA)
    codes = known_codes()
    outdir = corpora.cache_dir() / "robustness"
    outdir.mkdir(exist_ok=True)
    all_findings: list[dict] = []
    problems: list[str] = []
    roots: dict[str, Path] = {}
    summary = []
    for name in names:
        c = corpora.ensure(name)
        roots[name] = c.root
        say(f"{name} {c.version}: devlint over {len(c.files)} files ...")
        r = run_corpus(c, codes, args.jobs, frozenset(args.exclude or ()))
        if args.exclude:
            gone = [x for x in args.exclude if x.startswith(f"{name}/")]
            if gone:
                r["note"] = f"excluded by --exclude (known crashes): {', '.join(gone)}"
        say(f"{name}: {len(r['findings'])} findings in {r['seconds']:.1f} s, {len(r['problems'])} problems")
        crashed = any("exit code 3" in p or "internal error" in p for p in r["problems"])
        if crashed or args.in_process:
            say(f"{name}: checking file by file{' to find the crash' if crashed else ''} ...")
            t0 = time.perf_counter()
            more, found = in_process_pass(c, args.jobs)
            say(f"{name}: {len(more)} files crashed, {len(found)} findings ({time.perf_counter() - t0:.1f} s)")
            r["problems"] += more
            if crashed:  # the CLI stopped at the first crash: the file-by-file findings stand in
                r["findings"] = found
                for f in found:
                    f["corpus"] = c.name
                r["note"] = "findings from the file-by-file pass (the CLI run stopped on an internal error)"
        problems += r["problems"]
        all_findings += r["findings"]
        # each corpus as soon as it is done, so a long run can be reviewed while it goes on
        (outdir / f"{name}.json").write_text(json.dumps({k: v for k, v in r.items()}, indent=1, default=str))
        summary.append((c, r))

    by_code: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    sev: dict[str, str] = {}
    for f in all_findings:
        by_code[f["code"]][f["corpus"]] += 1
        sev[f["code"]] = f.get("severity", "?")
    print("| corpus | files | lines | seconds | exit | findings | error | warning | info | ast rejects | DEV000 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for c, r in summary:
        cnt = collections.Counter(f.get("severity") for f in r["findings"])
        d0 = sum(1 for f in r["findings"] if f["code"] == "DEV000")
        print(f"| {c.name} {c.version} | {r.get('files', len(c.files))} | {c.lines:,} | {r['seconds']:.1f} "
              f"| {r.get('rc', '?')} | {len(r['findings'])} | {cnt['error']} | {cnt['warning']} | {cnt['info']} "
              f"| {len(r.get('ast_rejects', []))} | {d0} |")
    print()
    print("| code | severity | " + " | ".join(names) + " | total |")
    print("|---|---|" + "---:|" * (len(names) + 1))
    for code in sorted(by_code):
        row = by_code[code]
        print(f"| {code} | {sev[code]} | " + " | ".join(str(row[n]) for n in names) + f" | {sum(row.values())} |")
    if not by_code:
        print("| (none) | | " + " | ".join("0" for _ in names) + " | 0 |")
    print()
    n = write_review(all_findings, roots, outdir / "findings.md")
    (outdir / "all-findings.json").write_text(json.dumps(all_findings, indent=1))
    for c, r in summary:
        if r.get("note"):
            print(f"note: {c.name}: {r['note']}")
        if r.get("dev000_missed"):
            print(f"note: {c.name}: ast.parse rejects {len(r['dev000_missed'])} files devlint gave no DEV000: "
                  f"{r['dev000_missed'][:5]}")
    print(f"{n} error/warning findings written for review to {outdir / 'findings.md'} (and .jsonl)")
    if problems:
        print(f"\nFAILED: {len(problems)} problems")
        for p in problems:
            print(f"- {p}")
        return 1
    print("\nOK: no exit code 3, no internal error, no unknown code, every DEV000 on a file ast.parse rejects")
    return 0


# ---------------------------------------------------------------------------- property mode


class Hang(Exception):
    pass


def _alarm(signum, frame):  # pragma: no cover - signal handler
    raise Hang()


def seed_programs(limit_bytes: int = 60_000) -> list[tuple[str, str]]:
    """Real programs to mutate: the example, the test fixtures, and corpus files that use devices."""
    seeds = []
    candidates = [BENCH / "example_train.py"]
    for folder in (REPO / "tests" / "fixtures", REPO / "examples"):
        if folder.exists():
            candidates += sorted(folder.rglob("*.py"))
    for p in candidates:
        try:
            seeds.append((str(p.relative_to(REPO)), p.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            pass
    markers = (".to(", ".cuda(", "device=", "torch.load(")
    for name in ("d2l", "timm", "accelerate", "lightning"):
        try:
            c = corpora.ensure(name)
        except Exception as e:  # offline: the fixtures still make a run
            say(f"corpus {name} unavailable for seeds: {e}")
            continue
        for p in c.files:
            if p.stat().st_size > limit_bytes:
                continue
            text = p.read_text(encoding="utf-8", errors="replace")
            if any(m in text for m in markers):
                seeds.append((f"{name}/{p.relative_to(c.root)}", text))
    return seeds


def _names(text: str) -> list[str]:
    import keyword

    out = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
                out.add(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return sorted(out)


def _rename(text: str, rng: random.Random) -> str:
    names = _names(text)
    if len(names) < 2:
        return text
    old = rng.choice(names)
    new = rng.choice(names + ["device", "model", "cuda", "to", "self", "torch", "x_", "batch"])
    out = []
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
        for tok in toks:
            if tok.type == tokenize.NAME and tok.string == old:
                tok = tok._replace(string=new)
            out.append(tok)
        return tokenize.untokenize(out)
    except (tokenize.TokenError, IndentationError, SyntaxError, ValueError):
        return text


def _swap_statements(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        if len(lines) >= 2:
            i, j = rng.sample(range(len(lines)), 2)
            lines[i], lines[j] = lines[j], lines[i]
        return "".join(lines)
    bodies = []
    for node in ast.walk(tree):
        for attr in ("body", "orelse", "finalbody"):
            body = getattr(node, attr, None)
            if isinstance(body, list) and len(body) >= 2 and all(isinstance(s, ast.stmt) for s in body):
                bodies.append(body)
    if not bodies:
        return text
    body = rng.choice(bodies)
    i, j = sorted(rng.sample(range(len(body)), 2))
    a, b = body[i], body[j]
    a0, a1 = a.lineno - 1, a.end_lineno
    b0, b1 = b.lineno - 1, b.end_lineno
    if a1 > b0:  # statements sharing a line (`a; b`): leave as is
        return text
    return "".join(lines[:a0] + lines[b0:b1] + lines[a1:b0] + lines[a0:a1] + lines[b1:])


def mutate(text: str, rng: random.Random) -> tuple[str, list[str]]:
    """Apply 1-3 random mutations; return the program and their names."""
    applied = []
    for _ in range(rng.randint(1, 3)):
        lines = text.splitlines(keepends=True)
        kind = rng.choice(["delete", "delete_block", "swap", "rename", "rename", "duplicate",
                           "indent", "truncate", "insert", "star_args"])
        applied.append(kind)
        if kind == "delete" and lines:
            del lines[rng.randrange(len(lines))]
            text = "".join(lines)
        elif kind == "delete_block" and lines:
            i = rng.randrange(len(lines))
            del lines[i:i + rng.randint(2, 12)]
            text = "".join(lines)
        elif kind == "swap":
            text = _swap_statements(text, rng)
        elif kind == "rename":
            text = _rename(text, rng)
        elif kind == "duplicate" and lines:
            i = rng.randrange(len(lines))
            lines.insert(rng.randrange(len(lines) + 1), lines[i])
            text = "".join(lines)
        elif kind == "indent" and lines:
            i = rng.randrange(len(lines))
            lines[i] = rng.choice(["    ", "\t", " "]) + lines[i] if rng.random() < 0.6 else lines[i].lstrip()
            text = "".join(lines)
        elif kind == "truncate" and text:
            text = text[: rng.randrange(len(text))]
        elif kind == "star_args":
            # a call's arguments replaced by unpacking (`x.cuda(*args)`, `m.to(**kw)`): values
            # the analysis cannot see, in exactly the places it reads arguments
            calls = [m for m in re.finditer(r"\b(\w+)\(([^()\n]*)\)", text)]
            device_calls = [m for m in calls if m.group(1) in ("to", "cuda", "cpu", "load", "DataLoader",
                                                             "zeros", "ones", "tensor", "device")]
            if device_calls and rng.random() < 0.7:
                calls = device_calls
            if calls:
                m = rng.choice(calls)
                inner = rng.choice(["*args", "**kwargs", "*args, **kwargs", "*a, device=d", "", "None"])
                text = text[: m.start(2)] + inner + text[m.end(2):]
        elif kind == "insert":
            snippet = rng.choice([
                "x.to(device)\n", "model = model.cuda()\n", "torch.load(p)\n", "self.w = torch.zeros(3)\n",
                "for a, b in loader:\n    out = model(a)\n", "device = 'cuda' if ok else 'cpu'\n",
                "return\n", "yield x\n", "global device\n", "del model\n", "lambda: x.to(d)\n",
                "with torch.device('cuda'):\n    t = torch.ones(2)\n", "async def f():\n    await g()\n",
                "@torch.no_grad()\n", "class C(nn.Module):\n    pass\n", "else:\n", "except:\n", "(((\n",
                "'''\n", "\\\n", "match x:\n    case 1:\n        pass\n", "print >>sys.stderr, 'py2'\n",
                "x = x.cuda(*args)\n", "t = t.to(*a, **k)\n", "model.to(**kw)\n", "y = x.cuda(None)\n",
                "z = x.to(x.device if x is not None else 'cpu')\n",
            ])
            at = rng.randrange(len(lines) + 1)
            if at < len(lines) and rng.random() < 0.8:  # usually at the indentation found there
                indent = lines[at][: len(lines[at]) - len(lines[at].lstrip(" \t"))]
                snippet = "".join(indent + ln for ln in snippet.splitlines(keepends=True))
            lines.insert(at, snippet)
            text = "".join(lines)
    return text, applied


def _hypothesmith_python() -> str | None:
    """A Python that can import both devlint and hypothesmith, installing it aside if needed."""
    try:
        import hypothesmith  # noqa: F401

        return sys.executable
    except ImportError:
        pass
    venv = corpora.cache_dir() / "property-venv"
    py = venv / "bin" / "python"
    if not py.exists():
        say(f"installing hypothesmith into {venv} (system site packages visible, so devlint is too) ...")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    probe = subprocess.run([str(py), "-c", "import hypothesmith, devlint.engine"], capture_output=True)
    if probe.returncode != 0:
        inst = subprocess.run([str(py), "-m", "pip", "install", "-q", "hypothesmith"], capture_output=True, text=True)
        if inst.returncode != 0:
            say(f"hypothesmith could not be installed: {inst.stderr.strip()[-500:]}")
            return None
    return str(py)


def property_run(args: argparse.Namespace) -> int:
    from devlint import engine

    if not os.environ.get("DEVLINT_BENCH_REEXEC") and not args.no_hypothesmith:
        py = _hypothesmith_python()
        if py and py != sys.executable:
            env = dict(os.environ, DEVLINT_BENCH_REEXEC="1")
            return subprocess.call([py, str(Path(__file__).resolve())] + sys.argv[1:], env=env)

    outdir = corpora.cache_dir() / "robustness"
    outdir.mkdir(exist_ok=True)
    failures: dict[tuple[str, str], dict] = {}
    counts = collections.Counter()
    signal.signal(signal.SIGALRM, _alarm)
    deadline = time.monotonic() + args.seconds

    def check(src: str, origin: str) -> None:
        counts["programs"] += 1
        try:
            ast.parse(src)
            counts["valid"] += 1
        except Exception:
            pass
        signal.alarm(args.per_call_timeout)
        try:
            findings = engine.check_text(src, "generated.py")
            counts["findings"] += len(findings)
        except Hang:
            key = ("Hang", origin.split(":")[0])
            _record(failures, key, src, origin, f"no answer within {args.per_call_timeout} s")
        except BaseException as e:  # noqa: BLE001 - anything devlint raises is the finding here
            if isinstance(e, KeyboardInterrupt):
                raise
            tb = traceback.extract_tb(e.__traceback__)
            where = next((f"{Path(fr.filename).name}:{fr.lineno}" for fr in reversed(tb)
                          if "devlint" in fr.filename), "?")
            _record(failures, (type(e).__name__, where), src, origin,
                    "".join(traceback.format_exception(e, limit=-8)))
        finally:
            signal.alarm(0)

    rng = random.Random(args.seed)
    seeds = seed_programs()
    half = args.examples if args.no_hypothesmith else args.examples // 2
    mutation_deadline = deadline if args.no_hypothesmith else time.monotonic() + args.seconds / 2
    say(f"mutation run: {len(seeds)} seed programs, up to {half} mutants")
    for _ in range(half):
        if time.monotonic() > mutation_deadline:
            break
        name, text = rng.choice(seeds)
        mutant, applied = mutate(text, rng)
        check(mutant, f"mutant of {name}: {'+'.join(applied)}")
    counts["mutants"] = counts["programs"]

    if not args.no_hypothesmith:
        try:
            import hypothesmith
            from hypothesis import HealthCheck, given, settings
            from hypothesis import strategies as st
        except ImportError:
            say("hypothesmith is not importable: generated programs skipped")
        else:
            remaining = args.examples - half
            say(f"hypothesmith run: up to {remaining} programs")

            @settings(max_examples=remaining, deadline=None, database=None, derandomize=False,
                      suppress_health_check=list(HealthCheck))
            @given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()))
            def gen(src: str) -> None:
                if time.monotonic() <= deadline:
                    check(src, "hypothesmith")

            gen()
    counts["generated"] = counts["programs"] - counts["mutants"]

    for key, f in failures.items():
        if key[0] != "Hang":
            say(f"shrinking the input of {key[0]} at {key[1]} ({len(f['src'])} chars) ...")
            f["src"] = shrink(f["src"], key, engine.check_text, args.shrink_seconds)

    print(f"programs: {counts['programs']} ({counts['mutants']} mutants, {counts['generated']} generated), "
          f"{counts['valid']} valid Python, {counts['findings']} findings")
    report = outdir / "property-failures.md"
    with open(report, "w", encoding="utf-8") as out:
        out.write(f"# property run: {len(failures)} distinct failures\n")
        for (kind, where), f in sorted(failures.items()):
            out.write(f"\n## {kind} at {where} ({f['count']}x; first from {f['origin']})\n\n"
                      f"```\n{f['detail']}\n```\n\nsmallest input ({len(f['src'])} chars):\n\n"
                      f"```python\n{f['src']}\n```\n")
    if failures:
        print(f"FAILED: {len(failures)} distinct exceptions from engine.check_text (details: {report})")
        for (kind, where), f in sorted(failures.items()):
            print(f"- {kind} at {where}: {f['count']}x, e.g. {f['origin']}")
        return 1
    print("OK: engine.check_text raised nothing")
    return 0


def _failure_key(src: str, check_text) -> tuple[str, str] | None:
    try:
        check_text(src, "generated.py")
    except Exception as e:  # noqa: BLE001
        tb = traceback.extract_tb(e.__traceback__)
        where = next((f"{Path(fr.filename).name}:{fr.lineno}" for fr in reversed(tb) if "devlint" in fr.filename), "?")
        return type(e).__name__, where
    return None


def shrink(src: str, key: tuple[str, str], check_text, seconds: float) -> str:
    """Delete lines (halves, then quarters, ... then single lines) while the same failure stays.

    A crash report is only as useful as its reproducer is short; this is a plain line-level
    delta debugging loop, bounded in time.
    """
    deadline = time.monotonic() + seconds
    lines = src.splitlines(keepends=True)
    chunk = max(1, len(lines) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        i, removed = 0, False
        while i < len(lines) and time.monotonic() < deadline:
            candidate = lines[:i] + lines[i + chunk:]
            if candidate and _failure_key("".join(candidate), check_text) == key:
                lines, removed = candidate, True
            else:
                i += chunk
        if not removed:
            chunk //= 2
    return "".join(lines)


def _record(failures: dict, key: tuple[str, str], src: str, origin: str, detail: str) -> None:
    f = failures.get(key)
    if f is None:
        failures[key] = {"count": 1, "src": src, "origin": origin, "detail": detail}
    else:
        f["count"] += 1
        if len(src) < len(f["src"]):
            f.update(src=src, origin=origin, detail=detail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", choices=corpora.ALL_CORPORA, help="repeatable; default all")
    ap.add_argument("-j", "--jobs", type=int, default=None, help="pass -j to devlint")
    ap.add_argument("--exclude", action="append", metavar="CORPUS/PATH",
                    help="leave a file out of the CLI run (a known crash), e.g. "
                         "transformers/transformers/modeling_utils.py; repeatable")
    ap.add_argument("--in-process", action="store_true",
                    help="also call engine.check_text on every file in this process")
    ap.add_argument("--property", action="store_true", help="property-based run of engine.check_text")
    ap.add_argument("--examples", type=int, default=5000, help="property mode: programs to try")
    ap.add_argument("--seconds", type=int, default=600, help="property mode: time budget")
    ap.add_argument("--seed", type=int, default=0, help="property mode: seed of the mutations")
    ap.add_argument("--per-call-timeout", type=int, default=20, help="property mode: a call slower than this hangs")
    ap.add_argument("--shrink-seconds", type=int, default=120,
                    help="property mode: time to spend shortening each failing input")
    ap.add_argument("--no-hypothesmith", action="store_true", help="property mode: mutations only")
    args = ap.parse_args(argv)
    return property_run(args) if args.property else real_code(args)


if __name__ == "__main__":
    sys.exit(main())
