"""DEV113 dispatched-model-moved: a model placed by `device_map=` or quantisation is moved again."""

import re
from typing import TYPE_CHECKING, Iterator

from devlint.analysis import devices
from devlint.analysis.values import Kind
from devlint.analysis.vocabulary import Fact
from devlint.findings import Confidence, Severity
from devlint.rules._describe import value_name, where_from
from devlint.rules._portability import current_device
from devlint.rules import _evidence as evidence
from devlint.rules.base import FixSafety, Report, Rule

if TYPE_CHECKING:  # pragma: no cover
    from devlint.analysis.events import Move
    from devlint.analysis.program import Program

rule = Rule(
    code="DEV113",
    name="dispatched-model-moved",
    severity=Severity.ERROR,
    summary="A model loaded with `device_map=` or quantised with bitsandbytes is moved again with `.to()` / `.cuda()`.",
    why="""
        `from_pretrained(..., device_map="auto")` lets accelerate place each block of the model
        on a device and attach hooks that move every block's inputs where its weights are;
        `load_in_8bit=True`, `load_in_4bit=True` and a bitsandbytes `quantization_config` load
        the weights already quantised on the GPU. Such a model is placed: moving it again
        breaks the placement. Transformers refuses outright for 8-bit models (`ValueError:
        .to is not supported for 8-bit bitsandbytes models`) and for 4-bit ones with older
        bitsandbytes; a model with layers offloaded to the CPU or disk raises `RuntimeError:
        You can't move a model that has some modules offloaded to cpu or disk`; a model split
        over several GPUs is pulled onto one, against the hooks that still send inputs to the
        others. Leave the model where it is and move the inputs: `inputs.to(model.device)`.
    """,
    bad="""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained("facebook/opt-350m")
        model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", load_in_8bit=True)
        model = model.to("cuda")
        inputs = tokenizer("Hello, my name is", return_tensors="pt").to("cuda")
        print(tokenizer.decode(model.generate(**inputs, max_new_tokens=20)[0]))
    """,
    good="""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained("facebook/opt-350m")
        model = AutoModelForCausalLM.from_pretrained("facebook/opt-350m", load_in_8bit=True)
        inputs = tokenizer("Hello, my name is", return_tensors="pt").to(model.device)
        print(tokenizer.decode(model.generate(**inputs, max_new_tokens=20)[0]))
    """,
    fix=FixSafety.NONE,
    limits="""
        A `device_map` that names a single device (`device_map="cuda:0"`, `{"": 0}`) is a plain
        placement: moving that model again is harmless and is not reported. `device_map="auto"`
        and 4-bit models are reported as likely: on one GPU, with a recent bitsandbytes, the
        move happens to work. A quantised model mapped whole onto one GPU (`device_map=0`) and
        moved to that same GPU is not reported (8-bit bitsandbytes models excepted: they refuse
        any move). A model dispatched on one branch only (a 4-bit load under `if quantize:`, a
        plain load otherwise) is not reported at a move both branches reach. The keywords may
        come in a dict (`**model_kwargs`); a `**kwargs` the analysis cannot read leaves the
        model's placement unknown.
    """,
)


def _only_where_elsewhere(move: "Move") -> bool:
    """`if model.device.type != device.type: model = model.to(device)`: the move runs only where
    the model is not already on the target's device; a model dispatched onto that accelerator
    is not moved (and one placed elsewhere is the user's stated intent)."""
    target = move.device_name
    if not target or "(" in move.subject_text:
        return False
    subject = f"{move.subject_text}.device"
    for text, holds in move.when:
        compares = subject in text and re.search(rf"(?<![\w.\"']){re.escape(target)}(?![\w\"'])",
                                                 text.replace(subject, "")) is not None
        if compares and ("!=" in text and holds or "==" in text and not holds):
            return True
    return False


@rule.check
def moving_a_dispatched_model(program: "Program") -> Iterator[Report]:
    for move in program.moves:
        subject = move.subject
        if subject.kind is not Kind.MODULE or not subject.has(Fact.DISPATCHED) or move.method not in ("to", "cuda"):
            continue
        if subject.has(Fact.PARTLY_DISPATCHED) or _onto_its_own_device(program, move) or _only_where_elsewhere(move):
            continue  # dispatched on another path than this move's; or a move where it already is
        # the receiver as written when it is a name (`model`, `self.lm`); the model loaded in
        # the same expression (`from_pretrained(...).to(device)`) is "the model"
        name = value_name(subject, f"`{move.subject_text}`" if "(" not in move.subject_text else "the model")
        source = where_from(program, subject)
        loaded = f" ({source})" if source else ""
        if subject.has(Fact.QUANTIZED8):
            what = (f"{name} is quantised to 8 bits with bitsandbytes{loaded} and already on the GPU: "
                    f"`.{move.method}()` raises `ValueError: .{move.method} is not supported for 8-bit "
                    f"bitsandbytes models`")
            confidence = Confidence.DEFINITE
        elif subject.has(Fact.QUANTIZED):
            what = (f"{name} is quantised{loaded} and already placed by accelerate: transformers refuses "
                    f"to move 4-bit bitsandbytes models with older bitsandbytes releases (`ValueError`), "
                    f"and the model is already where it runs")
            confidence = Confidence.LIKELY
        else:
            where = f"`{subject.place.device}`" if subject.place.device else "a device map"
            what = (f"{name} was placed by accelerate with {where}{loaded}, whose hooks move each block's "
                    f"inputs to that block's device: moving it again raises `RuntimeError: You can't move a "
                    f"model that has some modules offloaded to cpu or disk` when layers are offloaded, and "
                    f"on several GPUs pulls every layer onto one device against the hooks")
            confidence = Confidence.LIKELY
        yield Report(
            node=move.node,
            message=(
                f"{what}. Remove this `.{move.method}()` and move the inputs instead: "
                f"`inputs = inputs.to(model.device)`."
            ),
            confidence=confidence,
            ctx=move.ctx,
            evidence=evidence.subject(program, move) + (
                evidence.at(move.node, f"`.{move.method}()` moves it again here"),),
        )


def _onto_its_own_device(program: "Program", move: "Move") -> bool:
    """A model placed whole on one GPU (`device_map=0`, `{"": 0}`, a quantised model) moved to
    that same GPU: a no-op. An 8-bit bitsandbytes model refuses even that."""
    subject = move.subject
    if subject.has(Fact.QUANTIZED8):
        return False
    placed = _gpu(program, subject.place.ident)
    return bool(placed) and placed == _gpu(program, devices.split(devices.effective(move.target))[0])


def _gpu(program: "Program", ident: str) -> str:
    """A concrete GPU identity, `cuda` read as the current CUDA device (cuda:0 unless set)."""
    kind, form, _ = devices.parse(ident)
    if form == "current" and kind == "cuda":
        return current_device(program) or ""
    return ident if form == "index" else ""
