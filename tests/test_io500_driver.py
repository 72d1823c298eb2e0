"""`iolens io500`: the driver runs every IO500 phase with the engine and writes the app's result directory.

The full runs use --quick (2 s stonewall, capped sizes) at 2 processes, locally and under mpirun; each is run
once per module and checked by several tests.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from iolens import results
from iolens.io500 import results_files
from iolens.io500.spec import runnable_phases
from iolens.store import Store, queries

STANDARD = [p.name for p in runnable_phases("standard")]
EXTENDED = [p.name for p in runnable_phases("extended")]


def write_config(root: Path, extra: str = "", name: str = "io500.ini") -> Path:
    cfg = root / name
    cfg.write_text(
        "[global]\n"
        f"datadir = {root}/data\n"
        f"resultdir = {root}/results\n"
        "timestamp-resultdir = FALSE\n"
        "[debug]\n"
        "stonewall-time = 300\n" + extra
    )
    return cfg


def run_io500(iolens_bin: list[str], *args: str, env: dict[str, str] | None = None,
              timeout: int = 300) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run(
        [*iolens_bin, "io500", *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def section_names(result: results_files.ResultFile) -> list[str]:
    return [s.name for s in result.phases]


# --------------------------------------------------------------------------------------------------- dry run


def test_dry_run_lists_every_phase_in_order_with_its_engine_arguments(iolens_bin: list[str], tmp_path: Path):
    cfg = write_config(tmp_path, "[ior-easy]\nblockSize = 1g\n[ior-hard]\nsegmentCount = 1000\n")
    out = run_io500(iolens_bin, str(cfg), "--dry-run", "--np", "2")
    assert out.returncode == 0, out.stderr
    listed = re.findall(r"^\s*\d+\. (\S+)", out.stdout, re.M)
    assert listed == STANDARD
    text = out.stdout
    # The app's fixed parameters, mapped onto the engine's flags.
    # [global] dataPacketType first on every ior and mdtest line, as the app puts it.
    pk = "--dataPacketType=timestamp"
    assert re.search(rf"ior {pk} -g -G \d+ -k -e -o \S+/ior-easy/ior_file_easy -C -Q 1 "
                     r"-O stoneWallingStatusFile=\S+/results/ior-easy.stonewall -t 2m -b 1g -F -w -D 300 "
                     r"-O stoneWallingWearOut=1 -a POSIX -O "
                     r"saveRankPerformanceDetailsCSV=\S+/ior-easy-write.csv --np 2", text)  # fmt: skip
    assert re.search(rf"ior {pk} -C -Q 1 -g -G \d+ -k -e -o \S+/ior-hard/file .* -t 47008 -b 47008 "
                     r"-s 1000 -w -D 300", text)  # fmt: skip
    assert re.search(rf"mdtest {pk} -n 1000000 -u -L -F -P -G \d+ -N 1 -d \S+/mdtest-easy "
                     r"-x \S+mdtest-easy.stonewall -C -Y -W 300 --saveRankPerformanceDetails="
                     r"\S+/results/mdtest-easy-write.csv -a POSIX", text)  # fmt: skip
    assert re.search(
        rf"mdtest {pk} -n 1000000 -t -w 3901 -e 3901 -P -G \d+ -N 1 -F -d \S+/mdtest-hard .* -E -X", text
    )
    assert re.search(r"find \S+/data/\S+ -newer \S+/results/timestampfile -size 3901c -name '\*01\*'", text)
    assert re.search(r"-r -D 300 -z -z -a POSIX -O saveRankPerformanceDetailsCSV=\S+/ior-rnd4K-easy-read.csv "
                     r"-t 4096 -b 4096 -s -1 -O stoneWallingWearOut=1 -C -Q 2", text)  # fmt: skip
    # The app's per-rank CSVs, where the app passes them (after the API for ior, before it for mdtest).
    assert re.search(r"-w -D 300 -a POSIX -O saveRankPerformanceDetailsCSV=\S+/results/ior-hard-write.csv "
                     r"-O stoneWallingWearOut=1", text)  # fmt: skip
    for step, flags in [("easy-stat", "-T"), ("hard-read", "-E -X"), ("hard-delete", "-r")]:
        assert f"{flags} --saveRankPerformanceDetails={tmp_path}/results/mdtest-{step}.csv -a POSIX" in text
    for ior in ("ior-easy-read", "ior-hard-read"):
        assert f"-r -R -a POSIX -O saveRankPerformanceDetailsCSV={tmp_path}/results/{ior}.csv" in text
    # Nothing was created.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["io500.ini"]


def test_ior_sizes_that_cannot_fit_the_free_space_are_capped_with_a_note(iolens_bin: list[str], tmp_path):
    # IO500's defaults (9920000m per process, 10,000,000 segments) rely on the stonewall; the engine refuses
    # a write larger than the free space, so the driver caps them and says so.
    cfg = write_config(tmp_path)
    out = run_io500(iolens_bin, str(cfg), "--dry-run", "--np", "2")
    assert out.returncode == 0, out.stderr
    assert re.search(
        r"note: \[ior-easy\] blockSize 9920000m -> \S+ per process to fit the free space", out.stdout
    )
    assert re.search(r"note: \[ior-hard\] segmentCount 10000000 -> \d+ to fit the free space", out.stdout)
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    block = re.search(r"-t 2m -b (\d+)([kmgt]?) ", out.stdout)
    assert block is not None
    size = int(block.group(1)) * {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[block.group(2)]
    assert 0 < 2 * size <= free


def test_dry_run_extended_adds_the_find_phases_and_names_what_iolens_lacks(iolens_bin: list[str], tmp_path):
    cfg = write_config(tmp_path, "[mdtest-hard]\nfiles-per-dir = 100\n")
    out = run_io500(iolens_bin, str(cfg), "--dry-run", "--mode", "extended", "--quick")
    assert out.returncode == 0, out.stderr
    assert re.findall(r"^\s*\d+\. (\S+)", out.stdout, re.M) == EXTENDED
    assert re.search(r"find \S+/mdtest-easy/ -name '\*01\*'", out.stdout)
    assert re.search(r"find \S+/mdtest-hard/ -newer \S+/timestampfile -size 3901c", out.stdout)
    # md-workbench as the app runs it; its counts come from mdtest-easy-write's rate once that has run.
    for step in ("-1", "-2 -R=2 -X", "-3"):
        assert re.search(
            r"iolens-bench md-workbench --dataPacketType=timestamp --process-reports -a POSIX "
            rf"-o=\S+/mdworkbench -t=0\.000000 -O=1 --run-info-file=\S+/mdworkbench\.status -D=10 -G=\d+ "
            rf"-P=AUTO -I=AUTO {step} --np 1$",
            out.stdout,
            re.M,
        ), step
    assert "-n 2000 -I 100 -t" in out.stdout  # --quick caps n; files-per-dir becomes -I
    assert "-W 2" in out.stdout and "9920000m -> 64m" in out.stdout


# ------------------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("extra", "line", "words"),
    [
        ("[ior-easy]\nfoo = 1\n", 8, "unknown key 'foo'"),
        ("[ior-easy]\nfoo =\n", 8, "unknown key 'foo' in section [ior-easy]"),  # an empty value too
        ("[ior-easy]\nblockSize = 2x\n", 8, "blockSize = 2x"),
        ("[ior-easy]\ntransferSize = 3m\nblockSize = 10m\n", 9, "multiple of transferSize"),
        ("[mdtest-easy]\nn = -4\n", 8, "expected an integer >= 0"),
        # --quick runs a 2 s stonewall of its own, but the config's value is wrong all the same.
        ("[debug]\nstonewall-time = -5\n", 8, "stonewall-time = -5: must not be negative"),
        ("[global]\napi = S3\n", 8, "API 'S3' is not supported"),
        # MPIIO needs MPI ranks: the local launcher's forked processes cannot run it.
        ("[global]\napi = MPIIO\n", 8, "MPIIO needs MPI ranks: run iolens io500 with --launcher mpirun"),
        ("[ior-easy]\nAPI = MPIIO --posix.odirect\n", 8, "'--posix.odirect' is not supported with MPIIO"),
        ("[global]\napi = POSIX --posix.foo\n", 8, "'--posix.foo' is not supported"),
        ("[ior-hard]\ncollective = TRUE\n", 8, "collective I/O needs API = MPIIO"),
        # O_DIRECT needs transfers in multiples of 512 bytes: ior-easy's are the config's.
        (
            "[global]\napi = POSIX --posix.odirect\n[ior-hard]\nAPI = POSIX\n"
            "[ior-easy]\ntransferSize = 1000\nblockSize = 1000000\n",
            8,
            "ior-easy-write: transferSize 1000 is not a multiple of 512 bytes",
        ),
    ],
)
def test_bad_config_exits_2_naming_the_line_and_creates_nothing(iolens_bin, tmp_path, extra, line, words):
    cfg = write_config(tmp_path, extra)
    out = run_io500(iolens_bin, str(cfg), "--np", "2", "--quick")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith(f"iolens: error: {cfg}:{line}: ")
    assert words in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["io500.ini"]


@pytest.mark.parametrize("mode", [["--dry-run"], ["--quick", "--np", "2"]])
def test_odirect_for_ior_hard_is_refused_before_any_io(iolens_bin, tmp_path: Path, mode: list[str]):
    # ior-hard's 47008-byte transfers are not a multiple of 512 bytes: O_DIRECT writes of them fail (the
    # app's IOR would fail mid-run), so the config check refuses them, naming the line that asked for it.
    cfg = write_config(tmp_path, "[global]\napi = POSIX --posix.odirect\n")
    out = run_io500(iolens_bin, str(cfg), *mode)
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr.strip() == (
        f"iolens: error: {cfg}:8: api = POSIX --posix.odirect: "
        "--posix.odirect cannot apply to ior-hard-write: "
        "ior-hard's fixed 47008-byte transfers are not a multiple of 512 bytes, so they cannot be O_DIRECT "
        "(IOR's writes would fail mid-run); to keep O_DIRECT for ior-easy, give ior-hard its own API without "
        "it: add 'API = POSIX' to [ior-hard] (or set the option in [ior-easy] API instead of [global])"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["io500.ini"]


def test_odirect_asked_in_ior_hard_itself_is_refused_naming_that_line(iolens_bin, tmp_path: Path):
    cfg = write_config(tmp_path, "[ior-hard]\nAPI = POSIX --posix.odirect\n")
    out = run_io500(iolens_bin, str(cfg), "--dry-run")
    assert out.returncode == 2
    assert out.stderr.startswith(f"iolens: error: {cfg}:8: API = POSIX --posix.odirect: ")
    assert out.stderr.strip().endswith("remove --posix.odirect from [ior-hard] API")


@pytest.mark.parametrize(
    ("extra", "mdtest_note"),
    [
        ("[ior-easy]\nAPI = POSIX --posix.odirect\n", False),  # mdtest's sections do not inherit [ior-easy]
        ("[global]\napi = POSIX --posix.odirect\n[ior-hard]\nAPI = POSIX\n", True),
    ],
)
def test_odirect_reaches_exactly_the_three_ior_easy_phases(iolens_bin, tmp_path: Path, extra, mdtest_note):
    cfg = write_config(tmp_path, extra)
    out = run_io500(iolens_bin, str(cfg), "--dry-run", "--quick")
    assert out.returncode == 0, out.stderr
    commands = {
        name: cmd for name, cmd in re.findall(r"^\s*\d+\. (\S+).*\n\s+(iolens-bench .*)$", out.stdout, re.M)
    }
    odirect = sorted(n for n, c in commands.items() if "--posix.odirect" in c)
    assert odirect == ["ior-easy-read", "ior-easy-write", "ior-rnd4K-easy-read"]
    assert "-t 47008" in commands["ior-hard-write"] and "-a POSIX" in commands["ior-hard-write"]
    # [global] api reaches the mdtest phases too, which cannot take it: the output says so.
    assert ("note: --posix.odirect is not passed to mdtest phases" in out.stdout) is mdtest_note


@pytest.mark.parametrize("skip", ["[ior-hard]\nrun = FALSE\n", "[ior-hard-write]\nrun = FALSE\n"])
def test_odirect_is_no_error_when_ior_hard_does_not_run(iolens_bin, tmp_path: Path, skip: str):
    cfg = write_config(tmp_path, "[global]\napi = POSIX --posix.odirect\n" + skip)
    out = run_io500(iolens_bin, str(cfg), "--dry-run", "--quick")
    assert out.returncode == 0, out.stderr
    assert re.search(r"\d+\. ior-hard-write .*\(run = FALSE in \[ior-hard(-write)?\]\)", out.stdout)
    assert re.search(r"\d+\. ior-hard-read .*\((run = FALSE|skipped: it needs ior-hard-write)", out.stdout)


def test_missing_datadir_parent_is_an_error_naming_the_line(iolens_bin, tmp_path: Path):
    cfg = tmp_path / "c.ini"
    cfg.write_text(f"[global]\ndatadir = {tmp_path}/nope/data\nresultdir = {tmp_path}/results\n")
    out = run_io500(iolens_bin, str(cfg), "--quick")
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"iolens: error: {cfg}:2: datadir = {tmp_path}/nope/data: "
        f"parent directory {tmp_path}/nope does not exist"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ini"]


def test_resultdir_that_cannot_be_written_is_an_error(iolens_bin, tmp_path: Path):
    (tmp_path / "afile").write_text("x")
    cfg = tmp_path / "c.ini"
    cfg.write_text(f"[global]\ndatadir = {tmp_path}/data\nresultdir = {tmp_path}/afile/results\n")
    out = run_io500(iolens_bin, str(cfg), "--quick")
    assert out.returncode == 2
    assert out.stderr.startswith(f"iolens: error: {cfg}:3: resultdir = ")
    assert "is not a directory" in out.stderr
    if os.geteuid() != 0:  # root writes anywhere: the permission case only means something for a user
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o500)
        cfg.write_text(f"[global]\ndatadir = {tmp_path}/data\nresultdir = {ro}/results\n")
        out = run_io500(iolens_bin, str(cfg), "--quick")
        assert out.returncode == 2 and "is not writable" in out.stderr
    assert not (tmp_path / "data").exists()


def test_resultdir_where_nothing_can_be_made_is_an_error_naming_the_line_even_for_root(iolens_bin, tmp_path):
    # /proc takes no new directory, whoever asks: writability is tried, not read from the mode bits.
    cfg = tmp_path / "c.ini"
    cfg.write_text(f"[global]\ndatadir = {tmp_path}/data\nresultdir = /proc/x\n")
    out = run_io500(iolens_bin, str(cfg), "--quick", "--np", "2")
    assert out.returncode == 2, out.stderr
    assert out.stderr.strip() == (
        f"iolens: error: {cfg}:3: resultdir = /proc/x: parent directory /proc is not writable "
        "(cannot create a directory in it: No such file or directory)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ini"]


def test_resultdir_a_user_cannot_write_is_an_error_naming_the_line(iolens_bin):
    # As an unprivileged user (setpriv, as root drops to nobody): a root-owned 0755 directory is not theirs.
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run iolens as another user")
    root = Path(tempfile.mkdtemp(prefix="iolens-setpriv-"))
    try:
        root.chmod(0o755)
        (root / "ro").mkdir(mode=0o755)
        (root / "open").mkdir(mode=0o777)
        (root / "open").chmod(0o777)
        cfg = root / "c.ini"
        cfg.write_text(f"[global]\ndatadir = {root}/open/data\nresultdir = {root}/ro/results\n")
        cfg.chmod(0o644)
        out = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *iolens_bin, "io500", str(cfg),
             "--quick", "--np", "2"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip() == (
            f"iolens: error: {cfg}:3: resultdir = {root}/ro/results: parent directory {root}/ro is not "
            "writable (cannot create a directory in it: Permission denied)"
        )
        assert list((root / "ro").iterdir()) == [] and list((root / "open").iterdir()) == []
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_an_error_in_a_default_option_names_its_section(iolens_bin, tmp_path: Path):
    cfg = tmp_path / "c.ini"
    cfg.write_text("[debug]\nstonewall-time = 5\n")  # datadir/resultdir default to ./datafiles, ./results
    (tmp_path / "datafiles").write_text("in the way")
    out = subprocess.run([*iolens_bin, "io500", str(cfg), "--quick"], cwd=tmp_path, capture_output=True,
                         text=True, check=False)  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip() == (
        f"iolens: error: {cfg}: [global] datadir = ./datafiles (default): "
        "./datafiles exists and is not a directory"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ini", "datafiles"]


# ------------------------------------------------------------------------------------------------ full runs


def _full_run(iolens_bin: list[str], root: Path, *launch: str, env: dict[str, str] | None = None) -> dict:
    cfg = write_config(root)
    json_copy = root / "copy.json"
    out = run_io500(iolens_bin, str(cfg), "--quick", "--np", "2", "--json", str(json_copy), *launch, env=env)
    return {"cfg": cfg, "out": out, "root": root, "results": root / "results", "json": json_copy}


@pytest.fixture(scope="module")
def local_run(iolens_bin: list[str]) -> Iterator[dict]:
    # On a tmpfs where there is one (the quick run is then a few seconds), else under /tmp.
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="iolens-io500-", dir=shm if os.access(shm, os.W_OK) else None))
    try:
        yield _full_run(iolens_bin, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def mpi_run(iolens_bin: list[str], mpi_env: dict[str, str], tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("io500-mpi")
    return _full_run(
        iolens_bin, root, "--launcher", "mpirun", "--launcher-args", "--oversubscribe", env=mpi_env
    )


@pytest.fixture(params=["local", "mpirun"])
def full_run(request: pytest.FixtureRequest) -> dict:
    return request.getfixturevalue("local_run" if request.param == "local" else "mpi_run")


def test_quick_run_succeeds_and_says_it_is_not_a_valid_io500_run(full_run: dict):
    out = full_run["out"]
    assert out.returncode == 0, out.stderr[-3000:]
    assert "NOT a valid IO500 result" in out.stdout
    assert f"results: {full_run['results']}" in out.stdout
    assert re.search(
        r"\[SCORE \] Bandwidth [\d.]+ GiB/s : IOPS [\d.]+ kiops : TOTAL [\d.]+ +\[INVALID\]", out.stdout
    )


def test_quick_run_writes_every_phase_in_order_in_files_the_reader_reads(full_run: dict):
    rd = full_run["results"]
    result = results_files.read_result(rd / "result.txt")
    assert section_names(result) == STANDARD
    assert result.procs == 2 and result.mode == "standard"
    summary = results_files.read_summary(rd / "result_summary.txt")
    assert [p.name for p in summary.phases] == STANDARD
    assert summary.score is not None and not summary.score.valid
    scores = result.phase_scores()
    for name in STANDARD:
        if name != "timestamp":
            assert scores[name] > 0, name
    md, bw, total = result.score_values()[0].md, result.score_values()[0].bw, result.score_values()[0].score
    assert md > 0 and bw > 0 and total > 0
    run = result.section("run")
    assert run is not None and any("QUICK MODE" in r for r in run.invalid_reasons)
    find = result.section("find")
    assert find is not None and int(find.get("found") or 0) > 0 and int(find.get("total-files") or 0) > 0
    assert (rd / "config-orig.ini").read_bytes() == full_run["cfg"].read_bytes()
    assert (rd / "config.ini").read_text().startswith("[global]\ndatadir = ")
    for name in STANDARD:
        if name != "timestamp":
            assert (rd / f"{name}.txt").stat().st_size > 0
            assert results.load(rd / f"{name}.json").ok
            # The app's per-rank CSV (tests/test_io500_csv.py checks their content): a line per rank.
            ranks = [ln.split(",")[1 if name.startswith("ior") else 0] for ln in
                     (rd / f"{name}.csv").read_text().splitlines()[1:]]  # fmt: skip
            assert ranks[-2:] == ["0", "1"] and len(ranks) == (2 if name.startswith("ior") else 3), name


def test_quick_run_document_parses_and_matches_result_txt(full_run: dict):
    rd = full_run["results"]
    raw = json.loads((rd / "iolens-io500.json").read_text())
    assert raw == json.loads(full_run["json"].read_text())
    doc = results.load(rd / "iolens-io500.json")
    assert isinstance(doc, results.Io500Document) and doc.ok and doc.io500 is not None
    io = doc.io500
    assert [p.name for p in io.phases] == STANDARD
    assert all(p.status == "ok" for p in io.phases)
    assert io.quick and not io.valid and io.score.score > 0
    result = results_files.read_result(rd / "result.txt")
    stated = result.score_values()
    assert (
        stated is not None and f"{io.score.score:f}" == f"{stated[0].score:f}" and io.score.hash == stated[2]
    )
    ior = io.phase("ior-easy-write")
    assert ior is not None and ior.figures["bytes"] == 2 * 64 * 2**20  # the quick cap, both ranks


def test_quick_run_hashes_verify(iolens_bin: list[str], full_run: dict):
    out = run_io500(iolens_bin, "--verify", str(full_run["cfg"]), str(full_run["results"] / "result.txt"))
    # Both hashes match; exit status 1 because a quick run is never a valid run (as io500-verify answers).
    assert "[OK] But this is an invalid run!" in out.stdout, out.stdout + out.stderr
    assert out.returncode == 1
    report = results_files.verify(full_run["cfg"], full_run["results"] / "result.txt")
    assert report.ok and not report.valid_run


def test_quick_run_leaves_only_the_result_directory(full_run: dict):
    root = full_run["root"]
    assert sorted(p.name for p in root.iterdir()) == sorted(["io500.ini", "results", "copy.json"])
    left = [p.name for p in full_run["results"].iterdir()]
    assert not [n for n in left if n.endswith(".stonewall") or n == "timestampfile"]


REF = Path(__file__).resolve().parent / "data" / "io500"


def _keys(section: results_files.Section) -> list[str]:
    return [ln.key for ln in section.lines if isinstance(ln, results_files.Pair)]


def test_quick_run_result_txt_has_the_apps_keys_in_the_apps_order(local_run: dict):
    # Every section of the driver's result.txt (a real run) against the app's reference file: the same
    # sections in the same order, and in each the same keys in the same order (values differ, of course).
    if not (REF / "result.txt").is_file():
        pytest.fail(f"IO500 reference files missing at {REF} (tests/data/io500 is part of the repository)")
    ref = results_files.read_result(REF / "result.txt")
    ours = results_files.read_result(local_run["results"] / "result.txt")
    assert [s.name for s in ours.sections] == [s.name for s in ref.sections]
    for mine, theirs in zip(ours.sections, ref.sections, strict=True):
        assert _keys(mine) == _keys(theirs), mine.name
    find = ours.section("find")
    assert find is not None and find.get("nproc") == "2"  # [find] nproc unset: all the run's processes
    exe = (ours.section("ior-easy-write") or results_files.Section("")).get("exe") or ""
    assert " -a POSIX" in exe and " -t 2m " in exe  # the config's spelling ([global] api's default, 2m)


def _engine_seconds(raw: dict) -> float:
    """The engine's time for a phase's work, read straight from its JSON document."""
    if raw["workload"] == "find":
        return raw["find"]["time_s"]
    if raw["workload"] == "ior":
        return sum(ph["times"]["total_s"] for ph in raw["phases"])
    return sum(ph["time_s"] for ph in raw["phases"])


def test_phase_runtime_is_the_engines_time_without_the_launch(local_run: dict):
    # The app times the benchmark inside its MPI job; iolens takes the engine's own time for the work, not
    # the wall time around the launch (process start), for t_delta and for the stonewall/minimum checks.
    rd = local_run["results"]
    result = results_files.read_result(rd / "result.txt")
    doc = json.loads((rd / "iolens-io500.json").read_text())
    by_name = {p["name"]: p for p in doc["io500"]["phases"]}
    for section in result.phases:
        if section.name == "timestamp":
            continue
        seconds = _engine_seconds(json.loads((rd / f"{section.name}.json").read_text()))
        assert section.get("t_delta") == f"{seconds:.4f}", section.name
        phase = by_name[section.name]
        assert phase["runtime_s"] == pytest.approx(seconds, abs=1e-9)
        assert phase["wall_s"] > phase["runtime_s"]  # the launch is outside the engine's time
        if section.name.endswith("-write"):
            # The 2 s stonewall of --quick: each capped write is shorter; the message carries the engine time.
            message = f"Runtime of phase ({seconds:f}) is below stonewall time. This shouldn't happen!"
            assert (message in section.invalid_reasons) == (seconds < 2), section.name


def test_exe_lines_keep_the_sizes_and_api_as_the_config_writes_them(iolens_bin, tmp_path: Path):
    cfg = write_config(
        tmp_path, "[global]\napi = Posix\n[ior-easy]\ntransferSize = 2048k\nblockSize = 131072K\n"
    )
    out = run_io500(iolens_bin, str(cfg), "--dry-run", "--np", "2")
    assert out.returncode == 0, out.stderr
    assert re.search(
        r"-t 2048k -b 131072K -F -w -D 300 -O stoneWallingWearOut=1 -a Posix -O \S+ --np 2", out.stdout
    )
    assert re.search(r"-t 2048k -b 131072K -F -r -R -a Posix -O \S+ --np 2", out.stdout)
    assert re.search(r"-C -Y -W 300 --saveRankPerformanceDetails=\S+ -a Posix --np 2", out.stdout)
    # A size iolens caps (--quick) is written as the capped value.
    out = run_io500(iolens_bin, str(cfg), "--dry-run", "--np", "2", "--quick")
    assert out.returncode == 0 and "-t 2048k -b 64m " in out.stdout


def test_pause_dir_waits_for_the_pause_file_and_writes_the_apps_lines(iolens_bin, tmp_path: Path):
    pause = tmp_path / "pause"
    pause.mkdir()
    (pause / "ior-hard-write").write_text("")
    cfg = write_config(tmp_path, f"[debug]\npause-dir = {pause}\n")
    proc = subprocess.Popen(
        [*iolens_bin, "io500", str(cfg), "--quick", "--np", "2", "--no-live"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "pausing before ior-hard-write" in line:
            break
    # The run waits before ior-hard-write while the file exists; it goes on once the file is gone.
    assert not any("ior-hard-write" in ln and "GiB/s" in ln for ln in seen)
    released = datetime.now().replace(microsecond=0)
    (pause / "ior-hard-write").unlink()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    result = results_files.read_result(tmp_path / "results" / "result.txt")
    for section in result.phases:
        lines = [ln.render() for ln in section.lines[:3]]
        assert lines[0].startswith("t_pause         = "), section.name
        assert lines[1] == f"; Checking for pause file {pause}/{section.name}"
        assert lines[2].startswith("t_start         = ")
    hard = result.section("ior-hard-write")
    assert hard is not None
    start = datetime.strptime(hard.get("t_start") or "", results_files.TIMESTAMP_FORMAT)
    assert start >= released
    run = result.section("run")
    assert run is not None and "PAUSING BETWEEN RUNS ACTIVATED" in run.invalid_reasons


REPO = Path(__file__).resolve().parents[1]


def test_make_run_command_line_works_with_the_config_make_run_writes(iolens_bin: list[str], tmp_path: Path):
    # `make run` writes a config into a scratch directory under /tmp and runs `iolens io500 CFG --quick
    # --np 2` (then removes the data directory). The same config, from the Makefile's own printf, the same
    # command.
    makefile = (REPO / "Makefile").read_text()
    recipe = makefile[makefile.index("\nrun: ") :]
    printf = re.search(
        r"printf '([^']*)' \\?\s*\"\$\$scratch\" \"\$\$scratch\" > \"\$\$scratch/io500.ini\"", recipe
    )
    assert printf is not None, "the run target's config line changed: update this test with it"
    # ... stored in the default database unless $IOLENS_DB names one (`iolens web` then shows it)
    assert '$(VENV)/bin/iolens io500 "$$scratch/io500.ini" --quick --np 2 "$${db_opt[@]}";' in recipe
    assert 'db_opt=(--db "$$db")' in recipe
    scratch = Path(tempfile.mkdtemp(prefix="iolens-run.", dir="/tmp"))
    db = tmp_path / "iolens.db"
    try:
        (scratch / "io500.ini").write_text(printf.group(1).replace("\\n", "\n") % (scratch, scratch))
        out = run_io500(iolens_bin, str(scratch / "io500.ini"), "--quick", "--np", "2", "--db", str(db))
        assert out.returncode == 0, out.stderr[-3000:]
        # The phase table (every phase, in order), the score, and where the results are.
        words = [ln.split() for ln in out.stdout.splitlines()]
        table = [w[0] for w in words if w and w[0] in STANDARD]
        assert table == STANDARD
        score = r"^\[SCORE \] Bandwidth [\d.]+ GiB/s : IOPS [\d.]+ kiops : TOTAL [\d.]+"
        assert re.search(score, out.stdout, re.M)
        assert f"results: {scratch}/results" in out.stdout
        result = results_files.read_result(scratch / "results" / "result.txt")
        assert section_names(result) == STANDARD and result.procs == 2
        # The data directory (timestamped: the config keeps timestamp-datadir's default) is gone already.
        assert sorted(p.name for p in scratch.iterdir()) == ["io500.ini", "results"]
        with Store.open(str(db), create=False) as store:
            assert [r["tool"] for r in queries.list_runs(store.db)] == ["io500"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# --------------------------------------------------------------------------------------------- run = FALSE


def test_phases_with_run_false_are_skipped_and_their_data_never_made(iolens_bin: list[str], tmp_path: Path):
    cfg = write_config(
        tmp_path, "[ior-hard]\nrun = FALSE\n[find]\nrun = FALSE\n[mdtest-easy-delete]\nrun = FALSE\n"
    )
    out = run_io500(iolens_bin, str(cfg), "--quick", "--np", "2", "--no-live")
    assert out.returncode == 0, out.stderr[-2000:]
    doc = results.load(tmp_path / "results" / "iolens-io500.json")
    assert isinstance(doc, results.Io500Document) and doc.io500 is not None
    status = {p.name: p.status for p in doc.io500.phases}
    skipped = {"ior-hard-write", "ior-hard-read", "find", "mdtest-easy-delete"}
    assert {n for n, s in status.items() if s == "skipped"} == skipped
    assert not list((tmp_path / "results").glob("ior-hard-*.json"))
    result = results_files.read_result(tmp_path / "results" / "result.txt")
    assert section_names(result) == STANDARD  # the app prints every phase, a skipped one with score 0
    hard = result.section("ior-hard-write")
    assert hard is not None and hard.get("score") == "0.000000"
    # mdtest-easy-delete did not run: the driver removed the tree the engine's way; nothing is left.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["io500.ini", "results"]


# ------------------------------------------------------------------------- extended mode, drop-caches


def _tmpfs_root(prefix: str) -> Path:
    shm = Path("/dev/shm")
    return Path(tempfile.mkdtemp(prefix=prefix, dir=shm if os.access(shm, os.W_OK) else None))


@pytest.fixture(scope="module")
def extended_run(iolens_bin: list[str]) -> Iterator[dict]:
    # drop-caches-cmd records, each time it runs, how many phase documents the result directory holds:
    # run before every phase (and after the one before it), it must see 0, 1, 2, ... documents.
    root = _tmpfs_root("iolens-io500-ext-")
    marker = root / "drops.txt"
    cfg = write_config(
        root,
        f"[global]\ndrop-caches = TRUE\ndrop-caches-cmd = ls {root}/results | grep -c 'json$' >> {marker}\n",
    )
    try:
        out = run_io500(iolens_bin, str(cfg), "--quick", "--mode", "extended", "--np", "2", "--no-live")
        yield {"out": out, "root": root, "results": root / "results", "marker": marker, "cfg": cfg}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_drop_caches_cmd_runs_once_before_each_phase_that_runs(extended_run: dict):
    assert extended_run["out"].returncode == 0, extended_run["out"].stderr[-3000:]
    doc = results.load(extended_run["results"] / "iolens-io500.json")
    assert isinstance(doc, results.Io500Document) and doc.io500 is not None
    ran = [p.name for p in doc.io500.phases if p.status == "ok" and p.name != "timestamp"]
    assert len(ran) == 18  # the 13 standard I/O phases, find-easy, find-hard, md-workbench's 3 (no timestamp)
    seen = extended_run["marker"].read_text().split()
    assert seen == [str(i) for i in range(len(ran))]


def test_extended_quick_run_scores_find_easy_and_find_hard(extended_run: dict):
    out = extended_run["out"]
    assert out.returncode == 0, out.stderr[-3000:]
    rd = extended_run["results"]
    result = results_files.read_result(rd / "result.txt")
    assert section_names(result) == EXTENDED
    assert result.mode == "extended"
    scores = result.phase_scores()
    for name in ("find", "find-easy", "find-hard"):
        section = result.section(name)
        assert section is not None and int(section.get("found") or 0) > 0, name
        assert scores[name] > 0, name
    assert re.search(
        r"\[SCOREX\] Bandwidth [\d.]+ GiB/s : IOPS [\d.]+ kiops : TOTAL [\d.]+ +\[INVALID\]", out.stdout
    )
    doc = results.load(rd / "iolens-io500.json")
    assert isinstance(doc, results.Io500Document) and doc.io500 is not None
    ext = doc.io500.extended_score
    assert ext is not None and ext.score > 0 and ext.md_kiops > 0 and ext.bw_gib_per_s > 0 and not ext.valid
    assert all(p.status == "ok" for p in doc.io500.phases)


def test_extended_quick_run_leaves_no_file_in_the_data_directory(extended_run: dict):
    root = extended_run["root"]
    assert not (root / "data").exists()  # the timestamped data directory and its parent, both made by the run
    assert sorted(p.name for p in root.iterdir()) == ["drops.txt", "io500.ini", "results"]


def test_drop_caches_cmd_runs_on_every_rank_of_an_mpi_launch(tmp_path: Path, mpi_env: dict[str, str]):
    # As the app (every rank calls system()), so that every node of the job drops its caches.
    from iolens.io500.driver import DriverOptions, drop_caches_command

    marker = tmp_path / "drops.txt"
    cmd = f"echo dropped >> {marker}"
    opts = DriverOptions("c.ini", np=2, launcher="mpirun", launcher_args=["--oversubscribe"])
    argv = drop_caches_command(cmd, opts)
    assert argv == ["mpirun", "-np", "2", "--oversubscribe", "/bin/sh", "-c", cmd]
    assert subprocess.run(argv, env=mpi_env, capture_output=True, timeout=60, check=False).returncode == 0
    assert marker.read_text() == "dropped\n" * 2
    srun = drop_caches_command(cmd, DriverOptions("c.ini", np=4, launcher="srun"))
    assert srun == ["srun", "-n", "4", "/bin/sh", "-c", cmd]
    assert drop_caches_command(cmd, DriverOptions("c.ini", np=4)) == ["/bin/sh", "-c", cmd]
    # --nodes: the ranks that drop the caches are spread over the nodes as the phases' ranks are.
    spread = drop_caches_command(cmd, DriverOptions("c.ini", np=4, nodes=2, launcher="srun"))
    assert spread == ["srun", "-n", "4", "-N", "2", "--ntasks-per-node=2", "/bin/sh", "-c", cmd]


# ------------------------------------------------------------------------------------------------- --nodes


def test_nodes_spreads_every_phase_as_for_ior_and_mdtest(iolens_bin, tmp_path: Path):
    # README's command line: every phase's launch spreads the 64 ranks over the 4 nodes.
    cfg = write_config(tmp_path, "[ior-easy]\nblockSize = 1g\n[find]\nnproc = 2\n")
    out = run_io500(iolens_bin, str(cfg), "--launcher", "mpirun", "--np", "64", "--nodes", "4", "--dry-run")
    assert out.returncode == 0, out.stderr
    launches = re.findall(r"^\s+(mpirun .*)$", out.stdout, re.M)
    assert len(launches) == len(STANDARD) - 1  # every phase but the timestamp
    spread = r"mpirun -np 64 (--map-by ppr:16:node|-ppn 16) iolens-bench (ior|mdtest|find) .* --comm mpi$"
    assert sum(bool(re.fullmatch(spread, ln)) for ln in launches) == len(STANDARD) - 2
    # find runs its nproc = 2 processes: over (at most) as many nodes.
    find = r"mpirun -np 2 (--map-by ppr:1:node|-ppn 1) iolens-bench find .*"
    assert [ln for ln in launches if " find " in ln] == [ln for ln in launches if re.fullmatch(find, ln)]
    assert len([ln for ln in launches if " find " in ln]) == 1
    out = run_io500(iolens_bin, str(cfg), "--launcher", "srun", "--np", "8", "--nodes", "2", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert re.search(
        r"^\s+srun -n 8 -N 2 --ntasks-per-node=4 iolens-bench ior .* -w -D 300 .* --comm mpi$",
        out.stdout,
        re.M,
    )
    assert re.search(r"^\s+srun -n 2 -N 2 --ntasks-per-node=1 iolens-bench find ", out.stdout, re.M)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["io500.ini"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--launcher", "mpirun", "--np", "2", "--nodes", "3"], "--nodes: 3 nodes need at least as many"),
        (["--np", "2", "--nodes", "2"], "--nodes: the local launcher runs on this node only"),
        (["--launcher", "srun", "--nodes", "0"], "--nodes: expected a positive integer, got '0'"),
    ],
)
def test_impossible_nodes_are_refused_before_any_io(iolens_bin, tmp_path, args, message):
    cfg = write_config(tmp_path)
    for extra in ([], ["--dry-run"]):
        out = run_io500(iolens_bin, str(cfg), *args, *extra)
        assert out.returncode == 2
        assert out.stderr.strip().startswith(f"iolens: error: {message}"), out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["io500.ini"]


# ----------------------------------------------------------------------------------- the stonewall


@pytest.fixture(scope="module")
def stonewall_run(iolens_bin: list[str]) -> Iterator[dict]:
    # A 1 s stonewall with sizes that take several seconds to write on tmpfs: every write phase is cut by
    # the stonewall (the ranks then wear out to the same count) and the reads must find exactly that.
    # Not --quick: its caps make every write end long before any stonewall on tmpfs.
    root = _tmpfs_root("iolens-io500-sw-")
    cfg = write_config(
        root,
        "[ior-easy]\ntransferSize = 1m\nblockSize = 3g\n[ior-hard]\nsegmentCount = 40000\n"
        "[mdtest-easy]\nn = 400000\n[mdtest-hard]\nn = 120000\n",
    )
    cfg.write_text(cfg.read_text().replace("stonewall-time = 300", "stonewall-time = 1"))
    try:
        out = run_io500(iolens_bin, str(cfg), "--np", "2", "--no-live")
        doc = None
        if (root / "results" / "iolens-io500.json").exists():
            doc = results.load(root / "results" / "iolens-io500.json")
        yield {"out": out, "root": root, "results": root / "results", "doc": doc}
    finally:
        shutil.rmtree(root, ignore_errors=True)


WRITES_AND_READS = {
    "ior-easy-write": ["ior-easy-read"],
    "ior-hard-write": ["ior-hard-read"],
    "mdtest-easy-write": ["mdtest-easy-stat", "mdtest-easy-delete"],
    "mdtest-hard-write": ["mdtest-hard-stat", "mdtest-hard-read", "mdtest-hard-delete"],
}


def test_stonewalled_writes_are_read_back_exactly(stonewall_run: dict):
    out, doc = stonewall_run["out"], stonewall_run["doc"]
    assert out.returncode == 0, out.stderr[-3000:]
    assert isinstance(doc, results.Io500Document) and doc.io500 is not None
    phases = {p.name: p for p in doc.io500.phases}
    for write, reads in WRITES_AND_READS.items():
        fig = phases[write].figures
        assert fig["stonewall"]["hit"] is True, write
        count = "bytes" if write.startswith("ior") else "items"
        written = fig[count]
        # Cut short: far less than the config asked for (3 GiB per rank, 40000 segments, n files per rank).
        asked = {"ior-easy-write": 2 * 3 * 2**30, "ior-hard-write": 2 * 40000 * 47008,
                 "mdtest-easy-write": 2 * 400000, "mdtest-hard-write": 2 * 120000}[write]  # fmt: skip
        assert 0 < written < asked, write
        # Wear-out: every rank did the same count.
        unit = {"ior-easy-write": 2 * 2**20, "ior-hard-write": 2 * 47008}.get(write, 2)
        assert written % unit == 0, write
        for read in reads:
            assert phases[read].status == "ok", read
            assert phases[read].figures[count] == written, (write, read)
            assert not phases[read].invalid_reasons, read  # no verification error, a score > 0


def test_stonewalled_run_is_invalid_with_the_apps_reasons(stonewall_run: dict):
    out, doc = stonewall_run["out"], stonewall_run["doc"]
    assert out.returncode == 0, out.stderr[-3000:]
    assert isinstance(doc, results.Io500Document) and doc.io500 is not None
    writes = list(WRITES_AND_READS)
    assert list(doc.io500.invalid_reasons) == ["[run] stonewall-time 1s != 300s"] + [
        f"[{w}] Runtime is smaller than expected minimum runtime" for w in STANDARD if w in writes
    ]
    assert not doc.io500.valid and not doc.io500.score.valid
    result = results_files.read_result(stonewall_run["results"] / "result.txt")
    run = result.section("run")
    assert run is not None and list(run.invalid_reasons) == ["stonewall-time 1s != 300s"]
    for w in writes:
        section = result.section(w)
        # The stonewall was hit: no "Write phase needed ..." and no "below stonewall time" reason.
        assert section is not None and list(section.invalid_reasons) == [
            "Runtime is smaller than expected minimum runtime"
        ], w
        assert float(section.get("t_delta") or 0) >= 1.0
    summary = results_files.read_summary(stonewall_run["results"] / "result_summary.txt")
    assert summary.score is not None and not summary.score.valid
    assert "not a valid IO500 run (5 reason(s)); the first: [run] stonewall-time 1s != 300s" in out.stdout
    assert sorted(p.name for p in stonewall_run["root"].iterdir()) == ["io500.ini", "results"]


# ------------------------------------------------------------------------------------------ live display


def _render(display: object) -> str:
    from rich.console import Console

    console = Console(record=True, width=200, force_terminal=False, color_system=None)
    console.print(display)
    return console.export_text()


def test_live_display_shows_phase_live_rate_stonewall_left_and_running_score(tmp_path: Path):
    from rich.console import Console

    from iolens import launch
    from iolens.io500.driver import Display, PhaseRecord
    from iolens.io500.ini import load_config
    from iolens.io500.phases import plan
    from iolens.io500.score import PhaseOutcome

    plan_ = plan(load_config(write_config(tmp_path)), quick=True, np=2, check_dirs=False)  # 2 s stonewall
    err = Console(record=True, width=200, force_terminal=False)
    display = Display(plan_, Console(file=io.StringIO()), err, live=True)
    assert display.live is None  # not a terminal: one line per phase instead of a rich Live

    display.start(plan_.phases[0], 1)
    text = _render(display)
    assert "[1/14] ior-easy-write  starting" in text and "stonewall: 2.0 s left" in text
    assert "running score: BW 0.000 GiB/s  MD 0.000 kIOPS  SCORE 0.000" in text

    # The engine's progress lines, as launch.run hands them to the display.
    for elapsed, moved, bw in ((0.502, 985661440, 1964739607.4), (1.524, 1214251008, 796501466.5)):
        line = (f'IOLENS-PROGRESS {{"phase": "write", "iteration": 0, "elapsed_s": {elapsed}, '
                f'"bytes": {moved}, "bw_bytes_per_s": {bw}, "estimate": true}}')  # fmt: skip
        progress = launch.parse_progress(line)
        assert progress is not None
        display.on_progress(progress)
    text = _render(display)
    assert re.search(
        r"\[1/14\] ior-easy-write +write iter 0 +759\.6 MiB/s +1\.13 GiB +phase 1\.5 s .*\(estimate\)"
        r" +stonewall: 0\.5 s left",
        text,
    ), text

    # Done phases join the table and the running score: BW and MD are geometric means, SCORE √(BW × MD).
    for name, score in (("ior-easy-write", 2.0), ("mdtest-easy-write", 50.0), ("ior-hard-write", 0.5)):
        p = plan_.phase(name)
        assert p is not None
        display.done(PhaseRecord(p, "ok", PhaseOutcome(name, score, 2.25)))
    display.start(plan_.phase("ior-easy-read"), 7)  # type: ignore[arg-type]
    text = _render(display)
    assert re.search(r"ior-easy-write +2\.000000 +GiB/s +2\.250", text)
    assert re.search(r"mdtest-easy-write +50\.000000 +kIOPS +2\.250", text)
    assert "running score: BW 1.000 GiB/s  MD 50.000 kIOPS  SCORE 7.071" in text
    assert "[7/14] ior-easy-read  starting" in text
    assert "stonewall" not in text.split("[7/14]")[1]  # a read phase has no stonewall
    # Without a terminal, each phase done is one line on standard error.
    lines = err.export_text().splitlines()
    assert lines[0].startswith("[1/14] ior-easy-write") and "2.000000 GiB/s  2.250 s" in lines[0]
    assert len(lines) == 3
