"""Lustre's rpc_stats and brw_stats tables as Prometheus histograms: the upper bound of each printed row.

Lustre fills these tables with lprocfs_oh_tally (bucket i holds the value i) or lprocfs_oh_tally_log2
(bucket i holds the values v with ceil(log2 v) = i, that is (2^(i-1), 2^i], and 0 and 1 in bucket 0), and
prints bucket i as a number that is, for most tables, that bucket's largest value: i for the linear ones,
2^i (with K/M suffixes, 1K = 1024) for the log2 ones (lustre/obdclass/lprocfs_status.c, display_brw_stats in
lprocfs_status_server.c, osc_rpc_stats_seq_show in osc/lproc_osc.c, obd_mod_rpc_stats_seq_show in
obdclass/genops.c). Two osc tables print the *lower* end instead, as `(i == 0) ? 0 : 1 << (i - 1)`:

- `offset`: tallied as log2(offset in pages + 1), so the row printed P (> 0) holds offsets P .. 2P-1 pages
  and the row printed 0 holds offset 0;
- `RPC latency (us)`: tallied as log2 of the latency in units of 1024 ns (`ns >> 10`, at least 1), so the
  row printed P holds latencies up to 2P such units (the row printed 0: 1 unit).

Lustre keeps no sum of the values, and a histogram without `_sum` is refused by many tools; `_sum` is
therefore an upper-bound estimate, each bucket's count times its upper bound (said in each HELP text and in
docs/monitor.md): `rate(_sum) / rate(_count)` is at most 2 times the true mean for a log2 table.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from iolens.monitor.common import Tree, size_value

# Latency in rpc_stats is counted in units of 1024 ns (`ktime_to_ns() >> 10`).
_BINARY_US = 1024e-9


@dataclass(frozen=True)
class Spec:
    """How one table becomes a histogram: the metric's name after `lustre_brw_` / `lustre_rpc_`, what its
    values are, and the upper bound, in the metric's base unit, of the row printed P."""

    name: str
    what: str
    upper: Callable[[int], float]


def _same(p: int) -> float:
    return float(p)


def _millis(p: int) -> float:
    return p / 1000


def _offset(p: int) -> float:
    return float(2 * p - 1) if p > 0 else 0.0


def _latency(p: int) -> float:
    return (2 * p if p > 0 else 1) * _BINARY_US


# Titles as Lustre prints them (the parser's table names).
SPECS: dict[str, dict[str, Spec]] = {
    "brw_stats": {
        "pages per bulk r/w": Spec("pages_per_bulk_rw", "pages in a bulk read or write RPC", _same),
        "discontiguous pages": Spec("discontiguous_pages", "discontiguous pages in an RPC", _same),
        "discontiguous blocks": Spec("discontiguous_blocks", "discontiguous blocks in an RPC", _same),
        "disk fragmented I/Os": Spec("disk_fragmented_ios", "disk I/Os an RPC was split into", _same),
        "disk I/Os in flight": Spec("disk_ios_in_flight", "disk I/Os in flight when one was sent", _same),
        "I/O time (1/1000s)": Spec("io_time_seconds", "seconds a disk I/O took", _millis),
        "disk I/O size": Spec("disk_io_size_bytes", "bytes of a disk I/O", _same),
        "block maps msec": Spec("block_maps_seconds", "seconds a block mapping took", _millis),
    },
    "rpc_stats": {
        "pages per rpc": Spec("pages_per_rpc", "pages in a bulk RPC", _same),
        "rpcs in flight": Spec("rpcs_in_flight", "RPCs in flight when one was sent (itself included)", _same),
        "modify rpcs in flight": Spec(
            "modify_rpcs_in_flight", "metadata-modifying RPCs in flight when one was sent", _same
        ),
        "offset": Spec("offset_pages", "offset of an RPC in its object, in pages", _offset),
        "RPC latency (us)": Spec("latency_seconds", "seconds from sending a bulk RPC to its reply", _latency),
    },
}


def spec(kind: str, title: str) -> Spec:
    """The spec of a table; a title this list lacks (a newer Lustre) gets a name made from it, and its
    printed numbers are taken as upper bounds (what most of Lustre's tables print)."""
    known = SPECS.get(kind, {}).get(title)
    if known is not None:
        return known
    slug = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_") or "table"
    return Spec(slug, f"{title!r} (a table this iolens does not know)", _same)


def printed(bucket: str, row: Tree) -> int | None:
    """The number a row is printed with (`4K` is 4096), or None for a row that is not a number (or one too
    long to be a count: size_value bounds the digits)."""
    if "bytes" in row:
        return int(row["bytes"])
    return size_value(bucket)


def columns(kind: str, table: Tree, spec_: Spec) -> dict[str, list[tuple[float, int]]]:
    """{operation: [(upper bound, count)]} of one table: read and write, or modify for mdc's modify RPCs."""
    out: dict[str, list[tuple[float, int]]] = {}
    for bucket, row in table.get("buckets", {}).items():
        p = printed(bucket, row)
        if p is None:
            continue
        le = spec_.upper(p)
        for op, count in row.items():
            if op != "bytes":
                out.setdefault(op, []).append((le, int(count)))
    return out


def upper_sum(buckets: list[tuple[float, int]]) -> float:
    """The `_sum` estimate: each count times its bucket's upper bound."""
    return float(sum(le * n for le, n in buckets))
