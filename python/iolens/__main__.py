"""`python -m iolens` runs the same CLI as the `iolens` console script."""

import sys

from iolens.entry import main

if __name__ == "__main__":
    sys.exit(main())
