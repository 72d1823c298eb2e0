"""The per-minute rollup of monitoring samples (store/rollup.py) on SQLite and PostgreSQL: it always equals
the samples it sums, however they were written (the store, plain SQL inserts, deletes, updates, duplicates
skipped, times just below a minute's end, values missing), an older database gets it filled when it is
migrated, and the dashboards' buckets read from it are the buckets read from the samples."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from iolens.store import portal_monitor
from iolens.store.records import Sample
from iolens.store.schema import SCHEMA_VERSION
from iolens.store.store import Store

from .db_helpers import PgServer, as_older_version

# Times on and around minute boundaries (the largest float below 120 is the case where t / 60 rounds up to
# 2.0), negative times, and the ordinary kind.
EDGES = [0.0, 59.99999999999999, 60.0, 119.99999999999999, 120.0, -0.5, -60.0, -60.000000000001, 3599.5]


def _minute(t: float) -> int:
    m = math.floor(t / 60)
    return m - 1 if t < m * 60 else m


def expected(db: Any) -> dict[tuple[int, int], tuple[int, int, float | None, float | None]]:
    """The rollup recomputed here from every sample."""
    acc: dict[tuple[int, int], list[Any]] = defaultdict(lambda: [0, 0, [], None])
    for sid, t, v in db.query("SELECT series_id, t, value FROM samples"):
        a = acc[(int(sid), _minute(float(t)))]
        a[0] += 1
        if v is not None:
            a[1] += 1
            a[2].append(float(v))
            a[3] = float(v) if a[3] is None else max(a[3], float(v))
    return {k: (n, c, math.fsum(vs) if vs else None, peak) for k, (n, c, vs, peak) in acc.items()}


def stored(db: Any) -> dict[tuple[int, int], tuple[int, int, float | None, float | None]]:
    rows = db.query("SELECT series_id, minute, present, valued, total, peak FROM sample_minutes")
    return {(int(r[0]), int(r[1])): (int(r[2]), int(r[3]), r[4], r[5]) for r in rows}


def assert_rollup_exact(db: Any) -> None:
    want, got = expected(db), stored(db)
    assert got.keys() == want.keys()
    for key, (n, c, total, peak) in want.items():
        gn, gc, gtotal, gpeak = got[key]
        assert (gn, gc, gpeak) == (n, c, peak), key
        assert (gtotal is None) == (total is None), key
        if total is not None:
            assert gtotal == pytest.approx(total, rel=1e-12, abs=1e-9), key


def samples(rng: random.Random, host: str, n: int) -> list[Sample]:
    out = [Sample(t, host, "diskstats", "vda", "read_bytes_per_s", float(i)) for i, t in enumerate(EDGES)]
    t = 1_700_000_000.0
    for _ in range(n):
        t += rng.choice([0.25, 1.0, 1.0, 7.0, 61.0])
        value = None if rng.random() < 0.1 else rng.uniform(-5, 1e9)
        metric = rng.choice(["read_bytes_per_s", "write_bytes_per_s", "util"])
        out.append(Sample(t, host, "diskstats", "vda", metric, value))
    return out


def test_the_rollup_equals_its_samples_whoever_writes_them(db_url: str) -> None:
    rng = random.Random(7)
    with Store.open(db_url) as store:
        store.put_samples(samples(rng, "n1", 3000), "first")
        # Again with new and already stored samples: those skipped (ON CONFLICT DO NOTHING) add nothing.
        store.put_samples(samples(rng, "n1", 3000)[:2000] + samples(random.Random(8), "n2", 500), "second")
        assert_rollup_exact(store.db)
        db = store.db
        sid = int(db.query("SELECT id FROM series ORDER BY id LIMIT 1")[0][0])
        with db.transaction():
            # A center's own SQL: a retention delete, a correction, a plain insert.
            db.execute("DELETE FROM samples WHERE t < ?", (1_700_000_500.0,))
            db.execute(
                "DELETE FROM samples WHERE series_id = ? AND t >= ? AND t < ?",
                (sid, 1.7e9 + 900, 1.7e9 + 1500),
            )
            db.execute(
                "UPDATE samples SET value = value * 3 WHERE t >= ? AND t < ?", (1.7e9 + 2000, 1.7e9 + 2600)
            )
            db.execute("UPDATE samples SET value = NULL WHERE t >= ? AND t < ?", (1.7e9 + 3000, 1.7e9 + 3100))
            db.execute("UPDATE samples SET t = t + 30.125 WHERE series_id = ? AND t >= ? AND t < ?",
                       (sid, 1.7e9 + 5000, 1.7e9 + 5010))  # fmt: skip
            db.execute(
                "INSERT INTO samples (series_id, t, value) VALUES (?, ?, ?)", (sid, 59.999999999999, 5.0)
            )
        assert_rollup_exact(db)
        # Every sample of a minute gone: the minute's row too.
        with db.transaction():
            db.execute("DELETE FROM samples WHERE series_id = ?", (sid,))
        assert_rollup_exact(db)
        assert not db.query("SELECT 1 FROM sample_minutes WHERE series_id = ?", (sid,))


def test_a_failed_store_leaves_no_rollup_behind(db_url: str) -> None:
    with Store.open(db_url) as store:
        store.put_samples([Sample(100.0, "n1", "cpu", "", "busy", 1.0)], "kept")
        with pytest.raises(RuntimeError), store.db.transaction():
            store.db.execute("INSERT INTO samples (series_id, t, value) SELECT id, 130.0, 9.0 FROM series")
            raise RuntimeError("rolled back")
        assert stored(store.db) == {(1, 1): (1, 1, 1.0, 1.0)}


def test_an_older_database_gets_its_rollup_when_migrated(db_url: str) -> None:
    rng = random.Random(3)
    with Store.open(db_url) as store:
        store.put_samples(samples(rng, "old", 1500), "before")
        db = store.db
        as_older_version(db, 3)  # no rollup, no triggers
        db.execute("INSERT INTO samples (series_id, t, value) SELECT id, 1.0, 2.0 FROM series")
    with Store.open(db_url) as store:
        row = store.db.query_one("SELECT value FROM iolens_meta WHERE key = 'schema_version'")
        assert row is not None and int(row[0]) == SCHEMA_VERSION
        assert_rollup_exact(store.db)
        store.put_samples(samples(rng, "old", 200)[-50:], "after")
        assert_rollup_exact(store.db)


def _raw(db: Any, ids: list[int], t0: float, t1: float, step: float, origin: float) -> dict[int, list[Any]]:
    """The buckets from the samples alone (the path the rollup replaces)."""
    return portal_monitor._unpack(portal_monitor._sample_buckets(db, ids, t0, t1, step, origin))


def test_buckets_from_the_rollup_are_the_buckets_of_the_samples(db_url: str, tmp_path: Path) -> None:
    rng = random.Random(11)
    base = 1_800_000_000.0
    batch = []
    for i in range(6 * 3600):  # 6 h at 1 s, with a gap of 20 min and missing values
        if 7200 <= i < 8400:
            continue
        batch.append(Sample(base + i + 0.001 * (i % 7), "h", "diskstats", "vda", "read_bytes_per_s",
                            None if i % 97 == 0 else rng.uniform(0, 1e6)))  # fmt: skip
        batch.append(Sample(base + i, "h", "diskstats", "vdb", "read_bytes_per_s", float(i % 50)))
    with Store.open(db_url) as store:
        store.put_samples(batch, "six-hours")
        db = store.db
        ids = [s.id for s in portal_monitor.find_series(db, ["h"], "rates")]
        windows = [(base, base + 6 * 3600, 60.0), (base + 17.3, base + 5 * 3600 + 41.9, 180.0),
                   (base + 59.5, base + 3 * 3600, 120.0), (base + 7000, base + 8000, 600.0),
                   (base + 30, base + 100, 60.0), (base + 3600.2, base + 3650.7, 60.0),
                   (base - 86400.5, base - 3600, 300.0),  # no sample in the window
                   (base + 6 * 3600 - 30.5, base + 7 * 3600, 120.0)]  # fmt: skip
        for t0, t1, step in windows:
            origin = math.floor(t0 / 60) * 60
            got = portal_monitor.buckets(db, ids, t0, t1, step, origin)
            want = _raw(db, ids, t0, t1, step, origin)
            assert got.keys() == want.keys(), (t0, t1, step)
            for sid in want:
                assert [(k.b, k.count, k.peak) for k in got[sid]] == [
                    (k.b, k.count, k.peak) for k in want[sid]
                ]
                for a, b in zip(got[sid], want[sid], strict=True):
                    assert (a.mean is None) == (b.mean is None)
                    assert a.mean is None or a.mean == pytest.approx(b.mean, rel=1e-9)
        # The rollup is what was read: emptied, the whole minutes are missing from the buckets.
        with db.transaction():
            db.execute("DELETE FROM sample_minutes")
            got = portal_monitor.buckets(db, ids, base, base + 3600, 600.0, base)
        assert sum(k.count for k in got.get(ids[0], [])) < 10


def test_a_role_that_may_only_insert_samples_keeps_the_rollup(pg_server: PgServer) -> None:
    """A center's monitor role: SELECT, and INSERT on the sample tables only; the rollup is the owner's."""
    import psycopg

    url = pg_server.new_database()
    with Store.open(url) as store:
        store.put_samples([Sample(600.0, "n1", "cpu", "", "busy", 1.0)], "owner")
    dbname = url.split("?")[0].rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS monitor_only")
        conn.execute("CREATE ROLE monitor_only LOGIN")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO monitor_only")
        conn.execute("GRANT INSERT ON samples, series, sample_imports TO monitor_only")
        conn.execute("GRANT UPDATE ON sample_imports TO monitor_only")
        conn.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO monitor_only")
        conn.execute("REVOKE ALL ON sample_minutes FROM monitor_only")
    writer = url.replace("postgresql://iolens@", "postgresql://monitor_only@")
    try:
        with Store.open(writer) as store:
            store.put_samples([Sample(610.0 + i, "n1", "cpu", "", "busy", 2.0) for i in range(30)], "monitor")
            with pytest.raises(Exception, match="permission denied"), store.db.transaction():
                store.db.execute("DELETE FROM sample_minutes")
        with Store.open(url) as store:
            assert stored(store.db) == {(1, 10): (31, 31, 61.0, 2.0)}
            assert_rollup_exact(store.db)
    finally:
        with psycopg.connect(pg_server.url("postgres"), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{dbname}" WITH (FORCE)')  # type: ignore[arg-type]
            conn.execute("DROP ROLE monitor_only")
