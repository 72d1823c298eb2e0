"""Shared fixtures: where iolens and its engine are, MPI's environment, and scratch directories on a
tmpfs and on a disk file system (the engine behaves differently on each: O_DIRECT, page cache)."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

try:
    import iolens  # noqa: F401  (the installed package, as `make test` runs it)
except ImportError:
    # A checkout without `pip install .`: the unit tests still run from the source tree (no engine).
    sys.path.insert(0, str(REPO / "python"))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")])
    )

from iolens.engine import EngineNotFound, find_engine  # noqa: E402

MEMORY_FS = {"tmpfs", "ramfs"}

# The statistics-database fixtures (a private PostgreSQL server, a database per backend) and the test
# cluster (tests/cluster: a real Slurm cluster of namespaces on this machine).
pytest_plugins = ["tests.db_helpers", "tests.cluster.fixtures"]


def fs_type(path: str | Path) -> str:
    """File system type of the mount holding path, from /proc/mounts (longest matching mount point)."""
    target = os.path.realpath(path)
    best, kind = "", "unknown"
    with open("/proc/mounts", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 3:
                continue
            mnt = fields[1].replace("\\040", " ")
            inside = target == mnt or target.startswith(mnt.rstrip("/") + "/")
            if inside and len(mnt) >= len(best):
                best, kind = mnt, fields[2]
    return kind


@pytest.fixture(scope="session")
def iolens_bin() -> list[str]:
    """Command prefix that runs the installed `iolens` (the venv's console script when there is one)."""
    script = Path(sys.executable).parent / "iolens"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "iolens"]


@pytest.fixture(scope="session")
def engine() -> Path:
    """Path of the iolens-bench engine (IOLENS_BENCH, else the one installed in the package).

    Fails rather than skips: a missing engine is a broken install, not an unsupported machine.
    """
    try:
        return find_engine()
    except EngineNotFound as exc:
        pytest.fail(f"engine not available: {exc}")


def require_mpirun() -> None:
    """Skips a test that needs mpirun when it is missing, or fails it when IOLENS_REQUIRE_MPI=1 (CI sets it:
    there the MPI tests must run, not quietly vanish)."""
    if shutil.which("mpirun") is None:
        if os.environ.get("IOLENS_REQUIRE_MPI") == "1":
            pytest.fail("mpirun not found, and IOLENS_REQUIRE_MPI=1 says the MPI tests must run")
        pytest.skip("mpirun not found")


@pytest.fixture(scope="session")
def mpi_env() -> dict[str, str]:
    """Environment for running under mpirun in tests; skips when mpirun is missing (fails under
    IOLENS_REQUIRE_MPI=1).

    Running as root and oversubscribing a 2-core machine are test-environment choices, never product
    defaults, so they live here and not in iolens.launch.
    """
    require_mpirun()
    env = dict(os.environ)
    env.update(
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
        # PRRTE (Open MPI 5) reads its own variable for the same setting.
        PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe",
    )
    return env


def _scratch(parent: Path) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="iolens-test-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


MountTmpfs = Callable[..., Path]


@pytest.fixture
def mount_tmpfs(tmp_path: Path) -> Iterator[MountTmpfs]:
    """mount_tmpfs(size, mode=None) -> a directory with a fresh tmpfs of that size on it (a full file
    system made to order, for the fault tests); all are unmounted afterwards. Needs root: skips otherwise."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def mount(size: str, mode: str | None = None) -> Path:
        d = tmp_path / f"tmpfs{len(mounted)}"
        d.mkdir()
        options = f"size={size}" + (f",mode={mode}" if mode else "")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d)], capture_output=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
        mounted.append(d)
        return d

    try:
        yield mount
    finally:
        for d in reversed(mounted):
            # Lazily: a test that failed may have left a process inside; the mount goes when it does.
            subprocess.run(["umount", "-l", str(d)], check=False)


@pytest.fixture
def tmpfs_dir() -> Iterator[Path]:
    """A fresh, empty directory on a tmpfs (/dev/shm), removed afterwards."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or fs_type(shm) not in MEMORY_FS:
        pytest.skip("/dev/shm is not a tmpfs here")
    yield from _scratch(shm)


@pytest.fixture
def disk_dir() -> Iterator[Path]:
    """A fresh, empty directory on a disk-backed file system (not tmpfs), removed afterwards."""
    candidates = [Path(os.environ.get("IOLENS_TEST_DISK_DIR", "/var/tmp")), REPO / "build" / "test-scratch"]
    for parent in candidates:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if fs_type(parent) not in MEMORY_FS and os.access(parent, os.W_OK):
            yield from _scratch(parent)
            return
    pytest.skip("no disk-backed writable directory found")


def sample_document() -> dict[str, Any]:
    """A complete, valid schema_version 1 document (two ranks, write+read, one iteration, verify on)."""
    mib64 = 64 * 1024 * 1024

    def latency(buckets: bool) -> dict[str, Any]:
        lat: dict[str, Any] = {
            "count": 128, "min": 150_000, "mean": 410_000.5, "p50": 380_000, "p90": 600_000,
            "p99": 1_900_000, "p99_9": 2_400_000, "max": 2_500_000,
        }  # fmt: skip
        if buckets:
            lat["buckets"] = [[147_456, 155_647, 3], [376_832, 393_215, 120], [2_490_368, 2_555_903, 5]]
        return lat

    def phase(name: str) -> dict[str, Any]:
        p: dict[str, Any] = {
            "name": name,
            "iteration": 0,
            "bytes": 2 * mib64,
            "ops": 128,
            "times": {"open_s": 0.001, "xfer_s": 0.25, "close_s": 0.01, "total_s": 0.261},
            "bw_bytes_per_s": 2 * mib64 / 0.261,
            "ops_per_s": 128 / 0.25,
            "latency_ns": latency(True),
            "per_rank": [
                {"rank": 0, "bytes": mib64, "ops": 64, "xfer_s": 0.25},
                {"rank": 1, "bytes": mib64, "ops": 64, "xfer_s": 0.24},
            ],
            "stonewall": None,
            "cache": {"o_direct": False},
            "fsync": {"on_close": True, "per_write": False},
            "verify": {
                "bytes_checked": 2 * mib64,
                "errors": 0,
                "first_bad_offset": None,
                "first_bad_rank": None,
            },
        }
        if name == "read":
            p["cache"] = {
                "o_direct": False,
                "policy": "evict",
                "evicted": True,
                "note": "posix_fadvise DONTNEED",
            }
        return p

    def summary(name: str) -> dict[str, Any]:
        bw = 2 * mib64 / 0.261
        return {
            "name": name, "iterations": 1, "bw_max_bytes_per_s": bw, "bw_min_bytes_per_s": bw,
            "bw_mean_bytes_per_s": bw, "bw_stddev_bytes_per_s": 0.0, "ops_max_per_s": 512.0,
            "ops_min_per_s": 512.0, "ops_mean_per_s": 512.0, "ops_stddev_per_s": 0.0, "time_mean_s": 0.261,
            "bytes": 2 * mib64, "latency_ns": latency(False),
        }  # fmt: skip

    return {
        "schema_version": 1,
        "tool": "iolens",
        "version": "0.1.0",
        "workload": "ior",
        "status": "ok",
        "error": None,
        "command": [
            "iolens-bench",
            "ior",
            "-F",
            "-t",
            "1m",
            "-b",
            "64m",
            "-w",
            "-r",
            "-W",
            "-R",
            "--np",
            "2",
        ],
        "started_at": "2024-05-01T10:00:00Z",
        "ended_at": "2024-05-01T10:00:01Z",
        "host": {"hostname": "node01", "kernel": "6.1.0"},
        "comm": {"kind": "local", "ranks": 2, "nodes": 1, "tasks_per_node": 2, "max_clock_offset_ns": 0},
        "build": {"mpi": True, "liburing": True},
        "config": {
            "api": "posix",
            "file-per-proc": True,
            "transfer-size": 1048576,
            "block-size": mib64,
            "segment-count": 1,
            "repetitions": 1,
            "test-file": "/tmp/x/testfile",
        },  # fmt: skip
        "target": {"path": "/tmp/x/testfile", "file_system": "ext4", "files": 2},
        "phases": [phase("write"), phase("read")],
        "summary": [summary("write"), summary("read")],
    }


@pytest.fixture
def sample_doc() -> dict[str, Any]:
    """A fresh deep copy of sample_document(), free for a test to break."""
    return copy.deepcopy(sample_document())


@dataclass(frozen=True)
class ProfileBuild:
    """The profiler runtime and the programs its tests run under it (native/profiler/tests)."""

    lib: Path
    bin_dir: Path

    def program(self, name: str) -> Path:
        path = self.bin_dir / name
        if not path.is_file():
            pytest.skip(f"{path} was not built")
        return path


@pytest.fixture(scope="session")
def profile_build() -> ProfileBuild:
    """libiolens-profile.so and the test programs from a CMake build of native/ with IOLENS_TESTS=ON:
    IOLENS_PROFILE_BUILD names the build directory (default build/native, which `make test` builds);
    IOLENS_PROFILE_LIB may name the library on its own. Fails rather than skips when they are missing."""
    build = Path(os.environ.get("IOLENS_PROFILE_BUILD", REPO / "build" / "native"))
    lib = Path(os.environ.get("IOLENS_PROFILE_LIB", build / "libiolens-profile.so"))
    bin_dir = build / "profiler-tests"
    if not lib.is_file():
        pytest.fail(f"profiler runtime not built: {lib} (run `make native`, or set IOLENS_PROFILE_BUILD)")
    if not (bin_dir / "profile_calls").is_file():
        pytest.fail(f"profiler test programs not built in {bin_dir} (configure native/ with IOLENS_TESTS=ON)")
    return ProfileBuild(lib.resolve(), bin_dir.resolve())


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """The session's one Chromium (Debian's, driven by Playwright's sync API, which allows one instance per
    thread at a time: every browser test shares this one). Missing in CI is a failure (.ci/run has it)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from .web_helpers import chromium

    exe = chromium()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()
