"""A real Prometheus server (Debian's) scrapes two real `iolens monitor --prometheus` processes on this
machine as two nodes, with deploy/prometheus/iolens-rules.yml loaded, while the test writes to and reads from
a disk: the `instance:` and `cluster:` rules must exist and agree with the raw metrics they come from, and
every query of the Grafana dashboard must be accepted by the server."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO
from .monitor_helpers import free_port, server_binary, stop_process

RULES = REPO / "deploy" / "prometheus" / "iolens-rules.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "iolens-node.json"
# The devices the rules count (the same filter as iolens-rules.yml's node sums), as a PromQL matcher.
PHYSICAL = (
    'device!~"loop[0-9]+|z?ram[0-9]+|fd[0-9]+|(sd|vd|hd|xvd)[a-z]+[0-9]+|nvme[0-9]+n[0-9]+p[0-9]+'
    '|mmcblk[0-9]+p[0-9]+",device!~"dm-.+|md.+"'
)


def _prometheus() -> str:
    return server_binary("prometheus", "prometheus")


DISK_ARGS = ("--interval", "0.5", "--sources", "diskstats,pressure,meminfo")


class Node:
    """`iolens monitor --prometheus 127.0.0.1:0 --no-live ARGS` running; its address read from its standard
    error."""

    def __init__(self, iolens: list[str], args: Sequence[str] = DISK_ARGS) -> None:
        self.proc = subprocess.Popen(
            [*iolens, "monitor", "--prometheus", "127.0.0.1:0", "--no-live", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stderr is not None
        deadline = time.monotonic() + 30
        line = ""
        while "serving Prometheus metrics at" not in line:
            line = self.proc.stderr.readline()
            if (not line and self.proc.poll() is not None) or time.monotonic() > deadline:
                raise AssertionError(f"iolens monitor did not start: {line!r}")
        m = re.search(r"http://(\S+)/metrics", line)
        assert m is not None, line
        self.address = m.group(1)

    def stop(self) -> None:
        stop_process(self.proc)


class Server:
    """A Prometheus server on a free port with a temporary configuration and storage, scraping the targets of
    each job ({job name: [host:port]})."""

    def __init__(self, binary: str, workdir: Path, jobs: dict[str, list[str]]) -> None:
        config = {
            # Evaluations out of step with scrapes: agrees_at_some_evaluation.
            "global": {"scrape_interval": "1s", "evaluation_interval": "700ms"},
            "rule_files": [str(RULES)],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": targets}]} for job, targets in jobs.items()
            ],
        }
        (workdir / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        self.log = (workdir / "prometheus.log").open("w")
        for _attempt in range(5):  # a free port can be taken by someone else before the server binds it
            self.url = f"http://127.0.0.1:{free_port()}"
            self.proc = subprocess.Popen(
                [binary, f"--config.file={workdir / 'prometheus.yml'}",
                 f"--storage.tsdb.path={workdir / 'data'}", f"--web.listen-address={self.url[7:]}"],
                stdout=self.log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            if self._ready():
                return
            self.stop()
        raise AssertionError("prometheus did not start:\n" + (workdir / "prometheus.log").read_text()[-3000:])

    def _ready(self) -> bool:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=5) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        return False

    def api(self, path: str, **params: str | float) -> Any:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            body = json.load(e)
        assert body["status"] == "success", (params, body)
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params: dict[str, str | float] = {"query": expr}
        if at is not None:
            params["time"] = at
        return self.api("query", **params)["result"]

    def stop(self) -> None:
        stop_process(self.proc)


def _disk_load(directory: Path, stop: threading.Event) -> None:
    """Real reads and writes on a disk: 4 MiB written and fsynced, dropped from the page cache, read back."""
    path = directory / "load"
    block = os.urandom(1 << 20)
    while not stop.is_set():
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for _ in range(4):
                os.write(fd, block)
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.lseek(fd, 0, os.SEEK_SET)
            while os.read(fd, 1 << 20):
                pass
        finally:
            os.close(fd)
        stop.wait(0.2)


@contextlib.contextmanager
def scraped(
    iolens: list[str],
    workdir: Path,
    jobs: dict[str, list[Sequence[str]]],
    load: Callable[[threading.Event], None],
) -> Iterator[tuple[Server, dict[str, list[str]]]]:
    """Monitors started with each job's argument lists, `load(stop)` in a thread, and a Prometheus server
    scraping them: the server and each job's addresses. Everything is stopped afterwards."""
    binary = _prometheus()
    stop = threading.Event()
    thread = threading.Thread(target=load, args=(stop,), daemon=True)
    nodes: list[Node] = []
    server = None
    try:
        addresses: dict[str, list[str]] = {}
        for job, arg_lists in jobs.items():
            for args in arg_lists:
                nodes.append(Node(iolens, args))
                addresses.setdefault(job, []).append(nodes[-1].address)
        thread.start()
        server = Server(binary, workdir, addresses)
        yield server, addresses
    finally:
        stop.set()
        if thread.is_alive():
            thread.join(timeout=30)
        if server is not None:
            server.stop()
        for n in nodes:
            n.stop()


@pytest.fixture
def cluster(tmp_path: Path, iolens_bin: list[str], disk_dir: Path) -> Iterator[tuple[Server, list[str]]]:
    with scraped(
        iolens_bin, tmp_path, {"iolens": [DISK_ARGS, DISK_ARGS]}, lambda stop: _disk_load(disk_dir, stop)
    ) as (server, addresses):
        yield server, addresses["iolens"]


def agrees_at_some_evaluation(server: Server, samples: dict[float, float], expr: str) -> bool:
    """Whether a rule's samples ({evaluation time: value}) equal `expr` (one series) at one of the last five
    evaluations but the newest. At one evaluation they may differ: a scrape that started just before it and
    was stored just after is in `expr` now but was not in the rule (Prometheus 2.42 has no rule query
    offset). Evaluations (every 0.7 s) and scrapes (every 1 s) keep no fixed phase, so not at all five."""
    for at in sorted(samples)[-6:-1]:
        expect = server.query(expr, at)
        if len(expect) == 1 and samples[at] == pytest.approx(float(expect[0]["value"][1]), rel=1e-9):
            return True
    return False


def _series(server: Server, expr: str) -> dict[str, dict[float, float]]:
    """{instance (or ""): {timestamp: value}} of the stored samples of `expr` over the last 30 s."""
    out: dict[str, dict[float, float]] = {}
    for r in server.query(f"{expr}[30s]"):
        out[r["metric"].get("instance", "")] = {float(t): float(v) for t, v in r["values"]}
    return out


def test_a_real_prometheus_records_the_rules_from_two_real_monitors(
    cluster: tuple[Server, list[str]],
) -> None:
    server, instances = cluster
    # Wait for the rules to have evaluated on non-zero disk traffic from both nodes.
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        written = server.query("instance:node_disk_written_bytes:rate1m > 0")
        if {r["metric"]["instance"] for r in written} == set(instances) and server.query(
            "cluster:node_disk_written_bytes:rate1m > 0"
        ):
            break
        time.sleep(1)
    else:
        pytest.fail(f"the rules never saw disk writes from both nodes: {server.query('up')}")
    time.sleep(5)  # a few more evaluations, so that the samples compared below have all their scrapes in

    groups = server.api("rules")["groups"]
    assert {g["name"] for g in groups} >= {"iolens-node", "iolens-lustre", "iolens-commands", "iolens-alerts"}
    for g in groups:
        for rule in g["rules"]:
            assert rule["health"] == "ok", rule

    # Each node's rule sample is the rate of its raw counters at the evaluation's time, physical devices
    # summed.
    for rule, raw in [
        ("instance:node_disk_written_bytes:rate1m", "node_disk_written_bytes_total"),
        ("instance:node_disk_read_bytes:rate1m", "node_disk_read_bytes_total"),
        ("instance:node_disk_writes_completed:rate1m", "node_disk_writes_completed_total"),
        ("instance:node_disk_reads_completed:rate1m", "node_disk_reads_completed_total"),
    ]:
        recorded = _series(server, rule)
        assert set(recorded) == set(instances), (rule, recorded.keys())
        for instance, samples in recorded.items():
            expr = f'sum without (device) (rate({raw}{{instance="{instance}",{PHYSICAL}}}[1m]))'
            assert agrees_at_some_evaluation(server, samples, expr), (rule, instance)
    assert all(
        v > 0 for s in _series(server, "instance:node_disk_written_bytes:rate1m").values() for v in s.values()
    )

    # The average write size is bytes / requests of the same evaluation.
    size = _series(server, "instance:node_disk_written_bytes_per_writes_completed:ratio_rate1m")
    written_bytes = _series(server, "instance:node_disk_written_bytes:rate1m")
    writes = _series(server, "instance:node_disk_writes_completed:rate1m")
    for instance in instances:
        at = sorted(size[instance])[-3]
        assert size[instance][at] == pytest.approx(
            written_bytes[instance][at] / writes[instance][at], rel=1e-12
        )

    # The cluster is the sum of the two nodes, evaluation by evaluation.
    for rule in [
        "node_disk_written_bytes:rate1m",
        "node_disk_read_bytes:rate1m",
        "node_disk_writes_completed:rate1m",
    ]:
        total = _series(server, f"cluster:{rule}")[""]
        per_node = _series(server, f"instance:{rule}")
        common = [t for t in total if all(t in per_node[i] for i in instances)]
        assert len(common) >= 3, (rule, len(common))
        for t in common:
            assert total[t] == pytest.approx(sum(per_node[i][t] for i in instances), rel=1e-12), (rule, t)
    # Both "nodes" watch this machine's disk: they saw the same traffic, give or take their sampling times.
    rates = [float(r["value"][1]) for r in server.query("instance:node_disk_written_bytes:rate1m")]
    assert max(rates) <= 2 * min(rates), rates

    # Pressure and dirty memory rules are there too (the values are this machine's; only their presence and
    # range are known). A kernel without PSI has no pressure series: then iolens serves none either.
    if server.query("node_pressure_io_waiting_seconds_total"):
        for r in server.query("instance:node_pressure_io_waiting_seconds:rate1m"):
            assert 0 <= float(r["value"][1]) <= 1
    dirty = server.query("cluster:node_memory_Dirty_bytes:sum")
    assert len(dirty) == 1 and float(dirty[0]["value"][1]) >= 0

    # Every query of the dashboard runs on the server (template variables as their `All`).
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for expr in exprs:
        server.query(re.sub(r"\$\{?(instance|device|fs|target)\}?", ".*", expr))
    node_panels = [e for e in exprs if e.startswith(("instance:", "cluster:", "instance_device:"))]
    assert node_panels and all(server.query(re.sub(r"\$\{?\w+\}?", ".*", e)) for e in node_panels[:4])
