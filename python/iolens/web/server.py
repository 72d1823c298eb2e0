"""Serving the portal with uvicorn: one process, or a parent and N workers on one socket.

uvicorn's own defaults are changed where a portal needs it:
- proxy headers off: the client address is the connection's, never X-Forwarded-For, so that only the
  configured proxy is trusted (auth.py decides from the real peer address);
- SIGHUP ends the server like SIGINT and SIGTERM (uvicorn's parent restarts its workers on SIGHUP; a batch
  system or a closed terminal sends it to stop things), and `iolens web` then says which signal stopped it
  and exits with 128 + its number, as every iolens command.
"""

from __future__ import annotations

import os
import signal
from socket import IPPROTO_TCP, TCP_NODELAY, socket

import uvicorn
import uvicorn.server
from uvicorn.supervisors.multiprocess import Multiprocess

from iolens import interrupt
from iolens.web.app import create_app
from iolens.web.config import ENV, WebConfig

# Every uvicorn Server (a worker, or the single process) stops gracefully on SIGHUP too.
if signal.SIGHUP not in uvicorn.server.HANDLED_SIGNALS:
    uvicorn.server.HANDLED_SIGNALS = (*uvicorn.server.HANDLED_SIGNALS, signal.SIGHUP)


class _Workers(Multiprocess):
    """uvicorn's worker supervisor, ending on SIGHUP and remembering the signal that ended it."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket]) -> None:
        super().__init__(config, sockets)
        self.stopped_by: int | None = None

    def handle_int(self) -> None:
        self.stopped_by = signal.SIGINT
        super().handle_int()

    def handle_term(self) -> None:
        self.stopped_by = signal.SIGTERM
        super().handle_term()

    def handle_hup(self) -> None:
        self.stopped_by = signal.SIGHUP
        self.should_exit.set()


def serve(config: WebConfig, host: str, port: int, workers: int, access_log: bool = True) -> None:
    """Serve until stopped by a signal (raises interrupt.Stopped for it). The database is opened once here
    first, so that a wrong --db is said before the port is bound."""
    create_app(config)
    os.environ[ENV] = config.to_env()  # each worker builds its app from it (create_app_from_env)
    uconfig = uvicorn.Config(
        "iolens.web.app:create_app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        proxy_headers=False,
        server_header=False,
        access_log=access_log,
        log_level="info",
        timeout_graceful_shutdown=5,
    )
    if workers > 1:
        sock = uconfig.bind_socket()
        # uvicorn's socket is made without naming TCP as its protocol, so asyncio does not turn Nagle's
        # algorithm off on the connections the workers accept (it checks the protocol), and every response
        # after a connection's first waited for the client's delayed ACK: 40 ms on Linux, for /healthz as for
        # any page (bench/web_load.py). Accepted connections inherit the option from the listening socket.
        sock.setsockopt(IPPROTO_TCP, TCP_NODELAY, 1)
        supervisor = _Workers(uconfig, sockets=[sock])
        supervisor.run()
        if supervisor.stopped_by is not None:
            raise interrupt.Stopped(supervisor.stopped_by)
        return
    uconfig.load()
    server = uvicorn.Server(uconfig)
    # On a signal uvicorn shuts down, then raises the signal again under the handler that was there before:
    # iolens's (cli.main), which turns it into interrupt.Stopped.
    server.run()
    if not server.started:
        raise OSError(f"the portal could not start on {host}:{port} (see the lines above)")
