"""`devlint server`: the Language Server Protocol over standard input and output, for editors.

Built on pygls (and lsprotocol's types), which are imported only when the server starts, so
`devlint check` never pays for them. The analysis is devlint's own pipeline on the editor's
unsaved text (devlint.server.session); devlint.server.convert says it in LSP's terms and
devlint.server.lsp holds the protocol side: diagnostics on open, change (debounced) and save,
code actions (each fix, unsafe ones titled so, `# noqa` suppression, fix all safe fixes), the
same as `workspace/executeCommand` commands, and hover with the rule's explanation.
"""

from __future__ import annotations

import gc
import logging
import sys

__all__ = ["serve"]


def serve() -> int:
    """Serve one client on stdin/stdout until it exits; returns the process exit code."""
    try:
        from devlint.server.lsp import build
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        print(f"devlint: error: `devlint server` needs pygls, which is not installed here ({exc}); "
              "reinstall devlint (`pip install .` in its checkout) to get it.", file=sys.stderr)
        return 2
    # a check allocates hundreds of thousands of syntax nodes: with the default thresholds the
    # collector runs often and walks the parses it keeps each time (a third of a check); fewer,
    # larger young collections are what runner._Collector sets for `check` too
    gc.set_threshold(20_000, 50, 50)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="devlint server: %(levelname)s: %(message)s")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # the protocol owns standard output: anything printed by mistake goes to the log instead
    sys.stdout = sys.stderr
    build().start_io(stdin, stdout)
    return 0
