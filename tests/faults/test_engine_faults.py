"""Faults at the engine: a file system that fills up or turns read-only or unwritable in the middle of a
run, runs that would not fit, and bad command lines. Each gives one clear line, the documented exit status,
a document when the run had started, and nothing left behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from ..conftest import MountTmpfs

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def small_tmpfs(mount_tmpfs: MountTmpfs) -> Path:
    """A 64 MiB tmpfs of its own, unmounted afterwards."""
    return mount_tmpfs("64m", mode="0777")


def _run(engine: Path, workload: str, args: list[str], doc: Path, np: int = 2, timeout: float = 120,
         prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    cmd = [*(prefix or []), str(engine), workload, "--np", str(np), "--quiet", "--json", str(doc), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


FILLERS = {
    "ior": ("ior", ["-F", "-t", "1m", "-b", "100m", "-w", "-r", "-o", "{d}/f"], "write"),
    "mdtest-w": ("mdtest", ["-F", "-n", "30000", "-w", "4096", "-d", "{d}/md"], "file-create"),
    "fio-write": ("fio", ["--name=j", "--directory={d}", "--rw=write", "--bs=1m", "--size=100m",
                          "--numjobs=2"], "run"),
    "fio-layout": ("fio", ["--name=j", "--directory={d}", "--rw=randread", "--bs=4k", "--size=100m"], "run"),
}  # fmt: skip


@root_only
@pytest.mark.parametrize("case", sorted(FILLERS))
def test_full_file_system_fails_clearly_and_leaves_it_empty(
    engine: Path, small_tmpfs: Path, tmp_path: Path, case: str
) -> None:
    workload, args, phase = FILLERS[case]
    doc_path = tmp_path / "doc.json"
    # --no-space-check lets the run start although it cannot fit: the file system fills up under it.
    res = _run(engine, workload, ["--no-space-check", *(a.format(d=small_tmpfs) for a in args)], doc_path)
    assert res.returncode == 1, res.stderr
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith("iolens-bench: error: ") and "No space left on device" in line, res.stderr
    assert "Traceback" not in res.stderr
    doc = json.loads(doc_path.read_text())
    assert doc["status"] == "failed" and doc["error"]["phase"] == phase
    assert "No space left on device" in doc["error"]["message"] and doc["interrupted"] is None
    assert doc["cleanup"]["state"] == "done" and doc["cleanup"]["removed"] > 0
    assert list(small_tmpfs.iterdir()) == []
    assert shutil.disk_usage(small_tmpfs).used == 0


@root_only
@pytest.mark.parametrize("case", sorted(FILLERS))
def test_run_that_cannot_fit_is_refused_before_any_io(
    engine: Path, small_tmpfs: Path, tmp_path: Path, case: str
) -> None:
    workload, args, _ = FILLERS[case]
    doc_path = tmp_path / "doc.json"
    res = _run(engine, workload, [a.format(d=small_tmpfs) for a in args], doc_path)
    assert res.returncode == 2, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "--no-space-check" in res.stderr, res.stderr
    assert "free" in res.stderr and str(small_tmpfs) in res.stderr
    assert list(small_tmpfs.iterdir()) == [] and not doc_path.exists()
    # The override passes the check (--check: no I/O).
    override = ["--no-space-check", "--check", *(a.format(d=small_tmpfs) for a in args)]
    ok = _run(engine, workload, override, doc_path)
    assert ok.returncode == 0, ok.stderr


def test_fio_larger_than_the_file_system_is_refused(engine: Path, tmpfs_dir: Path, tmp_path: Path) -> None:
    args = ["--name=j", f"--directory={tmpfs_dir}", "--rw=write", "--size=100t", "--numjobs=2"]
    res = _run(engine, "fio", args, tmp_path / "d.json")
    assert res.returncode == 2
    assert res.stderr.startswith("iolens-bench: error: size: the run would write 400 TiB"), res.stderr
    assert list(tmpfs_dir.iterdir()) == []


@root_only
def test_mdtest_items_beyond_the_free_inodes_are_refused(engine: Path, tmp_path: Path) -> None:
    mnt = tmp_path / "few"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,nr_inodes=2000", "tmpfs", str(mnt)], check=True)
    try:
        res = _run(engine, "mdtest", ["-F", "-n", "5000", "-d", str(mnt / "md")], tmp_path / "d.json")
        assert res.returncode == 2, res.stderr
        assert "free inodes" in res.stderr and "--no-space-check" in res.stderr
        assert list(mnt.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@root_only
def test_file_system_turned_read_only_mid_run_fails_clearly(engine: Path, tmp_path: Path) -> None:
    mnt = tmp_path / "ro"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", str(mnt)], check=True)
    doc_path = tmp_path / "doc.json"
    try:
        cmd = [str(engine), "mdtest", "--np", "2", "--quiet", "--json", str(doc_path), "-D", "-n", "400000",
               "-d", str(mnt / "md")]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        # Another process remounts it read-only (retried: a remount fails while a file is open for writing).
        deadline = time.time() + 10
        while subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True).returncode != 0:
            assert time.time() < deadline, "could not remount read-only"
            time.sleep(0.01)
        _, err = proc.communicate(timeout=60)
        doc = json.loads(doc_path.read_text())
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    assert proc.returncode == 1, err
    assert "Read-only file system" in err and "Traceback" not in err
    assert doc["status"] == "failed" and doc["error"]["phase"] in ("dir-create", "tree-create", "setup")
    # Nothing can be removed from a read-only file system: the document says what was left.
    assert doc["cleanup"]["left"] > 0


@root_only
def test_directory_made_unwritable_mid_run_fails_clearly(engine: Path, tmp_path: Path) -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv not found")
    work = Path("/dev/shm") / f"iolens-perm-{tmp_path.name}"
    work.mkdir(mode=0o777)
    work.chmod(0o777)
    doc_path = work / "doc.json"
    try:
        as_nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        cmd = [*as_nobody, str(engine), "mdtest", "--np", "2", "--quiet", "--json", str(doc_path),
               "-F", "-n", "400000", "-d", str(work / "md")]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 20
        tree = work / "md" / "test-dir.0-0" / "mdtest_tree.0"
        while not tree.exists() and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)
        tree.chmod(0o555)  # another process takes the write permission away
        _, err = proc.communicate(timeout=60)
        doc = json.loads(doc_path.read_text())
    finally:
        if proc.poll() is None:
            proc.kill()
        shutil.rmtree(work, ignore_errors=True)
    assert proc.returncode == 1, err
    assert "Permission denied" in err and "Traceback" not in err
    assert doc["status"] == "failed" and doc["error"]["phase"] == "file-create"
    assert doc["cleanup"]["state"] == "done"


@pytest.mark.parametrize("bad", [["--nP", "2"], ["--NP", "2"], ["--JSON", "f"], ["--Quiet"]])
def test_miscased_long_option_is_refused(engine: Path, tmpfs_dir: Path, bad: list[str]) -> None:
    cmd = [str(engine), "ior", *bad, "-o", str(tmpfs_dir / "f")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=tmpfs_dir)
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and f"unknown option '{bad[0]}'" in res.stderr, res.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_ior_short_flags_are_case_sensitive(engine: Path, tmpfs_dir: Path) -> None:
    # -N is ior's task count, -n is not an ior flag: neither is taken for the other.
    cmd = [str(engine), "ior", "-n", "-o", str(tmpfs_dir / "f")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "unknown option '-n'" in res.stderr


def test_find_without_dir_shows_iolens_usage(engine: Path) -> None:
    res = subprocess.run([str(engine), "find"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert "usage: iolens find DIR" in res.stderr and "iolens-bench find" not in res.stderr


@pytest.mark.parametrize(
    ("workload", "args"),
    [
        ("mdtest", ["-n", "10", "-d", "{f}/sub"]),
        ("ior", ["-w", "-o", "{f}/sub/x"]),
        ("fio", ["--name=j", "--directory={f}/sub", "--size=1m"]),
    ],
)
def test_a_file_in_a_directory_path_is_named_as_a_file(
    engine: Path, tmpfs_dir: Path, workload: str, args: list[str]
) -> None:
    afile = tmpfs_dir / "afile"
    afile.write_text("x")
    cmd = [str(engine), workload, *(a.format(f=afile) for a in args)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert f"'{afile}' is a file, not a directory" in res.stderr, res.stderr
    assert "does not exist" not in res.stderr


@pytest.mark.parametrize("where", ["directory", "missing-dir", "through-a-file"])
def test_json_path_that_cannot_be_written_is_refused_before_the_run(
    engine: Path, tmpfs_dir: Path, where: str
) -> None:
    (tmpfs_dir / "afile").write_text("x")
    target = {
        "directory": tmpfs_dir,
        "missing-dir": tmpfs_dir / "no" / "doc.json",
        "through-a-file": tmpfs_dir / "afile" / "doc.json",
    }[where]
    data = tmpfs_dir / "data"
    data.mkdir()
    cmd = [str(engine), "ior", "--json", str(target), "-w", "-o", str(data / "f")]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert res.stderr.startswith("iolens-bench: error: --json: ") and res.stderr.count("\n") == 1, res.stderr
    assert list(data.iterdir()) == []  # the benchmark never ran
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == ["afile", "data"]  # and no .tmp document
