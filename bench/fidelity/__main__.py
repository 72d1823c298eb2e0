"""Entry point: python3 bench/fidelity [options] (bench/ goes on sys.path so that benchlib and this package
import as they do from the tests)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import benchlib as bl  # noqa: E402

from fidelity.cli import main  # noqa: E402

bl.main_wrapper(main)
