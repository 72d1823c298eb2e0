"""A database on a small tmpfs that fills up while a record is being stored: a clear one-line error, every
record committed before is still there and readable (`db check` clean), nothing of the record that did
not fit is kept (its uid is not claimed: once there is room it stores as new), no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from ..conftest import MountTmpfs
from ..db_helpers import iolens, iolens_env, ior_document

PAD = 150_000  # bytes of padding per document: a few fit on the tmpfs, then one does not


@pytest.fixture
def small_tmpfs(mount_tmpfs: MountTmpfs) -> Path:
    return mount_tmpfs("2m")


def _doc(i: int, docs: Path) -> Path:
    doc = ior_document(1e9 + i * 1e6, started=f"2026-06-{1 + i % 28:02d}T10:{i % 60:02d}:00Z")
    # Random-looking text: no page of it compresses, and every document is a new run.
    doc["notes"] = os.urandom(PAD // 2).hex()
    path = docs / f"run{i:02d}.json"
    path.write_text(json.dumps(doc))
    return path


def test_database_filled_mid_store_keeps_every_committed_record_and_nothing_of_the_one_that_failed(
    small_tmpfs: Path, tmp_path: Path
) -> None:
    env = iolens_env(home=tmp_path)
    db = str(small_tmpfs / "iolens.db")
    docs = tmp_path / "docs"
    docs.mkdir()
    stored: list[Path] = []
    failed = None
    for i in range(40):
        path = _doc(i, docs)
        r = iolens("db", "import", str(path), "--db", db, env=env)
        assert "Traceback" not in r.stderr
        if r.returncode == 0:
            assert f"stored as run {len(stored) + 1}" in r.stdout, r.stdout
            stored.append(path)
            continue
        failed = (path, r)
        break
    assert failed is not None, "the tmpfs never filled"
    assert len(stored) >= 3, "the first documents should fit"
    path, r = failed
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("iolens: error: ") and "the file system is full" in r.stderr, r.stderr
    assert "(nothing stored)" in r.stderr

    # Every committed run is there, whole: its document is the one imported.
    runs = json.loads(iolens("db", "runs", "--json", "--db", db, env=env).stdout)
    assert len(runs) == len(stored)
    for run_id, source in enumerate(stored, start=1):
        show = iolens("db", "show", str(run_id), "--json", "--db", db, env=env)
        assert show.returncode == 0, show.stderr
        assert json.loads(show.stdout)["document"]["notes"] == json.loads(source.read_text())["notes"]
    check = iolens("db", "check", "--db", db, env=env)
    assert check.returncode == 0 and "no damage found" in check.stdout, check.stdout + check.stderr

    # Nothing of the failed record was kept: with room made (the tmpfs grown), it stores as a new run,
    # not "already stored", and the file is still sound.
    assert str(path) not in {run["source_path"] for run in runs}
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_tmpfs)], check=True)
    r = iolens("db", "import", str(path), "--db", db, env=env)
    assert r.returncode == 0 and f"stored as run {len(stored) + 1}" in r.stdout, r.stdout + r.stderr
    check = iolens("db", "check", "--db", db, env=env)
    assert check.returncode == 0, check.stdout + check.stderr


def test_benchmark_with_its_database_on_a_full_file_system_is_refused_before_the_run(
    small_tmpfs: Path, tmp_path: Path, engine: Path
) -> None:
    env = iolens_env({"IOLENS_BENCH": str(engine)}, home=tmp_path)
    db = str(small_tmpfs / "iolens.db")
    target = tmp_path / "f"
    r = iolens("ior", "-t", "4k", "-b", "16k", "-w", "-o", str(target), "--no-live", "--db", db, env=env)
    assert r.returncode == 0 and "stored as run 1" in r.stderr, r.stderr
    # Fill the tmpfs: SQLite cannot even make the shared-memory file it opens the database with.
    filler = small_tmpfs / "filler"
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\xff" * 4096)
        except OSError:
            pass
    r = iolens("ior", "-t", "4k", "-b", "16k", "-w", "-o", str(target), "--no-live", "--db", db, env=env)
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, (r.stdout, r.stderr)
    assert "the file system is full" in r.stderr and "nothing was run" in r.stderr, r.stderr
    assert not target.exists()
    filler.unlink()
    runs = json.loads(iolens("db", "runs", "--json", "--db", db, env=env).stdout)
    assert [run["id"] for run in runs] == [1]
    check = iolens("db", "check", "--db", db, env=env)
    assert check.returncode == 0, check.stdout + check.stderr


def test_monitor_whose_samples_stop_fitting_says_so_once_and_goes_on(
    small_tmpfs: Path, tmp_path: Path
) -> None:
    """The file system fills while `iolens monitor` runs: that storing stopped is said in one line, what could
    not be stored by the end in another; the monitor goes on and ends normally, the samples stored before
    stay, the file stays sound."""
    env = iolens_env(home=tmp_path)
    db = str(small_tmpfs / "iolens.db")
    monitor = ["monitor", "--db", db, "--interval", "0.2", "--no-live"]
    first = iolens(*monitor, "--duration", "1", "--out", os.devnull, env=env)
    assert first.returncode == 0 and "stored" in first.stderr, first.stderr
    count = iolens("db", "info", "--db", db, env=env).stdout
    before = int(
        next(line for line in count.splitlines() if "samples:" in line).split(":")[1].replace(",", "")
    )
    assert before > 0
    out = tmp_path / "stream.jsonl"
    proc = subprocess.Popen(
        [*_iolens_cmd(), "monitor", "--db", db, "--interval", "0.2", "--duration", "17", "--no-live", "--out",
         str(out)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # Once it has started (its stream has a first record), the tmpfs is filled.
        for _ in range(100):
            if out.exists() and out.stat().st_size > 0:
                break
            time.sleep(0.05)
        with open(small_tmpfs / "filler", "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\xff" * 4096)
            except OSError:
                pass
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in stderr, stderr
    assert proc.returncode == 0, stderr
    # Storing is tried within 15 s (the first batch comes after 5-15 s) and at the end. Said once when
    # storing stopped (the samples are kept and tried again), once at the end for what could still not be
    # stored: the monitor itself went on.
    lines = [line for line in stderr.splitlines() if "error" in line]
    assert len(lines) == 2 and "samples are not being stored" in lines[0], stderr
    assert "the file system is full" in lines[0]
    assert "samples were not stored" in lines[1] and "the file system is full" in lines[1], stderr
    assert len(out.read_text().splitlines()) >= 10  # the stream went on to its end
    (small_tmpfs / "filler").unlink()
    count = iolens("db", "info", "--db", db, env=env).stdout
    after = int(
        next(line for line in count.splitlines() if "samples:" in line).split(":")[1].replace(",", "")
    )
    assert after == before
    check = iolens("db", "check", "--db", db, env=env)
    assert check.returncode == 0, check.stdout + check.stderr


def _samples(db: str, env: dict[str, str]) -> int:
    info = iolens("db", "info", "--db", db, env=env).stdout
    line = next(line for line in info.splitlines() if line.strip().startswith("samples:"))
    return int(line.split(":")[1].replace(",", ""))


def _iolens_cmd() -> list[str]:
    import sys

    return [sys.executable, "-m", "iolens"]
