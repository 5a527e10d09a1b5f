"""``python -m algorithms``: the command line (:mod:`algorithms._cli.main`)."""

import sys

from ._cli.main import main

if __name__ == "__main__":
    sys.exit(main())
