"""iolens supports the oldest Python that pyproject.toml names (3.10): every module of the package must import
there. ruff checks the syntax for that target, not what the standard library accepts at run time (a regular
expression with possessive quantifiers compiles on 3.11 and raises on 3.10, at import)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Imports every module of the source tree's package. A module that needs a package this interpreter lacks
# (rich, numpy: the floor Python has none installed) is passed over; anything else it raises is a failure.
PROBE = r"""
import importlib, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import iolens
done, failed = [], []
def walk(path, prefix):
    for m in pkgutil.iter_modules(path, prefix):
        try:
            mod = importlib.import_module(m.name)
        except ModuleNotFoundError as e:
            if e.name is None or e.name.split(".")[0] == "iolens":
                failed.append(f"{m.name}: {e!r}")
            continue
        except Exception as e:
            failed.append(f"{m.name}: {e!r}")
            continue
        done.append(m.name)
        if m.ispkg:
            walk(mod.__path__, m.name + ".")
walk(iolens.__path__, "iolens.")
print(len(done))
for f in failed:
    print("FAILED", f)
"""


def floor_version() -> tuple[int, int]:
    text = (REPO / "pyproject.toml").read_text()
    m = re.search(r'requires-python\s*=\s*">=(\d+)\.(\d+)"', text)
    assert m is not None, "pyproject.toml names no requires-python floor"
    return int(m[1]), int(m[2])


def floor_python(major: int, minor: int) -> str | None:
    """An interpreter of exactly that version: on PATH, or one pyenv installed."""
    name = f"python{major}.{minor}"
    candidates = [shutil.which(name)]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{root}/versions/{major}.{minor}.*/bin/python"))
    for c in candidates:
        if c is None:
            continue
        probe = [c, "-c", "import sys; print(sys.version_info[:2])"]
        r = subprocess.run(probe, capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip() == str((major, minor)):
            return c
    return None


def test_every_module_imports_on_the_oldest_supported_python() -> None:
    major, minor = floor_version()
    python = floor_python(major, minor)
    if python is None:
        pytest.skip(f"no Python {major}.{minor} on this machine")
    cmd = [python, "-c", PROBE, str(REPO / "python")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [ln for ln in lines[1:] if ln.startswith("FAILED")] == []
    # The monitor, io500 and profile-reader modules need only the standard library: they must have been
    # imported, not passed over.
    assert int(lines[0]) >= 30, r.stdout
