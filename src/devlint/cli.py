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
import sys
from typing import Any, Sequence

import click

from devlint import __version__

__all__ = ["cli", "main"]

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3

# the names of devlint.report.FORMATS (not imported here: `import devlint.cli` stays light)
FORMAT_CHOICES = ("text", "concise", "json", "sarif", "github", "json-lines", "junit", "gitlab", "pylint", "rdjson",
                  "azure", "grouped")
FAIL_ON_CHOICES = ("error", "warning", "info", "never")
SIMULATE_MODULE = "devlint.simulate.cli"
RUN_HELP = "Run a script as if a GPU were present, to hit its device crashes (needs torch)."

_state: dict[str, bool] = {"verbose": False, "done_checking": False}


from devlint.errors import UsageProblem  # noqa: E402 - re-exported: callers catch devlint.cli.UsageProblem
from devlint.interrupts import Interrupted, Stopped, interrupt_behind, terminating  # noqa: E402


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

    def main(
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
        except Stopped as stop:  # Ctrl-C or SIGTERM during a check (devlint.interrupts)
            click.echo(stop.line, err=True)
            return stop.status
        except UsageProblem as exc:
            click.echo(f"devlint: error: {exc}", err=True)
            return EXIT_USAGE
        except BrokenPipeError:
            # the reader went away (`devlint check | head`): not a devlint bug
            _silence_stdout()
            return EXIT_FINDINGS
        except Exception as exc:  # noqa: BLE001 - every other exception is a devlint bug
            behind = interrupt_behind(exc)  # a cleanup that failed because an interrupt cut it short
            if behind is not None:
                cut = behind if isinstance(behind, Stopped) else Interrupted()
                click.echo(cut.line, err=True)
                return cut.status
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
    "--output-format",
    "--format",
    "format_name",
    type=click.Choice(FORMAT_CHOICES),
    default="text",
    show_default=True,
    envvar="DEVLINT_OUTPUT_FORMAT",
    help="text: ranked report with source excerpts; concise: one line per finding; grouped: findings under "
    "their file; json / json-lines: machine-readable; sarif: SARIF 2.1.0 for code scanning; github: GitHub "
    "Actions annotations; gitlab: GitLab Code Quality; junit: JUnit XML; pylint: pylint's parseable lines; "
    "rdjson: reviewdog; azure: Azure Pipelines. `--format` is an alias; DEVLINT_OUTPUT_FORMAT sets it too.",
)
@click.option("-o", "--output-file", metavar="FILE", type=click.Path(dir_okay=False, path_type=str),
              help="Write the report to FILE instead of standard output.")
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
    "config_items",
    multiple=True,
    metavar="FILE | KEY=VALUE",
    help="A FILE: read settings from it for every checked file, instead of each file's nearest "
    "pyproject.toml / devlint.toml. KEY = VALUE (TOML, repeatable): override that setting of whichever "
    "file applies, e.g. --config 'fail-on = \"error\"'.",
)
@click.option("--isolated", is_flag=True, help="Read no configuration file (the defaults, and --config KEY=VALUE).")
@click.option("--ignore-noqa", is_flag=True, help="Report findings that `# noqa` comments would silence.")
@click.option("--show-settings", is_flag=True,
              help="Print the settings the first checked file gets, and which files they come from; check nothing.")
@click.option("--show-files", is_flag=True, help="Print the files that would be checked, one a line; check nothing.")
@click.option("--watch", is_flag=True,
              help="Check, then check again whenever a file or a configuration changes (Ctrl-C to stop).")
@click.option("--add-noqa", is_flag=True,
              help="Add `# noqa: CODE` to every line with a finding (kept beside existing comments); report nothing.")
@click.option("--fix", is_flag=True, help="Apply the safe automatic fixes in place.")
@click.option("--fix-only", is_flag=True, help="Apply the fixes and report nothing else (implies --fix).")
@click.option("--diff", is_flag=True, help="Print the automatic fixes as a unified diff and change nothing.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply (or show) fixes that change what the program does.")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied (with --fix) or available (without).")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when a fix was applied, even if nothing is left.")
@click.option("--statistics", is_flag=True, help="Count the findings per code instead of listing them.")
@click.option("--stdin-filename", metavar="NAME", help="Read the source from standard input and report it as NAME.")
@click.option("--exclude", multiple=True, metavar="PATTERNS",
              help="Exclude these gitignore-style patterns (comma-separated), replacing the `exclude` setting.")
@click.option("--extend-exclude", multiple=True, metavar="PATTERNS",
              help="Exclude these patterns in addition to the `exclude` setting.")
@click.option("--force-exclude", is_flag=True,
              help="Apply the exclusions to paths named on the command line too (pre-commit names every file).")
@click.option("--color", type=click.Choice(("auto", "always", "never")), default="auto", show_default=True,
              help="Colour the text report: on a terminal only (auto), always, or never.")
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
def check_command(paths: tuple[str, ...], exclude: tuple[str, ...], **flags: Any) -> int:
    """Check files, folders and notebooks for device bugs.

    PATHS default to the current folder; `-` reads standard input. Folders are searched for
    *.py and *.ipynb files, honouring .gitignore and the `exclude` setting. Each file takes the
    settings of the nearest pyproject.toml / devlint.toml above it.
    """
    from devlint.check_command import CheckOptions, run_check_command

    _state["verbose"] = bool(flags.get("verbose"))
    _state["done_checking"] = True  # the entry point may skip the interpreter's teardown (main)
    _tolerate_unencodable_output()
    options = CheckOptions(paths=paths, exclude=exclude or None, **flags)
    with terminating():  # SIGTERM ends the run (and its workers) as Ctrl-C does: devlint.interrupts
        return run_check_command(options, _progress_for)


def _progress_for(verbose: bool, quiet: bool) -> Any:
    return _print_progress if verbose else _TerminalProgress.maybe(quiet)


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
@click.argument("selectors", nargs=-1, metavar="[CODES]...")
@click.option("--output-format", "--format", "format_name", type=click.Choice(("text", "json")), default="text",
              show_default=True, help="text: a table; json: a list of objects (code, name, severity, default, fix, url).")
def rules_command(selectors: tuple[str, ...], format_name: str) -> int:
    """List the rules with their severity and default (and their fix, with --format json).

    CODES narrow the list as `--select` would: codes, prefixes or names (`devlint rules DEV1`,
    `devlint rules DEV101,discarded-to`)."""
    from devlint.docs import rule_url
    from devlint.rules import all_rules
    from devlint.selection import SelectionError, expand, parse_codes, validate

    rules = all_rules()
    if selectors:
        chosen = parse_codes(selectors)
        try:
            validate(chosen, "devlint rules")
        except SelectionError as exc:
            raise UsageProblem(str(exc)) from None
        codes = expand(chosen)
        rules = tuple(r for r in rules if r.code in codes)
    if format_name == "json":
        import json

        click.echo(json.dumps([{"code": r.code, "name": r.name, "severity": r.severity.value,
                                "default": r.default_enabled, "fix": r.fix.value, "summary": r.summary,
                                "url": rule_url(r.code)} for r in rules], indent=2))
        return EXIT_OK
    rows = [("code", "name", "severity", "default")]
    rows += [(r.code, r.name, r.severity.value, "on" if r.default_enabled else "off") for r in rules]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return EXIT_OK


@cli.command("explain")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="Explain every rule, one after another.")
def explain_command(code: str | None, show_all: bool) -> int:
    """Explain a rule, by code (DEV107) or name (discarded-to): what it does, why it crashes,
    an example and the fix."""
    from devlint.docs import rule_text
    from devlint.rules import all_rules

    if show_all:
        if code:
            raise click.UsageError("give a rule or --all, not both")
        click.echo("\n\n".join(rule_text(rule) for rule in all_rules()))
        return EXIT_OK
    if not code:
        raise click.UsageError("name a rule (`devlint explain DEV107`, `devlint explain discarded-to`) or use --all")
    wanted = code.strip()
    rule = next((r for r in all_rules() if wanted.upper() == r.code or wanted.lower() == r.name), None)
    if rule is None:
        raise UsageProblem(f"unknown rule code {code!r} (not a rule code or name; see `devlint rules` for the list)")
    click.echo(rule_text(rule))
    return EXIT_OK


@cli.command("server")
def server_command() -> int:
    """Run the language server for editors (LSP over standard input and output)."""
    from devlint.server import serve  # pygls is imported here, so `devlint check` never loads it

    return serve()


def main() -> None:
    """Console entry point (`devlint`).

    After `check`, the process ends without the interpreter's teardown, as mypy's does
    (`util.hard_exit`): tearing down frees, one by one, the millions of objects of the parses
    kept for the files that import them, which took a quarter of a run on timm, and nothing is
    left to do by then (the report is written and flushed, the result cache is written with
    atomic renames, worker processes have been joined). Other commands exit as usual: `run`
    executes the user's script, whose exit handlers must run; and so does a check run under a
    profiler or a tracer (`python -m cProfile`, coverage), which writes its data at exit."""
    code = cli.main(prog_name="devlint", standalone_mode=False)
    if _state["done_checking"] and not _observed():
        _exit_now(code)
    sys.exit(code)


def _observed() -> bool:
    """Whether a profiler, a tracer or a monitoring tool watches this process: cProfile and
    coverage through sys.setprofile / sys.settrace, or through sys.monitoring (Python 3.12+)."""
    if sys.getprofile() is not None or sys.gettrace() is not None:
        return True
    monitoring = getattr(sys, "monitoring", None)
    return monitoring is not None and any(monitoring.get_tool(tool) is not None for tool in range(6))


def _exit_now(code: int) -> None:
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (`devlint check | head`)
        _silence_stdout()
    except (OSError, ValueError):
        pass
    os._exit(code)
