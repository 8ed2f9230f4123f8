"""``python -m fastspectral``: the command line (see :mod:`fastspectral.cli`)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
