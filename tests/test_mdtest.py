"""End-to-end runs of the mdtest workload: real files and directories on tmpfs, real processes (forked ranks
and mpirun), exact item counts for every phase, mdtest's layout on disk, and a canary that must survive."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from .ior_helpers import EngineResult, assert_only_canary_left, place_canary, run_engine

ALL = ("tree-create", "dir-create", "dir-stat", "dir-rename", "dir-remove",
       "file-create", "file-stat", "file-read", "file-remove", "tree-remove")  # fmt: skip
# Which phases each of mdtest's phase flags selects (-C also builds the tree, -r also removes it). No phase
# flag at all selects every phase, mdtest 4's directory rename included (as "-U" does).
NO_PHASE_FLAG = ("-C", "-T", "-E", "-r", "-U")
SELECTS = {
    "-U": {"dir-rename"},
    "-C": {"tree-create", "dir-create", "file-create"},
    "-T": {"dir-stat", "file-stat"},
    "-E": {"file-read"},
    "-r": {"dir-remove", "file-remove", "tree-remove"},
}
# -N S: phase k works on the items of rank (r + k*S) % ranks.
PHASE_K = {"create": 0, "stat": 1, "read": 2, "remove": 3}


def md(engine: Path, args: list[str], np: int = 1, **kw: Any) -> EngineResult:
    return run_engine(engine, args, np=np, workload="mdtest", **kw)


def ok(res: EngineResult) -> dict[str, Any]:
    assert res.returncode == 0, res.stderr
    assert res.doc is not None and res.doc["status"] == "ok" and res.doc["error"] is None
    assert res.doc["workload"] == "mdtest"
    return res.doc


def tree_size(depth: int, branch: int) -> int:
    return sum(branch**d for d in range(depth + 1))


def expected(
    n: int,
    np: int,
    *,
    unique: bool,
    depth: int = 0,
    branch: int = 1,
    leaf: bool = False,
    per_dir: int = 0,
    files: bool = True,
    dirs: bool = True,
    flags: tuple[str, ...] = NO_PHASE_FLAG,
) -> list[tuple[str, int]]:
    """(phase, items) in run order, worked out from mdtest's rules independently of the engine's geometry."""
    dirs_in_tree = tree_size(depth, branch)
    item_dirs = branch**depth if leaf else dirs_in_tree
    if per_dir:
        items, loops = n, n // (per_dir * item_dirs)
    else:
        items, loops = n // item_dirs * item_dirs, 1
    trees = loops * dirs_in_tree * (np if unique else 1)
    wanted = set().union(*(SELECTS[f] for f in flags))
    out = []
    for name in ALL:
        if name not in wanted or (name.startswith("dir-") and not dirs):
            continue
        if name.startswith("file-") and not files:
            continue
        if name == "dir-rename":
            # mdtest 4 renames a rank's items only when it has more than one; with -I loops, a
            # directory's worth in each test directory.
            renamed = items if loops == 1 else per_dir * loops
            if items > 1 and (loops == 1 or per_dir > 1):
                out.append((name, renamed * np))
            continue
        out.append((name, trees if name.startswith("tree-") else items * np))
    return out


def counts(doc: dict[str, Any]) -> list[tuple[str, int]]:
    return [(p["name"], p["items"]) for p in doc["phases"]]


def phase(doc: dict[str, Any], name: str, iteration: int = 0) -> dict[str, Any]:
    return next(p for p in doc["phases"] if p["name"] == name and p["iteration"] == iteration)


def check_phase_figures(doc: dict[str, Any], items_per_rank: int) -> None:
    """What holds for every item phase: per-rank counts, one latency sample per item, consistent rates."""
    ranks = doc["comm"]["ranks"]
    for p in doc["phases"]:
        assert p["rate_per_s"] == pytest.approx(p["items"] / p["time_s"], rel=1e-6)
        # IO500's form: all ranks' items over the slowest rank's own time.
        slowest = max(r["time_s"] for r in p["per_rank"])
        assert p["io500_time_s"] == pytest.approx(slowest, rel=1e-6, abs=1e-9)
        assert p["io500_rate_per_s"] == pytest.approx(p["items"] / slowest, rel=1e-6)
        # The barrier-to-barrier time spans every rank's own (first start to last exit from the barrier).
        assert 0 < p["io500_time_s"] <= p["time_s"] + 1e-9
        assert [r["rank"] for r in p["per_rank"]] == list(range(ranks))
        assert sum(r["items"] for r in p["per_rank"]) == p["items"]
        if p["name"].startswith("tree-"):
            continue
        # The rename goes over a directory's worth of items in each test directory when -I splits them.
        loops = doc["geometry"]["loops"]
        want = (
            doc["geometry"]["items_per_dir"] * loops
            if p["name"] == "dir-rename" and loops > 1
            else items_per_rank
        )
        assert [r["items"] for r in p["per_rank"]] == [want] * ranks, p["name"]
        lat = p["latency_ns"]
        assert lat["count"] == p["items"], p["name"]
        assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
        assert sum(b[2] for b in lat["buckets"]) == lat["count"]


def subtrees(d: Path) -> list[str]:
    return sorted(e.name for e in d.iterdir() if e.name.startswith("mdtest_tree"))


def made_test_dirs(d: Path) -> list[str]:
    return sorted(e.name for e in d.iterdir() if e.name.startswith("test-dir"))


@pytest.fixture
def md_dir(tmpfs_dir: Path) -> Path:
    place_canary(tmpfs_dir)
    return tmpfs_dir


def canary_only(d: Path) -> None:
    assert_only_canary_left(d, d / "canary.txt")


# --- counts ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("np_", [1, 2])
@pytest.mark.parametrize("unique", [False, True], ids=["one-tree", "unique"])
def test_every_phase_operates_on_exactly_n_items_per_rank(
    engine: Path, md_dir: Path, np_: int, unique: bool
) -> None:
    args = ["-n", "24", "-d", str(md_dir)] + (["-u"] if unique else [])
    doc = ok(md(engine, args, np=np_))
    assert counts(doc) == expected(24, np_, unique=unique)
    assert doc["comm"]["ranks"] == np_
    g = doc["geometry"]
    assert (g["items_per_rank"], g["items_per_dir"], g["dirs_in_tree"], g["loops"]) == (24, 24, 1, 1)
    assert (g["unique_dir"], g["leaf_only"], g["depth"], g["paths"]) == (unique, False, 0, [str(md_dir)])
    check_phase_figures(doc, 24)
    assert all(p["owner_shift"] == 0 and p["stonewall"] is None for p in doc["phases"])
    summary = {s["name"]: s for s in doc["summary"]}
    assert set(summary) == {name for name, _ in counts(doc)}
    for s in summary.values():
        assert s["iterations"] == 1 and s["items"] == phase(doc, s["name"])["items"]
    canary_only(md_dir)


@pytest.mark.parametrize(
    ("leaf", "n", "unique", "per_rank"),
    [(False, 130, False, 130), (False, 100, True, 91), (True, 90, True, 90), (True, 100, False, 99)],
    ids=["all-dirs", "all-dirs-rounded", "leaves", "leaves-rounded"],
)
def test_tree_of_depth_2_branch_3_counts_follow_mdtest_rules(
    engine: Path, md_dir: Path, leaf: bool, n: int, unique: bool, per_rank: int
) -> None:
    args = (
        ["-n", str(n), "-z", "2", "-b", "3", "-d", str(md_dir)]
        + (["-L"] if leaf else [])
        + (["-u"] if unique else [])
    )
    doc = ok(md(engine, args, np=2))
    assert counts(doc) == expected(n, 2, unique=unique, depth=2, branch=3, leaf=leaf)
    g = doc["geometry"]
    assert g["dirs_in_tree"] == 13 and g["items_per_rank"] == per_rank
    assert g["items_per_dir"] == per_rank // (9 if leaf else 13)
    assert (g["depth"], g["branch"], g["leaf_only"]) == (2, 3, leaf)
    check_phase_figures(doc, per_rank)
    canary_only(md_dir)


@pytest.mark.parametrize("leaf", [False, True], ids=["all-dirs", "leaves"])
def test_tree_on_disk_is_nested_breadth_first(engine: Path, md_dir: Path, leaf: bool) -> None:
    n = 90 if leaf else 130
    base = ["-F", "-n", str(n), "-z", "2", "-b", "3", "-d", str(md_dir)] + (["-L"] if leaf else [])
    doc = ok(md(engine, [*base, "-C"], np=2))
    assert counts(doc) == [("tree-create", 13), ("file-create", 2 * n)]
    assert made_test_dirs(md_dir) == ["test-dir.0-0"]
    root = md_dir / "test-dir.0-0"
    assert subtrees(root) == ["mdtest_tree.0"]
    # Walk the tree by BFS number: k's children are k*3+1 .. k*3+3, nested as in the tree.
    where = {0: root / "mdtest_tree.0"}
    for k in range(13):
        kids = [k * 3 + c for c in (1, 2, 3)] if k < 4 else []
        assert subtrees(where[k]) == sorted(f"mdtest_tree.{c}" for c in kids), k
        for c in kids:
            where[c] = where[k] / f"mdtest_tree.{c}"
    per_dir = 10
    names: list[str] = []
    for k, d in where.items():
        files = sorted(e.name for e in d.iterdir() if e.is_file())
        holds = k >= 4 if leaf else True
        by_rank = Counter(f.rsplit(".", 1)[0] for f in files)
        assert by_rank == ({"file.mdtest.0": per_dir, "file.mdtest.1": per_dir} if holds else {}), k
        names += files
    assert len(names) == len(set(names)) == 2 * n
    doc = ok(md(engine, [*base, "-r"], np=2))
    assert counts(doc) == [("file-remove", 2 * n), ("tree-remove", 13)]
    canary_only(md_dir)


def test_items_per_dir_splits_into_test_directory_loops(engine: Path, md_dir: Path) -> None:
    base = ["-F", "-n", "40", "-I", "10", "-d", str(md_dir)]
    doc = ok(md(engine, [*base, "-C"], np=2))
    g = doc["geometry"]
    assert (g["loops"], g["items_per_dir"], g["items_per_rank"]) == (4, 10, 40)
    assert counts(doc) == [("tree-create", 4), ("file-create", 80)]
    assert counts(doc) == expected(40, 2, unique=False, per_dir=10, dirs=False, flags=("-C",))
    assert made_test_dirs(md_dir) == [f"test-dir.0-{loop}" for loop in range(4)]
    for loop in range(4):
        tree = md_dir / f"test-dir.0-{loop}" / "mdtest_tree.0"
        files = Counter(e.name.rsplit(".", 1)[0] for e in tree.iterdir())
        assert files == {"file.mdtest.0": 10, "file.mdtest.1": 10}, loop
    doc = ok(md(engine, [*base, "-r"], np=2))
    assert counts(doc) == [("file-remove", 80), ("tree-remove", 4)]
    canary_only(md_dir)
    # With a tree, a loop holds -I items in each of its directories: 30 items in 3 directories of 5 = 2 loops.
    doc = ok(md(engine, ["-u", "-n", "30", "-I", "5", "-z", "1", "-b", "2", "-d", str(md_dir)], np=2))
    assert doc["geometry"]["loops"] == 2
    assert counts(doc) == expected(30, 2, unique=True, depth=1, branch=2, per_dir=5)
    check_phase_figures(doc, 30)
    canary_only(md_dir)


def test_items_per_dir_without_n_fills_every_tree_directory_once(engine: Path, md_dir: Path) -> None:
    # mdtest: -I alone means -I items in each directory of the tree, one test directory.
    base = ["-u", "-I", "5", "-z", "1", "-b", "2", "-d", str(md_dir)]
    doc = ok(md(engine, [*base, "-F", "-C"], np=2))
    g = doc["geometry"]
    assert (g["items_per_rank"], g["items_per_dir"], g["loops"], g["dirs_in_tree"]) == (15, 5, 1, 3)
    for rank in range(2):
        tree = md_dir / "test-dir.0-0" / f"mdtest_tree.{rank}.0"
        for d in (tree, tree / f"mdtest_tree.{rank}.1", tree / f"mdtest_tree.{rank}.2"):
            assert len([e for e in d.iterdir() if e.is_file()]) == 5, d
    ok(md(engine, [*base, "-F", "-r"], np=2))
    canary_only(md_dir)
    doc = ok(md(engine, base, np=2))
    assert counts(doc) == expected(15, 2, unique=True, depth=1, branch=2, per_dir=5)
    check_phase_figures(doc, 15)
    canary_only(md_dir)


# The same run spelled with short and with long option names.
SHORT_AND_LONG = [
    ("-u", "--unique-dir"), ("-n 20", "--items=20"), ("-z 1", "--depth 1"), ("-b 2", "--branch-factor=2"),
    ("-L", "--leaf-only"), ("-w 64", "--write-bytes 64"), ("-e 64", "--read-bytes=64"),
    ("-X", "--verify-read"),
    ("-N 1", "--stride 1"), ("-R", "--random"), ("-G 5", "--random-seed=5"), ("-i 2", "--iterations 2"),
    ("-y", "--sync-file"), ("-Y", "--sync-phase"), ("-P", "--print-rate-and-time"),
    ("-t", "--time-unique-dir-overhead"), ("-p 0", "--pre-iteration-delay=0"), ("-a posix", "--api posix"),
]  # fmt: skip


def test_long_option_names_mean_what_the_short_ones_do(engine: Path, md_dir: Path, tmp_path: Path) -> None:
    short = [w for pair in SHORT_AND_LONG for w in pair[0].split()]
    long = [w for pair in SHORT_AND_LONG for w in pair[1].split()]
    a = ok(md(engine, [*short, "-d", str(md_dir)], np=2))
    b = ok(md(engine, [*long, "--dir", str(md_dir)], np=2))
    assert a["config"] == b["config"] and a["geometry"] == b["geometry"]
    items_only = [
        c for c in expected(20, 2, unique=True, depth=1, branch=2, leaf=True) if c[0][:5] != "tree-"
    ]
    assert counts(a) == counts(b) == items_only * 2
    # The phase selectors and the file/directory switches, split across runs.
    status = tmp_path / "status"
    steps = [
        (["--create-only", "--files-only", "--stonewall-timer", "5", "--stonewall-status-file", str(status)],
         [("tree-create", 1), ("file-create", 20)]),
        (["--stat-only", "--files-only", "--stonewall-status-file", str(status)], [("file-stat", 20)]),
        (["--read-only", "--files-only"], [("file-read", 20)]),
        (["--remove-only", "--files-only"], [("file-remove", 20), ("tree-remove", 1)]),
        (["--dirs-only"], expected(10, 2, unique=False, files=False)),
    ]  # fmt: skip
    for flags, want in steps:
        assert counts(ok(md(engine, [*flags, "--items", "10", "--dir", str(md_dir)], np=2))) == want, flags
    assert int(status.read_text()) == 10
    canary_only(md_dir)


def test_iterations_each_report_and_the_summary_agrees(engine: Path, md_dir: Path) -> None:
    doc = ok(md(engine, ["-F", "-u", "-n", "30", "-i", "3", "-d", str(md_dir)], np=2))
    one = expected(30, 2, unique=True, dirs=False)
    assert [(p["name"], p["iteration"], p["items"]) for p in doc["phases"]] == [
        (name, it, items) for it in range(3) for name, items in one
    ]
    for s in doc["summary"]:
        rates = [p["rate_per_s"] for p in doc["phases"] if p["name"] == s["name"]]
        assert s["iterations"] == 3 and s["items"] == dict(one)[s["name"]]
        assert s["rate_max_per_s"] == pytest.approx(max(rates))
        assert s["rate_min_per_s"] == pytest.approx(min(rates))
        assert s["rate_mean_per_s"] == pytest.approx(sum(rates) / 3)
        if not s["name"].startswith("tree-"):
            assert s["latency_ns"]["count"] == 3 * dict(one)[s["name"]]
    canary_only(md_dir)


def test_other_flags_keep_the_counts_exact(engine: Path, md_dir: Path) -> None:
    # Random order (-R -G), fsync per file (-y) and per phase (-Y), -P: the same work.
    args = ["-n", "20", "-u", "-R", "-G", "7", "-y", "-Y", "-P", "-w", "100", "-e", "100", "-X"]
    doc = ok(md(engine, [*args, "-d", str(md_dir)], np=2))
    assert counts(doc) == expected(20, 2, unique=True)
    check_phase_figures(doc, 20)
    assert phase(doc, "file-read")["verify"]["errors"] == 0
    canary_only(md_dir)


def _sync_calls(engine: Path, args: list[str], out: Path) -> dict[str, int]:
    """Runs the engine (2 ranks) under strace -c -f; the calls of the sync family, by name."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    strace = ["strace", "-f", "-c", "-qq", "-e", "trace=fsync,fdatasync,sync,syncfs", "-o", str(out)]
    ok(md(engine, ["--np", "2", *args], launcher=strace))
    calls = {"fsync": 0, "fdatasync": 0, "sync": 0, "syncfs": 0}
    for line in out.read_text().splitlines():
        words = line.split()
        if len(words) >= 5 and words[-1] in calls and words[0][0].isdigit():
            calls[words[-1]] = int(words[3])
    return calls


def test_sync_file_fsyncs_each_file_and_sync_phase_calls_sync_per_phase(
    engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    base = ["-F", "-n", "15", "-w", "8", "-e", "8", "-d", str(md_dir)]
    plain = _sync_calls(engine, base, tmp_path / "plain")
    with_y = _sync_calls(engine, [*base, "-y"], tmp_path / "y")
    with_big_y = _sync_calls(engine, [*base, "-Y"], tmp_path / "Y")
    # -y: one fsync per file created (2 ranks x 15), beyond the run's own (its ledger, its document).
    assert with_y["fsync"] - plain["fsync"] == 30, (plain, with_y)
    assert plain["sync"] == with_y["sync"] == 0
    # -Y: every rank calls sync() at the end of each of the 6 phases (tree and file create, stat, read,
    # remove, tree removal), and -Y alone fsyncs no file.
    assert with_big_y["sync"] == 2 * 6 and with_big_y["fsync"] == plain["fsync"], with_big_y
    assert plain["fdatasync"] == with_y["fdatasync"] == with_big_y["fdatasync"] == 0
    canary_only(md_dir)


def test_print_rate_and_time_adds_the_time_table(engine: Path, md_dir: Path) -> None:
    args = ["-F", "-u", "-n", "10", "-i", "2", "-d", str(md_dir)]
    plain = md(engine, args, np=2, quiet=False)
    timed = md(engine, [*args, "-P"], np=2, quiet=False)
    assert plain.returncode == timed.returncode == 0
    assert "SUMMARY time" not in plain.stdout
    assert "SUMMARY time (in s): (of 2 iterations)" in timed.stdout
    table = timed.stdout.split("SUMMARY time (in s)")[1]
    assert timed.doc is not None and timed.doc["config"]["print-rate-and-time"] is True
    for title, name in (("File creation", "file-create"), ("File removal", "file-remove")):
        row = re.search(rf"^   {title} +([0-9.]+) +([0-9.]+) +([0-9.]+)", table, re.M)
        assert row is not None, table
        times = [p["time_s"] for p in timed.doc["phases"] if p["name"] == name]
        assert float(row.group(1)) == pytest.approx(max(times), abs=0.0006)
        assert float(row.group(2)) == pytest.approx(min(times), abs=0.0006)
    canary_only(md_dir)


def test_dirs_only_creates_stats_and_removes_exactly_n_directories_per_rank(
    engine: Path, md_dir: Path
) -> None:
    base = ["-D", "-u", "-n", "20", "-z", "1", "-b", "2", "-d", str(md_dir)]
    doc = ok(md(engine, [*base, "-C"], np=2))
    assert counts(doc) == expected(18, 2, unique=True, depth=1, branch=2, files=False, flags=("-C",))
    assert counts(doc) == [("tree-create", 6), ("dir-create", 36)]
    # On disk: directories only, 18 per rank spread over its 3 tree directories, no file.
    root = md_dir / "test-dir.0-0"
    made = [e for e in root.rglob("*") if e.name.startswith(("dir.mdtest.", "file.mdtest."))]
    assert all(e.is_dir() and e.name.startswith("dir.mdtest.") for e in made)
    assert Counter(e.name.rsplit(".", 1)[0] for e in made) == {"dir.mdtest.0": 18, "dir.mdtest.1": 18}
    doc = ok(md(engine, [*base, "-T"], np=2))
    assert counts(doc) == [("dir-stat", 36)]
    check_phase_figures(doc, 18)
    doc = ok(md(engine, [*base, "-r"], np=2))
    assert counts(doc) == [("dir-remove", 36), ("tree-remove", 6)]
    canary_only(md_dir)
    # All phases in one run: no file phase at all.
    doc = ok(md(engine, ["-D", "-n", "15", "-d", str(md_dir)], np=2))
    assert counts(doc) == expected(15, 2, unique=False, files=False)
    assert not any(p["name"].startswith("file-") for p in doc["phases"])
    canary_only(md_dir)


def test_pre_iteration_delay_makes_the_run_longer_but_no_phase(engine: Path, md_dir: Path) -> None:
    args = ["-F", "-u", "-n", "10", "-i", "2", "-d", str(md_dir)]
    t0 = time.monotonic()
    plain = ok(md(engine, args, np=2))
    t1 = time.monotonic()
    delayed = ok(md(engine, [*args, "-p", "1"], np=2))
    t2 = time.monotonic()
    # mdtest waits before each iteration, the first one too: 2 waits of 1 s.
    assert t2 - t1 >= 2.0
    assert (t2 - t1) - (t1 - t0) > 1.5
    assert counts(delayed) == counts(plain) == expected(10, 2, unique=True, dirs=False) * 2
    assert all(p["time_s"] < 1.0 for p in delayed["phases"])
    canary_only(md_dir)


def test_random_order_stats_and_reads_every_item_exactly_once(
    engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    def visits(extra: list[str], tag: str) -> dict[str, list[str]]:
        debug = tmp_path / tag
        args = ["-F", "-u", "-n", "60", "-w", "8", "-e", "8", *extra, "-d", str(md_dir)]
        args += ["--debug-list", str(debug)]
        doc = ok(md(engine, args, np=2))
        assert counts(doc) == expected(60, 2, unique=True, dirs=False)
        check_phase_figures(doc, 60)
        by_phase: dict[str, list[str]] = {}
        for name, path in _debug_lines(Path(f"{debug}.0")):
            by_phase.setdefault(name, []).append(path)
        return by_phase

    ordered = visits([], "ordered")
    shuffled = visits(["-R", "-G", "11"], "random")
    again = visits(["-R", "-G", "11"], "again")
    reseeded = visits(["-R", "-G", "12"], "reseeded")
    for name in ("file-stat", "file-read"):
        # Each item once (a permutation of what was created), in an order that is not the creation order.
        assert len(shuffled[name]) == 60 and sorted(shuffled[name]) == sorted(ordered["file-create"])
        assert ordered[name] == ordered["file-create"]
        assert shuffled[name] != ordered[name]
        assert again[name] == shuffled[name]  # -G seeds the order
        assert sorted(reseeded[name]) == sorted(shuffled[name]) and reseeded[name] != shuffled[name]
    assert (
        shuffled["file-create"] == ordered["file-create"]
        and shuffled["file-remove"] == ordered["file-remove"]
    )
    canary_only(md_dir)


def _engine_has(engine: Path, feature: str) -> bool:
    return (
        f"{feature}=yes" in subprocess.run([str(engine), "--version"], capture_output=True, text=True).stdout
    )


@pytest.mark.parametrize(
    ("api", "feature"), [("io_uring", "liburing"), ("libaio", "libaio"), ("pvsync2", None)]
)
def test_other_backends_keep_the_counts_exact_and_the_data_right(
    engine: Path, md_dir: Path, api: str, feature: str | None
) -> None:
    if feature and not _engine_has(engine, feature):
        pytest.skip(f"the engine was built without {feature}")
    args = ["-a", api, "-u", "-n", "20", "-z", "1", "-b", "2", "-w", "3901", "-e", "3901", "-X"]
    doc = ok(md(engine, [*args, "-d", str(md_dir)], np=2))
    assert doc["config"]["api"] == api
    assert counts(doc) == expected(20, 2, unique=True, depth=1, branch=2)
    check_phase_figures(doc, 18)
    assert phase(doc, "file-read")["verify"] == {
        "files_checked": 36, "bytes_checked": 36 * 3901, "errors": 0, "first_bad_path": None,
    }  # fmt: skip
    canary_only(md_dir)


@pytest.mark.parametrize("np_", [2, 3, 4])
def test_timing_the_tree_with_the_items_has_no_tree_phase_and_survives_a_stride(
    engine: Path, md_dir: Path, np_: int
) -> None:
    # -t puts creating and removing the -u trees inside the first create and the last remove phase: no tree
    # phase of its own. With -N 1 another rank removes a rank's items (at np 2 and 4; at np 3 the remove
    # phase's shift is 3 = 0 mod 3): a tree may go only once that rank is done, in every repetition.
    base = ["-u", "-t", "-N", "1", "-z", "1", "-b", "2", "-d", str(md_dir)]
    every = expected(600, np_, unique=True, depth=1, branch=2)
    items_only = [c for c in every if not c[0].startswith("tree-")]
    assert [name for name, _ in items_only] == [n for n in ALL if not n.startswith("tree-")]
    for _ in range(4):
        doc = ok(md(engine, [*base, "-n", "600"], np=np_))
        assert counts(doc) == items_only
        check_phase_figures(doc, 600)
        canary_only(md_dir)
    # Split across runs: -C -t leaves every rank's tree, nested as without -t, for the later runs.
    doc = ok(md(engine, [*base, "-n", "60", "-C"], np=np_))
    assert counts(doc) == [("dir-create", 60 * np_), ("file-create", 60 * np_)]
    root = md_dir / "test-dir.0-0"
    assert subtrees(root) == sorted(f"mdtest_tree.{r}.0" for r in range(np_))
    for r in range(np_):
        top = root / f"mdtest_tree.{r}.0"
        assert subtrees(top) == [f"mdtest_tree.{r}.1", f"mdtest_tree.{r}.2"]
        assert len([e for e in top.rglob("file.mdtest.*") if e.is_file()]) == 60
    doc = ok(md(engine, [*base, "-n", "60", "-r"], np=np_))
    assert counts(doc) == [("dir-remove", 60 * np_), ("file-remove", 60 * np_)]
    canary_only(md_dir)


def test_null_backend_counts_but_creates_nothing(engine: Path, md_dir: Path) -> None:
    doc = ok(md(engine, ["-a", "null", "-n", "1000", "-z", "1", "-b", "4", "-d", str(md_dir)], np=2))
    assert counts(doc) == expected(1000, 2, unique=False, depth=1, branch=4)
    canary_only(md_dir)


def test_several_directories_are_used_round_robin_by_rank(engine: Path, tmpfs_dir: Path) -> None:
    a, b = tmpfs_dir / "a", tmpfs_dir / "b"
    a.mkdir()
    b.mkdir()
    canary_a, canary_b = place_canary(a), place_canary(b)
    base = ["-F", "-u", "-n", "10", "-d", f"{a}@{b}"]
    doc = ok(md(engine, [*base, "-C"], np=2))
    assert doc["geometry"]["paths"] == [str(a), str(b)]
    assert counts(doc) == [("tree-create", 2), ("file-create", 20)]
    assert subtrees(a / "test-dir.0-0") == ["mdtest_tree.0.0"]
    assert subtrees(b / "test-dir.0-0") == ["mdtest_tree.1.0"]
    ok(md(engine, [*base, "-r"], np=2))
    assert_only_canary_left(a, canary_a)
    assert_only_canary_left(b, canary_b)


def _two_dirs(base: Path) -> tuple[Path, Path, Path, Path]:
    a, b = base / "a", base / "b"
    a.mkdir()
    b.mkdir()
    return a, b, place_canary(a), place_canary(b)


def _created_by_rank(debug: Path, np_: int) -> dict[int, list[str]]:
    return {
        rank: [path for name, path in _debug_lines(Path(f"{debug}.{rank}")) if name == "file-create"]
        for rank in range(np_)
    }


def _check_shared_trees_over_two_dirs(doc: dict[str, Any], a: Path, b: Path, debug: Path, n: int) -> None:
    """np=4 over a@b without -u: ranks 0 and 2 share a's tree, ranks 1 and 3 b's."""
    assert doc["geometry"]["paths"] == [str(a), str(b)] and doc["geometry"]["unique_dir"] is False
    for rank, paths in _created_by_rank(debug, 4).items():
        tree = (a, b)[rank % 2] / "test-dir.0-0" / "mdtest_tree.0"
        assert paths == [f"{tree}/file.mdtest.{rank}.{i}" for i in range(n)], rank


def test_shared_tree_in_each_of_several_directories(engine: Path, tmpfs_dir: Path, tmp_path: Path) -> None:
    a, b, canary_a, canary_b = _two_dirs(tmpfs_dir)
    debug = tmp_path / "touched"
    base = ["-F", "-n", "10", "-d", f"{a}@{b}"]
    doc = ok(md(engine, [*base, "-C", "--debug-list", str(debug)], np=4))
    # One shared tree in each directory, made by the first rank of each (ranks 0 and 1).
    assert counts(doc) == [("tree-create", 2), ("file-create", 40)]
    _check_shared_trees_over_two_dirs(doc, a, b, debug, 10)
    for d, owners in ((a, (0, 2)), (b, (1, 3))):
        assert subtrees(d / "test-dir.0-0") == ["mdtest_tree.0"]
        on_disk = sorted(e.name for e in (d / "test-dir.0-0" / "mdtest_tree.0").iterdir())
        assert on_disk == sorted(f"file.mdtest.{o}.{i}" for o in owners for i in range(10))
    doc = ok(md(engine, [*base, "-T", "-r"], np=4))
    assert counts(doc) == [("file-stat", 40), ("file-remove", 40), ("tree-remove", 2)]
    check_phase_figures(doc, 10)
    assert_only_canary_left(a, canary_a)
    assert_only_canary_left(b, canary_b)


def test_shared_trees_over_several_directories_under_mpirun(
    engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    a, b, canary_a, canary_b = _two_dirs(tmpfs_dir)
    debug = tmp_path / "touched"
    args = ["-F", "-n", "12", "-w", "64", "-e", "64", "-X", "-d", f"{a}@{b}", "--debug-list", str(debug)]
    doc = ok(md(engine, args, launcher=["mpirun", "-np", "4", "--oversubscribe"], env=mpi_env))
    assert doc["comm"]["kind"] == "mpi" and doc["comm"]["ranks"] == 4
    assert counts(doc) == [("tree-create", 2), ("file-create", 48), ("file-stat", 48), ("file-read", 48),
                           ("file-remove", 48), ("tree-remove", 2)]  # fmt: skip
    assert phase(doc, "file-read")["verify"]["errors"] == 0
    check_phase_figures(doc, 12)
    _check_shared_trees_over_two_dirs(doc, a, b, debug, 12)
    assert_only_canary_left(a, canary_a)
    assert_only_canary_left(b, canary_b)


@pytest.mark.parametrize("spec", ["{a}@{a}", "{a}@{a}/", "{a}@{dot_a}", "{new}@{new}", "{new}@{dot_new}"])
def test_the_same_directory_listed_twice_is_refused(engine: Path, tmpfs_dir: Path, spec: str) -> None:
    a, b, _, _ = _two_dirs(tmpfs_dir)
    new = tmpfs_dir / "new"
    dirs = spec.format(a=a, dot_a=f"{tmpfs_dir}/./a", new=new, dot_new=f"{tmpfs_dir}/./new")
    before = _contents(tmpfs_dir)
    res = md(engine, ["-F", "-u", "-n", "10", "-d", dirs], np=2)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("iolens-bench: error: -d: ") and len(res.stderr.splitlines()) == 1
    assert "listed twice" in res.stderr or "are the same directory" in res.stderr, res.stderr
    assert res.doc is None and _contents(tmpfs_dir) == before and not new.exists()


def test_a_file_in_the_directory_list_is_refused(engine: Path, tmpfs_dir: Path) -> None:
    a, _, _, _ = _two_dirs(tmpfs_dir)
    f = tmpfs_dir / "plain-file"
    f.write_text("x\n")
    before = _contents(tmpfs_dir)
    res = md(engine, ["-F", "-u", "-n", "10", "-d", f"{a}@{f}"], np=2)
    assert res.returncode == 2
    assert res.stderr == f"iolens-bench: error: -d: '{f}' is not a directory\n"
    assert res.doc is None and _contents(tmpfs_dir) == before


# --- phases split across runs ----------------------------------------------------------------------------


@pytest.mark.parametrize("unique", [False, True], ids=["one-tree", "unique"])
def test_phases_split_across_runs_each_count_exactly(engine: Path, md_dir: Path, unique: bool) -> None:
    base = ["-n", "16", "-d", str(md_dir)] + (["-u"] if unique else [])
    doc = ok(md(engine, [*base, "-C"], np=2))
    assert counts(doc) == expected(16, 2, unique=unique, flags=("-C",))
    # mdtest's layout: one shared tree with every rank's items, or a tree per rank with its own.
    root = md_dir / "test-dir.0-0"
    assert made_test_dirs(md_dir) == ["test-dir.0-0"]
    trees = ["mdtest_tree.0.0", "mdtest_tree.1.0"] if unique else ["mdtest_tree.0"]
    assert subtrees(root) == trees
    for t in trees:
        owners = [0, 1] if not unique else [int(t.split(".")[1])]
        want = sorted(f"{kind}.mdtest.{o}.{i}" for kind in ("file", "dir") for o in owners for i in range(16))
        assert sorted(e.name for e in (root / t).iterdir()) == want
    for flag in ("-T", "-E"):
        doc = ok(md(engine, [*base, flag], np=2))
        assert counts(doc) == expected(16, 2, unique=unique, flags=(flag,)), flag
        check_phase_figures(doc, 16)
    doc = ok(md(engine, [*base, "-r"], np=2))
    assert counts(doc) == expected(16, 2, unique=unique, flags=("-r",))
    canary_only(md_dir)


# --- -N: another rank's items ----------------------------------------------------------------------------


def _debug_lines(path: Path) -> list[tuple[str, str]]:
    """(phase, path) of each "PHASE PATH" line a rank wrote with --debug-list."""
    out = []
    for line in path.read_text().splitlines():
        name, _, item = line.partition(" ")
        out.append((name, item))
    return out


def _launch(
    engine: Path, args: list[str], np_: int, how: str, request: pytest.FixtureRequest
) -> EngineResult:
    """The engine at np_ ranks, forked locally or under mpirun (skipped where mpirun is missing)."""
    if how == "local":
        return md(engine, args, np=np_)
    env = request.getfixturevalue("mpi_env")
    if not _engine_has_mpi(engine):
        pytest.fail("the engine was built without MPI although mpirun is installed")
    res = md(engine, args, launcher=["mpirun", "-np", str(np_), "--oversubscribe"], env=env)
    assert res.doc is None or res.doc["comm"]["kind"] == "mpi"
    return res


@pytest.mark.parametrize(("how", "np_"), [("local", 2), ("local", 3), ("mpirun", 3)])
def test_stride_makes_each_phase_work_on_another_ranks_items(
    engine: Path, md_dir: Path, tmp_path: Path, how: str, np_: int, request: pytest.FixtureRequest
) -> None:
    debug = tmp_path / "touched"
    args = ["-F", "-u", "-n", "12", "-N", "1", "-d", str(md_dir), "--debug-list", str(debug)]
    doc = ok(_launch(engine, args, np_, how, request))
    assert counts(doc) == expected(12, np_, unique=True, dirs=False)
    shifts = {p["name"]: p["owner_shift"] for p in doc["phases"] if p["name"].startswith("file-")}
    assert shifts == {f"file-{k}": PHASE_K[k] % np_ for k in ("create", "stat", "read", "remove")}
    for rank in range(np_):
        lines = _debug_lines(Path(f"{debug}.{rank}"))
        by_phase: dict[str, list[str]] = {}
        for name, path in lines:
            by_phase.setdefault(name, []).append(path)
        for k in ("create", "stat", "read", "remove"):
            owner = (rank + PHASE_K[k]) % np_
            paths = by_phase[f"file-{k}"]
            assert len(paths) == 12, (rank, k)
            # mdtest 4 puts the items of rank o in the tree of rank o + N (here N = 1).
            tree = (owner + 1) % np_
            want = {f"{md_dir}/test-dir.0-0/mdtest_tree.{tree}.0/file.mdtest.{owner}.{i}" for i in range(12)}
            assert set(paths) == want, (rank, k)
    canary_only(md_dir)


# --- data written and read -------------------------------------------------------------------------------


def test_odd_sized_files_are_written_and_every_byte_verified(engine: Path, md_dir: Path) -> None:
    args = ["-F", "-u", "-n", "30", "-N", "1", "-w", "3901", "-e", "3901", "-X", "-d", str(md_dir)]
    doc = ok(md(engine, args, np=3))
    read = phase(doc, "file-read")
    assert read["owner_shift"] == 2
    assert read["verify"] == {
        "files_checked": 90, "bytes_checked": 90 * 3901, "errors": 0, "first_bad_path": None,
    }  # fmt: skip
    canary_only(md_dir)


def test_corrupted_byte_in_one_file_is_reported(engine: Path, md_dir: Path) -> None:
    base = ["-F", "-n", "10", "-d", str(md_dir)]
    ok(md(engine, [*base, "-C", "-w", "3901"], np=2))
    tree = md_dir / "test-dir.0-0" / "mdtest_tree.0"
    files = sorted(tree.iterdir())
    assert len(files) == 20 and {f.stat().st_size for f in files} == {3901}
    victim = tree / "file.mdtest.1.3"
    with open(victim, "r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0x01]))
    res = md(engine, [*base, "-E", "-e", "3901", "-X"], np=2)
    assert res.returncode == 1, res.stderr
    doc = res.doc
    assert doc is not None and doc["status"] == "failed" and doc["error"]["message"]
    v = phase(doc, "file-read")["verify"]
    assert v["errors"] >= 1 and v["files_checked"] == 20 and v["bytes_checked"] == 20 * 3901
    assert v["first_bad_path"] == str(victim)
    # The files are still ours: a remove run takes them all away.
    doc = ok(md(engine, [*base, "-r"], np=2))
    assert counts(doc) == [("file-remove", 20), ("tree-remove", 1)]
    canary_only(md_dir)


# --- stonewall -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["local", "mpirun"])
def test_stonewall_ends_with_equal_counts_that_later_runs_reuse(
    engine: Path, md_dir: Path, tmp_path: Path, how: str, request: pytest.FixtureRequest
) -> None:
    status = tmp_path / "stonewall.status"
    base = ["-F", "-u", "-n", "1000000", "-x", str(status), "-d", str(md_dir)]
    doc = ok(_launch(engine, [*base, "-C", "-W", "1"], 2, how, request))
    create = phase(doc, "file-create")
    sw = create["stonewall"]
    assert sw["hit"] is True and sw["deadline_s"] == 1
    count = sw["items_max"]
    assert 0 < sw["items_min"] <= count < 1000000
    assert 2 * sw["items_min"] <= sw["items_sum_at_deadline"] <= 2 * count
    assert [r["items"] for r in create["per_rank"]] == [count, count]
    assert create["items"] == 2 * count and create["latency_ns"]["count"] == 2 * count
    assert int(status.read_text()) == count
    for flag, name in (("-T", "file-stat"), ("-E", "file-read"), ("-r", "file-remove")):
        later = ok(_launch(engine, [*base, flag], 2, how, request))
        p = phase(later, name)
        assert p["items"] == 2 * count and [r["items"] for r in p["per_rank"]] == [count, count], flag
    canary_only(md_dir)


@pytest.mark.parametrize(
    ("content", "says"),
    [(None, "cannot read the stonewall status file"), ("twelve\n", "does not hold an item count"),
     ("11", "says 11 items but a rank has only 10")],
    ids=["missing", "not-a-count", "too-many"],
)  # fmt: skip
def test_later_run_with_a_bad_status_file_exits_2_and_touches_nothing(
    engine: Path, md_dir: Path, tmp_path: Path, content: str | None, says: str
) -> None:
    base = ["-F", "-n", "10", "-d", str(md_dir)]
    ok(md(engine, [*base, "-C"], np=2))
    status = tmp_path / "status"
    if content is not None:
        status.write_text(content)
    before = _contents(md_dir)
    for flag in ("-T", "-E", "-r"):
        res = md(engine, [*base, flag, "-x", str(status)], np=2)
        assert res.returncode == 2, res.stderr
        assert res.stderr.startswith("iolens-bench: error: -x: ") and says in res.stderr, res.stderr
        assert len(res.stderr.splitlines()) == 1 and res.doc is None
    assert _contents(md_dir) == before
    ok(md(engine, [*base, "-r"], np=2))
    canary_only(md_dir)


# --- bad input -------------------------------------------------------------------------------------------

# (arguments, how the one error line starts after "iolens-bench: error: ")
BAD = [
    (["-n", "0"], "-n: "),
    (["-n", "10", "-z", "2"], "-z: "),
    (["-n", "10", "-d", "{file}"], "-d: "),
    (["-n", "10", "-d", "{missing}/deeper"], "-d: "),
    (["-n", "10", "--nope"], "unknown option '--nope'"),
    (["-n", "45", "-I", "10"], "-I: "),
    (["-n", "10", "-D", "-W", "1"], "-W: "),
    (["-n", "10", "-a", "RADOS"], "-a: "),
    (["-n", "10", "-a", "hdf5"], "-a hdf5: not supported"),
    (["-n"], "-n: "),
]


@pytest.mark.parametrize("args,message", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_exits_2_naming_the_option_and_creates_nothing(
    engine: Path, md_dir: Path, args: list[str], message: str
) -> None:
    regular = md_dir / "a-file"
    regular.write_text("not a directory\n")
    args = [a.format(file=regular, missing=md_dir / "missing") for a in args]
    res = md(engine, ["-d", str(md_dir), *args], np=2)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert res.stderr.startswith(f"iolens-bench: error: {message}"), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert res.doc is None
    regular.unlink()
    canary_only(md_dir)


# --- safety: only what iolens made is touched -------------------------------------------------------------


def _contents(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): p.read_text() if p.is_file() else "" for p in sorted(d.rglob("*"))}


def _foreign_test_dir(d: Path) -> dict[str, str]:
    """A test-dir.0-0 with mdtest's layout that iolens did not make (another mdtest run's, say)."""
    tree = d / "test-dir.0-0" / "mdtest_tree.0"
    tree.mkdir(parents=True)
    (tree / "file.mdtest.0.0").write_text("someone else's item\n")
    return _contents(d)


REFUSALS = {
    "create": (["-C"], "exists and was not created by iolens"),
    "whole-run": ([], "exists and was not created by iolens"),
    "remove": (["-r"], "was not created by iolens; refusing to remove anything in it"),
}


@pytest.mark.parametrize("run", list(REFUSALS))
def test_a_test_directory_iolens_did_not_make_is_refused(engine: Path, md_dir: Path, run: str) -> None:
    flags, says = REFUSALS[run]
    before = _foreign_test_dir(md_dir)
    res = md(engine, ["-F", "-n", "10", *flags, "-d", str(md_dir)], np=2)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"iolens-bench: error: -d: '{md_dir}/test-dir.0-0' {says}"), res.stderr
    assert res.doc is None and _contents(md_dir) == before


@pytest.mark.parametrize("split", [False, True], ids=["one-run", "create-then-remove"])
def test_missing_run_directory_is_created_and_removed_again(engine: Path, md_dir: Path, split: bool) -> None:
    run_dir = md_dir / "made-by-iolens"
    base = ["-u", "-n", "12", "-z", "1", "-b", "2", "-d", str(run_dir)]
    if split:
        ok(md(engine, [*base, "-C"], np=2))
        assert sorted(e.name for e in run_dir.iterdir()) == [".iolens-owned", "test-dir.0-0"]
        ok(md(engine, [*base, "-r"], np=2))
    else:
        doc = ok(md(engine, base, np=2))
        assert counts(doc) == expected(12, 2, unique=True, depth=1, branch=2)
    assert not run_dir.exists()
    canary_only(md_dir)


def test_existing_run_directory_is_kept(engine: Path, md_dir: Path) -> None:
    run_dir = md_dir / "mine"
    run_dir.mkdir()
    ok(md(engine, ["-F", "-n", "10", "-d", str(run_dir)], np=2))
    assert run_dir.is_dir() and list(run_dir.iterdir()) == []


@pytest.mark.parametrize("where", ["tree", "test-dir"])
def test_foreign_file_inside_the_tree_survives_a_remove_run_that_reports_it(
    engine: Path, md_dir: Path, where: str
) -> None:
    base = ["-F", "-n", "10", "-z", "1", "-b", "2", "-d", str(md_dir)]
    ok(md(engine, [*base, "-C"], np=2))
    holder = md_dir / "test-dir.0-0" / ("mdtest_tree.0/mdtest_tree.2" if where == "tree" else "")
    foreign = holder / "notes.txt"
    foreign.write_text("not iolens's\n")
    res = md(engine, [*base, "-r"], np=2)
    assert res.returncode == 1, res.stderr
    assert res.stderr.startswith(f"iolens-bench: error: rmdir {holder}: "), res.stderr
    assert "Directory not empty (it holds something iolens did not create: left in place" in res.stderr
    doc = res.doc
    assert doc is not None and doc["status"] == "failed"
    assert doc["error"]["phase"] == ("tree-remove" if where == "tree" else "cleanup")
    # Every item iolens made is gone; the foreign file and the directories holding it are not.
    assert phase(doc, "file-remove")["items"] == 2 * 9  # 10 items rounded down to 3 tree directories
    assert foreign.read_text() == "not iolens's\n"
    left = sorted(str(p.relative_to(md_dir)) for p in md_dir.rglob("*") if p.is_file())
    assert left == sorted(["canary.txt", ".iolens-owned", str(foreign.relative_to(md_dir))])


# --- text report, MPI and the iolens command -------------------------------------------------------------


def test_text_report_looks_like_mdtest(engine: Path, md_dir: Path) -> None:
    res = md(engine, ["-n", "10", "-d", str(md_dir)], np=2, quiet=False)
    ok(res)
    out = res.stdout
    # mdtest 3 prints "SUMMARY rate:", mdtest 4 "SUMMARY rate (in ops/sec):".
    assert re.search(r"^SUMMARY rate( \(in ops/sec\))?: \(of 1 iterations\)$", out, re.M), out
    for label in ("Directory creation", "Directory stat", "Directory removal", "File creation", "File stat",
                  "File read", "File removal", "Tree creation", "Tree removal"):  # fmt: skip
        assert label in out, label
    canary_only(md_dir)


def _engine_has_mpi(engine: Path) -> bool:
    return "mpi=yes" in subprocess.run([str(engine), "--version"], capture_output=True, text=True).stdout


def _shape(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (p["name"], p["iteration"], p["items"], p["owner_shift"], [r["items"] for r in p["per_rank"]],
         p["verify"]["errors"] if p["verify"] else None)
        for p in doc["phases"]
    ]  # fmt: skip


# (extra arguments, expected(...) keywords, items per rank): trees with -u, -I splitting into test
# directories, items only in the leaves (-L), and one directory shared by every rank.
MPI_CASES = {
    "unique-tree": (["-u", "-n", "18", "-z", "1", "-b", "2", "-N", "1", "-w", "64", "-e", "64", "-X"],
                    {"n": 18, "unique": True, "depth": 1, "branch": 2}, 18),
    "items-per-dir": (["-F", "-n", "40", "-I", "10", "-N", "1"],
                      {"n": 40, "unique": False, "per_dir": 10, "dirs": False}, 40),
    "leaf-tree": (["-u", "-L", "-n", "90", "-z", "2", "-b", "3"],
                  {"n": 90, "unique": True, "depth": 2, "branch": 3, "leaf": True}, 90),
    "one-dir": (["-n", "24", "-N", "1", "-w", "100", "-e", "100", "-X"], {"n": 24, "unique": False}, 24),
    "one-leaf-tree": (["-L", "-n", "90", "-z", "2", "-b", "3", "-N", "1"],
                         {"n": 90, "unique": False, "depth": 2, "branch": 3, "leaf": True}, 90),
}  # fmt: skip


@pytest.mark.parametrize("case", list(MPI_CASES))
def test_four_local_ranks_do_each_case_exactly(engine: Path, md_dir: Path, case: str) -> None:
    # The same cases at np=4 with forked ranks: this runs where mpirun does not.
    extra, want, per_rank = MPI_CASES[case]
    doc = ok(md(engine, [*extra, "-d", str(md_dir)], np=4))
    assert doc["comm"] == {**doc["comm"], "kind": "local", "ranks": 4}
    assert counts(doc) == expected(np=4, **want)
    check_phase_figures(doc, per_rank)
    canary_only(md_dir)


@pytest.mark.parametrize("case", list(MPI_CASES))
@pytest.mark.parametrize("np_", [2, 4])
def test_mpirun_does_exactly_what_local_ranks_do(
    engine: Path, mpi_env: dict[str, str], md_dir: Path, np_: int, case: str
) -> None:
    if not _engine_has_mpi(engine):
        pytest.fail("the engine was built without MPI although mpirun is installed")
    extra, want, per_rank = MPI_CASES[case]
    args = [*extra, "-d", str(md_dir)]
    local = ok(md(engine, args, np=np_))
    mpi = ok(md(engine, args, launcher=["mpirun", "-np", str(np_), "--oversubscribe"], env=mpi_env))
    assert (local["comm"]["kind"], mpi["comm"]["kind"]) == ("local", "mpi")
    assert mpi["comm"]["ranks"] == np_
    assert counts(mpi) == expected(np=np_, **want)
    check_phase_figures(mpi, per_rank)
    assert _shape(mpi) == _shape(local)
    assert mpi["geometry"] == local["geometry"] and mpi["config"] == local["config"]
    if case == "items-per-dir":
        assert mpi["geometry"]["loops"] == 4
    canary_only(md_dir)


def _iolens(iolens_bin: list[str], args: list[str], env: dict[str, str] | None = None) -> Any:
    return subprocess.run([*iolens_bin, *args], capture_output=True, text=True, timeout=120, env=env)


def test_iolens_mdtest_prints_the_summary_and_keeps_the_document(
    iolens_bin: list[str], engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "md.json"
    proc = _iolens(
        iolens_bin,
        [
            "mdtest",
            "--np",
            "2",
            "--json",
            str(out),
            "--no-live",
            "--text-format=rich",
            "-u",
            "-n",
            "50",
            "-d",
            str(md_dir),
        ],
        env={**_env(engine), "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "SUMMARY rate (in ops/sec): (of 1 iterations)" in proc.stdout and "File creation" in proc.stdout
    assert "IO500 rate/s" in proc.stdout and "Traceback" not in proc.stderr
    assert "SUMMARY time" not in proc.stdout  # only with -P
    doc = json.loads(out.read_text())
    assert doc["workload"] == "mdtest" and counts(doc) == expected(50, 2, unique=True)
    canary_only(md_dir)


def test_iolens_mdtest_print_rate_and_time_shows_the_time_summary(
    iolens_bin: list[str], engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "md.json"
    args = [
        "mdtest",
        "--np",
        "2",
        "--json",
        str(out),
        "--no-live",
        "--text-format=rich",
        "-P",
        "-F",
        "-n",
        "40",
        "-i",
        "3",
    ]
    proc = _iolens(iolens_bin, [*args, "-d", str(md_dir)], env={**_env(engine), "COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    assert "SUMMARY rate (in ops/sec): (of 3 iterations)" in proc.stdout
    assert "SUMMARY time (in s): (of 3 iterations)" in proc.stdout
    table = proc.stdout.split("SUMMARY time (in s)")[1]
    doc = json.loads(out.read_text())
    for name, title in (
        ("file-create", "File creation"),
        ("file-stat", "File stat"),
        ("tree-remove", "Tree removal"),
    ):
        times = [p["time_s"] for p in doc["phases"] if p["name"] == name]
        assert len(times) == 3
        row = re.search(rf"^\s*{title}\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$", table, re.M)
        assert row is not None, table
        got = [float(g) for g in row.groups()]
        mean = sum(times) / 3
        sd = (sum((t - mean) ** 2 for t in times) / 3) ** 0.5
        assert got == pytest.approx([max(times), min(times), mean, sd], abs=0.00006), (title, got, times)
    assert "Directory creation" not in table  # -F: files only, as in the rate table
    canary_only(md_dir)


def test_iolens_mdtest_bad_flag_is_one_clean_error(iolens_bin: list[str], engine: Path, md_dir: Path) -> None:
    proc = _iolens(iolens_bin, ["mdtest", "-n", "0", "-d", str(md_dir)], env=_env(engine))
    assert proc.returncode == 2
    assert proc.stderr.startswith("iolens: error: -n") and len(proc.stderr.strip().splitlines()) == 1
    canary_only(md_dir)


def test_iolens_mdtest_under_mpirun(
    iolens_bin: list[str], engine: Path, mpi_env: dict[str, str], md_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "md.json"
    args = ["mdtest", "--launcher", "mpirun", "--np", "2", "--launcher-args", "--oversubscribe",
            "--json", str(out), "--no-live", "-F", "-n", "40", "-N", "1", "-d", str(md_dir)]  # fmt: skip
    proc = _iolens(iolens_bin, args, env={**mpi_env, **_env(engine)})
    assert proc.returncode == 0, proc.stderr
    assert "SUMMARY rate" in proc.stdout and "File stat" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["comm"]["kind"] == "mpi" and counts(doc) == expected(40, 2, unique=False, dirs=False)
    assert phase(doc, "file-stat")["owner_shift"] == 1
    canary_only(md_dir)


def test_engine_progress_lines_become_mdtest_live_lines(engine: Path, md_dir: Path, tmp_path: Path) -> None:
    from iolens import launch, render

    # What `iolens mdtest` runs (the engine with --progress), through the launcher the CLI uses: a 2 s
    # stonewalled create reports about every 0.5 s.
    out = tmp_path / "md.json"
    args = ["--json", str(out), "--progress", "--quiet", "-F", "-u", "-n", "1000000", "-W", "2"]
    seen: list[dict[str, Any]] = []
    outcome = launch.run(
        launch.RunRequest("mdtest", [*args, "-d", str(md_dir)], np=2), engine, on_progress=seen.append
    )
    assert outcome.returncode == 0, outcome
    doc = json.loads(out.read_text())
    created = phase(doc, "file-create")["items"]
    creating = [p for p in seen if p["phase"] == "file-create"]
    assert len(creating) >= 2, seen
    items = [p["items"] for p in creating]
    elapsed = [p["elapsed_s"] for p in creating]
    assert items == sorted(items) and 0 < items[0] and items[-1] <= created
    assert elapsed == sorted(elapsed) and 0.4 < elapsed[0]
    for p in creating:
        # rank 0's count times the ranks, flagged as an estimate
        assert p["iteration"] == 0 and p["estimate"] is True and p["items"] % 2 == 0
        assert p["rate_per_s"] == pytest.approx(p["items"] / p["elapsed_s"], rel=0.01)
        line = render.progress_line(p, p["elapsed_s"] + 0.1, "mdtest").plain
        assert line.startswith("file-create iter 0") and f"{p['items']:,} items" in line
        assert f"{p['rate_per_s']:,.0f} items/s" in line and "(estimate)" in line
    canary_only(md_dir)


def _env(engine: Path) -> dict[str, str]:
    """The CLI's environment, pointing it at the engine under test (the packaged one or IOLENS_BENCH)."""
    return dict(os.environ, IOLENS_BENCH=str(engine))


def test_separate_remove_run_over_several_iterations_removes_the_run_directory(
    engine: Path, md_dir: Path
) -> None:
    # -C -i 3 keeps three test directories; the -r run removes them one iteration at a time, and the -d
    # directory iolens made goes with the last one (not kept because another iteration was still listed).
    run_dir = md_dir / "new"
    base = ["-F", "-n", "50", "-i", "3", "-d", str(run_dir)]
    ok(md(engine, [*base, "-C"], np=2))
    assert sorted(p.name for p in run_dir.iterdir()) == [".iolens-owned", "test-dir.0-0", "test-dir.1-0",
                                                         "test-dir.2-0"]  # fmt: skip
    ok(md(engine, [*base, "-r"], np=2))
    assert not run_dir.exists()
    canary_only(md_dir)
