"""Hypothesis against the monitor's parsers of outside data: Lustre stats, job_stats, rpc_stats and brw_stats,
the Linux /proc files, and `iolens monitor parse FILE` that reads any of them.

Each parser must give a correct result or skip and count what it cannot read — never raise, never hang
(every call runs under a time limit) — and what it gives must go through everything that follows in the
monitor: the JSON-lines stream (no NaN or infinity), rates from the previous reading, InfluxDB lines (one
line each), the Prometheus exposition (read back by prometheus_client), and the live view. Inputs are the
real samples (tests/data/lustre and the layouts of tests/test_monitor_lustre.py) mutated — cut, doubled,
spliced, numbers made huge — and texts built from the formats' own words. Well-formed stats and job_stats
texts, generated from a model in every layout Lustre prints, must read back to that model exactly.

Inputs once found failing are kept in tests/data/fuzz/lustre and tests/data/fuzz/monitor-parse (first line:
`# kind: KIND`) and replayed by test_kept_inputs_*."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from iolens.monitor import influx, prometheus, stream
from iolens.monitor.common import rates
from iolens.monitor.lustre import parse as lustre_parse
from iolens.monitor.lustre.collector import LustreCollector
from iolens.monitor.parsefile import KINDS, LINUX_PARSERS, UnknownKind, parse_text
from iolens.monitor.sampler import make_collectors
from iolens.monitor.view import LiveView

from ..monitor_helpers import LUSTRE_DATA, fuzz_cases, run_iolens, time_limit
from ..test_monitor_linux import MOUNTSTATS
from ..test_monitor_lustre import BRW_STATS, JOB_STATS_216, MDC_RPC_STATS, RPC_STATS

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIMIT_S = 5.0


def _body(text: str) -> str:
    """A sample without lctl's `NAME=` line."""
    first, _, rest = text.partition("\n")
    return rest if re.match(r"^[a-z].*\.[a-z_]+=$", first) else text


SEEDS: dict[str, list[str]] = {
    "stats": [_body((LUSTRE_DATA / n).read_text()) for n in (
        "llite-stats-2.14.txt", "mdt-md_stats-old.txt", "obdfilter-export-stats-2.12.txt",
        "osc-stats-old-usecs.txt")],
    "job_stats": [(LUSTRE_DATA / "ost-job_stats-2.12.txt").read_text(), JOB_STATS_216],
    "rpc_stats": [_body(RPC_STATS), MDC_RPC_STATS],
    "brw_stats": [BRW_STATS],
}  # fmt: skip
LINUX_SEEDS: dict[str, str] = {
    "diskstats": "   8       0 sda 9 8 7 6 5 4 3 2 1 0 11 12 13 14 15 16 17 18 19 20\n"
    " 259       0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11\n",
    "proc_io": "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
    "cancelled_write_bytes: 7\n",
    "mountstats": MOUNTSTATS,
    "cgroup_io": "8:0 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=5 dios=6\n253:1 rbytes=7 wbytes=8\n",
    "pressure": "some avg10=0.12 avg60=0.05 avg300=0.00 total=12345\n"
    "full avg10=0.00 avg60=0.00 avg300=0.00 total=99\n",
    "meminfo": "MemTotal: 100 kB\nDirty:  12 kB\nWriteback:  0 kB\nNFS_Unstable:  0 kB\nWritebackTmp: 0 kB\n",
    "loadavg": "0.52 0.58 0.59 2/1234 5678\n",
    "stat": "cpu  1 2 3 4\nctxt 100\nprocesses 42\nprocs_running 2\nprocs_blocked 1\n",
}

# The formats' own words, and what damages them.
WORDS = ["\n", "\n", " ", "  ", "\t", ":", ",", "{", "}", "[", "]", "|", "%", "-", ".", '"', "'", "\\", "\\x",
         "\\x0a", "=", "samples", "unit:", "hist:", "job_id:", "- job_id: ", "job_stats:", "snapshot_time",
         "start_time:", "elapsed_time", "secs.nsecs", "(secs.usecs)", "[usecs]", "[bytes]", "read", "write",
         "modify", "cum %", "rpcs", "pages per rpc", "4K", "1M", "0", "1", "-1", "17", "1700000000.5",
         "9" * 20, "9" * 21, "1" + "0" * 400, "9" * 5000, "1e999", "nan", "inf", "-inf", "\x00", "\r", "é",
         "\\xff", "\\040", "\\999", "device ", " mounted on ", " with fstype nfs4 ", "some", "total=",
         "MemTotal:",
         "llite.fs-ffff.stats=", "sda"]  # fmt: skip
BIG_NUMBERS = ["9" * 20, "18446744073709551616", "9" * 400, "9" * 5000, "-0", "1e999", "nan", "-inf", "999",
               "1.5", "١٢"]  # fmt: skip
fragment = st.lists(st.sampled_from(WORDS) | st.text(max_size=4), max_size=8).map("".join)
built = st.lists(fragment, max_size=40).map("".join)


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A real sample, damaged a few times over."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete", "truncate", "line", "number", "number", "flip"]))
        i = draw(st.integers(0, len(text)))
        if op == "insert":
            text = text[:i] + draw(fragment) + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 40)) :]
        elif op == "truncate":
            text = text[:i]
        elif op == "line":  # a line doubled, or moved
            lines = text.split("\n")
            j = draw(st.integers(0, len(lines) - 1))
            lines.insert(draw(st.integers(0, len(lines))), lines[j])
            text = "\n".join(lines)
        elif op == "number":
            runs = list(re.finditer(r"\d+(?:\.\d+)?", text))
            if runs:
                m = runs[draw(st.integers(0, len(runs) - 1))]
                big = draw(st.sampled_from(BIG_NUMBERS))
                text = text[: m.start()] + big + text[m.end() :]
        elif text:
            j = min(i, len(text) - 1)
            text = text[:j] + chr(ord(text[j]) ^ draw(st.sampled_from([1, 32, 64, 0x80]))) + text[j + 1 :]
    return text


# --- what must hold of every reading ------------------------------------------------------------------------


def _console() -> Console:
    return Console(file=io.StringIO(), width=120, force_terminal=True)


def check_downstream(data: dict[str, Any], before: dict[str, Any] | None = None) -> None:
    """A sample record of this reading goes through the stream, rates, InfluxDB, Prometheus and the view."""
    record: dict[str, Any] = {"type": "sample", "seq": 2, "time": 1700000001.5, "data": data}
    collectors = {c.name: c for c in make_collectors([n for n in data if n != "lustre"])}
    collectors["lustre"] = LustreCollector(mode="files", roots=())
    record["rates"] = {
        name: rates((before or {}).get(name), reading, 1.5, collectors[name])
        for name, reading in data.items()
        if name in collectors
    }
    json.loads(stream.dumps(record))  # no NaN, no infinity: the stream must stay JSON
    lines = list(influx.lines(record, "node01"))
    assert all("\n" not in ln and "\r" not in ln for ln in lines), lines
    text = prometheus.exposition(record, {name: {"available": True} for name in data}, jobs=True, samples=2)
    from prometheus_client.parser import text_string_to_metric_families

    assert list(text_string_to_metric_families(text))
    view = LiveView(1.0, "node01")
    view.update(record)
    _console().print(view)


PARAMS = {
    "stats": "llite.fs-ffff.stats",
    "job_stats": "obdfilter.fs-OST0000.job_stats",
    "rpc_stats": "osc.fs-OST0000-osc-ffff.rpc_stats",
    "brw_stats": "obdfilter.fs-OST0000.brw_stats",
}


def check_lustre(kind: str, text: str, before: str | None = None) -> dict[str, Any]:
    with time_limit(LIMIT_S, f"the {kind} parser"):
        tree, skipped = lustre_parse(kind, text)
        prev = lustre_parse(kind, before)[0] if before is not None else None
    assert isinstance(skipped, int) and skipped >= 0
    name = PARAMS[kind]
    entry = {"kind": kind, "component": "x", "target": "fs-OST0000", "file": kind, **tree}
    prev_entry = (
        {"kind": kind, "component": "x", "target": "fs-OST0000", "file": kind, **prev} if prev else None
    )
    with time_limit(LIMIT_S, f"what follows the {kind} parser"):
        check_downstream({"lustre": {name: entry}}, {"lustre": {name: prev_entry}} if prev_entry else None)
    return tree


def check_monitor_parse(text: str, kind: str | None) -> None:
    """`iolens monitor parse` in process: a result that is JSON, or UnknownKind (its one-line refusal)."""
    try:
        with time_limit(LIMIT_S, f"monitor parse --kind {kind}"):
            result = parse_text(text, kind)
    except UnknownKind as exc:
        assert "\n" not in str(exc)
        return
    json.loads(json.dumps(result, allow_nan=False))
    for entry in result["entries"]:
        name = entry["kind"]
        if name in LINUX_PARSERS:
            data = {k: v for k, v in entry.items() if k not in ("param", "kind")}
            # As the collectors give them: one process's /proc/PID/io, one cgroup's io.stat.
            if name == "proc_io":
                data = {"4242": {**data, "comm": "rank\n0"}}
            elif name == "cgroup_io":
                data = {"/sys/fs/cgroup/job 1": data}
            with time_limit(LIMIT_S, f"what follows the {name} parser"):
                check_downstream({name: data}, {name: data})


# --- Lustre ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(SEEDS))
def test_the_real_samples_read_without_a_skipped_line(kind: str) -> None:
    for seed in SEEDS[kind]:
        assert lustre_parse(kind, seed)[1] == 0
        check_lustre(kind, seed)


@FUZZ
@given(kind=st.sampled_from(list(SEEDS)), data=st.data())
def test_damaged_lustre_samples_are_read_or_skipped_never_a_crash(kind: str, data: st.DataObject) -> None:
    text = data.draw(mutated(SEEDS[kind]))
    check_lustre(kind, text, before=SEEDS[kind][0])


@FUZZ
@given(kind=st.sampled_from(list(SEEDS)), text=built)
def test_texts_of_lustre_words_are_read_or_skipped_never_a_crash(kind: str, text: str) -> None:
    check_lustre(kind, text)


# Well-formed texts from a model: every layout must read back to it exactly.

counter_names = st.from_regex(r"[a-z][a-z_]{0,23}", fullmatch=True).filter(
    lambda n: n not in ("snapshot_time", "start_time", "elapsed_time", "job_stats")
)
u64 = st.integers(0, 2**64 - 1)
s64 = st.integers(-(2**63), 2**63 - 1)
units = st.sampled_from(["reqs", "bytes", "usecs", "usec", "secs", "pages", "locks", "bufs"])


@st.composite
def counter_model(draw: st.DrawFn, hist: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"samples": draw(u64), "unit": draw(units)}
    if draw(st.booleans()):
        c["min"], c["max"], c["sum"] = draw(s64), draw(s64), draw(s64)
        if draw(st.booleans()):
            c["sumsq"] = draw(u64)
        if hist and draw(st.booleans()):
            c["hist"] = draw(
                st.dictionaries(st.sampled_from(["4K", "8K", "1M", "4M", "16M"]), u64, max_size=4)
            )
    return c


def render_stats(counters: dict[str, dict[str, Any]], width: int, snapshot: str) -> str:
    out = [f"{'snapshot_time':<{width}} {snapshot}"]
    for name, c in counters.items():
        nums = "".join(f" {c[k]}" for k in ("min", "max", "sum", "sumsq") if k in c)
        out.append(f"{name:<{width}} {c['samples']} samples [{c['unit']}]{nums}")
    return "\n".join(out) + "\n"


@FUZZ
@given(
    counters=st.dictionaries(counter_names, counter_model(), min_size=1, max_size=8),
    width=st.sampled_from([25, 35]),
    snapshot=st.sampled_from(
        ["1710759783.271040288 secs.nsecs", "1438693238.20113 secs.usecs", "1298995851"]
    ),
)
def test_well_formed_stats_read_back_exactly(counters: dict[str, Any], width: int, snapshot: str) -> None:
    text = render_stats(counters, width, snapshot)
    tree = check_lustre("stats", text)
    assert tree["counters"] == counters
    assert tree["snapshot_time"] == pytest.approx(
        {"secs.nsecs": 1710759783.271040288, "secs.usecs": 1438693238.020113}.get(
            snapshot.split()[-1], 1298995851.0
        )
    )


def quote_216(job_id: str) -> str:
    """A job id as Lustre 2.16 prints an unusual one: quoted, bytes outside printable ASCII as \\xHH."""
    out = []
    for b in job_id.encode("utf-8"):
        ch = chr(b)
        out.append(ch if 0x20 < b < 0x7F and ch not in '"\\' else f"\\x{b:02x}")
    return '"' + "".join(out) + '"'


def render_job_stats(jobs: dict[str, dict[str, Any]], layout: str) -> str:
    out = ["job_stats:"]
    for job_id, counters in jobs.items():
        bare = re.fullmatch(r"[A-Za-z0-9._@-]+", job_id) is not None
        out.append(f"- job_id:          {job_id if bare and layout != 'quoted' else quote_216(job_id)}")
        out.append("  snapshot_time:   1700000100.123456789 secs.nsecs")
        if layout != "2.12":
            out.append("  start_time:      1700000000.000000000 secs.nsecs")
        for name, c in counters.items():
            if layout == "2.12":
                parts = [f"samples: {c['samples']:>11}", f"unit: {c['unit']:>5}"]
                parts += [
                    f"{k}:{c[k]:>8}" if k == "max" else f"{k}: {c[k]:>7}"
                    for k in ("min", "max", "sum")
                    if k in c
                ]
            else:
                parts = [f"samples: {c['samples']}", f"unit: {c['unit']}"]
                parts += [f"{k}: {c[k]}" for k in ("min", "max", "sum", "sumsq") if k in c]
                if "hist" in c:
                    parts.append("hist: { " + ", ".join(f"{b}: {n}" for b, n in c["hist"].items()) + " }")
            out.append(f"  {name + ':':<17}{{ {', '.join(parts)} }}")
    return "\n".join(out) + "\n"


job_id_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda s: s.strip() == s and s != ""
)


@FUZZ
@given(
    jobs=st.dictionaries(
        job_id_text,
        st.dictionaries(counter_names, counter_model(hist=True), min_size=1, max_size=5),
        max_size=5,
    ),
    layout=st.sampled_from(["2.12", "2.16", "quoted"]),
)
def test_well_formed_job_stats_read_back_exactly(jobs: dict[str, Any], layout: str) -> None:
    if layout == "2.12":  # 2.12 printed neither sumsq nor hist
        jobs = {j: {n: {k: v for k, v in c.items() if k not in ("sumsq", "hist")} for n, c in cs.items()}
                for j, cs in jobs.items()}  # fmt: skip
    text = render_job_stats(jobs, layout)
    tree = check_lustre("job_stats", text)
    assert {j: job["counters"] for j, job in tree["jobs"].items()} == jobs
    assert all(job["snapshot_time"] == pytest.approx(1700000100.123456789) for job in tree["jobs"].values())


# --- monitor parse: any kind, the Linux files too -------------------------------------------------------


@FUZZ
@given(kind=st.sampled_from([None, *KINDS]), data=st.data())
def test_monitor_parse_reads_damaged_files_of_every_kind(kind: str | None, data: st.DataObject) -> None:
    seeds = [*LINUX_SEEDS.values(), *(t for ts in SEEDS.values() for t in ts), RPC_STATS]
    if kind in LINUX_SEEDS:
        seeds = [LINUX_SEEDS[kind]]
    text = data.draw(mutated(seeds) | built)
    check_monitor_parse(text, kind)


@pytest.mark.parametrize("kind", list(LINUX_SEEDS))
def test_the_linux_seeds_are_read_whole(kind: str) -> None:
    result = parse_text(LINUX_SEEDS[kind], kind)
    assert result["skipped_lines"] == (1 if kind == "mountstats" else 0)  # MOUNTSTATS has one broken line
    check_monitor_parse(LINUX_SEEDS[kind], kind)


# --- the inputs kept ------------------------------------------------------------------------------------


def _kept(parser: str) -> list[Any]:
    return [pytest.param(p, id=p.name) for p in fuzz_cases(parser)]


def _split_kind(path: Path) -> tuple[str | None, str]:
    """A kept input's `# kind: KIND` first line (`any`: recognised from the content), and the text after."""
    raw = path.read_bytes().decode("utf-8", "backslashreplace")
    first, _, text = raw.partition("\n")
    m = re.fullmatch(r"# kind: (\S+)", first)
    assert m is not None, f"{path}: the first line must be '# kind: KIND'"
    return (None if m.group(1) == "any" else m.group(1)), text


@pytest.mark.parametrize("path", _kept("lustre"))
def test_kept_inputs_of_the_lustre_parsers(path: Path) -> None:
    kind, text = _split_kind(path)
    assert kind in SEEDS
    check_lustre(kind, text, before=SEEDS[kind][0])


@pytest.mark.parametrize("path", _kept("monitor-parse"))
def test_kept_inputs_of_monitor_parse_through_the_command(path: Path, tmp_path: Path) -> None:
    """`iolens monitor parse FILE` as a user runs it: JSON and exit 0, or one line and exit 2."""
    kind, text = _split_kind(path)
    check_monitor_parse(text, kind)
    f = tmp_path / "input"
    f.write_bytes(text.encode("utf-8", "surrogateescape"))
    r = run_iolens(["monitor", "parse", str(f), *(["--kind", kind] if kind else [])], timeout=60)
    assert "Traceback" not in r.stderr, r.stderr
    if r.returncode == 0:
        json.loads(r.stdout)
    else:
        assert r.returncode == 2 and r.stderr.startswith("iolens: error: ") and r.stderr.count("\n") == 1


# --- expressions rewritten for linear time: the same reading as before ------------------------------------

# As the parsers had them until a long line made them backtrack for minutes (kept: lustre/*-backtracking*).
OLD_TITLE = re.compile(r"^\s*(.*?)\s+(\w+)\s+%\s+cum\s*%\s*(?:\|.*)?$")
OLD_PARAM_LINE = re.compile(r"^([A-Za-z0-9_\-]+(?:\.[^\s=]+)+)=(.*)$")


@settings(max_examples=500, deadline=None)
@given(line=st.text(alphabet=" \t%|acmrsu1.=_-", max_size=24))
def test_titles_and_parameter_lines_read_as_the_old_expressions_read_them(line: str) -> None:
    from iolens.monitor.lustre import histogram, params

    old = OLD_TITLE.match(line)
    new = histogram._TITLE_TAIL.search(line)
    assert (old is None) == (new is None)
    if old is not None and new is not None:
        assert (old.group(1).strip(), old.group(2)) == (line[: new.start()].strip(), new.group(1))
    old_p, new_p = OLD_PARAM_LINE.match(line), params._PARAM_LINE.match(line)
    assert (old_p and old_p.groups()) == (new_p and new_p.groups())


OLD_OP = re.compile(
    r"\s*([A-Za-z_][\w]*):\s*\{\s*samples:\s*([0-9]{1,20})\s*,\s*unit:\s*([\w.]+)"
    r"(?:\s*,\s*min:\s*(-?[0-9]{1,20})\s*,\s*max:\s*(-?[0-9]{1,20})\s*,\s*sum:\s*(-?[0-9]{1,20})"
    r"(?:\s*,\s*sumsq:\s*([0-9]{1,20}))?)?(?:\s*,\s*hist:\s*\{([^{}]*)\})?\s*,?\s*\}\s*$"
)
OLD_HIST_ITEM = re.compile(r"\s*([^\s:,{}]+)\s*:\s*([0-9]{1,20})\s*(?:,|$)")
OP_WORDS = ["op", ":", " ", "\t", "{", "}", ",", "samples:", "unit:", "reqs", "min:", "max:", "sum:",
            "sumsq:", "hist:", "1", "-2", "4K", "x"]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(words=st.lists(st.sampled_from(OP_WORDS), max_size=30))
def test_operation_lines_and_hist_maps_read_as_the_old_expressions_read_them(words: list[str]) -> None:
    from iolens.monitor.lustre import jobstats

    line = "".join(words)
    old, new = OLD_OP.match(line), jobstats._OP.match(line)
    assert (old and old.groups()) == (new and new.groups())
    assert OLD_HIST_ITEM.findall(line) == jobstats._HIST_ITEM.findall(line)
