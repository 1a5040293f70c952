"""Messages say the right thing (issue 19): a line in another file names that file, names are
given where the analysis knows them, and the advice can run. Each test checks one message's
text on a small program of its own."""

from __future__ import annotations

import textwrap
from pathlib import Path

from devlint.engine import check_text
from devlint.findings import Phase
from devlint.project import ProjectIndex
from devlint.rules import all_rules

EVERY_RULE = frozenset(rule.code for rule in all_rules())


def _findings(root: Path, files: dict[str, str], checked: str) -> list:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")
    path = root / checked
    return check_text(path.read_text(encoding="utf-8"), str(path), enabled=EVERY_RULE, project=ProjectIndex([root]))


def test_a_cpu_fallback_in_another_file_is_named_with_its_file(tmp_path: Path) -> None:
    found = _findings(tmp_path, {
        "wrapper.py": """\
            import torch


            class Probe:
                def __init__(self, model):
                    self.model = model
                    self.device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
            """,
        "evaluate.py": """\
            import torch
            import torch.nn as nn

            from wrapper import Probe


            def load(path):
                model = nn.Linear(8, 2)
                model.load_state_dict(torch.load(path))
                return Probe(model)


            if __name__ == "__main__":
                load("model.pt")
            """,
    }, "evaluate.py")
    (finding,) = [f for f in found if f.code == "DEV201"]
    assert "falls back to the CPU at line 7 of wrapper.py" in finding.message
    assert 'Pass `map_location="cpu"`' in finding.message  # `self.device` of wrapper.py is no name here


def test_a_cpu_fallback_in_the_same_file_is_named_by_its_line_only(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"train.py": """\
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = nn.Linear(8, 2)
        model.load_state_dict(torch.load("pretrained.pt"))
        model.to(device)
        """}, "train.py")
    (finding,) = [f for f in found if f.code == "DEV201"]
    assert "(it falls back to the CPU at line 4)" in finding.message


def _single(tmp_path: Path, text: str, code: str):
    found = [f for f in _findings(tmp_path, {"prog.py": text}, "prog.py") if f.code == code]
    assert len(found) == 1, found
    return found[0]


def test_a_factory_hint_names_the_tensor_the_fix_uses(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


        def jitter(x):
            return x + 0.1 * x.std() * torch.rand(x.size())


        print(jitter(torch.randn(4, 3).to(device)))
        """, "DEV105")
    assert "add `device=x.device`" in finding.message
    assert "<tensor>" not in finding.message
    assert "the other operand" not in finding.message


def test_a_factory_meeting_a_module_is_not_told_to_read_module_device(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import torch.nn as nn

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        rnn = nn.GRU(8, 16).to(device)
        hidden = torch.zeros(1, 4, 16)
        out, _ = rnn(torch.randn(5, 4, 8, device=device), hidden)
        """, "DEV105")
    assert "`device=rnn.device`" not in finding.message
    assert "<tensor>" not in finding.message


def test_an_unnamed_device_operand_is_named_by_its_expression(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch

        cuda = torch.cuda.is_available()
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor


        def penalty(n):
            return (Tensor(n, 1).fill_(1.0) * 2) + torch.rand(n, 1)


        print(penalty(4))
        """, "DEV105")
    assert "the other operand" not in finding.message
    assert "`(Tensor(n, 1).fill_(1.0) * 2)` is on" in finding.message or "`Tensor(n, 1).fill_(1.0) * 2` is on" \
        in finding.message


def test_the_device_side_is_named_by_the_variable_it_was_moved_into(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        a = torch.tensor([1.0, 2.0, 3.0])
        b = a.to(device)
        print(a + b)
        """, "DEV101")
    assert "`b` is on `device`" in finding.message


def test_a_move_made_with_cuda_is_advised_as_code_that_runs(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        net = nn.Linear(8, 1)
        if torch.cuda.is_available():
            net.cuda()
        loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randn(32, 1)), batch_size=4)
        for x, y in loader:
            out = net(x.cuda() if torch.cuda.is_available() else x)
            loss = ((out - y) ** 2).mean()
        """, "DEV101")
    assert '`y = y.to("cuda")`' in finding.message
    assert ".to(cuda)" not in finding.message


def test_dev202_sits_on_the_line_of_the_cuda_call_in_a_chain(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import torch.nn as nn

        model = nn.Sequential(
            nn.Linear(4, 8),
            nn.ReLU(),
        ).cuda()
        print(model(torch.randn(2, 4)))
        """, "DEV202")
    assert finding.line == 7


def test_a_crash_before_the_training_loop_is_a_start_up_crash(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        def train(model, loader, device):
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x.to(device)), y.to(device))
                opt.zero_grad()
                loss.backward()
                opt.step()


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1).to(device)
            loader = DataLoader(TensorDataset(torch.randn(8, 4), torch.randn(8, 1)), batch_size=2)
            loader = loader.to(device)
            train(model, loader, device)


        if __name__ == "__main__":
            main()
        """, "DEV108")
    assert finding.phase is Phase.MODULE


def test_a_move_in_another_file_is_named_with_its_file(tmp_path: Path) -> None:
    found = _findings(tmp_path, {
        "data.py": """\
            import torch

            DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


            def make_points(n):
                return torch.randn(n, 2).to(DEVICE)
            """,
        "run.py": """\
            import torch

            from data import make_points

            points = make_points(8)  # already .to(DEVICE)
            offsets = torch.ones(8, 2)
            print(points + offsets)
            """,
    }, "run.py")
    messages = [f.message for f in found if f.code in ("DEV101", "DEV105")]
    assert messages, found
    assert all("moved at line 7 of data.py" in m for m in messages), messages


def test_an_unnamed_module_input_is_named_by_its_expression(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import torch.nn as nn
        import torch.nn.functional as F


        class Smoother(nn.Module):
            def __init__(self, width=5):
                super().__init__()
                self.register_buffer("kernel", torch.ones(1, 1, width) / width)

            def forward(self, x):
                return F.conv1d(x, self.kernel, padding=2)


        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = nn.Conv1d(1, 1, 3, padding=1).to(device)
        smoother = Smoother()
        y = smoother(net(torch.randn(8, 1, 100).to(device)))
        """, "DEV102")
    assert "the other operand" not in finding.message
    assert "`net(torch.randn(8, 1, 100).to(device))` is on `device`" in finding.message


def test_a_host_use_without_a_name_says_the_argument(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import torch.nn as nn
        import matplotlib.pyplot as plt

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        net = nn.Linear(4, 4).to(device)
        plt.imshow(net(torch.randn(4, 4).to(device)))
        """, "DEV109")
    assert "the other operand" not in finding.message
    assert finding.message.startswith("the argument is on `device`")


def test_the_advice_assigns_to_the_variable_not_to_a_call(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import transformers

        device = "cuda" if torch.cuda.is_available() else "cpu"
        tok = transformers.AutoTokenizer.from_pretrained("t5-small")
        model = transformers.T5ForConditionalGeneration.from_pretrained("t5-small").to(device)
        enc = tok(["translate: hello"], return_tensors="pt").to(device)
        target = tok(text_target=["hallo"], return_tensors="pt")["input_ids"]
        out = model(**enc, labels=target.to(device))
        loss = torch.nn.functional.cross_entropy(out.logits[0], target[0])
        """, "DEV101")
    assert "`target = target.to(device)`" in finding.message
    assert ')["input_ids"] =' not in finding.message


def test_dev111_advice_is_a_device_expression_not_a_flag(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import torch.nn as nn

        cuda = True if torch.cuda.is_available() else False
        critic = nn.Linear(4, 1)
        if cuda:
            critic.cuda()
        Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor


        def penalty(real):
            alpha = torch.rand(real.size(0), 1)
            alpha = alpha.cuda()
            return critic(alpha * real)


        print(penalty(torch.randn(8, 4).type(Tensor)))
        """, "DEV111")
    assert ".to(cuda)" not in finding.message
    assert '.to("cuda" if ' in finding.message


_HELPER_CHECKS = """\
    import torch


    def select_device(device=""):
        text = "torch"
        cpu = device.lower() == "cpu"
        mps = device.lower() == "mps"
        if not cpu and not mps and torch.cuda.is_available():
            for i, d in enumerate(device.split(",") if device else "0"):
                props = torch.cuda.get_device_properties(i)
                text += f" CUDA:{d} ({props.name})"
            return torch.device("cuda:0"), text
        return torch.device("cpu"), text
    """


def test_a_helper_file_that_checks_for_a_gpu_is_not_told_it_checks_nothing(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"helpers.py": _HELPER_CHECKS, "train.py": """\
        import torch.nn as nn

        from helpers import select_device

        device, text = select_device("0")
        model = nn.Linear(4, 2).to(device)
        print(text, model)
        """}, "train.py")
    assert not [f for f in found if f.code == "DEV202"], found


def test_the_scripts_own_unguarded_cuda_is_still_reported(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"helpers.py": _HELPER_CHECKS, "train.py": """\
        import torch
        import torch.nn as nn

        from helpers import select_device

        device, text = select_device("0")
        model = nn.Linear(4, 2).cuda()
        print(text, model(torch.randn(3, 4).cuda()))
        """}, "train.py")
    assert [(Path(f.path).name, f.line) for f in found if f.code == "DEV202"] == [("train.py", 7)]


def test_a_move_with_cuda_of_an_index_is_advised_as_an_f_string(tmp_path: Path) -> None:
    finding = _single(tmp_path, """\
        import torch
        import torch.nn as nn

        gpu = 0
        net = nn.Linear(3, 1)
        net.cuda(gpu)
        x = torch.tensor([[1.0, 2.0, 3.0]])
        print(net(x))
        """, "DEV101")
    assert 'x = x.to(f"cuda:{gpu}")' in finding.message
    assert ".to(cuda:gpu)" not in finding.message


def test_a_device_from_the_current_accelerator_is_not_said_to_need_cuda(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"tune.py": """\
        import torch
        import torch.nn as nn

        device = torch.accelerator.current_accelerator().type if hasattr(torch, "accelerator") else "cuda"
        model = nn.Linear(8, 2)
        model.to(device)
        """}, "tune.py")
    (dev202,) = [f for f in found if f.code == "DEV202"]
    assert "requires a CUDA GPU" not in dev202.message
    assert "an accelerator (CUDA, MPS, XPU" in dev202.message
    assert "torch.accelerator.current_accelerator() if torch.accelerator.is_available()" in dev202.message


def test_a_literal_cuda_move_still_says_it_needs_cuda(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"tune.py": """\
        import torch
        import torch.nn as nn

        accelerator = torch.accelerator.current_accelerator()
        model = nn.Linear(8, 2)
        model.cuda()
        """}, "tune.py")
    (dev202,) = [f for f in found if f.code == "DEV202"]
    assert "requires a CUDA GPU" in dev202.message


def test_a_factory_given_a_cpu_device_is_not_said_to_lack_one(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"aug.py": """\
        import torch
        import torch.nn as nn


        def rotation(n, device="cpu"):
            mat = torch.eye(n, device=device)
            return mat


        net = nn.Linear(3, 3).to("cuda")
        x = torch.randn(3, 3, device="cuda")
        y = net(x) @ rotation(3)
        """}, "aug.py")
    (dev105,) = [f for f in found if f.code == "DEV105"]
    assert "no `device=`" not in dev105.message
    assert "its `device=` is the CPU here" in dev105.message


def test_no_step_says_a_name_comes_from_itself(tmp_path: Path) -> None:
    found = _findings(tmp_path, {"train.py": """\
        import torch
        import torch.nn as nn


        def train(model, train_loader, device):
            model.to(device)
            for x, y in train_loader:
                loss = nn.functional.cross_entropy(model(x.to(device, non_blocking=True)), y.to(device))
                loss.backward()
            train_loader.to(device)


        loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 4)), batch_size=2)
        train(nn.Linear(4, 2), loader, torch.device("cuda" if torch.cuda.is_available() else "cpu"))
        """}, "train.py")
    steps = [step.message for f in found for step in f.evidence]
    assert steps, "the program has findings with evidence"
    assert not any(f"`{n}` comes from `{n}`" in s for s in steps for n in ("train_loader", "loader", "x"))
