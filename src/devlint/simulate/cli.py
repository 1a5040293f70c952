"""`devlint run [OPTIONS] SCRIPT [ARGS]...`: the click command, registered lazily by devlint.cli.

Importing this module imports click and nothing heavy; torch is imported when the command runs,
and its absence is a usage error (exit 2) with a message that says what to install.

Exit codes: 0 ran clean or stopped at a limit, 1 a device error (a GPU run would crash), 2 usage
(bad option, missing script, torch not installed), 3 internal error or a CUDA feature the
simulation does not model, 4 the script failed for another reason.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

import click

EXIT_USAGE = 2

_FORMATS = ("text", "concise", "json", "sarif", "github")


def _available_formats() -> tuple[str, ...]:
    """text, concise, json always; sarif and github when devlint's reporters provide them."""
    from devlint.report import FORMATS

    return tuple(f for f in _FORMATS if f in ("text", "concise", "json") or f in FORMATS)


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """While the script runs, its prints go to stderr, so stdout holds only the report."""
    saved_py = sys.stdout
    saved_fd = None
    try:
        sys.stdout.flush()
        if sys.stdout.fileno() == 1 and sys.stderr.fileno() == 2:
            saved_fd = os.dup(1)
            os.dup2(2, 1)
    except (AttributeError, OSError, ValueError):  # a captured stream without a file descriptor
        saved_fd = None
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        sys.stdout = saved_py
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    short_help="Run a script as if a GPU were present, to hit its device crashes (needs torch).",
)
@click.option("-m", "module", metavar="MODULE", default=None, help="Run a module as `python -m MODULE` does.")
@click.option(
    "--max-batches",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Stop every DataLoader iteration after K batches (0: no limit), so training, evaluation "
    "and checkpoint code are all reached quickly.",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Stop the whole run after this many seconds (a stop at a limit exits 0).",
)
@click.option(
    "--format",
    "format_",
    type=click.Choice(_FORMATS),
    default="text",
    show_default=True,
    help="Report format, as for `devlint check`.",
)
@click.argument("script", required=False, metavar="SCRIPT")
@click.argument("args", nargs=-1, type=click.UNPROCESSED, metavar="[ARGS]...")
@click.pass_context
def run_command(
    ctx: click.Context,
    module: str | None,
    max_batches: int,
    max_seconds: float | None,
    format_: str,
    script: str | None,
    args: tuple[str, ...],
) -> None:
    """Run SCRIPT (or -m MODULE) with CUDA simulated on the CPU and stop at the device crash a
    GPU run would hit, with PyTorch's message and your line.

    devlint's options go before SCRIPT; everything after it is passed to the script as its
    sys.argv. Exit codes: 0 ran clean or stopped at a limit, 1 a device error, 2 usage,
    3 internal error (or a CUDA feature the simulation does not model), 4 the script failed
    for another reason.
    """
    if module is not None:
        target = module
        script_args = ([script] if script is not None else []) + list(args)
    else:
        if script is None:
            click.echo("devlint run: error: missing SCRIPT (or -m MODULE).", err=True)
            ctx.exit(EXIT_USAGE)
        if not os.path.isfile(script):
            click.echo(f"devlint run: error: no such file: {script}", err=True)
            ctx.exit(EXIT_USAGE)
        target = script
        script_args = list(args)
    if format_ not in _available_formats():
        click.echo(f"devlint run: error: --format {format_} is not available in this installation.", err=True)
        ctx.exit(EXIT_USAGE)

    try:
        import torch  # noqa: F401 - only to know it is there
    except ImportError:
        click.echo(
            "devlint run: error: `devlint run` executes your script with PyTorch, which is not "
            "installed in this environment. Install it (`pip install torch`, your own torch build, or "
            '`pip install ".[run]"` in a devlint checkout) and run again; `devlint check` works without it.',
            err=True,
        )
        ctx.exit(EXIT_USAGE)

    from devlint.simulate import report
    from devlint.simulate.execute import run

    machine = format_ != "text"
    redirect = _stdout_to_stderr() if machine else contextlib.nullcontext()
    with redirect:
        outcome = run(
            target,
            script_args,
            module=module is not None,
            max_batches=max_batches,
            max_seconds=max_seconds,
        )
    for warning in outcome.warnings:
        click.echo(f"devlint run: warning: {warning}", err=True)

    if format_ == "json":
        report.render_json(outcome, sys.stdout)
    elif format_ == "concise":
        report.render_concise(outcome, sys.stdout)
    elif format_ == "text":
        report.render_text(outcome, sys.stdout if outcome.finding else sys.stderr)
    else:
        _render_shared(format_, outcome)
    sys.stdout.flush()
    click.echo(report.summary(outcome), err=True)
    ctx.exit(outcome.exit_code)


def _render_shared(format_: str, outcome: Any) -> None:
    """sarif / github through devlint's own reporters, fed a one-file result."""
    from devlint.report import render
    from devlint.runner import RunResult

    sources: dict[str, Any] = {}
    findings = [outcome.finding] if outcome.finding else []
    if outcome.finding is not None:
        try:
            from devlint.source import SourceUnit

            path = outcome.finding.path
            with open(path, encoding="utf-8") as handle:
                sources[path] = SourceUnit(display=path, path=os.path.abspath(path), text=handle.read())
        except (OSError, ImportError, TypeError, UnicodeDecodeError):
            pass
    render(format_, RunResult(files_checked=1, findings=findings, sources=sources), sys.stdout)
