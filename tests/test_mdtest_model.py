"""The Python side of mdtest without the real engine: the typed model of an mdtest document, its tables,
the live line, and `iolens mdtest` driven through a stand-in engine that follows the engine's contract."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from iolens import cli, render, results

from .conftest import sample_document
from .ior_helpers import stand_in_engine


def _latency(count: int, buckets: bool = True) -> dict[str, Any]:
    lat: dict[str, Any] = {
        "count": count, "min": 2_000, "mean": 9_500.0, "p50": 8_000, "p90": 15_000,
        "p99": 41_000, "p99_9": 90_000, "max": 120_000,
    }  # fmt: skip
    if buckets:
        lat["buckets"] = [[1_984, 2_047, 1], [7_936, 8_191, count - 2], [118_784, 122_879, 1]]
    return lat


def _phase(name: str, items: int, time_s: float, **extra: Any) -> dict[str, Any]:
    p: dict[str, Any] = {
        "name": name,
        "iteration": 0,
        "items": items,
        "time_s": time_s,
        "rate_per_s": items / time_s,
        "io500_time_s": time_s * 0.9,
        "io500_rate_per_s": items / (time_s * 0.9),
        "owner_shift": 0,
        "latency_ns": _latency(items),
        "per_rank": [
            {"rank": 0, "items": items // 2, "time_s": time_s * 0.9},
            {"rank": 1, "items": items // 2, "time_s": time_s * 0.85},
        ],
        "stonewall": None,
        "verify": None,
    }
    p.update(extra)
    return p


def _summary(phase: dict[str, Any]) -> dict[str, Any]:
    r = phase["rate_per_s"]
    return {
        "name": phase["name"], "iterations": 1, "rate_max_per_s": r, "rate_min_per_s": r,
        "rate_mean_per_s": r, "rate_stddev_per_s": 0.0, "io500_rate_mean_per_s": phase["io500_rate_per_s"],
        "time_mean_s": phase["time_s"], "items": phase["items"],
        "latency_ns": _latency(phase["items"], False),
    }  # fmt: skip


def sample_mdtest_document() -> dict[str, Any]:
    """A complete, valid mdtest document: 2 ranks, -u -F -n 220 -w 3901 -e 3901 -X -N 1 -W 5."""
    # fmt: off
    phases = [
        _phase("tree-create", 2, 0.001),
        _phase(
            "file-create", 440, 0.5,
            stonewall={
                "deadline_s": 5.0, "hit": True, "items_min": 180, "items_max": 220,
                "items_sum_at_deadline": 400, "time_s": 5.01,
            },
        ),
        _phase("file-stat", 440, 0.25, owner_shift=1),
        _phase(
            "file-read", 440, 0.4,
            verify={"files_checked": 440, "bytes_checked": 440 * 3901, "errors": 0, "first_bad_path": None},
        ),
        _phase("file-remove", 440, 0.3, owner_shift=1),
        _phase("tree-remove", 2, 0.002),
    ]
    doc = copy.deepcopy(sample_document())
    doc.pop("target")
    doc.update(
        workload="mdtest",
        command=["iolens-bench", "mdtest", "-u", "-F", "-n", "220", "-N", "1", "--np", "2"],
        config={
            "api": "posix", "items": 220, "items-per-dir": 0, "iterations": 1, "unique-dir": True,
            "dir": "/scratch/md", "files-only": True, "dirs-only": False, "write-bytes": 3901,
            "read-bytes": 3901, "stride": 1, "stonewall-timer": 5,
        },
        geometry={
            "items_per_rank": 220, "items_per_dir": 220, "dirs_in_tree": 1, "loops": 1, "depth": 0,
            "branch": 1, "leaf_only": False, "unique_dir": True, "paths": ["/scratch/md"],
        },
        phases=phases,
        summary=[_summary(p) for p in phases],
    )
    # fmt: on
    return doc


@pytest.fixture
def md_doc() -> dict[str, Any]:
    return sample_mdtest_document()


def _text(doc: results.Document, width: int = 200) -> str:
    console = Console(width=width, record=True, force_terminal=False)
    render.print_document(doc, console)
    return console.export_text()


# --- results.py ------------------------------------------------------------------------------------------


def test_mdtest_document_becomes_its_typed_model(md_doc: dict[str, Any]) -> None:
    doc = results.parse(md_doc)
    assert isinstance(doc, results.MdtestDocument) and doc.ok
    assert doc.geometry is not None and doc.geometry.unique_dir and doc.geometry.paths == ("/scratch/md",)
    assert [p.name for p in doc.phases] == [
        "tree-create", "file-create", "file-stat", "file-read", "file-remove", "tree-remove",
    ]  # fmt: skip
    create, stat_, read = doc.phases[1], doc.phases[2], doc.phases[3]
    assert create.items == 440 and create.rate_per_s == pytest.approx(880.0)
    assert create.stonewall is not None and create.stonewall.hit and create.stonewall.items_max == 220
    assert stat_.owner_shift == 1 and create.owner_shift == 0
    assert read.verify is not None and read.verify.bytes_checked == 440 * 3901
    assert [r.items for r in create.per_rank] == [220, 220]
    assert sum(b.count for b in create.latency_ns.buckets) == create.latency_ns.count == 440
    assert doc.summary[1].name == "file-create" and doc.summary[1].latency_ns.buckets == ()
    assert doc.comm.ranks == 2 and doc.config["stride"] == 1


def test_ior_documents_still_read_as_ior(sample_doc: dict[str, Any]) -> None:
    assert type(results.parse(sample_doc)) is results.IorDocument


def test_another_workloads_document_is_refused_by_name(sample_doc: dict[str, Any]) -> None:
    sample_doc["workload"] = "elbencho"
    expected = "workload: 'elbencho' is not an ior, mdtest, find, io500, fio or md-workbench document"
    with pytest.raises(results.ResultError, match=expected):
        results.parse(sample_doc)


@pytest.mark.parametrize(
    ("breakage", "message"),
    [
        (lambda d: d["phases"][2].pop("io500_rate_per_s"), r"phases\[2\]\.io500_rate_per_s: missing"),
        (lambda d: d["phases"][1].update(items="440"), r"phases\[1\]\.items: expected integer, got string"),
        (lambda d: d["phases"][3]["verify"].pop("errors"), r"phases\[3\]\.verify\.errors: missing"),
        (lambda d: d["phases"][1]["stonewall"].update(hit=1), r"stonewall\.hit: expected boolean"),
        (lambda d: d["phases"][2].update(owner_shift=-1), r"owner_shift: must not be negative"),
        (lambda d: d["geometry"].update(paths=[1]), r"geometry\.paths\[0\]: expected string"),
        (lambda d: d.pop("geometry"), r"geometry: missing"),
        (lambda d: d["summary"][0].pop("rate_stddev_per_s"), r"summary\[0\]\.rate_stddev_per_s: missing"),
        # An ior-shaped phase in an mdtest document is a broken document, not a half-read one.
        (lambda d: d.update(phases=sample_document()["phases"]), r"phases\[0\]\..*items: missing"),
    ],
    ids=["no-io500-rate", "items-string", "no-verify-errors", "hit-int", "negative-shift", "path-int",
         "no-geometry", "summary-key", "ior-phase"],
)  # fmt: skip
def test_broken_mdtest_document_is_refused_naming_the_key(
    md_doc: dict[str, Any], breakage: Any, message: str
) -> None:
    breakage(md_doc)
    with pytest.raises(results.ResultError, match=message):
        results.parse(md_doc)


def test_failed_mdtest_run_may_be_partial(md_doc: dict[str, Any], tmp_path: Path) -> None:
    partial = {
        "schema_version": 1, "tool": "iolens", "workload": "mdtest", "status": "failed",
        "error": {"message": "file-read: 1 bytes differ", "rank": 1, "phase": "file-read"},
        "phases": md_doc["phases"][:2],
    }  # fmt: skip
    path = tmp_path / "failed.json"
    path.write_text(json.dumps(partial))
    doc = results.load(path)
    assert isinstance(doc, results.MdtestDocument) and not doc.ok
    assert doc.geometry is None and len(doc.phases) == 2 and doc.error is not None


# --- render.py -------------------------------------------------------------------------------------------


def test_summary_table_reads_like_mdtest(md_doc: dict[str, Any]) -> None:
    md_doc["summary"].insert(0, _summary(_phase("dir-create", 440, 0.2)))
    out = _text(results.parse(md_doc))
    assert "SUMMARY rate (in ops/sec): (of 1 iterations)" in out
    header = next(line for line in out.splitlines() if "Operation" in line)
    assert header.split() == ["Operation", "Max", "Min", "Mean", "Std", "Dev"]
    rows = [line.split() for line in out.split("SUMMARY rate")[1].splitlines()]
    labels = [" ".join(r[:2]) for r in rows if len(r) == 6 and r[0] != "Operation"]
    # mdtest's order: directories, files, then the tree.
    assert labels == [
        "Directory creation", "File creation", "File stat", "File read", "File removal",
        "Tree creation", "Tree removal",
    ]  # fmt: skip
    create = next(r for r in rows if r[:2] == ["File", "creation"])
    assert create[2:] == ["880.000", "880.000", "880.000", "0.000"]


def test_phase_table_has_both_rates_and_latencies(md_doc: dict[str, Any]) -> None:
    out = _text(results.parse(md_doc))
    header = next(line for line in out.splitlines() if line.lstrip().startswith("phase"))
    for col in ("iter", "items", "time(s)", "rate/s", "IO500 rate/s", "lat p50", "lat p99", "lat max"):
        assert col in header
    stat_row = next(line for line in out.splitlines() if line.startswith("file-stat "))
    assert stat_row.split()[:6] == ["file-stat", "0", "440", "0.2500", "1760.000", "1955.556"]
    assert "41.0 µs" in stat_row
    assert "2 tasks, 440 files (220 per rank)" in out
    assert "a tree per rank (-u)" in out and "path: /scratch/md" in out


def test_stonewall_and_verify_lines(md_doc: dict[str, Any]) -> None:
    out = _text(results.parse(md_doc))
    assert "Continue stonewall hit min: 180 max: 220 avg: 200.0 " in out
    assert "verify file-read iter 0: 440 files, 1.64 MiB checked, no errors" in out
    md_doc["phases"][3]["verify"].update(errors=3, first_bad_path="/scratch/md/test-dir.0-0/x")
    md_doc["phases"][1]["stonewall"]["hit"] = False
    out = _text(results.parse(md_doc))
    assert "VERIFICATION FAILED" in out and "3 bytes differ, first in /scratch/md/test-dir.0-0/x" in out
    assert "Continue stonewall" not in out and "deadline was not reached" in out


def test_narrow_terminal_keeps_every_figure_whole(md_doc: dict[str, Any]) -> None:
    text = _text(results.parse(md_doc), width=80)
    assert "…" not in text
    assert "IO500 rate/s" in text and "1955.556" in text and "SUMMARY rate" in text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80


def test_live_line_counts_items() -> None:
    progress = {
        "phase": "file-create", "iteration": 0, "elapsed_s": 1.2, "items": 12345, "rate_per_s": 10000.0,
        "estimate": True,
    }  # fmt: skip
    line = render.progress_line(progress, 3.0).plain
    assert line.startswith("file-create iter 0")
    assert "10,000 items/s" in line and "12,345 items" in line and "phase 1.2 s" in line
    assert "MiB" not in line and "(estimate)" in line


# --- cli.py with a stand-in engine -----------------------------------------------------------------------

FAKE_ENGINE = r'''#!{python}
"""Stand-in for iolens-bench mdtest: follows the engine's command-line contract, touches no files."""
import json, os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
if "-n" in args and args[args.index("-n") + 1] == "0":
    print("iolens-bench: error: -n: the number of items per rank must be at least 1", file=sys.stderr)
    sys.exit(2)
if "--check" in args:
    sys.exit(0)
print('IOLENS-PROGRESS {"phase": "file-create", "iteration": 0, "elapsed_s": 0.5, "items": 200, '
      '"rate_per_s": 400.0, "estimate": true}', file=sys.stderr)
out = args[args.index("--json") + 1]
shutil.copyfile(os.environ["FAKE_DOC"], out + ".tmp")
os.replace(out + ".tmp", out)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
'''


@pytest.fixture
def fake_mdtest(tmp_path: Path, md_doc: dict[str, Any]) -> dict[str, str]:
    return stand_in_engine(tmp_path, FAKE_ENGINE, md_doc)


def _iolens(iolens_bin: list[str], args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*iolens_bin, *args], capture_output=True, text=True, timeout=120, env=env)


def test_mdtest_is_a_command() -> None:
    assert "mdtest" in cli.WORKLOADS and "mdtest" in cli.USAGE


def test_cli_runs_mdtest_like_ior(iolens_bin: list[str], fake_mdtest: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "copy.json"
    args = [
        "mdtest",
        "-u",
        "-F",
        "-n",
        "220",
        "-N",
        "1",
        "--np",
        "2",
        "--json",
        str(out),
        "--text-format=rich",
    ]
    proc = _iolens(iolens_bin, args, fake_mdtest)
    assert proc.returncode == 0, proc.stderr
    assert "SUMMARY rate (in ops/sec): (of 1 iterations)" in proc.stdout and "File creation" in proc.stdout
    assert "Continue stonewall hit min: 180 max: 220" in proc.stdout
    assert "IOLENS-PROGRESS" not in proc.stdout + proc.stderr
    kept = json.loads(out.read_text())
    engine_doc = json.loads(Path(fake_mdtest["FAKE_DOC"]).read_text())
    assert kept.pop("command")[:2] == ["iolens", "mdtest"]
    assert kept.pop("engine_command") == engine_doc.pop("command")
    assert kept == engine_doc
    calls = [json.loads(line) for line in Path(fake_mdtest["FAKE_LOG"]).read_text().splitlines()]
    argv = calls[-1]
    assert argv[:7] == ["mdtest", "-u", "-F", "-n", "220", "-N", "1"]
    assert {"--progress", "--quiet"} <= set(argv) and argv[-2:] == ["--np", "2"]


def test_cli_mdtest_bad_flag_is_one_clean_error(iolens_bin: list[str], fake_mdtest: dict[str, str]) -> None:
    proc = _iolens(iolens_bin, ["mdtest", "-n", "0"], fake_mdtest)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "iolens: error: -n: the number of items per rank must be at least 1"


def test_cli_mdtest_check_only_validates(iolens_bin: list[str], fake_mdtest: dict[str, str]) -> None:
    proc = _iolens(iolens_bin, ["mdtest", "-n", "10", "--np", "4", "--check"], fake_mdtest)
    assert proc.returncode == 0 and "mdtest options ok" in proc.stdout
    argv = json.loads(Path(fake_mdtest["FAKE_LOG"]).read_text().splitlines()[-1])
    assert argv == ["mdtest", "-n", "10", "--np", "4", "--comm", "local", "--check"]


def test_cli_mdtest_verify_errors_fail_the_run(
    iolens_bin: list[str], fake_mdtest: dict[str, str], md_doc: dict[str, Any], tmp_path: Path
) -> None:
    md_doc["phases"][3]["verify"].update(errors=2, first_bad_path="/scratch/md/f")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(md_doc))
    args = ["mdtest", "--text-format=rich", "-F", "-n", "10", "-X"]
    proc = _iolens(iolens_bin, args, dict(fake_mdtest, FAKE_DOC=str(bad)))
    assert proc.returncode == 1
    assert "VERIFICATION FAILED" in proc.stdout and "first in /scratch/md/f" in proc.stdout
