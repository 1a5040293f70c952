"""The property tests of tests/test_properties.py, run longer than the suite runs them.

    python bench/properties.py --examples 2000        # every property, 2000 examples each
    python bench/properties.py --examples 500 -k mutated

The suite keeps each property to a few dozen examples so that it stays fast; a longer run
explores many more generated and mutated programs. A failure prints the smallest program
hypothesis found that makes devlint raise: that is a bug to fix (and a case for
tests/test_bad_input.py), never one to filter out.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=1000, help="examples per property (default 1000)")
    parser.add_argument("-k", dest="select", default=None, help="run only the properties matching this pytest -k")
    args = parser.parse_args(argv)
    if args.examples < 1:
        parser.error("--examples must be at least 1")
    env = dict(os.environ, DEVLINT_PROPERTY_EXAMPLES=str(args.examples))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0",
               str(ROOT / "tests" / "test_properties.py")]
    if args.select:
        command += ["-k", args.select]
    return subprocess.call(command, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
