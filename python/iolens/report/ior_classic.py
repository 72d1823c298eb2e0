"""IOR 4's classic text (what `ior` prints, IOR's `-O summaryFormat=default`), written from iolens's ior
documents so that scripts that parse IOR's output read iolens's: the banner, per test its options and result
rows, the summary of all tests. Layout, labels and column positions are those of IOR 4.0.0's
src/ior-output.c; the figures are iolens's (docs/ior.md, "Output", says where they differ).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from iolens.report.ior_test import (
    IOR_VERSION,
    MIB,
    Doc,
    Row,
    Streams,
    SummaryRow,
    Test,
    command_line,
    ctime,
    debug_banner,
    machine,
    summary_always,
    test_events,
    test_preamble,
    tests_of,
    wear_out_pairs,
)


def pp_double(x: float, append: str) -> str:
    """IOR's PPDouble: left-justified in 10, 6 decimals below 1, 2 below 3600, none above."""
    if x < 0:
        return "   -      " + append
    precision = 6 if x < 1 else 2 if x < 3600 else 0
    return f"{x:<10.{precision}f}{append}"


def _kv(key: str, value: str | int) -> str:
    return f"{key:<20}: {value}"


TABLE_HEADER = (
    "access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   "
    "total(s)   iter"
)
TABLE_RULE = (
    "------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   "
    "--------   ----"
)
SUMMARY_HEADER = (
    f"{'Operation':<9} {'Max(MiB)':>10} {'Min(MiB)':>10} {'Mean(MiB)':>10} {'StdDev':>10} {'Max(OPs)':>10} "
    f"{'Min(OPs)':>10} {'Mean(OPs)':>10} {'StdDev':>10} {'Mean(s)':>10} {'Stonewall(s)':>10} "
    f"{'Stonewall(MiB)':>13} Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt "
    f"{' blksiz':>8} {'xsize':>8} {'aggs(MiB)':>9} {'API':>5} RefNum"
)
REMOVE_PREFIX = "remove    " + "-          " * 3 + " " + "-          " * 5


def result_row(r: Row) -> str:
    return (
        f"{r.access:<10}"
        + pp_double(r.bw_mib, " ")
        + pp_double(r.iops, " ")
        + pp_double(r.latency_s, "  ")
        + pp_double(r.block_kib, " ")
        + pp_double(r.xfer_kib, " ")
        + pp_double(r.open_s, " ")
        + pp_double(r.xfer_s, " ")
        + pp_double(r.close_s, " ")
        + pp_double(r.total_s, " ")
        + f"{r.iteration:<4d}"
    )


def remove_row(total_s: float, iteration: int) -> str:
    return REMOVE_PREFIX + pp_double(total_s, " ") + f"{iteration:<4d}"


def summary_row(t: Test, s: SummaryRow) -> str:
    if s.stonewall_s is not None and s.stonewall_mib is not None:
        wall = f"{s.stonewall_s:10.2f} {s.stonewall_mib:13.2f} "
    else:
        wall = f"{'NA':>10} {'NA':>13} "
    return (
        f"{s.operation:<9} {s.bw_max:10.2f} {s.bw_min:10.2f} {s.bw_mean:10.2f} {s.bw_sd:10.2f} "
        f"{s.ops_max:10.2f} {s.ops_min:10.2f} {s.ops_mean:10.2f} {s.ops_sd:10.2f} {s.time_mean:10.5f} "
        + wall
        + f"{t.id:5d} {t.tasks:6d} {t.tpn:3d} {t.reps:4d} {t.fpp:3d} {t.reorder:5d} {t.task_offset:8d} "
        f"{t.reorder_random:9d} {t.reorder_seed:4d} {t.segments:6d} {t.block:8d} {t.xfer:8d} "
        f"{s.agg_mib:9.1f} {t.api:>3} {t.ref_num:6d}"
    )


def render_ior_classic(docs: Sequence[Doc], verbosity: int, out: TextIO, log: TextIO | None = None) -> None:
    """IOR 4's text output for these tests (IOR's `-O summaryFormat=default`)."""
    s = Streams(out, log)
    tests = tests_of(docs)
    if not tests:
        return
    first = docs[0]
    s.res(f"IOR-{IOR_VERSION}: MPI Coordinated Test of Parallel I/O")
    s.res(_kv("Began", ctime(first.get("started_at"))))
    s.res(_kv("Command line", command_line(first)))
    s.res(_kv("Machine", machine(first, verbosity)))
    for t in tests:
        s.res(_kv("TestID", t.id))
        s.res(_kv("StartTime", ctime(t.doc.get("started_at"))))
        size, used, inodes, used_inodes = t.capacity()
        s.res(_kv("Path", t.first_file))
        s.res(_kv("FS", f"{size}   Used FS: {used}   Inodes: {inodes}   Used Inodes: {used_inodes}"))
        if verbosity >= 3:
            s.res("\nParameters: ")
            for key, value in t.parameters(verbosity):
                s.res(_kv(key, value))
        for line in test_preamble(t, verbosity) + debug_banner(t):
            s.logl(line)
        s.res("\nOptions: ")
        for key, value in t.options(verbosity):
            s.res(_kv(key, value))
        s.res("\nResults: ")
        for e in test_events(t, verbosity):
            if e.kind == "log":
                s.logl(e.text)
            elif e.kind == "header":
                s.res("")
                s.res(TABLE_HEADER)
                s.res(TABLE_RULE)
            elif e.kind == "row" and e.row is not None:
                s.res(result_row(e.row))
            elif e.kind == "remove":
                s.res(remove_row(e.time_s, e.iteration))
        if verbosity >= 1 and summary_always(t.doc):
            s.res("")
            s.res(SUMMARY_HEADER)
            for row in t.summaries():
                s.res(summary_row(t, row))
        elif verbosity >= 1:
            if t.writes():
                w = t.max_bw("write")
                s.res(f"Max Write: {w / MIB:.2f} MiB/sec ({w / 1e6:.2f} MB/sec)")
            if t.reads():
                r = t.max_bw("read")
                s.res(f"Max Read:  {r / MIB:.2f} MiB/sec ({r / 1e6:.2f} MB/sec)")
        pairs = wear_out_pairs(t)
        if pairs is not None:
            s.logl(f"Pairs deadlineForStonewallingaccessed: {pairs}")
    s.res("")
    s.res("Summary of all tests:")
    s.res(SUMMARY_HEADER)
    for t in tests:
        for row in t.summaries():
            s.res(summary_row(t, row))
    s.res(_kv("Finished", ctime(docs[-1].get("ended_at"))))
    s.out.flush()
