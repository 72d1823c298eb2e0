"""What `iolens monitor` gives out, from a real process: the JSON-lines stream, the Prometheus endpoint
scraped over HTTP on localhost and read with prometheus_client's own text parser, InfluxDB line protocol,
and its errors."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolens.monitor import influx, prometheus
from iolens.monitor.diskstats import parse as parse_diskstats

from .monitor_helpers import iolens_env, run_iolens, sample_text
from .test_monitor_lustre import RPC_STATS


def _lustre_root(root: Path, job_id: str = '"odd job\\x2f1"') -> Path:
    (root / "obdfilter" / "lfs-OST0000").mkdir(parents=True)
    (root / "obdfilter" / "lfs-OST0000" / "stats").write_text(sample_text("obdfilter-export-stats-2.12.txt"))
    jobs = sample_text("ost-job_stats-2.12.txt").replace("cluster-testjob1", job_id)
    (root / "obdfilter" / "lfs-OST0000" / "job_stats").write_text(jobs)
    (root / "llite" / "lfs-ffff88").mkdir(parents=True)
    (root / "llite" / "lfs-ffff88" / "stats").write_text(
        sample_text("llite-stats-2.14.txt").split("\n", 1)[1]
    )
    (root / "mdt" / "lfs-MDT0000").mkdir(parents=True)
    (root / "mdt" / "lfs-MDT0000" / "md_stats").write_text(sample_text("mdt-md_stats-old.txt"))
    (root / "osc" / "lfs-OST0000-osc-ffff88").mkdir(parents=True)
    (root / "osc" / "lfs-OST0000-osc-ffff88" / "rpc_stats").write_text(RPC_STATS.split("\n", 1)[1])
    return root


class Monitor:
    """`python -m iolens monitor ... --prometheus 127.0.0.1:0` running; its URL read from its stderr."""

    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "iolens", "monitor", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=iolens_env(),
        )
        assert self.proc.stderr is not None
        line = ""
        deadline = time.monotonic() + 30
        while "serving Prometheus metrics at" not in line and time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                raise AssertionError(f"iolens monitor exited with {self.proc.returncode}")
        m = re.search(r"http://(\S+)/metrics", line)
        assert m is not None, line
        self.url = f"http://{m.group(1)}/metrics"

    def scrape(self) -> tuple[str, str]:
        with urllib.request.urlopen(self.url, timeout=10) as resp:
            return resp.read().decode(), resp.headers["Content-Type"]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=15)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def monitor_factory() -> Iterator[list[Monitor]]:
    started: list[Monitor] = []
    yield started
    for m in started:
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait()


def _families(text: str) -> dict[str, object]:
    from prometheus_client.parser import text_string_to_metric_families

    return {f.name: f for f in text_string_to_metric_families(text)}


def _value(families: dict[str, object], family: str, sample: str, **labels: str) -> float:
    fam = families[family]
    for s in fam.samples:  # type: ignore[attr-defined]
        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
            return float(s.value)
    raise AssertionError(f"no {sample}{labels} in {family}")


def test_prometheus_endpoint_scraped_over_http_parses_with_prometheus_client(
    tmp_path: Path, monitor_factory: list[Monitor]
) -> None:
    root = _lustre_root(tmp_path / "lustre")
    mon = Monitor(["--prometheus", "127.0.0.1:0", "--interval", "0.2", "--lustre-root", str(root)])
    monitor_factory.append(mon)
    assert mon.url.startswith("http://127.0.0.1:")
    time.sleep(0.6)
    before, _ = parse_diskstats(Path("/proc/diskstats").read_text())
    text, ctype = mon.scrape()
    after, _ = parse_diskstats(Path("/proc/diskstats").read_text())
    assert ctype.startswith("text/plain; version=0.0.4")
    fams = _families(text)
    for name in (
        "node_disk_read_bytes", "node_disk_written_bytes", "node_disk_reads_completed",
        "node_disk_writes_completed", "node_disk_io_time_seconds", "node_disk_discards_completed",
        "node_disk_flush_requests", "node_disk_io_now", "node_pressure_io_waiting_seconds",
        "node_pressure_io_stalled_seconds", "node_load1", "node_load15", "node_memory_Dirty_bytes",
        "node_memory_Writeback_bytes", "node_procs_blocked", "lustre_read_bytes", "lustre_write_bytes",
        "lustre_read_samples", "lustre_stats", "lustre_stats_time_seconds", "lustre_md_stats", "lustre_jobs",
        "lustre_rpc_pages_per_rpc", "lustre_rpc_stats_current", "iolens_monitor_source_up",
        "iolens_monitor_samples",
    ):  # fmt: skip
        assert name in fams, name
    dev = next(d for d in before if not d.startswith(("loop", "ram", "zram")))
    written = _value(fams, "node_disk_written_bytes", "node_disk_written_bytes_total", device=dev)
    assert before[dev]["written_bytes"] - 1e7 <= written <= after[dev]["written_bytes"]
    assert fams["node_disk_written_bytes"].type == "counter"  # type: ignore[attr-defined]
    assert fams["node_load1"].type == "gauge"  # type: ignore[attr-defined]
    ost = {"component": "ost", "target": "lfs-OST0000"}
    assert _value(fams, "lustre_read_bytes", "lustre_read_bytes_total", **ost) == 78026117632000
    assert _value(fams, "lustre_write_samples", "lustre_write_samples_total", **ost) == 71893382
    assert (
        _value(fams, "lustre_stats", "lustre_stats_total", component="client", operation="mkdir") == 17987059
    )
    llite_open = _value(
        fams,
        "lustre_stats_time_seconds",
        "lustre_stats_time_seconds_total",
        component="client",
        operation="open",
    )
    assert llite_open == pytest.approx(3393651645e-6)
    assert _value(fams, "lustre_md_stats", "lustre_md_stats_total", operation="getxattr") == 6145349681
    assert _value(fams, "lustre_jobs", "lustre_jobs", **ost) == 2
    ppr = {"operation": "write"}
    assert (
        _value(fams, "lustre_rpc_pages_per_rpc", "lustre_rpc_pages_per_rpc_bucket", le="256.0", **ppr) == 138
    )
    assert fams["lustre_rpc_pages_per_rpc"].type == "histogram"  # type: ignore[attr-defined]
    # Per-job series only on request.
    assert not any(name.startswith("lustre_job_read") for name in fams)
    assert _value(fams, "iolens_monitor_source_up", "iolens_monitor_source_up", source="lustre") == 1
    assert mon.stop() == 0


def test_per_job_lustre_metrics_are_opt_in_with_job_ids_decoded(
    tmp_path: Path, monitor_factory: list[Monitor]
) -> None:
    root = _lustre_root(tmp_path / "lustre")
    mon = Monitor(
        [
            "--prometheus",
            "0",
            "--prometheus-jobs",
            "--interval",
            "0.2",
            "--lustre-root",
            str(root),
            "--sources",
            "lustre",
        ]
    )
    monitor_factory.append(mon)
    assert mon.url.startswith("http://127.0.0.1:")  # a bare port binds the loopback address
    text, _ = mon.scrape()
    fams = _families(text)
    odd = {"component": "ost", "target": "lfs-OST0000", "jobid": "odd job/1"}
    assert _value(fams, "lustre_job_write_bytes", "lustre_job_write_bytes_total", **odd) == 26214400
    assert _value(fams, "lustre_job_read_samples", "lustre_job_read_samples_total", jobid="testjob2") == 1
    assert (
        _value(fams, "lustre_job_stats", "lustre_job_stats_total", jobid="testjob2", operation="punch") == 1
    )
    assert "node_disk_read_bytes" not in fams  # --sources lustre only
    assert mon.stop() == 0


def test_json_lines_stream_of_a_real_run(tmp_path: Path) -> None:
    out = tmp_path / "samples.jsonl"
    r = run_iolens(["monitor", "--interval", "100ms", "--duration", "0.5s", "--out", str(out)], timeout=60)
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    header, *rest = records
    assert header["type"] == "header" and header["format"] == "iolens-monitor" and header["version"] == 1
    assert header["interval_s"] == pytest.approx(0.1) and header["sources"]["diskstats"]["available"] is True
    samples = [x for x in rest if x["type"] == "sample"]
    assert len(samples) == 6  # at 0, 0.1 … 0.5 s
    assert rest[-1] == {**rest[-1], "type": "end", "samples": 6}
    assert [s["seq"] for s in samples] == list(range(1, 7))
    assert all(b["time"] > a["time"] for a, b in zip(samples, samples[1:], strict=False))
    assert "rates" in samples[1] and samples[1]["rates"]["diskstats"]
    assert samples[0]["rates"] == {}
    assert {"diskstats", "meminfo", "loadavg", "stat"} <= set(samples[-1]["data"])
    # Sources that cannot be read here are said once, as events, not in every sample.
    unavailable = [x["source"] for x in rest if x["type"] == "event"]
    assert len(unavailable) == len(set(unavailable))


def test_standard_output_gets_the_stream_when_it_is_not_a_terminal() -> None:
    r = run_iolens(["monitor", "--interval", "0.1", "--duration", "0.1", "--sources", "loadavg,meminfo"])
    assert r.returncode == 0, r.stderr
    types = [json.loads(line)["type"] for line in r.stdout.splitlines()]
    assert types == ["header", "sample", "sample", "end"]


def test_influx_line_protocol_file(tmp_path: Path) -> None:
    out = tmp_path / "lines.txt"
    root = _lustre_root(tmp_path / "lustre")
    r = run_iolens(
        [
            "monitor",
            "--interval",
            "0.1",
            "--duration",
            "0.1",
            "--influx",
            str(out),
            "--lustre-root",
            str(root),
        ]
    )
    assert r.returncode == 0, r.stderr
    lines = out.read_text().splitlines()
    ident = r"(?:[^ ,=\\]|\\.)+"
    value = r'(?:"(?:[^"\\]|\\.)*"|[^ ,"]+)'
    line_re = re.compile(rf"^{ident}(?:,{ident}={ident})* {ident}={value}(?:,{ident}={value})* \d{{19}}$")
    bad = [ln for ln in lines if not line_re.match(ln)]
    assert not bad, bad[:3]
    disk = [ln for ln in lines if ln.startswith("diskstats,")]
    assert len(disk) >= 2 and ",host=" in disk[0] and re.search(r"written_bytes=\d+i", disk[0])
    job = [ln for ln in lines if ln.startswith("lustre_job_stats,") and "job_id=odd\\ job/1" in ln]
    assert job and any("counter=write_bytes" in ln and "sum=26214400i" in ln for ln in job)
    assert any(ln.startswith("lustre_rpc_stats,") and "table=pages\\ per\\ rpc" in ln for ln in lines)


def test_exposition_escapes_labels_and_keeps_the_first_of_a_duplicate() -> None:
    e = prometheus.Exposition()
    e.add("x_total", "counter", "help with \\ and\nnewline", {"a": 'q"uo\\te\n'}, 1)
    e.add("x_total", "counter", "", {"a": 'q"uo\\te\n'}, 2)
    e.add("x_total", "counter", "", {"a": "b"}, 2.5)
    text = e.text()
    assert text.splitlines() == [
        "# HELP x_total help with \\\\ and\\nnewline",
        "# TYPE x_total counter",
        'x_total{a="q\\"uo\\\\te\\\\x0a"} 1',
        'x_total{a="b"} 2.5',
    ]
    fams = _families(text)
    # The newline is served as the four characters \x0a, as InfluxDB lines carry it (keytext.py).
    assert [s.labels["a"] for s in fams["x"].samples] == ['q"uo\\te\\x0a', "b"]  # type: ignore[attr-defined]


def test_influx_escapes_and_types() -> None:
    ln = influx.line("m x", {"t,a": "v=1 2", "empty": ""}, {"i": 3, "f": 1.5, "s": 'a"b', "b": True}, 7)
    assert ln == 'm\\ x,t\\,a=v\\=1\\ 2 i=3i,f=1.5,s="a\\"b",b=true 7'
    assert influx.line("m", {}, {}, 1) is None


def test_prometheus_addresses() -> None:
    assert prometheus.parse_address("9100") == ("127.0.0.1", 9100)
    assert prometheus.parse_address(":9100") == ("127.0.0.1", 9100)
    assert prometheus.parse_address("0.0.0.0:9100") == ("0.0.0.0", 9100)
    assert prometheus.parse_address("[::1]:9100") == ("::1", 9100)
    with pytest.raises(ValueError):
        prometheus.parse_address("host:port")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--interval", "0"], "--interval: must be more than zero"),
        (["--interval", "fast"], "--interval: expected a time"),
        (["--sources", "diskstats,tape"], "unknown source 'tape'"),
        (["--prometheus", "nine"], "--prometheus: expected PORT or HOST:PORT"),
        (["--out", "/nonexistent-dir/x.jsonl"], "--out: directory /nonexistent-dir does not exist"),
        (["--pid", "abc"], "--pid: expected a process id"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_options_exit_2_with_one_line(args: list[str], message: str) -> None:
    r = run_iolens(["monitor", *args])
    assert r.returncode == 2
    assert message in r.stderr and r.stderr.startswith("iolens: error: ")
    assert r.stdout == ""


def test_a_port_in_use_is_an_error(monitor_factory: list[Monitor]) -> None:
    mon = Monitor(["--prometheus", "127.0.0.1:0", "--sources", "loadavg"])
    monitor_factory.append(mon)
    port = mon.url.split(":")[2].split("/")[0]
    r = run_iolens(["monitor", "--prometheus", f"127.0.0.1:{port}", "--duration", "1s"])
    assert r.returncode == 1 and "cannot listen" in r.stderr
    assert mon.stop() == 0


# --- bytes that are not UTF-8 -------------------------------------------------------------------------------

NAME = b"io\xffrank"  # a process name that is not UTF-8 (prctl(PR_SET_NAME) takes any bytes)
SHOWN = "io\\xffrank"  # how every output shows it: the byte as \xHH, as Lustre 2.16 escapes job ids


@pytest.fixture
def odd_process() -> Iterator[int]:
    code = (
        "import ctypes, sys, time\n"
        f"ctypes.CDLL(None).prctl(15, {NAME!r}, 0, 0, 0)\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    assert Path(f"/proc/{proc.pid}/comm").read_bytes() == NAME + b"\n"
    yield proc.pid
    proc.kill()
    proc.wait()


def test_a_process_name_that_is_not_utf8_reaches_the_stream_and_influx_escaped(
    tmp_path: Path, odd_process: int
) -> None:
    out, lines = tmp_path / "mon.jsonl", tmp_path / "mon.influx"
    r = run_iolens(["monitor", "--pid", str(odd_process), "--sources", "proc_io", "--interval", "0.1",
                    "--duration", "0.3", "--out", str(out), "--influx", str(lines)])  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    samples = [json.loads(x) for x in out.read_text("utf-8").splitlines() if '"sample"' in x]
    assert samples and all(s["data"]["proc_io"][str(odd_process)]["comm"] == SHOWN for s in samples)
    influx_lines = lines.read_text("utf-8").splitlines()
    # A backslash before an ordinary character is written as it is (keytext.py): every InfluxDB reads the
    # four characters \xff back, as Prometheus serves them.
    assert influx_lines and all("comm=io\\xffrank " in x or "comm=io\\xffrank," in x for x in influx_lines)


def test_a_process_name_that_is_not_utf8_is_served_to_prometheus_escaped(
    odd_process: int, monitor_factory: list[Monitor]
) -> None:
    mon = Monitor(["--prometheus", "127.0.0.1:0", "--pid", str(odd_process), "--sources", "proc_io",
                   "--interval", "0.1", "--prometheus-pids"])  # fmt: skip
    monitor_factory.append(mon)
    time.sleep(0.3)
    text, _ = mon.scrape()
    fams = _families(text)
    assert _value(fams, "iolens_process_read_chars", "iolens_process_read_chars_total", comm=SHOWN) >= 0
    assert _value(fams, "iolens_command_read_chars", "iolens_command_read_chars_total", comm=SHOWN) >= 0
    assert mon.stop() == 0


def test_an_unquoted_lustre_job_id_that_is_not_utf8_reaches_every_output(
    tmp_path: Path, monitor_factory: list[Monitor]
) -> None:
    # Lustre <= 2.15 prints a job id as it is, bytes and all: here Latin-1 "é" (0xe9), not UTF-8.
    root = _lustre_root(tmp_path / "lustre", job_id="caf-e9")
    path = root / "obdfilter" / "lfs-OST0000" / "job_stats"
    path.write_bytes(path.read_bytes().replace(b"caf-e9", b"caf\xe9"))
    assert b"- job_id:          caf\xe9\n" in path.read_bytes()
    out, lines = tmp_path / "mon.jsonl", tmp_path / "mon.influx"
    r = run_iolens(["monitor", "--lustre-root", str(root), "--sources", "lustre", "--duration", "0.2",
                    "--interval", "0.1", "--out", str(out), "--influx", str(lines)])  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    sample = next(json.loads(x) for x in out.read_text("utf-8").splitlines() if '"sample"' in x)
    jobs = sample["data"]["lustre"]["obdfilter.lfs-OST0000.job_stats"]["jobs"]
    assert "caf\\xe9" in jobs and jobs["caf\\xe9"]["counters"]["write_bytes"]["sum"] > 0
    assert any("job_id=caf\\xe9," in x for x in lines.read_text("utf-8").splitlines())
    mon = Monitor(["--prometheus", "127.0.0.1:0", "--prometheus-jobs", "--lustre-root", str(root),
                   "--sources", "lustre", "--interval", "0.1"])  # fmt: skip
    monitor_factory.append(mon)
    text, _ = mon.scrape()
    fams = _families(text)
    labels = {"component": "ost", "target": "lfs-OST0000", "jobid": "caf\\xe9"}
    assert _value(fams, "lustre_job_write_bytes", "lustre_job_write_bytes_total", **labels) > 0


def test_monitor_parse_reads_a_file_and_standard_input_that_are_not_utf8(tmp_path: Path) -> None:
    data = sample_text("ost-job_stats-2.12.txt").replace("cluster-testjob1", "caf\udce9")
    raw = data.encode("utf-8", "surrogateescape")
    (tmp_path / "js.txt").write_bytes(raw)
    for args, stdin in (
        (["monitor", "parse", str(tmp_path / "js.txt")], None),
        (["monitor", "parse", "-"], raw),
    ):
        r = subprocess.run([sys.executable, "-m", "iolens", *args], input=stdin, capture_output=True,
                           env=iolens_env(), timeout=60, check=False)  # fmt: skip
        assert r.returncode == 0, r.stderr
        parsed = json.loads(r.stdout.decode("utf-8"))
        assert "caf\\xe9" in parsed["entries"][0]["jobs"]
