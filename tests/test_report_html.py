"""HTML reports opened in a real headless Chromium (Debian's, driven by Playwright; no browser download):
no console errors, every plot drawn with data, nothing fetched from the network; screenshots are kept in
build/test-artifacts/ for a person to look at."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from iolens.store import Store, queries

from .conftest import REPO, ProfileBuild
from .db_helpers import IO500_REFERENCE, iolens, iolens_env, ior_document
from .test_db_imports import darshan_example, profile_job

ARTIFACTS = REPO / "build" / "test-artifacts"
GIB = 1024**3


def open_report(browser: Any, path: Path, shot: str) -> dict[str, Any]:
    """Load the report, wait for the plots; its console errors, requests and plots' state."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_function(
        "Array.from(document.querySelectorAll('div[data-figure]')).every(d => d.querySelector('.main-svg'))",
        timeout=30_000,
    )
    plots = page.evaluate(
        """Array.from(document.querySelectorAll('div[data-figure]')).map(d => ({
            title: (d.layout && d.layout.title && d.layout.title.text) || '',
            traces: (d.data || []).length,
            points: (d.data || []).reduce((n, t) => n + Math.max((t.x || []).length, (t.y || []).length), 0),
            drawn: d.querySelectorAll('.main-svg .point, .main-svg .js-line, .main-svg .js-fill').length,
            // Rectangles on the x axis (the phase windows): their range as epoch ms (the report gives
            // plotly local times, read here as local times), the pixels plotly drew them at, and the
            // pixels the axis puts those times at.
            shapes: (d.layout.shapes || []).map(s => ({
                name: s.name || '', type: s.type, xref: s.xref, yref: s.yref, y0: s.y0, y1: s.y1,
                t0: Date.parse(String(s.x0).replace(' ', 'T')),
                t1: Date.parse(String(s.x1).replace(' ', 'T')),
                px0: d._fullLayout.xaxis._offset + d._fullLayout.xaxis.d2p(s.x0),
                px1: d._fullLayout.xaxis._offset + d._fullLayout.xaxis.d2p(s.x1),
            })),
            shapes_drawn: Array.from(d.querySelectorAll('.shapelayer path')).map(p => {
                const box = p.getBBox();
                return {x0: box.x, x1: box.x + box.width, height: box.height};
            }),
            labels: (d.layout.annotations || []).map(a => a.text),
            phase_labels: (d.layout.annotations || []).filter(a => a.name === 'phase').map(a => a.text),
            // What the page plots: each trace's name, times, values (null where plotly gets no value).
            ytitle: ((d._fullLayout.yaxis.title || {}).text) || '',
            xtitle: ((d._fullLayout.xaxis.title || {}).text) || '',
            series: (d.data || []).map(t => ({name: t.name, x: t.x, y: t.y, connectgaps: t.connectgaps})),
        }))"""
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{shot}.png"), full_page=True)
    text = page.inner_text("body")
    page.close()
    return {"errors": errors, "requests": requests, "plots": plots, "text": text}


def assert_clean(result: dict[str, Any], min_plots: int) -> None:
    assert result["errors"] == []
    assert all(u.startswith("file://") for u in result["requests"]), result["requests"]
    assert len(result["plots"]) >= min_plots
    for plot in result["plots"]:
        assert plot["traces"] > 0 and plot["points"] > 0 and plot["drawn"] > 0, plot


def report(url: str, tmp_path: Path, ref: str, name: str) -> Path:
    out = tmp_path / f"{name}.html"
    r = iolens("report", ref, "--html", str(out), "--db", url, env=iolens_env(home=tmp_path))
    assert r.returncode == 0, r.stderr
    return out


def test_io500_run_report_with_monitoring_and_phase_windows(
    browser: Any, db_url: str, tmp_path: Path
) -> None:
    env = iolens_env(home=tmp_path)
    assert (
        iolens("db", "import", str(IO500_REFERENCE), "--db", db_url, "--system", "ref", env=env).returncode
        == 0
    )
    with Store.open(db_url, create=False) as store:
        row = store.db.query_one("SELECT started_at, ended_at FROM runs WHERE id = 1")
    assert row is not None
    t0, t1 = row
    lines = []
    for i in range(int(t1 - t0) + 40):
        t = t0 - 20 + i
        for host in ("n1", "n2"):
            base = {"t": t, "host": host, "source": "lustre"}
            lines.append(
                {
                    **base,
                    "target": "scratch-OST0000",
                    "metric": "write_bytes_per_s",
                    "value": 1e9 * (1 + i % 7),
                }
            )
            lines.append(
                {**base, "target": "scratch-MDT0000", "metric": "open_per_s", "value": 1e4 * (i % 5)}
            )
    samples = tmp_path / "mon.jsonl"
    samples.write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert iolens("db", "import", str(samples), "--db", db_url, env=env).returncode == 0

    result = open_report(browser, report(db_url, tmp_path, "1", "io500"), f"report-io500-{_backend(db_url)}")
    assert_clean(result, min_plots=6)
    titles = " | ".join(p["title"] for p in result["plots"])
    assert "phases in GiB/s" in titles and "phases in kIOPS" in titles and "IO500 score" in titles
    assert "lustre on n1" in titles and "lustre on n2" in titles and "score on ref" in titles
    assert "score 31.923" in result["text"] and "mdtest-hard-delete" in result["text"]
    assert "No monitoring samples" not in result["text"]

    # Each monitoring plot shades every phase window of the run: one rectangle per phase, over its
    # start..end (result.txt's t_start, t_end), the full plot height, drawn where the axis puts those times.
    with Store.open(db_url, create=False) as store:
        windows = store.db.query(
            "SELECT name, started_at, ended_at FROM phases WHERE run_id = 1 AND kind = 'phase' ORDER BY seq"
        )
    assert len(windows) == 14 and all(a is not None and b is not None for _, a, b in windows)
    # One plot per host and unit: the bytes/s and the opens/s are not on one axis.
    monitoring = [p for p in result["plots"] if p["title"].startswith("lustre on")]
    assert sorted((p["title"], p["ytitle"]) for p in monitoring) == [
        ("lustre on n1", "GiB/s"),
        ("lustre on n1", "ops/s"),
        ("lustre on n2", "GiB/s"),
        ("lustre on n2", "ops/s"),
    ]
    for plot in monitoring:
        assert plot["phase_labels"] == [name for name, _, _ in windows]
        phases = [s for s in plot["shapes"] if s["name"] == "phase"]
        assert [(s["t0"], s["t1"]) for s in phases] == [(a * 1000, b * 1000) for _, a, b in windows]
        assert all(
            (s["type"], s["xref"], s["yref"], s["y0"], s["y1"]) == ("rect", "x", "paper", 0, 1)
            for s in phases
        )
        # The margins outside the run are shaded too, after the phases.
        assert [s["name"] for s in plot["shapes"][len(phases) :]] == ["outside the run"] * 2
        drawn = plot["shapes_drawn"][: len(phases)]
        assert len(drawn) == len(windows)
        for shape, box in zip(phases, drawn, strict=True):
            assert box["x0"] == pytest.approx(shape["px0"], abs=1.5)
            assert box["x1"] == pytest.approx(shape["px1"], abs=1.5)
            assert box["height"] > 100
    # The plots without a time axis have no shading.
    assert all(p["shapes"] == [] for p in result["plots"] if not p["title"].startswith("lustre on"))


def test_ior_run_report_with_percentiles_and_trend(browser: Any, db_url: str, tmp_path: Path) -> None:
    d = tmp_path / "docs"
    d.mkdir()
    for day, bw in enumerate((3.0, 3.2, 2.9, 3.1, 2.2), start=1):
        doc = ior_document(
            bw * GIB, 2 * bw * GIB, started=f"2026-05-{day:02d}T02:00:00Z", p99_ns=1_000_000 * day
        )
        (d / f"{day}.json").write_text(json.dumps(doc))
    env = iolens_env(home=tmp_path)
    assert iolens("db", "import", str(d), "--db", db_url, "--system", "lustre", env=env).returncode == 0
    result = open_report(browser, report(db_url, tmp_path, "5", "ior"), f"report-ior-{_backend(db_url)}")
    assert_clean(result, min_plots=4)
    titles = [p["title"] for p in result["plots"]]
    assert any("latency per operation" in t for t in titles)
    trend = next(p for p in result["plots"] if p["title"].startswith("write on lustre"))
    assert trend["points"] == 5 + 1  # five runs, and this run marked
    trend_html = tmp_path / "trend.html"
    t = iolens(
        "db",
        "trend",
        "--phase",
        "read",
        "--system",
        "lustre",
        "--html",
        str(trend_html),
        "--db",
        db_url,
        env=env,
    )
    assert t.returncode == 0, t.stderr
    assert_clean(open_report(browser, trend_html, f"report-trend-{_backend(db_url)}"), min_plots=1)


def test_profile_report_with_sizes_top_files_timeline_and_advice(
    browser: Any, db_url: str, tmp_path: Path
) -> None:
    env = iolens_env(home=tmp_path)
    logs = profile_job(tmp_path / "logs", traced=True)
    assert iolens("db", "import", str(logs), "--db", db_url, env=env).returncode == 0
    result = open_report(
        browser, report(db_url, tmp_path, "profile:1", "profile"), f"report-profile-{_backend(db_url)}"
    )
    assert_clean(result, min_plots=4)
    titles = [p["title"] for p in result["plots"]]
    assert titles[:2] == ["operations (calls)", "access sizes (bytes per call)"]
    assert any(t.startswith("top 2 files") for t in titles) and "what the job did over time" in titles
    assert "/lus/out" in result["text"] and "Advice" in result["text"]


def test_darshan_profile_report(browser: Any, db_url: str, tmp_path: Path) -> None:
    env = iolens_env(home=tmp_path)
    r = iolens("db", "import", str(darshan_example("dxt.darshan")), "--db", db_url, env=env)
    assert r.returncode == 0, r.stderr
    result = open_report(
        browser, report(db_url, tmp_path, "profile:1", "darshan"), f"report-darshan-{_backend(db_url)}"
    )
    assert_clean(result, min_plots=4)
    # A Darshan log gets the advice of iolens's rules (dxt.darshan: 215 files, most small; its small
    # transfers took 0.38 s of a 1469 s run, under the gate: no advice on them), with its numbers.
    assert "Many small files" in result["text"] and "Small transfers" not in result["text"]
    assert "could be saved" in result["text"]


def _backend(url: str) -> str:
    return "postgresql" if url.startswith("postgresql") else "sqlite"


STACKS_JS = """Array.from(document.querySelectorAll('div.stack')).map(d => ({
    path: d.getAttribute('data-path'),
    rows: Array.from(d.querySelectorAll('tbody tr')).map(tr => Array.from(tr.cells).map(c => c.innerText)),
    sentence: (d.querySelector('p.stack-sentence') || {innerText: ''}).innerText,
}))"""


@pytest.mark.mpi
def test_profile_report_stacks_the_layers_of_each_file(
    browser: Any, db_url: str, tmp_path: Path, mpi_env: dict[str, str], profile_build: ProfileBuild
) -> None:
    """A real MPI-IO job (2 ranks writing 4 KiB pieces of one file with a view and MPI_File_write_all, Open
    MPI's aggregation pinned): its page shows the file's MPI-IO layer over its POSIX layer, and under them
    the sentence with the program's own count of its collective writes and the aggregation the POSIX layer
    shows (one rank wrote for both)."""
    prog = tmp_path / "mpiio_small_writes"
    src = REPO / "tests" / "data" / "advice_suite" / "mpiio_small_writes.c"
    include = f"-I{src.parent}"
    cmd = ["mpicc", "-O2", include, "-o", str(prog), str(src)]
    built = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    work, logs = tmp_path / "work", tmp_path / "logs"
    work.mkdir()
    env = iolens_env({**mpi_env, "IOLENS_PROFILE_LIB": str(profile_build.lib), "OMPI_MCA_fcoll": "vulcan"},
                     home=tmp_path)  # fmt: skip
    run = iolens(
        "profile", "--no-report", "--no-store", "--out", str(logs), "--launcher", "mpirun", "--np", "2", "--",
        str(prog), "pieces.dat", "4096", "64", "0.2", "coll", env=env, cwd=work,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    printed = dict(line.split("=") for line in run.stdout.splitlines() if "=" in line)
    writes, passes = int(printed["writes"]), int(printed["passes"])
    assert iolens("db", "import", str(logs), "--db", db_url, env=env).returncode == 0
    out = report(db_url, tmp_path, "profile:1", "stack")

    page = browser.new_page()
    page.goto(out.as_uri())
    shown = page.evaluate(STACKS_JS)
    page.screenshot(path=str(ARTIFACTS / f"report-stack-{_backend(db_url)}.png"), full_page=True)
    page.close()
    path = str(work / "pieces.dat")
    assert [s["path"] for s in shown] == [path]
    rows = shown[0]["rows"]
    layers = [r[0] for r in rows if r[0]]
    assert layers == ["MPI-IO", "POSIX"]
    figures = {(layer, r[1]): r[2] for layer, r in _with_layer(rows)}
    assert figures[("MPI-IO", "writes")].startswith(f"{writes} collective:")
    assert figures[("MPI-IO", "ranks")] == "2 (0, 1)"
    # Open MPI's aggregation: one rank wrote the file for both, in writes larger than the MPI-IO calls'
    assert " by ranks 1 (" in figures[("POSIX", "writes")]
    sentence = shown[0]["sentence"]
    # each rank's 64 pieces of 4 KiB per call; the aggregator's one write of both ranks' pieces per call
    assert sentence.startswith(
        f"{writes} collective MPI-IO writes of 256.00 KiB on average by 2 rank(s) became {passes} POSIX "
        "writes of 512.00 KiB on average by 1 rank(s)"
    )
    assert "collective buffering happened: 1 aggregator rank(s)" in sentence

    # The same sentence in the text report of the logs (both read the report's `layers`).
    text = iolens("profile", "report", str(logs), env={**env, "COLUMNS": "400"})
    assert text.returncode == 0, text.stderr
    assert sentence in " ".join(text.stdout.split())


def _with_layer(rows: list[list[str]]) -> list[tuple[str, list[str]]]:
    """Each row with the layer it belongs to (the layer is named on its first row only)."""
    out, layer = [], ""
    for r in rows:
        layer = r[0] or layer
        out.append((layer, r))
    return out


# Counters the monitor reads (cumulative): a monitoring plot draws their rates (`NAME_per_s`), never them.
COUNTERS = (
    "read_bytes",
    "written_bytes",
    "reads_completed",
    "writes_completed",
    "io_time_ms",
    "ctxt",
    "total_us",
)


def _ior(db: str, out: Path, delay_us: int, size: str, *monitor: str) -> list[str]:
    return [
        sys.executable, "-m", "iolens", "ior", *monitor, "--db", db, "--",
        "-b", size, "-t", "1m", f"--inter-io-delay={delay_us}", "-o", str(out),
    ]  # fmt: skip


def test_two_runs_on_one_host_each_report_shows_its_own_window_and_names_the_other(
    browser: Any, db_url: str, tmp_path: Path, engine: Path
) -> None:
    """Real runs on one host: a node monitor (`iolens monitor --db`, stopped for 3 s during run A), run B
    (`ior --monitor --db`, in the background) and run A (`ior --db`, started while B runs)."""
    env = iolens_env({"IOLENS_BENCH": str(engine)}, home=tmp_path)
    work = Path(tempfile.mkdtemp(prefix="iolens-report-", dir="/var/tmp"))  # a disk, not a tmpfs
    spawn = {"env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True}
    node = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "iolens", "monitor", "--db", db_url, "--interval", "0.2", "--no-live",
         "--out", os.devnull, "--sources", "diskstats,pressure,meminfo,loadavg,stat"],
        **spawn,
    )  # fmt: skip
    procs = [node]
    try:
        time.sleep(1.5)
        b = subprocess.Popen(_ior(db_url, work / "b", 250_000, "16m", "--monitor=2"), **spawn)  # noqa: S603
        procs.append(b)
        time.sleep(1.5)
        a = subprocess.Popen(_ior(db_url, work / "a", 200_000, "12m"), **spawn)  # noqa: S603
        procs.append(a)
        time.sleep(1.0)
        node.send_signal(signal.SIGSTOP)
        stopped = time.time()
        time.sleep(3.0)
        resumed = time.time()
        node.send_signal(signal.SIGCONT)
        assert a.wait(timeout=120) == 0, a.stderr.read() if a.stderr else ""
        assert b.wait(timeout=120) == 0, b.stderr.read() if b.stderr else ""
        time.sleep(1.5)
        node.terminate()
        assert node.wait(timeout=60) == 0, node.stderr.read() if node.stderr else ""
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
        shutil.rmtree(work, ignore_errors=True)

    with Store.open(db_url, create=False) as store:
        both = [queries.get_run(store.db, i) for i in (1, 2)]
        runs = {str(r["command"])[-1]: r for r in both}  # the commands end in -o DIR/a, -o DIR/b
        ra, rb = runs["a"], runs["b"]
        assert ra["id"] == 1 and rb["id"] == 2  # A ended first
        assert ra["started_at"] > rb["started_at"] and ra["ended_at"] < rb["ended_at"]
        # The database holds the node's samples from before A started: the report must leave them out.
        before = queries.samples(
            store.db, rb["started_at"] - 5, ra["started_at"] - 1.5, metrics=["read_bytes_per_s"]
        )
        assert before

    # Run A: the node monitor's samples (A has no --monitor), only A's window, B named, a gap drawn as one.
    result = open_report(
        browser, report(db_url, tmp_path, "1", "run-a"), f"report-overlap-a-{_backend(db_url)}"
    )
    assert_clean(result, min_plots=4)
    text = result["text"]
    assert "Other runs were stored for this host while this one ran" in text
    assert any("run 2 (ior) also ran" in p["labels"] for p in result["plots"])
    assert "taken by other runs' own monitors" in text
    assert "not stored with its own monitor" in text
    monitoring = [p for p in result["plots"] if " on " in p["title"] and p["xtitle"] == "local time"]
    assert monitoring
    lo, hi = ra["started_at"] - 1.0, ra["ended_at"] + 1.0  # the margin: one sampling interval, at least 1 s
    gaps = []
    for plot in monitoring:
        assert plot["ytitle"], plot["title"]  # a unit on every axis
        overlap = [s for s in plot["shapes"] if s["name"] == "overlap: run 2 (ior)"]
        assert len(overlap) == 1 and overlap[0]["t0"] == pytest.approx(lo * 1000, abs=2)
        for trace in plot["series"]:
            assert trace["connectgaps"] is False
            assert not trace["name"].endswith(COUNTERS), trace["name"]  # rates, never cumulative counters
            times = [_epoch(x) for x in trace["x"]]
            assert all(lo - 0.01 <= t <= hi + 0.01 for t in times), (plot["title"], trace["name"])
            gaps += [t for t, y in zip(times, trace["y"], strict=True) if y is None]
    # The node monitor was stopped from `stopped` to `resumed`: every series has its gap there.
    assert gaps and all(stopped - 0.5 <= t <= resumed + 0.5 for t in gaps), (gaps, stopped, resumed)
    disk = [p for p in monitoring if p["title"].startswith("diskstats")]
    assert any(None in t["y"] for p in disk for t in p["series"])
    assert all(p["ytitle"] in ("MiB/s", "GiB/s", "ops/s", "ms/s", "% of time busy", "count") for p in disk)

    # Run B: its own --monitor samples, its own and others' disk I/O per phase, A named.
    result = open_report(
        browser, report(db_url, tmp_path, "2", "run-b"), f"report-overlap-b-{_backend(db_url)}"
    )
    assert_clean(result, min_plots=4)
    assert any("run 1 (ior) also ran" in p["labels"] for p in result["plots"])
    assert "The samples are the run's own" in result["text"]
    assert "write others'" in result["text"] and "clamped at 0" in result["text"]
    split = [p for p in result["plots"] if "the run's and others'" in p["title"]]
    assert len(split) == 2
    for plot in split:
        names = [t["name"] for t in plot["series"]]
        assert names[:3] == ["all disks (node total)", "the run's processes", "others (total − run's, ≥ 0)"]
        assert plot["ytitle"] in ("MiB/s", "GiB/s")
        for total, own, others in zip(*(plot["series"][i]["y"] for i in range(3)), strict=True):
            if total is not None and own is not None:
                assert others == pytest.approx(max(0.0, total - own), abs=1e-9)


def _epoch(x: str) -> float:
    """A plotted time (local, as the report gives it) as Unix seconds."""
    return datetime.strptime(x, "%Y-%m-%d %H:%M:%S.%f").timestamp()
