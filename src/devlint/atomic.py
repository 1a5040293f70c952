"""Writing a file atomically: a temporary file beside it, renamed over it.

Readers (an editor, a concurrent devlint, a CI job) see the old content or the new one, never
half of it, and a run killed mid-write leaves the original intact. Used for fixed sources,
baselines and the result cache.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# `.devlint-<pid>-<random>.tmp`: the writer's process id tells a later run whether it is stale
TEMP_PREFIX = ".devlint-"
TEMP_SUFFIX = ".tmp"


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(path: str | Path, data: bytes, *, durable: bool = False) -> None:
    """Replace `path` with `data`. An existing file keeps its mode (a script stays executable);
    a new one gets the usual mode for new files. `durable` flushes the data to disk before the
    rename (a user's source: the rename must never land before the content)."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        mode = _new_file_mode()
    fd, temp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
