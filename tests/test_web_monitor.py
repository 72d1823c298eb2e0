"""The staff dashboards against a real `iolens web` on a real SQLite file: monitoring panels (units, rates and
counters apart, gaps, hosts, the time window), top jobs from Lustre job_stats samples and from profiles, the
live view's server-sent events; the store's downsampling on SQLite and PostgreSQL with exact buckets; and
Chromium drawing /monitor and following /live."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from iolens.store import portal_monitor
from iolens.store.records import Sample
from iolens.store.store import Store

from .web_helpers import (
    HOSTILE,
    USER_A,
    Seeded,
    Server,
    fetch,
    job_stats_samples,
    portal,
    seed,
    token,
)

MiB = 1 << 20
GAPPY = "gappy01"
OSS = "oss01"
FIGURE = re.compile(r'<script type="application/json" id="(panel-\d+)-data">(.*?)</script>', re.S)


def add_monitor_content(url: str, root: Path, now: float) -> None:
    """Besides seed(): a node whose samples stop for half an hour (a gap), a node with a hostile name, and a
    Lustre server's job_stats at three times: every count doubled from the first to the second; from the
    second to the third cluster-testjob1's counts rise to three times the file's while testjob2's fall back
    to the file's own (Lustre dropped the job and counted it anew), so both grew by twice the file's."""
    samples = []
    for t in [now - 7200 + 10 * i for i in range(180)] + [now - 3600 + 10 * i for i in range(180)]:
        samples.append(Sample(t, GAPPY, "diskstats", "sdb", "written_bytes_per_s", 50 * MiB))
    for i in range(60):
        samples.append(Sample(now - 600 + 10 * i, HOSTILE, "diskstats", HOSTILE, "read_bytes_per_s", 7 * MiB))
    with Store.open(url) as store:
        store.put_samples(samples, "monitor-test-samples")
    job_stats_samples(
        url, root, OSS,
        [(now - 7000, {}), (now - 5000, {"cluster-testjob1": 2, "testjob2": 2}),
         (now - 3000, {"cluster-testjob1": 3, "testjob2": 1})],
    )  # fmt: skip


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Seeded:
    root = tmp_path_factory.mktemp("monitor")
    out = seed(str(root / "portal.db"), root)
    add_monitor_content(out.url, root, out.t1)
    return out


@pytest.fixture(scope="module")
def tokens(seeded: Seeded) -> dict[str, str]:
    return {"staff": token(seeded.url, "boss", staff=True), "user": token(seeded.url, USER_A)}


@pytest.fixture(scope="module")
def server(seeded: Seeded, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with portal(seeded.url, log_dir=tmp_path_factory.mktemp("logs")) as srv:
        yield srv


def cells(body: str, table: str) -> list[list[str]]:
    part = body.split(f'id="{table}"')[1].split("</table>")[0]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", tr) for tr in re.findall(r"<tr>(.*?)</tr>", part)]
    return [r for r in rows if r]


def page(server: Server, tokens: dict[str, str], path: str, status: int = 200) -> str:
    code, _, body = fetch(server.base + path, tokens["staff"])
    assert code == status, (path, code, body[-500:])
    return body


def figures(body: str) -> list[dict[str, Any]]:
    return [json.loads(text) for _, text in FIGURE.findall(body)]


def unit(fig: dict[str, Any]) -> str:
    return str(fig["layout"]["yaxis"]["title"]["text"])


def names(figs: list[dict[str, Any]]) -> set[str]:
    return {t["name"] for f in figs for t in f["data"]}


# --- the store's downsampling, on both backends ------------------------------------------------------------


def test_buckets_are_computed_by_the_database_exactly(db_url: str) -> None:
    # a: every 10 s from 1000 to 1090 (values 1..10), none from 1100 to 1190, 1200..1290 (values 21..30)
    a = [
        Sample(t, "h1", "diskstats", "vda", "read_bytes_per_s", (t - 1000) / 10 + 1)
        for t in range(1000, 1100, 10)
    ]
    a += [
        Sample(t, "h1", "diskstats", "vda", "read_bytes_per_s", (t - 1000) / 10 + 1)
        for t in range(1200, 1300, 10)
    ]
    b = [Sample(t, "h1", "diskstats", "vdb", "read_bytes_per_s", 100.0) for t in range(1000, 1300, 10)]
    counter = [Sample(1000.0, "h1", "diskstats", "vda", "read_bytes", 5.0)]
    gauge = [Sample(1000.0, "h2", "meminfo", "", "dirty_bytes", 4096.0)]
    odd = [Sample(1000.0, "h2", "diskstats", "100%_x", "read_bytes_per_s", 1.0)]
    with Store.open(db_url) as store:
        store.put_samples(a + b + counter + gauge + odd, "exact")
        db = store.db
        assert portal_monitor.hosts(db) == ["h1", "h2"]
        assert portal_monitor.sources(db, ["h2"]) == ["diskstats", "meminfo"]
        rates = portal_monitor.find_series(db, ["h1"], "rates")
        assert [(s.target, s.metric) for s in rates] == [
            ("vda", "read_bytes_per_s"),
            ("vdb", "read_bytes_per_s"),
        ]
        assert [s.metric for s in portal_monitor.find_series(db, ["h1"], "counters")] == ["read_bytes"]
        assert [s.metric for s in portal_monitor.find_series(db, ["h1", "h2"], "gauges")] == ["dirty_bytes"]
        # the text is matched literally: `%` and `_` are no wildcards
        assert [s.target for s in portal_monitor.find_series(db, ["h2"], match="0%_")] == ["100%_x"]
        assert portal_monitor.find_series(db, ["h2"], match="0%x") == []
        sa, sb = rates[0].id, rates[1].id
        assert portal_monitor.sampling_interval(db, [sa, sb], 1000.0, 1300.0) == 10.0
        assert portal_monitor.sampling_interval(db, [sa], 1285.0, 1295.0) is None  # one sample only
        assert portal_monitor.sampling_interval(db, [sa, sb], 1100.0, 1200.0) == 10.0  # a's gap: b's
        got = portal_monitor.buckets(db, [sa, sb], 1000.0, 1300.0, 30.0)
        assert [(k.b, k.mean, k.peak, k.count) for k in got[sa]] == [
            (0, 2.0, 3.0, 3), (1, 5.0, 6.0, 3), (2, 8.0, 9.0, 3), (3, 10.0, 10.0, 1),
            (6, 21.0, 21.0, 1), (7, 23.0, 24.0, 3), (8, 26.0, 27.0, 3), (9, 29.0, 30.0, 3),
        ]  # fmt: skip
        assert [k.b for k in got[sb]] == list(range(10)) and {k.mean for k in got[sb]} == {100.0}
        # a window that starts inside a bucket's worth of samples: buckets count from its start
        late = portal_monitor.buckets(db, [sa], 1015.0, 1100.0, 30.0)[sa]
        assert [(k.b, k.mean) for k in late] == [(0, 4.0), (1, 7.0), (2, 9.5)]
        # [t0, t1): the sample at t1 is not in
        assert portal_monitor.buckets(db, [sa], 1000.0, 1290.0, 30.0)[sa][-1] == portal_monitor.Bucket(
            9, 28.5, 29.0, 2
        )
        assert portal_monitor.buckets(db, [sa], 2000.0, 3000.0, 30.0) == {}


def test_top_jobs_from_job_stats_and_profiles_on_both_backends(db_url: str, tmp_path: Path) -> None:
    now = time.time()
    out = seed(db_url, tmp_path, now)
    add_monitor_content(db_url, tmp_path, now)
    with Store.open(db_url) as store:
        rows = portal_monitor.job_stats_top(store.db, now - 86400, now, "bytes")
        got = {r["job"]: r for r in rows}
        assert [r["job"] for r in rows] == ["cluster-testjob1", "testjob2"]
        one, two = got["cluster-testjob1"], got["testjob2"]
        # twice the files' counts (tests/data/lustre/ost-job_stats-2.12.txt and mdt-job_stats-2.12.txt)
        assert (one["bytes_written"], one["bytes_read"], one["writes"], one["reads"]) == (
            2 * 26214400,
            2 * 4096,
            50,
            2,
        )
        assert (two["bytes_written"], two["bytes_read"]) == (2 * 51200, 2 * 1024)
        # metadata: the MDT's operations and the OST's punch
        assert (one["meta_ops"], two["meta_ops"]) == (2 * 654, 2 * 139)
        assert (one["servers"], one["targets"]) == (1, 2)
        assert (one["t_first"], one["t_last"]) == (pytest.approx(now - 7000), pytest.approx(now - 3000))
        by_meta = portal_monitor.job_stats_top(store.db, now - 86400, now, "meta", limit=1)
        assert [r["job"] for r in by_meta] == ["cluster-testjob1"]
        # a window holding only the last two samples: the second job's fall counts as its rise
        last = {r["job"]: r for r in portal_monitor.job_stats_top(store.db, now - 6000, now, "bytes")}
        assert (
            last["cluster-testjob1"]["bytes_written"] == 26214400
            and last["testjob2"]["bytes_written"] == 51200
        )
        assert portal_monitor.job_stats_top(store.db, now - 2000, now) == []
        profiles = portal_monitor.profile_top(store.db, now - 86400, now, "bytes")
        big = out.jobs[USER_A]
        assert sorted(r["id"] for r in profiles[:2]) == sorted(big)
        assert profiles[0]["bytes_read"] + profiles[0]["bytes_written"] == 96 * 3 * 8 * MiB
        ops = portal_monitor.profile_top(store.db, now - 86400, now, "ops")
        assert ops[0]["reads"] + ops[0]["writes"] == 4 * 96  # the other user's job has four files
        # seed(): each user's first job started 2 h before `now`, the second 1 h before, both ran 25 s
        recent = portal_monitor.profile_top(store.db, now - 3600 - 10, now)
        assert {r["id"] for r in recent} == {ids[1] for ids in out.jobs.values()}


# --- the pages ---------------------------------------------------------------------------------------------


def test_monitor_panels_one_unit_each_rates_apart_from_counters(
    server: Server, tokens: dict[str, str]
) -> None:
    body = page(server, tokens, "/monitor?host=node01")
    figs = figures(body)
    assert sorted(unit(f) for f in figs) == ["MiB/s", "ops/s"]
    assert names(figs) == {"vda/read_bytes_per_s", "busy_per_s"}
    for f in figs:
        assert all(t["connectgaps"] is False for t in f["data"])
        # the default window, 6 h, in buckets of 36 s: no line longer than 600 points
        assert all(len(t["y"]) <= 600 and "x" not in t for t in f["data"])
    disk = next(f for f in figs if unit(f) == "MiB/s")
    # seed(): node01's rate is 1e6 × (1..3.x): ≈ 1-4 MB/s, drawn in MiB/s
    ys = [y for y in disk["data"][0]["y"] if y is not None]
    assert 0.9 < min(ys) and max(ys) < 4.0
    counters = figures(page(server, tokens, "/monitor?host=node01&kind=counters"))
    assert names(counters) == {"vda/read_bytes"} and [unit(f) for f in counters] == ["GiB"]
    assert "No levels (gauges) of node01" in page(server, tokens, "/monitor?host=node01&kind=gauges")
    only_cpu = figures(page(server, tokens, "/monitor?host=node01&source=cpu"))
    assert names(only_cpu) == {"busy_per_s"}
    assert names(figures(page(server, tokens, "/monitor?host=node01&match=vda"))) == {"vda/read_bytes_per_s"}


def test_host_selection(server: Server, tokens: dict[str, str]) -> None:
    def disk_mean(path: str) -> float:
        figs = figures(page(server, tokens, path))
        ys = [y for f in figs if unit(f) == "MiB/s" for t in f["data"] for y in t["y"] if y is not None]
        return sum(ys) / len(ys)

    one, two = disk_mean("/monitor?host=node01"), disk_mean("/monitor?host=node02")
    assert two - one == pytest.approx(1e6 / MiB, rel=0.05)  # node02's rate is 1 MB/s more
    both = figures(page(server, tokens, "/monitor?host=node01&host=node02"))
    assert names(both) == {
        f"{h}/{n}" for h in ("node01", "node02") for n in ("vda/read_bytes_per_s", "busy_per_s")
    }
    assert names(figures(page(server, tokens, "/monitor?host=node01,node02"))) == names(both)
    # the hosts that have series are offered, the chosen ones selected
    body = page(server, tokens, "/monitor?host=node02")
    assert '<option value="node02" selected>' in body and '<option value="node01" >' in body


def test_lines_beyond_the_limit_are_summed_as_other(server: Server, tokens: dict[str, str]) -> None:
    figs = figures(page(server, tokens, "/monitor?host=node01,node02&source=diskstats&lines=1"))
    assert len(figs) == 1
    traces = figs[0]["data"]
    assert [t["name"] for t in traces] == ["node02/vda/read_bytes_per_s", "other (1 series, summed)"]
    # the other line is node01's own here: 1 MB/s less than node02's
    pairs = zip(traces[0]["y"], traces[1]["y"], strict=True)
    difference = [a - b for a, b in pairs if a is not None and b is not None]
    assert len(difference) > 100 and all(d == pytest.approx(1e6 / MiB, rel=1e-4) for d in difference)
    assert "1 largest of 2 series" in figs[0]["layout"]["title"]["text"]


def test_a_gap_in_the_samples_is_a_gap_in_the_line(
    server: Server, tokens: dict[str, str], seeded: Seeded
) -> None:
    figs = figures(page(server, tokens, f"/monitor?host={GAPPY}&from=now-3h"))
    (trace,) = figs[0]["data"]
    ys = trace["y"]
    holes = [i for i, y in enumerate(ys) if y is None]
    # one run of empty buckets inside the line, as long as the half hour without samples
    assert (
        holes and 0 < holes[0] and holes[-1] < len(ys) - 1 and holes == list(range(holes[0], holes[-1] + 1))
    )
    assert len(holes) * trace["dx"] / 1000 == pytest.approx(1800, abs=2 * trace["dx"] / 1000)
    start = datetime.strptime(trace["x0"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    hole_t = start + holes[0] * trace["dx"] / 1000  # the first empty bucket's middle
    assert hole_t == pytest.approx(seeded.t1 - 5400, abs=2 * trace["dx"] / 1000)  # add_monitor_content's
    assert all(y == pytest.approx(50.0) for y in ys if y is not None)
    # evenly sampled data has no gap at any window (buckets span at least 1.5 sampling intervals)
    for window in ("now-10m", "now-1h", "now-3h", "now-24h"):
        for f in figures(page(server, tokens, f"/monitor?host=node01&from={window}")):
            assert all(None not in t["y"] for t in f["data"]), window


def test_the_time_window_changes_what_is_shown(
    server: Server, tokens: dict[str, str], seeded: Seeded
) -> None:
    empty = page(server, tokens, "/monitor?host=node01&from=now-30d&to=now-7d")
    assert figures(empty) == [] and 'id="no-samples"' in empty
    short = figures(page(server, tokens, "/monitor?host=node01&from=now-1h"))[0]
    long = figures(page(server, tokens, "/monitor?host=node01&from=now-6h"))[0]
    assert short["data"][0]["x0"] > long["data"][0]["x0"]  # the 6 h window reaches back to the first samples
    assert short["layout"]["xaxis"]["range"][0] > long["layout"]["xaxis"]["range"][0]
    # an absolute window (the picker's fields, UTC) of the seed's first half hour
    t0 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seeded.t0))
    t1 = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seeded.t0 + 1800))
    fig = figures(page(server, tokens, f"/monitor?host=node01&from={t0}&to={t1}"))[0]
    assert fig["layout"]["xaxis"]["range"][0].startswith(t0.replace("T", " "))
    # the picker keeps the other choices
    body = page(server, tokens, "/monitor?host=node02&kind=counters")
    assert re.search(r'data-preset="1h"', body) and "host=node02" in body and "kind=counters" in body


def test_top_jobs_page(server: Server, tokens: dict[str, str], seeded: Seeded) -> None:
    body = page(server, tokens, "/top")
    rows = cells(body, "top-lustre")
    assert [(r[0], r[1], r[2], r[3], r[5]) for r in rows] == [
        ("cluster-testjob1", "8.00 KiB", "50.00 MiB", "52", "1,308"),
        ("testjob2", "2.00 KiB", "100.00 KiB", "52", "278"),
    ]
    profiles = body.split('id="top-profiles"')[1].split("</table>")[0]
    linked = [int(x) for x in re.findall(r'href="/jobs/(\d+)"', profiles)]
    assert linked[:2] in (seeded.jobs[USER_A], seeded.jobs[USER_A][::-1])
    assert sorted(linked) == sorted(j for ids in seeded.jobs.values() for j in ids)
    assert "<script>window" not in body and 'onerror="window' not in body
    by_meta = page(server, tokens, "/top?by=meta&limit=1")
    assert by_meta.count("<tr><td>") == 1 + 1  # one job_stats row, one profile row
    nothing = page(server, tokens, "/top?from=now-30d&to=now-7d")
    assert 'id="no-lustre"' in nothing and 'id="no-profiles"' in nothing


@pytest.mark.parametrize(
    "path, name",
    [
        ("/monitor?host=nope", "host"),
        ("/monitor?kind=levels", "kind"),
        ("/monitor?lines=0", "lines"),
        ("/monitor?lines=x", "lines"),
        ("/monitor?source=nope&host=node01", "source"),
        ("/monitor?from=yesterday", "from"),
        ("/monitor?from=now&to=now-1h", "from"),
        ("/monitor?match=%07", "match"),
        ("/top?by=size", "by"),
        ("/top?limit=100000", "limit"),
        ("/top?to=2026-13-40", "to"),
        ("/live?host=nope", "host"),
        ("/live/stream", "host"),
        ("/live/stream?host=nope", "host"),
        ("/live/stream?host=node01&since=soon", "since"),
    ],
)
def test_bad_parameters_are_a_400_naming_them(
    server: Server, tokens: dict[str, str], path: str, name: str
) -> None:
    code, _, body = fetch(server.base + path, tokens["staff"])
    assert code == 400 and f"{name}: " in body and "Traceback" not in body


def test_users_get_404_for_every_staff_page(server: Server, tokens: dict[str, str]) -> None:
    for path in ("/monitor", "/monitor?host=node01", "/top", "/top?by=meta", "/live", "/live?host=node01",
                 "/live/stream?host=node01"):  # fmt: skip
        code, headers, body = fetch(server.base + path, tokens["user"])
        assert code == 404 and "No such page" in body, path
        assert "event-stream" not in headers.get("content-type", "")


def test_hostile_host_names_are_text(server: Server, tokens: dict[str, str]) -> None:
    from urllib.parse import quote

    body = page(server, tokens, f"/monitor?host={quote(HOSTILE)}")
    assert "<script>window.__pwned" not in body and 'onerror="window' not in body
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body
    live = page(server, tokens, f"/live?host={quote(HOSTILE)}")
    assert "<script>window.__pwned" not in live


# --- the live stream ---------------------------------------------------------------------------------------


def _read_event(resp: Any, deadline: float) -> dict[str, Any]:
    """The next `data:` event of an open event stream (with its id), skipping comments."""
    event: dict[str, Any] = {}
    while time.monotonic() < deadline:
        line = resp.readline().decode()
        if line.startswith("id: "):
            event["id"] = line[4:].strip()
        elif line.startswith("data: "):
            event["data"] = json.loads(line[6:])
        elif line == "\n" and "data" in event:
            return event
    raise AssertionError("no event in time")


def _open_stream(base: str, tok: str, path: str, headers: dict[str, str] | None = None) -> Any:
    req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {tok}", **(headers or {})})
    return urllib.request.urlopen(req, timeout=20)


def test_the_stream_sends_samples_stored_after_it_started(
    seeded: Seeded, tokens: dict[str, str], tmp_path: Path
) -> None:
    """Two workers: the stream keeps no state beyond its connection, and a reconnect anywhere goes on."""
    with portal(seeded.url, "--workers", "2", log_dir=tmp_path) as srv:
        with _open_stream(srv.base, tokens["staff"], "/live/stream?host=node02") as resp:
            assert resp.headers["content-type"].startswith("text/event-stream")
            first = resp.readline().decode()
            assert first.startswith("retry: ")
            assert resp.readline().decode().startswith(": samples of")
            t_new = time.time() + 5.0
            with Store.open(seeded.url) as store:
                store.put_samples(
                    [Sample(t_new, "node02", "diskstats", "vda", "read_bytes_per_s", 123.5 * MiB)]
                )
            event = _read_event(resp, time.monotonic() + 20)
        assert float(event["id"]) == t_new
        [[sid, t, value]] = event["data"]["samples"]
        assert (t, value) == (t_new, 123.5 * MiB)
        label = event["data"]["labels"][str(sid)]
        assert label == {"source": "diskstats", "name": "vda/read_bytes_per_s", "unit": "MiB/s", "div": MiB}
        # a reconnect with the last id it saw gets what came after it, and labels again
        with _open_stream(srv.base, tokens["staff"], "/live/stream?host=node02",
                          {"Last-Event-ID": repr(t_new - 1e-3)}) as resp:  # fmt: skip
            again = _read_event(resp, time.monotonic() + 20)
        assert again["data"]["samples"] == [[sid, t_new, 123.5 * MiB]] and str(sid) in again["data"]["labels"]
    assert "Traceback" not in srv.log.read_text()


# --- in Chromium -------------------------------------------------------------------------------------------


def test_chromium_draws_the_monitor_and_follows_the_live_view(
    browser: Any,  # noqa: F811 - the fixture imported above
    server: Server,
    tokens: dict[str, str],
    seeded: Seeded,
) -> None:
    ctx = browser.new_context(extra_http_headers={"Authorization": f"Bearer {tokens['staff']}"})
    pg = ctx.new_page()
    errors: list[str] = []
    requests: list[str] = []

    def console(m: Any) -> None:
        if m.type == "error":
            errors.append(f"{m.text} at {m.location}")

    pg.on("console", console)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("request", lambda r: requests.append(r.url))

    def points() -> list[int]:
        pg.wait_for_selector('div[data-figure][data-drawn="1"]', timeout=30_000)
        return pg.evaluate(
            "Array.from(document.querySelectorAll('div[data-figure]')).map("
            "d => d.data.reduce((n, t) => n + t.y.filter(y => y !== null).length, 0))"
        )

    try:
        pg.goto(server.base + "/monitor?host=node01&from=now-6h")
        before = points()
        assert len(before) == 2 and all(n > 0 for n in before)
        assert pg.locator(".main-svg .js-line").count() >= 2
        pg.click('a[data-preset="1h"]')
        pg.wait_for_url(re.compile(r"from=now-1h"))
        after = points()
        assert len(after) == 2 and sum(after) < sum(before)
        # a hostile host's name is shown as text and runs nothing
        pg.select_option("#host-select", [HOSTILE])
        pg.click("#monitor-filters button[type=submit]")
        pg.wait_for_selector('div[data-figure][data-drawn="1"]', timeout=30_000)
        assert pg.evaluate("window.__pwned") is None
        assert HOSTILE.replace("\x07", "")[:20] in pg.inner_text("#host-select")

        pg.goto(server.base + "/live?host=node01")
        pg.wait_for_selector('#live-plot[data-drawn="1"]', timeout=30_000)
        pg.wait_for_selector("#live-status:text-is('live')", timeout=20_000)
        t_new = time.time() + 60
        with Store.open(seeded.url) as store:
            store.put_samples([Sample(t_new, "node01", "diskstats", "vda", "read_bytes_per_s", 321.5 * MiB)])
        # (waits by selector: a waited-for script would be evaluated as a string, which the CSP forbids)
        pg.wait_for_selector("tr[data-series] td.live-value:text-is('321.5')", timeout=20_000)
        plotted = pg.evaluate("document.getElementById('live-plot').data[0].y.slice(-1)[0]")
        assert plotted == pytest.approx(321.5)
        assert pg.inner_text("#live-last") == time.strftime("%H:%M:%S", time.gmtime(t_new))
        shots = Path(__file__).resolve().parent.parent / "build" / "test-artifacts"
        shots.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(shots / "portal-live.png"), full_page=True)
        pg.goto(server.base + "/monitor?host=node01,node02")
        points()
        pg.screenshot(path=str(shots / "portal-monitor.png"), full_page=True)
    finally:
        ctx.close()
    assert errors == []
    assert all(u.startswith(server.base) for u in requests), [
        u for u in requests if not u.startswith(server.base)
    ]


def test_the_stream_ends_when_the_client_goes_away(
    seeded: Seeded, tokens: dict[str, str], tmp_path: Path
) -> None:
    """Closing streams leaves the server serving (its connections were given back); a stop is quick."""
    with portal(seeded.url, log_dir=tmp_path) as srv:
        for _ in range(12):  # more than the pool's connections
            resp = _open_stream(srv.base, tokens["staff"], "/live/stream?host=node01")
            resp.readline()
            resp.close()
        done = threading.Event()

        def ask() -> None:
            fetch(srv.base + "/monitor?host=node01", tokens["staff"])
            done.set()

        threading.Thread(target=ask, daemon=True).start()
        assert done.wait(20)
        started = time.monotonic()
        srv.proc.terminate()
        srv.proc.wait(timeout=30)
        assert time.monotonic() - started < 4
    assert "Traceback" not in srv.log.read_text()


def test_an_empty_database_says_there_is_nothing_yet(tmp_path: Path) -> None:
    url = str(tmp_path / "empty.db")
    Store.open(url).close()
    staff = token(url, "boss", staff=True)
    with portal(url, log_dir=tmp_path) as srv:
        for path, note in (("/monitor", "No monitoring samples are stored"), ("/top", 'id="no-lustre"'),
                           ("/live", "No monitoring samples are stored")):  # fmt: skip
            code, _, body = fetch(srv.base + path, staff)
            assert code == 200 and note in body, path
