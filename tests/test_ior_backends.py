"""The ior workload over every compiled data backend (posix, its alias psync, pvsync2, io_uring, libaio): a
file per rank and one file for all ranks (N-1), write, read and both checks, at queue depth 1 and 32, on
tmpfs and on disk, buffered and O_DIRECT. Every byte comes back, the byte and operation counts are exact,
and the run leaves nothing behind but the canary."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

import pytest

from .ior_helpers import assert_only_canary_left, place_canary, run_engine

KIB = 1024

# The backends the engine may have, and the library whose headers make the build include it.
OPTIONAL = {"io_uring": Path("/usr/include/liburing.h"), "libaio": Path("/usr/include/libaio.h")}
ALL = ["posix", "psync", "pvsync2", "io_uring", "libaio"]


@cache
def compiled_backends(engine: Path) -> frozenset[str]:
    """The names the engine lists in its refusal of an unknown backend (its registry, as compiled)."""
    proc = subprocess.run(
        [str(engine), "ior", "--np", "1", "-a", "no-such-backend", "-o", "/nonexistent/f"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    known = proc.stderr.split("(known: ", 1)[1].split(")", 1)[0]
    return frozenset(known.split(","))


@pytest.fixture(params=["tmpfs", "disk"])
def any_dir(request: pytest.FixtureRequest, tmpfs_dir: Path, disk_dir: Path) -> Path:
    return tmpfs_dir if request.param == "tmpfs" else disk_dir


def test_backends_with_their_library_installed_are_compiled(engine: Path) -> None:
    names = compiled_backends(engine)
    assert {"posix", "pvsync2", "null"} <= names
    for name, header in OPTIONAL.items():
        if header.exists():
            missing = f"{header} is installed but the engine has no {name} backend: {sorted(names)}"
            assert name in names, missing


@pytest.mark.parametrize("backend", ALL)
@pytest.mark.parametrize("layout", ["fpp", "n-to-1"])
@pytest.mark.parametrize("qd", [1, 32])
@pytest.mark.parametrize("direct", [False, True], ids=["buffered", "odirect"])
def test_every_backend_writes_and_reads_back_every_byte(
    engine: Path, any_dir: Path, backend: str, layout: str, qd: int, direct: bool
) -> None:
    real = "posix" if backend == "psync" else backend
    if real not in compiled_backends(engine):
        pytest.skip(f"{backend} is not compiled into this engine")
    canary = place_canary(any_dir)
    np_, xfer, block, segs = 2, 16 * KIB, 256 * KIB, 2
    args = ["-a", backend, "-t", "16k", "-b", "256k", "-s", str(segs), "-w", "-r", "-W", "-R", "-e", "-z"]
    args += ["--queue-depth", str(qd), "-o", str(any_dir / "data")]
    if layout == "fpp":
        args.append("-F")
    if direct:
        args.append("--posix.odirect")
    res = run_engine(engine, args, np=np_)
    if direct and res.returncode != 0 and "Invalid argument" in res.stderr:
        pytest.skip(f"this file system refuses O_DIRECT: {res.stderr.strip()}")
    assert res.returncode == 0, res.stderr
    doc = res.doc
    assert doc is not None and doc["status"] == "ok" and doc["error"] is None
    assert doc["config"]["api"] == backend
    expect = np_ * segs * block
    assert [ph["name"] for ph in doc["phases"]] == ["write", "read"]
    for ph in doc["phases"]:
        assert ph["bytes"] == expect
        assert ph["ops"] == expect // xfer
        assert ph["latency_ns"]["count"] == expect // xfer
        assert ph["latency_ns"]["min"] > 0
        assert ph["verify"]["bytes_checked"] == expect
        assert ph["verify"]["errors"] == 0
        assert ph["cache"]["o_direct"] is direct
        assert [r["bytes"] for r in ph["per_rank"]] == [expect // np_] * np_
    assert_only_canary_left(any_dir, canary)


def test_unknown_backend_exits_2_naming_the_option(engine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(engine, ["-a", "spdk", "-o", str(tmpfs_dir / "f")])
    assert res.returncode == 2
    assert "-a" in res.stderr and "spdk" in res.stderr
    assert "posix" in res.stderr
    assert list(tmpfs_dir.iterdir()) == []


@pytest.mark.parametrize("backend", ["io_uring", "libaio"])
def test_submit_batch_sets_the_transfers_per_submit_call(engine: Path, disk_dir: Path, backend: str) -> None:
    """--submit-batch (fio's iodepth_batch_submit): 1, the default, hands each transfer over with its own
    system call; N at most N per call; 0 every free slot at once. The phase's `backend` object counts the
    calls, summed over both ranks."""
    if backend not in compiled_backends(engine):
        pytest.skip(f"{backend} is not compiled into this engine")
    base = ["-a", backend, "--queue-depth", "16", "-t", "4k", "-b", "1m", "-w", "-r", "-F", "--posix.odirect"]
    calls = {}
    for batch in (None, "1", "4", "0"):
        args = base + (["--submit-batch", batch] if batch is not None else [])
        res = run_engine(engine, [*args, "-o", str(disk_dir / f"b{batch}")], np=2)
        if res.returncode != 0 and "Invalid argument" in res.stderr:
            pytest.skip(f"this file system refuses O_DIRECT: {res.stderr.strip()}")
        assert res.returncode == 0, res.stderr
        assert res.doc is not None and res.doc["config"]["submit-batch"] == int(batch or 1)
        for ph in res.doc["phases"]:
            assert ph["backend"]["requests"] == ph["ops"] == 2 * 256
        calls[batch] = [ph["backend"]["submit_calls"] for ph in res.doc["phases"]]
    assert calls[None] == calls["1"] == [512, 512]
    assert all(512 // 4 <= c < 512 for c in calls["4"])
    assert all(c < 512 for c in calls["0"])


def test_a_synchronous_backend_has_no_backend_counts(engine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(engine, ["-a", "posix", "-t", "4k", "-b", "64k", "-w", "-o", str(tmpfs_dir / "f")])
    assert res.returncode == 0, res.stderr
    assert res.doc is not None and [ph["backend"] for ph in res.doc["phases"]] == [None]


@pytest.mark.parametrize("value", ["-1", "4097", "x"])
def test_a_bad_submit_batch_exits_2_naming_the_option(engine: Path, tmpfs_dir: Path, value: str) -> None:
    res = run_engine(engine, ["-a", "io_uring", "--submit-batch", value, "-o", str(tmpfs_dir / "f")])
    assert res.returncode == 2
    assert "--submit-batch" in res.stderr
    assert list(tmpfs_dir.iterdir()) == []
