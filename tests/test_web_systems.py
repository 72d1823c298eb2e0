"""The staff's benchmark pages against a real `iolens web` server on a real SQLite file (the store's
questions on PostgreSQL too): the systems list, a system's history with its regressions and its IO500 list,
runs, comparisons and the refusal of mixed page-cache modes, hostile system names, who may see them, bad
parameters; and the pages in Chromium."""

from __future__ import annotations

import copy
import json
import re
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from iolens.store import portal_bench, queries
from iolens.store.importer import import_paths
from iolens.store.store import Store

from .conftest import sample_document
from .db_helpers import IO500_REFERENCE, iolens_env, ior_document, tiny_io500
from .web_helpers import HOSTILE, USER_A, Seeded, close_contexts, fetch, portal, seed, token

CACHE_SYS = "cache-modes"  # one config, runs of both page-cache modes
IO500_SYS = "io500-sys"  # the IO500 app's reference result (INVALID), a valid copy of it, a tiny iolens run
SLASH_SYS = "a/b%2Fc d"  # a name that is not one path segment, with a percent sign
GIB = 1024**3


@dataclass
class Bench:
    seeded: Seeded
    cache_runs: list[int] = field(default_factory=list)  # evict ×4, keep, evict (the last regresses)
    io500_invalid: int = 0
    io500_valid: int = 0
    slash_run: int = 0
    tiny_run: int | None = None

    @property
    def url(self) -> str:
        return self.seeded.url


def _stored(outcomes: list[Any]) -> list[int]:
    for o in outcomes:
        assert o.ok and o.stored is not None, o.error
    return [o.stored.id for o in outcomes]


def fill(url: str, root: Path) -> Bench:
    """seed()'s content, and runs of three more systems."""
    bench = Bench(seed(url, root))
    src = root / "bench-docs"
    src.mkdir()
    with Store.open(url) as store:
        for i, (keep, gib) in enumerate([(False, 1.0)] * 4 + [(True, 5.0), (False, 0.5)]):
            doc = copy.deepcopy(sample_document())
            doc["config"].pop("keep-cache", None)  # one config hash: only the mode tells them apart
            doc["phases"][1]["cache"]["policy"] = "keep" if keep else "evict"
            doc["phases"][1]["bw_bytes_per_s"] = gib * GIB
            doc["summary"][1]["bw_mean_bytes_per_s"] = gib * GIB
            doc["started_at"] = f"2026-05-0{i + 1}T10:00:00Z"
            (src / f"cache-{i}.json").write_text(json.dumps(doc))
            bench.cache_runs += _stored(import_paths(store, [str(src / f"cache-{i}.json")], CACHE_SYS))
        # The reference result is INVALID (a short stonewall); the same result without its marks is valid.
        valid = root / "io500-valid"
        valid.mkdir()
        for name in ("result.txt", "result_summary.txt", "config.ini"):
            text = (IO500_REFERENCE / name).read_text()
            (valid / name).write_text(text.replace(" [INVALID]", "").replace("ERROR INVALID", "note"))
        bench.io500_invalid, bench.io500_valid = _stored(
            import_paths(store, [str(IO500_REFERENCE), str(valid)], IO500_SYS)
        )
        (src / "slash.json").write_text(json.dumps(ior_document(GIB, started="2026-05-02T10:00:00Z")))
        (bench.slash_run,) = _stored(import_paths(store, [str(src / "slash.json")], SLASH_SYS))
    return bench


def figures(body: str) -> dict[str, dict[str, Any]]:
    """The page's plotly figures by element id."""
    return {
        m.group(1): json.loads(m.group(2))
        for m in re.finditer(r'<script type="application/json" id="([\w-]+)-data">(.*?)</script>', body, re.S)
    }


def system_path(name: str) -> str:
    return "/systems/" + urllib.parse.quote(name, safe="")


# --- the store's questions, on SQLite and PostgreSQL ----------------------------------------------------


def test_store_answers_on_both_backends(db_url: str, tmp_path: Path) -> None:
    bench = fill(db_url, tmp_path)
    with Store.open(db_url, create=False) as store:
        db = store.db
        overview = {r["name"]: r for r in portal_bench.systems_overview(db)}
        assert set(overview) == {"lustre-prod", HOSTILE, CACHE_SYS, IO500_SYS, SLASH_SYS}
        prod = overview["lustre-prod"]
        assert (prod["runs"], prod["profiles"], prod["io500_score"]) == (4, 4, None)
        assert prod["last_run"] == max(r["started_at"] for r in queries.list_runs(db, system="lustre-prod"))
        io5 = overview[IO500_SYS]
        assert io5["runs"] == 2 and io5["io500_score"] == pytest.approx(31.923448)
        assert io5["io500_run"] in (bench.io500_valid, bench.io500_invalid)
        assert overview[HOSTILE]["profiles"] == 0

        with pytest.raises(queries.NotFound):
            portal_bench.system(db, "no-such-system")
        with pytest.raises(queries.NotFound):
            portal_bench.system(db, "nul\x00name")
        sys_id = portal_bench.system(db, IO500_SYS)["id"]
        rows, total = portal_bench.io500_runs(db, sys_id, 1, 0)
        assert total == 2 and len(rows) == 1
        rows += portal_bench.io500_runs(db, sys_id, 1, 1)[0]
        by_id = {r["id"]: r for r in rows}
        assert by_id[bench.io500_valid]["valid"] is True and by_id[bench.io500_invalid]["valid"] is False
        for r in rows:
            assert r["bw"] == pytest.approx(2.50884) and r["md"] == pytest.approx(406.206294)
            assert r["cache_mode"] == "keep"

        phases = portal_bench.main_phases(db, portal_bench.system(db, "lustre-prod")["id"])
        assert [(p["tool"], p["name"], p["runs"]) for p in phases] == [
            ("ior", "write", 4),
            ("ior", "read", 4),
        ]

        page, total = portal_bench.run_list(db, None, None, 5, 0)
        assert total == 8 + 6 + 2 + 1 and len(page) == 5
        starts = [r["started_at"] for r in page]
        assert starts == sorted(starts, reverse=True)
        page, total = portal_bench.run_list(db, HOSTILE, "ior", 50, 0)
        assert total == 4 and {r["system"] for r in page} == {HOSTILE}
        assert portal_bench.run_list(db, "nobody", None, 50, 0) == ([], 0)
        assert portal_bench.tools(db) == ["io500", "ior"]


# --- the pages, on a real server -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory, engine: Path) -> Bench:
    root = tmp_path_factory.mktemp("bench-portal")
    b = fill(str(root / "portal.db"), root)
    # A real tiny IO500 run of this iolens, stored on the IO500 system as it ran (--db).
    env = iolens_env({"IOLENS_BENCH": str(engine)}, home=root)
    run_root = root / "tiny"
    run_root.mkdir()
    r, _ = tiny_io500(run_root, "--db", b.url, "--system", IO500_SYS, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    with Store.open(b.url, create=False) as store:
        (latest,) = queries.list_runs(store.db, system=IO500_SYS, limit=1)
    assert latest["origin"] == "iolens"
    b.tiny_run = int(latest["id"])
    return b


@pytest.fixture(scope="module")
def server(bench: Bench, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with portal(bench.url, log_dir=tmp_path_factory.mktemp("bench-portal-log")) as srv:
        yield srv
    assert "Traceback" not in srv.log.read_text()


@pytest.fixture(scope="module")
def staff(bench: Bench) -> str:
    return token(bench.url, "boss", staff=True)


def get(server: Any, path: str, tok: str) -> tuple[int, str]:
    status, _, body = fetch(server.base + path, tok)
    return status, body


def test_systems_list_counts_and_links(bench: Bench, server: Any, staff: str) -> None:
    status, body = get(server, "/systems", staff)
    assert status == 200
    rows = re.findall(r'<tr><td><a href="([^"]+)">(.*?)</a></td>.*?</tr>', body, re.S)
    links = dict((name, href) for href, name in rows)
    assert links["lustre-prod"] == "/systems/lustre-prod"
    assert links["a/b%2Fc d"] == "/systems/a%2Fb%252Fc%20d"
    row = re.search(r"<tr><td><a href=\"/systems/io500-sys\">.*?</tr>", body, re.S)
    assert row
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    assert cells[3].endswith(">3</a>") and cells[4] == "0"
    # the latest IO500 score, with its run and that run's validity as a word
    assert re.search(r'<a href="/runs/\d+">run \d+</a> \((valid|INVALID)\)', row.group(0))


def test_regressions_are_marked_in_the_plots_and_the_table(bench: Bench, server: Any, staff: str) -> None:
    status, body = get(server, "/systems/lustre-prod", staff)
    assert status == 200
    last = bench.seeded.runs[3]  # the seed's last run of lustre-prod drops bandwidth by 45%
    figs = figures(body)
    assert len(figs) == 2  # write and read
    for fig in figs.values():
        marks = [t for t in fig["data"] if t["name"] == "regression"]
        assert len(marks) == 1 and marks[0]["text"] == [f"run {last}: regression"]
        assert marks[0]["marker"]["color"] == "#d62728"
        (line,) = [t for t in fig["data"] if t["name"] != "regression"]
        assert len(line["y"]) == 4 and line["y"][-1] == pytest.approx(line["y"][0] * 0.55)
    flagged = re.findall(r'<tr class="regression">(.*?)</tr>', body, re.S)
    assert len(flagged) == 2 and all(f'href="/runs/{last}"' in f and "REGRESSION" in f for f in flagged)
    assert "-45.0%" in flagged[0] and "2 regressions" in body


def test_runs_of_each_cache_mode_are_a_history_line_of_their_own(
    bench: Bench, server: Any, staff: str
) -> None:
    status, body = get(server, system_path(CACHE_SYS), staff)
    assert status == 200
    (read,) = [f for f in figures(body).values() if "read" in f["layout"]["title"]["text"]]
    lines = {t["name"]: t for t in read["data"]}
    evict, keep = lines["read (evict cache mode)"], lines["read (keep cache mode)"]
    assert [int(t.split()[1]) for t in evict["text"]] == [bench.cache_runs[i] for i in (0, 1, 2, 3, 5)]
    assert keep["text"] == [f"run {bench.cache_runs[4]}"]
    assert lines["regression"]["text"] == [f"run {bench.cache_runs[5]}: regression"]
    flagged = re.findall(r'<tr class="regression">(.*?)</tr>', body, re.S)
    assert len(flagged) == 1 and "evict" in flagged[0] and "read" in flagged[0]


def test_io500_list_says_valid_and_invalid(bench: Bench, server: Any, staff: str) -> None:
    status, body = get(server, system_path(IO500_SYS), staff)
    assert status == 200
    section = body.split('id="io500"', 1)[1]
    rows = {
        int(m.group(1)): m.group(0)
        for m in re.finditer(r'<tr><td><a href="/runs/(\d+)">run \d+</a></td>.*?</tr>', section, re.S)
    }
    assert set(rows) == {bench.io500_valid, bench.io500_invalid, bench.tiny_run}
    word = {rid: re.findall(r'<td class="validity[^"]*">(\w+)</td>', row) for rid, row in rows.items()}
    assert word == {
        bench.io500_valid: ["valid"],
        bench.io500_invalid: ["INVALID"],
        bench.tiny_run: ["INVALID"],
    }
    assert "2.509" in rows[bench.io500_valid] and "406.206" in rows[bench.io500_valid]
    # the IO500 score, BW and MD over time: the app's (keep) and iolens's (evict) runs on lines of their own
    figs = figures(body)
    titles = [f["layout"]["title"]["text"] for f in figs.values()]
    assert [t.split(":")[0] for t in titles] == ["io500 score", "io500 bw", "io500 md"]
    score = next(iter(figs.values()))
    modes = sorted(t["name"].rsplit("(", 1)[1] for t in score["data"])
    assert modes == ["evict cache mode)", "keep cache mode)"]


def test_io500_list_is_paged(bench: Bench, server: Any, staff: str) -> None:
    status, body = get(server, system_path(IO500_SYS) + "?page=1", staff)
    assert status == 200 and "page 1 of 1" in body and "next</a>" not in body
    status, body = get(server, system_path(IO500_SYS) + "?page=2", staff)
    assert status == 200 and "page 2 of 1" in body and "No runs on this page" in body
    assert f'href="{system_path(IO500_SYS)}?page=1">previous</a>' in body


def test_run_page_is_the_report_inside_the_portal(bench: Bench, server: Any, staff: str) -> None:
    run = bench.seeded.runs[3]
    status, body = get(server, f"/runs/{run}", staff)
    assert status == 200
    assert f"iolens run {run}: ior on lustre-prod" in body and "<h2>Phases</h2>" in body
    assert '<a class="sub-link" href="/systems/lustre-prod">' in body
    figs = figures(body)
    assert len(figs) >= 3 and all(f["data"] for f in figs.values())
    assert "<script>" not in body.replace("<script src=", "")  # the report's inline script is not there


def test_runs_list_filters_and_pages(bench: Bench, server: Any, staff: str) -> None:
    status, body = get(server, "/runs?tool=io500", staff)
    assert status == 200
    ids = {int(i) for i in re.findall(r'<td><a href="/runs/(\d+)">', body)}
    assert ids == {bench.io500_valid, bench.io500_invalid, bench.tiny_run}
    query = urllib.parse.urlencode({"system": HOSTILE})
    status, body = get(server, "/runs?" + query, staff)
    ids = {int(i) for i in re.findall(r'<td><a href="/runs/(\d+)">', body)}
    assert status == 200 and ids == set(bench.seeded.runs[4:])
    status, body = get(server, "/runs?page=2", staff)  # 18 runs: one page of 50
    assert status == 200 and "page 2 of 1" in body and not re.findall(r'<td><a href="/runs/(\d+)">', body)


def test_compare_shows_ratios_and_what_differs(bench: Bench, server: Any, staff: str) -> None:
    a, b = bench.seeded.runs[0], bench.seeded.runs[3]
    status, body = get(server, f"/compare?runs={a},{b}", staff)
    assert status == 200
    rows = {m.group(1): m.group(0) for m in re.finditer(r"<tr><td>(write|read)</td>.*?</tr>", body, re.S)}
    assert "×0.550" in rows["write"] and "×0.550" in rows["read"]
    assert "2.000 GiB/s" in rows["write"] and "1.100 GiB/s" in rows["write"]
    fig = figures(body)["ratios"]
    assert fig["data"][0]["y"] == pytest.approx([0.55, 0.55])
    # runs of two systems: the system differs
    status, body = get(server, f"/compare?runs={a},{bench.slash_run}", staff)
    assert status == 200
    differs = body.split('id="differences"', 1)[1]
    assert "<td>system</td>" in differs and "a/b%2Fc d" in differs


def test_compare_refuses_mixed_cache_modes_unless_asked(bench: Bench, server: Any, staff: str) -> None:
    runs = f"{bench.cache_runs[0]},{bench.cache_runs[4]}"  # evict, keep
    status, body = get(server, f"/compare?runs={runs}", staff)
    assert status == 409
    assert "different page-cache modes" in body and 'id="phases"' not in body
    link = re.search(r'<a id="compare-anyway" href="([^"]+)">', body)
    assert link is not None
    href = link.group(1).replace("&amp;", "&")
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(href).query) == {
        "runs": [runs],
        "allow_mixed_cache": ["1"],
    }
    status, body = get(server, href, staff)
    assert status == 200
    assert (
        f'<tr class="mixed"><td><a href="/runs/{bench.cache_runs[4]}">run {bench.cache_runs[4]}</a> *' in body
    )
    head = re.search(r"<thead><tr><th>phase</th>.*?</tr></thead>", body, re.S)
    assert head and f'<th class="num mixed">run {bench.cache_runs[4]} *</th>' in head.group(0)
    assert 'id="mixed-note"' in body and "(evict)" in body
    read = re.search(r"<tr><td>read</td>.*?</tr>", body, re.S)
    assert read and '<td class="num ratio mixed">×5.000</td>' in read.group(0)
    # the same with an IO500 app run (keep) and a tiny iolens io500 run (evict)
    status, _ = get(server, f"/compare?runs={bench.io500_valid},{bench.tiny_run}", staff)
    assert status == 409


def test_hostile_system_name_is_text_everywhere(bench: Bench, server: Any, staff: str) -> None:
    hostile_runs = bench.seeded.runs[4:]
    pages = [
        "/systems",
        system_path(HOSTILE),
        "/runs",
        "/runs?" + urllib.parse.urlencode({"system": HOSTILE}),
        f"/runs/{hostile_runs[-1]}",
        f"/compare?runs={bench.seeded.runs[0]},{hostile_runs[-1]}",
    ]
    for path in pages:
        status, body = get(server, path, staff)
        assert status == 200, path
        assert "<script>window.__pwned" not in body and "<img src=x" not in body, path
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror=" in body, path
        assert "\x07" not in body, path  # the control character is shown as an escape, \x07
        assert "onerror=&#34;window.__pwned=2&#34;&gt;\\x07" in body, path
    status, body = get(server, "/systems", staff)
    assert f'href="{system_path(HOSTILE)}"' in body


def test_names_with_slash_and_percent_reach_their_page(bench: Bench, server: Any, staff: str) -> None:
    status, body = get(server, system_path(SLASH_SYS), staff)
    assert status == 200 and "<h1>a/b%2Fc d</h1>" in body
    # the name unencoded is another name: no such system, the one 404
    assert get(server, "/systems/a/b%2Fc%20d", staff)[0] == 404
    assert get(server, "/systems/a%2Fb", staff)[0] == 404


@pytest.mark.parametrize(
    "path",
    [
        "/systems",
        "/systems/lustre-prod",
        "/runs",
        "/runs/1",
        "/runs?tool=ior",
        "/compare",
        "/compare?runs=1,2",
    ],
)
def test_users_get_the_404_on_every_benchmark_page(bench: Bench, server: Any, path: str) -> None:
    user = token(bench.url, USER_A)
    status, body = get(server, path, user)
    assert status == 404 and "No such page, or not one you may see." in body
    assert "lustre-prod" not in body and "ior" not in body


@pytest.mark.parametrize(
    "query, name",
    [
        ("/compare?runs=1", "runs"),
        ("/compare?runs=", "runs"),
        ("/compare?runs=1,x", "runs"),
        ("/compare?runs=1,-2", "runs"),
        ("/compare?runs=1,%C2%B2", "runs"),  # a superscript two: a digit to str.isdigit, not to int()
        ("/compare?runs=" + ",".join(["1"] * 13), "runs"),
        ("/compare?runs=1,2&allow_mixed_cache=yes", "allow_mixed_cache"),
        ("/runs?page=0", "page"),
        ("/runs?page=x", "page"),
        ("/runs?tool=dd", "tool"),
        ("/runs?system=a%00b", "system"),
        ("/systems/lustre-prod?page=-1", "page"),
    ],
)
def test_bad_parameters_are_400_naming_them(server: Any, staff: str, query: str, name: str) -> None:
    status, body = get(server, query, staff)
    assert status == 400 and f"{name}: " in body and "Traceback" not in body


@pytest.mark.parametrize(
    "path",
    [
        "/runs/999999",
        "/runs/0",
        "/runs/99999999999999999999999",
        "/compare?runs=1,999999",
        "/compare?runs=1,999999999999",
        "/systems/no-such-system",
        "/systems/",
        "/systems/nul%00",
    ],
)
def test_unknown_ids_and_names_are_the_404(server: Any, staff: str, path: str) -> None:
    status, body = get(server, path, staff)
    assert status == 404 and "No such page, or not one you may see." in body


# --- in Chromium ---------------------------------------------------------------------------------------

# Every plot of the page drawn by portal.js (it marks them data-drawn="1"), and what each one drew.
ALL_DRAWN = """(() => { const plots = Array.from(document.querySelectorAll('div[data-figure]'));
    return plots.length > 0 && plots.every(d => d.getAttribute('data-drawn') === '1'); })()"""
DRAWN_MARKS = """Array.from(document.querySelectorAll('div[data-drawn="1"]')).map(d =>
    d.querySelectorAll('.main-svg .point, .main-svg .js-line, .main-svg .trace.bars').length)"""


@pytest.mark.slow  # Chromium: about 11 s
def test_pages_in_chromium_draw_their_plots_and_run_nothing(
    browser: Any, bench: Bench, server: Any, staff: str
) -> None:
    hostile_run = bench.seeded.runs[-1]
    pages = {
        "system": system_path(HOSTILE),
        "run": f"/runs/{hostile_run}",
        "compare": f"/compare?runs={bench.seeded.runs[4]},{hostile_run}",
        "io500": system_path(IO500_SYS),
    }
    try:
        context = browser.new_context(
            viewport={"width": 1300, "height": 900},
            extra_http_headers={"Authorization": f"Bearer {staff}"},
        )
        for shot, path in pages.items():
            page = context.new_page()
            errors: list[str] = []
            requests: list[str] = []
            page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda exc, e=errors: e.append(str(exc)))
            page.on("request", lambda r, q=requests: q.append(r.url))
            response = page.goto(server.base + path)
            assert response is not None and response.status == 200, path
            page.wait_for_function(ALL_DRAWN, timeout=30_000)
            drawn = page.evaluate(DRAWN_MARKS)
            assert drawn and all(n > 0 for n in drawn), (path, drawn)
            assert page.evaluate("typeof window.__pwned") == "undefined", path
            assert errors == [], (path, errors, requests)
            assert all(u.startswith(server.base + "/") for u in requests), requests
            assert page.locator(".modebar-btn[data-title*='Cloud' i]").count() == 0
            artifacts = Path(__file__).resolve().parent.parent / "build" / "test-artifacts"
            artifacts.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(artifacts / f"web-{shot}.png"), full_page=True)
            page.close()
    finally:
        close_contexts(browser)


def test_static_report_has_no_regression_trace_by_default() -> None:
    # The portal's additions to trend_figure are off by default: the static reports' figures are unchanged.
    from iolens.report.html import trend_figure

    rows = [
        {"run_id": i, "started_at": time.time() + i, "value": 1e9, "unit": "B/s", "config_hash": "h",
         "cache_mode": m, "valid": True}
        for i, m in enumerate(("evict", "keep"))
    ]  # fmt: skip
    fig = trend_figure(copy.deepcopy(rows), "read", "sys", highlight=1)
    assert [t["name"] for t in fig["data"]] == ["read", "this run"]
    fig = trend_figure(rows, "read", "sys", by_cache_mode=True, regressions={1})
    assert [t["name"] for t in fig["data"]] == [
        "read (evict cache mode)",
        "read (keep cache mode)",
        "regression",
    ]
