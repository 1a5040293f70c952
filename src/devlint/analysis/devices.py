"""Device identities: which device a device expression names, as far as the source tells.

A `Placement` keeps the device expression as written (`device`, `"cuda:1"`, `args.device`) for
messages, and an *identity*: a short normalised string that says what the expression resolves
to, so that two expressions can be told provably the same (silent) from possibly different
(DEV111, DEV112). The grammar is small on purpose:

- ``""``: not known (nothing is claimed about it)
- ``"=text"``: opaque, named by its normalised text (`=args.device`, `=accelerator.device`):
  equal to itself, and never claimed to differ from anything else
- ``"cuda"``: the *current* device of that type (`"cuda"`, `.cuda()`, `torch.device("cuda")`)
- ``"cuda:1"``: a literal index
- ``"cuda:{rank}"``: an index given by an expression (`f"cuda:{rank}"`, `.cuda(rank)`, `.to(rank)`)
- ``"<gpu>|cpu"``: chosen at run time between a GPU identity and the CPU by whether a GPU is
  available (`"cuda" if torch.cuda.is_available() else "cpu"`); ``"<gpu>|cpu@args.cuda"`` when
  the choice is made by another condition (a user's switch); ``"?|cpu"`` when the GPU side is
  not known

The rules decide what counts as a disagreement; the analysis only computes identities.
"""

from __future__ import annotations

import re
from devlint.analysis.values import Placement, Where

GPU_TYPES = ("cuda", "mps", "xpu", "npu", "hpu", "xla", "meta")
FALLBACK = "|cpu"
_INDEXED = re.compile(r"^([a-z]+):(\d+|\{.+\})$")


def norm(text: str) -> str:
    """Expression text without whitespace, so `cuda:{ rank }` and `cuda:{rank}` are one."""
    return re.sub(r"\s+", "", text)


def from_string(text: str) -> str:
    """Identity of a device string such as "cuda", "cuda:1" (empty for anything else)."""
    t = text.strip().lower()
    if t in GPU_TYPES:
        return t
    m = re.fullmatch(r"([a-z]+):(\d+)", t)
    if m and m.group(1) in GPU_TYPES:
        return f"{m.group(1)}:{int(m.group(2))}"
    return ""


def indexed(device_type: str, index: int | None, expr_text: str = "") -> str:
    """`torch.device("cuda", i)`, `.cuda(i)`, `.to(i)`: a literal index or a symbolic one."""
    if index is not None:
        return f"{device_type}:{index}"
    if expr_text:
        return f"{device_type}:{{{norm(expr_text)}}}"
    return ""


def opaque(text: str) -> str:
    return f"={norm(text)}" if text else ""


_AVAILABILITY = re.compile(r"is_available|device_count")


def with_fallback(ident: str, condition: str | None = None) -> str:
    """The identity of a choice between `ident` (a GPU) and the CPU, made by `condition`
    (the test text; None when not known)."""
    if FALLBACK in ident:
        return ident
    gpu = "?" if not ident or ident.startswith("=") else ident
    if condition is not None and _AVAILABILITY.search(condition) and "not" not in condition.split("(")[0]:
        return gpu + FALLBACK
    return f"{gpu}{FALLBACK}@{_normalize_test(condition) if condition else '?'}"


def fallback_condition(ident: str) -> str | None:
    """The test that chooses between the GPU and the CPU in a fallback identity (`args.cuda`
    in "cuda|cpu@args.cuda"); None when the choice is made by availability."""
    if FALLBACK + "@" not in ident:
        return None
    condition = ident.split(FALLBACK + "@", 1)[1]
    return None if condition == "?" else condition


def _normalize_test(text: str) -> str:
    return " ".join(text.split())


def split(ident: str) -> tuple[str, bool]:
    """(GPU part, has a CPU fallback)."""
    if FALLBACK in ident:
        return ident[: ident.index(FALLBACK)], True
    return ident, False


def effective(place: Placement, availability: "frozenset[str] | set[str]" = frozenset()) -> str:
    """The identity of where a value is: a value on a device only when a condition holds
    (moved under `if torch.cuda.is_available():`) is on that device or the CPU.

    `availability` holds the normalised texts of conditions the program computed from
    `torch.cuda.is_available()` (`use_cuda = torch.cuda.is_available()`): a choice made by one of
    them is a choice by availability."""
    ident = place.ident
    if place.where is Where.COND and ident and FALLBACK not in ident:
        ident = with_fallback(ident, place.cond or None)
    if availability and FALLBACK + "@" in ident:
        condition = ident.split(FALLBACK + "@", 1)[1]
        if condition in availability:
            ident = ident.split("@", 1)[0]
    return ident


def falls_back_when_no_gpu(ident: str) -> bool:
    """The identity is a GPU when one is available and the CPU otherwise, decided by
    `torch.cuda.is_available()` itself (not by a user's switch)."""
    return ident.endswith(FALLBACK)


def is_opaque(ident: str) -> bool:
    return not ident or ident.startswith("=")


def gpu_only(ident: str) -> bool:
    """True when the identity names a GPU with no CPU fallback (it fails on a CPU-only machine)."""
    if is_opaque(ident) or FALLBACK in ident:
        return False
    return ident.split(":", 1)[0] in GPU_TYPES and not ident.startswith("meta")


def is_cuda(ident: str) -> bool:
    gpu, _ = split(ident)
    return gpu == "cuda" or gpu.startswith("cuda:")


def parse(gpu: str) -> tuple[str, str, str]:
    """A GPU identity as (type, form, index): form is current | index | symbol | unknown."""
    if is_opaque(gpu) or gpu == "?":
        return "", "unknown", ""
    if gpu in GPU_TYPES:
        return gpu, "current", ""
    m = _INDEXED.match(gpu)
    if m:
        index = m.group(2)
        return m.group(1), ("symbol" if index.startswith("{") else "index"), index
    return "", "unknown", ""


def gpus_disagree(a: str, b: str, current: str | None) -> bool:
    """Two GPU identities (no fallback part) that can name different devices.

    `current` is the identity of the current CUDA device as far as the program tells: "cuda:0"
    when it never calls `torch.cuda.set_device`, "cuda:<k>" when every call sets the literal k,
    None when it sets something the analysis cannot read (then nothing is claimed about it).
    """
    if a == b:
        return False
    ta, fa, ia = parse(a)
    tb, fb, ib = parse(b)
    if "unknown" in (fa, fb):
        return False
    if ta != tb:
        return True
    if ta != "cuda":  # mps & co. have one device: same type, same device
        return False
    if fa == "current" and fb == "current":
        return False
    if "current" in (fa, fb):
        other_form, other_index = (fb, ib) if fa == "current" else (fa, ia)
        if current is None:
            return False
        _, cur_form, cur_index = parse(current)
        if other_form == "index":
            return cur_form == "index" and cur_index != other_index
        # a symbolic index against the current device: they differ whenever the index is not
        # the current one, which nothing in the program ensures unless it calls set_device
        return current == "cuda:0"
    if fa == "index" and fb == "index":
        return ia != ib
    return False  # a symbolic index against a literal one or another symbol: not known


def may_disagree(a: str, b: str, current: str | None = "cuda:0") -> bool:
    """Two device identities that can resolve to different devices on some machine."""
    if not a or not b or a == b or is_opaque(a) or is_opaque(b):
        return False
    ga, fa = split(a)
    gb, fb = split(b)
    if fa != fb:
        # one side falls back to the CPU, the other requires the GPU: on a CPU-only machine
        # they disagree (the GPU-only side fails or the two meet across devices)
        return True
    return gpus_disagree(ga, gb, current)


def describe(ident: str) -> str:
    """Plain words for messages: "the current CUDA device", "cuda:1", "cuda or the CPU"."""
    gpu, fallback = split(ident)
    t, form, index = parse(gpu)
    if form == "current":
        words = f"the current {t.upper() if t != 'cuda' else 'CUDA'} device"
    elif form == "index":
        words = f"{t}:{index}"
    elif form == "symbol":
        words = f"{t}:{index}"
    else:
        words = "a GPU"
    if fallback:
        return f"{words} when one is available, else the CPU"
    return words
