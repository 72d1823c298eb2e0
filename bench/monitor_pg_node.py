#!/usr/bin/env python3
"""One simulated node of bench/monitor_pg_ingest.py: what `iolens monitor --db postgresql://…` does on a
node, without reading this machine's statistics files again.

It opens the store as `iolens monitor --db URL` does and hands iolens's own SampleSink one sample record per
second (the template, a record `iolens monitor` wrote on this machine, with the time of the tick and its
counters advanced), for --seconds seconds, its ticks offset by --phase within the second (nodes are not in
step). Every batch the sink stores is timed (the store's put_samples, wrapped): how long it took, and how old
its oldest sample was when it was committed. At the end it writes a JSON summary to --out.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from iolens.store.sample_sink import SampleSink
from iolens.store.store import Store


def advanced(tree: Any, step: int) -> Any:
    """The template's tree with every integer counter advanced by `step` (values that change, as on a node;
    floats such as load averages stay)."""
    if isinstance(tree, dict):
        return {k: advanced(v, step) for k, v in tree.items()}
    if isinstance(tree, int) and not isinstance(tree, bool):
        return tree + step
    return tree


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--host", required=True)
    p.add_argument("--template", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument(
        "--start-file",
        required=True,
        help="the harness writes the Unix time of the first tick here once every node is ready",
    )
    p.add_argument("--phase", type=float, default=0.0, help="offset of the ticks within the second")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    template = json.loads(Path(a.template).read_text())
    batches: list[dict[str, float]] = []
    errors: list[str] = []
    opened = time.monotonic()
    store = Store.open(a.url, create=True)
    connect_s = time.monotonic() - opened
    put = store.put_samples
    Path(a.out + ".ready").touch()
    start = Path(a.start_file)
    while not start.exists():
        time.sleep(0.05)
    start_at = float(start.read_text() or "0") or time.time()

    def timed_put(samples: Any, uid: str | None = None, source_path: str | None = None) -> Any:
        batch = list(samples)
        t0 = time.time()
        r = put(batch, uid, source_path)
        t1 = time.time()
        batches.append({"put_s": t1 - t0, "age_s": t1 - min(s.t for s in batch), "n": len(batch)})
        return r

    store.put_samples = timed_put  # type: ignore[method-assign]
    sink = SampleSink(store, a.host, on_error=errors.append)
    late: list[float] = []
    ticks = int(a.seconds)
    try:
        for i in range(ticks):
            due = start_at + a.phase + i
            wait = due - time.time()
            if wait > 0:
                time.sleep(wait)
            now = time.time()
            late.append(now - due)
            rec = dict(template, time=now, seq=i + 1, data=advanced(template["data"], i))
            sink(rec)
    finally:
        closing = time.time()
        sink.close()
        close_s = time.time() - closing
        store.close()
    Path(a.out).write_text(
        json.dumps(
            {
                "host": a.host,
                "ticks": ticks,
                "stored": sink.stored,
                "connect_s": connect_s,
                "close_s": close_s,
                "late": late,
                "batches": batches,
                "errors": errors,
            }
        )
    )
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
