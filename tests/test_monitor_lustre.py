"""The Lustre parsers on the shared samples and on a variant built for every layout quirk of
shared/data/lustre/README.md; `iolens monitor parse`; the collector finding parameters as lctl does, in files
and through a real `lctl` program."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from iolens.monitor.common import parse_time, size_value
from iolens.monitor.lustre import histogram, jobstats, params, stats
from iolens.monitor.lustre.collector import LustreCollector
from iolens.monitor.parsefile import detect, parse_text

from .monitor_helpers import LUSTRE_DATA, run_iolens, sample_text

# --- the shared samples -------------------------------------------------------------------------------------


def test_llite_sample_with_param_line_reads_every_counter_with_sumsq() -> None:
    out = parse_text(sample_text("llite-stats-2.14.txt"))
    assert out["kind"] == "stats" and out["skipped_lines"] == 0
    (entry,) = out["entries"]
    assert entry["param"] == "llite.ai400x2-ff47bce9ca35d800.stats"
    assert entry["component"] == "client" and entry["target"] == "ai400x2-ff47bce9ca35d800"
    assert entry["snapshot_time"] == pytest.approx(1710759783.271040288, abs=1e-6)
    c = entry["counters"]
    assert len(c) == 14
    assert c["ioctl"] == {"samples": 114, "unit": "reqs"}
    assert c["open"] == {
        "samples": 35955554, "unit": "usecs", "min": 0, "max": 172939, "sum": 3393651645,
        "sumsq": 8836730033307,
    }  # fmt: skip
    assert c["openclosetime"]["sumsq"] == 2084188699388296969


def test_old_osc_sample_keeps_the_legacy_usec_unit_and_reads_secs_usecs() -> None:
    (entry,) = parse_text(sample_text("osc-stats-old-usecs.txt"))["entries"]
    assert entry["param"] is None
    assert entry["snapshot_time"] == pytest.approx(1298995851.710784, abs=1e-6)
    assert entry["counters"]["req_waittime"]["unit"] == "usec"
    assert entry["counters"]["req_waittime"]["sumsq"] == 26831627156812909
    assert entry["counters"]["read_bytes"]["sum"] == 5971968


def test_md_stats_unpadded_usecs_fraction_is_a_count_of_microseconds() -> None:
    (entry,) = parse_text(sample_text("mdt-md_stats-old.txt"))["entries"]
    # ".20113" is 20113 µs, not 0.20113 s.
    assert entry["snapshot_time"] == pytest.approx(1438693238.020113, abs=1e-7)
    assert entry["counters"]["getxattr"] == {"samples": 6145349681, "unit": "reqs"}
    assert len(entry["counters"]) == 16


def test_export_stats_sample_counts_and_bytes() -> None:
    (entry,) = parse_text(sample_text("obdfilter-export-stats-2.12.txt"))["entries"]
    assert entry["counters"]["read_bytes"] == {
        "samples": 203238095, "unit": "bytes", "min": 4096, "max": 1048576, "sum": 78026117632000,
    }  # fmt: skip
    assert entry["counters"]["ping"]["samples"] == 78020757


def test_job_stats_sample_reads_max_without_space_and_zero_sample_counters() -> None:
    out = parse_text(sample_text("ost-job_stats-2.12.txt"))
    assert out["kind"] == "job_stats" and out["skipped_lines"] == 0
    jobs = out["entries"][0]["jobs"]
    assert list(jobs) == ["cluster-testjob1", "testjob2"]
    j1 = jobs["cluster-testjob1"]
    assert j1["snapshot_time"] == 1461772761
    assert j1["counters"]["write_bytes"] == {
        "samples": 25, "unit": "bytes", "min": 1048576, "max": 16777216, "sum": 26214400,
    }  # fmt: skip
    assert j1["counters"]["getattr"] == {"samples": 0, "unit": "reqs"}
    assert len(j1["counters"]) == 12
    assert jobs["testjob2"]["counters"]["read_bytes"]["sum"] == 1024


def test_every_shared_stats_sample_is_recognised_without_a_kind() -> None:
    kinds = {p.name: detect(p.read_text()) for p in sorted(LUSTRE_DATA.glob("*.txt"))}
    assert kinds == {
        "llite-stats-2.14.txt": "stats",
        "mdt-md_stats-old.txt": "stats",
        "obdfilter-export-stats-2.12.txt": "stats",
        "osc-stats-old-usecs.txt": "stats",
        "ost-job_stats-2.12.txt": "job_stats",
        "mdt-job_stats-2.12.txt": "job_stats",
        "mdc-rpc_stats-2.15.txt": "rpc_stats",
        "osc-rpc_stats-2.17.txt": "rpc_stats",
        "osd-ldiskfs-brw_stats-2.15.txt": "brw_stats",
    }


# --- variants the README describes --------------------------------------------------------------------------


def test_header_times_in_every_layout() -> None:
    assert parse_time("1438693238.20113", "secs.usecs") == pytest.approx(1438693238.020113, abs=1e-7)
    assert parse_time("1438693238.020113", "secs.usecs") == pytest.approx(1438693238.020113, abs=1e-7)
    assert parse_time("1438693238.5", "secs.usecs") == pytest.approx(1438693238.000005, abs=1e-7)
    assert parse_time("1710759783.271040288", "secs.nsecs") == pytest.approx(1710759783.271040288, abs=1e-6)
    assert parse_time("1710759783.5", "secs.nsecs") == pytest.approx(1710759783.0000000005, abs=1e-6)
    assert parse_time("1461772761") == 1461772761.0
    assert parse_time("12.25") == 12.25
    assert parse_time("x.5", "secs.nsecs") is None


def test_start_and_elapsed_lines_colon_names_and_parenthesised_units() -> None:
    text = (
        "snapshot_time:            1700000100.000000500 secs.nsecs\n"
        "start_time               1700000000.000000000 secs.nsecs\n"
        "elapsed_time             100.000000500 (secs.nsecs)\n"
        "read_bytes               3 samples [bytes] 4096 1048576 1056768 1099528404992\n"
    )
    data, skipped = stats.parse(text)
    assert skipped == 0
    assert data["start_time"] == 1700000000.0
    assert data["elapsed_time"] == pytest.approx(100.0000005)
    assert data["snapshot_time"] == pytest.approx(1700000100.0000005, abs=1e-6)
    assert data["counters"]["read_bytes"]["sum"] == 1056768


def test_35_wide_names_and_legacy_units_split_on_whitespace() -> None:
    long = "statfs_with_a_rather_long_name_here"  # 35 characters, as 2.17 pads them
    text = (
        f"{'snapshot_time':<35}1710759783.271040288 secs.nsecs\n"
        f"{long:<35} 7 samples [sec] 1 3 12\n"
        f"{'ldlm_bl_callback':<35}9 samples [bufs]\n"
        f"{'req_waittime':<35}5 samples [usec] 10 20 75 1225\n"
        f"{'write':<25}4 samples [usecs] 5 9 28 206\n"
    )
    data, skipped = stats.parse(text)
    assert skipped == 0
    c = data["counters"]
    assert c[long] == {"samples": 7, "unit": "sec", "min": 1, "max": 3, "sum": 12}
    assert c["ldlm_bl_callback"] == {"samples": 9, "unit": "bufs"}
    assert c["req_waittime"]["sumsq"] == 1225 and c["write"]["unit"] == "usecs"


def test_malformed_stats_lines_are_skipped_and_counted() -> None:
    text = (
        "snapshot_time 1700000000.1 secs.nsecs\n"
        "open 12 samples [usecs] 1 2\n"  # 2 numbers: neither count-only nor min/max/sum
        "close x samples [usecs]\n"
        "garbage\n"
        "getattr 5 samples [usecs] 1 9 20 100\n"
    )
    data, skipped = stats.parse(text)
    assert skipped == 3
    assert list(data["counters"]) == ["getattr"]


def test_zero_sample_counters_absent_then_present_count_from_zero() -> None:
    from iolens.monitor.common import rates

    c = LustreCollector(mode="files", roots=())
    before, _ = stats.parse("snapshot_time 100.0 secs.nsecs\nopen 10 samples [usecs] 1 5 30 200\n")
    after, _ = stats.parse(
        "snapshot_time 102.0 secs.nsecs\n"
        "open 30 samples [usecs] 1 5 90 600\n"
        "rename 4 samples [usecs] 2 2 8 16\n"
    )
    r = rates({"x": before}, {"x": after}, 2.0, c)
    assert r["x"]["counters"]["open"]["samples"] == 10.0
    # rename was left out while it had no samples: it went from 0 to 4 in the interval.
    assert r["x"]["counters"]["rename"]["samples"] == 2.0
    assert "min" not in r["x"]["counters"]["open"]


JOB_STATS_216 = """job_stats:
- job_id:          "has space\\x2fslash"
  snapshot_time:   1700000100.123456789 secs.nsecs
  start_time:      1700000000.000000000 secs.nsecs
  elapsed_time:    100.123456789 secs.nsecs
  read_bytes:  { samples: 2, unit: bytes, min: 4096, max: 1048576, sum: 1052672, sumsq: 1099528404992, \
hist: { 4K: 1, 1M: 1 } }
  write_bytes: { samples:    0, unit: bytes, min:  0, max:  0, sum:   0, sumsq:   0, hist: {  } }
  read:        { samples:    2, unit: usecs, min: 12, max: 250, sum: 262, sumsq: 62644 }
  punch:           { samples:           1, unit:  reqs }
- job_id:          'dd.0'
  snapshot_time:   1700000101.5 secs.nsecs
  write_bytes:     { samples:           1, unit: bytes, min: 1048576, max:16777216, sum:16777216 }
- job_id:          plain
  snapshot_time:   1700000102
  getattr:         { unit: reqs, samples: 3 }
"""


def test_job_stats_216_quoted_ids_hist_maps_sumsq_and_start_time() -> None:
    data, skipped = jobstats.parse(JOB_STATS_216)
    assert skipped == 0
    jobs = data["jobs"]
    assert list(jobs) == ["has space/slash", "dd.0", "plain"]
    j = jobs["has space/slash"]
    assert j["start_time"] == 1700000000.0 and j["elapsed_time"] == pytest.approx(100.123456789)
    assert j["counters"]["read_bytes"]["hist"] == {"4K": 1, "1M": 1}
    assert j["counters"]["read_bytes"]["sumsq"] == 1099528404992
    assert j["counters"]["write_bytes"]["hist"] == {}
    assert j["counters"]["read"]["unit"] == "usecs"
    assert jobs["dd.0"]["counters"]["write_bytes"]["max"] == 16777216
    # Keys in another order go through the tolerant reader.
    assert jobs["plain"]["counters"]["getattr"] == {"unit": "reqs", "samples": 3}


def test_the_three_job_stats_readers_agree_on_a_216_text() -> None:
    """A text with no odd line is read in one pass over the whole text; job by job and line by line must
    give the same jobs (hist maps, empty ones too, sumsq, header times, quoted ids)."""
    text = (
        JOB_STATS_216.split("- job_id:          plain")[0]
        + "- job_id:          plain\n"
        + "  snapshot_time:   1700000102 secs.nsecs\n"
        + "  getattr:         { samples: 3, unit: reqs }\n"
        + "  open:            { samples: 0, unit: usecs, min: 0, max: 0, sum: 0, sumsq: 0, hist: {} }\n"
    )
    whole = jobstats._whole_text("\n" + text, ("\n" + text).index("\n- job_id"))
    assert whole is not None, "the common layout must take the one-pass reader"
    data, skipped = jobstats.parse(text)
    assert skipped == 0 and data["jobs"] == whole
    heads = [m.start() for m in jobstats._JOB.finditer("\n" + text)] + [len(text) + 1]
    for job_id, a, b in zip(whole, heads, heads[1:], strict=False):
        body = ("\n" + text)[a:b]
        nl = body.index("\n", 1)
        assert jobstats._fast_job("\n" + text, a + nl, b) == whole[job_id]
        assert jobstats._slow_job(body[nl:]) == (whole[job_id], 0)
    assert whole["plain"]["counters"]["open"]["hist"] == {}
    assert whole["has space/slash"]["counters"]["write_bytes"]["hist"] == {}
    assert whole["has space/slash"]["counters"]["read_bytes"]["sumsq"] == 1099528404992


def test_job_ids_with_escapes_decode_to_their_bytes() -> None:
    assert jobstats.unquote_job_id('"a\\x0ab"') == "a\nb"
    assert jobstats.unquote_job_id('"caf\\xc3\\xa9"') == "café"
    assert jobstats.unquote_job_id('"bad\\xff"') == "bad\\xff"
    assert jobstats.unquote_job_id('"q\\"uote"') == 'q"uote'
    assert jobstats.unquote_job_id("bare.id") == "bare.id"


def test_malformed_job_stats_lines_are_skipped_and_counted() -> None:
    text = (
        "job_stats:\n"
        "  read_bytes: { samples: 1, unit: bytes }\n"  # before any job: skipped
        "- job_id: j\n"
        "  snapshot_time: soon\n"
        "  read_bytes: { samples: one, unit: bytes }\n"
        "  write_bytes: { samples: 2, unit: bytes, min: 1, max: 1, sum: 2 }\n"
        "  nonsense\n"
    )
    data, skipped = jobstats.parse(text)
    assert skipped == 4
    assert data["jobs"]["j"]["counters"] == {
        "write_bytes": {"samples": 2, "unit": "bytes", "min": 1, "max": 1, "sum": 2}
    }


RPC_STATS = (
    "osc.lfs-OST0000-osc-ffff8800b1b2c000.rpc_stats=\n"
    "snapshot_time:         1567452327.426346009 (secs.nsecs)\n"
    "start_time:            1567450000.000000000 (secs.nsecs)\n"
    "elapsed_time:          2327.426346009 (secs.nsecs)\n"
    "read RPCs in flight:  0\n"
    "write RPCs in flight: 2\n"
    "pending write pages:  17\n"
    "pending read pages:   0\n"
    "\n"
    "\t\t\tread\t\t\twrite\n"
    "pages per rpc         rpcs   % cum % |       rpcs   % cum %\n"
    "1:\t\t         3  30  30   |          0   0   0\n"
    "2:\t\t         7  70 100   |          1   0   0\n"
    "256:\t\t         0   0 100   |        137  99 100\n"
    "\n"
    "\t\t\tread\t\t\twrite\n"
    "rpcs in flight        rpcs   % cum % |       rpcs   % cum %\n"
    "0:\t\t        10 100 100   |        138 100 100\n"
    "\n"
    "\t\t\tread\t\t\twrite\n"
    "offset                rpcs   % cum % |       rpcs   % cum %\n"
    "0:\t\t        10 100 100   |         42  30  30\n"
    "\n"
    "\t\t\tread\t\t\twrite\n"
    "RPC latency (us)      rpcs   % cum % |       rpcs   % cum %\n"
    "64:\t\t         9  90  90   |          0   0   0\n"
    "128:\t\t         1  10 100   |        138 100 100\n"
)

BRW_STATS = (
    "snapshot_time:         1567452327.426346 (secs.usecs)\n"
    "\n"
    "                           read      |     write\n"
    "pages per bulk r/w     rpcs  % cum % |  rpcs        % cum %\n"
    "1:\t\t         5   1   1   |    5   1   1\n"
    "256:\t\t       400  99 100   |  395  99 100\n"
    "\n"
    "                           read      |     write\n"
    "discontiguous pages    rpcs  % cum % |  rpcs        % cum %\n"
    "0:\t\t       405 100 100   |  400 100 100\n"
    "\n"
    "                           read      |     write\n"
    "disk I/Os in flight    ios   % cum % |  ios         % cum %\n"
    "1:\t\t       300  74  74   |  200  50  50\n"
    "\n"
    "                           read      |     write\n"
    "I/O time (1/1000s)     ios   % cum % |  ios         % cum %\n"
    "1:\t\t       405 100 100   |  399  99  99\n"
    "\n"
    "                           read      |     write\n"
    "disk I/O size          ios   % cum % |  ios         % cum %\n"
    "4K:\t\t        10   2   2   |    0   0   0\n"
    "1M:\t\t       395  97 100   |  400 100 100\n"
)


def test_rpc_stats_tables_with_tabs_and_the_param_separator() -> None:
    out = parse_text(RPC_STATS)
    assert out["kind"] == "rpc_stats" and out["skipped_lines"] == 0
    (e,) = out["entries"]
    assert e["param"] == "osc.lfs-OST0000-osc-ffff8800b1b2c000.rpc_stats"
    assert e["component"] == "osc" and e["target"] == "lfs-OST0000-osc-ffff8800b1b2c000"
    assert e["values"] == {
        "read RPCs in flight": 0, "write RPCs in flight": 2,
        "pending write pages": 17, "pending read pages": 0,
    }  # fmt: skip
    assert e["start_time"] == 1567450000.0
    assert list(e["tables"]) == ["pages per rpc", "rpcs in flight", "offset", "RPC latency (us)"]
    ppr = e["tables"]["pages per rpc"]
    assert ppr["unit"] == "rpcs"
    assert ppr["buckets"]["256"] == {"read": 0, "write": 137}
    assert sum(b["read"] for b in ppr["buckets"].values()) == 10
    assert e["tables"]["RPC latency (us)"]["buckets"]["128"] == {"read": 1, "write": 138}


# mdc rpc_stats as Lustre 2.15 prints it (mdc_rpc_stats_seq_show): first the modify RPCs
# (obd_mod_rpc_stats_seq_show: its time printed `%llu.%9lu`, so a fraction under 0.1 s is space-padded, and a
# one-column table under a `modify` heading), then the read/write tables of Data-on-MDT I/O.
MDC_RPC_STATS = (
    "snapshot_time:         1700000000. 45678901 (secs.nsecs)\n"
    "modify_RPCs_in_flight:  3\n"
    "\n"
    "\t\t\tmodify\n"
    "rpcs in flight        rpcs   % cum %\n"
    "0:\t\t         0   0   0\n"
    "1:\t\t     52861  86  86\n"
    "2:\t\t      5830   9  96\n"
    "3:\t\t      1634   2  98\n"
    "4:\t\t       722   1 100\n"
    "\n"
    "read RPCs in flight:  0\n"
    "write RPCs in flight: 1\n"
    "pending write pages:  0\n"
    "pending read pages:   0\n"
    "\n"
    "\t\t\tread\t\t\twrite\n"
    "pages per rpc         rpcs   % cum % |       rpcs   % cum %\n"
    "1:\t\t        34  52  52   |         12 100 100\n"
    "2:\t\t        31  47 100   |          0   0 100\n"
    "\n"
    "\t\t\tread\t\t\twrite\n"
    "rpcs in flight        rpcs   % cum % |       rpcs   % cum %\n"
    "0:\t\t        65 100 100   |         12 100 100\n"
)


def test_mdc_rpc_stats_modify_table_is_a_one_column_table_recognised_without_a_kind() -> None:
    out = parse_text(MDC_RPC_STATS)
    assert out["kind"] == "rpc_stats" and out["skipped_lines"] == 0
    (e,) = out["entries"]
    assert e["snapshot_time"] == pytest.approx(1700000000.045678901, abs=1e-9)
    assert e["values"] == {
        "modify_RPCs_in_flight": 3, "read RPCs in flight": 0, "write RPCs in flight": 1,
        "pending write pages": 0, "pending read pages": 0,
    }  # fmt: skip
    assert list(e["tables"]) == ["modify rpcs in flight", "pages per rpc", "rpcs in flight"]
    modify = e["tables"]["modify rpcs in flight"]
    assert modify["unit"] == "rpcs"
    assert modify["buckets"]["1"] == {"modify": 52861}
    assert sum(b["modify"] for b in modify["buckets"].values()) == 52861 + 5830 + 1634 + 722
    assert e["tables"]["rpcs in flight"]["buckets"]["0"] == {"read": 65, "write": 12}
    assert histogram.table_columns("\t\t\tmodify") == ["modify"]
    assert histogram.table_columns("\t\t\tread\t\t\twrite") == ["read", "write"]
    assert histogram.table_columns("\t\t\tmodify rpcs") is None
    # In an mdc parameter of lctl's output, and as a Prometheus histogram with operation="modify".
    from iolens.monitor.prometheus import exposition

    data, skipped = histogram.parse(MDC_RPC_STATS)
    entry = {"kind": "rpc_stats", "component": "mdc", "target": "lfs-MDT0000-mdc-ffff88", **data}
    text = exposition({"time": 1.0, "data": {"lustre": {"mdc.x.rpc_stats": entry}}}, {}, False, 1)
    assert (
        'lustre_rpc_modify_rpcs_in_flight_bucket{component="mdc",target="lfs-MDT0000-mdc-ffff88",'
        'operation="modify",le="2.0"} 58691'
    ) in text


def test_brw_stats_tables_with_size_suffixes() -> None:
    out = parse_text(BRW_STATS)
    assert out["kind"] == "brw_stats" and out["skipped_lines"] == 0
    e = out["entries"][0]
    assert e["snapshot_time"] == pytest.approx(1567452327.426346)
    assert list(e["tables"]) == [
        "pages per bulk r/w", "discontiguous pages", "disk I/Os in flight", "I/O time (1/1000s)",
        "disk I/O size",
    ]  # fmt: skip
    size = e["tables"]["disk I/O size"]["buckets"]
    assert size["4K"] == {"read": 10, "write": 0, "bytes": 4096}
    assert size["1M"] == {"read": 395, "write": 400, "bytes": 1048576}
    assert e["tables"]["disk I/Os in flight"]["unit"] == "ios"
    assert size_value("4K") == 4096 and size_value("2G") == 2 << 30 and size_value("x") is None


def test_malformed_histogram_rows_are_skipped_and_counted() -> None:
    text = (
        "\t\t\tread\t\t\twrite\npages per rpc  rpcs % cum % | rpcs % cum %\n1: 3 30 30 | 0 0 0\n2: x y | z\n"
    )
    data, skipped = histogram.parse(text)
    assert skipped == 1
    assert data["tables"]["pages per rpc"]["buckets"] == {"1": {"read": 3, "write": 0}}


def test_lctl_output_with_many_params_splits_into_entries_of_their_own_kind() -> None:
    text = (
        "obdfilter.lfs-OST0000.stats=\n"
        "snapshot_time 1700000000.000000001 secs.nsecs\n"
        "read_bytes 2 samples [bytes] 4096 4096 8192\n"
        "obdfilter.lfs-OST0000.job_stats=\n"
        + sample_text("ost-job_stats-2.12.txt")
        + "osc.x.max_rpcs_in_flight=8\n"
    )
    out = parse_text(text)
    kinds = [(e["param"], e["kind"]) for e in out["entries"]]
    assert kinds[:2] == [
        ("obdfilter.lfs-OST0000.stats", "stats"),
        ("obdfilter.lfs-OST0000.job_stats", "job_stats"),
    ]
    assert out["entries"][0]["counters"]["read_bytes"]["sum"] == 8192
    assert len(out["entries"][1]["jobs"]) == 2


def test_param_names_describe_component_target_and_client() -> None:
    assert params.describe("obdfilter.lfs-OST0001.exports.192.168.1.5@o2ib.stats") == {
        "component": "ost", "target": "lfs-OST0001", "file": "stats", "nid": "192.168.1.5@o2ib",
    }  # fmt: skip
    assert params.describe("mdt.lfs-MDT0000.md_stats")["component"] == "mdt"
    assert params.describe("osd-ldiskfs.lfs-OST0000.brw_stats")["component"] == "osd"
    assert params.kind_of("mdt.lfs-MDT0000.job_stats") == "job_stats"


# --- iolens monitor parse -----------------------------------------------------------------------------------


def test_monitor_parse_prints_json_of_a_saved_file(tmp_path: Path) -> None:
    f = tmp_path / "rpc.txt"
    f.write_text(RPC_STATS)
    r = run_iolens(["monitor", "parse", str(f)])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["file"] == str(f) and out["kind"] == "rpc_stats"
    assert out["entries"][0]["tables"]["offset"]["buckets"]["0"]["write"] == 42
    r = run_iolens(["monitor", "parse", str(LUSTRE_DATA / "ost-job_stats-2.12.txt"), "--kind", "job_stats"])
    assert json.loads(r.stdout)["entries"][0]["jobs"]["testjob2"]["counters"]["write_bytes"]["sum"] == 51200


def test_monitor_parse_refuses_an_unknown_file_and_kind(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("lmm_stripe_count:  1\nsomething else\n")
    r = run_iolens(["monitor", "parse", str(f)])
    assert r.returncode == 2 and "not a statistics file" in r.stderr
    r = run_iolens(["monitor", "parse", str(f), "--kind", "bogus"])
    assert r.returncode == 2 and "unknown kind" in r.stderr
    r = run_iolens(["monitor", "parse", str(tmp_path / "absent")])
    assert r.returncode == 2 and "cannot read" in r.stderr


# --- finding and reading parameters -------------------------------------------------------------------------


def _fake_lustre(root: Path) -> None:
    """A server and client tree as lctl would find it under /proc/fs/lustre."""
    (root / "llite" / "lfs-ffff88").mkdir(parents=True)
    (root / "llite" / "lfs-ffff88" / "stats").write_text(
        sample_text("llite-stats-2.14.txt").split("\n", 1)[1]
    )
    (root / "obdfilter" / "lfs-OST0000" / "exports" / "10.0.0.1@tcp").mkdir(parents=True)
    (root / "obdfilter" / "lfs-OST0000" / "job_stats").write_text(sample_text("ost-job_stats-2.12.txt"))
    (root / "obdfilter" / "lfs-OST0000" / "stats").write_text(sample_text("obdfilter-export-stats-2.12.txt"))
    exp = root / "obdfilter" / "lfs-OST0000" / "exports" / "10.0.0.1@tcp" / "stats"
    exp.write_text(sample_text("obdfilter-export-stats-2.12.txt"))
    (root / "mdt" / "lfs-MDT0000").mkdir(parents=True)
    (root / "mdt" / "lfs-MDT0000" / "md_stats").write_text(sample_text("mdt-md_stats-old.txt"))
    (root / "osc" / "lfs-OST0000-osc-ffff88").mkdir(parents=True)
    (root / "osc" / "lfs-OST0000-osc-ffff88" / "rpc_stats").write_text(RPC_STATS.split("\n", 1)[1])


def test_collector_finds_parameters_like_lctl_first_root_winning(tmp_path: Path) -> None:
    first, second = tmp_path / "proc", tmp_path / "debug"
    _fake_lustre(first)
    (second / "llite" / "lfs-ffff88").mkdir(parents=True)
    (second / "llite" / "lfs-ffff88" / "stats").write_text("snapshot_time 1 secs.nsecs\n")
    (second / "llite" / "other-ffff99").mkdir(parents=True)
    (second / "llite" / "other-ffff99" / "stats").write_text("open 1 samples [usecs] 1 1 1 1\n")
    c = LustreCollector(mode="files", roots=(str(first), str(second)))
    data = c.read()
    assert set(data) == {
        "llite.lfs-ffff88.stats", "llite.other-ffff99.stats", "obdfilter.lfs-OST0000.job_stats",
        "obdfilter.lfs-OST0000.stats", "mdt.lfs-MDT0000.md_stats", "osc.lfs-OST0000-osc-ffff88.rpc_stats",
    }  # fmt: skip
    assert data["llite.lfs-ffff88.stats"]["counters"]["open"]["samples"] == 35955554
    assert data["osc.lfs-OST0000-osc-ffff88.rpc_stats"]["kind"] == "rpc_stats"
    assert c.skipped == 0
    with_exports = LustreCollector(mode="files", roots=(str(first),), exports=True).read()
    assert with_exports["obdfilter.lfs-OST0000.exports.10.0.0.1@tcp.stats"]["nid"] == "10.0.0.1@tcp"


def test_no_lustre_is_unavailable_with_the_reason(tmp_path: Path) -> None:
    from iolens.monitor.common import SourceUnavailable

    c = LustreCollector(mode="files", roots=(str(tmp_path / "none"),))
    with pytest.raises(SourceUnavailable, match="no Lustre statistics"):
        c.read()


def test_collector_runs_lctl_get_param_when_the_files_are_not_visible(tmp_path: Path) -> None:
    """A real `lctl` program on PATH that prints what lctl prints (the `param=` lines)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    payload = tmp_path / "payload.txt"
    payload.write_text(
        "llite.lfs-ffff88.stats=\n"
        + sample_text("llite-stats-2.14.txt").split("\n", 1)[1]
        + "obdfilter.lfs-OST0000.job_stats=\n"
        + JOB_STATS_216
        + RPC_STATS
    )
    args_log = tmp_path / "args.txt"
    lctl = bindir / "lctl"
    lctl.write_text(f'#!/bin/sh\necho "$@" > {args_log}\ncat {payload}\n')
    lctl.chmod(lctl.stat().st_mode | stat.S_IXUSR)
    c = LustreCollector(mode="auto", roots=(str(tmp_path / "none"),), lctl=str(lctl))
    data = c.read()
    assert args_log.read_text().startswith("get_param llite.*.stats")
    assert c.using == "lctl"
    assert data["llite.lfs-ffff88.stats"]["counters"]["close"]["min"] == 63
    assert "has space/slash" in data["obdfilter.lfs-OST0000.job_stats"]["jobs"]
    assert data["osc.lfs-OST0000-osc-ffff8800b1b2c000.rpc_stats"]["values"]["pending write pages"] == 17


def test_monitor_list_sources_with_a_lustre_root(tmp_path: Path) -> None:
    _fake_lustre(tmp_path)
    r = run_iolens(["monitor", "--list-sources", "--lustre-root", str(tmp_path)])
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("lustre"))
    assert "available" in line and "unavailable" not in line


def test_job_stats_of_10000_jobs_parse_in_well_under_a_second(tmp_path: Path) -> None:
    """The benchmark (bench/monitor_cost.py) measures this properly; here a generous bound catches a
    regression to a slow parser."""
    import time

    lines = ["job_stats:"]
    for i in range(10000):
        lines.append(f"- job_id:          job{i}.{os.getpid()}")
        lines.append("  snapshot_time:   1700000000.000000001 secs.nsecs")
        for op in ("read_bytes", "write_bytes"):
            lines.append(f"  {op}:      {{ samples: 3, unit: bytes, min: 4096, max: 1048576, sum: 1056768 }}")
        for op in ("getattr", "setattr", "punch", "sync", "destroy", "create", "statfs", "get_info"):
            lines.append(f"  {op}:         {{ samples:           0, unit:  reqs }}")
    text = "\n".join(lines) + "\n"
    t0 = time.perf_counter()
    data, skipped = jobstats.parse(text)
    took = time.perf_counter() - t0
    assert skipped == 0 and len(data["jobs"]) == 10000
    assert took < 2.0
