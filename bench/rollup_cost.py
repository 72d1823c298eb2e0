#!/usr/bin/env python3
"""What the samples' per-minute rollup (python/iolens/store/rollup.py) costs to store and saves to read.

Storing: monitor batches as `iolens monitor --db` hands them over (Store.put_samples of 10 s of a node's
596 values a second: 5,960 samples per batch; NODES batches a round, as many nodes flushing), into a database
with the rollup's triggers and into one without them (synthetic.without_rollup: iolens before the rollup),
alternating which goes first, ROUNDS rounds, on SQLite (a file on /var/tmp, ext4) and on a private
PostgreSQL server with its durability settings left on (fsync, synchronous_commit), as a center runs it.
Wall time per round and, on PostgreSQL, the server's CPU per 1,000 samples; medians and their ratio.

Reading: the dashboard's question over 24 h (a host's 58 series at 1 s: 5,011,200 samples): the buckets
the portal asked for before the rollup (600 per series from the window's start: 144 s each, every sample
read) against those it asks for now (whole minutes from the minute that holds the start: 180 s, read from
the rollup), alternating, medians of READS.

    .venv/bin/python bench/rollup_cost.py            # writes bench/results/rollup_cost.txt
    .venv/bin/python bench/rollup_cost.py --quick    # small, prints only
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

import benchlib as bl
from monitor_pg_ingest import Server, server

from iolens.store import portal_monitor, synthetic
from iolens.store.records import Sample
from iolens.store.store import Store

VALUES_PER_NODE_S = 596  # what one node's monitor records a second (bench/monitor_pg_ingest.py's template)
FLUSH_S = 10  # the sink's batch: 10 s of samples


def node_batch(node: int, t0: float, rng: random.Random) -> list[Sample]:
    """A node's 10 s of samples (values drawn from rng)."""
    host = f"node{node:04d}"
    return [
        Sample(t0 + s, host, "lustre" if k % 3 else "diskstats", f"target{k // 20}", f"metric{k % 20}_per_s",
               rng.uniform(0, 1e9))
        for s in range(FLUSH_S) for k in range(VALUES_PER_NODE_S)
    ]  # fmt: skip


def ingest(urls: dict[str, str], rounds: int, nodes: int, pg: Server | None) -> dict[str, list[float]]:
    """Wall seconds per round (and server CPU seconds, key NAME+'-cpu') of each database, alternating."""
    stores = {name: Store.open(url) for name, url in urls.items()}
    synthetic.without_rollup(stores["without rollup"].db)
    out: dict[str, list[float]] = {}
    try:
        for rnd, name in bl.alternating(list(urls), rounds + 1):
            # Every round writes the next 10 s; both databases get the same batches.
            batches = [
                node_batch(n, 1.8e9 + rnd * FLUSH_S, random.Random(rnd * 1000 + n)) for n in range(nodes)
            ]
            random.Random(rnd).shuffle(batches)  # nodes flush in no set order
            cpu0 = pg.cpu_s() if pg else 0.0
            t = time.perf_counter()
            for i, batch in enumerate(batches):
                stores[name].put_samples(batch, f"r{rnd}-{i}")
            wall = time.perf_counter() - t
            if rnd == 0:
                continue  # the first round creates the series: not what a monitor does every 10 s
            out.setdefault(name, []).append(wall)
            if pg:
                out.setdefault(name + "-cpu", []).append(pg.cpu_s() - cpu0)
    finally:
        for s in stores.values():
            s.close()
    return out


def reads(url: str, samples: int, rounds: int) -> dict[str, list[float]]:
    """Seconds per dashboard question over 24 h, before (every sample) and now (the rollup), alternating."""
    shape = synthetic.Shape(jobs=0, runs=0, samples=samples, hosts=1, users=1)
    now = 1.8e9 + 86_400 + 17.0
    out: dict[str, list[float]] = {}
    with Store.open(url) as store:
        built = time.perf_counter()
        synthetic.fill(store.db, shape, now)
        bl.progress(f"  {samples:,} samples stored with the rollup in {time.perf_counter() - built:.1f} s")
        ids = [s.id for s in portal_monitor.find_series(store.db, synthetic.hosts(shape), "rates", limit=100)]
        ids += [
            s.id for s in portal_monitor.find_series(store.db, synthetic.hosts(shape), "gauges", limit=100)
        ]
        ids += [
            s.id for s in portal_monitor.find_series(store.db, synthetic.hosts(shape), "counters", limit=100)
        ]
        t1 = now
        t0 = t1 - 86_400
        ways = {
            "every sample (before)": (144.0, t0),
            "rollup (now)": (180.0, float(int(t0 // 60) * 60)),
        }
        figures: dict[str, int] = {}
        for _, way in bl.alternating(list(ways), rounds):
            step, origin = ways[way]
            t = time.perf_counter()
            got = portal_monitor.buckets(store.db, ids, t0, t1, step, origin)
            out.setdefault(way, []).append(time.perf_counter() - t)
            figures[way] = sum(k.count for v in got.values() for k in v)
        out["series"] = [float(len(ids))]
        out["values counted"] = [float(figures[w]) for w in ways]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--nodes", type=int, default=20, help="node batches per round")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    rounds, nodes = (2, 3) if args.quick else (args.rounds, args.nodes)
    read_samples = 58 * 3600 if args.quick else 58 * 86_400
    report = bl.Report("rollup_cost", "The samples' per-minute rollup: its cost to store, its gain to read")
    report.header = bl.machine_lines(paths=[Path("/var/tmp")])
    names = ["with rollup", "without rollup"]
    with bl.scratch_dir(Path("/var/tmp"), "rollup-cost") as scratch:
        scratch.chmod(0o755)  # the PostgreSQL server runs as nobody, in a directory under it
        rows = []
        bl.progress("SQLite: storing")
        lite = ingest({n: str(scratch / f"{n.replace(' ', '-')}.db") for n in names}, rounds, nodes, None)
        bl.progress("PostgreSQL: storing")
        with server(scratch / "pg", max_connections=20) as srv:
            for db in ("with_rollup", "without_rollup", "reads"):
                srv.psql("postgres", f"CREATE DATABASE {db}")
            urls = {db: srv.url(db) for db in ("with_rollup", "without_rollup", "reads")}
            pg = ingest({n: urls[n.replace(" ", "_")] for n in names}, rounds, nodes, srv)
            bl.progress("PostgreSQL: reading")
            pg_reads = reads(urls["reads"], read_samples, rounds)
        bl.progress("SQLite: reading")
        lite_reads = reads(str(scratch / "reads.db"), read_samples, rounds)
        per_round = nodes * FLUSH_S * VALUES_PER_NODE_S
        for backend, got in (("SQLite", lite), ("PostgreSQL", pg)):
            w, wo = bl.median(got["with rollup"]), bl.median(got["without rollup"])
            paired = [a / b for a, b in zip(got["with rollup"], got["without rollup"], strict=True)]
            row = [backend, f"{per_round:,}", f"{wo * 1000:.0f}", f"{w * 1000:.0f}", f"{w / wo:.2f}",
                   bl.spread(paired)]  # fmt: skip
            if backend == "PostgreSQL":
                cw, cwo = bl.median(got["with rollup-cpu"]), bl.median(got["without rollup-cpu"])
                row += [f"{cwo / per_round * 1e6:.1f}", f"{cw / per_round * 1e6:.1f}", f"{cw / cwo:.2f}"]
            else:
                row += ["", "", ""]
            rows.append(row)
        report.section(
            f"Storing: {nodes} node batches of {FLUSH_S} s × {VALUES_PER_NODE_S} values a round, "
            f"{rounds} rounds alternating (medians)",
            bl.table(["backend", "samples/round", "without ms", "with ms", "ratio", "ratio per round",
                      "server CPU ms/1k without", "with", "CPU ratio"], rows),
        )  # fmt: skip
        rows = []
        for backend, got in (("SQLite", lite_reads), ("PostgreSQL", pg_reads)):
            before, now = bl.median(got["every sample (before)"]), bl.median(got["rollup (now)"])
            rows.append([backend, f"{int(got['series'][0])}", f"{int(got['values counted'][0]):,}",
                         f"{before * 1000:.0f}", f"{now * 1000:.0f}", f"{before / now:.1f}"])  # fmt: skip
        report.section(
            f"Reading: the 24 h dashboard's buckets of one host, {rounds} rounds alternating (medians)",
            bl.table(["backend", "series", "values in window", "every sample ms", "rollup ms", "speed-up"],
                     rows),
        )  # fmt: skip
        report.notes(
            "Storing with the rollup adds, in the same transaction, one upsert per sample (SQLite: a row "
            "trigger) or one grouped upsert per insert statement (PostgreSQL: a statement trigger reading "
            "the inserted rows from its transition table).",
            "Reading: 'every sample' is the query the portal ran before (600 buckets from the window's "
            "start); 'rollup' the one it runs now (480 buckets of 3 whole minutes, the window's partial "
            "first and last minutes read from the samples).",
        )
        report.command(["python", "bench/rollup_cost.py", *(["--quick"] if args.quick else [])])
    report.emit(args.out, args.quick)


if __name__ == "__main__":
    bl.main_wrapper(main)
