"""`iolens profile` under the signals a batch system, `timeout`, `kill` or a terminal send (SIGINT, SIGTERM,
SIGHUP), to iolens alone or to its whole process group (docs/reliability.md): the program gets the signal
(once from iolens when iolens alone got it), iolens waits for it, keeps and stores its log, prints the report
marked as interrupted, and exits with the program's status, all within 10 s; a program that ignores the
signal is killed after IOLENS_PROFILE_KILL_AFTER seconds. Real processes, the real runtime, a real SQLite
database; afterwards no process of the run may be left."""

from __future__ import annotations

import os
import pty
import select
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from iolens.profile.reader import read_log

from ..conftest import ProfileBuild

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
RECORDS = 200


def session_processes(sid: int) -> list[str]:
    """The processes still in session sid (the run was started as a session of its own)."""
    left = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[3]) == sid and fields[0] != "Z":
            left.append(f"{d.name} {stat[: stat.rindex(')') + 1]}")
    return left


def start(
    iolens_bin: list[str], build: ProfileBuild, tmp_path: Path, mode: str | None, **extra: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """iolens profile -- profile_sleeper, in a session of its own; returns once the program is ready."""
    logs, scratch = tmp_path / "logs", tmp_path / "scratch"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env.update(IOLENS_PROFILE_LIB=str(build.lib), IOLENS_DB=str(tmp_path / "db.sqlite"), **extra)
    cmd = [*iolens_bin, "profile", "--out", str(logs), "--", str(build.program("profile_sleeper"))]
    cmd += [str(scratch), str(RECORDS), *([mode] if mode else [])]
    proc = subprocess.Popen(
        cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line != b"ready\n":
        proc.kill()
        pytest.fail(f"the program did not start: {line!r} {proc.communicate()[1]!r}")
    return proc, logs


def finish(proc: subprocess.Popen[bytes], limit: float) -> tuple[str, str, float]:
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=limit + 20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail("iolens did not end after the signal")
    return out.decode(), err.decode(), time.monotonic() - t0


def stored_profiles(tmp_path: Path) -> int:
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        return int(db.execute("SELECT count(*) FROM profiles").fetchone()[0])


def check_log(logs: Path, scratch: Path) -> None:
    """The program's log is there, readable, with every record it wrote before the signal."""
    found = [p for p in logs.iterdir() if p.suffix in (".iolp", ".iolpz")]
    assert len(found) == 1, found
    log = read_log(found[0])
    c = log.files[str(scratch / "sleeper")]
    assert c["POSIX_WRITES"] == RECORDS and c["POSIX_READS"] == RECORDS


@pytest.mark.parametrize("group", [False, True], ids=["iolens-alone", "process-group"])
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_signal_reaches_the_program_and_the_log_is_reported(
    iolens_bin: list[str], profile_build: ProfileBuild, tmp_path: Path, sig: int, group: bool
) -> None:
    proc, logs = start(iolens_bin, profile_build, tmp_path, None)
    (os.killpg if group else os.kill)(proc.pid, sig)
    out, err, took = finish(proc, 10)
    name = signal.Signals(sig).name
    assert took < 10, f"{took:.1f} s after the signal"
    assert proc.returncode == 128 + sig, err
    assert session_processes(proc.pid) == []
    check_log(logs, tmp_path / "scratch")
    log = read_log(next(logs.iterdir()))
    assert log.killed_by_signal and log.header.exit_signal == sig
    assert f"iolens: interrupted by {name}" in err and "Traceback" not in err
    assert f"note: interrupted by {name}" in out
    assert f"the program ended by {name} (status {128 + sig})" in out
    assert stored_profiles(tmp_path) == 1


@pytest.mark.parametrize("group", [False, True], ids=["iolens-alone", "process-group"])
def test_a_program_that_handles_the_signal_keeps_its_own_status(
    iolens_bin: list[str], profile_build: ProfileBuild, tmp_path: Path, group: bool
) -> None:
    """The program catches SIGTERM and exits 3: iolens exits 3, and the log ended cleanly."""
    proc, logs = start(iolens_bin, profile_build, tmp_path, "handle")
    (os.killpg if group else os.kill)(proc.pid, signal.SIGTERM)
    out, err, took = finish(proc, 10)
    assert took < 10
    assert proc.returncode == 3, err
    # iolens alone: once, from iolens. The group: from the sender and from iolens, which cannot tell the
    # two cases apart (the kernel merges the two when the first is still pending)
    n = out.count("got 15")
    assert out.startswith("got 15\n") and (n == 1 if not group else n <= 2)
    assert session_processes(proc.pid) == []
    check_log(logs, tmp_path / "scratch")
    assert read_log(next(logs.iterdir())).clean
    assert "the program ended with status 3" in out
    assert stored_profiles(tmp_path) == 1


@pytest.mark.parametrize("group", [False, True], ids=["iolens-alone", "process-group"])
def test_a_program_that_ignores_the_signal_is_killed_after_the_grace(
    iolens_bin: list[str], profile_build: ProfileBuild, tmp_path: Path, group: bool
) -> None:
    """IOLENS_PROFILE_KILL_AFTER=1: a program ignoring SIGTERM gets SIGKILL 1 s later; its raw log is
    reported and stored, and iolens exits 137."""
    proc, logs = start(iolens_bin, profile_build, tmp_path, "ignore", IOLENS_PROFILE_KILL_AFTER="1")
    (os.killpg if group else os.kill)(proc.pid, signal.SIGTERM)
    out, err, took = finish(proc, 10)
    assert 1 <= took < 10
    assert proc.returncode == 137, err
    assert session_processes(proc.pid) == []
    check_log(logs, tmp_path / "scratch")
    log = read_log(next(logs.iterdir()))
    assert log.path.suffix == ".iolp" and not log.clean
    assert "did not end within 1 s and was killed (SIGKILL, status 137)" in err
    assert stored_profiles(tmp_path) == 1


def test_the_default_grace_is_bounded(
    iolens_bin: list[str], profile_build: ProfileBuild, tmp_path: Path
) -> None:
    """Without the variable: a program ignoring SIGTERM is killed within 10 s of it (well inside Slurm's
    KillWait of 30 s)."""
    proc, logs = start(iolens_bin, profile_build, tmp_path, "ignore")
    os.kill(proc.pid, signal.SIGTERM)
    out, err, took = finish(proc, 10)
    assert took < 10 and proc.returncode == 137, err
    assert session_processes(proc.pid) == []
    check_log(logs, tmp_path / "scratch")


def test_a_bad_grace_is_refused_before_anything_runs(iolens_bin: list[str], tmp_path: Path) -> None:
    env = {**os.environ, "IOLENS_PROFILE_KILL_AFTER": "soon"}
    r = subprocess.run(
        [*iolens_bin, "profile", "--out", "logs", "--", "true"], env=env, cwd=tmp_path, capture_output=True
    )
    assert r.returncode == 2
    assert r.stderr.decode().splitlines() == [
        "iolens: error: IOLENS_PROFILE_KILL_AFTER=soon: expected seconds, more than 0 and at most 3600"
    ]
    assert not (tmp_path / "logs").exists()


def test_ctrl_c_at_a_terminal_reaches_the_program_once(
    iolens_bin: list[str], profile_build: ProfileBuild, tmp_path: Path
) -> None:
    """On a real terminal (a pty), Ctrl-C: the terminal sends SIGINT to the whole foreground group, the
    program included, so iolens does not send it again: the program sees one SIGINT."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env["IOLENS_PROFILE_LIB"] = str(profile_build.lib)
    cmd = [*iolens_bin, "profile", "--out", str(tmp_path / "logs"), "--"]
    cmd += [str(profile_build.program("profile_sleeper")), str(scratch), str(RECORDS), "handle"]
    pid, master = pty.fork()
    if pid == 0:  # the child: a session of its own, the pty its terminal, iolens its foreground job
        try:
            os.chdir(tmp_path)
            os.execve(cmd[0], cmd, env)
        finally:
            os._exit(127)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"ready" not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                seen += os.read(master, 4096)
        assert b"ready" in seen, seen
        os.write(master, b"\x03")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                try:
                    piece = os.read(master, 4096)
                except OSError:  # EIO: every process of the terminal has closed it
                    break
                if not piece:
                    break
                seen += piece
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(master)
    text = seen.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 3, text
    assert text.count("got 02") == 1, text
    assert "interrupted by SIGINT from the terminal (the program got it too)" in text
    assert session_processes(pid) == []


@pytest.mark.mpi
@pytest.mark.parametrize("group", [False, True], ids=["iolens-alone", "process-group"])
def test_signal_under_mpirun_reaches_the_ranks(
    iolens_bin: list[str], profile_build: ProfileBuild, tmp_path: Path, mpi_env: dict[str, str], group: bool
) -> None:
    """--launcher mpirun --np 2: SIGTERM goes to mpirun, which passes it to the ranks; every process of the
    run is gone within 10 s, each rank's log is readable, and the report says the run was interrupted."""
    logs, scratch = tmp_path / "logs", tmp_path / "scratch"
    scratch.mkdir()
    env = {k: v for k, v in mpi_env.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env["IOLENS_PROFILE_LIB"] = str(profile_build.lib)
    cmd = [*iolens_bin, "profile", "--launcher", "mpirun", "--np", "2", "--out", str(logs), "--"]
    cmd += [str(profile_build.program("profile_sleeper")), str(scratch), str(RECORDS)]
    proc = subprocess.Popen(
        cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    assert proc.stdout is not None
    ready = 0
    deadline = time.monotonic() + 120
    while ready < 2 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        ready += line == b"ready\n"
    if ready < 2:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"the ranks did not start: {proc.communicate()[1]!r}")
    (os.killpg if group else os.kill)(proc.pid, signal.SIGTERM)
    out, err, took = finish(proc, 10)
    assert took < 10, f"{took:.1f} s"
    assert proc.returncode != 0
    assert session_processes(proc.pid) == []
    assert "iolens: interrupted by SIGTERM" in err and "Traceback" not in err
    ranks = [read_log(p) for p in logs.iterdir() if p.suffix in (".iolp", ".iolpz")]
    assert sorted(log.header.rank for log in ranks) == [0, 1]
    assert all(str(scratch / "sleeper") in log.files for log in ranks)
    assert "note: interrupted by SIGTERM" in out
