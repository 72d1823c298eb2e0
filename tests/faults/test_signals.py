"""Stop signals at random moments (seeded, so a failure can be replayed) into every workload and io500, sent
as a batch system or a user would: to the `iolens` process alone, to its whole process group, and to `iolens`
driving `mpirun`. Afterwards: no process of the run is left, nothing the run created is left (io500's result
directory is the documented kept set), iolens's temporary directory is gone, the document is written and says
which signal stopped which phase, and the exit status is 128 + the signal (docs/reliability.md).

IOLENS_FAULT_SEED replays another set of moments; each case's moment and signal are printed when it fails.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import require_mpirun

SEED = int(os.environ.get("IOLENS_FAULT_SEED", "15"))
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The bound: everything (stop, cleanup, document, report) within 10 s of the signal.
FINISH_WITHIN_S = 10.0


@dataclass(frozen=True)
class Case:
    workload: str
    # (the run's data directory, a scratch directory beside it, a tree to walk) -> the arguments
    args: Callable[[Path, Path, Path], list[str]]
    # Earliest and latest moment of the signal, in seconds after the start (the run lasts longer).
    window: tuple[float, float]
    # On a disk file system (/var/tmp) rather than tmpfs: a large write there does not hold memory.
    on_disk: bool = False


def _io500_config(data: Path, scratch: Path, _tree: Path) -> list[str]:
    ini = scratch / "io500.ini"
    ini.write_text(
        f"[global]\ndatadir = {data}/io500-data\nresultdir = {scratch}/io500-results\n"
        "timestamp-resultdir = FALSE\n[debug]\nstonewall-time = 3\n[ior-easy]\nblockSize = 512m\n"
        "[mdtest-easy]\nn = 200000\n[ior-hard]\nsegmentCount = 20000\n[mdtest-hard]\nn = 50000\n"
    )
    return ["io500", str(ini)]


CASES = {
    # Up to 2 x 4 GiB in 16 KiB pieces on a disk, ended by its own deadline at 6 s if no signal comes.
    "ior": Case(
        "ior",
        lambda d, _s, _t: ["ior", "-F", "-t", "16k", "-b", "4g", "-w", "-r", "-D", "6", "-o", f"{d}/f"],
        (0.4, 3.0), on_disk=True,
    ),
    # 2 x 400,000 files: the whole run lasts well past the latest signal (3 s) even on a quiet machine, where
    # mdtest creates about 350,000 files per second on tmpfs.
    "mdtest": Case(
        "mdtest", lambda d, _s, _t: ["mdtest", "-n", "400000", "-u", "-F", "-d", str(d)], (0.4, 3.0)
    ),
    "fio": Case(
        "fio",
        lambda d, _s, _t: ["fio", "--name=t", "--rw=randwrite", "--bs=4k", f"--directory={d}",
                           "--size=256m", "--time_based", "--runtime=8", "--numjobs=2"],
        (0.4, 3.0), on_disk=True,
    ),
    # A walk of 200,000 files is short: the signal lands before, during or after it (each is checked).
    "find": Case("find", lambda _d, _s, t: ["find", str(t), "-name", "*1*"], (0.05, 0.8)),
    "io500": Case("io500", _io500_config, (0.5, 6.0)),
}  # fmt: skip


def _moment(case_id: str) -> tuple[float, signal.Signals]:
    rng = random.Random(SEED * 1_000_003 + zlib.crc32(case_id.encode()))
    lo, hi = CASES[case_id.split("-")[0]].window
    return rng.uniform(lo, hi), rng.choice(SIGNALS)


def _processes_naming(marker: str) -> list[str]:
    """Command lines of live processes that name the run's directory (the engine, its ranks, mpirun)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in raw and state != "Z":
            found.append(raw.replace(b"\0", b" ").decode(errors="replace"))
    return found


def _leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture(scope="module")
def tree(engine: Path) -> Iterator[Path]:
    """200,000 empty files in two directories, for find to walk (made once, by the engine's mdtest)."""
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="iolens-fault-tree-", dir=shm if shm.is_dir() else None))
    subprocess.run(
        [str(engine), "mdtest", "-n", "100000", "-u", "-F", "-C", "-d", str(root), "--np", "2", "--quiet"],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["process", "group", "mpirun"])
@pytest.mark.parametrize("workload", list(CASES))
def test_a_stop_signal_at_a_random_moment_leaves_nothing_behind(
    workload: str,
    mode: str,
    iolens_bin: list[str],
    tmp_path: Path,
    tree: Path,
    request: pytest.FixtureRequest,
) -> None:
    case_id = f"{workload}-{mode}"
    delay, sig = _moment(case_id)
    where = f"case {case_id}: {sig.name} at {delay:.2f} s (IOLENS_FAULT_SEED={SEED})"
    base = Path("/var/tmp" if CASES[workload].on_disk else "/dev/shm")
    name = f"iolens-fault-{os.getpid()}-{case_id}"
    data = Path(os.path.realpath(base if base.is_dir() else tmp_path)) / name
    data.mkdir()
    run_tmp = tmp_path / "iolens-tmp"
    run_tmp.mkdir()
    doc = tmp_path / "doc.json"
    env = dict(os.environ, IOLENS_TMPDIR=str(run_tmp), COLUMNS="200")
    tree_before = _leftovers(tree) if workload == "find" else []
    args = [*CASES[workload].args(data, tmp_path, tree), "--json", str(doc), "--no-live", "--no-store"]
    if mode == "mpirun":
        require_mpirun()
        env.update(request.getfixturevalue("mpi_env"))
        args += ["--launcher", "mpirun", "--np", "2"]
    else:
        args += ["--np", "2"]
    try:
        proc = subprocess.Popen(
            [*iolens_bin, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            start_new_session=True,  # its own group, so that "group" reaches the run and not pytest
        )
        time.sleep(delay)
        finished_first = proc.poll() is not None
        if not finished_first:
            if mode == "group":
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        t_signal = time.monotonic()
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"{where}: iolens did not end within 60 s of the signal\n{err[-3000:]}")
        took = time.monotonic() - t_signal
        time.sleep(0.3)  # mpirun's ranks are reaped a moment after mpirun itself
        left_procs = _processes_naming(data.name)
        left_files = _leftovers(data)
        tmp_left = _leftovers(run_tmp)
    finally:
        subprocess.run(["pkill", "-KILL", "-f", data.name], check=False)
        subprocess.run(["rm", "-rf", str(data)], check=False)

    diag = f"{where}\nstatus {proc.returncode}\nstderr: {err[-3000:]}\nstdout: {out[-2000:]}"
    assert left_procs == [], f"processes left: {left_procs}\n{diag}"
    assert left_files == [], f"files left in the run's directory: {left_files[:20]}\n{diag}"
    if workload == "find":
        assert _leftovers(tree) == tree_before, f"find changed the tree it walked\n{diag}"
    assert tmp_left == [], f"iolens's temporary directory left: {tmp_left}\n{diag}"
    assert "Traceback" not in err, diag
    assert doc.is_file(), f"no document at --json\n{diag}"
    document = json.loads(doc.read_text())
    if workload == "find" and (finished_first or document.get("status") == "ok"):
        # find's walk is short: the signal may come after it, or while its report is written. The run is then
        # complete and says so. (Every other case lasts seconds past its signal: it must be stopped.)
        assert proc.returncode in (0, 128 + sig) and document["status"] == "ok", diag
        return
    assert not finished_first, f"the run ended before its signal: the case tests nothing\n{diag}"
    assert took <= FINISH_WITHIN_S, f"took {took:.1f} s after the signal\n{diag}"
    assert proc.returncode == 128 + sig, diag
    assert document["status"] == "failed", diag
    if workload == "io500":
        results = tmp_path / "io500-results"
        assert f"interrupted by {sig.name}" in (results / "result.txt").read_text(), diag
        assert (results / "result_summary.txt").is_file(), diag
        assert sig.name in json.dumps(document["error"]), diag
    else:
        assert document["interrupted"]["signal"] == sig.name, diag
        assert f"stopped by {sig.name}" in err, diag
        if document["interrupted"]["phase"] is not None:
            # The tables of the work done so far are shown (not just one line).
            assert out.strip(), diag


def test_sigkill_of_iolens_alone_still_has_the_engine_clean_up(
    iolens_bin: list[str], disk_dir: Path, tmp_path: Path
) -> None:
    """An OOM kill or `kill -9` of the front end: the engine is told by the kernel (PR_SET_PDEATHSIG) and
    removes what it wrote. (iolens's own temporary directory, with the engine's document in it, is what
    stays: here inside the test's directory, through IOLENS_TMPDIR.)"""
    args = [
        "ior",
        "-F",
        "-t",
        "16k",
        "-b",
        "4g",
        "-w",
        "-D",
        "20",
        "-o",
        f"{disk_dir}/f",
        "--np",
        "2",
        "--no-live",
    ]
    env = dict(os.environ, IOLENS_TMPDIR=str(tmp_path))
    proc = subprocess.Popen(
        [*iolens_bin, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(p.name.startswith("f.") for p in disk_dir.iterdir()):
        time.sleep(0.05)
    time.sleep(0.5)
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + FINISH_WITHIN_S
    while time.monotonic() < deadline and (_processes_naming(disk_dir.name) or _leftovers(disk_dir)):
        time.sleep(0.1)
    assert _processes_naming(disk_dir.name) == []
    assert _leftovers(disk_dir) == []
