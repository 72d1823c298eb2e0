"""mdtest 4's flags in `iolens mdtest`, each by its effect: the directory rename phase, -u -N placement
(against the official mdtest's trees in tests/data/mdtest4, and the official binary when it is installed),
task ranges, -k, -c, -B, the phase commands, the per-rank CSV, -V/-v, -Z, the flags refused with a reason,
and the classic text output compared field by field with mdtest 4's own (tests/data/mdtest4/README.md)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from .test_mdtest import canary_only, counts, md, ok

DATA = Path(__file__).parent / "data" / "mdtest4"
OFFICIAL = Path("/var/tmp/iolens-peers/ior-4.0.0/bin/mdtest")
DOCS = Path(__file__).parent.parent / "docs" / "mdtest.md"


@pytest.fixture
def md_dir(tmpfs_dir: Path) -> Path:
    from .ior_helpers import place_canary

    place_canary(tmpfs_dir)
    return tmpfs_dir


def iolens(
    iolens_bin: list[str], engine: Path, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, IOLENS_BENCH=str(engine))
    return subprocess.run(
        [*iolens_bin, "mdtest", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def listing(d: Path) -> list[str]:
    """Every path under d, relative, as `find . | sort` prints it (without iolens's ledger and the canary)."""
    out = ["."]
    for root, dirs, files in os.walk(d):
        for name in dirs + files:
            rel = "./" + str((Path(root) / name).relative_to(d))
            if name != ".iolens-owned" and name != "canary.txt":
                out.append(rel)
    return sorted(out)


# --- the directory rename phase -----------------------------------------------------------------------------


def test_rename_phase_runs_by_default_and_renames_in_a_chain(engine: Path, md_dir: Path) -> None:
    # Every phase by default, mdtest 4's rename among them, between the stat and the removal.
    doc = ok(md(engine, ["-D", "-n", "5", "-d", str(md_dir)], np=2))
    names = ["tree-create", "dir-create", "dir-stat", "dir-rename", "dir-remove", "tree-remove"]
    assert [n for n, _ in counts(doc)] == names
    assert dict(counts(doc))["dir-rename"] == 10
    rename = next(p for p in doc["phases"] if p["name"] == "dir-rename")
    assert [r["items"] for r in rename["per_rank"]] == [5, 5] and rename["latency_ns"]["count"] == 10
    canary_only(md_dir)

    # The chain, seen by inode: 0 -> 0-XX, 1 -> 0, 2 -> 1, 3 -> 2, 0-XX -> 3; 4 stays. Names are all back.
    ok(md(engine, ["-D", "-C", "-n", "5", "-d", str(md_dir)]))
    tree = md_dir / "test-dir.0-0" / "mdtest_tree.0"
    before = {e.name: e.stat().st_ino for e in tree.iterdir()}
    doc = ok(md(engine, ["-D", "-U", "-n", "5", "-d", str(md_dir)]))
    assert counts(doc) == [("dir-rename", 5)]
    after = {e.name: e.stat().st_ino for e in tree.iterdir()}
    assert sorted(after) == sorted(before) == [f"dir.mdtest.0.{i}" for i in range(5)]
    name = "dir.mdtest.0.{}".format
    assert [after[name(i)] for i in range(5)] == [before[name(i)] for i in (1, 2, 3, 0, 4)]
    ok(md(engine, ["-D", "-r", "-n", "5", "-d", str(md_dir)]))
    canary_only(md_dir)


@pytest.mark.parametrize(
    ("args", "renamed"),
    [
        (["-C", "-T", "-E", "-r"], False),  # choosing the phases: mdtest's way of leaving the rename out
        (["-C", "-T", "-E", "-r", "-U"], True),
        (["-n", "1"], False),  # one item per rank: nothing to rename, as mdtest
        (["-F"], False),  # no directories
    ],
    ids=["phases-chosen", "phases-and-U", "one-item", "files-only"],
)
def test_rename_phase_off_switches(engine: Path, md_dir: Path, args: list[str], renamed: bool) -> None:
    n = [] if "-n" in args else ["-n", "4"]
    doc = ok(md(engine, [*n, *args, "-d", str(md_dir)], np=2))
    assert ("dir-rename" in dict(counts(doc))) is renamed
    canary_only(md_dir)


# --- -u -N placement ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("np_", "args", "reference"),
    [(2, ["-n", "2"], "tree_u_N1.txt"), (3, ["-n", "2", "-F"], "tree_u_N1_np3.txt")],
    ids=["np2", "np3-files"],
)
def test_unique_dirs_with_a_stride_place_items_as_mdtest(
    engine: Path, md_dir: Path, np_: int, args: list[str], reference: str
) -> None:
    work = md_dir / "md"
    ok(md(engine, [*args, "-u", "-N", "1", "-C", "-d", str(work)], np=np_))
    assert listing(work) == (DATA / reference).read_text().split()
    # Every later phase finds them there: stat, read and remove with the same stride.
    doc = ok(md(engine, [*args, "-u", "-N", "1", "-T", "-E", "-r", "-d", str(work)], np=np_))
    assert all(p["items"] == 2 * np_ for p in doc["phases"] if not p["name"].startswith("tree-"))
    canary_only(md_dir)


def test_stride_counts_nodes_on_several_nodes_as_mdtest(engine: Path, md_dir: Path) -> None:
    # Two "nodes" of two ranks each (the engine's test hook): mdtest 4 multiplies -N by the ranks per node,
    # so -N 1 moves every phase to the other node, and rank r's items live in the tree of rank r + 2.
    env = dict(os.environ, IOLENS_TEST_HOST="nodeA,nodeA,nodeB,nodeB")
    work = md_dir / "md"
    doc = ok(md(engine, ["-F", "-u", "-N", "1", "-n", "2", "-C", "-d", str(work)], np=4, env=env))
    assert doc["geometry"]["stride"] == 2
    tree = work / "test-dir.0-0"
    for r in range(4):
        names = sorted(e.name for e in (tree / f"mdtest_tree.{(r + 2) % 4}.0").iterdir())
        assert names == [f"file.mdtest.{r}.0", f"file.mdtest.{r}.1"]
    doc = ok(md(engine, ["-F", "-u", "-N", "1", "-n", "2", "-r", "-d", str(work)], np=4, env=env))
    assert [p["owner_shift"] for p in doc["phases"] if p["name"] == "file-remove"] == [(3 * 2) % 4]
    canary_only(md_dir)


@pytest.mark.skipif(
    not OFFICIAL.exists() or shutil.which("mpirun") is None, reason="no official mdtest 4 here"
)
@pytest.mark.parametrize("np_", [2, 3])
@pytest.mark.parametrize("stride", ["1", "2"])
def test_unique_dirs_placement_equals_the_official_mdtest(
    engine: Path, md_dir: Path, mpi_env: dict[str, str], np_: int, stride: str
) -> None:
    flags = ["-n", "3", "-u", "-N", stride, "-C"]
    theirs, ours = md_dir / "theirs", md_dir / "ours"
    subprocess.run(
        ["mpirun", "--oversubscribe", "-np", str(np_), str(OFFICIAL), *flags, "-d", str(theirs)],
        env=mpi_env, capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    ok(md(engine, [*flags, "-d", str(ours)], np=np_))
    assert listing(ours) == listing(theirs)
    ok(md(engine, ["-n", "3", "-u", "-N", stride, "-r", "-d", str(ours)], np=np_))
    shutil.rmtree(theirs)
    canary_only(md_dir)


# --- task ranges --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("np_", "range_", "tests"),
    [
        (2, ["-f", "1", "-l", "2"], [1, 2]),
        (3, ["-f", "1", "-l", "3", "-s", "2"], [1, 3]),
        (3, ["-l", "2"], [1, 2]),
    ],
    ids=["1-2", "1-3-by-2", "default-first"],
)
def test_task_ranges_run_one_test_per_number_of_tasks(
    iolens_bin: list[str],
    engine: Path,
    md_dir: Path,
    tmp_path: Path,
    np_: int,
    range_: list[str],
    tests: list[int],
) -> None:
    out = tmp_path / "doc.json"
    args = ["--np", str(np_), "--json", str(out), "-F", "-n", "6", *range_, "-d", str(md_dir)]
    proc = iolens(iolens_bin, engine, "--text-format=classic", *args)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    creates = [p for p in doc["phases"] if p["name"] == "file-create"]
    assert [(p["tasks"], p["items"]) for p in creates] == [(t, 6 * t) for t in tests]
    for p in creates:
        assert [r["items"] for r in p["per_rank"]] == [6] * p["tasks"]
    assert re.findall(r"^(\d+) tasks, (\d+) files$", proc.stdout, re.M) == [
        (str(t), str(6 * t)) for t in tests
    ]
    assert proc.stdout.count("SUMMARY rate: (of 1 iterations)") == len(tests)
    # the rich view shows which test each phase belongs to
    rich = iolens(
        iolens_bin,
        engine,
        "--text-format=rich",
        "--np",
        str(np_),
        "-F",
        "-n",
        "6",
        *range_,
        "-d",
        str(md_dir),
    )
    assert rich.returncode == 0 and re.search(r"^\s*phase\s+tasks\s+iter", rich.stdout, re.M), rich.stdout
    canary_only(md_dir)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["-f", "3", "-l", "2"], "-f"),
        (["-l", "5"], "-l"),
        (["-f", "1", "-l", "2", "-C"], "-f/-l/-s"),
        (["-s", "0", "-l", "2"], "-s"),
    ],
)
def test_bad_task_ranges_are_refused(engine: Path, md_dir: Path, args: list[str], flag: str) -> None:
    res = md(engine, ["-n", "4", *args, "-d", str(md_dir / "md")], np=2)
    assert res.returncode == 2 and f"error: {flag}" in res.stderr, res.stderr
    assert not (md_dir / "md").exists()


# --- -k, -c, -B, the phase commands -------------------------------------------------------------------------


def test_mknod_creates_empty_files_and_refuses_data(engine: Path, md_dir: Path) -> None:
    ok(md(engine, ["-F", "-k", "-C", "-n", "3", "-d", str(md_dir)], np=2))
    files = sorted((md_dir / "test-dir.0-0" / "mdtest_tree.0").iterdir())
    assert len(files) == 6 and all(f.is_file() and f.stat().st_size == 0 for f in files)
    ok(md(engine, ["-F", "-r", "-n", "3", "-d", str(md_dir)], np=2))
    res = md(engine, ["-F", "-k", "-w", "10", "-n", "3", "-d", str(md_dir)])
    assert res.returncode == 2 and "error: -k" in res.stderr
    canary_only(md_dir)


def test_collective_creates_make_rank_0_create_and_remove_everything(engine: Path, md_dir: Path) -> None:
    doc = ok(md(engine, ["-c", "-u", "-n", "4", "-d", str(md_dir)], np=3))
    for p in doc["phases"]:
        per_rank = [r["items"] for r in p["per_rank"]]
        if p["name"] in ("dir-create", "file-create", "dir-remove", "file-remove"):
            assert per_rank == [12, 0, 0], p["name"]
        elif p["name"].startswith("tree-"):
            assert per_rank == [3, 0, 0], p["name"]  # every rank's tree (-u), by rank 0 as well
        else:
            assert per_rank == [4, 4, 4], p["name"]
    canary_only(md_dir)
    for bad in (["-B", "1"], ["-d", f"{md_dir}/a@{md_dir}/b"]):
        res = md(engine, ["-c", "-n", "4", *bad] + ([] if "-d" in bad else ["-d", str(md_dir)]), np=2)
        assert res.returncode == 2 and ("error: -B" in res.stderr or "error: -c" in res.stderr), res.stderr


def test_no_barriers_runs_every_phase_and_refuses_a_stride(engine: Path, md_dir: Path) -> None:
    doc = ok(md(engine, ["-B", "1", "-n", "4", "-d", str(md_dir)], np=2))
    assert doc["config"]["no-barriers"] == 1 and len(doc["phases"]) == 10
    assert all(p["items"] > 0 for p in doc["phases"])
    res = md(engine, ["-B", "1", "-N", "1", "-n", "4", "-d", str(md_dir)], np=2)
    assert res.returncode == 2 and "error: -B" in res.stderr
    canary_only(md_dir)


def test_phase_commands_run_on_every_rank_around_every_phase(
    engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "log"
    args = ["-F", "-n", "3", "--run-cmd-before-phase", f"echo before >> {log}"]
    args += ["--run-cmd-after-phase", f"echo after >> {log}", "-d", str(md_dir)]
    doc = ok(md(engine, args, np=2))
    lines = log.read_text().split()
    # around the 4 file phases, not the tree's (as mdtest), on each of the 2 ranks
    assert len(doc["phases"]) == 6 and Counter(lines) == {"before": 2 * 4, "after": 2 * 4}
    canary_only(md_dir)


def test_shared_file_access_uses_the_same_names_on_every_rank(engine: Path, md_dir: Path) -> None:
    args = ["-S", "-n", "3", "-w", "100", "-e", "100", "-X", "-d", str(md_dir)]
    doc = ok(md(engine, [*args, "-C"], np=2))
    assert counts(doc) == [("tree-create", 1), ("file-create", 6)]
    assert listing(md_dir) == [".", "./test-dir.0-0", "./test-dir.0-0/mdtest_tree.0"] + [
        f"./test-dir.0-0/mdtest_tree.0/file.mdtest.shared.{i}" for i in range(3)
    ]
    doc = ok(md(engine, [*args, "-T", "-E", "-r"], np=2))
    per_rank = {p["name"]: [r["items"] for r in p["per_rank"]] for p in doc["phases"]}
    # every rank stats and reads (and verifies) all of them; rank 0 alone removes them, as mdtest
    assert per_rank["file-stat"] == per_rank["file-read"] == [3, 3] and per_rank["file-remove"] == [3, 0]
    assert next(p for p in doc["phases"] if p["name"] == "file-read")["verify"]["errors"] == 0
    canary_only(md_dir)


def _bytes_read(iolens_bin: list[str], engine: Path, tmp_path: Path, args: list[str]) -> int:
    """Bytes the engine read during a run, as iolens's profiler counts them (real system calls)."""
    logs = tmp_path / f"prof{len(list(tmp_path.iterdir()))}"
    cmd = [
        *iolens_bin,
        "profile",
        "--out",
        str(logs),
        "--no-report",
        "--",
        str(engine),
        "mdtest",
        "--quiet",
        *args,
    ]
    assert subprocess.run(cmd, capture_output=True, text=True, timeout=120).returncode == 0
    report = subprocess.run(
        [*iolens_bin, "profile", "report", str(logs), "--json"], capture_output=True, text=True
    )
    return int(json.loads(report.stdout)["jobs"][0]["summary"]["bytes_read"])


def test_verify_write_reads_every_file_back(
    iolens_bin: list[str], engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    args = ["-F", "-n", "5", "-w", "3000", "-d", str(md_dir)]
    plain = _bytes_read(iolens_bin, engine, tmp_path, args)
    checked = _bytes_read(iolens_bin, engine, tmp_path, [*args, "--verify-write"])
    assert checked - plain == 5 * 3000
    canary_only(md_dir)


# --- the per-rank CSV, packet types, verbosity, -Z ----------------------------------------------------------


def test_rank_performance_csv_has_mdtests_columns_and_rows(
    engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    csv = tmp_path / "ranks.csv"
    ok(md(engine, ["-n", "3", "-i", "2", "--saveRankPerformanceDetails", str(csv), "-d", str(md_dir)], np=2))
    ours = csv.read_text().splitlines()
    theirs = (DATA / "rank_details.csv").read_text().splitlines()
    assert ours[0] == theirs[0]
    # "all", then a row per rank and iteration: mdtest's field counts, items only in the "all" row.
    assert [r.split(",")[0] for r in ours[1:]] == ["all", "0", "1", "0", "1"]
    assert len(ours[1].split(",")) == len(theirs[1].split(",")) and ours[1].split(",")[1] == "3"
    for row in ours[2:]:
        fields = row.split(",")
        assert len(fields) == len(theirs[2].split(",")) and fields[1] == ""
        # creation, stat, rename, removal of directories and the four file phases were measured
        assert all(float(fields[i]) > 0 for i in (2, 3, 4, 5, 8, 9, 10, 11, 12, 13))
    canary_only(md_dir)


def test_data_packet_type_is_checked_and_recorded(engine: Path, md_dir: Path) -> None:
    doc = ok(md(engine, ["-F", "-n", "2", "-w", "100", "--dataPacketType=i", "-d", str(md_dir)]))
    assert doc["config"]["dataPacketType"] == "i"
    res = md(engine, ["-F", "-n", "2", "--dataPacketType=zeros", "-d", str(md_dir)])
    assert res.returncode == 2 and "error: --dataPacketType" in res.stderr
    canary_only(md_dir)


@pytest.mark.parametrize(
    ("flags", "level"), [(["-V", "2"], 2), (["-V1"], 1), (["-v", "-v"], 2), (["-V1", "-v"], 2)]
)
def test_verbosity_is_recorded(engine: Path, md_dir: Path, flags: list[str], level: int) -> None:
    doc = ok(md(engine, [*flags, "-n", "2", "-d", str(md_dir)]))
    assert doc["config"]["verbosity"] == level
    canary_only(md_dir)


def test_verbose_lines_are_mdtests(iolens_bin: list[str], engine: Path, md_dir: Path) -> None:
    proc = iolens(iolens_bin, engine, "--np", "2", "-n", "4", "-v", "-d", str(md_dir))
    assert proc.returncode == 0, proc.stderr
    theirs = [
        ln for ln in (DATA / "verbose.txt").read_text().splitlines() if ln.startswith("V-1") and "sec," in ln
    ]
    ours = [ln for ln in proc.stdout.splitlines() if ln.startswith("V-1") and "sec," in ln]
    assert len(ours) == len(theirs) == 10
    for a, b in zip(ours, theirs, strict=True):
        assert _shape(a) == _shape(b), (a, b)
        assert [m.end() for m in NUMBER.finditer(a)] == [m.end() for m in NUMBER.finditer(b)], (a, b)
    canary_only(md_dir)


# --- refused flags ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "named"),
    [
        (["-S", "-u"], "-S"),
        (["-g"], "-g"),
        (["-K"], "-K"),
        (["-M"], "-M"),
        (["--allocateBufferOnGPU"], "--allocateBufferOnGPU"),
        (["--warningAsErrors", "-F"], "--warningAsErrors"),
    ],
)
def test_refused_flags_exit_2_naming_the_flag_and_doing_nothing(
    iolens_bin: list[str], engine: Path, md_dir: Path, flag: list[str], named: str
) -> None:
    proc = iolens(iolens_bin, engine, "-n", "4", *flag, "-d", str(md_dir / "md"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"iolens: error: {named}") and len(proc.stderr.strip().splitlines()) == 1
    assert not (md_dir / "md").exists()


def test_every_mdtest_flag_is_accepted_or_refused_and_documented(
    engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    """Each flag of `mdtest -h` (tests/data/mdtest4/help.txt) is known to the engine (never "unknown option")
    and has a row in docs/mdtest.md's compatibility table; module options (--posix.odirect, ...) too."""
    text = (DATA / "help.txt").read_text()
    main, modules = text.split("Module POSIX")
    flags = re.findall(r"^  (-[A-Za-z]|--[A-Za-z][\w-]*)", main, re.M)
    assert len(flags) > 40
    first_cells = " ".join(ln.split("|")[1] for ln in DOCS.read_text().splitlines() if ln.startswith("| `"))
    for f in [*flags, *re.findall(r"^  (--[a-z0-9]+\.[\w-]+)", modules, re.M)]:
        assert re.search(rf"`{re.escape(f)}[` =]", first_cells), f
    values = {"-d": str(md_dir / "x"), "-x": str(tmp_path / "sw"), "-a": "posix", "-p": "0", "-W": "0",
              "--saveRankPerformanceDetails": str(tmp_path / "c"), "--run-cmd-before-phase": "true",
              "--run-cmd-after-phase": "true", "--dataPacketType": "t"}  # fmt: skip
    for f in flags:
        value = [] if f in NO_VALUE else [values.get(f, "1")]
        res = md(engine, ["-n", "2", "-d", str(md_dir / "x"), f, *value])
        assert "unknown option" not in res.stderr, (f, res.stderr)
        assert res.returncode in (0, 2), (f, res.stderr)


NO_VALUE = {"-C", "-T", "-E", "-r", "-D", "-F", "-k", "-L", "-P", "--print-all-procs", "-R", "-S", "-c", "-t",
            "-u", "-v", "-X", "--verify-read", "--verify-write", "-y", "-Y", "-Z", "--allocateBufferOnGPU",
            "--warningAsErrors", "--showRankStatistics"}  # fmt: skip


# --- the classic text, field by field -----------------------------------------------------------------------

NUMBER = re.compile(r"-?\d+(\.\d+)?(e[+-]\d+)?")


def _shape(line: str) -> str:
    """A line with its figures and dates masked, spaces between words kept apart from the figures' own
    padding (a wider figure takes the place of a space): what must be equal between the two tools."""
    line = re.sub(r"\d\d/\d\d/\d{4} \d\d:\d\d:\d\d", "DATE", line)
    return re.sub(r" +N", " N", NUMBER.sub("N", line))


def _classic_lines(text: str) -> list[str]:
    # mdtest's WARNING comes once per rank, in any order among them: not part of the layout compared.
    return [ln for ln in text.splitlines() if not ln.startswith("WARNING:")]


@pytest.mark.parametrize(
    ("reference", "flags"),
    [
        ("basic", ["-n", "4"]),
        ("rate_time_i2", ["-n", "4", "-i", "2", "-P"]),
        ("files_time", ["-n", "4", "-F", "-Z"]),
        ("dirs", ["-n", "4", "-D"]),
        ("task_range", ["-n", "4", "-f", "1", "-l", "2", "-s", "1"]),
        ("rank_stats_all_procs", ["-n", "4", "-F", "--showRankStatistics", "--print-all-procs", "-i", "2"]),
        ("stride", ["-n", "4", "-N", "1"]),
        ("one-file", ["-n", "4", "-S"]),
    ],
)
def test_classic_text_has_mdtest4s_layout(
    iolens_bin: list[str], engine: Path, md_dir: Path, reference: str, flags: list[str]
) -> None:
    work = md_dir / "mdtest4-ref"
    proc = iolens(iolens_bin, engine, "--np", "2", *flags, "-d", str(work))  # not a terminal: classic
    assert proc.returncode == 0, proc.stderr
    ours = _classic_lines(proc.stdout)
    theirs = _classic_lines((DATA / f"{reference}.txt").read_text())
    assert len(ours) == len(theirs), "\n".join(ours)
    for a, b in zip(ours, theirs, strict=True):
        if b.startswith("Command line used:"):
            assert a.startswith("Command line used: ") and a.endswith(f"'-d' '{work}'")
            continue
        if b.startswith("Path "):
            assert a == f"Path                : {work}"
            continue
        if " was launched with " in b:
            assert a.split()[1:] == b.split()[1:] and a.split()[0].startswith("mdtest-4.0.0")
            continue
        assert _shape(a) == _shape(b), (a, b)
        if b.startswith("   ") and NUMBER.search(b):
            # a SUMMARY row: the same label and the figures ending in the same columns (awk and cut alike)
            assert a[:24] == b[:24]
            assert [m.end() for m in NUMBER.finditer(a)] == [m.end() for m in NUMBER.finditer(b)], (a, b)
            assert len(a.split()) == len(b.split())
    canary_only(md_dir)


def test_text_format_switch(iolens_bin: list[str], engine: Path, md_dir: Path) -> None:
    rich = iolens(iolens_bin, engine, "--text-format=rich", "-n", "4", "-d", str(md_dir))
    assert (
        rich.returncode == 0 and "SUMMARY rate (in ops/sec)" in rich.stdout and "IO500 rate/s" in rich.stdout
    )
    classic = iolens(iolens_bin, engine, "--text-format", "classic", "-n", "4", "-Z", "-d", str(md_dir))
    assert classic.returncode == 0 and "SUMMARY time: (of 1 iterations)" in classic.stdout
    assert "SUMMARY rate" not in classic.stdout and "IO500" not in classic.stdout
    bad = iolens(iolens_bin, engine, "--text-format=json", "-n", "4", "-d", str(md_dir))
    assert bad.returncode == 2 and bad.stderr.startswith("iolens: error: --text-format")
    canary_only(md_dir)


def test_classic_text_reads_back_with_an_mdtest_output_parser(
    iolens_bin: list[str], engine: Path, md_dir: Path, tmp_path: Path
) -> None:
    """The classic text goes through the parser iolens uses for the IO500 app's mdtest files (a script that
    reads mdtest's output), and gives back the run's own figures: tasks, files, each rate and time."""
    from iolens.io500.app_output import MdtestOutput, parse_output

    out = tmp_path / "doc.json"
    args = ["--np", "2", "--json", str(out), "-F", "-n", "40", "-W", "1", "-P", "-d", str(md_dir)]
    proc = iolens(iolens_bin, engine, *args)
    assert proc.returncode == 0, proc.stderr
    parsed = parse_output(proc.stdout)
    doc = json.loads(out.read_text())
    assert isinstance(parsed, MdtestOutput)
    assert (parsed.tasks, parsed.nodes, parsed.files) == (2, 1, 80)
    # 40 files take far less than the 1 s stonewall: not hit, so no "Continue stonewall hit" line (as mdtest)
    hit = next(x for x in doc["phases"] if x["name"] == "file-create")["stonewall"]["hit"]
    assert parsed.stonewall_max is None and hit is False and not parsed.messages[1:]
    titles = {"file-create": "File creation", "file-stat": "File stat", "file-read": "File read"}
    for name, title in titles.items():
        p = next(x for x in doc["phases"] if x["name"] == name)
        row = parsed.rate(title)
        assert row is not None and row.max == pytest.approx(p["rate_per_s"], abs=0.0006)
        assert next(t for t in parsed.times if t.operation == title).max == pytest.approx(
            p["time_s"], abs=6e-4
        )
    canary_only(md_dir)
