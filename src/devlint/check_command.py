"""What `devlint check` does once its options are parsed (devlint.cli declares them).

Files are discovered, grouped by their nearest configuration (devlint.config_tree), checked
group by group, fixed when asked, and the merged result is reported once: the exit code of
each finding follows its own file's `fail-on`, so the order of the paths changes nothing.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import Any, Callable, TextIO

import click

from devlint.errors import UsageProblem

__all__ = ["CheckOptions", "run_check_command"]

EXIT_OK = 0
EXIT_FINDINGS = 1
STDIN_PATH = "-"


@dataclass
class CheckOptions:
    paths: tuple[str, ...] = ()
    format_name: str = "text"
    output_file: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    fail_on: str | None = None
    exit_zero: bool = False
    config_items: tuple[str, ...] = ()  # --config FILE and --config KEY=VALUE, as given
    config_file: str | None = None
    isolated: bool = False
    ignore_noqa: bool = False
    show_settings: bool = False
    show_files: bool = False
    add_noqa: bool = False
    watch: bool = False
    fix: bool = False
    fix_only: bool = False
    diff: bool = False
    unsafe_fixes: bool = False
    show_fixes: bool = False
    statistics: bool = False
    exit_non_zero_on_fix: bool = False
    stdin_filename: str | None = None
    jobs: int | None = None
    no_cache: bool = False
    quiet: bool = False
    verbose: bool = False
    baseline_file: str | None = None
    write_baseline_file: str | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    color: str = "auto"


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def _tree(options: CheckOptions) -> Any:
    from devlint.config import ConfigError
    from devlint.config_tree import ConfigTree
    from devlint.selection import Layer, SelectionError, parse_codes, resolve

    if options.select and not parse_codes(options.select):
        raise UsageProblem("--select names no rule (an empty --select would check nothing); "
                           "use --select ALL, a prefix such as DEV1, or leave it out")
    from devlint.config import parse_overrides

    try:
        cli_layer = Layer(
            select=parse_codes(options.select) if options.select else None,
            extend_select=parse_codes(options.extend_select),
            ignore=parse_codes(options.ignore),
            origin="--{key}",
        )
        resolve([cli_layer])  # names an unknown code at once, whatever the files
        config_file, overrides = _config_items(options)
        if config_file is not None and options.isolated:
            raise UsageProblem("--isolated reads no configuration file: do not also name one with --config")
        return ConfigTree(cli_layer, config_file=config_file,
                          exclude=_split(options.exclude) if options.exclude is not None else None,
                          extend_exclude=_split(options.extend_exclude), overrides=parse_overrides(overrides),
                          isolated=options.isolated, ignore_noqa=options.ignore_noqa)
    except (ConfigError, SelectionError) as exc:
        raise UsageProblem(str(exc)) from None


def _add_noqa(result: Any, quiet: bool) -> int:
    from devlint.add_noqa import add_noqa

    added = add_noqa(result.findings, result.sources)
    for refused in added.refused:
        click.echo(refused, err=True)
    if not quiet:
        click.echo(f"Added {added.added} noqa directive{'s' if added.added != 1 else ''} in "
                   f"{added.files} file{'s' if added.files != 1 else ''}.", err=True)
    return EXIT_OK


def _config_items(options: CheckOptions) -> tuple[str | None, list[str]]:
    """--config FILE (at most one) and the KEY=VALUE overrides: a value that names an existing
    file is the file, one holding `=` an override (as Ruff tells them apart)."""
    config_file = options.config_file
    overrides = []
    for item in options.config_items:
        if os.path.isfile(item):
            if config_file is not None:
                raise UsageProblem(f"--config names two files ({config_file}, {item}); give one, and override "
                                   "single settings with --config KEY=VALUE")
            config_file = item
        elif "=" in item:
            overrides.append(item)
        elif os.path.isdir(item):
            raise UsageProblem(f"--config {item}: a folder; name its pyproject.toml or devlint.toml")
        else:
            raise UsageProblem(f"--config {item}: no such file, and not a KEY = VALUE setting")
    return config_file, overrides


def _check_statistics_format(options: CheckOptions) -> None:
    """`--statistics` with a format made for another tool (SARIF, annotations, ...) is refused
    before anything is checked: writing the findings would ignore --statistics, writing a table
    would break the tool that reads the file."""
    from devlint.report import STATISTICS_FORMATS

    if options.statistics and options.format_name not in STATISTICS_FORMATS:
        raise click.UsageError(f"--statistics does not combine with --output-format {options.format_name}: it "
                               f"writes a table ({', '.join(STATISTICS_FORMATS[:-1])}) or a JSON list (json)")


def _threshold(options: CheckOptions, settings: Any) -> str:
    return (options.fail_on or settings.config.fail_on or "warning").lower()


def run_check_command(options: CheckOptions, progress_for: Callable[[bool, bool], Any]) -> int:
    """The whole `check` command; returns the exit code. `progress_for(verbose, quiet)` makes
    the progress callback (the command line owns the terminal)."""
    from devlint.config import ConfigError

    if options.quiet and options.verbose:
        raise click.UsageError("-q and -v cannot be used together")
    stdin = options.stdin_filename is not None or options.paths == (STDIN_PATH,)
    if stdin and options.paths not in ((), (STDIN_PATH,)):
        raise click.UsageError("--stdin-filename reads standard input; do not also give PATHS")
    if STDIN_PATH in options.paths and not stdin:
        raise click.UsageError("`-` (standard input) cannot be mixed with other PATHS")
    if options.fix_only:
        options.fix = True
    _check_statistics_format(options)
    if options.watch:
        if options.fix or options.diff or stdin or options.add_noqa or options.write_baseline_file is not None:
            raise click.UsageError("--watch checks and reports again on each change: it does not combine with "
                                   "--fix, --diff, --add-noqa, --write-baseline or standard input")
        from devlint.watch import watch

        once = replace(options, watch=False)
        return watch(lambda: run_check_command(once, progress_for), list(options.paths))
    if options.add_noqa and (options.fix or options.diff or stdin or options.write_baseline_file is not None):
        raise click.UsageError("--add-noqa writes comments into the checked files: it does not combine with "
                               "--fix, --diff, --write-baseline or standard input")
    tree = _tree(options)
    baseline = _read_baseline(options.baseline_file, options.write_baseline_file)
    try:
        from devlint.docs import set_rule_url_base

        set_rule_url_base(tree.project_config().rule_url_base)
        if options.show_files or options.show_settings:
            from devlint.show import show_files, show_settings

            if options.show_files and options.show_settings:
                raise click.UsageError("--show-files and --show-settings cannot be used together")
            if stdin:
                raise click.UsageError("--show-files and --show-settings read no standard input")
            targets = list(options.paths) or ["."]
            files, _ = _discover(options, tree, targets)
            return show_files(files) if options.show_files else show_settings(tree, files, targets)
        if stdin:
            return _check_stdin(options, tree)
        outcome = _check_files(options, tree, progress_for)
    except ConfigError as exc:
        raise UsageProblem(str(exc)) from None
    if outcome is None or isinstance(outcome, int):
        return outcome or EXIT_OK
    result, thresholds, fixed, checked = outcome
    if options.write_baseline_file is not None:
        return _write_baseline(options.write_baseline_file, result, options.quiet, checked)
    known = 0
    if baseline is not None:
        from devlint.baseline import apply_baseline

        before = len(result.findings)
        result = apply_baseline(result, baseline)
        known = before - len(result.findings)
    if options.add_noqa:
        return _add_noqa(result, options.quiet)
    if options.fix_only:
        if not options.quiet and not fixed:
            click.echo("No fixes applied.", err=True)
        return EXIT_FINDINGS if options.exit_non_zero_on_fix and fixed else EXIT_OK
    _report(options, result)
    if not options.quiet and known:
        click.echo(f"{known} finding{'s' if known != 1 else ''} recorded in {options.baseline_file} not shown.",
                   err=True)
    code = _exit_code(result.findings, thresholds, options.exit_zero)
    if options.exit_non_zero_on_fix and fixed:
        return EXIT_FINDINGS
    return code


def _report(options: CheckOptions, result: Any) -> None:
    from devlint.report import ReportOptions, render, render_statistics, summary_line

    report_options = ReportOptions(color=options.color, unsafe_fixes=options.unsafe_fixes,
                                   to_terminal=options.output_file is None, quiet=options.quiet)

    def write(stream: TextIO) -> None:
        if options.statistics:
            render_statistics(options.format_name, result, stream, report_options)
        else:
            render(options.format_name, result, stream, report_options)

    if options.output_file is not None:
        try:
            folder = os.path.dirname(options.output_file)
            if folder:  # as Ruff: `-o reports/devlint.sarif` makes reports/
                os.makedirs(folder, exist_ok=True)
            with open(options.output_file, "w", encoding="utf-8", newline="") as handle:
                write(handle)
        except OSError as exc:
            raise UsageProblem(f"cannot write {options.output_file}: {exc.strerror or exc}") from None
    else:
        write(sys.stdout)
        sys.stdout.flush()
    if not options.quiet:
        click.echo(summary_line(result, unsafe_fixes=options.unsafe_fixes), err=True)


def _check_stdin(options: CheckOptions, tree: Any) -> int:
    from devlint.runner import check_source
    from devlint.source import NOTEBOOK_SUFFIX, decode_notebook, decode_source

    name = options.stdin_filename or STDIN_PATH
    abs_name = os.path.abspath(name)
    if options.force_exclude and options.stdin_filename is not None and tree.named_excluded(abs_name):
        if options.fix and not options.diff:
            sys.stdout.write(_read_stdin().decode("utf-8", "surrogateescape"))  # an editor reads it back
        return EXIT_OK
    settings = tree.settings_for(abs_name)
    data = _read_stdin()
    unit = decode_notebook(data, name, abs_name) if name.endswith(NOTEBOOK_SUFFIX) \
        else decode_source(data, name, abs_name)
    result = check_source(unit, settings)
    threshold = _threshold(options, settings)
    if (options.fix or options.diff) and unit.ok and not unit.is_notebook and not unit.lossy:
        from devlint.fix.run import fix_unit

        own = [f for f in result.findings if f.path == unit.display]
        fixed = fix_unit(unit, own, settings, unsafe=options.unsafe_fixes)
        if fixed.refused:
            click.echo(f"{unit.display}: {fixed.refused}", err=True)
        if options.diff:
            from devlint.fix.apply import unified_diff

            sys.stdout.write(unified_diff(fixed))
            return EXIT_FINDINGS if fixed.changed else EXIT_OK
        sys.stdout.write(fixed.fixed)  # an editor reads the fixed source back
        if options.exit_non_zero_on_fix and fixed.changed:
            return EXIT_FINDINGS
        if options.fix_only:
            return EXIT_OK
        remaining = check_source(replace(unit, text=fixed.fixed), settings)
        if not options.quiet:  # standard output holds the source: what is left goes to stderr, as Ruff
            from devlint.report import render

            render("concise", remaining, sys.stderr)
            click.echo(f"{len(remaining.findings)} finding{'s' if len(remaining.findings) != 1 else ''} left "
                       f"after {len(fixed.applied)} fix{'es' if len(fixed.applied) != 1 else ''}.", err=True)
        return _exit_code(remaining.findings, {}, options.exit_zero, threshold)
    _report(options, result)
    return _exit_code(result.findings, {}, options.exit_zero, threshold)


def _read_stdin() -> bytes:
    """Standard input, up to one byte past the largest notebook devlint reads (`cat /dev/zero |
    devlint check -` once read until memory ran out; what is too large is reported as such)."""
    from devlint.source import MAX_NOTEBOOK_BYTES

    stream = sys.stdin
    if hasattr(stream, "buffer"):
        return stream.buffer.read(MAX_NOTEBOOK_BYTES + 1)
    return stream.read(MAX_NOTEBOOK_BYTES + 1).encode("utf-8")


def _discover(options: CheckOptions, tree: Any, targets: list[str]) -> tuple[list, list]:
    """The files to check under `targets`, and DEV000 for each folder that could not be listed.
    `respect-gitignore` and `force-exclude` come from the run's own configuration."""
    from devlint.discover import PathNotFoundError, discover

    for target in targets:  # a broken configuration is an error even where no file is found
        if os.path.exists(target):
            tree.settings_for(target)
    project = tree.project_config()
    force_exclude = options.force_exclude or bool(project.force_exclude)
    unreadable: list = []
    try:
        files = discover(targets, is_excluded=tree.excluded,
                         force_exclude=tree.named_excluded if force_exclude else None,
                         respect_gitignore=project.respect_gitignore is not False,
                         unreadable=lambda folder, why: unreadable.append(_folder_finding(folder, why)))
    except PathNotFoundError as exc:
        raise UsageProblem(f"path not found: {exc}") from None
    return files, unreadable


def _check_files(options: CheckOptions, tree: Any, progress_for: Callable[[bool, bool], Any]) -> Any:
    from devlint.rank import rank_findings
    from devlint.runner import RunResult

    targets = list(options.paths) or ["."]
    files, unreadable = _discover(options, tree, targets)
    groups = tree.groups(files)
    progress = progress_for(options.verbose, options.quiet)
    total = len(files)
    findings: list = [f for f in unreadable if f.code in tree.settings_for(f.path).enabled]
    sources: dict = {}
    thresholds: dict = {}
    fixed_any = False
    done = 0
    diffs = [0, 0]  # --diff: fixes available, files they change, over every group
    try:
        for group in groups:
            offset = done

            def step(index: int, _total: int, display: str, count: int, _offset: int = offset) -> None:
                progress(index + _offset, total, display, count)

            outcome = _check_group(options, group, targets, step if progress is not None else None)
            done += len(group.files)
            if isinstance(outcome[0], int):
                diffs = [diffs[0] + outcome[0], diffs[1] + outcome[1]]
                continue
            result, fixed = outcome
            fixed_any = fixed_any or fixed
            threshold = _threshold(options, group.settings)
            kept = _not_excluded(result.findings, {f.display for f in group.files}, tree)
            for finding in kept:
                thresholds[_key(finding)] = threshold
            findings.extend(kept)
            sources.update(result.sources)
    finally:
        close = getattr(progress, "close", None)
        if close is not None:
            close()
    if options.diff:
        count, changed = diffs
        if not options.quiet:
            click.echo(f"{count} fix{'es' if count != 1 else ''} available in "
                       f"{changed} file{'s' if changed != 1 else ''}.", err=True)
        return EXIT_FINDINGS if changed else EXIT_OK
    result = RunResult(files_checked=total, findings=rank_findings(findings), sources=sources)
    return result, thresholds, fixed_any, [file.path for file in files]


def _not_excluded(findings: list, checked: set[str], tree: Any) -> list:
    """The findings without those in an excluded file that another checked file imports: an
    excluded file is neither reported nor fixed (devlint.fix.run writes only checked files)."""
    excluded: dict[str, bool] = {}
    kept = []
    for finding in findings:
        path = finding.path
        if path not in checked and path not in excluded:
            full = os.path.abspath(path)
            excluded[path] = os.path.isfile(full) and tree.excluded(full, False)
        if not excluded.get(path, False):
            kept.append(finding)
    return kept


def _folder_finding(folder: str, why: str) -> Any:
    """DEV000 for a folder the walk could not list: nothing in it was checked."""
    from devlint.rules.parse_error import finding

    return finding(folder, f"cannot read this folder ({why}); nothing in it was checked", 1)


def _key(finding: Any) -> tuple:
    return (finding.path, finding.cell, finding.line, finding.column, finding.code)


def _check_group(options: CheckOptions, group: Any, targets: list[str], progress: Any) -> Any:
    """(result, whether a fix was written) for one group; with --diff, the diffs are printed
    and (fixes available, files they change) returned."""
    from devlint.runner import default_jobs, run_check

    run_options: dict[str, Any] = {
        "jobs": options.jobs or default_jobs(),
        "cache_root": None if options.no_cache else _cache_root(group.settings.config, targets),
    }
    files = list(group.files)
    result = run_check(files, group.settings, progress=progress, **run_options)
    if not (options.fix or options.diff):
        if options.show_fixes:  # asked for by name: -q drops the summary, not this list
            _show_available(result, options.unsafe_fixes)
        return result, False
    from devlint.fix.apply import remove_stale_temp_files, unified_diff
    from devlint.fix.run import fix_files

    write = options.fix and not options.diff
    if write:  # what an earlier, killed `--fix` run left beside the files
        remove_stale_temp_files(os.path.dirname(os.path.abspath(f.path)) for f in files)
    # only the files this run names or discovers (not excluded) are written
    fixes = fix_files(result, group.settings, unsafe=options.unsafe_fixes, write=write,
                      paths={f.display for f in files})
    for refused in fixes.refused:
        click.echo(f"{refused.path}: {refused.refused}", err=True)
    count = sum(len(c.applied) for c in fixes.changed)
    files_changed = len(fixes.changed)
    if options.diff:
        for changed in fixes.changed:
            sys.stdout.write(_notebook_aware_diff(changed, result, unified_diff))
        return count, files_changed
    if not options.quiet and fixes.changed:
        click.echo(f"Fixed {count} finding{'s' if count != 1 else ''} in "
                   f"{files_changed} file{'s' if files_changed != 1 else ''}.", err=True)
    if options.show_fixes and fixes.changed:  # asked for by name: -q drops the summary, not this list
        _show_applied(fixes.changed)
    if fixes.changed:
        result = run_check(files, group.settings, **run_options)
    return result, bool(fixes.changed)


def _cache_root(config: Any, targets: list[str]) -> Any:
    """Where the result cache lives: DEVLINT_CACHE_DIR, else the `cache-dir` setting (each the
    cache folder itself, as Ruff's), else `.devlint_cache/` in the project's root folder."""
    from devlint.cache import CacheDir, default_cache_root

    chosen = os.environ.get("DEVLINT_CACHE_DIR") or config.cache_dir
    if chosen:
        return CacheDir(os.path.abspath(os.path.expanduser(str(chosen))))
    return default_cache_root(config, targets)


def _notebook_aware_diff(changed: Any, result: Any, unified_diff: Callable[[Any], str]) -> str:
    unit = result.sources.get(changed.path)
    if unit is not None and unit.is_notebook:
        from devlint.fix.notebook_diff import notebook_diff

        return notebook_diff(unit, changed)
    return unified_diff(changed)


def _show_applied(changed: list) -> None:
    from collections import Counter

    for fix in changed:
        click.echo(f"{fix.path}:", err=True)
        for (code, name), count in sorted(Counter((f.code, f.name) for f in fix.applied).items()):
            click.echo(f"    {count} \u00d7 {code} ({name})", err=True)


def _show_available(result: Any, unsafe: bool) -> None:
    from devlint.fix.apply import wanted

    fixable = [f for f in result.findings if wanted(f, unsafe)]
    if fixable:
        click.echo("Fixes available (`--fix` applies them):", err=True)
        for finding in fixable:
            click.echo(f"    {finding.path}:{finding.line}:{finding.column}: {finding.code} "
                       f"{finding.fix.description}", err=True)


def _exit_code(findings: list, thresholds: dict, exit_zero: bool, default: str = "warning") -> int:
    if exit_zero:
        return EXIT_OK
    from devlint.findings import Severity

    for finding in findings:
        threshold = thresholds.get(_key(finding), default)
        if threshold != "never" and finding.severity.at_least(Severity(threshold)):
            return EXIT_FINDINGS
    return EXIT_OK


def _read_baseline(baseline_file: str | None, write_baseline_file: str | None) -> Any:
    """The baseline to compare against (None without --baseline); a bad file is a usage error."""
    if baseline_file is not None and write_baseline_file is not None:
        raise click.UsageError("--baseline and --write-baseline cannot be used together")
    if baseline_file is None:
        return None
    from devlint.baseline import BaselineError, load_baseline

    try:
        return load_baseline(baseline_file)
    except BaselineError as exc:
        raise UsageProblem(str(exc)) from None


def _write_baseline(file: str, result: Any, quiet: bool, checked: list[str]) -> int:
    from devlint.baseline import BaselineError, write_baseline

    try:
        count, kept = write_baseline(file, result, checked)
    except BaselineError as exc:
        raise UsageProblem(str(exc)) from None
    if not quiet:
        others = f" (and kept {kept} recorded for files not checked now)" if kept else ""
        click.echo(
            f"Recorded {count} finding{'s' if count != 1 else ''} in {file}{others}; "
            f"`devlint check --baseline {file}` reports only new ones.",
            err=True,
        )
    return EXIT_OK
