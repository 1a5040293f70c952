#!/usr/bin/env python3
"""`check --fix --unsafe-fixes` over real repositories, on copies, and what the fixes did to them.

usage: fix_ecosystem.py [WORK] [--corpus FILE] [--repo OWNER/NAME ...] [--limit N]
                        [--devlint CMD] [--scratch DIR] [--json FILE] [--keep]

WORK      the folder of trees `survey.py --work` exported (default /work/rc/survey): one folder
          per repository, named owner+name. A repository not exported there is skipped.
--corpus  the repositories (default ../shared/realcode/ecosystem.json beside the project).
--repo    only these repositories (repeatable); --limit: only the first N.
--devlint the devlint command line (default: this checkout's, `python -m devlint` with src/ first).

Each tree is copied (the export is never written) and fixed twice:

    DEVLINT check --fix --unsafe-fixes --select ALL --fail-on never --no-cache -q TARGET

and every file the first run changed is held to four checks, all independent of devlint's own
fixer code:

- it parses (`ast`; a notebook: each code cell, IPython lines commented out as devlint reads them);
- it gains no name read before it is bound: a first-binding check on `symtable` (a function's
  local read on a line above its first binding in that function, a module-level read above the
  first module-level binding), counted before and after;
- every `map_location=` the fix added is a device: a device string, `torch.device(...)`,
  `x.device`, or a name every assignment of which in the file is one of those;
- the second run changes nothing.

The last line is:
fix-ecosystem: R repositories, F files changed; not parsing P; names used before bound U;
map_location not a device M; changed by a second run S; devlint errors E
"""

from __future__ import annotations

import argparse
import ast
import builtins
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import symtable
import tempfile
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)
DEFAULT_CORPUS = os.path.join(os.path.dirname(PROJECT), "shared", "realcode", "ecosystem.json")
if not os.path.exists(DEFAULT_CORPUS):
    DEFAULT_CORPUS = "/work/shared/realcode/ecosystem.json"
SUFFIXES = (".py", ".ipynb")
DEVICE_STRING = re.compile(r"^(cpu|cuda|mps|xpu|meta|hpu|npu|xla)(:\d+)?$")
BUILTINS = set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__loader__", "__package__",
                                 "__builtins__", "__path__", "__debug__", "__class__", "__annotations__"}


# --- the checks ---------------------------------------------------------------------------------

def python_texts(path: str, data: bytes) -> list[str] | None:
    """The Python a file holds (one text per notebook code cell); None when it is not readable."""
    if path.endswith(".ipynb"):
        try:
            document = json.loads(data.decode("utf-8-sig"))
        except (ValueError, UnicodeDecodeError):
            return None
        out = []
        for cell in document.get("cells", []) if isinstance(document, dict) else []:
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                source = cell.get("source", "")
                source = "".join(source) if isinstance(source, list) else source
                lines = source.splitlines()
                if lines and lines[0].lstrip().startswith("%%"):
                    lines = []  # a cell magic: not Python
                out.append("\n".join("#" + line if line.lstrip().startswith(("%", "!")) else line for line in lines))
        return ["\n".join(out)]
    try:
        return [data.decode("utf-8-sig")]
    except UnicodeDecodeError:
        return None


def parses(texts: list[str]) -> bool:
    try:
        for text in texts:
            ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def used_before_bound(text: str) -> Counter:
    """(scope, name) -> reads above the first binding, by `symtable`'s idea of each scope's locals."""
    try:
        tree = ast.parse(text)
        table = symtable.symtable(text, "<fixed>", "exec")
    except (SyntaxError, ValueError, RecursionError):
        return Counter()
    found: Counter = Counter()
    star = any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree))
    functions = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault((node.name, node.lineno), node)

    def first_binding(body_nodes, name):
        lines = []
        assigned = set()  # an assignment binds its targets once its value is evaluated
        for node in body_nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    for inner in ast.walk(target):
                        if isinstance(inner, ast.Name):
                            assigned.add(id(inner))
                            if inner.id == name:
                                lines.append((node.end_lineno, node.end_col_offset))
        for node in body_nodes:
            if id(node) in assigned:
                continue
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id == name:
                lines.append((node.lineno, node.col_offset))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                lines.append((node.lineno, node.col_offset))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                    lines.append((node.lineno, node.col_offset))
            elif isinstance(node, ast.arg) and node.arg == name:
                lines.append((0, 0))
            elif isinstance(node, ast.ExceptHandler) and node.name == name:
                lines.append((node.lineno, node.col_offset))
        return min(lines) if lines else None

    def own_nodes(root):
        """The nodes of a scope, not those of the scopes nested in it (their defaults and decorators are)."""
        stack = list(ast.iter_child_nodes(root))
        while stack:
            node = stack.pop()
            yield node
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                                 ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue
            stack.extend(ast.iter_child_nodes(node))

    def loops(root):
        return [n for n in own_nodes(root) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]

    def in_loop(node, loop_nodes):
        return any(loop.lineno <= node.lineno <= (loop.end_lineno or loop.lineno) for loop in loop_nodes)

    def check(scope_table, root, label):
        nodes = list(own_nodes(root))
        loop_nodes = loops(root)
        for node in nodes:
            if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
                continue
            try:
                symbol = scope_table.lookup(node.id)
            except KeyError:
                continue
            if scope_table.get_type() == "module":
                if symbol.is_global() or symbol.is_assigned() or symbol.is_imported():
                    first = first_binding(nodes, node.id)
                    if first is None and node.id not in BUILTINS and not star \
                            and not _bound_in_functions(tree, node.id):
                        found[(label, node.id)] += 1
                    elif first is not None and (node.lineno, node.col_offset) < first and not in_loop(node, loop_nodes):
                        found[(label, node.id)] += 1
                elif node.id not in BUILTINS and not star:
                    found[(label, node.id)] += 1
            elif symbol.is_local() and not symbol.is_parameter():
                first = first_binding(nodes, node.id)
                if first is not None and (node.lineno, node.col_offset) < first and not in_loop(node, loop_nodes):
                    found[(label, node.id)] += 1
            elif symbol.is_global() and not symbol.is_declared_global() and node.id not in BUILTINS and not star:
                if node.id not in table.get_identifiers():
                    found[(label, node.id)] += 1

    check(table, tree, "<module>")
    for child in _function_tables(table):
        node = functions.get((child.get_name(), child.get_lineno()))
        if node is not None:
            check(child, node, f"{child.get_name()}:{child.get_lineno()}")
    return found


def _bound_in_functions(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(tree))


def _function_tables(table: symtable.SymbolTable):
    for child in table.get_children():
        if child.get_type() == "function" and child.get_name() not in ("lambda", "listcomp", "genexpr",
                                                                         "setcomp", "dictcomp"):
            yield child
        yield from _function_tables(child)


def is_device(value: ast.expr, assignments: dict) -> bool:
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str) and bool(DEVICE_STRING.match(value.value))
    if isinstance(value, ast.IfExp):
        return is_device(value.body, assignments) and is_device(value.orelse, assignments)
    if isinstance(value, ast.Call):
        func = value.func
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) == "device"
    if isinstance(value, ast.Attribute):
        return value.attr == "device"
    if isinstance(value, ast.Name):
        values = assignments.get(value.id, [])
        return bool(values) and all(v is not None and not isinstance(v, ast.Name) and is_device(v, assignments)
                                    for v in values)
    return False


def map_locations(text: str) -> tuple[Counter, dict]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return Counter(), {}
    values: Counter = Counter()
    assignments: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "map_location":
            values[ast.unparse(node.value)] += 1
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    assignments.setdefault(target.id, []).append(node.value)
                else:
                    for inner in ast.walk(target):
                        if isinstance(inner, ast.Name):
                            assignments.setdefault(inner.id, []).append(None)
        elif isinstance(node, (ast.For, ast.With, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            for inner in ast.walk(getattr(node, "target", None) or ast.Pass()):
                if isinstance(inner, ast.Name):
                    assignments.setdefault(inner.id, []).append(getattr(node, "value", None))
        elif isinstance(node, ast.arg):
            assignments.setdefault(node.arg, []).append(None)
    return values, assignments


def bad_map_locations(before: str, after: str) -> list[str]:
    old, _ = map_locations(before)
    new, assignments = map_locations(after)
    bad = []
    for text, count in (new - old).items():
        if not is_device(ast.parse(text, mode="eval").body, assignments):
            bad.extend([text] * count)
    return bad


# --- the run ------------------------------------------------------------------------------------

def snapshot(root: str) -> dict[str, str]:
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in (".git", ".devlint_cache")]
        for name in files:
            if name.endswith(SUFFIXES):
                path = os.path.join(folder, name)
                try:
                    with open(path, "rb") as handle:
                        out[os.path.relpath(path, root)] = hashlib.sha256(handle.read()).hexdigest()
                except OSError:
                    pass
    return out


def run_devlint(devlint: list[str], tree: str, target: str) -> tuple[int, str, float]:
    start = time.perf_counter()
    done = subprocess.run([*devlint, "check", "--fix", "--unsafe-fixes", "--select", "ALL", "--fail-on", "never",
                           "--no-cache", "-q", target], cwd=tree, capture_output=True, text=True, errors="replace")
    return done.returncode, done.stderr, time.perf_counter() - start


def fix_repository(devlint: list[str], source: str, target: str, scratch: str) -> dict:
    copy = os.path.join(scratch, os.path.basename(source))
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy, symlinks=True, ignore=shutil.ignore_patterns(".git", ".devlint_cache"))
    originals = {}
    before = snapshot(copy)
    for rel in before:
        with open(os.path.join(copy, rel), "rb") as handle:
            originals[rel] = handle.read()
    code, err, seconds = run_devlint(devlint, copy, target)
    after = snapshot(copy)
    changed = sorted(rel for rel in after if before.get(rel) != after[rel])
    report = {"changed": changed, "exit": code, "seconds": round(seconds, 1), "not_parsing": [],
              "unbound": [], "map_location": [], "second_run": [], "errors": []}
    if code not in (0, 1) or "internal error" in err:
        report["errors"].append(err.strip()[-500:])
    for rel in changed:
        with open(os.path.join(copy, rel), "rb") as handle:
            new = handle.read()
        old_texts, new_texts = python_texts(rel, originals.get(rel, b"")), python_texts(rel, new)
        if new_texts is None or (old_texts is not None and parses(old_texts) and not parses(new_texts)):
            report["not_parsing"].append(rel)
            continue
        if old_texts is None:
            continue
        old_text, new_text = "\n".join(old_texts), "\n".join(new_texts)
        old_unbound, new_unbound = used_before_bound(old_text), used_before_bound(new_text)
        gained = sorted({f"{scope}:{name}" for (scope, name), n in new_unbound.items()
                         if n > old_unbound[(scope, name)]})
        if gained:
            report["unbound"].append(f"{rel}: {', '.join(gained)}")
        report["map_location"].extend(f"{rel}: map_location={bad}" for bad in bad_map_locations(old_text, new_text))
    if changed:
        code2, err2, _ = run_devlint(devlint, copy, target)
        again = snapshot(copy)
        report["second_run"] = sorted(rel for rel in again if after.get(rel) != again[rel])
        if code2 not in (0, 1) or "internal error" in err2:
            report["errors"].append(err2.strip()[-500:])
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", nargs="?", default="/work/rc/survey")
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument("--repo", action="append", default=[])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--devlint", default=None)
    parser.add_argument("--scratch", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the fixed copies")
    args = parser.parse_args(argv)
    if args.devlint:
        devlint = shlex.split(args.devlint)
    else:
        devlint = ["env", f"PYTHONPATH={os.path.join(PROJECT, 'src')}", sys.executable, "-m", "devlint"]
    with open(args.corpus, encoding="utf-8") as handle:
        corpus = json.load(handle)
    entries = [e for e in corpus if not args.repo or e["repo"] in args.repo][: args.limit]
    scratch = args.scratch or tempfile.mkdtemp(prefix="devlint-fix-ecosystem-")
    totals = Counter()
    reports = {}
    for entry in entries:
        source = os.path.join(args.work, entry["repo"].replace("/", "+"))
        if not os.path.isdir(source):
            print(f"{entry['repo']}: not exported under {args.work}, skipped")
            continue
        report = fix_repository(devlint, source, entry.get("under", "."), scratch)
        reports[entry["repo"]] = report
        totals["repositories"] += 1
        for key in ("changed", "not_parsing", "unbound", "map_location", "second_run", "errors"):
            totals[key] += len(report[key])
        print(f"{entry['repo']}: {len(report['changed'])} files changed in {report['seconds']} s", flush=True)
        for key in ("not_parsing", "unbound", "map_location", "second_run", "errors"):
            for item in report[key]:
                print(f"    {key}: {item}")
        if not args.keep:
            shutil.rmtree(os.path.join(scratch, os.path.basename(source)), ignore_errors=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(reports, handle, indent=1)
    print(f"fix-ecosystem: {totals['repositories']} repositories, {totals['changed']} files changed; "
          f"not parsing {totals['not_parsing']}; names used before bound {totals['unbound']}; "
          f"map_location not a device {totals['map_location']}; changed by a second run {totals['second_run']}; "
          f"devlint errors {totals['errors']}")
    bad = sum(totals[k] for k in ("not_parsing", "unbound", "map_location", "second_run", "errors"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
