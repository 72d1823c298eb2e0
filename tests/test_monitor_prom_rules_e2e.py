"""The Lustre-histogram and per-command rules of deploy/prometheus/iolens-rules.yml on real output: a real
Prometheus (Debian's) scrapes two real `iolens monitor --prometheus` nodes that read a Lustre tree whose
counts the test keeps advancing and watch a process that does file I/O under a known command name and job
id, and a third node serving lustre_exporter's names. Every quantile and command rule must yield series whose
values agree with the histograms of the sample files and with the raw series at the same evaluation; the
command totals must be what the kernel counted for the process; the dashboard's Lustre and command panels,
and lustre_exporter's dashboard metrics that docs/monitor.md says are served, must return data."""

from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import REPO
from .monitor_helpers import stop_process
from .prom_lustre_tree import FILES, MDT_JOBS, advance, lustre_tree, texts
from .test_monitor_prom_server import DASHBOARD, RULES, Server, agrees_at_some_evaluation, scraped

TREE = {**FILES, **MDT_JOBS}
EXPORTER_DASHBOARDS = REPO / "tests" / "data" / "lustre_exporter" / "dashboards.txt"
COMM = "e2e-writer"  # at most 15 characters: the kernel's comm
JOB = "4242"
# A process that names itself COMM, says so, then writes 1 MiB, fsyncs it, drops it from the page cache and
# reads it back, every 0.1 s, until SIGUSR1; then it does no more I/O until killed.
WRITER = f"""
import os, signal, sys, time
with open("/proc/self/comm", "w") as f:
    f.write({COMM!r})
stop = []
signal.signal(signal.SIGUSR1, lambda *_: stop.append(1))
path = os.path.join(sys.argv[1], "writer")
block = os.urandom(1 << 20)
os.write(1, b"ready\\n")
while not stop:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, block)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.lseek(fd, 0, os.SEEK_SET)
    os.read(fd, 1 << 20)
    os.close(fd)
    time.sleep(0.1)
os.write(1, b"stopped\\n")
while True:
    time.sleep(3600)
"""
# /proc/PID/io field -> the command metric that serves it.
IO_METRICS = {
    "rchar": "iolens_command_read_chars_total",
    "wchar": "iolens_command_written_chars_total",
    "syscr": "iolens_command_read_syscalls_total",
    "syscw": "iolens_command_write_syscalls_total",
    "read_bytes": "iolens_command_read_bytes_total",
    "write_bytes": "iolens_command_written_bytes_total",
    "cancelled_write_bytes": "iolens_command_cancelled_write_bytes_total",
}
# The histograms the quantile rules read: metric -> (file kind, table title, base units per printed unit).
HISTOGRAMS = {
    "lustre_brw_disk_io_size_bytes": ("brw_stats", "disk I/O size", 1.0),
    "lustre_brw_io_time_seconds": ("brw_stats", "I/O time (1/1000s)", 0.001),
    "lustre_brw_pages_per_bulk_rw": ("brw_stats", "pages per bulk r/w", 1.0),
    "lustre_rpc_pages_per_rpc": ("rpc_stats", "pages per rpc", 1.0),
    "lustre_rpc_rpcs_in_flight": ("rpc_stats", "rpcs in flight", 1.0),
}
SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


# ---------------------------------------------------------------- what the sample files say


def _tables(text: str) -> dict[str, list[tuple[str, dict[str, int]]]]:
    """{title: [(printed row, {operation: count})]} of a brw_stats/rpc_stats text, read here from the layout
    (independently of iolens's parser). A table whose only column is `modify` (mdc's modify RPCs) is left
    out: it is another metric."""
    out: dict[str, list[tuple[str, dict[str, int]]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"(\S.*?)\s{2,}(?:rpcs|ios|count)\b", line)
        if m is None or i == 0:
            continue
        ops = [w for w in re.split(r"[\s|]+", lines[i - 1]) if w]
        if ops == ["modify"]:
            continue
        rows = []
        for row in lines[i + 1 :]:
            r = re.match(r"(\d+[KMG]?):(.*)$", row)
            if r is None:
                break
            counts = [int(col.split()[0]) for col in r.group(2).split("|")]
            rows.append((r.group(1), dict(zip(ops, counts, strict=True))))
        out[m.group(1)] = rows
    return out


def _printed(text: str) -> float:
    return float(int(text[:-1]) * SUFFIX[text[-1]] if text[-1] in SUFFIX else int(text))


def _quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """Prometheus 2.42's histogram_quantile of cumulative (le, count) buckets, +Inf included (promql
    quantile.go bucketQuantile: linear interpolation in the bucket holding the rank, from 0 for the first)."""
    buckets = sorted(buckets)
    total = buckets[-1][1]
    if total == 0:
        return math.nan
    rank = q * total
    b = next((i for i, (_, n) in enumerate(buckets[:-1]) if n >= rank), len(buckets) - 1)
    if b == len(buckets) - 1:
        return buckets[-2][0]
    start, end, count = 0.0, buckets[b][0], buckets[b][1]
    if b > 0:
        start = buckets[b - 1][0]
        count -= buckets[b - 1][1]
        rank -= buckets[b - 1][1]
    return start + (end - start) * (rank / count)


def _expected_quantiles(record: str, q: float) -> dict[tuple[str, str, str], float]:
    """{(component, target or fs, operation): quantile} that a quantile rule must find: the rates are the
    sample's counts times a common factor (prom_lustre_tree.advance), and a quantile does not change when
    every bucket is scaled alike, so it is the quantile of the file's own counts."""
    level, metric, _ = record.split(":")
    kind, title, unit = HISTOGRAMS[metric]
    out: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    for rel, text in texts(TREE).items():
        directory, device, name = rel.split("/")
        if name != kind or title not in _tables(text):
            continue
        component = {"osd-ldiskfs": "osd", "osc": "osc", "mdc": "mdc"}[directory]
        target = re.sub(r"-(?:osc|mdc)-[0-9a-f]+$", "", device)
        where = target.split("-")[0] if level == "fs_quantile" else target
        rows = _tables(text)[title]
        for op in rows[0][1]:
            cumulative, buckets = 0, []
            for printed, counts in rows:
                cumulative += counts[op]
                buckets.append((_printed(printed) * unit, float(cumulative)))
            buckets.append((math.inf, float(cumulative)))
            key = (component, where, op)
            # Several targets of one file system: their buckets are added (same le in every file here).
            if key in out:
                buckets = [(le, n + m) for (le, n), (_, m) in zip(out[key], buckets, strict=True)]
            out[key] = buckets
    return {k: _quantile(q, b) for k, b in out.items() if b[-1][1] > 0}


# ---------------------------------------------------------------- the cluster


def _rules(group: str) -> list[dict[str, Any]]:
    return next(g["rules"] for g in yaml.safe_load(RULES.read_text())["groups"] if g["name"] == group)


def _selector(rule: dict[str, Any]) -> str:
    labels = ",".join(f'{k}="{v}"' for k, v in rule.get("labels", {}).items())
    return f"{rule['record']}{{{labels}}}"


def _advancing(root: Path, stop: threading.Event) -> None:
    """The tree's counts times 2, 3, 4 … every 0.3 s (the monitors sample every 0.5 s)."""
    k = 1
    while not stop.wait(0.3):
        k += 1
        advance(root, k, TREE)


@pytest.fixture
def writer(disk_dir: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(disk_dir)],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "SLURM_JOB_ID": JOB},
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        yield proc
    finally:
        stop_process(proc)


@pytest.fixture
def cluster(
    tmp_path: Path, iolens_bin: list[str], writer: subprocess.Popen[str]
) -> Iterator[tuple[Server, list[str]]]:
    root = lustre_tree(tmp_path / "lustre", TREE)
    common = ["--interval", "0.5", "--lustre", "files", "--lustre-root", str(root)]
    iolens = [*common, "--sources", "lustre,proc_io", "--pid-tree", str(writer.pid)]
    exporter = [*common, "--sources", "lustre", "--prometheus-names", "lustre_exporter", "--prometheus-jobs"]
    jobs: dict[str, list[Sequence[str]]] = {"iolens": [iolens, iolens], "lustre_exporter": [exporter]}
    with scraped(iolens_bin, tmp_path, jobs, lambda stop: _advancing(root, stop)) as (server, addresses):
        yield server, addresses["iolens"]


def _values(server: Server, expr: str) -> dict[tuple[tuple[str, str], ...], dict[float, float]]:
    """{labels (sorted, __name__ left out): {timestamp: value}} of `expr`'s stored samples over 30 s."""
    out = {}
    for r in server.query(f"{expr}[30s]"):
        labels = tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__"))
        out[labels] = {float(t): float(v) for t, v in r["values"]}
    return out


def _at(server: Server, expr: str, at: float) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted((k, v) for k, v in r["metric"].items() if k != "__name__")): float(r["value"][1])
        for r in server.query(expr, at)
    }


def _wait(server: Server, exprs: list[str], timeout: float = 120) -> None:
    """Until every expression has a sample above 0."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        missing = [e for e in exprs if not server.query(f"{e} > 0")]
        if not missing:
            return
        time.sleep(1)
    pytest.fail(f"no positive sample of {missing} in {timeout} s; up: {server.query('up')}")


# ---------------------------------------------------------------- the test


def _check_lustre_exporter_dashboards(server: Server) -> None:
    """The metrics of lustre_exporter's dashboards: data where docs/monitor.md (and dashboards.txt) says
    they are served, none where absent."""
    listed = [
        line.split()
        for line in EXPORTER_DASHBOARDS.read_text().splitlines()
        if line and not line.startswith("#")
    ]
    served = [name for name, status in listed if status == "served"]
    absent = [name for name, status in listed if status == "absent"]
    assert served and absent
    job = 'job="lustre_exporter"'
    _wait(server, [f"rate({name}{{{job}}}[1m])" for name in served])
    for name in absent:
        assert not server.query(f"{name}{{{job}}}"), name
    # The shapes of that exporter's panels: per-target and per-operation sums, by component, of rates.
    for expr in [
        f'sum by (target) (rate(lustre_stats_total{{{job},component="mdt"}}[1m]))',
        f'sum by (target, operation) (rate(lustre_stats_total{{{job},component="ost"}}[1m]))',
        f'rate(lustre_read_bytes_total{{{job},component="ost"}}[1m])',
        f'rate(lustre_write_bytes_total{{{job},component="ost"}}[1m])',
        f'sum by (jobid) (irate(lustre_job_read_bytes_total{{{job},component="ost"}}[1m])) > 0',
        f'sum by (instance, target) (irate(lustre_job_write_bytes_total{{{job},component="ost"}}[1m])) > 0',
        f'count(irate(lustre_job_write_bytes_total{{{job},component="ost"}}[1m]) > 0)',
        f'sum by (target, operation) (irate(lustre_job_stats_total{{{job},component="mdt"}}[1m])) > 0',
        f'sum by (target, operation) (lustre_job_stats_total{{{job},component="ost"}})',
    ]:
        result = server.query(expr)
        assert result and all(float(r["value"][1]) > 0 for r in result), expr


def test_real_monitors_feed_the_lustre_and_command_rules_and_lustre_exporters_dashboards(
    cluster: tuple[Server, list[str]], writer: subprocess.Popen[str]
) -> None:
    server, instances = cluster
    _check_lustre_exporter_dashboards(server)
    histogram_rules = _rules("iolens-lustre-histograms")
    command_rules = _rules("iolens-commands")
    assert len(histogram_rules) >= 10 and len(command_rules) >= 8
    _wait(server, [_selector(r) for r in histogram_rules + command_rules])
    time.sleep(4)  # a few more evaluations, so that the ones compared below have every scrape in
    for g in server.api("rules")["groups"]:
        for rule in g["rules"]:
            assert rule["health"] == "ok", rule

    # Every quantile rule: the quantile of the sample file's own counts, for each target (or file system)
    # and operation, at every evaluation of the last 30 s that had rates; and the same as the rule's
    # expression evaluated at that moment over the raw buckets.
    for rule in histogram_rules:
        q = float(rule["labels"]["quantile"])
        expected = _expected_quantiles(rule["record"], q)
        assert expected, rule["record"]
        recorded = _values(server, _selector(rule))
        level = rule["record"].split(":")[0]
        seen = {}
        for labels, samples in recorded.items():
            d = dict(labels)
            assert d["job"] == "iolens" and "instance" not in d, (rule["record"], d)
            key = (d["component"], d["fs" if level == "fs_quantile" else "target"], d["operation"])
            assert key in expected, (rule["record"], d, sorted(expected))
            finite = {t: v for t, v in samples.items() if not math.isnan(v)}
            assert finite, (rule["record"], d)
            for t, v in finite.items():
                assert v == pytest.approx(expected[key], rel=1e-9), (rule["record"], d, t)
            seen[key] = v
            at = sorted(finite)[-1]
            raw = _at(server, rule["expr"], at)
            assert raw[tuple(sorted((k, v) for k, v in d.items() if k != "quantile"))] == pytest.approx(
                finite[at], rel=1e-9
            ), (rule["record"], d, at)
        assert set(seen) == set(expected), (rule["record"], sorted(seen), sorted(expected))

    # Per node and command: the rate of the node's counter (agrees_at_some_evaluation says why not at every
    # one); per command and per job: the nodes (and, for a job, the commands) added up, at each evaluation.
    for rule in command_rules:
        recorded = _values(server, rule["record"])
        assert recorded, rule["record"]
        level, metric, _ = rule["record"].split(":")
        raw_metric = f"{metric}_total"
        for labels, samples in recorded.items():
            d = dict(labels)
            if level == "instance_comm":
                assert d["instance"] in instances and d["comm"] == COMM and d["jobid"] == JOB, d
                selector = ",".join(f'{k}="{v}"' for k, v in labels)
                expr = f"rate({raw_metric}{{{selector}}}[1m])"
                assert agrees_at_some_evaluation(server, samples, expr), (rule["record"], d)
            else:
                assert d == (
                    {"job": "iolens", "comm": COMM} if level == "comm" else {"job": "iolens", "jobid": JOB}
                )
                parts = _values(server, f"instance_comm:{metric}:rate1m")
                common = [t for t in samples if all(t in p for p in parts.values())]
                assert len(common) >= 3, (rule["record"], len(common))
                for t in common:
                    assert samples[t] == pytest.approx(sum(p[t] for p in parts.values()), rel=1e-12), (
                        rule,
                        t,
                    )
    for metric in (
        "iolens_command_written_bytes",
        "iolens_command_read_chars",
        "iolens_command_written_chars",
    ):
        for v in _at(server, f"instance_comm:{metric}:rate1m", time.time()).values():
            assert v > 0, metric

    # The dashboard's Lustre and command panels have data (template variables as their `All`).
    dash = json.loads(DASHBOARD.read_text())
    panels = [
        p for p in dash["panels"]
        if p.get("targets") and (p["title"].startswith(("Lustre", "Commands")))
    ]  # fmt: skip
    assert len(panels) >= 7, [p["title"] for p in panels]
    for p in panels:
        for t in p["targets"]:
            result = server.query(re.sub(r"\$\{?\w+\}?", ".*", t["expr"]))
            assert result and all(not math.isnan(float(r["value"][1])) for r in result), (
                p["title"],
                t["expr"],
            )

    # With its I/O stopped, each node's totals for the command are what the kernel counted for the process
    # (it was running before the monitors started: everything it did counts).
    writer.send_signal(signal.SIGUSR1)
    assert writer.stdout is not None and writer.stdout.readline() == "stopped\n"
    kernel = dict(
        (k, int(v))
        for k, v in (line.split(": ") for line in Path(f"/proc/{writer.pid}/io").read_text().splitlines())
    )
    assert kernel["wchar"] >= 1 << 20 and kernel["write_bytes"] >= 1 << 20, kernel
    deadline = time.monotonic() + 30
    while True:
        served = {
            field: {r["metric"]["instance"]: float(r["value"][1])
                    for r in server.query(f'{name}{{job="iolens",comm="{COMM}",jobid="{JOB}"}}')}
            for field, name in IO_METRICS.items()
        }  # fmt: skip
        if all(served[f] == dict.fromkeys(instances, float(kernel[f])) for f in IO_METRICS):
            break
        if time.monotonic() > deadline:
            pytest.fail(f"the served totals never became the kernel's: {served} vs {kernel}")
        time.sleep(0.5)
