"""The monitoring window's data (report/monitor_window.py): own vs others' disk I/O on a real `--monitor`
document, gaps, units, and the runs that overlapped a window (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iolens import results
from iolens.report import monitor_window as mw
from iolens.report import own_io
from iolens.store import Store, queries
from iolens.store.documents import run_record

from .db_helpers import ior_document

DATA = Path(__file__).parent / "data"
# A real `iolens ior --monitor=0.2 -- -b 256m -t 1m -i 3 --posix.odirect` run on /var/tmp while a shell loop
# of `dd bs=1M count=16 oflag=direct` wrote to the same disk (vda) in the background.
DD_DOC = DATA / "monitor_dd_background.json"
MIB = 1024 * 1024


def dd_doc() -> dict[str, Any]:
    return json.loads(DD_DOC.read_text())


def test_own_io_counts_each_process_of_the_tree_once() -> None:
    """The engine's children are reaped by the engine, whose counters then jump by theirs: the tree's own
    bytes over the run are the root's final counters (the kernel's sum over the tree), not twice them."""
    recs = dd_doc()["monitor"]["samples"]
    ivs = own_io.intervals(recs)
    last = next(r["data"]["proc_io"] for r in reversed(recs) if r["data"].get("proc_io"))
    (root,) = last.values()
    assert sum(iv.own_write or 0 for iv in ivs) == root["write_bytes"]
    assert sum(iv.own_read or 0 for iv in ivs) == root["read_bytes"]
    # ior wrote and read 3 × 256 MiB with O_DIRECT: that is what the tree did (a little metadata beside).
    assert 768 * MIB <= root["write_bytes"] < 769 * MIB


def test_others_are_the_disks_total_minus_the_run_clamped_at_zero() -> None:
    recs = dd_doc()["monitor"]["samples"]
    ivs = own_io.intervals(recs)
    assert len(ivs) == len(recs) - 1
    others_w = 0.0
    for iv, (a, b) in zip(ivs, zip(recs, recs[1:], strict=False), strict=True):
        # The device total is the disk's own counter difference (diskstats: vda, the only disk here).
        dev = b["data"]["diskstats"]["vda"]["written_bytes"] - a["data"]["diskstats"]["vda"]["written_bytes"]
        assert iv.device_write == dev
        assert iv.own_write is not None
        others_w += max(0.0, dev - iv.own_write)
    # The background dd wrote while ior ran: others' writes are there, and hundreds of MiB of them.
    assert others_w > 100 * MIB
    lines = {line.name: line for line in mw.split_lines(ivs, "write")}
    total, own, others = (
        lines["all disks (node total)"],
        lines["the run's processes"],
        lines["others (total − run's, ≥ 0)"],
    )
    for t, y_total, y_own, y_others in zip(total.x, total.y, own.y, others.y, strict=True):
        assert y_others == pytest.approx(max(0.0, y_total - y_own)), t
        assert y_others >= 0
    # Per phase, over the same whole intervals as the monitor's window figures: the split agrees with the
    # split of the figures the monitor wrote into the document.
    doc = dd_doc()
    for w in doc["monitor"]["windows"]:
        measured, split = own_io.split_over(ivs, w["start"], w["end"])
        assert measured == tuple(w["figures"]["measured"])
        fig = own_io.split_from_figures(w["figures"])
        assert fig is not None
        assert split.device_write == pytest.approx(fig.device_write, rel=1e-3)
        assert split.others_write == pytest.approx(fig.others_write, rel=1e-2, abs=MIB)
    assert any(
        (own_io.split_from_figures(w["figures"]).others_write or 0) > 50 * MIB
        for w in doc["monitor"]["windows"]
    )


def test_a_monitor_stopped_for_a_while_is_a_gap_and_a_slower_schedule_is_not() -> None:
    pts = [(0.0, 1.0), (0.1, 1.0), (0.2, 1.0), (1.2, 2.0), (2.2, 2.0), (3.2, 2.0), (9.2, 3.0), (10.2, 3.0)]
    x, y = mw.with_gaps(pts)
    assert [v for v in y if v is None] == [None]
    assert x[y.index(None)] == pytest.approx(6.2)
    assert mw.with_gaps(pts[:6]) == ([t for t, _ in pts[:6]], [v for _, v in pts[:6]])


def test_panels_hold_one_unit_and_no_cumulative_counter() -> None:
    doc = dd_doc()
    series: dict[mw.Key, list[tuple[float, float | None]]] = {}
    from iolens.store.samples import record_samples

    for r in doc["monitor"]["samples"]:
        for s in record_samples(r, "vm"):
            series.setdefault((s.host, s.source, s.target, s.metric), []).append((s.t, s.value))
    comms = {
        ("vm", pid): f["comm"] for r in doc["monitor"]["samples"] for pid, f in r["data"]["proc_io"].items()
    }
    panels = mw.panels(series, comms)
    assert panels
    for p in panels:
        assert p.unit and all(line.name for line in p.lines)
        for line in p.lines:
            metric = line.name.rsplit("/", 1)[-1]
            source = p.title.split(" on ")[0]
            assert metric.endswith("_per_s") or not mw._is_counter(("vm", source, "", metric), set()), (
                line.name
            )
            assert mw.unit_of(source, metric)[0] == p.unit, (p.title, line.name)
    procs = [p for p in panels if p.title.startswith("proc_io")]
    assert procs and all(line.name.startswith("iolens-bench/") for p in procs for line in p.lines)
    assert all(line.hover and "PID" in line.hover[0] for p in procs for line in p.lines)


def _stored(store: Store, doc: dict[str, Any]) -> int:
    return store.put_run(run_record(results.parse(doc))).id


def test_overlapping_runs_and_the_run_document(db_url: str) -> None:
    with Store.open(db_url) as store:
        a = _stored(
            store, ior_document(1e9, started="2026-05-01T10:00:00Z", hostname="n1")
        )  # 10:00:00-10:00:30
        b = _stored(store, ior_document(2e9, started="2026-05-01T10:00:20Z", hostname="n1"))  # meets a
        c = _stored(store, ior_document(3e9, started="2026-05-01T10:00:20Z", hostname="n2"))  # other host
        d = _stored(store, ior_document(4e9, started="2026-05-01T10:05:00Z", hostname="n1"))  # later
        run = queries.get_run(store.db, a)
        t0, t1 = run["started_at"], run["ended_at"]
        found = queries.overlapping_runs(store.db, t0, t1, ["n1"], exclude_id=a)
        assert [r["id"] for r in found] == [b]
        assert found[0]["tool"] == "ior" and found[0]["hostname"] == "n1"
        assert [r["id"] for r in queries.overlapping_runs(store.db, t0, t1, ["n1", "n2"], exclude_id=a)] == [
            b,
            c,
        ]
        assert [r["id"] for r in queries.overlapping_runs(store.db, t0, t1 + 600, ["n1"])] == [a, b, d]
        assert queries.overlapping_runs(store.db, t0, t1, []) == []
        doc = queries.run_document(store.db, a)
        assert doc is not None and doc["host"]["hostname"] == "n1"
        window = mw.build(store.db, run)
        assert window is not None and window.origin == "database" and window.panels == []
        assert [o.run_id for o in window.overlaps] == [b]


def test_a_monitored_run_shows_its_own_samples_only(db_url: str) -> None:
    with Store.open(db_url) as store:
        rid = _stored(store, dd_doc())
        window = mw.build(store.db, queries.get_run(store.db, rid))
    assert window is not None and window.origin == "run" and window.hosts == ["vm"]
    assert window.margin_s == pytest.approx(1.0)
    lo, hi = window.shown
    assert all(lo <= t <= hi for p in window.panels for line in p.lines for t in line.x)
    assert window.has_own and len(window.phases) == 6
    assert any((p.split.others_write or 0) > 50 * MIB for p in window.phases if p.split)


def test_the_monitor_phase_table_says_the_runs_and_the_others_disk_io() -> None:
    from rich.console import Console

    from iolens.monitor.report import monitor_section

    console = Console(width=220, record=True, color_system=None)
    console.print(monitor_section(results.parse(dd_doc()).monitor))
    text = console.export_text()
    assert "run's MiB/s r/w" in text and "others' MiB/s r/w" in text
    rows = [line.split() for line in text.splitlines() if line.strip().startswith(("write #", "read #"))]
    assert len(rows) == 6
    for w, row in zip(dd_doc()["monitor"]["windows"], rows, strict=True):
        split = own_io.split_from_figures(w["figures"])
        assert split is not None and split.own_write is not None
        own, others = row[8], row[9]  # phase is two words: "write #0"
        assert own == f"{split.own_read / MIB:.1f}/{split.own_write / MIB:.1f}"
        assert others.replace("*", "") == f"{split.others_read / MIB:.1f}/{split.others_write / MIB:.1f}"
    assert "others': the disks' total minus the run's" in text.replace("\n", " ")
