"""devlint: a static device-placement linter for PyTorch programs."""

__version__ = "0.1.0"
