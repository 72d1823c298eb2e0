"""`iolens io500` leaves the IO500 app's per-rank CSV files in the result directory: PHASE.csv of every ior
and mdtest phase (IOR's saveRankPerformanceDetailsCSV, mdtest's --saveRankPerformanceDetails) and pfind's
find*.csv, with the app's headers and a line per rank (io500 02091cf src/phase_*.c, src/phase_find.c).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolens import results
from iolens.io500 import results_files
from iolens.io500.spec import runnable_phases
from tests.test_io500_driver import run_io500, write_config

NP = 2
EXTENDED = [p.name for p in runnable_phases("extended")]
IOR = [n for n in EXTENDED if n.startswith("ior-")]
MDTEST = [n for n in EXTENDED if n.startswith("mdtest-")]
FIND = [n for n in EXTENDED if n.startswith("find")]

IOR_HEADER = "access,rank,runtime-with-openclose,runtime,throughput-withopenclose,throughput"
MD_OPS = [
    "Directory creation", "Directory stat", "Directory read", "Directory rename", "Directory removal",
    "File creation", "File stat", "File read", "File removal", "Tree creation", "Tree removal",
]  # fmt: skip
MDTEST_HEADER = "rank,items" + "".join(f",rate-{op},time-{op}" for op in MD_OPS)
FIND_HEADER = (
    "rank, errors, unknown, found, total, checked, job steal msgs received, work items send, job steal msgs "
    "send, work items stolen, time spend in job stealing in s, number of completion tokens send"
)
# mdtest's column of each phase's step (rate, time after "rank,items").
MD_COLUMN = {"write": "File creation", "stat": "File stat", "read": "File read", "delete": "File removal"}


@pytest.fixture(scope="module")
def run(iolens_bin: list[str]) -> Iterator[Path]:
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="iolens-io500csv-", dir=shm if os.access(shm, os.W_OK) else None))
    try:
        cfg = write_config(root)
        out = run_io500(iolens_bin, str(cfg), "--quick", "--mode", "extended", "--np", str(NP), "--no-live")
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        yield root / "results"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_every_ior_mdtest_and_find_phase_has_its_csv_and_nothing_else_does(run: Path):
    made = sorted(p.stem for p in run.glob("*.csv"))
    assert made == sorted(IOR + MDTEST + FIND)


@pytest.mark.parametrize("phase", IOR)
def test_ior_csv_has_iors_header_and_a_line_per_rank_with_the_phases_bytes(run: Path, phase: str):
    lines = (run / f"{phase}.csv").read_text().splitlines()
    assert lines[0] == IOR_HEADER
    rows = list(csv.reader(lines[1:]))
    access = "write" if phase.endswith("write") else "read"
    assert [(r[0], r[1]) for r in rows] == [(access, str(k)) for k in range(NP)]
    doc = results.load(run / f"{phase}.json")
    assert isinstance(doc, results.IorDocument)
    ph = next(p for p in doc.phases if p.name == access)
    for r in rows:
        with_oc, xfer, bw_oc, bw = (float(x) for x in r[2:])
        assert 0 < xfer <= with_oc <= ph.times.total_s * 1.001
        # Each rank's share of the phase's bytes over its own times (IOR's layout: %.10e).
        assert bw_oc * with_oc == pytest.approx(ph.bytes / NP, rel=1e-6)
        assert bw * xfer == pytest.approx(ph.bytes / NP, rel=1e-6)
        assert all("e" in x for x in r[2:])


@pytest.mark.parametrize("phase", MDTEST)
def test_mdtest_csv_has_mdtests_header_an_all_row_and_a_row_per_rank(run: Path, phase: str):
    lines = (run / f"{phase}.csv").read_text().splitlines()
    assert lines[0] == MDTEST_HEADER
    header = lines[0].split(",")
    # The rank rows stop before the tree columns (mdtest's layout): zip stops at the row's end.
    rows = [dict(zip(header, r, strict=False)) for r in csv.reader(lines[1:])]
    assert [len(r) for r in rows] == [len(header)] + [len(header) - 4] * NP
    assert [r["rank"] for r in rows] == ["all", *map(str, range(NP))]
    col = MD_COLUMN[phase.rsplit("-", 1)[1]]
    doc = results.load(run / f"{phase}.json")
    assert isinstance(doc, results.MdtestDocument)
    items = sum(float(r[f"rate-{col}"]) * float(r[f"time-{col}"]) for r in rows[1:])
    step = {"write": "file-create", "stat": "file-stat", "read": "file-read", "delete": "file-remove"}
    mp = next(p for p in doc.phases if p.name == step[phase.rsplit("-", 1)[1]])
    assert items == pytest.approx(mp.items, rel=1e-6)  # the ranks' items add up to the phase's
    for other in MD_OPS[:9]:
        if other != col:
            assert all(r[f"rate-{other}"] == "" for r in rows[1:]), other


@pytest.mark.parametrize("phase", FIND)
def test_find_csv_is_pfinds_layout_with_the_walks_per_rank_counts(run: Path, phase: str):
    text = (run / f"{phase}.csv").read_text()
    first, header, *lines = text.splitlines()
    assert header == FIND_HEADER
    doc = results.load(run / f"{phase}.json")
    assert isinstance(doc, results.FindDocument) and doc.find is not None
    assert first == f"runtime: {doc.find.time_s:f} rate: {doc.find.rate_per_s:f}"
    rows = list(csv.reader(io.StringIO("\n".join(lines)), skipinitialspace=True))
    assert [int(r[0]) for r in rows] == list(range(NP))
    assert all(len(r) == 12 for r in rows)
    found, total = sum(int(r[3]) for r in rows), sum(int(r[4]) for r in rows)
    section = results_files.read_result(run / "result.txt").section(phase)
    assert section is not None
    assert found == int(section.get("found") or -1) > 0
    assert total == int(section.get("total-files") or -1)
    # checked: the entries read from directories (all but the starting point).
    assert sum(int(r[5]) for r in rows) == total - 1
    assert all(int(r[1]) == 0 for r in rows)
    # pfind's unknown-dirents and job-stealing figures: iolens's find has none (docs/io500.md).
    assert all(r[2] == "" and r[6:] == [""] * 6 for r in rows)
