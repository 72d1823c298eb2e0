"""`python -m iolens.site ARGS` = `iolens site ARGS`, without the rest of the command line's imports: the
Epilog runs at every job's end, and starting iolens's whole CLI would cost it ~0.15 s more."""

import sys

from iolens.site.command import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
