"""`iolens monitor --db`'s way into the database, on both backends: the sink stores from a thread of its own
(a locked table or a lost connection delays storing, never the sampler), keeps and retries what could not be
stored, and the store's series ids, kept across batches, stay right when a transaction is rolled back."""

from __future__ import annotations

import threading
import time

import pytest

from iolens.store import Store
from iolens.store.records import Sample
from iolens.store.sample_sink import SampleSink


def record(t: float, n: int = 3, host: str | None = None) -> dict[str, object]:
    rec: dict[str, object] = {
        "type": "sample",
        "time": t,
        "data": {"diskstats": {f"vd{chr(97 + i)}": {"reads_completed": int(t) + i} for i in range(n)}},
        "rates": {"diskstats": {f"vd{chr(97 + i)}": {"reads_completed": 1.5} for i in range(n)}},
    }
    if host is not None:
        rec["host"] = host
    return rec


def stored_rows(url: str) -> list[tuple[object, ...]]:
    with Store.open(url) as st:
        return st.db.query(
            "SELECT host, source, target, metric, t, value FROM monitor_samples"
            " ORDER BY host, target, metric, t"
        )


def test_sink_stores_every_record_from_its_thread(db_url: str) -> None:
    store = Store.open(db_url)
    sink = SampleSink(store, "node1", flush_s=0.2)
    writer = sink._thread
    for i in range(10):
        sink(record(1000.0 + i))
        time.sleep(0.05)
    sink(record(2000.0, host="node2"))  # a record's own host wins, as in a stream
    sink.close()
    store.close()
    assert not writer.is_alive()
    rows = stored_rows(db_url)
    assert sink.stored == len(rows) == 11 * 6 and sink.dropped == 0
    assert {r[0] for r in rows} == {"node1", "node2"}
    vda = [r for r in rows if r[0] == "node1" and r[2] == "vda" and r[3] == "reads_completed"]
    assert [(r[4], r[5]) for r in vda] == [(1000.0 + i, 1000.0 + i) for i in range(10)]
    assert {r[5] for r in rows if r[3] == "reads_completed_per_s"} == {1.5}


def test_a_locked_table_delays_storing_not_the_sampler(pg_server: object) -> None:
    import psycopg

    url = pg_server.new_database()  # type: ignore[attr-defined]
    Store.open(url).close()
    locker = psycopg.connect(url)
    locker.execute("LOCK TABLE samples IN ACCESS EXCLUSIVE MODE")  # held until rollback
    store = Store.open(url)
    sink = SampleSink(store, "node1", flush_s=0.1)
    try:
        time.sleep(0.05)
        sink(record(1.0))
        time.sleep(0.5)  # the writer is now waiting for the lock
        started = time.monotonic()
        for i in range(50):
            sink(record(2.0 + i))
        handed = time.monotonic() - started
        assert sink.stored == 0
    finally:
        locker.rollback()
        locker.close()
    sink.close()
    store.close()
    assert handed < 0.5, handed  # 50 records handed over while the insert waited
    assert sink.stored == 51 * 6 == len(stored_rows(url))


def test_a_lost_connection_is_reopened_and_nothing_is_lost(pg_server: object) -> None:
    import psycopg

    url = pg_server.new_database()  # type: ignore[attr-defined]
    events: list[str] = []
    store = Store.open(url)
    sink = SampleSink(
        store,
        "node1",
        flush_s=0.2,
        retry_s=0.2,
        on_error=lambda why: events.append("error"),
        on_resume=lambda dropped: events.append(f"resume {dropped}"),
        reopen=lambda: Store.open(url),
    )
    sink(record(1.0))
    time.sleep(0.6)
    assert sink.stored == 6
    # The server ends the sink's session (as a restart or a network cut would).
    with psycopg.connect(url, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    assert ended
    for i in range(5):
        sink(record(2.0 + i))
        time.sleep(0.2)
    deadline = time.monotonic() + 10
    while sink.stored < 36 and time.monotonic() < deadline:
        time.sleep(0.1)
    sink.close()
    sink.store.close()
    assert events == ["error", "resume 0"]
    assert sink.stored == 36 == len(stored_rows(url)) and sink.dropped == 0


def test_what_memory_cannot_keep_is_dropped_oldest_first_and_counted(tmp_path: object) -> None:
    from pathlib import Path

    url = str(Path(str(tmp_path)) / "iolens.db")
    store = Store.open(url)
    gate = threading.Event()
    put = store.put_samples

    def refused(samples: object, uid: object = None, source_path: object = None) -> object:
        if not gate.is_set():
            from iolens.store.db import StoreError

            raise StoreError("the database is away")
        return put(samples, uid, source_path)  # type: ignore[arg-type]

    store.put_samples = refused  # type: ignore[method-assign]
    sink = SampleSink(store, "node1", flush_s=0.1, retry_s=0.1, max_buffered=30)
    for i in range(10):
        sink(record(float(i)))  # 60 samples, 30 kept
    time.sleep(0.3)
    gate.set()
    sink.close()
    store.close()
    assert sink.dropped == 30 and sink.stored == 30
    assert sorted({r[4] for r in stored_rows(url)}) == [5.0, 6.0, 7.0, 8.0, 9.0]


def test_series_ids_of_a_rolled_back_batch_are_not_kept(db_url: str) -> None:
    with Store.open(db_url) as st:
        assert st.put_samples([Sample(1.0, "n1", "diskstats", "vda", "reads", 1.0)]).new
        # A batch that fails after creating the series vdb in its transaction (a sample without a time):
        # rolled back, vdb does not exist, and its id must not be kept.
        bad = [
            Sample(2.0, "n1", "diskstats", "vdb", "reads", 2.0),
            Sample(None, "n1", "diskstats", "vdb", "x", 0),
        ]  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            st.put_samples(bad)
        assert st.db.query("SELECT count(*) FROM series")[0][0] == 1
        again = [
            Sample(2.0, "n1", "diskstats", "vdb", "reads", 2.0),
            Sample(3.0, "n1", "diskstats", "vda", "reads", 3.0),
        ]
        assert st.put_samples(again).new
    rows = stored_rows(db_url)
    assert [(r[2], r[4], r[5]) for r in rows] == [("vda", 1.0, 1.0), ("vda", 3.0, 3.0), ("vdb", 2.0, 2.0)]


@pytest.mark.parametrize("hosts", [1, 3])
def test_batches_after_the_first_reuse_the_series_of_every_host(db_url: str, hosts: int) -> None:
    with Store.open(db_url) as st:
        for b in range(3):
            batch = [
                Sample(float(b * 10 + i), f"n{h}", "lustre", f"OST{k:04x}", "write_bytes", float(i))
                for i in range(4)
                for h in range(hosts)
                for k in range(5)
            ]
            assert st.put_samples(batch).detail == f"{len(batch)} samples in {hosts * 5} series"
        assert len(st._series_ids) == hosts * 5
        ids = st.db.query("SELECT count(*) FROM series")
    assert ids[0][0] == hosts * 5
    assert len(stored_rows(db_url)) == 3 * 4 * hosts * 5
