"""`python -m devlint`: the same as the `devlint` command."""

import os
import sys

if __name__ == "__main__":
    # `python -m` puts the current folder first on sys.path, and that is usually the folder being
    # checked: a `click.py` or `json.py` of the user's would then be imported, and run, in place of
    # the real module. devlint never imports what it checks, so the folder comes off the path
    # before anything else is imported (as `python -P` would do).
    try:
        if sys.path and (sys.path[0] == "" or os.path.abspath(sys.path[0]) == os.getcwd()):
            del sys.path[0]
    except OSError:  # the current folder was deleted
        pass

from devlint.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
