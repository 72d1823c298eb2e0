"""Line protocol sent to an InfluxDB server over HTTP, from a thread of its own so that the sampler never
waits for the server.

Two APIs: InfluxDB 2.x's `POST /api/v2/write?org=ORG&bucket=BUCKET&precision=ns` with `Authorization: Token
TOKEN` (also served by InfluxDB 1.8+ and 3.x, and by InfluxDB Cloud), and InfluxDB 1.x's `POST
/write?db=DB&precision=ns` (a token `USER:PASSWORD` is sent as HTTP basic authentication).
One batch per sample, optionally gzip-compressed (`Content-Encoding: gzip`).

What the server answers (the documented codes):
- 204 (2.x, 1.x): written.
- 429, 503 and other 5xx, or no answer (refused, reset, timed out): tried again after a back-off that doubles
  from 1 s to 30 s, or after Retry-After when the server gives it (seconds or an HTTP date), capped at 5 min.
  Meanwhile new batches wait in a bounded queue; when it is full the oldest batch is dropped (the most recent
  samples matter most to whoever looks at the dashboard when the server is back) and counted.
- 413 (request too large): the batch is split in halves and each sent; a single line refused is dropped.
- 400, 422 (malformed line protocol, a field of a different type than stored …): the batch is dropped and
  the server's message said once.
- 401, 403, 404 (bad token, no permission, no such org, bucket or database): said once with the server's
  message; the batch is dropped and later batches are still tried (a bucket may be created later), without
  repeating the message.
Every message goes through `report` (one line each); `stats()` counts what was written and dropped.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import email.utils
import gzip
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

BACKOFF_FIRST, BACKOFF_MAX, RETRY_AFTER_MAX = 1.0, 30.0, 300.0
QUEUE_BATCHES = 300  # five minutes of 1 s samples held while the server is away
TIMEOUT = 10.0


@dataclass
class Target:
    """Where and how to write: `bucket` (with `org`) for the 2.x API, `db` for the 1.x one."""

    url: str
    org: str = ""
    bucket: str = ""
    db: str = ""
    token: str = ""
    gzip: bool = False

    def path(self) -> str:
        base = urllib.parse.urlsplit(self.url).path.rstrip("/")
        if self.bucket:
            query = {"org": self.org, "bucket": self.bucket, "precision": "ns"}
            return f"{base}/api/v2/write?{urllib.parse.urlencode(query)}"
        return f"{base}/write?{urllib.parse.urlencode({'db': self.db, 'precision': 'ns'})}"

    def headers(self) -> dict[str, str]:
        h = {"Content-Type": "text/plain; charset=utf-8", "User-Agent": "iolens-monitor"}
        if self.gzip:
            h["Content-Encoding"] = "gzip"
        if self.token and self.bucket:
            h["Authorization"] = f"Token {self.token}"
        elif self.token:
            # 1.x: USER:PASSWORD as basic authentication (1.8+ also takes `Token USER:PASSWORD`; 1.6 not).
            h["Authorization"] = "Basic " + base64.b64encode(self.token.encode()).decode()
        return h


def check_url(url: str) -> str:
    """The URL's problem, "" when it is usable: http or https, a host, no query."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"expected an http:// or https:// URL, got {url!r}"
    if not parts.hostname:
        return f"no host in {url!r}"
    if parts.query or parts.fragment:
        return f"give the server's base URL (such as http://localhost:8086), not {url!r}"
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        return f"bad port in {url!r}"
    return ""


def retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After header (delay-seconds or an HTTP date); None when absent or bad."""
    if not value:
        return None
    v = value.strip()
    if v.isdigit():
        return min(float(v), RETRY_AFTER_MAX)
    try:
        when = email.utils.parsedate_to_datetime(v).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return min(max(when - now, 0.0), RETRY_AFTER_MAX)


def _message(body: bytes) -> str:
    """The server's error text: 2.x {"code","message"}, 1.x {"error"}, or the body itself."""
    text = body.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        return text[:300]
    if isinstance(doc, dict):
        parts = [str(doc[k]) for k in ("code", "message", "error") if doc.get(k)]
        return ": ".join(parts)[:300]
    return text[:300]


class HttpWriter:
    """put() a sample's lines from the sampler's thread; a thread of its own sends them."""

    def __init__(
        self,
        target: Target,
        report: Callable[[str], None],
        queue_batches: int = QUEUE_BATCHES,
        timeout: float = TIMEOUT,
    ) -> None:
        self.target = target
        self.report = report
        self.timeout = timeout
        self.queue: collections.deque[list[str]] = collections.deque()
        self.limit = queue_batches
        self.cond = threading.Condition()
        self.closing = False
        self.abandon = threading.Event()
        self.written = self.dropped_batches = self.dropped_lines = self.retries = 0
        self.said: set[str] = set()
        self.conn: http.client.HTTPConnection | None = None
        self.thread = threading.Thread(target=self._run, name="iolens-influx-http", daemon=True)

    def start(self) -> HttpWriter:
        self.thread.start()
        return self

    def put(self, lines: Sequence[str]) -> None:
        if not lines:
            return
        with self.cond:
            if len(self.queue) >= self.limit:
                old = self.queue.popleft()
                self._drop(
                    old, "queue", "the server is slow or away: the queue is full, oldest samples dropped"
                )
            self.queue.append(list(lines))
            self.cond.notify()

    def close(self, wait: float = 5.0) -> None:
        """Send what is queued for up to `wait` seconds, then stop; what is left is counted as dropped."""
        with self.cond:
            self.closing = True
            self.cond.notify()
        self.thread.join(timeout=wait)
        if self.thread.is_alive():
            self.abandon.set()
            # The request being sent is cut short: shutting its socket down ends the wait for the answer
            # (a connection still being made ends within the timeout).
            conn = self.conn
            sock = conn.sock if conn is not None else None
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            self.thread.join(timeout=self.timeout + 1)
        with self.cond:
            while self.queue:
                self._drop(self.queue.popleft(), "", "")
        if self.conn is not None:
            self.conn.close()

    def stats(self) -> dict[str, int]:
        return {
            "written_lines": self.written,
            "dropped_batches": self.dropped_batches,
            "dropped_lines": self.dropped_lines,
            "retries": self.retries,
        }

    # --- the sending thread ------------------------------------------------------------------------------

    def _say(self, key: str, text: str) -> None:
        if key and key not in self.said:
            self.said.add(key)
            self.report(text)

    def _drop(self, batch: list[str], key: str, text: str) -> None:
        with self.cond:  # from both threads (put() drops the oldest batch)
            self.dropped_batches += 1
            self.dropped_lines += len(batch)
            self._say(key, text)

    def _run(self) -> None:
        while True:
            with self.cond:
                while not self.queue and not self.closing:
                    self.cond.wait()
                if not self.queue or self.abandon.is_set():
                    return
                batch = self.queue.popleft()
            self._send_batch(batch)

    def _wait(self, seconds: float) -> bool:
        """Sleep before a retry; True when told to give up (closing and out of time)."""
        return self.abandon.wait(seconds)

    def _send_batch(self, batch: list[str]) -> None:
        backoff = BACKOFF_FIRST
        while True:
            status, headers, body = self._post(batch)
            if status in (200, 204):
                self.written += len(batch)
                if "down" in self.said:
                    self.said.discard("down")
                    self.report("writing again")
                return
            if status == 413 and len(batch) > 1:
                half = len(batch) // 2
                self._send_batch(batch[:half])
                self._send_batch(batch[half:])
                return
            if status in (400, 413, 422):
                self._drop(
                    batch, str(status), f"the server refused {len(batch)} lines ({status}): {_message(body)}"
                )
                return
            if status in (401, 403, 404):
                what = {401: "bad or missing token", 403: "the token may not write there", 404: "no such "
                        + ("org or bucket" if self.target.bucket else "database")}[status]  # fmt: skip
                self._drop(batch, str(status), f"cannot write ({status}, {what}): {_message(body)}")
                return
            if status is not None and status < 500 and status != 429:
                self._drop(batch, str(status), f"unexpected answer {status}: {_message(body)}")
                return
            # 429, 5xx, no answer: wait and send the same batch again.
            why = f"answer {status}: {_message(body)}" if status is not None else body.decode()
            self._say("down", f"cannot write now ({why}); trying again, samples queued")
            self.retries += 1
            delay = retry_after(headers.get("Retry-After"), time.time()) if headers else None
            if self._wait(delay if delay is not None else backoff):
                self._drop(batch, "", "")
                return
            backoff = min(backoff * 2, BACKOFF_MAX)

    def _post(self, batch: list[str]) -> tuple[int | None, dict[str, str], bytes]:
        data = "".join(ln + "\n" for ln in batch).encode("utf-8")
        if self.target.gzip:
            data = gzip.compress(data, compresslevel=5)
        try:
            conn = self._connection()
            conn.request("POST", self.target.path(), body=data, headers=self.target.headers())
            resp = conn.getresponse()
            body = resp.read()
            headers = {k: v for k, v in resp.getheaders()}
            if resp.will_close:
                self._reset()
            return resp.status, headers, body
        except (OSError, http.client.HTTPException) as exc:
            self._reset()
            return None, {}, str(exc).encode() or type(exc).__name__.encode()

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            parts = urllib.parse.urlsplit(self.target.url)
            if parts.scheme == "https":
                self.conn = http.client.HTTPSConnection(
                    parts.hostname or "",
                    parts.port,
                    timeout=self.timeout,
                    context=ssl.create_default_context(),
                )
            else:
                self.conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=self.timeout)
        return self.conn

    def _reset(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
