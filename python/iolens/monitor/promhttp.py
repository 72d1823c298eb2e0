"""The /metrics HTTP endpoint: a stdlib http.server in a thread of the monitor.

GET and HEAD (HEAD: the same headers, no body). The format follows the request's Accept header: OpenMetrics
1.0.0 when `application/openmetrics-text` is acceptable at least as much as the Prometheus text format (what
Prometheus 2.x asks for first), text 0.0.4 otherwise. The body is gzip-compressed when Accept-Encoding allows
gzip (q > 0, or `*` without a gzip entry); `q=0` refuses a coding, as RFC 9110 says.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from iolens.monitor.promtext import CONTENT_TYPE, OPENMETRICS_TYPE, Exposition

# Accepted versions of each format (a request for another version is not served that format).
_OM_VERSIONS = (None, "1.0.0", "0.0.1")
_TEXT_VERSIONS = (None, "0.0.4")


def _ranges(header: str | None) -> list[tuple[str, dict[str, str], float]]:
    """`type/subtype;param=value;q=0.5, …` → [(type, params, q)], lower-case names; a bad q counts as 0."""
    out = []
    for part in (header or "").split(","):
        items = [p.strip() for p in part.split(";")]
        if not items[0]:
            continue
        params: dict[str, str] = {}
        for item in items[1:]:
            k, _, v = item.partition("=")
            params[k.strip().lower()] = v.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 0.0
        out.append((items[0].lower(), params, q))
    return out


def wants_openmetrics(accept: str | None) -> bool:
    """OpenMetrics when the client accepts it (a version we write) at least as much as text/plain 0.0.4."""
    om = text = 0.0
    for media, params, q in _ranges(accept):
        version = params.get("version")
        if media == "application/openmetrics-text" and version in _OM_VERSIONS:
            om = max(om, q)
        elif media in ("text/plain", "text/*", "*/*") and version in _TEXT_VERSIONS:
            text = max(text, q)
    return om > 0 and om >= text


def wants_gzip(accept_encoding: str | None) -> bool:
    gz = star = None
    for coding, _, q in _ranges(accept_encoding):
        if coding in ("gzip", "x-gzip"):
            gz = q if gz is None else max(gz, q)
        elif coding == "*":
            star = q
    if gz is not None:
        return gz > 0
    return star is not None and star > 0


class MetricsServer:
    """GET/HEAD /metrics on host:port, from a thread; the families come from `families()` at each scrape."""

    def __init__(self, host: str, port: int, families: Callable[[], Exposition]) -> None:
        self.families = families
        self.httpd = ThreadingHTTPServer((host, port), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="iolens-prometheus", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    def start(self) -> MetricsServer:
        self.thread.start()
        return self

    def close(self) -> None:
        if self.thread.is_alive():
            # shutdown() waits for serve_forever() to return: only when it runs.
            self.httpd.shutdown()
            self.thread.join(timeout=5)
        self.httpd.server_close()


def _handler(server: MetricsServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self, head: bool) -> None:
            path = self.path.split("?", 1)[0]
            extra: dict[str, str] = {}
            if path == "/metrics":
                e = server.families()
                if wants_openmetrics(self.headers.get("Accept")):
                    body, ctype = e.openmetrics().encode(), OPENMETRICS_TYPE
                else:
                    body, ctype = e.text().encode(), CONTENT_TYPE
                status = 200
                extra["Vary"] = "Accept, Accept-Encoding"
                if wants_gzip(self.headers.get("Accept-Encoding")):
                    body = gzip.compress(body, compresslevel=1)  # fast: a scrape every few seconds
                    extra["Content-Encoding"] = "gzip"
            elif path == "/":
                body = b"iolens monitor: metrics at /metrics\n"
                ctype, status = "text/plain; charset=utf-8", 200
            else:
                body, ctype, status = b"not found\n", "text/plain; charset=utf-8", 404
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in extra.items():
                self.send_header(k, v)
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._answer(head=False)

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
            self._answer(head=True)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            return

    return Handler


def parse_address(text: str) -> tuple[str, int]:
    """`PORT`, `:PORT`, `HOST:PORT` or `[V6]:PORT`; the host is 127.0.0.1 unless given."""
    host, port = "127.0.0.1", text
    if text.startswith("["):
        h, _, rest = text[1:].partition("]")
        host, port = h, rest.lstrip(":")
    elif ":" in text:
        h, _, port = text.rpartition(":")
        host = h or host
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"expected PORT or HOST:PORT, got {text!r}") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"port {number} is out of range")
    return host, number
