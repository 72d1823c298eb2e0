"""`iolens io500 --mode extended`: md-workbench's three phases run as the app runs them, and the result
directory holds the app's per-phase files, its [RESULT] lines and a [SCOREX] computed the app's way.

One --quick extended run at 2 processes locally and one under mpirun (module fixtures), each checked by
several tests; the md-workbench lines are compared with the official md-workbench's (tests/data/mdworkbench).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolens import results
from iolens.io500 import results_files
from iolens.io500.app_output import parse_mdworkbench
from iolens.io500.hashes import format_hash, score_hash
from iolens.io500.score import PhaseOutcome, RunRules, compute_scores, evaluate, hashed_phases
from iolens.io500.spec import runnable_phases

from .test_mdworkbench import layout

REF = Path(__file__).resolve().parent / "data" / "mdworkbench"
EXTENDED = [p.name for p in runnable_phases("extended")]
MDWB = ("mdworkbench-create", "mdworkbench-bench", "mdworkbench-delete")


def _run(iolens_bin: list[str], *launch: str, env: dict[str, str] | None = None) -> Iterator[dict]:
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="iolens-io500x-", dir=shm if os.access(shm, os.W_OK) else None))
    cfg = root / "io500.ini"
    cfg.write_text(
        f"[global]\ndatadir = {root}/data\nresultdir = {root}/results\ntimestamp-resultdir = FALSE\n"
        "[debug]\nstonewall-time = 300\n"
    )
    try:
        out = subprocess.run(
            [*iolens_bin, "io500", str(cfg), "--quick", "--mode", "extended", "--np", "2", "--no-live",
             "--no-store", *launch],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        yield {"out": out, "root": root, "results": root / "results", "cfg": cfg}
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def local_ext(iolens_bin: list[str]) -> Iterator[dict]:
    yield from _run(iolens_bin)


@pytest.fixture(scope="module")
def mpi_ext(iolens_bin: list[str], mpi_env: dict[str, str]) -> Iterator[dict]:
    yield from _run(iolens_bin, "--launcher", "mpirun", "--launcher-args", "--oversubscribe", env=mpi_env)


@pytest.fixture(params=["local", "mpirun"])
def ext(request: pytest.FixtureRequest) -> dict:
    run = request.getfixturevalue("local_ext" if request.param == "local" else "mpi_ext")
    assert run["out"].returncode == 0, run["out"].stderr[-3000:]
    return run


def _keys(section: results_files.Section) -> list[str]:
    return [ln.key for ln in section.lines if isinstance(ln, results_files.Pair)]


def test_md_workbench_sections_have_the_apps_lines_in_the_apps_order(ext: dict):
    result = results_files.read_result(ext["results"] / "result.txt")
    assert [s.name for s in result.phases] == EXTENDED
    head = ["t_start", "filesPerProc", "precreatePerSet", "exe"]
    tail = ["score", "t_delta", "t_end"]
    expect = {
        "mdworkbench-create": [*head, "maxOpTime", *tail],
        "mdworkbench-bench": [*head, "maxOpTime", "scoreIteration0", "maxOpTime0", *tail],
        "mdworkbench-delete": [*head, "maxOpTime", *tail],
    }
    for name, keys in expect.items():
        section = result.section(name)
        assert section is not None and _keys(section) == keys, name
        assert not section.invalid_reasons, (name, section.invalid_reasons)
        exe = section.get("exe") or ""
        step = {"mdworkbench-create": "-1", "mdworkbench-bench": "-2 -R=2 -X"}.get(name, "-3")
        assert re.fullmatch(
            r"iolens-bench md-workbench --dataPacketType=timestamp --process-reports -a POSIX "
            r"-o=\S+/mdworkbench -t=0\.000000 -O=1 --run-info-file=\S+/mdworkbench\.status -D=10 -G=\d+ "
            rf"-P=\d+ -I=\d+ {step}",
            exe,
        ), exe


def test_md_workbench_counts_follow_mdtest_easy_writes_rate_as_the_app_does(ext: dict):
    rd = ext["results"]
    result = results_files.read_result(rd / "result.txt")
    easy = result.phase_scores()["mdtest-easy-write"]
    # The app: (rate kIOPS * min(stonewall, 60) s * 1000 / procs) / 10 sets; --quick: 2 s, and at most 500.
    want = min(500, int(easy * 2 * 1000 / 2) // 10)
    for name in MDWB:
        section = result.section(name)
        assert section is not None
        assert int(section.get("precreatePerSet") or -1) == int(section.get("filesPerProc") or -1) == want
    # As the app: the rate the counts came from (a C double), and the position after the two iterations.
    (stored,) = struct.unpack("=d", (rd / "mdworkbench-size").read_bytes())
    assert f"{stored:f}" == f"{easy:f}"
    assert (rd / "mdworkbench.status").read_text() == f"pos: {2 * want}\n"


def test_md_workbench_phase_files_are_md_workbench_output_with_the_official_layout(ext: dict):
    rd = ext["results"]
    result = results_files.read_result(rd / "result.txt")
    per_set = int((result.section("mdworkbench-bench") or results_files.Section("")).get("filesPerProc") or 0)
    bench_text = (rd / "mdworkbench-bench.txt").read_text()
    assert bench_text.startswith('Args: md-workbench "--dataPacketType=timestamp" "--process-reports"')
    bench = parse_mdworkbench(bench_text)
    assert [ln.phase for ln in bench.phases()] == ["benchmark", "benchmark"]
    assert [ln.rank for ln in bench.lines] == [None, 0, 1, None, 0, 1]  # --process-reports: a line per rank
    assert all(ln.objects == per_set * 10 * 2 and ln.errors == 0 for ln in bench.phases())
    # The same arguments as IO500's bench step of the reference (2 ranks): line for line the same fields.
    assert layout(bench_text) == layout((REF / "np2-io500-step2.txt").read_text())
    for name, ref in (("mdworkbench-create", "step1"), ("mdworkbench-delete", "step3")):
        assert layout((rd / f"{name}.txt").read_text()) == layout((REF / f"np2-io500-{ref}.txt").read_text())
    # The score is md-workbench's rate of the second iteration / 1000; scoreIteration0 the first's.
    section = result.section("mdworkbench-bench")
    assert section is not None
    first, second = bench.phases()
    assert float(section.get("score") or 0) == pytest.approx(second.rate_iops / 1000, rel=1e-3)
    assert float(section.get("scoreIteration0") or 0) == pytest.approx(first.rate_iops / 1000, rel=1e-3)
    doc = results.load(rd / "mdworkbench-bench.json")
    assert isinstance(doc, results.MdworkbenchDocument)
    assert doc.md_workbench is not None and doc.md_workbench.verify_errors == 0
    assert doc.md_workbench.verify_bytes == 2 * per_set * 10 * 2 * 3901  # -X: every byte of every read


def test_scorex_is_computed_the_apps_way_and_printed_as_the_app_prints_it(ext: dict):
    rd, out = ext["results"], ext["out"]
    result = results_files.read_result(rd / "result.txt")
    scores = result.phase_scores()
    stated = result.score_values(extended=True)
    assert stated is not None
    x, valid, hash_text = stated
    computed = compute_scores(scores, extended=True)
    # From the six-decimal phase scores of result.txt: equal to the last printed digit (docs/io500.md).
    assert computed.md == pytest.approx(x.md, abs=2e-6) and computed.bw == pytest.approx(x.bw, abs=2e-6)
    assert computed.md != compute_scores(scores, extended=False).md  # md-workbench and the finds count
    assert scores["mdworkbench-bench"] > 0
    names = [s.name for s in result.phases if s.get("score") is not None]
    ext_pairs = [(n, scores[n]) for n in hashed_phases(names, True)]
    assert [n for n, _ in ext_pairs] == ["find-easy", "find-hard", "mdworkbench-bench"]
    assert format_hash(score_hash(None, ext_pairs, x.md, x.bw, x.score, valid)) == hash_text
    # Standard output ends with the app's own lines, exactly result_summary.txt's.
    summary = (rd / "result_summary.txt").read_text()
    assert summary.startswith("IO500 version iolens-")
    assert summary in out.stdout
    # The app's lines, and iolens's page-cache comment right after the first (docs/io500.md, "Page cache").
    assert summary.splitlines()[1].startswith("; iolens cache mode: evict (")
    lines = [ln for ln in summary.splitlines() if not ln.startswith("; ")]
    assert [ln[8:].split()[0] for ln in lines[1:-2]] == EXTENDED
    assert re.fullmatch(r"\[RESULT\] +mdworkbench-bench +[\d.]+ kIOPS : time [\d.]+ seconds", lines[10])
    assert re.fullmatch(r"\[      \] +mdworkbench-create +[\d.]+ kIOPS : time [\d.]+ seconds", lines[3])
    assert re.fullmatch(
        r"\[SCOREX\] Bandwidth [\d.]+ GiB/s : IOPS [\d.]+ kiops : TOTAL [\d.]+( \[INVALID\])?", lines[-1]
    )


def test_extended_run_leaves_the_apps_files_and_no_data(ext: dict):
    root, rd = ext["root"], ext["results"]
    assert not (root / "data").exists()
    names = {p.name for p in rd.iterdir()}
    app_files = {"config-orig.ini", "config.ini", "result.txt", "result_summary.txt", "mdworkbench.status",
                 "mdworkbench-size"} | {f"{n}.txt" for n in EXTENDED if n != "timestamp"}  # fmt: skip
    assert app_files <= names
    # The benchmark's own output only, as the app keeps it (the command is in result.txt's exe line).
    assert (rd / "ior-easy-write.txt").read_text().split("\n", 1)[0].startswith("iolens-bench")
    assert (rd / "mdtest-easy-write.txt").read_text().strip() != ""


# --------------------------------------------------------------------- the rules, without running anything


def _outcomes(bench_iterations: int = 2) -> list[PhaseOutcome]:
    out = []
    for name in EXTENDED:
        o = PhaseOutcome(name, 0.0 if name == "timestamp" else 2.0, 301.0)
        if name in ("find", "find-easy", "find-hard"):
            o.found = 10
        if name == "mdworkbench-bench":
            o.iterations = bench_iterations
        out.append(o)
    return out


def test_scorex_is_valid_when_every_phase_md_workbench_included_is():
    ev = evaluate(_outcomes(), RunRules(stonewall=300, minwrite=300), "v", "extended")
    assert ev.valid and ev.extended_valid
    assert ev.extended_scores is not None and math.isclose(ev.extended_scores.md, 2.0)


def test_an_md_workbench_phase_that_went_wrong_invalidates_scorex_only():
    ev = evaluate(_outcomes(bench_iterations=1), RunRules(stonewall=300, minwrite=300), "v", "extended")
    assert ev.valid and not ev.extended_valid
    (bench,) = [v for v in ev.phases if v.spec.name == "mdworkbench-bench"]
    assert bench.own_reasons == [
        "During the md-workbench phase not two iterations are performed but 1 This invalidates your run."
    ]


# ------------------------------------------------------------------------------------- the config's counts


def _dry(iolens_bin: list[str], tmp_path: Path, extra: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "io500.ini"
    cfg.write_text(
        f"[global]\ndatadir = {tmp_path}/data\nresultdir = {tmp_path}/results\n"
        "[debug]\nstonewall-time = 300\n" + extra
    )
    return subprocess.run(
        [*iolens_bin, "io500", str(cfg), "--dry-run", "--mode", "extended", "--np", "2"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_counts_the_config_sets_are_passed_as_given(iolens_bin: list[str], tmp_path: Path):
    counts = "[mdworkbench]\nprecreatePerSet = 20\nfilesPerProc = 7\nwaitingTime = 0.5\n"
    out = _dry(iolens_bin, tmp_path, counts)
    assert out.returncode == 0, out.stderr
    lines = re.findall(r"^\s+(iolens-bench md-workbench .*)$", out.stdout, re.M)
    assert len(lines) == 3
    assert all(" -t=0.500000 " in ln and " -P=20 -I=7 " in ln for ln in lines)


@pytest.mark.parametrize("given", ["precreatePerSet = 20", "filesPerProc = 7"])
def test_one_count_without_the_other_is_refused_naming_its_line(iolens_bin, tmp_path: Path, given: str):
    out = _dry(iolens_bin, tmp_path, f"[mdworkbench]\n{given}\n")
    assert out.returncode == 2
    assert out.stderr.strip().startswith(f"iolens: error: {tmp_path}/io500.ini:7: {given}: set ")
    # Standard mode does not run md-workbench: the app checks these only in extended mode.
    cfg = tmp_path / "io500.ini"
    std = subprocess.run(
        [*iolens_bin, "io500", str(cfg), "--dry-run"], capture_output=True, text=True, check=False
    )
    assert std.returncode == 0, std.stderr


def test_run_false_skips_md_workbench_and_its_score(iolens_bin: list[str], tmp_path: Path):
    out = _dry(iolens_bin, tmp_path, "[mdworkbench]\nrun = FALSE\n")
    assert out.returncode == 0, out.stderr
    for name in MDWB:
        assert re.search(rf"\d+\. {name} .*\(run = FALSE in \[mdworkbench\]\)", out.stdout), name


def test_data_sets_a_skipped_delete_phase_leaves_are_removed_at_the_end(iolens_bin: list[str]):
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="iolens-io500x-", dir=shm if os.access(shm, os.W_OK) else None))
    try:
        out = _dry(iolens_bin, root, "[mdworkbench-delete]\nrun = FALSE\n")  # writes the config
        assert out.returncode == 0
        run = subprocess.run(
            [*iolens_bin, "io500", str(root / "io500.ini"), "--quick", "--mode", "extended", "--np", "2",
             "--no-live", "--no-store"],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-3000:]
        assert not (root / "data").exists()  # md-workbench's sets went with the engine's cleanup run (-3)
        result = results_files.read_result(next((root / "results").iterdir()) / "result.txt")
        stated = result.score_values(extended=True)
        assert stated is not None and not stated[1]  # the skipped delete scores 0: [SCOREX] is invalid
        assert result.phase_scores()["mdworkbench-bench"] > 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
