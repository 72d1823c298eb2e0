"""A user's job pages against a real `iolens web` server on a real SQLite file, and their store queries on
SQLite and PostgreSQL: the survey row's figures, files by kind, ownership (404 alike for another user's
job and for none), escaping of hostile names, the job against the storage's benchmarks, earlier runs, and
the page in Chromium."""

from __future__ import annotations

import os
import pwd
import re
from pathlib import Path
from typing import Any

import pytest

from iolens.store import portal_jobs
from iolens.store.importer import import_paths
from iolens.store.store import Store

from .conftest import REPO
from .db_helpers import IO500_REFERENCE
from .profile_logs import FileSpec, LogSpec, MountSpec, write_log
from .web_helpers import USER_A, USER_B, Seeded, close_contexts, fetch, portal, seed, token

ARTIFACTS = REPO / "build" / "test-artifacts"
MiB = 1 << 20
S = 10**9
HARD = 47008  # IO500's ior-hard transfer size: the mixed job writes in pieces of this size
IO500_SYSTEM = "io500-sys"


def mixed_job(url: str, root: Path) -> int:
    """USER_A's job on IO500_SYSTEM (where the IO500 reference run is stored): two files only read, one only
    written, one read and written; 47008-byte writes. Its profile id."""
    d = root / "logs-mixed"
    d.mkdir()
    paths = ["/lus/mix/in.0", "/lus/mix/in.1", "/lus/mix/out.0", "/lus/mix/rw.0"]
    read = {"POSIX_OPENS": 1, "POSIX_READS": 10, "POSIX_BYTES_READ": 10 * MiB, "POSIX_F_READ_TIME": S // 2}
    write = {
        "POSIX_OPENS": 1,
        "POSIX_WRITES": 100,
        "POSIX_BYTES_WRITTEN": 100 * HARD,
        "POSIX_F_WRITE_TIME": 2 * S,
    }
    both = {"POSIX_OPENS": 1, "POSIX_READS": 5, "POSIX_BYTES_READ": 5 * MiB, "POSIX_F_READ_TIME": S // 4,
            "POSIX_WRITES": 50, "POSIX_BYTES_WRITTEN": 50 * HARD, "POSIX_F_WRITE_TIME": S}  # fmt: skip
    spec = LogSpec(
        pid=5000, exe="/usr/bin/mixer", cmdline=["mixer"],
        files=[FileSpec(i, p, 1) for i, p in enumerate(paths, 1)],
        mounts=[MountSpec(1, "/lus", "lustre")],
        file_recs=[(0, 1, read), (0, 2, read), (0, 3, write), (0, 4, both)],
        proc_recs=[(0, {"OPENS": 4, "STATS": 6, "META_TIME": S // 2})],
        start_wall_ns=1_790_000_000 * S, start_mono_ns=5 * S, end_ns=20 * S, job_id="job-mixed",
    )  # fmt: skip
    write_log(d, spec)
    uid = pwd.getpwnam(USER_A).pw_uid
    for f in d.iterdir():
        os.chown(f, uid, uid)
    with Store.open(url) as store:
        for path in (IO500_REFERENCE, d):
            (outcome,) = import_paths(store, [str(path)], IO500_SYSTEM)
            assert outcome.ok and outcome.stored is not None, outcome.error
        return outcome.stored.id


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Seeded, int]:
    root = tmp_path_factory.mktemp("jobs")
    s = seed(str(root / "portal.db"), root)
    return s, mixed_job(s.url, root)


# The mixed job's survey row, from its counters: 25 MiB read in 25 calls (1.25 s), 150 × 47008 bytes written
# (3 s), 10 metadata operations in 0.5 s, 20 s of run time, one process.
MIXED_ROW = {
    "bytes_read": 25 * MiB, "bytes_written": 150 * HARD, "bytes_total": 25 * MiB + 150 * HARD, "reads": 25,
    "writes": 150, "meta_ops": 10, "read_time_s": 1.25, "write_time_s": 3.0, "meta_time_s": 0.5,
    "io_time_s": 4.75, "runtime_s": 20.0, "processes": 1, "io_share": 4.75 / 20, "meta_share": 0.5 / 4.75,
    "io_rate_bytes_per_s": (25 * MiB + 150 * HARD) / 4.75,
    "runtime_rate_bytes_per_s": (25 * MiB + 150 * HARD) / 20,
    "read_rate_bytes_per_s": 25 * MiB / 1.25, "write_rate_bytes_per_s": 150 * HARD / 3.0,
    "meta_rate_ops_per_s": 10 / 0.5, "mean_read_bytes": float(MiB), "mean_write_bytes": float(HARD),
    "files": 4,
    "files_read_only": 2, "files_write_only": 1, "files_read_write": 1,
}  # fmt: skip


def test_the_survey_row_and_files_by_kind_in_sql(db_url: str, tmp_path: Path) -> None:
    s = seed(db_url, tmp_path)
    mixed = mixed_job(db_url, tmp_path)
    with Store.open(db_url, create=False) as store:
        row = portal_jobs.survey_row(store.db, mixed)
        assert row == pytest.approx(MIXED_ROW)
        a = portal_jobs.survey_row(store.db, s.jobs[USER_A][0])  # 3 files × (32 reads, 64 writes) of 8 MiB
        assert (a["bytes_read"], a["bytes_written"], a["io_time_s"], a["io_share"]) == pytest.approx(
            (3 * 32 * 8 * MiB, 3 * 64 * 8 * MiB, 1.5, 1.5 / 25)
        )
        assert (a["files_read_only"], a["files_write_only"], a["files_read_write"]) == (0, 0, 3)
        # another user's job is not found, as none is; staff (None) see it
        with pytest.raises(portal_jobs.NotFound):
            portal_jobs.job(store.db, s.jobs[USER_B][0], USER_A)
        with pytest.raises(portal_jobs.NotFound):
            portal_jobs.job(store.db, 2**64, USER_A)
        assert portal_jobs.job(store.db, s.jobs[USER_B][0], None)["user_name"] == USER_B
        runs = portal_jobs.earlier_runs(store.db, USER_A, "/usr/bin/climate", None)
        assert [r["id"] for r in runs] == s.jobs[USER_A]  # oldest first; the mixed job is another program
        first = portal_jobs.earlier_runs(store.db, USER_A, "/usr/bin/climate", runs[0]["started_at"])
        assert [r["id"] for r in first] == s.jobs[USER_A][:1]
        bench = portal_jobs.latest_benchmarks(store.db, portal_jobs.job(store.db, mixed, None)["system_id"])
        assert [r["tool"] for r in bench] == ["io500"]
        assert {p.name for p in bench[0]["phases"]} >= {
            "ior-hard-write",
            "ior-easy-write",
            "mdtest-easy-stat",
        }


def test_the_job_page_shows_the_survey_and_the_storage(seeded: tuple[Seeded, int], tmp_path: Path) -> None:
    s, mixed = seeded
    ta, ts = token(s.url, USER_A), token(s.url, "boss", staff=True)
    with portal(s.url, log_dir=tmp_path) as srv:
        status, _, body = fetch(srv.base + f"/jobs/{mixed}", ta)
        assert status == 200, body
        text = _text(body)
        shown = [
            ("total read", "25.00 MiB in 25 calls"), ("total written", "6.72 MiB in 150 calls"),
            ("metadata operations", "10"), ("read time", "1.250 s"), ("write time", "3.000 s"),
            ("metadata time", "0.500 s"), ("I/O share of run time", "24%"),
            ("I/O rate (bytes / I/O time)", "6.68 MiB/s"), ("I/O rate (bytes / run time)", "1.59 MiB/s"),
            ("files read-only", "2"), ("files write-only", "1"), ("files read-write", "1"),
            ("processes", "1"),
        ]  # fmt: skip
        for label, value in shown:
            assert f"{label} {value} " in text, label
        # the IO500 run's figures: the best write, and the 47008-byte phase nearest its 47008-byte writes
        assert (
            "This job wrote at 2.24 MiB/s: 0.12% of the file system's measured write bandwidth (1.810 GiB/s, "
            "IO500 ior-easy-write, 2.00 MiB transfers, 2026-11-22), with 45.91 KiB writes that the benchmark "
            "shows run at 567.40 MiB/s (IO500 ior-hard-write, 47008-byte transfers, 2026-11-22)."
        ) in text
        assert "Its 10 metadata operations ran at 20 ops/s: under 0.01% of the fastest metadata rate" in text
        assert "POSIX 4 " in text and "/runs/" not in body  # the layers; no run links for a user
        _, _, staff_body = fetch(srv.base + f"/jobs/{mixed}", ts)
        assert "user " + USER_A in _text(staff_body)
        runs = re.findall(r"\(runs (.*?)\)</span>", staff_body)  # the runs each sentence cites, for staff
        assert runs and all(re.fullmatch(r'<a href="/runs/(\d+)">\1</a>', r) for r in runs), runs


def test_the_job_against_the_seeded_ior_runs(seeded: tuple[Seeded, int], tmp_path: Path) -> None:
    s, _ = seeded
    ta, tb = token(s.url, USER_A), token(s.url, USER_B)
    with portal(s.url, log_dir=tmp_path) as srv:
        # the latest ior run of lustre-prod wrote 1.1 GiB/s and read 1.32 GiB/s, with 1 MiB transfers
        text = _text(fetch(srv.base + f"/jobs/{s.jobs[USER_A][1]}", ta)[2])
        assert (
            "This job wrote at 1.250 GiB/s: 114% of the file system's measured write bandwidth (1.100 GiB/s, "
            "IOR write, 1.00 MiB transfers, "
        ) in text
        assert "with 8.00 MiB writes that the benchmark shows run at 1.100 GiB/s (IOR write, 1.00 MiB" in text
        text = _text(fetch(srv.base + f"/jobs/{s.jobs[USER_B][0]}", tb)[2])
        assert "This job wrote at 7.17 MiB/s: 0.64% of the file system's measured write bandwidth" in text
        assert (
            "This job read at 14.35 MiB/s: 1.1% of the file system's measured read bandwidth (1.320 GiB/s"
            in text
        )


def test_earlier_runs_of_the_program_are_listed(seeded: tuple[Seeded, int], tmp_path: Path) -> None:
    s, mixed = seeded
    ta = token(s.url, USER_A)
    first, second = s.jobs[USER_A]
    with portal(s.url, log_dir=tmp_path) as srv:
        body = fetch(srv.base + f"/jobs/{second}", ta)[2]
        table = body[body.index('id="earlier-runs"') :]
        assert f'href="/jobs/{first}"' in table and f"{second} (this job)" in table
        assert 'data-figure="earlier-plot-data"' in body and f"/jobs/{mixed}" not in table
        body = fetch(srv.base + f"/jobs/{first}", ta)[2]  # the first run has none before it
        assert "No earlier run of this program." in body and "earlier-plot" not in body


def test_another_users_job_is_the_same_404_as_none(seeded: tuple[Seeded, int], tmp_path: Path) -> None:
    s, _ = seeded
    ta, ts = token(s.url, USER_A), token(s.url, "boss", staff=True)
    with portal(s.url, log_dir=tmp_path) as srv:
        _, _, missing = fetch(srv.base + "/jobs/999999", ta)
        guesses = [*s.jobs[USER_B], 0, 999999, 2**63, 10**30]
        for job in guesses:
            for suffix in ("", "/files", "/x/y", "?page=2"):
                status, _, body = fetch(srv.base + f"/jobs/{job}{suffix}", ta)
                assert status == 404 and body == missing, (job, suffix)
            # a trailing slash: whatever the answer, the same as for a job that does not exist
            assert fetch(srv.base + f"/jobs/{job}/", ta)[0] == fetch(srv.base + "/jobs/999999/", ta)[0]
        for path in ("/jobs/-1", "/jobs/abc", "/jobs/1.0", "/jobs/1e3"):
            assert fetch(srv.base + path, ta)[0] == 404, path
        for job in s.jobs[USER_A]:
            assert fetch(srv.base + f"/jobs/{job}", ta)[0] == 200
        for job in s.jobs[USER_A] + s.jobs[USER_B]:
            assert fetch(srv.base + f"/jobs/{job}", ts)[0] == 200


def test_hostile_names_are_shown_as_text(seeded: tuple[Seeded, int], tmp_path: Path) -> None:
    s, _ = seeded
    tb = token(s.url, USER_B)
    with portal(s.url, log_dir=tmp_path) as srv:
        status, _, body = fetch(srv.base + f"/jobs/{s.jobs[USER_B][1]}", tb)
    assert status == 200
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in body  # the program, the paths
    assert "<script>window.__pwned" not in body and 'onerror="window' not in body
    assert "\x07" not in body and "\\x07" in body  # a control character is shown as its escape
    tags = re.findall(r"<script[^>]*>", body)  # only the figures' data blocks and the portal's own scripts
    assert tags and all(
        t.startswith(('<script type="application/json" id="', '<script src="/static/')) for t in tags
    )


def _text(body: str) -> str:
    """The page's text, tags dropped and entities read, spaces folded."""
    import html

    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body)))


def test_the_job_page_in_chromium(browser: Any, seeded: tuple[Seeded, int], tmp_path: Path) -> None:
    s, _ = seeded
    tb = token(s.url, USER_B)
    with portal(s.url, log_dir=tmp_path) as srv:
        try:
            page = browser.new_page(extra_http_headers={"Authorization": f"Bearer {tb}"})
            errors: list[str] = []
            requests: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(f"{srv.base}/jobs/{s.jobs[USER_B][1]}")
            page.wait_for_function(
                "document.querySelectorAll('div[data-figure]').length > 0 && Array.from("
                "document.querySelectorAll('div[data-figure]')).every(d => d.hasAttribute('data-drawn'))",
                timeout=30_000,
            )
            plots: Any = page.evaluate("document.querySelectorAll('div[data-drawn]').length")
            pwned = page.evaluate("typeof window.__pwned")
            shown = page.inner_text("#facts")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "web-job.png"), full_page=True)
        finally:
            close_contexts(browser)
    assert errors == [] and pwned == "undefined"
    assert all(u.startswith(srv.base + "/") for u in requests), requests
    assert plots >= 2  # the top files, the earlier runs
    assert "<script>window.__pwned=1</script>" in shown  # the hostile program name, as text
