"""The MPI-IO backend (-a MPIIO) under a real mpirun: independent and collective transfers, shared file and
file per process, file views, preallocation, hints from a file and the environment as the library reports
them, verification, stonewalling, the refusals, and io500's `API = MPIIO`.

Each check looks at what happened (the bytes in the files, the document's figures, the printed hints), and
where it is cheap at what the official IOR 4 does (tests/data/ior4, or the tool itself when it is built)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import REPO
from .ior_helpers import EngineResult, io500_exe_and_scores, run_engine

MPIRUN = ["mpirun", "--oversubscribe", "-np"]
DATA = Path(__file__).parent / "data" / "ior4"
OFFICIAL_IOR = Path("/var/tmp/iolens-peers/ior-4.0.0/bin/ior")
KIB = 1024
MIB = 1024 * KIB


@pytest.fixture(scope="module", autouse=True)
def _engine_with_mpi(engine: Path) -> None:
    out = subprocess.run([str(engine), "--version"], capture_output=True, text=True).stdout
    if "mpi=yes" not in out:
        pytest.skip("this engine was built without MPI")


def mpirun(
    engine: Path, np_: int, args: list[str], env: dict[str, str], quiet: bool = True, timeout: float = 120
) -> EngineResult:
    """iolens-bench ior ARGS as np_ MPI ranks; the timeout is the hang detector of the collective tests."""
    return run_engine(engine, args, launcher=[*MPIRUN, str(np_)], env=env, quiet=quiet, timeout=timeout)


def ok(res: EngineResult) -> dict:
    assert res.returncode == 0, res.stderr[-3000:]
    assert res.doc is not None and res.doc["status"] == "ok", res.stderr[-3000:]
    return res.doc


def phase(doc: dict, name: str) -> dict:
    return next(p for p in doc["phases"] if p["name"] == name)


def hint_blocks(text: str) -> list[str]:
    """The blocks IOR's -H prints ("hints passed to ... {" to "}"), in order."""
    return re.findall(r"^hints [^\n]*\{\n(?:\t[^\n]*\n)*\}$", text, re.M)


# ------------------------------------------------------------------------------------------- data movement


@pytest.mark.parametrize("np_", [2, 4])
@pytest.mark.parametrize(
    "mode", [[], ["-c"], ["-O", "collective=1"]], ids=["independent", "c", "O-collective"]
)
def test_shared_file_moves_what_posix_moves_and_verifies(
    engine: Path, mpi_env: dict[str, str], tmp_path: Path, np_: int, mode: list[str]
) -> None:
    common = ["-t", "64k", "-b", "256k", "-s", "3", "-G", "11", "-k"]
    doc = ok(
        mpirun(
            engine,
            np_,
            ["-a", "MPIIO", *mode, *common, "-w", "-r", "-W", "-R", "-o", str(tmp_path / "m")],
            mpi_env,
        )
    )
    size = 3 * 256 * KIB * np_
    assert (tmp_path / "m").stat().st_size == size
    api = doc["api"]
    assert api["name"] == "mpiio" and api["collective"] == bool(mode)
    assert api["communicator"] == "MPI_COMM_WORLD" and api["library"]
    w, r = phase(doc, "write"), phase(doc, "read")
    assert w["bytes"] == r["bytes"] == size
    assert [x["ops"] for x in w["per_rank"]] == [12] * np_
    assert w["verify"]["bytes_checked"] == size and w["verify"]["errors"] == 0
    assert r["verify"]["bytes_checked"] == size and r["verify"]["errors"] == 0
    assert w["latency_ns"]["count"] == 12 * np_
    # The read's eviction went through posix on the path: MPI-IO has no descriptor.
    assert r["cache"]["via"] == "posix"
    # The same bytes as a posix run of the same seed: the same work on the device.
    ok(run_engine(engine, ["-a", "posix", *common, "-w", "-o", str(tmp_path / "p")], np=np_))
    assert (tmp_path / "m").read_bytes() == (tmp_path / "p").read_bytes()


def test_file_per_process_opens_each_file_alone(
    engine: Path, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    args = ["-a", "MPIIO", "-F", "-c", "-t", "64k", "-b", "256k", "-s", "3", "-w", "-r", "-W", "-R", "-k"]
    doc = ok(mpirun(engine, 3, [*args, "-o", str(tmp_path / "f")], mpi_env))
    files = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("f."))
    assert files == ["f.00000000", "f.00000001", "f.00000002"]
    assert all((tmp_path / f).stat().st_size == 3 * 256 * KIB for f in files)
    assert doc["api"]["communicator"] == "MPI_COMM_SELF"
    assert phase(doc, "read")["verify"]["errors"] == 0 and phase(doc, "read")["bytes"] == 9 * 256 * KIB


@pytest.mark.parametrize("extra", [["-V"], ["-V", "-c", "-C"], ["--mpiio.useFileView", "-F"]])
def test_file_view_moves_the_same_bytes_as_plain_offsets(
    engine: Path, mpi_env: dict[str, str], tmp_path: Path, extra: list[str]
) -> None:
    common = ["-t", "64k", "-b", "256k", "-s", "3", "-G", "5", "-k", *(["-F"] if "-F" in extra else [])]
    doc = ok(
        mpirun(
            engine,
            3,
            ["-a", "MPIIO", *extra, *common, "-w", "-r", "-W", "-R", "-o", str(tmp_path / "v")],
            mpi_env,
        )
    )
    assert doc["api"]["file_view"] is True
    assert phase(doc, "read")["verify"]["errors"] == 0
    ok(run_engine(engine, ["-a", "posix", *common, "-w", "-o", str(tmp_path / "p")], np=3))
    made = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("v"))
    assert made
    for name in made:
        assert (tmp_path / name).read_bytes() == (tmp_path / ("p" + name[1:])).read_bytes(), name


def test_strided_datatype_covers_every_segment(engine: Path, mpi_env: dict[str, str], tmp_path: Path) -> None:
    args = ["-a", "MPIIO", "-V", "--mpiio.useStridedDatatype", "-t", "32k", "-b", "64k", "-w", "-k"]
    doc = ok(mpirun(engine, 2, [*args, "-s", "3", "-o", str(tmp_path / "s")], mpi_env))
    assert (tmp_path / "s").stat().st_size == 3 * 64 * KIB * 2
    assert phase(doc, "write")["bytes"] == 3 * 64 * KIB * 2 and doc["api"]["strided_datatype"] is True
    # With one segment every transfer is real: the data checks.
    doc = ok(mpirun(engine, 2, [*args, "-s", "1", "-W", "-r", "-R", "-o", str(tmp_path / "t")], mpi_env))
    assert phase(doc, "read")["verify"]["errors"] == 0


def test_preallocate_sizes_the_whole_file_even_when_a_stonewall_ends_the_write(
    engine: Path, mpi_env: dict[str, str], disk_dir: Path
) -> None:
    # -Y's collective MPI_File_sync after every 4 KiB write makes the write slow enough for a 1 s stonewall.
    args = ["-a", "MPIIO", "-c", "-Y", "-t", "4k", "-b", "8m", "-s", "1", "-w", "-D", "1", "-k"]
    doc = ok(mpirun(engine, 2, [*args, "-o", str(disk_dir / "plain")], mpi_env))
    if not phase(doc, "write")["stonewall"]["hit"]:
        pytest.skip("the write finished before the 1 s stonewall: too fast a disk for this check")
    assert (disk_dir / "plain").stat().st_size < 16 * MIB
    doc = ok(mpirun(engine, 2, [*args, "-p", "-o", str(disk_dir / "pre")], mpi_env))
    assert doc["api"]["preallocate"] is True
    assert (disk_dir / "pre").stat().st_size == 16 * MIB
    # -F: each file its own share (IOR would ask nranks times that).
    ok(
        mpirun(
            engine,
            2,
            ["-a", "MPIIO", "-F", "-p", "-t", "64k", "-b", "1m", "-w", "-k", "-o", str(disk_dir / "f")],
            mpi_env,
        )
    )
    assert [(disk_dir / f"f.0000000{i}").stat().st_size for i in range(2)] == [MIB, MIB]


# ------------------------------------------------------------------------------------------------------ hints


def test_hints_from_the_file_and_the_environment_reach_the_library_and_show(
    engine: Path, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    hints = tmp_path / "hints"
    hints.write_text(
        "# tuning\n\nIOR_HINT__MPI__romio_cb_write = enable\nIOR_HINT__MPI__cb_buffer_size=8388608\n"
    )
    env = {**mpi_env, "IOR_HINT__MPI__cb_buffer_size": "4194304", "IOR_HINT__MPI__striping_unit": "65536"}
    args = [
        "-a",
        "MPIIO",
        "-c",
        "-H",
        "-U",
        str(hints),
        "-t",
        "64k",
        "-b",
        "256k",
        "-w",
        "-r",
        "-o",
        str(tmp_path / "f"),
    ]
    res = mpirun(engine, 2, args, env, quiet=False)
    doc = ok(res)
    # The file is read after the environment: its cb_buffer_size wins, as in IOR.
    passed = {"cb_buffer_size": "8388608", "striping_unit": "65536", "romio_cb_write": "enable"}
    assert doc["api"]["hints_passed"] == passed
    assert doc["api"]["hints_file"] == str(hints)
    reported = doc["api"]["hints"]
    assert reported["romio_cb_write"] == "enable" and reported["cb_buffer_size"] == "8388608"
    blocks = hint_blocks(res.stdout)
    # Two opens (write, read), each: what was passed, what the opened file reports.
    assert len(blocks) == 4
    assert (
        blocks[0].startswith("hints passed to MPI_File_open() {")
        and "\tromio_cb_write = enable\n" in blocks[0]
    )
    assert (
        blocks[1].startswith("hints returned from opened file {")
        and "\tcb_buffer_size = 8388608\n" in blocks[1]
    )


def test_show_hints_prints_what_ior4_prints(engine: Path, mpi_env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in mpi_env.items() if not k.startswith("IOR_HINT")}
    args = [
        "-a",
        "MPIIO",
        "-c",
        "-H",
        "-U",
        str(DATA / "mpiio-hints.txt"),
        "-t",
        "64k",
        "-b",
        "256k",
        "-s",
        "2",
        "-w",
    ]
    res = mpirun(engine, 2, [*args, "-o", str(tmp_path / "f")], env, quiet=False)
    ok(res)
    assert hint_blocks(res.stdout) == hint_blocks((DATA / "mpiio-show-hints.txt").read_text())
    # Preceded by an empty line, as IOR prints them.
    assert "\n\nhints passed to MPI_File_open() {\n" in res.stdout


def test_romio_reports_the_hints_in_effect(engine: Path, mpi_env: dict[str, str], tmp_path: Path) -> None:
    info = subprocess.run(["ompi_info"], capture_output=True, text=True, check=False).stdout
    if "MCA io: romio" not in info:
        pytest.skip("this Open MPI has no ROMIO component")
    component = re.search(r"MCA io: (romio\w*)", info)
    assert component is not None
    env = {**mpi_env, "OMPI_MCA_io": component.group(1), "IOR_HINT__MPI__cb_buffer_size": "2097152"}
    doc = ok(
        mpirun(
            engine, 2, ["-a", "MPIIO", "-c", "-t", "64k", "-b", "256k", "-w", "-o", str(tmp_path / "f")], env
        )
    )
    assert doc["api"]["hints"]["cb_buffer_size"] == "2097152"


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("IOR_HINT__MPI__romio_cb_write=enable\nIOR_HINT__MPI__cb_nodes\n", ":2: hint cb_nodes has no value"),
        (
            "# ok\n\nromio_cb_write=enable\n",
            ":3: 'romio_cb_write=enable' is not IOR_HINT__MPI__<hint>=<value>",
        ),
        ("IOR_HINT__MPI__a = b c\n", ":1: hint a: more than one value"),
        ("IOR_HINT__POSIX__a=b\n", ":1: 'IOR_HINT__POSIX__a=b' is not IOR_HINT__MPI__"),
    ],
)
def test_a_bad_hints_file_line_is_refused_naming_it(
    engine: Path, mpi_env: dict[str, str], tmp_path: Path, content: str, words: str
) -> None:
    hints = tmp_path / "hints"
    hints.write_text(content)
    res = mpirun(engine, 2, ["-a", "MPIIO", "-U", str(hints), "-o", str(tmp_path / "f")], mpi_env)
    assert res.returncode == 2
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("iolens-bench: error:")]
    assert errors == [f"iolens-bench: error: -U {hints}{words}" + errors[0].split(words, 1)[1]]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hints"]


def test_a_bad_hint_variable_is_refused_naming_it(
    engine: Path, mpi_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**mpi_env, "IOR_HINT__MPI__striping_factor": ""}
    res = mpirun(engine, 2, ["-a", "MPIIO", "-o", str(tmp_path / "f")], env)
    assert res.returncode == 2
    assert (
        "error: environment variable IOR_HINT__MPI__striping_factor: hint striping_factor has no value"
        in res.stderr
    )
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------- checks and stops


def test_a_corrupted_byte_fails_the_read_check(engine: Path, mpi_env: dict[str, str], tmp_path: Path) -> None:
    args = [
        "-a",
        "MPIIO",
        "-c",
        "-t",
        "64k",
        "-b",
        "1m",
        "-s",
        "2",
        "-G",
        "7",
        "-k",
        "-o",
        str(tmp_path / "v"),
    ]
    ok(mpirun(engine, 2, [*args, "-w"], mpi_env))
    with open(tmp_path / "v", "r+b") as fp:
        fp.seek(1_100_000)
        byte = fp.read(1)
        fp.seek(1_100_000)
        fp.write(bytes([byte[0] ^ 0xFF]))
    res = mpirun(engine, 2, [*args, "-r", "-R"], mpi_env)
    assert res.returncode == 1
    assert res.doc is not None
    v = phase(res.doc, "read")["verify"]
    assert (v["errors"], v["first_bad_offset"], v["first_bad_rank"]) == (1, 1_100_000, 1)
    assert (tmp_path / "v").stat().st_size == 4 * MIB  # the evidence is kept


@pytest.mark.parametrize("mode", [["-c"], ["-Y"]], ids=["collective", "collective-sync"])
def test_a_stonewall_stops_every_rank_of_collective_calls_together(
    engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, mode: list[str]
) -> None:
    # Every 64-byte write is a collective call (-c, or -Y's MPI_File_sync): a rank that stopped alone at its
    # deadline would leave the others waiting for ever. The timeout is the hang detector. Small transfers
    # keep the write past its 1 s deadline with little data.
    args = [
        "-a",
        "MPIIO",
        *mode,
        "-t",
        "64",
        "-b",
        "16m",
        "-s",
        "1",
        "-w",
        "-r",
        "-D",
        "1",
        "-O",
        "stoneWallingWearOut=1",
    ]
    doc = ok(mpirun(engine, 3, [*args, "-o", str(tmpfs_dir / "s")], mpi_env, timeout=60))
    w, r = phase(doc, "write"), phase(doc, "read")
    if not w["stonewall"]["hit"]:
        pytest.skip("the write finished before the 1 s stonewall")
    assert w["stonewall"]["pairs_min"] == w["stonewall"]["pairs_max"]
    counts = {x["ops"] for x in w["per_rank"]}
    assert len(counts) == 1 and counts.pop() < 16 * MIB // 64
    # The read (independent with -Y) may stop at its own deadline: wear-out evens the ranks out again.
    assert len({x["ops"] for x in r["per_rank"]}) == 1 and r["bytes"] <= w["bytes"]


def test_a_signal_to_one_rank_stops_every_rank_of_a_collective_write(
    engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    # The other ranks are inside collective calls: they must learn of the signal and stop with it, at the
    # same count, instead of waiting for ever for the signalled rank.
    target, doc_path = tmpfs_dir / "sig", tmp_path / "doc.json"
    cmd = [*MPIRUN, "3", str(engine), "ior", "--json", str(doc_path), "--quiet", "-a", "MPIIO", "-c"]
    proc = subprocess.Popen(
        [*cmd, "-t", "4k", "-b", "1g", "-w", "-D", "60", "-o", str(target)],
        env=mpi_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        ranks: list[int] = []
        for _ in range(100):
            time.sleep(0.1)
            found = subprocess.run(
                ["pgrep", "-f", "--", f"-o {target}$"], capture_output=True, text=True
            ).stdout
            ranks = [int(x) for x in found.split() if int(x) != proc.pid]
            if len(ranks) == 3 and target.exists():
                break
        assert len(ranks) == 3, ranks
        time.sleep(1)
        os.kill(sorted(ranks)[1], signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    doc = json.loads(doc_path.read_text())
    assert doc["status"] == "failed" and doc["interrupted"]["signal"] == "SIGTERM"
    w = phase(doc, "write")
    assert w["cut_short"] and len({x["ops"] for x in w["per_rank"]}) == 1 and w["ops"] > 0
    assert not target.exists()  # a cut-short run removes what it created


def test_independent_stonewall_wear_out_gives_equal_counts(
    engine: Path, mpi_env: dict[str, str], tmpfs_dir: Path
) -> None:
    args = [
        "-a",
        "MPIIO",
        "-t",
        "64",
        "-b",
        "64m",
        "-s",
        "1",
        "-w",
        "-D",
        "1",
        "-O",
        "stoneWallingWearOut=1",
    ]
    doc = ok(mpirun(engine, 2, [*args, "-o", str(tmpfs_dir / "s")], mpi_env, timeout=120))
    w = phase(doc, "write")
    if not w["stonewall"]["hit"]:
        pytest.skip("the write finished before the 1 s stonewall")
    assert len({x["ops"] for x in w["per_rank"]}) == 1
    assert w["bytes"] == w["per_rank"][0]["ops"] * 64 * 2


# ------------------------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-a", "posix", "-c"], "-c: collective I/O needs an MPI library backend (-a MPIIO)"),
        (["-a", "posix", "-V"], "-V (--mpiio.useFileView): an MPI-IO setting; it needs -a MPIIO"),
        (["-a", "posix", "-p"], "-p (--mpiio.preallocate): an MPI-IO setting"),
        (["-a", "posix", "-H"], "-H: MPI hints need an MPI library backend"),
        (["-a", "MPIIO", "-c", "-z"], "-z: random offsets are not available with collective I/O (-c)"),
        (["-a", "MPIIO", "-V", "-z"], "-z: random offsets are not available with MPI-IO file views (-V)"),
        (["-a", "MPIIO", "--posix.odirect"], "--posix.odirect: -a MPIIO has no O_DIRECT"),
        (
            ["-a", "MPIIO", "--mpiio.useStridedDatatype"],
            "--mpiio.useStridedDatatype: works through a file view",
        ),
        (["-a", "MPIIO", "-V", "--mpiio.useStridedDatatype", "-s", "2", "-W"], "cannot check -s 2 segments"),
        (["-a", "MPIIO", "-V", "--mpiio.useStridedDatatype", "-s", "-1", "-r"], "not with -s -1"),
    ],
)
def test_settings_that_cannot_apply_are_refused(
    engine: Path, tmp_path: Path, args: list[str], words: str
) -> None:
    res = run_engine(engine, [*args, "-o", str(tmp_path / "f")], np=1)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [res.stderr.strip()]
    assert words in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_mdtest_refuses_mpiio(engine: Path, tmp_path: Path) -> None:
    res = run_engine(engine, ["-a", "MPIIO", "-n", "10", "-d", str(tmp_path / "md")], np=1, workload="mdtest")
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "iolens-bench: error: -a MPIIO: not supported by iolens mdtest (use -a POSIX)"
    )
    assert list(tmp_path.iterdir()) == []


def test_local_ranks_are_refused_before_any_io(engine: Path, iolens_bin: list[str], tmp_path: Path) -> None:
    res = run_engine(engine, ["-a", "MPIIO", "-o", str(tmp_path / "f")], np=2)
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "iolens-bench: error: -a MPIIO: needs MPI ranks, not forked local ones: use --launcher mpirun or "
        "--launcher srun, or start iolens (or iolens-bench) under mpirun or srun"
    )
    out = subprocess.run(
        [*iolens_bin, "ior", "-a", "mpiio", "--np", "2", "-o", str(tmp_path / "f")],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert (
        out.stderr.strip().startswith("iolens: error: -a mpiio: needs MPI ranks")
        and "\n" not in out.stderr.strip()
    )
    assert list(tmp_path.iterdir()) == []


def test_an_engine_built_without_mpi_refuses_mpiio(tmp_path: Path) -> None:
    nompi = REPO / "build" / "native-nompi" / "iolens-bench"
    if not nompi.exists():
        pytest.skip("no engine built without MPI here (make native builds build/native-nompi)")
    res = run_engine(nompi, ["-a", "MPIIO", "-o", str(tmp_path / "f")], np=2)
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "iolens-bench: error: -a MPIIO: this backend needs MPI (an MPI C compiler when iolens was built); "
        "this iolens-bench was built without it"
    )
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------------------- iolens front end


def test_iolens_runs_mpiio_with_a_launcher_and_under_mpirun(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    hints = tmp_path / "hints"
    hints.write_text("IOR_HINT__MPI__romio_cb_write=enable\n")
    args = ["-a", "MPIIO", "-c", "-H", "-U", str(hints), "-t", "64k", "-b", "256k", "-o", str(tmp_path / "f")]
    launched = [*iolens_bin, "ior", "--launcher", "mpirun", "--np", "2", "--launcher-args", "--oversubscribe"]
    out = subprocess.run(
        [*launched, *args, "--json", str(tmp_path / "a.json")],
        capture_output=True, text=True, env=mpi_env, check=False, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "hints returned from opened file {" in out.stdout and "romio_cb_write = enable" in out.stdout
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["api"]["collective"] is True and doc["comm"]["ranks"] == 2

    under = subprocess.run(
        [*MPIRUN, "2", *iolens_bin, "ior", *args, "--json", str(tmp_path / "b.json")],
        capture_output=True, text=True, env=mpi_env, check=False, timeout=120,
    )  # fmt: skip
    assert under.returncode == 0, under.stderr
    doc = json.loads((tmp_path / "b.json").read_text())
    assert doc["api"]["name"] == "mpiio" and phase(doc, "write")["bytes"] == 512 * KIB
    # A rank of the job prints IOR's text (mpirun gives ranks a pseudo-terminal, so `auto` cannot go by it).
    assert under.stdout.startswith("IOR-4.0.0: MPI Coordinated Test of Parallel I/O\n"), under.stdout[:300]
    assert under.stdout.count("hints returned from opened file {") == 2  # at the write's open and the read's


# ------------------------------------------------------------------------------------------------------ io500

IO500_INI = """\
[global]
datadir = {root}/datafiles
timestamp-datadir = FALSE
resultdir = {root}/results
timestamp-resultdir = FALSE
api = POSIX

[ior-easy]
API = mpiio --mpiio.hintsFileName={hints}
transferSize = 1m
blockSize = 8m

[mdtest-easy]
n = 500

[ior-hard]
API = MPIIO
segmentCount = 200
collective = TRUE

[mdtest-hard]
n = 500
"""


def test_io500_runs_the_ior_phases_through_mpiio(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    hints = tmp_path / "hints"
    hints.write_text("IOR_HINT__MPI__romio_cb_write=enable\n")
    cfg = tmp_path / "io500.ini"
    cfg.write_text(IO500_INI.format(root=tmp_path, hints=hints))
    cmd = [*iolens_bin, "io500", str(cfg), "--quick", "--np", "2", "--launcher", "mpirun"]
    out = subprocess.run(
        [*cmd, "--launcher-args", "--oversubscribe", "--json", str(tmp_path / "run.json")],
        capture_output=True, text=True, env=mpi_env, check=False, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    exe, score = io500_exe_and_scores(tmp_path / "results" / "result.txt")
    assert (
        f"-a mpiio --mpiio.hintsFileName={hints} -O saveRankPerformanceDetailsCSV=" in exe["ior-easy-write"]
    )
    assert " -w -c -D 2 -a MPIIO" in exe["ior-hard-write"]
    assert " -r -R -c -a MPIIO" in exe["ior-hard-read"]
    assert "-a POSIX" in exe["mdtest-easy-write"]
    for name in ("ior-easy-write", "ior-hard-write", "ior-easy-read", "ior-hard-read"):
        assert float(score[name]) > 0, name

    # A bad hints file is refused before the first phase, naming its line.
    hints.write_text("IOR_HINT__MPI__romio_cb_write\n")
    shutil.rmtree(tmp_path / "results")
    shutil.rmtree(tmp_path / "datafiles", ignore_errors=True)
    bad = subprocess.run(
        [*cmd, "--launcher-args", "--oversubscribe"],
        capture_output=True, text=True, env=mpi_env, check=False, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        f"iolens: error: -U {hints}:1: hint romio_cb_write has no value "
        "(write IOR_HINT__MPI__romio_cb_write=VALUE)"
    )
    assert not (tmp_path / "datafiles").exists()


# ------------------------------------------------------------------------------- against the official IOR


@pytest.mark.skipif(
    not OFFICIAL_IOR.exists(), reason="the official IOR 4 is not built here (bench/build_ior.sh)"
)
@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (["-c"], ["-c"]),
        (["-F"], ["-F"]),
        (["-V", "-c"], ["--mpiio.useFileView", "-c"]),
        (["-V", "--mpiio.useStridedDatatype"], ["--mpiio.useFileView", "--mpiio.useStridedDatatype"]),
    ],
)
def test_files_have_the_size_the_official_ior_gives_them(
    engine: Path, mpi_env: dict[str, str], tmp_path: Path, ours: list[str], theirs: list[str]
) -> None:
    common = ["-a", "MPIIO", "-t", "32k", "-b", "64k", "-s", "3", "-w", "-k"]
    ok(mpirun(engine, 2, [*common, *ours, "-o", str(tmp_path / "ours")], mpi_env))
    res = subprocess.run(
        [*MPIRUN, "2", str(OFFICIAL_IOR), *common, *theirs, "-o", str(tmp_path / "theirs")],
        capture_output=True, text=True, env=mpi_env, check=False, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:]
    mine = sorted((p.name.replace("ours", ""), p.stat().st_size) for p in tmp_path.glob("ours*"))
    official = sorted((p.name.replace("theirs", ""), p.stat().st_size) for p in tmp_path.glob("theirs*"))
    assert mine == official and mine
