"""Errors the command line turns into exit codes (devlint.cli says which)."""

from __future__ import annotations

__all__ = ["UsageProblem"]


class UsageProblem(Exception):
    """A usage or configuration error found by devlint itself (exit 2)."""
