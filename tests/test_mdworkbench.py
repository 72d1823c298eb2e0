"""The md-workbench workload: real objects on tmpfs, forked ranks and mpirun, every phase's effect on disk
(objects created, read, deleted: exact counts and names), the position file joining -1/-2/-3 runs, and the
layout of md-workbench's lines against the official tool's (tests/data/mdworkbench, see its README)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from iolens import results
from iolens.io500.app_output import parse_mdworkbench

from .ior_helpers import EngineResult, assert_only_canary_left, place_canary, run_engine

REF = Path(__file__).resolve().parent / "data" / "mdworkbench"
SIZE = 3901  # md-workbench's default object size


def mdwb(engine: Path, out: Path, args: list[str], np: int = 1, **kw: Any) -> EngineResult:
    """The engine's md-workbench with -o OUT and the position file beside it (never in the test's cwd)."""
    run_info = f"--run-info-file={out.parent / 'md-workbench.status'}"
    return run_engine(engine, ["-o", str(out), run_info, *args], np=np, workload="md-workbench", **kw)


def ok(res: EngineResult) -> dict[str, Any]:
    assert res.returncode == 0, res.stderr
    assert res.doc is not None and res.doc["status"] == "ok" and res.doc["error"] is None, res.doc
    assert res.doc["workload"] == "md-workbench"
    return res.doc


def phases(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [p for p in doc["phases"] if p["name"] == name]


def objects_on_disk(out: Path) -> dict[str, list[int]]:
    """Each data set's object numbers, sorted."""
    return {
        d.name: sorted(int(f.name.split("-", 1)[1]) for f in d.iterdir())
        for d in sorted(out.iterdir())
        if d.is_dir()
    }


@pytest.mark.parametrize("np_", [1, 2])
def test_all_phases_create_read_delete_exact_counts_and_remove_everything(engine: Path, tmpfs_dir: Path, np_):
    canary = place_canary(tmpfs_dir)
    out = tmpfs_dir / "out"
    doc = ok(mdwb(engine, out, ["-P", "5", "-I", "3", "-D", "2", "-R", "2", "-G", "42", "-X"], np=np_))
    assert [p["name"] for p in doc["phases"]] == ["precreate", "benchmark", "benchmark", "cleanup"]
    (pre,) = phases(doc, "precreate")
    assert pre["ops"] == {
        "dset_create": 2 * np_, "dset_delete": 0, "obj_create": 5 * 2 * np_,
        "obj_read": 0, "obj_stat": 0, "obj_delete": 0,
    }  # fmt: skip
    for it, bench in enumerate(phases(doc, "benchmark")):
        assert bench["iteration"] == it
        # Per object and set: stat, read and delete the reader's oldest, create the writer's newest.
        each = 3 * 2 * np_
        assert bench["ops"] == {
            "dset_create": 0, "dset_delete": 0, "obj_create": each,
            "obj_read": each, "obj_stat": each, "obj_delete": each,
        }  # fmt: skip
        assert bench["rate_per_s"] == pytest.approx(each * 4 / bench["time_s"], rel=1e-9)
        assert set(bench["latency_ns"]) == {"create", "read", "stat", "delete"}
        assert bench["latency_ns"]["read"]["count"] == each
    (clean,) = phases(doc, "cleanup")
    assert clean["ops"]["obj_delete"] == 5 * 2 * np_ and clean["ops"]["dset_delete"] == 2 * np_
    assert doc["errors"] == 0 and all(p["errors"] == 0 for p in doc["phases"])
    summary = doc["md_workbench"]
    assert summary["verify_bytes"] == 2 * 3 * 2 * np_ * SIZE and summary["verify_errors"] == 0
    assert (summary["start_index"], summary["end_index"]) == (0, 6)
    assert doc["cleanup"]["state"] == "done"
    assert_only_canary_left(tmpfs_dir, canary)  # -o, made by the run, went too; no position file written


def test_split_phases_keep_a_fifo_of_precreate_objects_per_set_joined_by_the_position_file(
    engine: Path, tmpfs_dir: Path
):
    out, status = tmpfs_dir / "out", tmpfs_dir / "md-workbench.status"
    common = ["-P", "4", "-I", "3", "-D", "2", "-G", "7", "-O", "1"]
    pre = ok(mdwb(engine, out, [*common, "-1"], np=2))
    assert [p["name"] for p in pre["phases"]] == ["precreate"]
    assert objects_on_disk(out) == {f"{r}_{d}": [0, 1, 2, 3] for r in range(2) for d in range(2)}
    assert status.read_text() == (REF / "np2-io500-step1.status").read_text() == "pos: 0\n"
    bench = ok(mdwb(engine, out, [*common, "-2", "-R", "2", "-X"], np=2))
    assert [p["name"] for p in bench["phases"]] == ["benchmark", "benchmark"]
    # Two iterations of 3: objects 0-5 went, 4-9 came (the same FIFO length, 4 per set).
    assert objects_on_disk(out) == {f"{r}_{d}": [6, 7, 8, 9] for r in range(2) for d in range(2)}
    assert status.read_text() == "pos: 6\n"
    assert bench["md_workbench"]["verify_errors"] == 0 and bench["md_workbench"]["verify_bytes"] > 0
    ok(mdwb(engine, out, [*common, "-3"], np=2))
    assert not out.exists()
    assert status.read_text() == "pos: 6\n"  # as md-workbench: a cleanup leaves the position as it was


def test_the_reader_reads_what_the_writer_wrote_one_offset_away(engine: Path, tmpfs_dir: Path):
    # -X checks every byte against the owner's pattern: a changed byte in one object is one read error.
    out = tmpfs_dir / "out"
    common = ["-P", "2", "-I", "1", "-D", "1", "-G", "9"]
    ok(mdwb(engine, out, [*common, "-1"], np=2))
    victim = out / "1_0" / "file-0"
    data = bytearray(victim.read_bytes())
    data[100] ^= 0xFF
    victim.write_bytes(bytes(data))
    doc = ok(mdwb(engine, out, [*common, "-2", "-R", "1", "-X"], np=2))
    (bench,) = phases(doc, "benchmark")
    assert bench["op_errors"]["obj_read"] == 1 and bench["ops"]["obj_read"] == 1
    assert doc["errors"] == 1 and doc["md_workbench"]["verify_errors"] == 1
    assert doc["md_workbench"]["first_bad_path"] == str(victim)
    assert results.parse(doc).verify_errors == 1
    ok(mdwb(engine, out, [*common, "-3"], np=2))
    assert not out.exists()


def test_a_set_iolens_did_not_create_is_never_touched(engine: Path, tmpfs_dir: Path):
    out = tmpfs_dir / "out"
    (out / "0_1").mkdir(parents=True)
    theirs = out / "0_1" / "file-0"
    theirs.write_text("someone else's")
    res = mdwb(engine, out, ["-P", "2", "-I", "1", "-D", "2", "-1"])
    assert res.returncode == 2
    assert f"'{out}/0_1' exists and was not created by iolens" in res.stderr
    # A cleanup of the same names (one set per rank, ranks 0 and 1: 0_0 and 1_0 made by someone else).
    (out / "0_0").mkdir()
    (out / "1_0").mkdir()
    (tmpfs_dir / "md-workbench.status").write_text("pos: 0\n")
    res = mdwb(engine, out, ["-P", "2", "-I", "1", "-D", "1", "-3"], np=2)
    assert res.returncode == 2
    assert f"'{out}/0_0' was not created by iolens; refusing to delete" in res.stderr
    assert theirs.read_text() == "someone else's"
    assert sorted(p.name for p in out.iterdir()) == ["0_0", "0_1", "1_0"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["-L", "lat"], "-L: per-operation latency files are not supported"),
        (["--latency-all"], "--latency-all: per-operation latency files are not supported"),
        (["--allocateBufferOnGPU"], "--allocateBufferOnGPU: GPU buffers are not supported"),
        (["-W"], "-W: the wear-out needs a stonewall"),
        (["--dataPacketType=x"], "--dataPacketType: 'x' is not one of"),
        (["-2"], "0_0' does not exist (run the precreate phase -1 first"),
    ],
)
def test_bad_options_are_refused_before_any_io(engine: Path, tmpfs_dir: Path, args, words):
    out = tmpfs_dir / "out"
    if args == ["-2"]:
        out.mkdir()
    res = mdwb(engine, out, ["-P", "2", "-I", "1", "-D", "1", *args])
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("iolens-bench: error: ") and words in res.stderr
    assert sorted(p.name for p in tmpfs_dir.iterdir()) == (["out"] if args == ["-2"] else [])


def test_stonewall_wear_out_brings_every_rank_to_the_same_iterations(engine: Path, tmpfs_dir: Path):
    out = tmpfs_dir / "out"
    # Far more objects than a second allows: the stonewall ends each iteration; wear-out evens the ranks.
    doc = ok(mdwb(engine, out, ["-P", "200000", "-I", "200000", "-D", "1", "-R", "1", "-w", "1", "-W",
                                "-S", "0", "-1", "-2"], np=2, timeout=120))  # fmt: skip
    (bench,) = phases(doc, "benchmark")
    sw = bench["stonewall_iterations"]
    assert 0 < sw < 200000
    assert bench["ops"]["obj_read"] == 2 * sw  # both ranks did exactly sw objects
    assert doc["md_workbench"]["end_index"] == sw
    ok(mdwb(engine, out, ["-P", "200000", "-I", "1", "-D", "1", "-S", "0", "-3"], np=2, timeout=120))
    assert not out.exists()


# ------------------------------------------------------------------------------ md-workbench's own lines


_NUM = re.compile(r"-?nan|-?inf|[-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?")


def layout(text: str) -> list[str]:
    """The lines a script reads by field position, every number replaced: all but the ones naming the
    program and the time (Args, the MD-Workbench header's version, Total runtime)."""
    skip = ("Args:", "MD-Workbench total objects", "Total runtime")
    return [_NUM.sub("#", line) for line in text.splitlines() if line and not line.startswith(skip)]


SMALL = ["-P", "5", "-I", "3", "-D", "2", "-R", "2", "-G", "42", "-X"]  # the README's commands


@pytest.mark.parametrize(
    ("ref", "args", "np_"),
    [
        ("np1-all.txt", SMALL, 1),
        ("np1-quiet.txt", [*SMALL, "-q"], 1),
        ("np1-detailed.txt", [*SMALL, "--print-detailed-stats"], 1),
        ("np2-process-reports.txt", [*SMALL, "--process-reports"], 2),
    ],
)
def test_lines_have_the_official_layout(engine: Path, tmpfs_dir: Path, ref: str, args: list[str], np_: int):
    official = (REF / ref).read_text()
    res = mdwb(engine, tmpfs_dir / "out", args, np=np_, quiet=False)
    ok(res)
    assert layout(res.stdout) == layout(official)
    if "--print-detailed-stats" not in args:
        ours, theirs = parse_mdworkbench(res.stdout), parse_mdworkbench(official)
        assert [(ln.rank, ln.phase, ln.objects, ln.errors) for ln in ours.lines] == [
            (ln.rank, ln.phase, ln.objects, ln.errors) for ln in theirs.lines
        ]
        if "-q" not in args:
            assert ours.total_objects == theirs.total_objects


def test_io500s_three_steps_have_the_official_layout_and_positions(engine: Path, tmpfs_dir: Path):
    out = tmpfs_dir / "out"
    status = tmpfs_dir / "mdworkbench.status"
    base = ["--dataPacketType=timestamp", "--process-reports", "-a", "POSIX", f"-o={out}", "-t=0.000000",
            "-O=1", f"--run-info-file={status}", "-D=10", "-G=77", "-P=4", "-I=4"]  # fmt: skip
    for n, step in ((1, ["-1"]), (2, ["-2", "-R=2", "-X"]), (3, ["-3"])):
        res = run_engine(engine, [*base, *step], np=2, workload="md-workbench", quiet=False)
        ok(res)
        official = (REF / f"np2-io500-step{n}.txt").read_text()
        assert layout(res.stdout) == layout(official), n
        assert status.read_text() == (REF / f"np2-io500-step{n}.status").read_text(), n
    assert not out.exists()


# ------------------------------------------------------------------------------------- MPI, the front end


def test_all_phases_under_mpirun(engine: Path, tmpfs_dir: Path, mpi_env: dict[str, str]):
    canary = place_canary(tmpfs_dir)
    out = tmpfs_dir / "out"
    launcher = ["mpirun", "-np", "2", "--oversubscribe"]
    args = ["-P", "4", "-I", "2", "-D", "3", "-R", "2", "-X"]
    doc = ok(mdwb(engine, out, args, launcher=launcher, env=mpi_env))
    assert doc["comm"]["kind"] == "mpi" and doc["comm"]["ranks"] == 2
    for bench in phases(doc, "benchmark"):
        assert bench["ops"]["obj_read"] == bench["ops"]["obj_create"] == 2 * 3 * 2
    assert doc["md_workbench"]["verify_errors"] == 0
    assert_only_canary_left(tmpfs_dir, canary)


def test_iolens_md_workbench_shows_the_phases_and_keeps_the_document(iolens_bin: list[str], tmpfs_dir: Path):
    out, doc_path = tmpfs_dir / "out", tmpfs_dir / "run.json"
    proc = subprocess.run(
        [*iolens_bin, "md-workbench", "-o", str(out), f"--run-info-file={tmpfs_dir}/s", "-P", "3", "-I", "2",
         "-D", "2", "-R", "2", "-X", "--np", "2", "--json", str(doc_path), "--no-store", "--no-live"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for row in ("precreate", "benchmark 0", "benchmark 1", "cleanup"):
        assert re.search(rf"^{row}\s+[\d,.]+\s+\d+", proc.stdout, re.M), row
    assert "verify: " in proc.stdout and " 0 differ" in proc.stdout
    doc = results.load(doc_path)
    assert isinstance(doc, results.MdworkbenchDocument) and doc.ok
    assert [p.name for p in doc.phases] == ["precreate", "benchmark", "benchmark", "cleanup"]
    assert doc.benchmarks()[1].objects == 2 * 2 * 2
    assert not out.exists()


def test_a_run_stopped_by_sigterm_removes_what_it_created(engine: Path, tmpfs_dir: Path):
    canary = place_canary(tmpfs_dir)
    out, doc_path = tmpfs_dir / "out", tmpfs_dir.parent / f"{tmpfs_dir.name}.json"
    # Far more objects than the second before the signal allows (empty objects: only inodes).
    proc = subprocess.Popen(
        [str(engine), "md-workbench", "--np", "2", "--json", str(doc_path), "--quiet", "-o", str(out),
         f"--run-info-file={tmpfs_dir}/s", "-P", "100000", "-I", "10", "-D", "10", "-S", "0",
         "--no-space-check"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not any(out.glob("*_*/file-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    try:
        doc = json.loads(doc_path.read_text())
    finally:
        doc_path.unlink(missing_ok=True)
    assert proc.returncode == 1 and "interrupted by signal 15 (SIGTERM)" in err
    assert doc["status"] == "failed" and doc["interrupted"]["signal"] == "SIGTERM"
    assert doc["cleanup"]["state"] == "done" and doc["cleanup"]["removed"] > 0 and doc["cleanup"]["left"] == 0
    assert [p["name"] for p in doc["phases"]] == ["precreate"] and doc["phases"][0]["cut_short"]
    assert_only_canary_left(tmpfs_dir, canary)


def test_every_key_of_a_real_document_is_in_the_schema_page(engine: Path, tmpfs_dir: Path):
    text = (Path(__file__).resolve().parents[1] / "docs" / "schema.md").read_text()
    section = text.split("## md-workbench documents", 1)[1].split("\n## ", 1)[0]
    doc = ok(mdwb(engine, tmpfs_dir / "out", ["-P", "3", "-I", "2", "-D", "2", "-R", "1", "-X"], np=2))
    envelope = {"schema_version", "tool", "version", "workload", "command", "started_at", "host", "comm",
                "build", "config", "status", "error", "interrupted", "ended_at"}  # fmt: skip
    keys = set(doc) - envelope
    keys |= set(doc["md_workbench"]) | {k for p in doc["phases"] for k in p}
    keys |= {k for p in doc["phases"] for k in p["ops"]} | {k for p in doc["phases"] for k in p["latency_ns"]}
    keys |= {k for p in doc["phases"] for r in p["per_rank"] for k in r}
    missing = sorted(k for k in keys if f'"{k}"' not in section and f"`{k}`" not in section)
    assert missing == []
    # Every option is in the config echo by its long name, as md-workbench.md's table names it.
    flags = (Path(__file__).resolve().parents[1] / "docs" / "md-workbench.md").read_text()
    assert sorted(k for k in doc["config"] if f"--{k}" not in flags) == []
