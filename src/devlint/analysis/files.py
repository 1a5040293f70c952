"""Which file a path expression names, and what a saved file holds.

DEV201 asks whether a checkpoint could have been saved from a GPU. A file the same program
writes with `torch.save` earlier in the run was written on the machine that reads it; a file
it writes from host values only (a cache of `.cpu()` tensors, lists of strings) holds no CUDA
tensor wherever it was written. Both need the load's path matched with the save's: by the
literal it holds when the analysis knows it, else by the expression as written (`PATH`,
`os.path.join(root, name)`). A file object from `open(path, "wb")` names its path. The
analysis records the key with each load and save (`Site.names`); what a save holds is
`values.holds_only_host`.
"""

from __future__ import annotations

from devlint.analysis.events import Context
from devlint.analysis.values import UNKNOWN, Value
from devlint.analysis.vocabulary import known_str

_OPENED = "opened="
DIRECTORY = "dir="  # the key of a directory a checkpoint handler writes into


def path_key(value: Value, text: str, ctx: Context) -> str:
    """What identifies the file an argument names: its literal text, the path `open()` was
    given, else the expression as written (without layout) in the function it is written in
    (`save_path` of `save()` is not `save_path` of `load()`), or in the class when it reads the
    instance (`os.path.join(self.root, self.file)` in two methods)."""
    for fact in value.facts:
        if fact.startswith(_OPENED):
            return fact[len(_OPENED):]
    literal = known_str(value)
    if literal is not None:
        return "=" + literal
    written = "".join(text.split())
    scope = ctx.class_name if ctx.class_name and "self." in written else ctx.function
    return f"{ctx.path}:{scope}:{written}"


def opened(path: Value, text: str, ctx: Context) -> Value:
    """The file object `open(path, ...)` returns: it remembers which file it is."""
    return UNKNOWN.with_facts(_OPENED + path_key(path, text, ctx))


def directory_key(value: Value, text: str) -> str:
    """What identifies a directory a checkpoint handler writes into: its literal path (without a
    leading `./`), else the expression as written; a load whose path names it (`torch.load(
    latest("./models"))`, `os.path.join(args.out_dir, "best.pt")`) reads a file written there."""
    literal = known_str(value)
    written = literal.removeprefix("./").rstrip("/") if literal is not None else "".join(text.split())
    return DIRECTORY + written if len(written) >= 3 else ""

