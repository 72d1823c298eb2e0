"""`iolens monitor --influx-url`: line protocol sent to InfluxDB over HTTP (monitor/influx_http.py).

InfluxDB 2.x is neither in Debian nor on PyPI: its write API is exercised against a server written here from
its documentation (method, path, query, headers, gzip, every line read by the grammar reader of
tests/faults/test_monitor_escaping.py, and the documented answers 204/400/401/413/429/503). InfluxDB 1.x is
Debian's `influxdb` (1.6): a private `influxd` is started and what iolens wrote is read back with /query."""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from iolens.monitor.influx_http import HttpWriter, Target, retry_after

from .faults.test_monitor_escaping import read_points
from .monitor_helpers import free_port, iolens_env, run_iolens, server_binary

TOKEN = "s3cr3t-token=="
Answer = tuple[int, dict[str, str], bytes]


@dataclass
class Request:
    when: float
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    text: str


@dataclass
class FakeInflux:
    """An InfluxDB 2.x write endpoint from the API documentation; `answer` picks each reply."""

    answer: Callable[[Request, int], Answer]
    requests: list[Request] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def start(self) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as InfluxDB serves

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                url = urllib.parse.urlsplit(self.path)
                req = Request(time.monotonic(), url.path, urllib.parse.parse_qs(url.query), headers,
                              body.decode("utf-8"))  # fmt: skip
                fake.check(req)
                fake.requests.append(req)
                status, extra, reply = fake.answer(req, len(fake.requests))
                self.send_response(status)
                for k, v in extra.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(reply)))
                if reply:
                    self.send_header("Content-Type", "application/json; charset=utf-8")
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def check(self, req: Request) -> None:
        want = {"org": ["my org"], "bucket": ["io/metrics"], "precision": ["ns"]}
        if req.path != "/api/v2/write" or req.query != want:
            self.problems.append(f"path {req.path} query {req.query}")
        if req.headers.get("authorization") != f"Token {TOKEN}":
            self.problems.append(f"authorization {req.headers.get('authorization')}")
        if not req.headers.get("content-type", "").startswith("text/plain"):
            self.problems.append(f"content-type {req.headers.get('content-type')}")
        try:
            read_points(req.text)
        except (AssertionError, ValueError) as exc:
            self.problems.append(f"line protocol: {exc}")

    def lines(self, ok: set[int] = frozenset({204})) -> list[str]:  # type: ignore[assignment]
        return [ln for r in self.requests for ln in r.text.splitlines()]


@pytest.fixture
def fake_influx() -> Iterator[Callable[[Callable[[Request, int], Answer]], tuple[FakeInflux, str]]]:
    started: list[FakeInflux] = []

    def start(answer: Callable[[Request, int], Answer]) -> tuple[FakeInflux, str]:
        f = FakeInflux(answer)
        started.append(f)
        return f, f.start()

    yield start
    for f in started:
        f.stop()


def _monitor(
    url: str, tmp_path: Path, *extra: str, duration: str = "0.6"
) -> subprocess.CompletedProcess[str]:
    args = ["monitor", "--sources", "loadavg,meminfo,stat", "--interval", "0.1", "--duration", duration,
            "--out", str(tmp_path / "stream.jsonl"), "--influx", str(tmp_path / "lines"),
            "--influx-url", url, "--influx-org", "my org", "--influx-bucket", "io/metrics",
            *extra]  # fmt: skip
    r = run_iolens(args, env=iolens_env(INFLUX_TOKEN=TOKEN), timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    return r


def _samples(tmp_path: Path) -> int:
    records = [json.loads(x) for x in (tmp_path / "stream.jsonl").read_text().splitlines()]
    return sum(r["type"] == "sample" for r in records)


def _ok(req: Request, n: int) -> Answer:
    return 204, {}, b""


def test_every_sample_is_one_gzip_request_to_the_2x_api(fake_influx: Any, tmp_path: Path) -> None:
    fake, url = fake_influx(_ok)
    r = _monitor(url, tmp_path, "--influx-gzip")
    assert fake.problems == []
    assert len(fake.requests) == _samples(tmp_path) >= 5
    assert all(req.headers.get("content-encoding") == "gzip" for req in fake.requests)
    # The same lines as the file output, in order, and the token never on the command line.
    assert fake.lines() == (tmp_path / "lines").read_text().splitlines()
    assert TOKEN not in " ".join(r.args)
    assert r.stderr == ""


def test_the_token_from_a_file(fake_influx: Any, tmp_path: Path) -> None:
    fake, url = fake_influx(_ok)
    (tmp_path / "token").write_text(TOKEN + "\n")
    args = ["monitor", "--sources", "loadavg", "--interval", "0.1", "--duration", "0.2", "--influx-url", url,
            "--influx-org", "my org", "--influx-bucket", "io/metrics", "--influx-token-file",
            str(tmp_path / "token")]  # fmt: skip
    env = {k: v for k, v in iolens_env().items() if k != "INFLUX_TOKEN"}
    r = run_iolens(args, env=env)
    assert r.returncode == 0, r.stderr
    assert fake.problems == [] and len(fake.requests) >= 2


def test_503_and_429_are_tried_again_after_retry_after(fake_influx: Any, tmp_path: Path) -> None:
    def answer(req: Request, n: int) -> Answer:
        if n == 1:
            return 503, {"Retry-After": "1"}, b'{"code":"unavailable","message":"service unavailable"}'
        if n == 2:
            return 429, {"Retry-After": "1"}, b'{"code":"too many requests","message":"slow down"}'
        return 204, {}, b""

    fake, url = fake_influx(answer)
    r = _monitor(url, tmp_path, duration="1")
    assert fake.problems == []
    first = fake.requests[0]
    # The first sample sent three times, a second apart at least, and nothing lost or sent twice after.
    assert fake.requests[1].text == fake.requests[2].text == first.text
    assert (
        fake.requests[1].when - first.when >= 0.95 and fake.requests[2].when - fake.requests[1].when >= 0.95
    )
    written = [ln for req in fake.requests[2:] for ln in req.text.splitlines()]
    assert written == (tmp_path / "lines").read_text().splitlines()
    assert r.stderr.count("trying again") == 1 and "writing again" in r.stderr, r.stderr
    assert _samples(tmp_path) >= 9  # the sampler went on meanwhile


def test_a_bad_token_is_said_once_and_sampling_goes_on(fake_influx: Any, tmp_path: Path) -> None:
    def answer(req: Request, n: int) -> Answer:
        return 401, {}, b'{"code":"unauthorized","message":"unauthorized access"}'

    fake, url = fake_influx(answer)
    r = _monitor(url, tmp_path)
    said = [ln for ln in r.stderr.splitlines() if "401" in ln]
    assert said == ["iolens monitor: --influx-url: cannot write (401, bad or missing token): unauthorized: "
                    "unauthorized access"], r.stderr  # fmt: skip
    assert len(fake.requests) == _samples(tmp_path) >= 5
    assert "lines of" in r.stderr and "samples not written" in r.stderr


def test_413_splits_the_batch_and_400_drops_it_once_said(fake_influx: Any, tmp_path: Path) -> None:
    def answer(req: Request, n: int) -> Answer:
        lines = req.text.splitlines()
        if len(lines) > 1:
            return 413, {}, b'{"code":"request too large","message":"too large"}'
        if lines[0].startswith("stat,"):
            return 400, {}, b'{"code":"invalid","message":"unable to parse"}'
        return 204, {}, b""

    fake, url = fake_influx(answer)
    r = _monitor(url, tmp_path, duration="0.3")
    assert fake.problems == []
    sent_alone = [req.text for req in fake.requests if req.text.count("\n") == 1]
    assert sorted(sent_alone) == sorted(ln + "\n" for ln in (tmp_path / "lines").read_text().splitlines())
    assert r.stderr.count("unable to parse") == 1, r.stderr


def test_a_server_that_does_not_answer_never_blocks_the_sampler(tmp_path: Path) -> None:
    # A socket that accepts nothing after its backlog: requests hang until the writer's timeout.
    with socket.socket() as sink:
        sink.bind(("127.0.0.1", 0))
        sink.listen(0)
        messages: list[str] = []
        target = Target(f"http://127.0.0.1:{sink.getsockname()[1]}", org="o", bucket="b", token=TOKEN)
        writer = HttpWriter(target, messages.append, queue_batches=10, timeout=5).start()
        t0 = time.monotonic()
        for i in range(1000):
            writer.put([f"m v={i}i {i}"])
        took = time.monotonic() - t0
        time.sleep(0.2)  # the first request is waiting for its answer
        t1 = time.monotonic()
        writer.close(wait=0.5)
        closing = time.monotonic() - t1
    assert took < 0.5
    assert closing < 1.5  # the unanswered request is cut short, not waited for
    st = writer.stats()
    assert st["written_lines"] == 0 and st["dropped_lines"] == 1000
    assert sum("queue is full" in m for m in messages) == 1, messages


def test_a_refused_connection_is_counted_and_the_monitor_ends_on_time(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.monotonic()
    r = _monitor(f"http://127.0.0.1:{port}", tmp_path, duration="0.5")
    assert time.monotonic() - t0 < 20
    assert r.stderr.count("trying again") == 1 and "samples not written" in r.stderr, r.stderr
    assert _samples(tmp_path) >= 5


def test_retry_after_texts() -> None:
    assert retry_after("3", 0.0) == 3.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412475.0) == 5.0
    assert retry_after("99999", 0.0) == 300.0
    assert retry_after("soon", 0.0) is None and retry_after(None, 0.0) is None


@pytest.mark.parametrize(
    "args, message",
    [
        (["--influx-url", "ftp://x"], "--influx-url: expected an http:// or https:// URL"),
        (["--influx-url", "http://h:8086"], "--influx-url: give --influx-bucket (InfluxDB 2.x API) or"),
        (["--influx-url", "http://h", "--influx-db", "d", "--influx-bucket", "b"], "--influx-url: give"),
        (["--influx-bucket", "b"], "--influx-bucket: needs --influx-url"),
        (["--influx-url", "http://h", "--influx-bucket", "b"], "--influx-bucket: needs --influx-org"),
        (["--influx-url", "http://h", "--influx-bucket", "b", "--influx-org", "o"],
         "--influx-bucket: needs a token"),
        (["--influx-url", "http://h", "--influx-db", "d", "--influx-token-file", "/nonexistent/t"],
         "--influx-token-file: cannot read /nonexistent/t"),
    ],
)  # fmt: skip
def test_bad_influx_options_exit_2_with_one_line(args: list[str], message: str) -> None:
    env = {k: v for k, v in iolens_env().items() if k not in ("INFLUX_TOKEN", "INFLUX_ORG")}
    r = run_iolens(["monitor", *args], env=env)
    assert r.returncode == 2 and r.stderr.startswith(f"iolens: error: {message}"), r.stderr
    assert len(r.stderr.splitlines()) == 1


# --- a real InfluxDB 1.x ----------------------------------------------------------------------------------


@pytest.fixture
def influxd(tmp_path: Path) -> Iterator[str]:
    binary = server_binary("influxd", "influxdb")
    d = tmp_path / "influxd"
    d.mkdir()
    port = free_port()
    (d / "influxdb.conf").write_text(
        "reporting-disabled = true\n"
        'bind-address = "127.0.0.1:0"\n'
        f'[meta]\n  dir = "{d}/meta"\n'
        f'[data]\n  dir = "{d}/data"\n  wal-dir = "{d}/wal"\n  query-log-enabled = false\n'
        "[monitor]\n  store-enabled = false\n"
        f'[http]\n  bind-address = "127.0.0.1:{port}"\n  log-enabled = false\n'
        "[continuous_queries]\n  enabled = false\n"
    )
    proc = subprocess.Popen([binary, "run", "-config", str(d / "influxdb.conf")],
                            stdout=subprocess.DEVNULL, stderr=open(d / "log", "wb"))  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/ping", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(
                        "influxd did not start: " + (d / "log").read_text()[-2000:]
                    ) from None
                time.sleep(0.2)
        _query(url, "CREATE DATABASE iolens")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _query(url: str, q: str, db: str = "") -> Any:
    data = urllib.parse.urlencode({"q": q, "epoch": "ns", **({"db": db} if db else {})}).encode()
    with urllib.request.urlopen(f"{url}/query", data=data, timeout=10) as resp:
        return json.loads(resp.read())


def test_a_real_influxdb_1x_stores_the_values_and_odd_tags_as_sent(influxd: str, tmp_path: Path) -> None:
    job = "42 a,b=c\nd"  # a space, a comma, an equals sign and a newline
    script = "for i in 1 2 3 4 5; do echo x > /dev/null; sleep 0.1; done; sleep 2"
    loop = subprocess.Popen(["bash", "-c", script], env={**os.environ, "SLURM_JOB_ID": job})
    try:
        args = ["monitor", "--sources", "proc_io,loadavg", "--pid-tree", str(loop.pid), "--interval", "0.1",
                "--duration", "0.8", "--influx", str(tmp_path / "lines"), "--influx-url", influxd,
                "--influx-db", "iolens", "--influx-gzip"]  # fmt: skip
        r = run_iolens(args)
    finally:
        loop.kill()
        loop.wait()
    assert r.returncode == 0 and r.stderr == "", r.stderr
    sent = read_points((tmp_path / "lines").read_text())
    commands = [p for p in sent if p[0] == "command_io"]
    assert commands and all(p[1]["job_id"] == "42 a,b=c\\x0ad" for p in commands)
    got = _query(influxd, 'SELECT * FROM "command_io" GROUP BY *', db="iolens")["results"][0]["series"]
    stored = {(s["tags"]["comm"], s["tags"]["job_id"], v[0]): dict(zip(s["columns"], v, strict=True))
              for s in got for v in s["values"]}  # fmt: skip
    # Every point as sent: its tags (unescaped by InfluxDB as the grammar says), time and values.
    assert len(stored) == len(commands)
    for _, tags, fields, ts in commands:
        row = stored[(tags["comm"], tags["job_id"], ts)]
        assert {k: row[k] for k in fields} == fields
    loads = _query(influxd, 'SELECT count("load1") FROM "loadavg"', db="iolens")["results"][0]["series"][0]
    assert loads["values"][0][1] == sum(p[0] == "loadavg" for p in sent)
