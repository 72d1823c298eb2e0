"""The application I/O survey (/survey, /survey.csv) on the seeded database: every figure against the job's
own stored counters, filters, sorting, paging, the per-user and per-program totals, the CSV export (parsed
back, formula cells neutralised), staff only, bad parameters; its store functions on SQLite and PostgreSQL;
and bench/web_load.py's small run end to end."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from iolens.store import portal_survey as ps
from iolens.store.profiles import iolens_jobs
from iolens.store.queries import get_profile
from iolens.store.store import Store

from .conftest import REPO
from .db_helpers import iolens_env
from .web_helpers import (
    HOSTILE,
    USER_A,
    USER_B,
    Seeded,
    _job_log,
    close_contexts,
    fetch,
    portal,
    seed,
    token,
)

ARTIFACTS = REPO / "build" / "test-artifacts"
FORMULA_EXE = "/opt/@SUM(1+1)*cmd|'calc'!A0"
FORMULA_ACCOUNT = '=HYPERLINK("http://evil.example/","x")'
ACCOUNT_JOB = "job-4200"


def add_formula_job(url: str, root: Path, started: float) -> int:
    """A job whose program and account (its document's `account`) a spreadsheet would run as formulas,
    from a real log, stored on the seed's first system; its profile id."""
    d = root / "logs-formula"
    d.mkdir()
    _job_log(d, 4200, FORMULA_EXE, ["/lus/formula/out.0"], started, False)
    (record,) = iolens_jobs(d)
    record.summary["account"] = FORMULA_ACCOUNT
    with Store.open(url) as store:
        return store.put_profile(record, "lustre-prod").id


def expected(db_url: str, pid: int) -> dict[str, Any]:
    """A job's survey figures worked out here from its stored columns."""
    with Store.open(db_url) as store:
        p = get_profile(store.db, pid, document=False)
    io_time = p["read_time_s"] + p["write_time_s"] + p["meta_time_s"]
    total = p["bytes_read"] + p["bytes_written"]
    return {
        "id": pid,
        "user_name": p["user_name"],
        "total_bytes": total,
        "io_time_s": io_time,
        "io_share": io_time / (p["runtime_s"] * p["processes"]),
        "io_bytes_per_s": total / io_time,
        "meta_share": p["meta_time_s"] / io_time,
        "files": p["files"],
        "meta_ops": p["meta_ops"],
        "runtime_s": p["runtime_s"],
        "started_at": p["started_at"],
    }


def _seed_all(url: str, root: Path) -> tuple[Seeded, int]:
    s = seed(url, root)
    return s, add_formula_job(url, root, s.t1 - 600)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Seeded, int]:
    root = tmp_path_factory.mktemp("survey")
    return _seed_all(str(root / "portal.db"), root)


def _close(a: float | None, b: float | None) -> bool:
    return a == b or (a is not None and b is not None and abs(a - b) <= 1e-9 * max(abs(a), abs(b)))


def test_survey_store_functions_give_each_jobs_figures(db_url: str, tmp_path: Path) -> None:
    s, formula = _seed_all(db_url, tmp_path)
    ids = s.jobs[USER_A] + s.jobs[USER_B] + [formula]
    want = {pid: expected(db_url, pid) for pid in ids}
    with Store.open(db_url) as store:
        db = store.db
        everything = ps.SurveyFilter()
        assert ps.job_count(db, everything) == 5
        rows = ps.job_page(db, everything, "time", True, 50, 0)
        # newest first, the id breaking ties (two users' jobs started at the same second)
        assert [r["id"] for r in rows] == sorted(ids, key=lambda i: (-want[i]["started_at"], -i))
        for r in rows:
            w = want[r["id"]]
            for key in ("total_bytes", "io_time_s", "io_share", "io_bytes_per_s", "meta_share", "runtime_s"):
                assert _close(r[key], w[key]), (r["id"], key, r[key], w[key])
            assert r["files"] == w["files"] and r["meta_ops"] == w["meta_ops"]
            assert r["system"] == "lustre-prod"
            assert r["account"] == (FORMULA_ACCOUNT if r["id"] == formula else None)
        assert all(want[i]["total_bytes"] > 0 and 0 < want[i]["io_share"] < 1 for i in ids)

        # filters
        def ids_of(**kw: Any) -> set[int]:
            f = ps.SurveyFilter(**kw)
            got = {r["id"] for r in ps.job_page(db, f, "time", True, 50, 0)}
            assert ps.job_count(db, f) == len(got)
            return got

        assert ids_of(user=USER_A) == set(s.jobs[USER_A])
        assert ids_of(program="CLIMATE") == set(s.jobs[USER_A])  # any case
        assert ids_of(program="pwned=1") == set(s.jobs[USER_B])
        # % and _ are matched literally, not as LIKE's wildcards
        assert ids_of(program="%") == set() and ids_of(program="c_imate") == set()
        assert ids_of(program="__pwned") == set(s.jobs[USER_B])
        assert ids_of(program="@sum(1+1)") == {formula}
        assert ids_of(system="lustre-prod") == set(ids) and ids_of(system=HOSTILE) == set()
        later = max(w["started_at"] for w in want.values())
        assert ids_of(since=later) == {i for i in ids if want[i]["started_at"] >= later}
        assert ids_of(until=later) == {i for i in ids if want[i]["started_at"] < later}
        big = want[s.jobs[USER_A][0]]["total_bytes"]
        assert ids_of(min_bytes=big) == set(s.jobs[USER_A])
        assert ids_of(min_bytes=big + 1) == set()

        # sorting (the id breaks ties, in the same direction) and paging
        for key, descending in (("bytes", True), ("bytes", False), ("io_share", True), ("user", False)):
            rows = ps.job_page(db, everything, key, descending, 50, 0)
            field = {"bytes": "total_bytes", "io_share": "io_share", "user": "user_name"}[key]
            order = sorted(ids, key=lambda i: (want[i][field], i), reverse=descending)
            assert [r["id"] for r in rows] == order, key
            pages = [r["id"] for k in range(5) for r in ps.job_page(db, everything, key, descending, 1, k)]
            assert pages == order
        assert ps.job_page(db, everything, "time", True, 50, 5) == []

        # the export's batches walk every job once, in id order
        walked, after = [], 0
        while batch := ps.job_batch(db, everything, after, 2):
            walked += [r["id"] for r in batch]
            after = batch[-1]["id"]
        assert walked == sorted(ids)
        assert [r["id"] for r in ps.job_batch(db, ps.SurveyFilter(user=USER_B), 0, 10)] == s.jobs[USER_B]

        # per user: totals, and ratios of the totals
        rows, total = ps.group_page(db, everything, "user", "bytes", True, 50)
        groups = {g["grp"]: g for g in rows}
        assert total == ps.group_count(db, everything, "user") == len(groups) == 3
        assert ps.group_page(db, everything, "user", "bytes", True, 1)[1] == 3  # all groups counted
        for user in (USER_A, USER_B):
            ws = [want[i] for i in s.jobs[user]]
            g = groups[user]
            assert g["jobs"] == 2 and g["total_bytes"] == sum(w["total_bytes"] for w in ws)
            io_time = sum(w["io_time_s"] for w in ws)
            assert _close(g["io_time_s"], io_time)
            assert _close(g["io_bytes_per_s"], g["total_bytes"] / io_time)
            assert _close(g["io_share"], io_time / sum(w["runtime_s"] for w in ws))  # one process each
            assert g["files"] == sum(w["files"] for w in ws)
        assert list(groups)[0] == USER_A  # the most bytes first
        programs, _ = ps.group_page(db, everything, "program", "program", False, 50)
        assert [g["grp"] for g in programs] == sorted(g["grp"] for g in programs)
        assert {g["grp"]: g["jobs"] for g in programs}["/usr/bin/climate"] == 2
        walked_groups, last = [], None
        while batch := ps.group_batch(db, everything, "user", last, 1):
            walked_groups += [g["grp"] for g in batch]
            last = batch[-1]["grp"]
        assert walked_groups == sorted(groups)


def _csv(body: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body)))


def test_the_survey_page_and_its_csv(seeded: tuple[Seeded, int], tmp_path: Path) -> None:
    s, formula = seeded
    staff, user = token(s.url, "boss", staff=True), token(s.url, USER_A)
    ids = s.jobs[USER_A] + s.jobs[USER_B] + [formula]
    want = {pid: expected(s.url, pid) for pid in ids}
    with portal(s.url, log_dir=tmp_path) as srv:
        status, _, body = fetch(srv.base + "/survey", staff)
        assert status == 200
        assert "5 jobs match" in body
        for pid in ids:
            assert f'href="/jobs/{pid}"' in body
        # the hostile program and system names are text
        assert "<script>window.__pwned" not in body and 'onerror="window' not in body
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body
        assert "&lt;img src=x onerror=" in body  # the system filter's option and the program's title
        # the figures, formatted: USER_A's jobs moved 2.25 GiB each at 6.0% I/O time
        w = want[s.jobs[USER_A][0]]
        assert f"{w['io_share'] * 100:.1f}%" in body and "2.25 GiB" in body
        # per user and per program, when asked for
        assert 'id="survey-groups"' not in body and 'id="per-user"' in body
        _, _, body = fetch(srv.base + "/survey?per=user", staff)
        assert 'id="survey-groups"' in body and f'<td title="{USER_A}">{USER_A}</td>' in body
        assert "3 of 3 users" in body
        _, _, body = fetch(srv.base + "/survey?per=program&sort=bytes&dir=asc", staff)
        assert '<td title="/usr/bin/climate">climate</td>' in body
        # filters on the page
        _, _, body = fetch(srv.base + "/survey?" + urllib.parse.urlencode({"user": USER_B}), staff)
        assert "2 jobs match" in body and all(f'href="/jobs/{p}"' in body for p in s.jobs[USER_B])
        assert f'href="/jobs/{s.jobs[USER_A][0]}"' not in body
        # the hostile system, as the form's list offers it: selectable, and no job of the seed ran there
        status, _, body = fetch(srv.base + "/survey?" + urllib.parse.urlencode({"system": HOSTILE}), staff)
        assert status == 200 and "No job matches" in body
        _, _, body = fetch(srv.base + "/survey?system=lustre-prod", staff)
        assert "5 jobs match" in body
        _, _, body = fetch(srv.base + "/survey?min_bytes=1g&program=clim", staff)
        assert "2 jobs match" in body
        _, _, body = fetch(srv.base + "/survey?min_bytes=3g", staff)
        assert "No job matches" in body
        _, _, body = fetch(srv.base + "/survey?from=now-1d&to=now", staff)
        assert "5 jobs match" in body
        _, _, body = fetch(srv.base + "/survey?to=now-1d", staff)
        assert "No job matches" in body
        # sort links keep the filters
        _, _, body = fetch(srv.base + "/survey?user=" + USER_A, staff)
        assert f'href="?user={USER_A}&amp;per=none&sort=bytes&dir=desc"' in body

        # CSV of every job: header, one row per job, exact figures, formulas neutralised
        status, headers, text = fetch(srv.base + "/survey.csv", staff)
        assert status == 200 and headers["content-type"].startswith("text/csv")
        assert "attachment" in headers["content-disposition"]
        rows = _csv(text)
        assert list(rows[0])[:4] == ["profile_id", "job_id", "user", "account"]
        assert [int(r["profile_id"]) for r in rows] == sorted(ids)
        for r in rows:
            w = want[int(r["profile_id"])]
            assert int(r["total_bytes"]) == w["total_bytes"] and r["user"] == w["user_name"]
            assert float(r["io_time_share"]) == pytest.approx(w["io_share"], rel=1e-12)
            assert float(r["io_bytes_per_s"]) == pytest.approx(w["io_bytes_per_s"], rel=1e-12)
            assert int(r["files"]) == w["files"]
        by_id = {int(r["profile_id"]): r for r in rows}
        assert by_id[formula]["program"] == "'" + FORMULA_EXE.rsplit("/", 1)[-1]
        assert by_id[formula]["account"] == "'" + FORMULA_ACCOUNT
        assert by_id[formula]["exe"] == FORMULA_EXE  # starts with /: nothing to neutralise
        hostile = by_id[s.jobs[USER_B][0]]
        assert hostile["exe"] == "/opt/" + HOSTILE and hostile["program"] == HOSTILE.rsplit("/", 1)[-1]
        for r in rows:
            for cell in r.values():
                assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
        # with the page's filters; per user
        _, _, text = fetch(srv.base + "/survey.csv?user=" + USER_B, staff)
        assert [int(r["profile_id"]) for r in _csv(text)] == s.jobs[USER_B]
        _, _, text = fetch(srv.base + "/survey.csv?per=user", staff)
        groups = {r["user"]: r for r in _csv(text)}
        assert set(groups) == {USER_A, USER_B, want[formula]["user_name"]}
        assert int(groups[USER_A]["total_bytes"]) == sum(want[i]["total_bytes"] for i in s.jobs[USER_A])

        # staff only: a user gets the same 404 as for nothing
        for path in ("/survey", "/survey.csv", "/survey.csv?per=user"):
            status, _, body = fetch(srv.base + path, user)
            assert status == 404 and "No such page" in body and "climate" not in body
        # bad parameters: a 400 naming the parameter
        for query, name in (
            ("sort=evil", "sort"), ("dir=up", "dir"), ("page=0", "page"), ("page=x", "page"),
            ("min_bytes=lots", "min_bytes"), ("from=yesterday", "from"), ("to=x", "to"),
            ("from=now-1h&to=now-2h", "from"), ("per=account", "per"), ("user=a%07b", "user"),
            ("program=" + "x" * 300, "program"), ("system=" + "x" * 300, "system"),
        ):  # fmt: skip
            for path in ("/survey", "/survey.csv"):
                if path == "/survey.csv" and name in ("sort", "dir", "page"):
                    continue
                status, _, body = fetch(f"{srv.base}{path}?{query}", staff)
                assert status == 400 and f"{name}:" in body and "Traceback" not in body, (path, query)


def test_the_survey_in_chromium_runs_nothing_hostile(
    browser: Any, seeded: tuple[Seeded, int], tmp_path: Path
) -> None:
    """The page in a real browser: no console error, nothing fetched from elsewhere, the hostile names shown
    as text and run nothing; sorting by a column header changes the order shown."""
    s, _ = seeded
    staff = token(s.url, "boss", staff=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with portal(s.url, log_dir=tmp_path) as srv:
        try:
            context = browser.new_context(extra_http_headers={"Authorization": f"Bearer {staff}"})
            page = context.new_page()
            errors: list[str] = []
            requests: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(srv.base + "/survey?per=program")
            assert page.evaluate("window.__pwned") is None
            programs = page.locator("#survey-jobs tbody tr td:nth-child(6)").all_inner_texts()
            assert HOSTILE.rsplit("/", 1)[-1].rstrip("\x07") in "\n".join(programs)
            assert page.locator("#survey-groups tbody tr").count() == 3
            page.screenshot(path=str(ARTIFACTS / "portal-survey.png"), full_page=True)
            page.click('a[data-sort="bytes"]')
            page.wait_for_url("**sort=bytes**")
            totals = page.locator("#survey-jobs tbody tr td:nth-child(9)").all_inner_texts()
            assert totals[:2] == ["2.25 GiB", "2.25 GiB"]  # USER_A's two big jobs first
            assert page.evaluate("window.__pwned") is None
            assert errors == []
            assert all(r.startswith(srv.base + "/") for r in requests), requests
        finally:
            close_contexts(browser)


@pytest.mark.slow
def test_web_load_quick(tmp_path: Path) -> None:
    """bench/web_load.py's small run works end to end (its timings are the bench's business, not this
    test's): it builds its database, starts the portal, runs the clients and writes its results."""
    out = tmp_path / "web_load.txt"
    scratch = tmp_path / "scratch"
    r = subprocess.run(
        [sys.executable, str(REPO / "bench" / "web_load.py"), "--quick", "--out", str(out),
         "--scratch", str(scratch), "--sqlite-only"],
        env=iolens_env(), capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    text = out.read_text()
    assert "/survey" in text and "/jobs" in text and "p95" in text
    data = out.with_suffix(".json").read_text()
    assert '"errors": 0' in data
    assert not scratch.exists() or not any(scratch.iterdir())  # removed at the end
    assert os.environ.get("IOLENS_WEB_CONFIG") is None
