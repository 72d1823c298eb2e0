"""`iolens ior -f SCRIPT`: IOR's script files read as IOR 4 reads them (IOR START ... RUN ... IOR STOP,
options carried over, RUN RUN, the options after the last RUN), each test one engine run, stored as its own
run; a broken script refused naming its line, exit status 2, before any I/O."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from iolens import ior_script
from iolens.store import Store, queries

from .db_helpers import iolens, iolens_env

OFFICIAL_IOR = Path(os.environ.get("IOLENS_OFFICIAL_IOR", "/var/tmp/iolens-peers/ior-4.0.0/bin/ior"))

# The script the official IOR 4 ran as four tests (checked with `ior -a DUMMY -w -f`): RUN after RUN repeats
# a test, and the options after the last RUN make a fourth.
FOUR_TESTS = """\
junk before the start is ignored
IOR START
  # a comment
  transferSize=8k   # a trailing comment
  blockSize = 16k,segmentCount=2
RUN
  -F=1
RUN
RUN
  filePerProc=0
IOR STOP
after the stop is ignored
"""


def _keys(test: ior_script.ScriptTest) -> list[tuple[str, str]]:
    return [(d.key, d.value) for d in test.directives]


def test_tests_carry_options_over_as_ior_does() -> None:
    tests = ior_script.parse(FOUR_TESTS, "s.ior")
    assert [t.index for t in tests] == [0, 1, 2, 3]
    assert _keys(tests[0]) == [("transferSize", "8k"), ("blockSize", "16k"), ("segmentCount", "2")]
    assert _keys(tests[1]) == [*_keys(tests[0]), ("-F", "1")]
    assert _keys(tests[2]) == _keys(tests[1])  # RUN right after RUN: the same test again
    assert _keys(tests[3]) == [*_keys(tests[1]), ("filePerProc", "0")]
    assert [t.run_line for t in tests] == [6, 8, 9, None]
    assert tests[1].engine_args()[-1] == "-O=-F=1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("transferSize=8k\nRUN\n", "s.ior: no 'IOR START' line"),
        ("IOR START\ntransferSize=8k\nRUN\n", "s.ior:4: no 'IOR STOP' line"),
        ("IOR START\ntransferSize 8k\nRUN\nIOR STOP\n", "s.ior:2: 'transferSize 8k' is not key=value"),
        ("IOR START\nblockSize=1m,\nIOR STOP\n", "s.ior:2: an empty item"),
        ("IOR START\n=4\nIOR STOP\n", "s.ior:2: '=4' is not an option name"),
        ("IOR START\napi=POSIX MPIIO\nIOR STOP\n", "s.ior:2: api: expects one value"),
    ],
)
def test_a_broken_script_is_refused_naming_the_line(text: str, message: str) -> None:
    with pytest.raises(ior_script.ScriptError) as exc:
        ior_script.parse(text, "s.ior")
    assert str(exc.value).startswith(message)


def test_the_script_option_is_taken_in_every_spelling() -> None:
    for args in (["-f", "a.ior", "-w"], ["-fa.ior", "-w"], ["-f=a.ior", "-w"]):
        assert ior_script.take_script_option(args) == ("a.ior", ["-w"])
    assert ior_script.take_script_option(["-w", "--", "-f", "x"]) == (None, ["-w", "--", "-f", "x"])


def _env(tmp_path: Path, engine: Path) -> dict[str, str]:
    return iolens_env({"IOLENS_BENCH": str(engine)}, home=tmp_path)


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "t.ior"
    path.write_text(body)
    return path


def test_each_run_is_one_engine_run_stored_as_its_own_run(
    engine: Path, tmpfs_dir: Path, tmp_path: Path
) -> None:
    # Test 0 writes and keeps the files, test 1 reads them back and checks them, test 2 reads with another
    # signature: its check fails, the script goes on, and the exit status says so.
    script = _script(
        tmp_path,
        "IOR START\n"
        "  filePerProc=1, transferSize=8k, blockSize=32k\n"
        f"  testFile={tmpfs_dir}/s\n"
        "  writeFile=1, keepFile=1, setTimeStampSignature=11\n"
        "RUN\n"
        "  writeFile=0, readFile=1, checkRead=1\n"
        "RUN\n"
        "  -G=12, keepFile=0\n"
        "RUN\n"
        "IOR STOP\n",
    )
    db = tmp_path / "runs.sqlite"
    out = tmp_path / "docs.json"
    r = iolens(
        "ior", "--np", "2", "--no-live", "-f", str(script), "--json", str(out), "--db", str(db),
        env=_env(tmp_path, engine),
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    docs: list[dict[str, Any]] = json.loads(out.read_text())
    assert [d["ior_script"]["test"] for d in docs] == [0, 1, 2]
    assert [[p["name"] for p in d["phases"]] for d in docs] == [["write"], ["read"], ["read"]]
    assert docs[0]["phases"][0]["bytes"] == 2 * 32 * 1024
    assert docs[1]["phases"][0]["verify"]["errors"] == 0
    assert docs[2]["phases"][0]["verify"]["errors"] > 0
    assert docs[2]["config"]["set-time-stamp-signature"] == 12 and docs[2]["config"]["file-per-proc"] is True
    with Store.open(str(db), create=False) as store:
        runs = queries.list_runs(store.db)
    assert sorted(run["id"] for run in runs) == [1, 2, 3]
    # IOR's text for a script (standard output is not a terminal): one banner, each test's results, one
    # summary whose rows carry each test's number (Test#, the 13th field).
    out = r.stdout
    assert out.count("IOR-4.0.0: MPI Coordinated Test of Parallel I/O") == 1
    assert out.count("Results: ") == 3 and out.count("Summary of all tests:") == 1
    summary = out.split("Summary of all tests:")[1].splitlines()[2:]
    rows = [line.split() for line in summary if line.split()[:1] in (["write"], ["read"])]
    assert [(row[0], row[12]) for row in rows] == [("write", "0"), ("read", "1"), ("read", "2")]


def test_the_command_line_is_the_first_tests_starting_point(
    engine: Path, tmpfs_dir: Path, tmp_path: Path
) -> None:
    script = _script(tmp_path, "IOR START\nRUN\ntransferSize=4k\nIOR STOP\n")
    out = tmp_path / "docs.json"
    r = iolens(
        "ior", "--no-live", "-t", "8k", "-b", "16k", "-w", "-o", str(tmpfs_dir / "c"), "-f", str(script),
        "--json", str(out), env=_env(tmp_path, engine),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    docs = json.loads(out.read_text())
    assert [d["config"]["transfer-size"] for d in docs] == [8192, 4096]
    assert all(d["config"]["block-size"] == 16384 for d in docs)


def test_a_script_the_engine_refuses_names_the_line_and_runs_nothing(
    engine: Path, tmpfs_dir: Path, tmp_path: Path
) -> None:
    script = _script(
        tmp_path,
        f"IOR START\ntestFile={tmpfs_dir}/x\nwriteFile=1\nRUN\ntransferSize=3\nRUN\nIOR STOP\n",
    )
    r = iolens("ior", "--no-live", "-f", str(script), env=_env(tmp_path, engine))
    assert r.returncode == 2
    assert f"iolens: error: {script}:5: -O transferSize: value 3 is below the minimum 8" in r.stderr
    assert list(tmpfs_dir.iterdir()) == []  # the first test did not run either
    unknown = _script(tmp_path, "IOR START\nnoSuchKey=1\nIOR STOP\n")
    u = iolens("ior", "--no-live", "-f", str(unknown), env=_env(tmp_path, engine))
    assert u.returncode == 2 and f"{unknown}:2:" in u.stderr and "noSuchKey" in u.stderr


def test_a_missing_or_binary_script_is_refused(engine: Path, tmp_path: Path) -> None:
    missing = iolens("ior", "-f", str(tmp_path / "none.ior"), env=_env(tmp_path, engine))
    assert missing.returncode == 2 and "-f: cannot read" in missing.stderr
    binary = tmp_path / "b.ior"
    binary.write_bytes(b"IOR START\n\x00\xff\nIOR STOP\n")
    b = iolens("ior", "-f", str(binary), env=_env(tmp_path, engine))
    assert b.returncode == 2 and f"{binary}:2: not text" in b.stderr and "Traceback" not in b.stderr


def test_the_official_ior_runs_the_same_tests(engine: Path, tmpfs_dir: Path, tmp_path: Path) -> None:
    if not OFFICIAL_IOR.is_file():
        pytest.skip(f"the official IOR is not built at {OFFICIAL_IOR} (bench/build_ior.sh)")
    script = _script(tmp_path, FOUR_TESTS)
    theirs = subprocess.run(
        [str(OFFICIAL_IOR), "-a", "DUMMY", "-w", "-f", str(script), "-o", str(tmpfs_dir / "d")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert theirs.returncode == 0, theirs.stdout
    ids = [line.split(":")[1].strip() for line in theirs.stdout.splitlines() if line.startswith("TestID")]
    assert ids == [str(t.index) for t in ior_script.parse(FOUR_TESTS, "s")]


def test_a_script_under_mpirun_started_iolens_runs_with_its_launcher(
    engine: Path, tmpfs_dir: Path, tmp_path: Path, mpi_env: dict[str, str]
) -> None:
    # Each test is an MPI run of its own: iolens starts them (--launcher mpirun). Inside a job that started
    # iolens itself a process can start MPI only once, so a script of several tests is refused there.
    script = _script(
        tmp_path,
        f"IOR START\ntestFile={tmpfs_dir}/m\ntransferSize=8k,blockSize=32k,writeFile=1,keepFile=1\nRUN\n"
        "writeFile=0,readFile=1,checkRead=1,keepFile=0\nRUN\nIOR STOP\n",
    )
    out = tmp_path / "docs.json"
    env = {**_env(tmp_path, engine), **{k: v for k, v in mpi_env.items() if k.startswith(("OMPI", "PRTE"))}}
    r = iolens(
        "ior",
        "--launcher",
        "mpirun",
        "--np",
        "2",
        "--no-live",
        "-f",
        str(script),
        "--json",
        str(out),
        env=env,
    )
    assert r.returncode == 0, r.stderr
    docs = json.loads(out.read_text())
    assert [(d["comm"]["kind"], d["comm"]["ranks"]) for d in docs] == [("mpi", 2), ("mpi", 2)]
    assert docs[1]["phases"][0]["verify"]["errors"] == 0
    in_job = iolens(
        "ior",
        "-f",
        str(script),
        env={**_env(tmp_path, engine), "OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2"},
    )
    assert in_job.returncode == 2 and "2 tests cannot run inside the MPI job" in in_job.stderr
