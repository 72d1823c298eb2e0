"""The /metrics endpoint over real HTTP on localhost: HEAD, gzip as Accept-Encoding allows, OpenMetrics 1.0.0
when Accept asks for it (checked with prometheus_client's OpenMetrics parser), text 0.0.4 otherwise (checked
with promtool from Debian's prometheus package)."""

from __future__ import annotations

import gzip
import http.client
import os
import shutil
import subprocess
from collections.abc import Iterator

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_families

from iolens.monitor import prometheus
from iolens.monitor.promhttp import MetricsServer, wants_gzip, wants_openmetrics

from .test_monitor_prom_hist import lustre_record

# What Prometheus 2.42 sends.
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    record = lustre_record()
    record["data"]["loadavg"] = {"load1": 0.5, "load5": 0.25, "load15": 0.125}  # type: ignore[index]
    srv = MetricsServer("127.0.0.1", 0, lambda: prometheus.build(record, {"lustre": {}}, False, 3)).start()
    yield srv
    srv.close()


def _request(srv: MetricsServer, method: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(*srv.address, timeout=10)
    try:
        conn.request(method, "/metrics", headers=headers)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_head_has_the_headers_of_get_and_no_body(server: MetricsServer) -> None:
    status, head, body = _request(server, "HEAD", {})
    assert status == 200 and body == b""
    _, got, full = _request(server, "GET", {})
    assert head["content-type"] == got["content-type"] == prometheus.CONTENT_TYPE
    assert int(head["content-length"]) == len(full) > 0


def test_gzip_when_accepted_identity_otherwise(server: MetricsServer) -> None:
    _, plain_headers, plain = _request(server, "GET", {"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain_headers
    _, headers, body = _request(server, "GET", {"Accept-Encoding": "gzip"})
    assert headers["content-encoding"] == "gzip" and int(headers["content-length"]) == len(body)
    assert gzip.decompress(body) == plain
    assert len(body) < len(plain)
    _, headers, body = _request(server, "GET", {"Accept-Encoding": "gzip;q=0, deflate"})
    assert "content-encoding" not in headers and body == plain
    _, headers, _ = _request(server, "HEAD", {"Accept-Encoding": "br, gzip;q=0.5"})
    assert headers["content-encoding"] == "gzip"
    assert "Accept-Encoding" in headers["vary"]


def test_accept_encoding_rules() -> None:
    assert wants_gzip("gzip") and wants_gzip("GZIP;q=0.1") and wants_gzip("*") and wants_gzip("x-gzip")
    assert not wants_gzip(None) and not wants_gzip("") and not wants_gzip("identity")
    assert not wants_gzip("gzip;q=0") and not wants_gzip("*;q=0") and not wants_gzip("gzip;q=0, *")
    assert not wants_gzip("gzip;q=oops")


def test_accept_rules() -> None:
    assert wants_openmetrics(PROMETHEUS_ACCEPT)
    assert wants_openmetrics("application/openmetrics-text")
    assert (
        not wants_openmetrics(None) and not wants_openmetrics("*/*") and not wants_openmetrics("text/plain")
    )
    assert not wants_openmetrics("application/openmetrics-text;q=0, text/plain")
    assert not wants_openmetrics("application/openmetrics-text;q=0.4,text/plain;version=0.0.4;q=0.5")
    assert not wants_openmetrics("application/openmetrics-text;version=2.0.0")


def test_openmetrics_when_prometheus_asks_for_it(server: MetricsServer) -> None:
    _, headers, body = _request(server, "GET", {"Accept": PROMETHEUS_ACCEPT, "Accept-Encoding": "gzip"})
    assert headers["content-type"] == "application/openmetrics-text; version=1.0.0; charset=utf-8"
    text = gzip.decompress(body).decode()
    assert text.endswith("# EOF\n")
    fams = {f.name: f for f in om_families(text)}  # raises on anything OpenMetrics forbids
    samples = fams["iolens_monitor_samples"]
    assert samples.type == "counter" and [s.name for s in samples.samples] == ["iolens_monitor_samples_total"]
    assert "# TYPE iolens_monitor_samples counter" in text
    hist = fams["lustre_brw_disk_io_size_bytes"]
    assert hist.type == "histogram"
    assert {s.name for s in hist.samples} == {
        "lustre_brw_disk_io_size_bytes_bucket", "lustre_brw_disk_io_size_bytes_sum",
        "lustre_brw_disk_io_size_bytes_count",
    }  # fmt: skip
    assert fams["node_load1"].type == "gauge"
    # The same series in both formats: only the family lines differ.
    _, _, plain = _request(server, "GET", {})
    series = lambda t: sorted(ln for ln in t.splitlines() if not ln.startswith("#"))  # noqa: E731
    assert series(text) == series(plain.decode())


def test_the_text_format_passes_promtool(server: MetricsServer) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is not installed (Debian package prometheus, in .ci/run's packages)")
        pytest.skip("promtool is not installed (apt-get install prometheus)")
    _, _, body = _request(server, "GET", {})
    r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, timeout=60)
    # 0: parsed, and no finding of promtool's lint rules either (3 would be lint findings only).
    assert r.returncode == 0, (r.stdout + r.stderr).decode()


def test_openmetrics_of_a_counter_beside_a_gauge_of_its_family_name() -> None:
    """lustre_exporter's gauge lustre_disk_io and counter lustre_disk_io_total would be one OpenMetrics
    family:
    the counter is typed unknown under its full name, so both parse and keep their series."""
    from iolens.monitor.promtext import Exposition

    e = Exposition()
    e.add("lustre_disk_io_total", "counter", "Disk I/Os by size.", {"size": "4096"}, 3)
    e.add("lustre_disk_io", "gauge", "Disk I/Os in flight.", {"size": "1"}, 2)
    e.add("odd", "counter", "A counter without _total.", {}, 1)
    text = e.openmetrics()
    fams = {f.name: f for f in om_families(text)}
    assert fams["lustre_disk_io_total"].type == "unknown" and fams["lustre_disk_io"].type == "gauge"
    assert fams["odd"].type == "unknown"
    assert 'lustre_disk_io_total{size="4096"} 3' in text.splitlines()
