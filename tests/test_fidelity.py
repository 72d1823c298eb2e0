"""bench/fidelity at small sizes: iolens and fio, given the same job file and the same files, do the same work
on the block device (/proc/diskstats) and report the same bytes; a job that gives the kernel no access hint
(fadvise_hint=0 on iolens's side only) is caught by the rule; iolens ior and mdtest meet what IOR's semantics
require of the device, and agree with the official IOR when it is built on this machine."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import REPO, fs_type

sys.path.insert(0, str(REPO / "bench"))
from fidelity import cases, measure, rule  # noqa: E402
from fidelity.devwork import device_of  # noqa: E402

MIB = 1 << 20
# Rounds added while the device work disagrees: the disk may be shared with other work (the bench does the
# same; a real difference stays whatever the rounds).
EXTRA = 4
PEER_BIN = Path(os.environ.get("IOLENS_PEERS", "/var/tmp/iolens-peers")) / "ior-4.0.0" / "bin"

# (job file, size per job instance, file systems): a handful of the bench's cases, at a few MiB.
FIO_CASES = [
    (
        "randread-4k-psync",
        4 * MIB,
        ("disk", "tmpfs"),
    ),  # buffered, cold cache: every 4 KiB read reaches the disk
    ("read-1m-psync", 16 * MIB, ("disk", "tmpfs")),  # sequential: readahead, the same for both
    ("write-1m-psync-endfsync", 8 * MIB, ("disk",)),
    ("randread-4k-libaio-direct-qd16", 4 * MIB, ("disk",)),
    ("randread-4k-uring-direct-qd32", 4 * MIB, ("disk",)),
    # mixed, O_DIRECT: each tool draws the directions, so its device reads follow its own read count
    ("randrw-4k-uring-direct-qd16", 4 * MIB, ("disk",)),
]


def scratch_on(fs: str) -> Iterator[Path]:
    base = Path(os.environ.get("IOLENS_TEST_DISK_DIR", "/var/tmp")) if fs == "disk" else Path("/dev/shm")
    want_memory = fs == "tmpfs"
    if not base.is_dir() or (fs_type(base) in ("tmpfs", "ramfs")) != want_memory:
        pytest.skip(f"no {fs} directory here ({base})")
    d = Path(tempfile.mkdtemp(prefix="iolens-test-fidelity-", dir=base))
    try:
        yield d / "w"
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def setup(iolens_bin: list[str], tmpfs_dir: Path) -> measure.Setup:
    """TMPDIR on tmpfs, as the bench has it: iolens fsyncs its result document there, and on the measured
    disk that journal commit would write other files' dirty data too."""
    env = dict(os.environ, TMPDIR=str(tmpfs_dir))
    return measure.Setup(iolens=iolens_bin, ior_bin=None, env=env, extra_runs=EXTRA, settled=rule.settled)


def run_fio(setup: measure.Setup, fs: str, job: str, size: int, extra: tuple[str, ...] = ()) -> rule.Verdict:
    case = cases.fio_case(cases.JOBS / f"{job}.fio", size)
    for work in scratch_on(fs):
        work.mkdir()
        res = measure.run_fio_case(case, fs, 2, setup, work, iolens_extra=extra)
        assert res.error is None, res.error
        assert (res.device is None) == (fs == "tmpfs")
        return rule.judge(res, "fio", "iolens")
    raise AssertionError("unreachable")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("job", "size", "fs"), [(j, s, fs) for j, s, fss in FIO_CASES for fs in fss], ids=lambda x: str(x)
)
def test_fio_job_does_the_same_device_work_in_both_tools(
    setup: measure.Setup, job: str, size: int, fs: str
) -> None:
    v = run_fio(setup, fs, job, size)
    assert v.reported_diff == [], v.reported_diff
    assert v.device_diff == [], (v.peer_dev, v.iolens_dev)
    if fs == "disk" and job.startswith("randread"):
        # Not vacuous: every 4 KiB block of a cold file was read from the device, by each tool.
        assert v.peer_dev.read_ios >= size // 4096 and v.iolens_dev.read_ios >= size // 4096
    if fs == "disk" and "write" in job:
        assert v.iolens_dev.write_sectors * 512 >= size and v.iolens_dev.flushes >= 1


@pytest.mark.slow
def test_rule_catches_a_job_whose_device_reads_differ(setup: measure.Setup) -> None:
    """iolens told fadvise_hint=0 (no POSIX_FADV_RANDOM) lets readahead read the cold file in large
    requests: far fewer device reads per I/O than fio with its default. The rule must say so."""
    v = run_fio(setup, "disk", "randread-4k-psync", 4 * MIB, extra=("--fadvise_hint=0",))
    assert "read_ios" in v.device_diff, (v.peer_dev, v.iolens_dev)
    assert v.iolens_dev.read_ios < 0.9 * v.peer_dev.read_ios
    assert v.status == "DIFFERS"


IOR_LINES = [
    "easy 2 ior -a POSIX -F -t 1m -b 4m -w -r -e -k",
    "hard 2 ior -a POSIX -t 47008 -b 47008 -s 40 -w -r -C -e -k",
    "md 2 mdtest -n 20 -F -w 3901 -e 3901 -y",
]


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("line", IOR_LINES, ids=lambda x: x.split()[0])
def test_iolens_ior_and_mdtest_meet_ior_semantics_on_the_device(
    setup: measure.Setup, mpi_env: dict[str, str], line: str
) -> None:
    """What IOR's semantics require, checked on iolens's own runs (the official IOR is not needed): bytes =
    ranks x segments x block, -e puts them on the device before the run ends, -k leaves the file, a read
    after iolens's eviction comes from the device and one with --keep-cache does not. With the official IOR
    built here (bench/build_ior.sh), its device work must agree with iolens's too."""
    c = cases.ior_case(line)
    peer = (PEER_BIN / c.kind).is_file()
    tools = ("peer", "iolens") if peer else ("iolens",)
    if c.kind == "ior":
        tools += ("iolens-evict",)
    env = dict(mpi_env, TMPDIR=setup.env["TMPDIR"])
    st = measure.Setup(
        iolens=setup.iolens,
        ior_bin=PEER_BIN if peer else None,
        env=env,
        extra_runs=EXTRA,
        settled=rule.settled,
    )
    for work in scratch_on("disk"):
        work.mkdir()
        res = measure.run_ior_case(c, "disk", 1, st, work, tools)
        assert res.error is None, res.error
        on_device = device_of(work.parent) is not None
        for s in res.samples:
            assert rule.ior_model(c.args, c.kind, c.np, s.tool, s, on_device) == [], s.tool
        if c.kind == "ior" and on_device:
            # The model tells the modes apart: the evicting run's reads, judged as a cache-keeping run's,
            # fail it (the data came from the device).
            evict = res.of("iolens-evict")[0]
            assert any("cache kept" in b for b in rule.ior_model(c.args, c.kind, c.np, "iolens", evict, True))
        if peer:
            v = rule.judge(res, "peer", "iolens")
            assert v.reported_diff == [] and v.device_diff == [], (v.peer_dev, v.iolens_dev, v.reported_diff)
