"""Signals at the engine: SIGINT, SIGTERM and SIGHUP, to the engine process alone or to its whole process
group, at seeded random moments of real runs of every workload. Each run must stop within the time a batch
system allows, remove what it created, write a document that names the signal and the phase, and exit
with status 1."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ..ior_helpers import CANARY_TEXT, place_canary

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
SEED = 15


def _group_alive(pgid: int) -> list[int]:
    """Processes (not zombies) still in the process group."""
    alive = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            fields = (p / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(p.name))
    return alive


def _workload_args(workload: str, d: Path, tree: Path) -> list[str]:
    return {
        "ior": ["-F", "-t", "4k", "-b", "8g", "-w", "-r", "-D", "60", "-O", "stoneWallingWearOut=1",
                "-o", str(d / "f")],
        "ior-shared": ["-t", "1m", "-b", "6g", "-w", "-o", str(d / "f")],
        "mdtest": ["-F", "-n", "500000", "-u", "-w", "100", "-d", str(d / "md")],
        "fio": ["--name=j", f"--directory={d}", "--rw=randwrite", "--bs=4k", "--size=256m", "--time_based",
                "--runtime=60", "--numjobs=2"],
        # -size makes the walk stat every entry: about 0.25 s for the 400,000 files here (0.1 s without),
        # long enough for a signal sent 30-100 ms after the start to land inside the walk.
        "find": [str(tree), "-size", "3901c", "-name", "*7*"],
    }[workload]  # fmt: skip


@pytest.fixture(scope="module")
def big_tree(engine: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree of 400,000 files on tmpfs for find to walk (made with mdtest -C)."""
    shm = Path("/dev/shm")
    base = Path(tmp_path_factory.mktemp("x")).name
    root = shm / f"iolens-tree-{base}"
    root.mkdir()
    shape = ["-F", "-n", "200000", "-z", "2", "-b", "8", "-u", "-d", str(root / "md")]
    subprocess.run([str(engine), "mdtest", "--np", "2", "--quiet", "-C", *shape], check=True, timeout=300)
    yield root
    subprocess.run([str(engine), "mdtest", "--np", "2", "--quiet", "-r", *shape], timeout=300)
    os.rmdir(root)


CASES = [(w, t, s) for w in ("ior", "ior-shared", "mdtest", "fio", "find") for t in ("process", "group")
         for s in SIGNALS]  # fmt: skip


@pytest.mark.parametrize(("workload", "target", "sig"), CASES, ids=[f"{w}-{t}-{s.name}" for w, t, s in CASES])
def test_signal_stops_cleans_up_and_documents_the_run(
    engine: Path, tmpfs_dir: Path, big_tree: Path, workload: str, target: str, sig: signal.Signals
) -> None:
    rng = random.Random(f"{SEED}-{workload}-{target}-{sig.name}")
    canary = place_canary(tmpfs_dir)
    doc_path = tmpfs_dir.parent / f"{tmpfs_dir.name}-doc.json"
    name = "ior" if workload.startswith("ior") else workload
    cmd = [str(engine), name, "--np", "2", "--quiet", "--json", str(doc_path),
           *_workload_args(workload, tmpfs_dir, big_tree)]  # fmt: skip
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        # A random moment once the ranks are at work (find's walk is short: signal it early).
        time.sleep(rng.uniform(0.03, 0.1) if workload == "find" else rng.uniform(0.6, 2.0))
        assert proc.poll() is None, f"the run ended before the signal: {proc.communicate()}"
        sent = time.monotonic()
        if target == "process":
            os.kill(proc.pid, sig)
        else:
            os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        time.sleep(0.1)
        left_procs = _group_alive(proc.pid)
        doc = json.loads(doc_path.read_text())
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        doc_path.unlink(missing_ok=True)
    assert took < 10, f"took {took:.1f} s to end after {sig.name}"
    assert left_procs == []
    assert proc.returncode == 1, err
    assert f"({sig.name})" in err and "Traceback" not in err
    assert doc["status"] == "failed"
    assert doc["interrupted"]["signal"] == sig.name and doc["interrupted"]["number"] == int(sig)
    assert doc["interrupted"]["phase"] == doc["error"]["phase"] and doc["interrupted"]["phase"]
    # Nothing left but the canary (find creates nothing: its tree is untouched).
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == ["canary.txt"]
    assert canary.read_text() == CANARY_TEXT
    if workload != "find":
        assert doc["cleanup"]["state"] == "done" and doc["cleanup"]["removed"] > 0
    if workload.startswith("ior"):
        cut = [p for p in doc["phases"] if p["cut_short"]]
        assert len(cut) == 1 and cut[0]["bytes"] > 0 and cut[0]["latency_ns"]["count"] == cut[0]["ops"] > 0
    if workload == "mdtest":
        cut = [p for p in doc["phases"] if p["cut_short"]]
        assert len(cut) == 1 and cut[0]["items"] > 0
    if workload == "fio":
        assert [g["cut_short"] for g in doc["fio"]["groups"]] == [True]
    if workload == "find":
        assert doc["find"]["cut_short"] is True


def test_cut_short_ior_phase_shows_its_figures_in_the_tables(engine: Path, tmpfs_dir: Path) -> None:
    proc = subprocess.Popen([str(engine), "ior", "--np", "2", "-F", "-t", "4k", "-b", "8g", "-w", "-D", "60",
                             "-o", str(tmpfs_dir / "f")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    row = next(line for line in out.splitlines() if line.startswith("write "))
    assert float(row.split()[1]) > 0, row  # MiB/s of what was written before the stop, not a row of zeros
    assert "CUT SHORT by SIGTERM" in out
    assert list(tmpfs_dir.iterdir()) == []


def test_mdtest_remove_finishes_a_killed_run_with_another_np(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    args = ["-F", "-n", "300000", "-z", "1", "-b", "3", "-u", "-d", str(tmpfs_dir / "md")]
    cmd = [str(engine), "mdtest", "--np", "3", "--quiet", "-C", *args]
    proc = subprocess.Popen(cmd, start_new_session=True)
    deadline = time.time() + 20
    while not (tmpfs_dir / "md" / "test-dir.0-0").exists() and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(0.5)
    assert proc.poll() is None, "the create run ended before it could be killed"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (tmpfs_dir / "md" / ".iolens-owned").exists()
    doc_path = tmpfs_dir.parent / f"{tmpfs_dir.name}-rm.json"
    try:
        cmd = [str(engine), "mdtest", "--np", "2", "--quiet", "--json", str(doc_path), "-r", *args]
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        doc = json.loads(doc_path.read_text())
    finally:
        doc_path.unlink(missing_ok=True)
    assert res.returncode == 0, res.stderr
    assert doc["status"] == "ok"
    remove = next(p for p in doc["phases"] if p["name"] == "file-remove")
    # Rank 2's tree was never this run's to remove by name: the sweep took it; what was never made is counted.
    assert remove["missing"] > 0 and doc["cleanup"]["missing"] == remove["missing"]
    assert doc["cleanup"]["removed"] > 0
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == ["canary.txt"]
    assert canary.read_text() == CANARY_TEXT


def test_ior_remove_only_finishes_a_killed_run_with_another_np(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    proc = subprocess.Popen([str(engine), "ior", "--np", "3", "--quiet", "-F", "-t", "1m", "-b", "2g", "-w",
                             "-o", str(tmpfs_dir / "f")], start_new_session=True)  # fmt: skip
    deadline = time.time() + 20
    while len(list(tmpfs_dir.glob("f.*"))) < 3 and time.time() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    doc_path = tmpfs_dir.parent / f"{tmpfs_dir.name}-rm.json"
    try:
        res = subprocess.run([str(engine), "ior", "--np", "1", "--quiet", "--json", str(doc_path), "-F",
                              "--remove-only", "-o", str(tmpfs_dir / "f")], capture_output=True, text=True,
                             timeout=120)  # fmt: skip
        doc = json.loads(doc_path.read_text())
    finally:
        doc_path.unlink(missing_ok=True)
    assert res.returncode == 0, res.stderr
    assert doc["cleanup"] == {"state": "done", "removed": 3, "missing": 0, "left": 0}
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == ["canary.txt"]
    assert canary.read_text() == CANARY_TEXT


@pytest.mark.parametrize("workload", ["ior", "mdtest"])
def test_signal_to_one_rank_alone_stops_every_rank(engine: Path, tmpfs_dir: Path, workload: str) -> None:
    """kill -TERM of one rank's process (not the engine, not the group): the other ranks learn it through the
    ranks' shared memory and stop at once instead of at the end of their (60 s) phase."""
    doc_path = tmpfs_dir.parent / f"{tmpfs_dir.name}-doc.json"
    args = {
        "ior": ["-F", "-t", "4k", "-b", "8g", "-w", "-D", "60", "-o", str(tmpfs_dir / "f")],
        "mdtest": ["-F", "-n", "500000", "-u", "-d", str(tmpfs_dir / "md")],
    }[workload]
    cmd = [str(engine), workload, "--np", "2", "--quiet", "--json", str(doc_path), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        children: list[int] = []
        deadline = time.time() + 20
        while len(children) < 2 and time.time() < deadline:
            time.sleep(0.1)
            kids = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text()
            children = [int(k) for k in kids.split()]
        time.sleep(1.0)
        sent = time.monotonic()
        os.kill(children[1], signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
        doc = json.loads(doc_path.read_text())
    finally:
        if proc.poll() is None:
            proc.kill()
        doc_path.unlink(missing_ok=True)
    assert took < 10, took
    assert proc.returncode == 1, err
    assert doc["interrupted"]["signal"] == "SIGTERM"
    assert list(tmpfs_dir.iterdir()) == []
