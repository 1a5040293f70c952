"""Writing a file atomically: a temporary file beside it, renamed over it.

Readers (an editor, a concurrent devlint, a CI job) see the old content or the new one, never
half of it, and a run killed mid-write leaves the original intact. Used for fixed sources,
baselines and the result cache.

What the user's file is stays as it was: a symbolic link is written through (its target gets
the new content, the link stays a link); a file with several hard links is written in place, so
every name sees the new content (a rename would give one name a new file); the new file gets
the old one's mode and, where the process may set it, its owner and group (else it is written
in place, which keeps them). A read-only file is not written: `ReadOnlyFile` says so.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

# `.devlint-<pid>-<random>.tmp`: the writer's process id tells a later run whether it is stale
TEMP_PREFIX = ".devlint-"
TEMP_SUFFIX = ".tmp"


class ReadOnlyFile(PermissionError):
    """The file's permissions say nobody writes it (even a process that could, such as root's)."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EACCES, "the file is read-only", path)


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(path: str | Path, data: bytes, *, durable: bool = False) -> None:
    """Replace `path` with `data`. An existing file keeps its mode (a script stays executable),
    owner, hard links and symbolic links; a new one gets the usual mode for new files.
    `durable` flushes the data to disk before the rename (a user's source: the rename must
    never land before the content). Raises OSError (ReadOnlyFile for a read-only file)."""
    target = os.path.realpath(path)  # through a symbolic link: the link stays, its target changes
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "not a regular file", str(path))
    if info is not None and not info.st_mode & 0o222:
        raise ReadOnlyFile(str(path))
    if info is not None and info.st_nlink > 1:
        _write_in_place(target, data, durable)
        return
    mode = info.st_mode & 0o7777 if info is not None else _new_file_mode()
    directory = os.path.dirname(target)
    fd, temp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=TEMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if info is not None and not _same_owner(temp, info):
            os.unlink(temp)  # the new file cannot be given the old one's owner: keep the old file
            _write_in_place(target, data, durable)
            return
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise


def _same_owner(temp: str, info: os.stat_result) -> bool:
    """Give `temp` the owner and group of the file it replaces; False when that is not allowed."""
    mine = os.stat(temp)
    if (mine.st_uid, mine.st_gid) == (info.st_uid, info.st_gid):
        return True
    if not hasattr(os, "chown"):  # pragma: no cover - Windows has no owners to keep
        return True
    try:
        os.chown(temp, info.st_uid, info.st_gid)
    except OSError:
        return False
    return True


def _write_in_place(target: str, data: bytes, durable: bool) -> None:
    """Overwrite the file's own content (its inode, links, owner and mode stay). Not atomic: a
    reader may see it half written, so only for files a rename would change in other ways."""
    with open(target, "r+b") as handle:
        handle.write(data)
        handle.truncate()
        if durable:
            handle.flush()
            os.fsync(handle.fileno())
