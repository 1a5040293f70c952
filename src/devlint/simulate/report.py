"""How `devlint run` reports an outcome: the `check` formats, plus what only a run knows
(the traceback, the phase reached, whether it ran clean or stopped at a limit).

No torch here: the outcome is plain data by the time it is reported.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from devlint import __version__
from devlint.findings import Finding
from devlint.simulate.execute import RunOutcome, Status

_PHASE_WORDS = {
    "module": "at module level, before training starts",
    "training": "in the training step",
    "evaluation": "in evaluation, after the training it follows",
    "checkpoint": "while saving or loading a checkpoint",
    "inference": "in inference",
    "unknown": "",
}


def finding_dict(finding: Finding) -> dict[str, Any]:
    """The `check` JSON shape of a finding, plus the run's own fields (traceback, hint)."""
    from devlint.report.json_ import finding_to_dict

    data = finding_to_dict(finding)
    data["exception"] = finding.extra.get("exception")
    data["hint"] = finding.extra.get("hint")
    data["traceback"] = finding.extra.get("traceback")
    data["simulated"] = True
    return data


def run_dict(outcome: RunOutcome) -> dict[str, Any]:
    loc = outcome.location
    data: dict[str, Any] = {
        "target": outcome.target,
        "status": outcome.status.value,
        "exit_code": outcome.exit_code,
        "batches": outcome.batches,
        "seconds": round(outcome.seconds, 3),
        "stop_reason": outcome.stop_reason,
        "warnings": list(outcome.warnings),
    }
    if outcome.exception_type is not None:
        data["exception"] = outcome.exception_type
        data["message"] = outcome.message
        data["phase"] = outcome.phase.value
        data["traceback"] = outcome.traceback
        if loc is not None:
            data["location"] = {
                "path": loc.path,
                "line": loc.line,
                "column": loc.column,
                "function": loc.function,
                "source": loc.source,
            }
    return data


def render_json(outcome: RunOutcome, stream: TextIO) -> None:
    document = {
        "version": __version__,
        "files_checked": 1,
        "findings": [finding_dict(outcome.finding)] if outcome.finding else [],
        "run": run_dict(outcome),
    }
    json.dump(document, stream, indent=2, ensure_ascii=False)
    stream.write("\n")


def render_concise(outcome: RunOutcome, stream: TextIO) -> None:
    finding = outcome.finding
    if finding is None:
        return
    message = " ".join(finding.message.split())
    stream.write(f"{finding.path}:{finding.line}:{finding.column}: {finding.code} {message}\n")


def render_text(outcome: RunOutcome, stream: TextIO) -> None:
    finding = outcome.finding
    if finding is not None:
        stream.write(
            f"{finding.path}:{finding.line}:{finding.column}: {finding.code} {finding.name} [error] "
            f"{outcome.exception_type}: {finding.message}\n"
        )
        loc = outcome.location
        if loc is not None and loc.source:
            stream.write(f"  > {loc.line} | {loc.source}\n")
        hint = finding.extra.get("hint")
        if hint:
            stream.write(f"    cause: {hint}\n")
        words = _PHASE_WORDS.get(finding.phase.value, "")
        if words:
            stream.write(f"    when: a GPU run crashes here {words}\n")
        if outcome.traceback:
            stream.write("\n" + outcome.traceback.rstrip("\n") + "\n")
        return
    if outcome.status in (Status.SCRIPT_ERROR, Status.UNSUPPORTED, Status.INTERNAL_ERROR) and outcome.traceback:
        stream.write(outcome.traceback.rstrip("\n") + "\n")


def summary(outcome: RunOutcome) -> str:
    """The one line on stderr after a run."""
    took = f"{outcome.seconds:.1f} s, {outcome.batches} batch{'es' if outcome.batches != 1 else ''}"
    where = ""
    if outcome.location is not None:
        where = f" at {outcome.location.path}:{outcome.location.line}"
    status = outcome.status
    if status is Status.CLEAN:
        return f"devlint run: {outcome.target} ran clean under a simulated GPU ({took})."
    if status is Status.LIMIT:
        return (
            f"devlint run: stopped {outcome.target} at the --max-seconds limit with no device error "
            f"({took})."
        )
    if status is Status.DEVICE_ERROR:
        code = outcome.finding.code if outcome.finding else "DEV100"
        return f"devlint run: a GPU run would crash{where}: {code} ({took}, simulated on the CPU)."
    if status is Status.SCRIPT_ERROR:
        return (
            f"devlint run: the script failed{where} for a reason other than device placement: "
            f"{outcome.exception_type}: {_one_line(outcome.message)} ({took})."
        )
    if status is Status.UNSUPPORTED:
        return (
            f"devlint run: the script uses something the simulation does not model{where}: "
            f"{_one_line(outcome.message)}"
        )
    return (
        f"devlint run: internal error{where}: {outcome.exception_type}: {_one_line(outcome.message)}. "
        "This is a bug in devlint, not in your script; please report it."
    )


def _one_line(text: str | None, limit: int = 200) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
