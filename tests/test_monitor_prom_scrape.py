"""A real Prometheus server (Debian's prometheus package) scrapes `iolens monitor --prometheus` reading a
Lustre tree of the tests/data samples, with OpenMetrics negotiated: the target is up with no scrape error, the
families are stored as OpenMetrics names them, and histogram_quantile reads the Lustre histograms."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .monitor_helpers import free_port, server_binary
from .prom_lustre_tree import lustre_tree
from .test_monitor_outputs import Monitor


def _prometheus_binary() -> str:
    return server_binary("prometheus", "prometheus")


class PrometheusServer:
    """`prometheus` on a free loopback port, temp config and storage, scraping its targets every 0.5 s."""

    def __init__(self, tmp: Path, targets: list[str]) -> None:
        config = tmp / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 500ms\n  scrape_timeout: 400ms\n"
            f"scrape_configs:\n  - job_name: iolens\n    static_configs:\n      - targets: {targets!r}\n"
        )
        self.port = free_port()
        self.log = (tmp / "prometheus.log").open("w")
        self.proc = subprocess.Popen(
            [
                _prometheus_binary(),
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def get(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{self.port}{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=10) as resp:
            return json.loads(resp.read()) if "/api/" in path else resp.read()

    def wait(self, what: str, check: Any, timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        last: Any = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"prometheus exited with {self.proc.returncode}")
            try:
                last = check()
                if last:
                    return last
            except OSError as exc:  # not listening yet
                last = exc
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}: {last!r}")

    def query(self, expr: str) -> list[dict[str, Any]]:
        out = self.get("/api/v1/query", query=expr)
        assert out["status"] == "success", out
        return out["data"]["result"]  # type: ignore[no-any-return]

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self.log.close()


@pytest.fixture
def started() -> Iterator[list[Any]]:
    procs: list[Any] = []
    yield procs
    for p in reversed(procs):
        if isinstance(p, PrometheusServer):
            if p.proc.poll() is None:
                p.stop()
        elif p.proc.poll() is None:
            p.proc.kill()
            p.proc.wait()


def test_prometheus_scrapes_openmetrics_and_reads_the_lustre_histograms(
    tmp_path: Path, started: list[Any]
) -> None:
    _prometheus_binary()
    root = lustre_tree(tmp_path / "lustre")
    args = [
        "--prometheus",
        "127.0.0.1:0",
        "--interval",
        "0.5",
        "--lustre-root",
        str(root),
        "--sources",
        "lustre",
    ]
    mon = Monitor(args)
    started.append(mon)
    # A second monitor with lustre_exporter's names: its gauge lustre_disk_io beside the counter
    # lustre_disk_io_total must not make the OpenMetrics scrape fail.
    compat = Monitor([*args, "--prometheus-names", "lustre_exporter", "--prometheus-jobs"])
    started.append(compat)
    target, compat_target = (m.url.removeprefix("http://").removesuffix("/metrics") for m in (mon, compat))
    prom = PrometheusServer(tmp_path, [target, compat_target])
    started.append(prom)
    prom.wait("ready", lambda: prom.get("/-/ready"))
    prom.wait("up == 1 twice", lambda: len(prom.query("up == 1")) == 2)
    # A few scrapes, none failed.
    prom.wait("3 scrapes", lambda: len(prom.query("count_over_time(up[1m]) >= 3")) == 2)
    targets = prom.get("/api/v1/targets")["data"]["activeTargets"]
    assert sorted((t["labels"]["instance"], t["health"], t["lastError"]) for t in targets) == sorted(
        [(target, "up", ""), (compat_target, "up", "")]
    )
    assert [r["value"][1] for r in prom.query("min_over_time(up[1m])")] == ["1", "1"]
    # OpenMetrics was negotiated: the counter family is stored by its OpenMetrics name (without _total).
    meta = prom.get("/api/v1/metadata")["data"]
    assert meta["iolens_monitor_samples"][0]["type"] == "counter"
    assert "iolens_monitor_samples_total" not in meta
    assert meta["lustre_brw_disk_io_size_bytes"][0]["type"] == "histogram"
    # Median disk write size: 5 writes of ≤ 4 KiB, 2000 of (512 KiB, 1 MiB], 1 of (2, 4 MiB].
    q = prom.query('histogram_quantile(0.5, lustre_brw_disk_io_size_bytes_bucket{operation="write"})')
    assert len(q) == 1 and q[0]["metric"]["target"] == "lfs-OST0000"
    assert 524288 < float(q[0]["value"][1]) <= 1048576
    # 90th percentile of osc write latency: 1000 of 1202 at ≤ 512 units of 1024 ns, then 200 at ≤ 4096.
    q = prom.query('histogram_quantile(0.9, lustre_rpc_latency_seconds_bucket{operation="write"})')
    assert 512 * 1024e-9 < float(q[0]["value"][1]) <= 4096 * 1024e-9
    # Mean disk I/O time from _sum/_count: the upper-bound estimate, in seconds.
    q = prom.query(
        'lustre_brw_io_time_seconds_sum{operation="read"}'
        ' / lustre_brw_io_time_seconds_count{operation="read"}'
    )
    assert float(q[0]["value"][1]) == pytest.approx((800 * 1 + 200 * 2 + 40 * 16 + 10 * 1024) / 1050 / 1000)
    q = prom.query('lustre_disk_io_total{operation="write",size="1048576"}')
    assert [r["value"][1] for r in q] == ["2000"]
    assert meta["lustre_disk_io"][0]["type"] == "gauge"
    prom.stop()
    assert mon.stop() == 0 and compat.stop() == 0
