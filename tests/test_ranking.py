"""Ranking: when a crash happens (the phase of a finding) and the order it gives the report.

The programs below use neutral function names on purpose (`check`, `step_all`, `run_batches`)
so that what is tested is the structure of the program (training loops, the epoch loop, call
sites, `model.eval()`), not the names. Each line with a finding carries `# when: PHASE`.
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest

from devlint.engine import check_text
from devlint.findings import Confidence, Finding, Phase, Severity
from devlint.rank import rank_findings
from devlint.rules import all_rules

ENABLED = frozenset(rule.code for rule in all_rules())
WHEN = re.compile(r"#\s*when:\s*(\w+)")

HEADER = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
loader = DataLoader(data, batch_size=4)
model = nn.Linear(4, 2).to(device)
teacher = nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
criterion = nn.CrossEntropyLoss()
"""


def phases(body: str) -> tuple[dict[int, str], dict[int, str]]:
    """(expected phase by line, reported phase by line) for HEADER + body."""
    text = HEADER + textwrap.dedent(body)
    expected = {n: m.group(1) for n, line in enumerate(text.splitlines(), 1) if (m := WHEN.search(line))}
    found = {f.line: f.phase.value for f in check_text(text, "prog.py", enabled=ENABLED) if f.code == "DEV101"}
    return expected, found


CASES = {
    "training loop and a frozen teacher under no_grad": """
        for epoch in range(3):
            for x, y in loader:
                x = x.to(device)
                with torch.no_grad():
                    agree = (teacher(x).argmax(1) == y).float()  # when: training
                loss = criterion(model(x), y.to(device))
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    """,
    "a function called in the epoch loop after the training function": """
        def check(net):
            for x, y in loader:
                out = net(x.to(device))
                hits = (out.argmax(1) == y).sum()  # when: evaluation

        def step_all(net):
            for x, y in loader:
                loss = criterion(net(x.to(device)), y.to(device))
                loss.backward()
                optimizer.step()

        def main():
            for epoch in range(3):
                step_all(model)
                check(model)

        main()
    """,
    "a helper called from inside the training loop trains": """
        def loss_of(net, x, y):
            return criterion(net(x.to(device)), y)  # when: training

        def main():
            for epoch in range(3):
                for x, y in loader:
                    loss = loss_of(model, x, y)
                    loss.backward()
                    optimizer.step()

        main()
    """,
    "an inline validation loop after the training loop, and a model.eval() block": """
        for epoch in range(3):
            for x, y in loader:
                loss = criterion(model(x.to(device)), y.to(device))
                loss.backward()
                optimizer.step()
            for x, y in loader:
                out = model(x.to(device))
                hits = (out.argmax(1) == y).sum()  # when: evaluation

        model.eval()
        x, y = next(iter(loader))
        out = model(x.to(device))
        final = (out.argmax(1) == y).sum()  # when: evaluation
    """,
    "teacher.eval() before training does not make training evaluation": """
        teacher.eval()
        for x, y in loader:
            x = x.to(device)
            soft = teacher(x)
            loss = criterion(model(x), y)  # when: training
            loss.backward()
            optimizer.step()
    """,
    "a checkpoint reload": """
        def run_batches(net):
            for x, y in loader:
                loss = criterion(net(x.to(device)), y.to(device))
                loss.backward()
                optimizer.step()

        def reload(path):
            state = torch.load(path, map_location=device)
            optimizer.load_state_dict(state["optimizer"])
            extra = state["step"]
            return extra

        run_batches(model)
        x, y = next(iter(loader))
        loss = criterion(model(x.to(device)), y)  # when: evaluation
    """,
    "a script without any training is inference": """
        for x, y in loader:
            out = model(x.to(device))
            hits = (out.argmax(1) == y).sum()  # when: inference
    """,
    "setup code at module level before training": """
        x, y = next(iter(loader))
        warm = criterion(model(x.to(device)), y)  # when: module
        for x, y in loader:
            loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
    """,
}


@pytest.mark.parametrize("name", list(CASES))
def test_phase_from_the_shape_of_the_program(name: str) -> None:
    expected, found = phases(CASES[name])
    assert expected, "the case marks at least one finding"
    assert {line: found.get(line) for line in expected} == expected


def test_a_load_state_dict_site_is_a_checkpoint_reload() -> None:
    text = HEADER + textwrap.dedent(
        """
        weights = torch.ones(2)
        for x, y in loader:
            loss = criterion(model(x.to(device)), y.to(device))
            loss.backward()
            optimizer.step()
        model.load_state_dict({"weight": torch.load("w.pt", map_location="cpu")["weight"] * weights.cuda()})
        """
    )
    from devlint.analysis.events import Context
    from devlint.analysis.phases import PhaseOracle
    import libcst as cst

    module = cst.parse_module(text)
    oracle = PhaseOracle([module], module)
    last = module.body[-1]
    assert oracle.phase(Context(statement=last)) is Phase.CHECKPOINT
    loop = module.body[-2]
    step = loop.body.body[0]
    assert oracle.phase(Context(statement=step, loops=("data",))) is Phase.TRAINING


def _finding(code: str, severity: Severity, phase: Phase, line: int, confidence=Confidence.DEFINITE) -> Finding:
    return Finding(code, "name", severity, "a.py", line, 1, line, 2, "message", confidence=confidence, phase=phase)


def test_rank_order_is_severity_then_when_then_confidence_then_place() -> None:
    findings = [
        _finding("DEV201", Severity.WARNING, Phase.EVALUATION, 1),
        _finding("DEV101", Severity.ERROR, Phase.TRAINING, 2),
        _finding("DEV101", Severity.ERROR, Phase.TRAINING, 3, Confidence.LIKELY),
        _finding("DEV101", Severity.ERROR, Phase.EVALUATION, 40),
        _finding("DEV101", Severity.ERROR, Phase.CHECKPOINT, 30),
        _finding("DEV101", Severity.ERROR, Phase.MODULE, 1),
        _finding("DEV101", Severity.ERROR, Phase.TRAINING, 1, Confidence.LIKELY),
    ]
    ranked = rank_findings(findings)
    assert [f.rank for f in ranked] == list(range(1, 8))
    assert [(f.severity.value, f.phase.value, f.confidence.value, f.line) for f in ranked] == [
        ("error", "checkpoint", "definite", 30),
        ("error", "evaluation", "definite", 40),
        ("error", "training", "definite", 2),
        ("error", "training", "likely", 1),
        ("error", "training", "likely", 3),
        ("error", "module", "definite", 1),
        ("warning", "evaluation", "definite", 1),
    ]


TRAIN_SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
train_loader = DataLoader(data, batch_size=4)
val_loader = DataLoader(data, batch_size=4)


def train(model, optimizer, criterion):
    model.train()
    for x, y in train_loader:
        x = x.to(device)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def evaluate(model):
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in val_loader:
            out = model(x.to(device))
            correct += (out.argmax(1) == y).sum().item()
    return correct


def main():
    model = nn.Linear(4, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(3):
        train(model, optimizer, criterion)
        evaluate(model)


if __name__ == "__main__":
    main()
"""


def test_json_ranks_the_evaluation_crash_first(project, invoke) -> None:
    project.write("train.py", TRAIN_SCRIPT)
    document = json.loads(invoke("check", "--format", "json").stdout)
    rows = [(f["rank"], f["line"], f["phase"]) for f in document["findings"]]
    assert rows == [(1, 27, "evaluation"), (2, 15, "training")]


def test_text_header_says_what_will_happen(project, invoke) -> None:
    project.write("train.py", TRAIN_SCRIPT)
    out = invoke("check")
    assert out.exit_code == 1
    assert out.stdout.splitlines()[0] == (
        "devlint: 2 errors will crash this run: one after the first epoch in `evaluate()`, "
        "one at the first training step in `train()`."
    )
    # the finding is laid out a clause a line: the CPU value, the device value, when, the fix
    lines = out.stdout.splitlines()
    start = lines.index(
        "train.py:27:25 DEV101 [error] `y` is still on the CPU here (a batch from `val_loader` at line 8),"
    )
    assert lines[start + 1].startswith("    but `out` is on `device` (the output of `model`, moved at line 32)")
    assert lines[start + 2] == "    this crashes after the first training epoch, in `evaluate()`."
    assert lines[start + 3] == "    Move it to the device first: `y = y.to(device)`."
    assert "> 27 |             correct += (out.argmax(1) == y).sum().item()" in lines[start + 5]


class _Terminal:
    """A stderr that says it is a terminal and keeps what is written to it."""

    def __init__(self) -> None:
        import io

        self.buffer = io.StringIO()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return self.buffer.write(text)

    def flush(self) -> None:
        pass


def test_progress_bar_only_on_a_terminal_outside_ci(monkeypatch) -> None:
    import sys

    from devlint.cli import _TerminalProgress

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert _TerminalProgress.maybe(quiet=False) is None  # pytest's stderr is not a terminal
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert _TerminalProgress.maybe(quiet=True) is None
    monkeypatch.setenv("CI", "true")
    assert _TerminalProgress.maybe(quiet=False) is None
    monkeypatch.delenv("CI")

    bar = _TerminalProgress.maybe(quiet=False)
    assert bar is not None
    now = [0.0]
    bar._clock = lambda: now[0]
    bar._start = 0.0
    bar(1, 3, "a.py", 0)
    assert terminal.buffer.getvalue() == ""  # a quick run never shows a bar
    now[0] = 1.5
    bar(2, 3, "b.py", 0)
    bar.close()
    assert terminal.buffer.getvalue() != ""


def test_no_progress_output_when_stderr_is_a_pipe(project, invoke) -> None:
    project.write("train.py", TRAIN_SCRIPT)
    out = invoke("check", "--format", "concise")
    # the summary and what --fix would repair, nothing else
    assert out.stderr == "Found 2 errors in 1 file.\n2 fixable with `--fix --unsafe-fixes`.\n"
