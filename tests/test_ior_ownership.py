"""iolens writes over and removes only what it created: the ledger (.iolens-owned) lists every file and -u
directory by its full name, so owning one name never covers another (other ranks, -m iterations, the shared
file beside per-process files)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .ior_helpers import CANARY_TEXT, assert_only_canary_left, place_canary, run_engine

USER_TEXT = "user data: not iolens's\n"
SMALL = ["-t", "16k", "-b", "64k"]


def ledger(directory: Path) -> set[str]:
    path = directory / ".iolens-owned"
    return set(path.read_text().split()) if path.exists() else set()


# (the kept run that makes an owned file, the run that would write over the foreign name, the foreign name)
LAYOUTS = {
    "other-rank": (["-F", "--np", "1"], ["-F", "--np", "2"], "f.00000001"),
    "next-iteration": (["-m", "-i", "1"], ["-m", "-i", "2"], "f.1"),
    "shared-beside-per-process": (["-F"], [], "f"),
    "per-process-beside-shared": ([], ["-F"], "f.00000000"),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_foreign_file_beside_an_owned_one_is_refused_before_any_io_and_survives(
    engine: Path, tmpfs_dir: Path, layout: str
) -> None:
    kept_args, run_args, foreign_name = LAYOUTS[layout]
    canary = place_canary(tmpfs_dir)
    target = str(tmpfs_dir / "f")
    kept = run_engine(engine, [*SMALL, "-w", "-k", *kept_args, "-o", target])
    assert kept.returncode == 0, kept.stderr
    owned_before = ledger(tmpfs_dir)
    assert owned_before and foreign_name not in owned_before
    stamps = {n: (tmpfs_dir / n).stat().st_mtime_ns for n in owned_before}
    foreign = tmpfs_dir / foreign_name
    foreign.write_text(USER_TEXT)

    res = run_engine(engine, [*SMALL, "-w", *run_args, "-o", target])
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert foreign_name in res.stderr and "not created by iolens" in res.stderr
    assert res.doc is None
    assert foreign.read_text() == USER_TEXT
    # Refused before any I/O: the owned files were not touched either.
    assert {n: (tmpfs_dir / n).stat().st_mtime_ns for n in owned_before} == stamps
    assert ledger(tmpfs_dir) == owned_before

    # --remove-only takes the owned files and leaves the foreign one.
    gone = run_engine(engine, ["--remove-only", *kept_args, "-o", target])
    assert gone.returncode == 0, gone.stderr
    assert foreign.read_text() == USER_TEXT
    foreign.unlink()
    assert_only_canary_left(tmpfs_dir, canary)


def test_use_existing_writes_into_a_foreign_file_but_never_removes_it(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    target = str(tmpfs_dir / "f")
    assert run_engine(engine, [*SMALL, "-F", "-w", "-k", "-o", target]).returncode == 0
    foreign = tmpfs_dir / "f.00000001"
    foreign.write_text(USER_TEXT)
    res = run_engine(engine, [*SMALL, "-F", "-w", "-r", "-R", "-E", "-o", target], np=2)
    assert res.returncode == 0, res.stderr
    assert res.doc["phases"][1]["verify"]["errors"] == 0
    # Written into (that is what -E asks for), but not iolens's: it stays, and is not in the ledger.
    assert foreign.stat().st_size == 64 * 1024
    assert ledger(tmpfs_dir) == set()
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == sorted([canary.name, foreign.name])


@pytest.mark.parametrize("extra", [[], ["-E"]], ids=["read", "read-use-existing"])
def test_reading_a_foreign_file_never_removes_it(engine: Path, tmpfs_dir: Path, extra: list[str]) -> None:
    data = tmpfs_dir / "dataset"
    data.write_bytes(b"x" * 65536)
    res = run_engine(engine, [*SMALL, "-r", *extra, "-o", str(data)])
    assert res.returncode == 0, res.stderr
    assert data.read_bytes() == b"x" * 65536
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == ["dataset"]


def test_ledger_lists_every_created_file_and_directory_by_its_full_name(
    engine: Path, tmpfs_dir: Path
) -> None:
    layout = ["-F", "-u", "-m", "-i", "2", "-o", str(tmpfs_dir / "f")]
    res = run_engine(engine, [*SMALL, "-w", "-k", *layout], np=2)
    assert res.returncode == 0, res.stderr
    assert ledger(tmpfs_dir) == {
        "0/", "1/", "0/f.00000000.0", "0/f.00000000.1", "1/f.00000001.0", "1/f.00000001.1",
    }  # fmt: skip
    gone = run_engine(engine, ["--remove-only", *layout], np=2)
    assert gone.returncode == 0, gone.stderr
    assert list(tmpfs_dir.iterdir()) == []


def test_unique_dir_that_existed_before_the_run_is_kept(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    mine = tmpfs_dir / "0"
    mine.mkdir()
    theirs = tmpfs_dir / "1"
    theirs.mkdir()
    (theirs / "notes.txt").write_text(USER_TEXT)
    res = run_engine(engine, [*SMALL, "-F", "-u", "-w", "-r", "-R", "-o", str(tmpfs_dir / "f")], np=3)
    assert res.returncode == 0, res.stderr
    # 0/ and 1/ were there before (one empty, one not): both stay, with only what they held; 2/ was iolens's.
    assert mine.is_dir() and list(mine.iterdir()) == []
    assert [p.name for p in theirs.iterdir()] == ["notes.txt"]
    assert (theirs / "notes.txt").read_text() == USER_TEXT
    assert canary.read_text() == CANARY_TEXT
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == sorted([canary.name, "0", "1"])
