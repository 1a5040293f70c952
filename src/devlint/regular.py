"""Reading a file devlint did not write: regular files only, and never more than a cap.

A path named `x.py` may be a FIFO (opening it waits for a writer forever), a character device
(`/dev/zero` never ends) or a file that grows while it is read. Every file devlint reads for
its content (checked sources, imported project files, cache entries) goes through
`read_regular`: it opens without blocking, refuses anything that is not a regular file, and
reads at most `limit` bytes, so the worst input costs one bounded read. `digest` names the
bytes read, so that what the result cache records is what was analysed.
"""

from __future__ import annotations

import hashlib
import os
import stat

__all__ = ["NotRegularFile", "TooLarge", "read_regular", "digest"]


def digest(data: bytes) -> str:
    """Content digest of bytes read (the result cache's key; fast, and collisions are not a
    practical concern)."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class NotRegularFile(OSError):
    """The path is a FIFO, a device, a socket: nothing devlint reads."""


class TooLarge(OSError):
    """The file holds more than the caller's cap; `size` is what fstat said (or the cap + 1)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"larger than the cap ({size} bytes)")
        self.size = size


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (TooLarge beyond that).

    Raises NotRegularFile for anything else (IsADirectoryError for a folder, as open() does),
    and the usual OSError subclasses for a missing or unreadable path."""
    with open(path, "rb", buffering=0, opener=_without_blocking) as handle:
        info = os.fstat(handle.fileno())
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(f"not a regular file: {os.fspath(path)}")
        if info.st_size > limit:
            raise TooLarge(info.st_size)
        data = handle.read(limit + 1)  # one byte more than allowed tells a file that grew past the cap
        if data is None:  # pragma: no cover - a regular file never says "would block"
            data = b""
        if len(data) > limit:
            raise TooLarge(len(data))
        return data


def _without_blocking(path: str, flags: int) -> int:
    """Open without waiting: a FIFO opens at once (and is then refused) instead of waiting for a writer."""
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0))
