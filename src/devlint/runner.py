"""One `devlint check` run: discovered files in, ranked findings out.

discover -> read -> engine.check_text -> per-file-ignores -> suppression comments -> notebook
cell mapping -> ranking. `check_unit` is the per-file unit of work and takes and returns plain,
picklable data; `run_check` wraps it in a result cache (devlint.cache) and, for more than a few
files, in worker processes (`jobs`), and merges what comes back in file order, so the output
does not depend on either.
A file that cannot be read or decoded becomes a DEV000 finding for that file; the other files
are checked as usual. Anything else that goes wrong is a bug in devlint and propagates (the CLI
turns it into exit 3).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Sequence

from devlint.config import CheckSettings
from devlint.discover import DiscoveredFile
from devlint.findings import Evidence, Finding, Phase
from devlint.rank import rank_findings
from devlint.scope import asked_files, is_test_code, reported_in
from devlint.selection import PARSE_ERROR_CODE

UNUSED_SUPPRESSION_CODE = "DEV001"  # devlint.rules.unused_suppression, produced here
from devlint.source import SourceUnit, read_source, read_source_bytes
from devlint.suppress import apply_suppressions

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import Future
    from multiprocessing.context import BaseContext

    from devlint.cache import ResultCache

__all__ = ["CheckSettings", "RunResult", "check_unit", "check_chunk", "default_jobs", "run_check",
           "read_error_finding"]


@dataclass
class RunResult:
    files_checked: int
    findings: list[Finding]
    # the sources of files that have findings, for reporters that quote source lines
    sources: dict[str, SourceUnit] = field(default_factory=dict)

    @property
    def files_with_findings(self) -> int:
        return len({finding.path for finding in self.findings})


ProgressFn = Callable[[int, int, str, int], None]  # (index, total, display path, findings)


def read_error_finding(unit: SourceUnit) -> Finding:
    """DEV000 for a file whose bytes could not be turned into text."""
    from devlint.rules.parse_error import finding

    return finding(unit.display, f"cannot read this file ({unit.error}); nothing in it was checked",
                   unit.error_line or 1)


def _cell_parse_errors(unit: SourceUnit) -> list[Finding]:
    """DEV000 for each notebook cell that is not Python; the other cells were checked."""
    from devlint.rules.parse_error import finding

    return [finding(unit.display, f"cannot parse this cell: {message} (the other cells were checked)", line, column)
            for line, column, message in unit.cell_errors]


def _to_cells(unit: SourceUnit, finding: Finding) -> Finding:
    """Re-express a finding on a notebook's joined text in (cell, line in cell) terms."""
    start = unit.to_cell(finding.line)
    if start is None:
        return finding
    cell, line = start
    end_cell, end_line = unit.to_cell(finding.end_line) or start
    end_column = finding.end_column
    if end_cell != cell:  # a span across cells cannot be shown; keep its start
        end_line, end_column = line, finding.column
    statement_lines = finding.statement_lines
    if statement_lines is not None:
        first = unit.to_cell(statement_lines[0]) or start
        last = unit.to_cell(statement_lines[1]) or start
        statement_lines = (first[1], last[1] if last[0] == first[0] else first[1])
    return finding.with_(
        cell=cell, line=line, end_line=end_line, end_column=end_column, statement_lines=statement_lines,
        message=_LINE_MENTION.sub(lambda m: _cell_line(unit, int(m.group(1)), cell), finding.message),
        evidence=tuple(_step_to_cells(unit, step) for step in finding.evidence),
    )


def _step_to_cells(unit: SourceUnit, step: Evidence) -> Evidence:
    """An evidence step in the notebook itself, in (cell, line in cell) terms; a step in another
    file (a project module the notebook imports) stays as it is."""
    if step.path != unit.display or step.cell is not None:
        return step
    where = unit.to_cell(step.line)
    if where is None:
        return step
    cell, line = where
    message = _LINE_MENTION.sub(lambda m: _cell_line(unit, int(m.group(1)), cell), step.message)
    return replace(step, cell=cell, line=line, message=message)


# "moved at line 9" in a message counts lines of the joined cells; say where that is in the notebook
# ("line 344 of clip/model.py" is a line of another file: it stays)
_LINE_MENTION = re.compile(r"\bline (\d+)\b(?! of )")


def _cell_line(unit: SourceUnit, joined_line: int, cell: int) -> str:
    where = unit.to_cell(joined_line)
    if where is None or joined_line > len(unit.cell_map or ()):
        return f"line {joined_line}"
    return f"line {where[1]}" if where[0] == cell else f"line {where[1]} of cell {where[0]}"


def check_unit(unit: SourceUnit, settings: CheckSettings, *, depends: set[str] | None = None) -> list[Finding]:
    """Findings of one read file after rule selection, per-file-ignores and suppression comments.

    `depends`, when given, receives the real paths of the other project files the result
    depends on (what the analysis read, and where findings in other files are)."""
    if not unit.ok:
        if PARSE_ERROR_CODE not in settings.enabled:
            return []
        findings = [read_error_finding(unit)]
    else:
        assert unit.text is not None
        helpers: dict[str, Any] = {}  # the helper settings engine.check_text takes, where set
        if settings.config.move_helpers:
            helpers["move_helpers"] = frozenset(settings.config.move_helpers)
        if settings.config.device_helpers:
            helpers["device_helpers"] = frozenset(settings.config.device_helpers)
        from devlint import engine  # here: a run served by the cache never loads libcst

        findings = engine.check_text(unit.text, unit.display, enabled=settings.enabled, depends=depends,
                                     library_mode=settings.config.library_mode_for(unit.path),
                                     target_version=settings.config.target_version, **helpers)
        if unit.cell_errors and PARSE_ERROR_CODE in settings.enabled:
            findings = [f for f in findings if f.code != PARSE_ERROR_CODE] + _cell_parse_errors(unit)
    ignored = settings.config.ignored_for(unit.path)
    own = [f for f in findings if f.path == unit.display]
    own = [f for f in own if f.code in settings.enabled and f.code not in ignored]
    if not settings.config.ignore_noqa:  # --ignore-noqa: every comment is left unread
        stale = _unused_suppressions(unit, own, settings.enabled - ignored)
        own = apply_suppressions(own, unit.text) + stale
    if unit.is_notebook:
        own = [_to_cells(unit, finding) for finding in own]
    # a test's check lends no calling context to the program's functions (devlint/scope.py)
    others = [] if is_test_code(unit.display) else [f for f in findings if f.path != unit.display]
    if depends is not None:
        depends.update(os.path.realpath(f.path) for f in others)
    from devlint.fix_policy import apply_fix_policy  # fixable / unfixable, extend-(un)safe-fixes

    return apply_fix_policy(own + _other_files(unit, others, settings), settings.config)


def _unused_suppressions(unit: SourceUnit, own: list[Finding], enabled: frozenset[str]) -> list[Finding]:
    """DEV001 for each suppression comment that silences none of the file's findings."""
    if UNUSED_SUPPRESSION_CODE not in enabled or not unit.text:
        return []
    from devlint.rules.unused_suppression import finding
    from devlint.suppress import unused_suppressions

    return [finding(unit.display, u.line, u.column, u.codes) for u in unused_suppressions(own, unit.text, enabled)]


def _other_files(unit: SourceUnit, findings: list[Finding], settings: CheckSettings) -> list[Finding]:
    """Findings the check of `unit` located in other project files (`self.mask` in models.py,
    reached from train.py): they keep their own path, and that file's per-file-ignores and
    suppression comments apply to them."""
    kept: list[Finding] = []
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        # shown like the checked file: absolute if it was named so, else relative to here
        path = os.path.abspath(finding.path)
        if not os.path.isabs(unit.display):
            path = os.path.relpath(path)
        by_path.setdefault(path, []).append(finding if path == finding.path else finding.with_(path=path))
    for path, group in by_path.items():
        ignored = settings.config.ignored_for(path)
        group = [f for f in group if f.code in settings.enabled and f.code not in ignored]
        if group and settings.config.ignore_noqa:
            kept.extend(group)
        elif group:
            kept.extend(apply_suppressions(group, read_source(path, display=path).text))
    return kept


def run_check(
    files: Sequence[DiscoveredFile],
    settings: CheckSettings,
    *,
    progress: ProgressFn | None = None,
    jobs: int = 1,
    cache_root: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Check every file and rank all findings together.

    `jobs` > 1 checks files in that many worker processes (when there is enough to check);
    `cache_root` is the folder whose `.devlint_cache/` holds the result cache (None: no cache).
    Neither changes the result."""
    findings: list[Finding] = []
    sources: dict[str, SourceUnit] = {}
    # a finding in models.py is reached from each script that uses it: keep one, preferring the
    # copy from a program that tells when it crashes (models.py alone cannot; train.py can)
    seen: dict[tuple, int] = {}
    total = len(files)
    # findings only in the files the user asked to check: imported ones are read, not reported
    asked = asked_files([file.path for file in files])
    for index, (file, unit, checked) in enumerate(_checked_files(files, settings, jobs, cache_root), start=1):
        found: list[Finding] = []
        for finding in checked:
            if finding.path != unit.display and not reported_in(asked, finding.path):
                continue
            key = (os.path.abspath(finding.path), finding.cell, finding.line, finding.column, finding.code)
            if key not in seen:
                seen[key] = len(findings) + len(found)
                found.append(finding)
            elif (seen[key] < len(findings) and finding.phase is not Phase.UNKNOWN
                  and findings[seen[key]].phase is Phase.UNKNOWN):
                findings[seen[key]] = finding.with_(path=findings[seen[key]].path)
        for finding in found:
            if finding.path not in sources:
                sources[finding.path] = unit if finding.path == unit.display else read_source(finding.path)
        findings.extend(found)
        if progress is not None:
            progress(index, total, file.display, len(found))
    return RunResult(files_checked=total, findings=rank_findings(findings), sources=sources)


# --- cache and worker processes -----------------------------------------------------------------

# below this much source to check, starting worker processes costs more than it saves
PARALLEL_MIN_FILES = 4
PARALLEL_MIN_BYTES = 48_000
# chunks per worker: enough to even out unequal files, few enough that the files of one folder
# (a script and the models it imports) mostly land in the same worker and are parsed once there
CHUNKS_PER_WORKER = 4


def default_jobs() -> int:
    """The CPUs this process may run on (a container's or taskset's limit, not the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class _Collector:
    """Python's cyclic garbage collector, switched off while files are checked.

    A check allocates millions of objects that never form cycles (a libcst tree, abstract
    values, frames); they die by reference counting, and each automatic collection walks them
    for nothing: with the collector on, a fifth of a run on timm went to collections that freed
    almost nothing (a few thousand objects a file). So the automatic collector is off for the
    whole run; between two files one collection frees what the last check left in cycles, and
    `gc.freeze()` moves the survivors (the parses worth keeping for the files that import them)
    out of later collections' sight; a fresh parse is frozen at once (devlint/parsing.py: a tree
    has no cycles, so none of it is lost to the collector).

    Everything is restored on exit, for callers that use devlint as a library, except in a
    worker process (`restore=False`), which exists only to check files: there the collector
    stays off and the survivors frozen from one chunk to the next, instead of a full collection
    of everything the worker holds at the start of each chunk. Before worker processes are
    forked, the parent freezes what it holds, so that a worker's collections never touch the
    objects it inherited (which would copy their memory pages: Python's gc.freeze advice)."""

    def __init__(self, restore: bool = True) -> None:
        self._restore = restore

    def __enter__(self) -> "_Collector":
        import gc

        self._gc = gc
        self._was_enabled = gc.isenabled()
        gc.disable()
        return self

    def next_file(self) -> None:
        self._gc.collect()
        self._gc.freeze()

    def __exit__(self, *exc: object) -> None:
        if not self._restore:
            return
        self._gc.unfreeze()
        if self._was_enabled:
            self._gc.enable()


def _read(file: DiscoveredFile, hashing: bool) -> tuple[SourceUnit, str | None]:
    """The file's SourceUnit and the digest of the bytes it was decoded from (None: not hashed,
    or nothing was read)."""
    unit, data = read_source_bytes(file.path, display=file.display)
    if not hashing or data is None:
        return unit, None
    from devlint.cache import digest

    return unit, digest(data)


def check_chunk(items: list[tuple[int, SourceUnit]], settings: CheckSettings
                ) -> list[tuple[int, list[Finding], list[str]]]:
    """A worker process's share: (index, findings, files the result depends on) per file.

    A module-level function of plain data in and out, so it works with every start method
    (fork, forkserver, spawn)."""
    out = []
    with _Collector(restore=False) as collector:
        for index, unit in items:
            collector.next_file()
            depends: set[str] = set()
            found = check_unit(unit, settings, depends=depends)
            out.append((index, found, sorted(depends)))
    return out


def _chunks(todo: list[int], units: list[SourceUnit], workers: int) -> list[list[int]]:
    """Consecutive runs of the files to check (discovery sorts them, so a folder stays together),
    of about equal size."""
    sizes = [len(units[i].text or "") + 2_000 for i in todo]  # + the fixed cost of a file
    target = max(sum(sizes) / (workers * CHUNKS_PER_WORKER), 1.0)
    chunks: list[list[int]] = []
    current: list[int] = []
    size = 0
    for index, cost in zip(todo, sizes):
        current.append(index)
        size += cost
        if size >= target:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    return chunks


def _pool_context() -> BaseContext:
    """fork where it is safe (Linux, no other thread yet: workers start with devlint loaded),
    else spawn; check_chunk works with either."""
    import multiprocessing
    import sys
    import threading

    if sys.platform.startswith("linux") and threading.active_count() == 1 \
            and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _checked_files(
    files: Sequence[DiscoveredFile], settings: CheckSettings, jobs: int, cache_root: str | os.PathLike[str] | None,
) -> Iterator[tuple[DiscoveredFile, SourceUnit, list[Finding]]]:
    """(file, unit, findings) for every file, in the order of `files`: from the cache, this
    process, or worker processes."""
    cache: ResultCache | None = None
    if cache_root is not None:
        from devlint.cache import ResultCache

        cache = ResultCache(cache_root, settings)
    hashing = cache is not None

    def store(unit: SourceUnit, content: str | None, found: list[Finding], depends: Iterable[str]) -> None:
        if cache is not None and content is not None:
            cache.put(unit.path, unit.display, content, found, depends)

    if jobs <= 1:  # stream: read, look up, check, one file at a time
        with _Collector() as collector:
            for file in files:
                unit, content = _read(file, hashing)
                hit = cache.get(unit.path, unit.display, content) if cache is not None and content else None
                if hit is None:
                    collector.next_file()
                    depends: set[str] = set()
                    hit = check_unit(unit, settings, depends=depends)
                    store(unit, content, hit, depends)
                yield file, unit, hit
        return

    units: list[SourceUnit] = []
    contents: list[str | None] = []
    done: dict[int, list[Finding]] = {}
    for index, file in enumerate(files):
        unit, content = _read(file, hashing)
        units.append(unit)
        contents.append(content)
        if cache is not None and content is not None:
            hit = cache.get(unit.path, unit.display, content)
            if hit is not None:
                done[index] = hit
    todo = [i for i in range(len(files)) if i not in done]
    size = sum(len(units[i].text or "") for i in todo)
    if len(todo) < PARALLEL_MIN_FILES or size < PARALLEL_MIN_BYTES:
        with _Collector() as collector:
            for index, file in enumerate(files):
                if index not in done:
                    collector.next_file()
                    depends = set()
                    done[index] = check_unit(units[index], settings, depends=depends)
                    store(units[index], contents[index], done[index], depends)
                yield file, units[index], done.pop(index)
        return

    chunks = _chunks(todo, units, jobs)
    chunk_of = {index: number for number, chunk in enumerate(chunks) for index in chunk}
    with _Collector() as collector:
        collector.next_file()  # freeze what the workers inherit (see _Collector)
        yield from _from_workers(files, units, contents, done, chunks, chunk_of, settings, jobs, store)


def _from_workers(files: Sequence[DiscoveredFile], units: list[SourceUnit], contents: list[str | None],
                  done: dict[int, list[Finding]], chunks: list[list[int]], chunk_of: dict[int, int],
                  settings: CheckSettings, jobs: int, store: Callable[[SourceUnit, str | None, list[Finding], Iterable[str]], None],
                  ) -> Iterator[tuple[DiscoveredFile, SourceUnit, list[Finding]]]:
    """_checked_files' results, in order, from worker processes that check the chunks."""
    from concurrent.futures import ProcessPoolExecutor

    from devlint.interrupts import in_worker, stop_workers

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=_pool_context(), initializer=in_worker)
    try:
        # the largest chunks first: a big file started last would keep one worker busy alone
        by_size = sorted(range(len(chunks)), key=lambda n: -sum(len(units[i].text or "") for i in chunks[n]))
        futures: list = [None] * len(chunks)
        for number in by_size:
            futures[number] = pool.submit(check_chunk, [(i, units[i]) for i in chunks[number]], settings)
        collected: set[int] = set()
        for index, file in enumerate(files):
            chunk = chunk_of.get(index)
            if chunk is not None and chunk not in collected:
                collected.add(chunk)
                for i, found, depends_list in _chunk_result(futures[chunk], chunks[chunk], units, settings):
                    done[i] = found
                    store(units[i], contents[i], found, depends_list)
                futures[chunk] = None  # let its result go
            yield file, units[index], done.pop(index)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        stop_workers(pool)  # an interrupt: the chunks they are checking are not wanted any more
        raise
    pool.shutdown(wait=True)


def _chunk_result(future: "Future[list[tuple[int, list[Finding], list[str]]]]", chunk: list[int],
                  units: list[SourceUnit], settings: CheckSettings) -> list[tuple[int, list[Finding], list[str]]]:
    """A chunk's results; when a worker process died (a crash in native code, such as a parser's
    stack overflow), every file of the chunk is checked again alone in a process of its own, so
    that the one that kills it is named (DEV000) and the rest of the run is not lost."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return future.result()
    except BrokenProcessPool:
        return [_alone(index, units[index], settings) for index in chunk]


def _alone(index: int, unit: SourceUnit, settings: CheckSettings) -> tuple[int, list[Finding], list[str]]:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from devlint.interrupts import in_worker

    with ProcessPoolExecutor(max_workers=1, mp_context=_pool_context(), initializer=in_worker) as pool:
        try:
            return pool.submit(check_chunk, [(index, unit)], settings).result()[0]
        except BrokenProcessPool:
            from devlint.rules.parse_error import finding

            crashed = finding(unit.display, "cannot check this file: the process checking it crashed (a bug in "
                                            "devlint or its parser: please report it with this file); nothing in "
                                            "it was checked")
            return index, [crashed] if PARSE_ERROR_CODE in settings.enabled else [], []


def check_source(unit: SourceUnit, settings: CheckSettings) -> RunResult:
    """Check one already-read source (standard input); same result shape as run_check."""
    found = [f for f in check_unit(unit, settings) if f.path == unit.display]  # the one file asked
    sources = {f.path: unit for f in found}
    return RunResult(
        files_checked=1,
        findings=rank_findings(found),
        sources=sources,
    )
