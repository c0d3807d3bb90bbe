"""``python -m kiln info`` and ``python -m kiln cache list|prune|clear``: see :mod:`kiln.cli`."""

import sys

from kiln.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
