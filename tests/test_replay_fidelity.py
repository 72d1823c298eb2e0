"""Replay fidelity on the advice-quality suite (tests/data/advice_suite/): each program or small C, MPI or
HDF5 code run under `iolens profile` as the suite runs it, then `iolens replay check LOGS --dir WORK --json`
(its kernel made, run under the profiler, the two profiles compared). Every quantity the check lists must be
within its tolerance except the I/O time, which depends on the machine's load here
(bench/replay_fidelity.py records it). `make test-replay` runs it (under a minute on 2 cores: not part of
test-python)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .advice_suite import MPI_ENV, Case, CaseSkipped, load_cases, run_case
from .conftest import ProfileBuild, require_mpirun

# The cases replayed (15 of the suite's 22: real programs, C codes, MPI-IO and HDF5 on 2 ranks), and the
# scale each is replayed at (dd's million 100-byte writes at a tenth: the scaling is checked too).
REPLAYED = {
    "python-imports": 1.0,
    "tar-small-tree": 1.0,
    "sqlite3-autocommit": 1.0,
    "sqlite3-one-transaction": 1.0,
    "dd-small-blocks": 0.1,
    "cp-large-file": 1.0,
    "gcc-hello": 1.0,
    "small-random-reads": 1.0,
    "fsync-every-write": 1.0,
    "many-small-files": 1.0,
    "stat-storm-threads": 1.0,
    "mpiio-collective": 1.0,
    "mpi-funnel": 1.0,
    "hdf5-collective": 1.0,
    "mpiio-collective-pieces": 1.0,
}
CASES = [c for c in load_cases() if c.name in REPLAYED]


@pytest.fixture(scope="module")
def work(profile_build: ProfileBuild) -> Iterator[tuple[Path, Path]]:
    # On /tmp, a disk here, as the suite's cases assume.
    with tempfile.TemporaryDirectory(prefix="iolens-replay-suite-", dir="/tmp") as tmp:
        root, bins = Path(tmp) / "work", Path(tmp) / "bin"
        root.mkdir()
        bins.mkdir()
        yield root, bins


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_replayed_profile_matches_the_original(
    case: Case, work: tuple[Path, Path], profile_build: ProfileBuild, iolens_bin: list[str]
) -> None:
    if case.ranks > 1:
        require_mpirun()
    root, bins = work
    try:
        run_case(case, root, bins, iolens_bin, profile_build.lib)
    except CaseSkipped as exc:
        pytest.skip(f"{case.name}: {exc}")
    logs = root / case.name / "iolens-logs"
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env["IOLENS_PROFILE_LIB"] = str(profile_build.lib)
    env.update(MPI_ENV)
    before = sorted(p.name for p in (root / case.name).iterdir())
    scale = REPLAYED[case.name]
    r = subprocess.run(
        [*iolens_bin, "replay", "check", str(logs), "--dir", str(root / case.name), "--scale", str(scale),
         "--json"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    rows = doc["rows"]
    failed = [r for r in rows if not r["pass"] and r["group"] != "time"]
    assert failed == [], f"{case.name}: out of tolerance: {failed}"
    # The comparison is not empty: the case moved data and the replay did too.
    data = {r["quantity"]: r for r in rows if r["group"] == "data"}
    moved = data["bytes_read"]["replayed"] + data["bytes_written"]["replayed"]
    assert moved > 0
    assert any(r["group"] in ("read sizes", "write sizes") for r in rows)
    # The run directory is gone: the case's directory holds what it held before.
    assert sorted(p.name for p in (root / case.name).iterdir()) == before
