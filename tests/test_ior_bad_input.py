"""Bad input is refused before any I/O: exit status 2, a message naming the option, and no file created."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from .ior_helpers import run_engine

CASES = [
    (["-t", "4k", "-b", "10k"], "-b", "not a multiple of the transfer size"),
    (["--frobnicate"], "--frobnicate", "unknown option"),
    (["-t", "0"], "-t", "below the minimum"),
    (["-t", "12"], "-t", "multiple of 8"),
    (["-t", "1x"], "-t", "not a size"),
    (["-s", "-1"], "-s", ""),
    (["-b", "99999999999999t"], "-b", "too large"),
    (["-b", "100t"], "-b", "free"),
    (["-t", "1m", "-b", "1t", "-s", "99999999"], "-s", "largest file offset"),
    (["-a", "RADOS"], "-a", "unknown api"),
    (["-a", "hdf5"], "-a hdf5", "MPI"),
    (["-i", "0"], "-i", "below the minimum"),
    (["-u"], "-u", "-F"),
    (["-W", "-r"], "-W", "write phase"),
    (["-O", "noSuchKey=1"], "noSuchKey", "unknown"),
    (["-O", "stoneWallingWearOut=maybe"], "stoneWallingWearOut", ""),
    (["--np", "0"], "--np", "below the minimum"),
    (["-t"], "-t", "missing value"),
    (["-b", "-w"], "-b", "missing value (the next argument, '-w', is an option)"),
    (["--block-size", "--keep-file"], "--block-size", "missing value"),
    (
        ["-t", "4k", "-b", "64k", "-O", "stoneWallingWearOutIterations=17"],
        "stoneWallingWearOutIterations",
        "16",
    ),
    (["-O", "stoneWallingWearOutIterations=-1"], "stoneWallingWearOutIterations", ""),
    (["-w", "-O", "stoneWallingWearOut=1"], "stoneWallingWearOut", "-D"),
    (
        ["-w", "-D", "5", "-O", "stoneWallingStatusFile=/dev/shm/iolens-never-written"],
        "stoneWallingStatusFile",
        "stoneWallingWearOut=1",
    ),
]


@pytest.mark.parametrize("args,option,words", CASES, ids=[" ".join(c[0]) for c in CASES])
def test_bad_option_exits_2_naming_it_and_creates_nothing(
    engine: Path, tmpfs_dir: Path, args: list[str], option: str, words: str
) -> None:
    res = run_engine(engine, ["-o", str(tmpfs_dir / "f"), *args], np=1)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.startswith("iolens-bench: error: ")
    assert option in res.stderr and words in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert list(tmpfs_dir.iterdir()) == []
    assert res.doc is None


def test_missing_directory_is_refused(engine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(engine, ["-o", str(tmpfs_dir / "no" / "such" / "f")], np=2)
    assert res.returncode == 2
    # The first missing component is named, not the whole directory.
    assert f"-o: '{tmpfs_dir / 'no'}' does not exist" in res.stderr, res.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_a_file_in_the_directory_path_is_named_as_a_file(engine: Path, tmpfs_dir: Path) -> None:
    (tmpfs_dir / "afile").write_text("x")
    res = run_engine(engine, ["-w", "-o", str(tmpfs_dir / "afile" / "sub" / "f")], np=1)
    assert res.returncode == 2
    assert f"-o: '{tmpfs_dir / 'afile'}' is a file, not a directory" in res.stderr, res.stderr
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == ["afile"]


def test_reading_a_missing_file_is_refused(engine: Path, tmpfs_dir: Path) -> None:
    res = run_engine(engine, ["-r", "-F", "-o", str(tmpfs_dir / "absent")], np=2)
    assert res.returncode == 2
    assert "does not exist: nothing to read" in res.stderr


def test_unwritable_directory_is_refused(engine: Path, tmp_path: Path) -> None:
    # Root may write anywhere, so run the engine as an unprivileged user against a directory it cannot write.
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to switch to an unprivileged user")
    locked = Path("/tmp") / f"iolens-locked-{os.getpid()}"
    locked.mkdir(mode=0o755)
    try:
        engine_copy = locked / "iolens-bench"
        shutil.copy(engine, engine_copy)
        engine_copy.chmod(0o755)
        proc = subprocess.run(
            [
                setpriv,
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                str(engine_copy),
                "ior",
                "-w",
                "-o",
                str(locked / "f"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, proc.stderr
        assert "-o: directory" in proc.stderr and "not writable" in proc.stderr
        assert sorted(p.name for p in locked.iterdir()) == ["iolens-bench"]
    finally:
        shutil.rmtree(locked)


def test_cli_reports_engine_errors_without_traceback(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    proc = subprocess.run(
        [*iolens_bin, "ior", "-t", "4k", "-b", "10k", "-o", str(tmpfs_dir / "f")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "iolens: error:" in proc.stderr and "-b" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_cli_run_failure_exits_1_with_one_error_line_first(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    # A run that starts and then fails (a read check with the wrong seed) is not bad input: exit status 1
    # (as IOR), and standard error starts with the one line that says why.
    path = str(tmpfs_dir / "f")
    common = [*iolens_bin, "ior", "--no-live", "--text-format=rich", "-t", "16k", "-b", "64k", "-o", path]
    subprocess.run([*common, "-w", "-k"], capture_output=True, text=True, timeout=60, check=True)
    proc = subprocess.run([*common, "-r", "-R", "-G", "5"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    # (IOR's default timestamp packet differs from another signature's in some bytes of each word only)
    assert lines and re.match(r"iolens: error: read check, iteration 0: \d+ bytes differ", lines[0])
    assert lines[0].endswith("(rank 0, phase read-check)")
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "run failed" in proc.stdout  # the panel with the document's error, after the tables
