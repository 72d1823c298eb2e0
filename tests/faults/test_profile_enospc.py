"""The profiler runtime on a full file system (docs/reliability.md): a real tmpfs of a few MiB, mounted
for the test (root only), filled by the program itself or by the log. The program must see exactly what it
would see without the runtime (every call's result and errno); the log must be either complete or say that it
is not, and `iolens profile report` must read it without a traceback."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from iolens.profile.reader import read_log

from ..conftest import MountTmpfs, ProfileBuild

Mount = Callable[[str], Path]


@pytest.fixture
def small_tmpfs(mount_tmpfs: MountTmpfs) -> Mount:
    """mount(size) -> a directory with a fresh tmpfs of that size on it (tests/conftest.py)."""
    return mount_tmpfs


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}


def fill(build: ProfileBuild, where: Path, logs: Path | None, *args: str) -> str:
    env = clean_env()
    if logs is not None:
        env.update(LD_PRELOAD=str(build.lib), IOLENS_PROFILE_DIR=str(logs))
    r = subprocess.run(
        [str(build.program("profile_fill")), str(where), *args], env=env, capture_output=True, timeout=300
    )
    assert r.returncode == 0 and r.stderr == b"", r.stderr
    return r.stdout.decode()


def report(iolens_bin: list[str], logs: Path) -> tuple[subprocess.CompletedProcess[str], dict]:
    text = subprocess.run(
        [*iolens_bin, "profile", "report", str(logs)], capture_output=True, text=True, timeout=120
    )
    js = subprocess.run(
        [*iolens_bin, "profile", "report", str(logs), "--json"], capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in text.stderr + js.stderr
    assert text.returncode == 0 and js.returncode == 0, text.stderr + js.stderr
    return text, json.loads(js.stdout)


def write_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("write(64k)")]


def test_the_program_fills_the_file_system_of_its_log(
    iolens_bin: list[str], profile_build: ProfileBuild, small_tmpfs: Mount
) -> None:
    """8 MiB tmpfs holding both the program's data and the log: the program writes 64 KiB blocks until
    ENOSPC, then creates 3000 files (writing to them fails) and stats them. Every call gives what it gives
    without the runtime, except that the log's reserved room is room the data does not get (the totals
    differ by at most the log's size). The log, whose growth fails once the file system is full, stays raw
    (its compression cannot be written either), ends cleanly and says it is incomplete; the report says so."""
    fs = small_tmpfs("8m")
    (fs / "plain").mkdir()
    plain = fill(profile_build, fs / "plain", None, "fill")
    shutil.rmtree(fs / "plain")
    (fs / "prof").mkdir()
    (fs / "logs").mkdir()
    prof = fill(profile_build, fs / "prof", fs / "logs", "fill")

    def rest(out: str) -> list[str]:
        return [line for line in out.splitlines() if not line.startswith(("write(64k)", "total"))]

    assert rest(prof) == rest(plain)
    assert "write(100) -1 errno=ENOSPC x3000" in prof and "open 0 errno=0 x3000" in prof
    for out in (plain, prof):  # full blocks, perhaps one that got in part, then ENOSPC every time
        lines = write_lines(out)
        assert re.fullmatch(r"write\(64k\) 65536 errno=0 x\d+", lines[0])
        assert lines[-1].startswith("write(64k) -1 errno=ENOSPC x")
        assert len(lines) == 2 or (len(lines) == 3 and lines[1] == "write(64k) 1 errno=0 x1")
    total_plain = int(plain.split()[-1])
    total_prof = int(prof.split()[-1])
    logs = list((fs / "logs").iterdir())
    assert len(logs) == 1 and logs[0].suffix == ".iolp", logs
    assert 0 <= total_plain - total_prof <= logs[0].stat().st_size
    log = read_log(logs[0])
    assert log.clean and log.records_cut and log.header.records_dropped > 0
    assert str(fs / "prof" / "fill") in log.files
    text, doc = report(iolens_bin, fs / "logs")
    assert "the log is incomplete" in text.stdout
    assert any("the log is incomplete" in m for m in doc["jobs"][0]["messages"])


def test_the_log_fills_its_own_file_system(
    iolens_bin: list[str], profile_build: ProfileBuild, small_tmpfs: Mount, tmpfs_dir: Path
) -> None:
    """The log alone on a 1 MiB tmpfs, the program's 6000 files elsewhere: the log fills its file system
    mid-run. The program's output is the same as without the runtime, call for call; the log ends cleanly,
    keeps what it could (the first files, whole) and says how many records it could not take."""
    logs = small_tmpfs("1m")
    (tmpfs_dir / "plain").mkdir()
    (tmpfs_dir / "prof").mkdir()
    plain = fill(profile_build, tmpfs_dir / "plain", None, "files", "6000")
    prof = fill(profile_build, tmpfs_dir / "prof", logs, "files", "6000")
    assert prof == plain
    assert "write(100) 100 errno=0 x6000" in prof
    found = list(logs.iterdir())
    assert len(found) == 1, found
    log = read_log(found[0])
    assert log.clean and log.records_cut and log.header.records_dropped > 0
    recorded = [c for p, c in log.files.items() if p.startswith(str(tmpfs_dir / "prof"))]
    assert 0 < len(recorded) < 6000
    assert all(c["POSIX_OPENS"] in (0, 1) for c in recorded)
    text, doc = report(iolens_bin, logs)
    assert "note: " in text.stdout and "the log is incomplete" in text.stdout
    assert doc["jobs"][0]["messages"]


def test_no_room_for_a_log_at_all(
    iolens_bin: list[str], profile_build: ProfileBuild, small_tmpfs: Mount, tmpfs_dir: Path
) -> None:
    """A 64 KiB tmpfs cannot hold a log's header and first chunk: the program runs as without the runtime,
    and no half-made log is left; `iolens profile --out` there says why there is no report, and exits with
    the program's status."""
    logs = small_tmpfs("64k")
    (tmpfs_dir / "plain").mkdir()
    (tmpfs_dir / "prof").mkdir()
    plain = fill(profile_build, tmpfs_dir / "plain", None, "files", "50")
    prof = fill(profile_build, tmpfs_dir / "prof", logs, "files", "50")
    assert prof == plain
    assert list(logs.iterdir()) == []
    env = {**clean_env(), "IOLENS_PROFILE_LIB": str(profile_build.lib)}
    r = subprocess.run(
        [*iolens_bin, "profile", "--out", str(logs), "--", str(profile_build.program("profile_fill")),
         str(tmpfs_dir / "prof"), "files", "50"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0 and r.stdout == plain
    assert r.stderr.splitlines()[-1] == (
        f"iolens: no profile log was written in {logs} (its file system has no room for a log)"
    )
