"""`python -m devlint`: the same as the `devlint` command."""

from devlint.cli import main

if __name__ == "__main__":
    main()
