"""The find workload: exact counts on trees built here, the same counts whatever the number of ranks (local
and MPI), a huge directory shared evenly, --matches exact, bad input refused, and the tree never touched."""

from __future__ import annotations

import fnmatch
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .ior_helpers import CANARY_TEXT

REF_NS = 1_700_000_000_123_456_789  # the -newer reference's mtime (nanoseconds since the epoch)
IO500_SIZE = 3901


@dataclass
class FindResult:
    returncode: int
    stdout: str
    stderr: str
    doc: dict[str, Any] | None

    @property
    def find(self) -> dict[str, Any]:
        assert self.doc is not None, self.stderr
        return self.doc["find"]


def run_find(
    engine: Path,
    args: list[str],
    np: int = 1,
    launcher: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> FindResult:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [str(engine), "find", "--json", str(out), "--quiet"]
        if launcher is None:
            cmd += ["--np", str(np)]
        cmd += args
        if launcher is not None:
            cmd = [*launcher, *cmd]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env or os.environ.copy()
        )
        doc = json.loads(out.read_text()) if out.exists() else None
    return FindResult(proc.returncode, proc.stdout, proc.stderr, doc)


# ---- trees and the oracle ----------------------------------------------------------------------------------


def build_tree(base: Path) -> tuple[Path, Path]:
    """A tree with files of chosen sizes, mtimes either side of the reference and names with and without
    "01"; nested directories, an empty one, a symbolic link and a canary. Returns (root, reference file)."""
    ref = base / "reference"
    ref.write_text("")
    os.utime(ref, ns=(REF_NS, REF_NS))
    root = base / "tree"
    dirs = [root / "d0", root / "d1" / "sub", root / "d1" / "sub" / "deeper", root / "d2", root / "empty"]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    sizes = [0, 1, 512, 513, IO500_SIZE, IO500_SIZE - 1, IO500_SIZE + 1, 4096]
    i = 0
    for d in dirs[:-1]:
        for k in range(37):
            # digits spelled as letters, so only the x01y names hold "01"
            name = "f" + "".join(chr(ord("a") + int(c)) for c in str(i)) if k % 5 else f"x01y{i}"
            p = d / name
            with open(p, "wb") as f:
                f.truncate(sizes[i % len(sizes)])
            # newer, older, and exactly as old as the reference (not newer: the comparison is strict)
            t = (REF_NS + 1_000_000_000, REF_NS - 1_000_000_000, REF_NS, REF_NS + 1)[i % 4]
            os.utime(p, ns=(t, t))
            i += 1
    (root / "d2" / "link01").symlink_to("f0000")
    (root / "canary01.txt").write_text(CANARY_TEXT)
    return root, ref


def snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry's (mode, size, mtime_ns): equal before and after a run means the run changed nothing."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in [*dirnames, *filenames, ""]:
            p = os.path.join(dirpath, n) if n else dirpath
            st = os.lstat(p)
            out[p] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


def size_ok(spec: str, nbytes: int) -> bool:
    """find's -size, independently: units rounded up, +/- strictly more/less."""
    cmp = spec[0] if spec[0] in "+-" else ""
    body = spec[len(cmp) :]
    units = {"c": 1, "w": 2, "b": 512, "k": 1024, "M": 1 << 20, "G": 1 << 30}
    unit = units[body[-1]] if body[-1] in units else 512
    n = int(body[:-1] if body[-1] in units else body)
    have = -(-nbytes // unit)
    return have > n if cmp == "+" else have < n if cmp == "-" else have == n


def oracle(root: Path, newer: Path | None, size: str | None, name: str | None) -> tuple[int, list[str]]:
    """(entries scanned, paths matched) as find DIR would print them, computed from lstat in Python."""
    ref_ns = os.lstat(newer).st_mtime_ns if newer else None
    scanned, matched = 0, []
    for dirpath, dirnames, filenames in os.walk(root):
        entries = [dirpath] if dirpath == str(root) else []
        entries += [os.path.join(dirpath, n) for n in [*dirnames, *filenames]]
        for p in entries:
            scanned += 1
            st = os.lstat(p)
            if name is not None and not fnmatch.fnmatchcase(os.path.basename(p), name):
                continue
            if size is not None and not size_ok(size, st.st_size):
                continue
            if ref_ns is not None and not st.st_mtime_ns > ref_ns:
                continue
            matched.append(p)
    return scanned, sorted(matched)


def predicate_args(newer: Path | None, size: str | None, name: str | None) -> list[str]:
    args: list[str] = []
    if newer is not None:
        args += ["-newer", str(newer)]
    if size is not None:
        args += ["-size", size]
    if name is not None:
        args += ["-name", name]
    return args


@pytest.fixture
def tree(tmpfs_dir: Path) -> tuple[Path, Path]:
    return build_tree(tmpfs_dir)


PREDICATES = {
    "none": (False, None, None),
    "newer": (True, None, None),
    "size": (False, f"{IO500_SIZE}c", None),
    "name": (False, None, "*01*"),
    "all": (True, f"{IO500_SIZE}c", "*01*"),
}


# ---- counts ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("np_", [1, 2, 4])
@pytest.mark.parametrize("which", list(PREDICATES))
def test_counts_are_exact_for_each_predicate_and_rank_count(
    engine: Path, tree: tuple[Path, Path], which: str, np_: int
) -> None:
    root, ref = tree
    use_newer, size, name = PREDICATES[which]
    newer = ref if use_newer else None
    before = snapshot(root)
    res = run_find(engine, [str(root), *predicate_args(newer, size, name)], np=np_)
    assert res.returncode == 0, res.stderr
    scanned, matched = oracle(root, newer, size, name)
    f = res.find
    assert f["scanned"] == scanned
    assert f["matched"] == len(matched)
    assert f["errors"] == 0 and f["first_error"] is None
    assert sum(r["scanned"] for r in f["per_rank"]) == scanned
    assert sum(r["matched"] for r in f["per_rank"]) == len(matched)
    assert [r["rank"] for r in f["per_rank"]] == list(range(np_))
    assert f["time_s"] > 0 and f["rate_per_s"] == pytest.approx(scanned / f["time_s"])
    assert res.doc is not None and res.doc["workload"] == "find" and res.doc["status"] == "ok"
    assert res.doc["comm"]["ranks"] == np_
    if size is not None or newer is not None:
        assert f["latency_ns"]["count"] == f["stat_calls"] > 0
    else:
        assert f["stat_calls"] == 0  # d_type tells directories apart: no stat without -newer/-size
    assert snapshot(root) == before


def test_known_counts_of_the_built_tree(engine: Path, tree: tuple[Path, Path]) -> None:
    """The oracle itself, pinned: 148 files, 5 directories + the root, a link and the canary."""
    root, ref = tree
    res = run_find(engine, [str(root)], np=2)
    assert res.find["scanned"] == 1 + 6 + 148 + 1 + 1
    # sizes cycle over 8 values (one is 3901) and mtimes over 4 (two are newer): i % 8 == 4 is 3901 bytes
    # and has i % 4 == 0 (newer); names x01y<i> are every 5th file.
    res = run_find(engine, [str(root), "-newer", str(ref), "-size", "3901c"], np=2)
    assert res.find["matched"] == len([i for i in range(148) if i % 8 == 4])
    res = run_find(engine, [str(root), "-newer", str(ref), "-size", "3901c", "-name", "*01*"], np=3)
    assert res.find["matched"] == len([i for i in range(148) if i % 8 == 4 and (i % 37) % 5 == 0])


def test_counts_agree_with_gnu_find(engine: Path, tree: tuple[Path, Path]) -> None:
    if shutil.which("find") is None:
        pytest.skip("find is not installed")
    root, ref = tree
    for which, (use_newer, size, name) in PREDICATES.items():
        args = predicate_args(ref if use_newer else None, size, name)
        gnu = subprocess.run(["find", str(root), *args], capture_output=True, text=True, check=True)
        res = run_find(engine, [str(root), *args], np=2)
        assert res.find["matched"] == len(gnu.stdout.splitlines()), which
    everything = subprocess.run(["find", str(root)], capture_output=True, text=True, check=True)
    assert run_find(engine, [str(root)], np=2).find["scanned"] == len(everything.stdout.splitlines())


@pytest.mark.parametrize("spec", ["+3900c", "-513c", "1", "2", "-1k", "+0"])
def test_size_comparisons_and_units_as_find(engine: Path, tree: tuple[Path, Path], spec: str) -> None:
    root, _ = tree
    res = run_find(engine, [str(root), "-size", spec], np=2)
    assert res.returncode == 0, res.stderr
    assert res.find["matched"] == len(oracle(root, None, spec, None)[1])


@pytest.mark.parametrize("np_", [1, 2, 3, 4])
def test_counts_and_matches_are_exact_when_every_directory_is_shared(
    engine: Path, tree: tuple[Path, Path], tmpfs_dir: Path, np_: int
) -> None:
    # --split-entries 3: every directory with more than 3 entries is set aside and finished by all ranks
    # together, several at once (one per reader), with subdirectories listed by the reader while it shares.
    root, ref = tree
    out = tmpfs_dir / "matches.txt"
    for which in ("none", "all", "size"):
        use_newer, size, name = PREDICATES[which]
        args = [str(root), *predicate_args(ref if use_newer else None, size, name), "--split-entries", "3"]
        res = run_find(engine, [*args, "--matches", str(out)], np=np_)
        assert res.returncode == 0, res.stderr
        scanned, matched = oracle(root, ref if use_newer else None, size, name)
        f = res.find
        assert (f["scanned"], f["matched"]) == (scanned, len(matched)), which
        assert sorted(out.read_text().splitlines()) == matched, which
        # the root, d0, d2, d1/sub and d1/sub/deeper; d1 (only sub in it) and empty stay with their readers
        assert f["work_sharing"]["shared_directories"] == 5
        assert sum(r["directories"] for r in f["per_rank"]) == f["directories"] == 7


def test_counts_on_a_disk_file_system(engine: Path, disk_dir: Path) -> None:
    root, ref = build_tree(disk_dir)
    for np_ in (1, 3):
        res = run_find(engine, [str(root), "-newer", str(ref), "-size", "3901c", "-name", "*01*"], np=np_)
        scanned, matched = oracle(root, ref, "3901c", "*01*")
        assert (res.find["scanned"], res.find["matched"]) == (scanned, len(matched))


# ---- --matches ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("np_", [1, 3])
def test_matches_file_lists_exactly_the_matching_paths(
    engine: Path, tree: tuple[Path, Path], tmpfs_dir: Path, np_: int
) -> None:
    root, ref = tree
    out = tmpfs_dir / "matches.txt"
    before = snapshot(root)
    res = run_find(engine, [str(root), "-newer", str(ref), "-name", "*01*", "--matches", str(out)], np=np_)
    assert res.returncode == 0, res.stderr
    lines = out.read_text().splitlines()
    assert sorted(lines) == oracle(root, ref, None, "*01*")[1]
    assert len(lines) == res.find["matched"]
    assert res.find["matches_file"] == str(out)
    # no part or temporary file is left beside it
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == ["matches.txt", "reference", "tree"]
    assert snapshot(root) == before


def test_matches_includes_the_root_when_it_matches(engine: Path, tmpfs_dir: Path) -> None:
    root = tmpfs_dir / "top01"
    (root / "a").mkdir(parents=True)
    out = tmpfs_dir / "m.txt"
    res = run_find(engine, [str(root) + "/", "-name", "*01*", "--matches", str(out)], np=2)
    assert res.returncode == 0, res.stderr
    assert out.read_text().splitlines() == [str(root) + "/"]
    res = run_find(engine, [str(root) + "/", "--matches", str(out)], np=2)
    assert sorted(out.read_text().splitlines()) == [str(root) + "/", str(root) + "/a"]


# ---- one huge directory ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def huge_tree() -> Iterator[Path]:
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    base = Path(tempfile.mkdtemp(prefix="iolens-test-find-", dir=shm))
    try:
        d = base / "huge"
        d.mkdir()
        for i in range(100_000):
            fd = os.open(d / f"file.{i:06d}", os.O_CREAT | os.O_WRONLY, 0o644)
            if i % 10 == 0:
                os.ftruncate(fd, IO500_SIZE)
            os.close(fd)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_huge_directory_is_evaluated_by_the_other_rank_while_it_is_read(
    engine: Path, huge_tree: Path
) -> None:
    # IO500's predicates: reading the names costs more than matching them, so the reader (rank 0) keeps only
    # a few entries and rank 1 evaluates the rest as the chunks arrive.
    res = run_find(engine, [str(huge_tree), "-size", "3901c", "-name", "*01*"], np=2)
    assert res.returncode == 0, res.stderr
    f = res.find
    assert f["scanned"] == 100_002
    expected = len([i for i in range(0, 100_000, 10) if "01" in f"file.{i:06d}"])
    assert f["matched"] == expected
    ws = f["work_sharing"]
    # 100,000 names of 13 bytes with their type byte: 1.4 MB, shared in steps of at most 128 KiB
    assert ws["shared_directories"] == 1 and ws["shared_chunks"] >= 10
    reader, other = f["per_rank"]
    assert (reader["directories"], other["directories"]) == (2, 0)
    assert 0 < reader["scanned"] < other["scanned"], f["per_rank"]
    assert reader["scanned"] + other["scanned"] == 100_002


def test_huge_directory_keeps_both_ranks_equally_busy(engine: Path, huge_tree: Path) -> None:
    # With -size every entry costs a stat: the reader takes as many as bring its busy time (reading included)
    # level with the other rank's.
    for _ in range(3):
        res = run_find(engine, [str(huge_tree), "-size", "3901c"], np=2)
        assert res.returncode == 0, res.stderr
        f = res.find
        assert (f["scanned"], f["matched"], f["stat_calls"]) == (100_002, 10_000, 100_002)
        busy = sorted(r["busy_s"] for r in f["per_rank"])
        assert busy[0] > 0 and busy[1] <= 3 * busy[0], f["per_rank"]
        assert all(r["stat_calls"] > 1000 for r in f["per_rank"]), f["per_rank"]


def test_huge_directories_of_several_readers_are_read_in_parallel(engine: Path, tmpfs_dir: Path) -> None:
    # mdtest-easy's shape: one large directory per rank at the same level; each rank reads its own.
    root = tmpfs_dir / "easy"
    for d in range(2):
        sub = root / f"mdtest_tree.{d}.0"
        sub.mkdir(parents=True)
        for i in range(5000):
            (sub / f"file.mdtest.{d}.{i}").touch()
    res = run_find(engine, [str(root), "-name", "*1"], np=2)
    assert res.returncode == 0, res.stderr
    f = res.find
    assert f["scanned"] == 1 + 2 + 10_000
    assert f["matched"] == 2 * 500
    assert f["work_sharing"]["shared_directories"] == 2
    assert [r["directories"] for r in f["per_rank"]] == [2, 1]


def test_huge_directory_under_mpi(engine: Path, huge_tree: Path, mpi_env: dict[str, str]) -> None:
    res = run_find(
        engine,
        [str(huge_tree), "-size", "3901c"],
        launcher=["mpirun", "-np", "4", "--oversubscribe"],
        env=mpi_env,
    )
    assert res.returncode == 0, res.stderr
    f = res.find
    assert (f["scanned"], f["matched"], f["stat_calls"]) == (100_002, 10_000, 100_002)
    assert f["work_sharing"]["shared_directories"] == 1 and f["work_sharing"]["shared_chunks"] >= 10
    assert sum(r["scanned"] for r in f["per_rank"]) == 100_002
    # every rank evaluated some of it, the reader (rank 0) included only when its reading left it time
    assert all(r["scanned"] > 0 for r in f["per_rank"][1:]), f["per_rank"]


def test_stonewall_stops_the_walk_early(engine: Path, huge_tree: Path) -> None:
    res = run_find(engine, [str(huge_tree), "-size", "3901c", "--stonewall", "0.000001"], np=2)
    assert res.returncode == 0, res.stderr
    f = res.find
    assert f["stonewall"] == {"deadline_s": 0.000001, "hit": True}
    assert 0 < f["scanned"] < 100_002
    full = run_find(engine, [str(huge_tree), "-size", "3901c"], np=2)
    assert full.find["stonewall"] is None and full.find["scanned"] == 100_002


# ---- MPI ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("np_", [2, 4])
@pytest.mark.parametrize("which", ["none", "all"])
def test_mpirun_counts_match_local(
    engine: Path, tree: tuple[Path, Path], mpi_env: dict[str, str], np_: int, which: str
) -> None:
    root, ref = tree
    use_newer, size, name = PREDICATES[which]
    args = [str(root), *predicate_args(ref if use_newer else None, size, name)]
    local = run_find(engine, args, np=np_)
    mpi = run_find(engine, args, launcher=["mpirun", "-np", str(np_), "--oversubscribe"], env=mpi_env)
    assert mpi.returncode == 0, mpi.stderr
    assert mpi.doc is not None and mpi.doc["comm"]["kind"] == "mpi" and mpi.doc["comm"]["ranks"] == np_
    scanned, matched = oracle(root, ref if use_newer else None, size, name)
    for res in (local, mpi):
        assert (res.find["scanned"], res.find["matched"]) == (scanned, len(matched))
    # the partition is deterministic: the same rank evaluates the same entries either way
    assert [r["scanned"] for r in mpi.find["per_rank"]] == [r["scanned"] for r in local.find["per_rank"]]


# ---- bad input ---------------------------------------------------------------------------------------------


BAD = [
    ([], "DIR", "missing"),
    (["{base}/absent"], "DIR", "No such file"),
    (["{base}/reference"], "DIR", "not a directory"),
    (["{root}", "-newer", "{base}/absent"], "-newer", "cannot stat"),
    (["{root}", "-size", "12x"], "-size", "unknown unit"),
    (["{root}", "-size", "1.5k"], "-size", "not a size"),
    (["{root}", "-size", ""], "-size", "empty"),
    (["{root}", "-type", "f"], "-type", "unknown option"),
    (["{root}", "--frobnicate"], "--frobnicate", "unknown option"),
    (["{root}", "--matches", "{root}/d0/list"], "--matches", "inside DIR"),
    (["{root}", "--matches", "{base}/no/such/list"], "--matches", "does not exist"),
    (["{root}", "--stonewall", "-1"], "--stonewall", "below the minimum"),
    (["{root}", "--np", "0"], "--np", "below the minimum"),
    (["{root}", "{base}"], "{base}", "one DIR"),
    (["{root}", "-name"], "-name", "missing value"),
]


@pytest.mark.parametrize("args,option,words", BAD, ids=[" ".join(b[0]) or "no-DIR" for b in BAD])
def test_bad_input_exits_2_naming_the_option(
    engine: Path, tree: tuple[Path, Path], args: list[str], option: str, words: str
) -> None:
    root, ref = tree
    base = ref.parent
    fill = {"base": str(base), "root": str(root)}
    before = snapshot(base)
    res = run_find(engine, [a.format(**fill) for a in args], np=2)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.startswith("iolens-bench: error: ")
    assert option.format(**fill) in res.stderr and words in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert res.doc is None
    assert snapshot(base) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_unreadable_directory_is_counted_and_the_walk_goes_on(engine: Path, tree: tuple[Path, Path]) -> None:
    root, _ = tree
    locked = root / "d0"
    locked.chmod(0)
    try:
        res = run_find(engine, [str(root)], np=2)
    finally:
        locked.chmod(0o755)
    assert res.returncode == 0, res.stderr
    assert res.find["errors"] >= 1
    assert "d0" in res.find["first_error"]["message"]


# ---- the iolens command and the Python model ---------------------------------------------------------------


def test_iolens_find_prints_the_rank_table_and_keeps_the_document(
    iolens_bin: list[str], engine: Path, tree: tuple[Path, Path], tmpfs_dir: Path
) -> None:
    from iolens import results

    root, ref = tree
    out = tmpfs_dir / "doc.json"
    env = dict(os.environ, IOLENS_BENCH=str(engine))
    cmd = [
        *iolens_bin,
        "find",
        str(root),
        "-newer",
        str(ref),
        "-name",
        "*01*",
        "--np",
        "2",
        "--json",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "scanned" in proc.stdout and "kIOPS" in proc.stdout and "total" in proc.stdout
    doc = results.load(out)
    scanned, matched = oracle(root, ref, None, "*01*")
    assert isinstance(doc, results.FindDocument) and doc.ok and doc.find is not None
    assert (doc.find.scanned, doc.find.matched) == (scanned, len(matched))
    assert [r.rank for r in doc.find.per_rank] == [0, 1]
    assert doc.find.predicates.expression() == f"-newer {ref} -name '*01*'"
    assert doc.find.kiops == pytest.approx(doc.find.rate_per_s / 1000)


def test_iolens_find_bad_input_exits_2(iolens_bin: list[str], engine: Path, tree: tuple[Path, Path]) -> None:
    root, _ = tree
    env = dict(os.environ, IOLENS_BENCH=str(engine))
    proc = subprocess.run(
        [*iolens_bin, "find", str(root), "-size", "3901q"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "iolens: error: -size" in proc.stderr


def test_find_model_reads_a_failed_document_and_refuses_a_broken_one() -> None:
    from iolens import results

    failed = {
        "schema_version": 1, "tool": "iolens", "workload": "find", "status": "failed",
        "error": {"message": "interrupted by signal 2 (Interrupt)", "rank": 0, "phase": "walk"},
        "config": {"root": "/x"},
    }  # fmt: skip
    doc = results.parse(failed)
    assert isinstance(doc, results.FindDocument)
    assert not doc.ok and doc.find is None and doc.error is not None and doc.error.rank == 0
    # An ok document must have every section: the first missing key is named.
    with pytest.raises(results.ResultError, match="missing"):
        results.parse(dict(failed, status="ok", error=None))


def test_engine_progress_lines_become_find_live_lines(engine: Path, huge_tree: Path, tmp_path: Path) -> None:
    from iolens import launch, render

    # What `iolens find` runs (the engine with --progress), through the launcher the CLI uses: a line at the
    # end of every level, and every 0.5 s inside one.
    out = tmp_path / "find.json"
    seen: list[dict[str, Any]] = []
    req = launch.RunRequest(
        "find", [str(huge_tree), "-size", "3901c", "--json", str(out), "--progress", "--quiet"], np=2
    )
    outcome = launch.run(req, engine, on_progress=seen.append)
    assert outcome.returncode == 0, outcome
    f = json.loads(out.read_text())["find"]
    assert f["scanned"] == 100_002
    assert all(p["phase"] == "find" and p["estimate"] is True for p in seen)
    levels = [p["level"] for p in seen]
    assert levels == sorted(levels) and {1, 2} <= set(levels), seen
    items = [p["items"] for p in seen]
    # rank 0's count so far x 2 ranks; the last line comes after the last level, so it is rank 0's final count
    assert items == sorted(items) and items[-1] == 2 * f["per_rank"][0]["scanned"]
    last = seen[-1]
    line = render.progress_line(last, last["elapsed_s"] + 0.1, "find").plain
    assert line.startswith(f"find level {last['level']}")
    assert f"{last['items']:,} scanned" in line and f"{last['items_per_s']:,.0f} entries/s" in line


def test_live_line_shows_entries_scanned_and_their_rate() -> None:
    from iolens import render

    # As find.c prints it: items = rank 0's scanned x ranks, items_per_s their rate.
    progress = {"phase": "find", "level": 3, "elapsed_s": 1.5, "items": 120000, "items_per_s": 80000.0,
                "estimate": True}  # fmt: skip
    line = render.progress_line(progress, 2.0, "find").plain
    assert line.startswith("find level 3")
    assert "80,000 entries/s" in line and "120,000 scanned" in line and "phase 1.5 s" in line
    assert "MiB" not in line and "(estimate)" in line
