"""Lustre's rpc_stats and brw_stats tables as Prometheus histograms: each `le` is the largest value Lustre
counts in the row (checked by tallying values the way lprocfs_oh_tally / lprocfs_oh_tally_log2 do and printing
the rows the way Lustre prints them), units converted to the metric's base unit, cumulative buckets, `+Inf`,
`_sum`, `_count`, and parsed by prometheus_client's parsers of both formats."""

from __future__ import annotations

import random

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families
from prometheus_client.parser import text_string_to_metric_families

from iolens.monitor import prom_histogram, prometheus
from iolens.monitor.common import size_value
from iolens.monitor.lustre import histogram

from .monitor_helpers import sample_text

TARGETS = {
    "osd-ldiskfs.lfs-OST0000.brw_stats": ("osd-ldiskfs-brw_stats-2.15.txt", "osd", "lfs-OST0000"),
    "osc.lfs-OST0000-osc-ffff88.rpc_stats": ("osc-rpc_stats-2.17.txt", "osc", "lfs-OST0000-osc-ffff88"),
    "mdc.lfs-MDT0000-mdc-ffff88.rpc_stats": ("mdc-rpc_stats-2.15.txt", "mdc", "lfs-MDT0000-mdc-ffff88"),
}


def lustre_record() -> dict[str, object]:
    data = {}
    for param, (file, comp, target) in TARGETS.items():
        parsed, skipped = histogram.parse(sample_text(file))
        assert skipped == 0
        kind = param.rsplit(".", 1)[1]
        data[param] = {"kind": kind, "component": comp, "target": target, "file": kind, **parsed}
    return {"time": 1763800000.0, "data": {"lustre": data}}


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = float(s.value)
    return out


def _get(samples: dict, name: str, **labels: str) -> float:  # type: ignore[type-arg]
    return samples[(name, tuple(sorted(labels.items())))]


OST = {"component": "osd", "target": "lfs-OST0000"}
OSC = {"component": "osc", "target": "lfs-OST0000-osc-ffff88"}


def test_brw_stats_tables_are_histograms_in_base_units() -> None:
    s = _samples(prometheus.exposition(lustre_record()))
    size = "lustre_brw_disk_io_size_bytes"
    # disk I/O size, write: 4K: 5, 1M: 2000, 4M: 1 (log2: the row printed 4K holds sizes up to 4096 bytes).
    w = {**OST, "operation": "write"}
    assert _get(s, size + "_bucket", le="4096.0", **w) == 5
    assert _get(s, size + "_bucket", le="8192.0", **w) == 5  # cumulative through the empty rows
    assert _get(s, size + "_bucket", le="1048576.0", **w) == 2005
    assert _get(s, size + "_bucket", le="2097152.0", **w) == 2005
    assert _get(s, size + "_bucket", le="4194304.0", **w) == 2006
    assert _get(s, size + "_bucket", le="+Inf", **w) == 2006
    assert _get(s, size + "_count", **w) == 2006
    assert _get(s, size + "_sum", **w) == 5 * 4096 + 2000 * 1048576 + 4194304
    # I/O time (1/1000s) → seconds: the row printed 1K is 1024 ms.
    t = "lustre_brw_io_time_seconds"
    r = {**OST, "operation": "read"}
    assert _get(s, t + "_bucket", le="0.001", **r) == 800
    assert _get(s, t + "_bucket", le="0.002", **r) == 1000
    assert _get(s, t + "_bucket", le="1.024", **r) == 1050
    assert _get(s, t + "_count", **r) == 1050
    # pages per bulk r/w: le in pages; the row printed 1K is 1024 pages.
    assert _get(s, "lustre_brw_pages_per_bulk_rw_bucket", le="1024.0", **w) == 2006
    assert _get(s, "lustre_brw_pages_per_bulk_rw_bucket", le="256.0", **w) == 2005
    # Linear tables: the row printed N holds N.
    assert _get(s, "lustre_brw_disk_ios_in_flight_bucket", le="5.0", **w) == 2006
    assert _get(s, "lustre_brw_discontiguous_blocks_bucket", le="3.0", **w) == 2006
    assert _get(s, "lustre_brw_disk_fragmented_ios_bucket", le="1.0", **w) == 2000


def test_rpc_stats_offset_and_latency_rows_print_their_lower_end() -> None:
    s = _samples(prometheus.exposition(lustre_record()))
    r, w = {**OSC, "operation": "read"}, {**OSC, "operation": "write"}
    # offset: row 0 holds offset 0, the row printed 256 holds pages 256..511.
    assert _get(s, "lustre_rpc_offset_pages_bucket", le="0.0", **r) == 100
    assert _get(s, "lustre_rpc_offset_pages_bucket", le="1.0", **r) == 120
    assert _get(s, "lustre_rpc_offset_pages_bucket", le="511.0", **r) == 350
    assert _get(s, "lustre_rpc_offset_pages_bucket", le="1023.0", **w) == 1202
    # RPC latency (us), in units of 1024 ns: the row printed 128 holds up to 256 units.
    assert _get(s, "lustre_rpc_latency_seconds_bucket", le=repr(256 * 1024e-9), **r) == 50
    assert _get(s, "lustre_rpc_latency_seconds_bucket", le=repr(1024 * 1024e-9), **r) == 340
    assert _get(s, "lustre_rpc_latency_seconds_count", **w) == 1202
    assert _get(s, "lustre_rpc_pages_per_rpc_bucket", le="256.0", **w) == 1202
    assert _get(s, "lustre_rpc_rpcs_in_flight_bucket", le="2.0", **w) == 800
    # mdc: the modify RPCs in flight, with operation="modify", and its read/write tables.
    m = {"component": "mdc", "target": "lfs-MDT0000-mdc-ffff88", "operation": "modify"}
    assert _get(s, "lustre_rpc_modify_rpcs_in_flight_bucket", le="1.0", **m) == 52861
    assert _get(s, "lustre_rpc_modify_rpcs_in_flight_count", **m) == 61047
    assert ("lustre_rpc_stats_total", ()) not in s
    assert not any(name in ("lustre_rpc_stats_total", "lustre_brw_stats_total") for name, _ in s)


def _log2_bucket(v: int) -> int:
    """lprocfs_oh_tally_log2: 0 for v = 0, else fls(v - 1), capped at OBD_HIST_MAX - 1 (31)."""
    return min((v - 1).bit_length() if v else 0, 31)


def _upper_of_row(spec: prom_histogram.Spec, printed: str, i: int) -> float:
    """The `le` of bucket i, its row printed as Lustre prints it: `brw` (display_brw_stats: 2^i with K/M),
    `log2` (2^i) or `low` (the lower end, `(i == 0) ? 0 : 1 << (i - 1)`)."""
    label = {
        "brw": str(1 << i) if i < 10 else f"{1 << (i - 10)}K" if i < 20 else f"{1 << (i - 20)}M",
        "log2": str(1 << i),
        "low": str(0 if i == 0 else 1 << (i - 1)),
    }[printed]
    row = {"read": 1} if label.isdigit() else {"read": 1, "bytes": size_value(label)}
    p = prom_histogram.printed(label, row)
    assert p is not None
    return spec.upper(p)


@pytest.mark.parametrize(
    ("kind", "title", "printed", "tally", "unit"),
    [
        ("brw_stats", "disk I/O size", "brw", lambda v: v, 1.0),
        ("brw_stats", "I/O time (1/1000s)", "brw", lambda v: v, 1e-3),
        ("rpc_stats", "pages per rpc", "log2", lambda v: v, 1.0),
        ("rpc_stats", "offset", "low", lambda v: v + 1, 1.0),
        ("rpc_stats", "RPC latency (us)", "low", lambda v: v, 1024e-9),
    ],
)
def test_every_tallied_value_is_within_its_rows_bounds(kind, title, printed, tally, unit) -> None:  # type: ignore[no-untyped-def]
    """Values tallied as Lustre does, rows printed as Lustre does: each value is at most its row's `le` and
    more than the `le` of the row below (so histogram_quantile reads the right interval)."""
    rng = random.Random(19)
    spec = prom_histogram.spec(kind, title)
    assert spec.name != title  # a known table, not a made-up name
    values = [rng.randrange(1, 1 << rng.randrange(1, 24)) for _ in range(2000)] + [1, 2, 3, 4, 5, 4096, 4097]
    if title == "offset":
        values += [0]
    for v in values:
        i = _log2_bucket(tally(v))
        assert v * unit <= _upper_of_row(spec, printed, i) * (1 + 1e-12), (v, i)
        if i > 0:
            assert v * unit > _upper_of_row(spec, printed, i - 1) * (1 - 1e-12), (v, i)


def test_histograms_parse_in_both_formats_with_cumulative_buckets() -> None:
    e = prometheus.build(lustre_record())
    text = e.text()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    om = {f.name: f for f in om_families(e.openmetrics())}
    hist_names = [n for n, f in fams.items() if f.type == "histogram"]
    assert (
        len(hist_names) == 12
    )  # 7 brw_stats tables, 5 rpc_stats tables (modify, pages, in flight, offset, latency)
    for name in hist_names:
        assert om[name].type == "histogram"
        series: dict[tuple[tuple[str, str], ...], list[tuple[float, float]]] = {}
        counts = {}
        for s in fams[name].samples:
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            if s.name.endswith("_bucket"):
                series.setdefault(key, []).append((float(s.labels["le"]), s.value))
            elif s.name.endswith("_count"):
                counts[key] = s.value
        for key, buckets in series.items():
            les = [le for le, _ in buckets]
            assert les == sorted(les) and les[-1] == float("inf"), name
            values = [v for _, v in buckets]
            assert values == sorted(values), (name, key)
            assert values[-1] == counts[key]
    assert "lustre_brw_disk_io_size_bytes" in hist_names and "lustre_rpc_rpcs_in_flight" in hist_names
    # Every HELP says what _sum is.
    assert all("_sum is an upper bound" in fams[n].documentation for n in hist_names)


def test_rows_that_are_not_counts_are_left_out_of_the_histogram() -> None:
    table = {"buckets": {"9" * 5000: {"read": 1}, "x": {"read": 2}, "4": {"read": 3}, "8": {"read": 4}}}
    spec = prom_histogram.spec("rpc_stats", "pages per rpc")
    assert prom_histogram.columns("rpc_stats", table, spec) == {"read": [(4.0, 3), (8.0, 4)]}
    entry = {
        "kind": "rpc_stats",
        "component": "osc",
        "target": "t",
        "file": "rpc_stats",
        "tables": {"x y": table},
    }
    text = prometheus.exposition({"time": 1.0, "data": {"lustre": {"osc.t.rpc_stats": entry}}})
    assert 'lustre_rpc_x_y_bucket{component="osc",target="t",operation="read",le="+Inf"} 7' in text
