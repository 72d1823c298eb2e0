"""Per-command process series (monitor/proc_agg.py, jobid.py): bounded in number, counters that never go
down, the bytes the kernel accounted to real forked processes, and the batch job of a process."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolens.monitor import influx, jobid
from iolens.monitor.proc_agg import OTHER, CommandTotals
from iolens.monitor.procio import FIELDS, ProcInfo

from .monitor_helpers import run_iolens
from .test_monitor_outputs import Monitor, _families, monitor_factory  # noqa: F401 - a fixture

MIB = 1 << 20
CHILDREN = 30
# A shell loop forking CHILDREN pipelines: a subshell whose `head` writes 1 MiB into a pipe and then sleeps,
# and a `dd` that copies it to a file and stays alive until the pipe closes (so a sample sees its writes,
# most of the time). It waits for `go` so that the monitor sees it from its first child on.
LOOP = f"""
while [ ! -e "$1/go" ]; do sleep 0.02; done
for ((i = 0; i < {CHILDREN}; i++)); do
  (head -c {MIB} /dev/zero; sleep 0.2) | dd of="$1/out" bs=64k iflag=fullblock status=none
done
"""


def _series(text: str, family: str) -> dict[tuple[tuple[str, str], ...], float]:
    fam = _families(text).get(family)
    if fam is None:
        return {}
    return {tuple(sorted(s.labels.items())): s.value for s in fam.samples}  # type: ignore[attr-defined]


@pytest.fixture
def loop_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="iolens-procs-", dir="/dev/shm") as d:
        yield Path(d)


def _watch_loop(d: Path, monitors: list[Monitor], *options: str, **env: str) -> list[str]:
    """Run LOOP under `iolens monitor --pid-tree` with `options`; its /metrics pages, scraped until the
    loop ended and once more after."""
    loop = subprocess.Popen(["bash", "-c", LOOP, "loop", str(d)], env={**os.environ, **env})
    try:
        mon = Monitor(["--prometheus", "127.0.0.1:0", "--pid-tree", str(loop.pid), "--sources", "proc_io",
                       "--interval", "0.1", *options])  # fmt: skip
        monitors.append(mon)
        (d / "go").touch()
        texts = []
        while loop.poll() is None:
            texts.append(mon.scrape()[0])
            time.sleep(0.15)
        assert loop.wait() == 0
        time.sleep(0.5)  # a few samples after the last child was reaped
        texts.append(mon.scrape()[0])
    finally:
        loop.kill()
        loop.wait()
    assert mon.stop() == 0
    return texts


def _assert_monotone(texts: list[str], family: str) -> None:
    last: dict[tuple[tuple[str, str], ...], float] = {}
    for text in texts:
        for labels, value in _series(text, family).items():
            assert value >= last.get(labels, 0), (family, labels, last.get(labels), value)
            last[labels] = value


def test_a_forking_loop_is_served_per_command_with_the_bytes_the_children_wrote(
    loop_dir: Path,
    monitor_factory: list[Monitor],  # noqa: F811 - the fixture
) -> None:
    texts = _watch_loop(loop_dir, monitor_factory)
    assert len(texts) > 5
    for what in ("read_chars", "written_chars", "read_syscalls", "write_syscalls", "written_bytes"):
        _assert_monotone(texts, f"iolens_command_{what}")
    # One series per command, not per process: bash (the loop and its subshells), head, dd, sleep, and
    # no per-process series without --prometheus-pids.
    final = texts[-1]
    written = {dict(k)["comm"]: v for k, v in _series(final, "iolens_command_written_chars").items()}
    assert set(written) <= {"bash", "head", "dd", "sleep"} and "dd" in written, written
    assert "iolens_process_" not in final
    # The kernel accounted CHILDREN MiB written by head into the pipes and CHILDREN MiB by dd into the file.
    # What a child wrote after its last sample comes back through its reaper, counted once: head exits as
    # soon as it has written, so most of its bytes come back through the subshell that reaped it (which then
    # became `sleep` by exec); dd lives on until the pipe closes, so a sample sees most of its bytes.
    assert sum(written.values()) == 2 * CHILDREN * MIB, written
    assert written["dd"] >= CHILDREN * MIB // 2, written
    assert (loop_dir / "out").stat().st_size == MIB


def test_the_top_n_keeps_the_series_bounded_and_the_rest_is_a_monotone_other(
    loop_dir: Path,
    monitor_factory: list[Monitor],  # noqa: F811 - the fixture
) -> None:
    texts = _watch_loop(loop_dir, monitor_factory, "--prometheus-top", "2", "--prometheus-pids")
    pids_seen: set[str] = set()
    for text in texts:
        series = _series(text, "iolens_command_written_chars")
        assert len(series) <= 3, series
        pids_seen |= {dict(k)["pid"] for k in _series(text, "iolens_process_written_chars")}
    _assert_monotone(texts, "iolens_command_written_chars")
    _assert_monotone(texts, "iolens_command_read_chars")
    final = {dict(k)["comm"]: v for k, v in _series(texts[-1], "iolens_command_written_chars").items()}
    # dd and whichever got head's bytes (head itself or the subshell that reaped it), and the rest.
    assert len(final) == 3 and "dd" in final and OTHER in final, final
    # The per-process series, opted in, are there: one pid per process seen.
    assert len(pids_seen) > CHILDREN


def test_job_ids_come_from_the_environment_of_real_processes(
    loop_dir: Path,
    monitor_factory: list[Monitor],  # noqa: F811 - the fixture
) -> None:
    job = "4242.node 1,a=b"  # spaces, a comma and an equals sign reach both outputs escaped
    influx_file = loop_dir / "lines"
    texts = _watch_loop(loop_dir, monitor_factory, "--influx", str(influx_file), SLURM_JOB_ID=job)
    labels = set(_series(texts[-1], "iolens_command_written_chars"))
    assert labels and all(dict(k).get("jobid") == job for k in labels), labels
    lines = influx_file.read_text().splitlines()
    assert any(
        ln.startswith("command_io,comm=dd,") and ",job_id=4242.node\\ 1\\,a\\=b " in ln for ln in lines
    )
    assert not any(ln.startswith("proc_io,") for ln in lines)


def test_the_cgroup_job_directory_names_the_job_before_the_environment(tmp_path: Path) -> None:
    base = Path("/sys/fs/cgroup/pids")
    if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
        pytest.skip("needs a writable cgroup v1 pids hierarchy (root) to make a job_NNN cgroup")
    group = base / f"iolens-test-{os.getpid()}" / "job_77"
    group.mkdir(parents=True)
    proc = subprocess.Popen(["sleep", "30"], env={**os.environ, "SLURM_JOB_ID": "12"})
    try:
        while Path(f"/proc/{proc.pid}/comm").read_text() != "sleep\n":  # its own environment once exec'd
            time.sleep(0.01)
        assert jobid.job_id(proc.pid) == "12"
        (group / "cgroup.procs").write_text(str(proc.pid))
        assert jobid.job_id(proc.pid) == "77"
    finally:
        proc.kill()
        proc.wait()
        time.sleep(0.1)
        group.rmdir()
        group.parent.rmdir()


def test_job_id_texts() -> None:
    assert jobid.from_cgroup("0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n") == "42"
    assert jobid.from_cgroup("4:memory:/slurm/uid_1000/job_7/step_batch\n1:cpu:/\n") == "7"
    assert jobid.from_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n") == ""
    assert jobid.from_environ(b"HOME=/root\0PBS_JOBID=9.server\0SLURM_JOB_ID=\0") == "9.server"
    assert jobid.from_environ(b"LSB_JOBID=5\0SLURM_JOB_ID=6\0") == "6"
    assert jobid.from_environ(b"PATH=/bin\0") == ""


def _reading(**procs: tuple[str, int]) -> dict[str, dict[str, object]]:
    """pid → (comm, wchar); every other field 0."""
    return {pid[1:]: {**dict.fromkeys(FIELDS, 0), "wchar": w, "comm": c} for pid, (c, w) in procs.items()}


def test_a_reaped_child_is_counted_once_and_its_last_bytes_go_to_its_reaper() -> None:
    t = CommandTotals([5])
    info = {1: ProcInfo(None, ""), 2: ProcInfo(1, ""), 3: ProcInfo(2, "")}
    t.update(_reading(p1=("bash", 10), p2=("sh", 0), p3=("dd", 100)), info)
    # dd wrote 50 more, exited and was reaped by sh (sh += 150), sh exited and bash reaped it (bash += 150),
    # bash itself wrote 5: dd's last 50 are counted under bash, and nothing twice.
    t.update(_reading(p1=("bash", 165)), info)
    totals = {c: v["wchar"] for c, _, v in t.top(5)}
    assert totals == {"bash": 65, "dd": 100, "sh": 0}
    assert sum(totals.values()) == 165
    # A process id used again by a new process (counters lower): counted from zero, not as a decrease.
    t.update(_reading(p1=("bash", 165), p2=("cat", 7)), info)
    assert {c: v["wchar"] for c, _, v in t.top(5)}["cat"] == 7


def test_other_takes_what_commands_do_outside_the_top_and_never_goes_down() -> None:
    t = CommandTotals([1])
    info: dict[int, ProcInfo] = {}
    t.update(_reading(p1=("a", 10), p2=("b", 5)), info)
    assert {c: v["wchar"] for c, _, v in t.top(1)} == {"a": 10, OTHER: 5}
    t.update(_reading(p1=("a", 10), p2=("b", 30)), info)  # b passes a: a leaves the top, b enters it
    assert {c: v["wchar"] for c, _, v in t.top(1)} == {"b": 30, OTHER: 5}
    t.update(_reading(p1=("a", 12), p2=("b", 31)), info)
    assert {c: v["wchar"] for c, _, v in t.top(1)} == {"b": 31, OTHER: 7}


def test_influx_lines_are_per_command_unless_per_process_is_asked_for() -> None:
    record = {"time": 1.0, "data": {"proc_io": {"7": {"wchar": 3, "comm": "dd"}}}}
    series = [("dd", "", {"wchar": 3})]
    assert list(influx.lines(record, "n1", False, series)) == [
        "command_io,comm=dd,host=n1 wchar=3i 1000000000"
    ]
    both = list(influx.lines(record, "n1", True, series))
    assert "proc_io,comm=dd,host=n1,pid=7 wchar=3i 1000000000" in both


@pytest.mark.parametrize("opt", ["--prometheus-top", "--influx-top"])
def test_a_bad_top_count_is_an_error(opt: str) -> None:
    r = run_iolens(["monitor", opt, "many"])
    assert r.returncode == 2 and r.stderr.startswith(f"iolens: error: {opt}: expected a number"), r.stderr
