"""The `devlint` command line: check, rules, explain (and the optional `run`).

Scripts and CI jobs depend on this surface (docs: cli.md), so exit codes are exact:
0 nothing at or above --fail-on, 1 findings at or above it, 2 usage or configuration error,
3 a bug in devlint. Everything heavy is imported inside the command that needs it:
`import devlint.cli` imports neither rich nor torch, and `devlint run` (which executes a
script under a simulated GPU and needs torch) is loaded only when it is invoked.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import replace
import sys
from typing import Any, Sequence

import click

from devlint import __version__

__all__ = ["cli", "main"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

FORMAT_CHOICES = ("text", "concise", "json", "sarif", "github")
FAIL_ON_CHOICES = ("error", "warning", "info", "never")
SIMULATE_MODULE = "devlint.simulate.cli"
RUN_HELP = "Run a script as if a GPU were present, to hit its device crashes (needs torch)."

_state: dict[str, bool] = {"verbose": False}


class UsageProblem(Exception):
    """A usage or configuration error found by devlint itself (exit 2)."""


class DevlintGroup(click.Group):
    """The top-level group: maps every outcome to the documented exit codes, loads `run` lazily."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), "run"})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "run" and "run" not in self.commands:
            return _load_run_command()
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # listing commands must not import `run` (and with it torch): its help line is static
        rows = []
        for name in self.list_commands(ctx):
            if name == "run" and "run" not in self.commands:
                rows.append((name, RUN_HELP))
                continue
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        code = self._run(argv, prog_name, complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, argv: list[str], prog_name: str | None, complete_var: str | None, **extra: Any) -> int:
        _state["verbose"] = any(arg in ("-v", "--verbose") for arg in argv)
        try:
            result = super().main(
                args=argv, prog_name=prog_name or "devlint", complete_var=complete_var, standalone_mode=False, **extra
            )
        except click.ClickException as exc:  # bad option, bad value, missing argument
            exc.show()
            return EXIT_USAGE
        except click.Abort:
            click.echo("Aborted.", err=True)
            return 130
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            return 130
        except UsageProblem as exc:
            click.echo(f"devlint: error: {exc}", err=True)
            return EXIT_USAGE
        except BrokenPipeError:
            # the reader went away (`devlint check | head`): not a devlint bug
            _silence_stdout()
            return EXIT_FINDINGS
        except Exception as exc:  # noqa: BLE001 - every other exception is a devlint bug
            _report_internal_error(exc)
            return EXIT_INTERNAL
        if isinstance(result, int):
            return result
        return EXIT_OK


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def _report_internal_error(exc: BaseException) -> None:
    click.echo(
        f"devlint: internal error: {type(exc).__name__}: {exc}\n"
        "This is a bug in devlint, not a problem in your code. Please report it to the devlint "
        "maintainers with the command you ran"
        + (" and the traceback below." if _state["verbose"] else " (run again with -v to include the traceback)."),
        err=True,
    )
    if _state["verbose"]:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)


def _load_run_command() -> click.Command:
    """`devlint run` from devlint.simulate, imported only now; a stub that explains when missing."""
    try:
        module = importlib.import_module(SIMULATE_MODULE)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing in ("devlint.simulate", SIMULATE_MODULE):
            return _unavailable_run(
                f"`devlint run` is not available in this installation ({SIMULATE_MODULE} is missing)."
            )
        if missing == "torch" or missing.startswith("torch."):
            return _unavailable_run(
                "`devlint run` executes your script with PyTorch, which is not installed here: "
                "install it (`pip install torch`) and try again. `devlint check` does not need it."
            )
        raise
    command = getattr(module, "run_command", None)
    if not isinstance(command, click.Command):
        return _unavailable_run(f"`devlint run` is not available: {SIMULATE_MODULE} has no `run_command`.")
    return command


def _unavailable_run(message: str) -> click.Command:
    def callback(args: tuple[str, ...]) -> int:
        click.echo(f"devlint: error: {message}", err=True)
        return EXIT_USAGE

    return click.Command(
        "run",
        callback=callback,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        add_help_option=False,
        help=RUN_HELP,
    )


@click.group(cls=DevlintGroup, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="devlint", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context) -> int:
    """devlint: find PyTorch device-placement bugs ("Expected all tensors to be on the same
    device") before the run, without importing torch or your code."""
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())
    return EXIT_OK


@cli.command("check")
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@click.option(
    "--format",
    "format_name",
    type=click.Choice(FORMAT_CHOICES),
    default="text",
    show_default=True,
    help="text: ranked report with source excerpts; concise: one line per finding; json: machine-readable; "
    "sarif: SARIF 2.1.0 for code scanning; github: GitHub Actions annotations.",
)
@click.option("--select", multiple=True, metavar="CODES", help="Run only these codes or prefixes (DEV1, DEV101, ALL).")
@click.option("--ignore", multiple=True, metavar="CODES", help="Do not run these codes or prefixes.")
@click.option("--extend-select", multiple=True, metavar="CODES", help="Run these codes in addition to the selection.")
@click.option(
    "--fail-on",
    type=click.Choice(FAIL_ON_CHOICES, case_sensitive=False),
    default=None,
    help="Exit 1 when a finding is at or above this severity  [default: warning].",
)
@click.option("--exit-zero", is_flag=True, help="Report findings but exit 0 (usage and internal errors still exit 2/3).")
@click.option(
    "--config",
    "config_file",
    type=click.Path(exists=True, dir_okay=False, path_type=str),
    help="Read settings from this file instead of the nearest pyproject.toml / devlint.toml.",
)
@click.option("--fix", is_flag=True, help="Apply the safe automatic fixes in place.")
@click.option("--diff", is_flag=True, help="Print the automatic fixes as a unified diff and change nothing.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (or show) fixes that change what the program does.")
@click.option("--stdin-filename", metavar="NAME", help="Read the source from standard input and report it as NAME.")
@click.option(
    "-j",
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: the number of CPUs; 1 checks everything in this process).",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache (.devlint_cache/).")
@click.option(
    "--baseline",
    "baseline_file",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=str),
    help="Report only findings not recorded in FILE (written by --write-baseline).",
)
@click.option(
    "--write-baseline",
    "write_baseline_file",
    metavar="FILE",
    type=click.Path(dir_okay=False, path_type=str),
    help="Record today's findings in FILE and exit 0; later runs with --baseline FILE report only new ones.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary line.")
@click.option("-v", "--verbose", is_flag=True, help="Print each checked file to stderr; tracebacks on internal errors.")
def check_command(
    paths: tuple[str, ...],
    format_name: str,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    extend_select: tuple[str, ...],
    fail_on: str | None,
    exit_zero: bool,
    config_file: str | None,
    fix: bool,
    diff: bool,
    unsafe_fixes: bool,
    stdin_filename: str | None,
    jobs: int | None,
    no_cache: bool,
    quiet: bool,
    verbose: bool,
    baseline_file: str | None = None,
    write_baseline_file: str | None = None,
) -> int:
    """Check files, folders and notebooks for device bugs.

    PATHS default to the current folder. Folders are searched for *.py and *.ipynb files,
    honouring .gitignore and the `exclude` setting.
    """
    from devlint.config import ConfigError, load_config
    from devlint.discover import PathNotFoundError, discover
    from devlint.report import render, summary_line
    from devlint.runner import CheckSettings, check_source, run_check
    from devlint.selection import Layer, SelectionError, parse_codes, resolve
    from devlint.source import NOTEBOOK_SUFFIX, decode_notebook, decode_source

    _state["verbose"] = verbose
    if quiet and verbose:
        raise click.UsageError("-q and -v cannot be used together")
    if stdin_filename is not None and paths:
        raise click.UsageError("--stdin-filename reads standard input; do not also give PATHS")
    targets = list(paths) or ["."]

    start = os.path.dirname(os.path.abspath(stdin_filename)) if stdin_filename else targets[0]
    try:
        config = load_config(config_file, start=start)
        cli_layer = Layer(
            select=parse_codes(select) if select else None,
            extend_select=parse_codes(extend_select),
            ignore=parse_codes(ignore),
            origin="--{key}",
        )
        enabled = resolve([config.layer(), cli_layer])
    except (ConfigError, SelectionError) as exc:
        raise UsageProblem(str(exc)) from None
    threshold = (fail_on or config.fail_on or "warning").lower()
    settings = CheckSettings(enabled=enabled, config=config)
    baseline = _read_baseline(baseline_file, write_baseline_file)

    _tolerate_unencodable_output()
    if stdin_filename is not None:
        stdin = sys.stdin
        data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode("utf-8")
        abs_name = os.path.abspath(stdin_filename)
        if stdin_filename.endswith(NOTEBOOK_SUFFIX):
            unit = decode_notebook(data, stdin_filename, abs_name)
        else:
            unit = decode_source(data, stdin_filename, abs_name)
        result = check_source(unit, settings)
        if (fix or diff) and unit.ok and not unit.is_notebook:
            from devlint.fix.run import fix_unit

            own = [f for f in result.findings if f.path == unit.display]
            fixed = fix_unit(unit, own, settings, unsafe=unsafe_fixes)
            if fixed.refused:
                click.echo(f"{unit.display}: {fixed.refused}", err=True)
            if diff:
                from devlint.fix.apply import unified_diff

                sys.stdout.write(unified_diff(fixed))
                return EXIT_FINDINGS if fixed.changed else EXIT_OK
            sys.stdout.write(fixed.fixed)  # an editor reads the fixed source back
            remaining = check_source(replace(unit, text=fixed.fixed), settings)
            return _exit_code(remaining.findings, threshold, exit_zero)
    else:
        try:
            files = discover(targets, exclude=config.exclude, exclude_root=config.root)
        except PathNotFoundError as exc:
            raise UsageProblem(f"path not found: {exc}") from None

        progress = _print_progress if verbose else _TerminalProgress.maybe(quiet)
        from devlint.cache import default_cache_root
        from devlint.runner import default_jobs

        run_options: dict[str, Any] = {
            "jobs": jobs or default_jobs(),
            "cache_root": None if no_cache else default_cache_root(config, targets),
        }
        try:
            result = run_check(files, settings, progress=progress, **run_options)
        finally:
            if isinstance(progress, _TerminalProgress):
                progress.close()
        if fix or diff:
            from devlint.fix.apply import remove_stale_temp_files, unified_diff
            from devlint.fix.run import fix_files

            if fix and not diff:  # what an earlier, killed `--fix` run left beside the files
                remove_stale_temp_files(os.path.dirname(os.path.abspath(f.path)) for f in files)
            fixes = fix_files(result, settings, unsafe=unsafe_fixes, write=fix and not diff)
            for refused in fixes.refused:
                click.echo(f"{refused.path}: {refused.refused}", err=True)
            if diff:
                for changed in fixes.changed:
                    sys.stdout.write(unified_diff(changed))
                if not quiet:
                    count = sum(len(c.applied) for c in fixes.changed)
                    click.echo(f"{count} fix{'es' if count != 1 else ''} available in "
                               f"{len(fixes.changed)} file{'s' if len(fixes.changed) != 1 else ''}.", err=True)
                return EXIT_FINDINGS if fixes.changed else EXIT_OK
            if not quiet and fixes.changed:
                count = sum(len(c.applied) for c in fixes.changed)
                click.echo(f"Fixed {count} finding{'s' if count != 1 else ''} in "
                           f"{len(fixes.changed)} file{'s' if len(fixes.changed) != 1 else ''}.", err=True)
            if fixes.changed:
                result = run_check(files, settings, **run_options)

    if write_baseline_file is not None:
        return _write_baseline(write_baseline_file, result, quiet)
    known = 0
    if baseline is not None:
        from devlint.baseline import apply_baseline

        before = len(result.findings)
        result = apply_baseline(result, baseline)
        known = before - len(result.findings)
    render(format_name, result, sys.stdout)
    sys.stdout.flush()
    if not quiet:
        click.echo(summary_line(result), err=True)
        if known:
            click.echo(f"{known} finding{'s' if known != 1 else ''} recorded in {baseline_file} not shown.", err=True)

    return _exit_code(result.findings, threshold, exit_zero)


def _exit_code(findings: list, threshold: str, exit_zero: bool) -> int:
    if exit_zero or threshold == "never":
        return EXIT_OK
    from devlint.findings import Severity

    limit = Severity(threshold)
    return EXIT_FINDINGS if any(f.severity.at_least(limit) for f in findings) else EXIT_OK


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


def _write_baseline(file: str, result: Any, quiet: bool) -> int:
    from devlint.baseline import BaselineError, write_baseline

    try:
        count = write_baseline(file, result)
    except BaselineError as exc:
        raise UsageProblem(str(exc)) from None
    if not quiet:
        click.echo(
            f"Recorded {count} finding{'s' if count != 1 else ''} in {file}; "
            f"`devlint check --baseline {file}` reports only new ones.",
            err=True,
        )
    return EXIT_OK


class _TerminalProgress:
    """A transient progress bar on a terminal's stderr, shown only once a run has taken more
    than a second: never in pipes, CI logs, tests or under -q, and gone when the run ends."""

    DELAY = 1.0

    def __init__(self) -> None:
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self._bar: Any = None
        self._task: Any = None

    @classmethod
    def maybe(cls, quiet: bool) -> "_TerminalProgress | None":
        stream = sys.stderr
        isatty = getattr(stream, "isatty", None)
        if quiet or isatty is None or not isatty():
            return None
        if os.environ.get("CI") or os.environ.get("TERM") == "dumb":
            return None
        return cls()

    def __call__(self, index: int, total: int, display: str, count: int) -> None:
        if self._bar is None:
            if index >= total or self._clock() - self._start < self.DELAY:
                return
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            console = Console(file=sys.stderr, color_system=None if os.environ.get("NO_COLOR") else "auto")
            self._bar = Progress(
                TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.description}"), console=console, transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("", total=total)
        self._bar.update(self._task, completed=index, description=display)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _print_progress(index: int, total: int, display: str, count: int) -> None:
    found = f"{count} finding{'s' if count != 1 else ''}" if count else "ok"
    click.echo(f"[{index}/{total}] {display}: {found}", err=True)


def _tolerate_unencodable_output() -> None:
    """A terminal whose encoding cannot show a character of the user's source must not crash us."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):
                pass


@cli.command("rules")
def rules_command() -> int:
    """List every rule with its severity and default."""
    from devlint.rules import all_rules

    rows = [("code", "name", "severity", "default")]
    rows += [(r.code, r.name, r.severity.value, "on" if r.default_enabled else "off") for r in all_rules()]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return EXIT_OK


@cli.command("explain")
@click.argument("code")
def explain_command(code: str) -> int:
    """Explain a rule: what it does, why it crashes, an example and the fix."""
    from devlint.docs import rule_text
    from devlint.rules import rule_by_code

    rule = rule_by_code(code.strip())
    if rule is None:
        raise UsageProblem(f"unknown rule code {code!r} (see `devlint rules` for the list)")
    click.echo(rule_text(rule))
    return EXIT_OK


@cli.command("server")
def server_command() -> int:
    """Run the language server for editors (LSP over standard input and output)."""
    from devlint.server import serve  # pygls is imported here, so `devlint check` never loads it

    return serve()


def main() -> None:
    """Console entry point (`devlint`)."""
    cli.main(prog_name="devlint")
