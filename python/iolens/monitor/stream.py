"""The monitor's JSON-lines stream (docs/monitor.md): a header, then one sample record per interval, events
when a source becomes unavailable or comes back, and an end record. One JSON object per line.
"""

from __future__ import annotations

import json
import os
import platform
import socket
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import IO, Any

from iolens import __version__

FORMAT = "iolens-monitor"
VERSION = 1

Record = dict[str, Any]


def iso(t: float) -> str:
    """ISO-8601 UTC with milliseconds, as the engine writes started_at/ended_at."""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def header(t: float, interval: float | str, sources: dict[str, Record], **extra: Any) -> Record:
    rec: Record = {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "tool": "iolens",
        "iolens_version": __version__,
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "pid": os.getpid(),
        "time": round(t, 6),
        "started_at": iso(t),
        "interval_s": interval,
        "sources": sources,
    }
    rec.update(extra)
    return rec


def dumps(record: Record) -> str:
    # Compact separators: a second of job_stats of a big server is many kilobytes already.
    return json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class Writer:
    """Writes records to a text file, one per line, flushed after each so a reader (tail -f) sees them."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out

    def write(self, record: Record) -> None:
        self.out.write(dumps(record) + "\n")
        self.out.flush()


def _no_constant(name: str) -> Any:
    # json.loads reads NaN, Infinity and -Infinity, which the writer never writes (allow_nan=False) and no
    # other JSON reader takes: a line holding one is damaged.
    raise ValueError(f"{name} is not JSON")


def read(lines: IO[str] | list[str]) -> Iterator[Record]:
    """The records of a stream; a line that is not a JSON object (a crash cut it short, the file is damaged:
    NaN, nesting too deep to read) is skipped."""
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            rec = json.loads(line, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            continue
        if isinstance(rec, dict):
            yield rec
