"""Library semantics: what calls to the outside world (torch, transformers, accelerate,
torchvision, NumPy, argparse, os.environ, builtins) do to abstract values.

Each module holds the handlers for one family of libraries; `dispatch.py` holds the ordered
table of (matcher, handler) rows that picks the handler for a call. Matchers come from the
knowledge tables (devlint/knowledge/); handlers hold no literal qualified names. Adding a
library is adding rows, plus at most one handler.
"""
