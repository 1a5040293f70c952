"""Fixes: the repairs rules attach to findings, and applying them without breaking a file.

- `edits.py`: libcst nodes in, source edits out (the building blocks of every repair);
- `repairs.py`: the repair each rule attaches to its findings, built from the analysis' events;
- `apply.py`: applying a file's edits, re-checking the result, writing it atomically;
- `run.py`: `check --fix` / `--diff` over the files of a run.
"""
