"""Query parameters as the pages take them: validated, with a 400 that names the parameter when wrong.

Times are given as `from`/`to`: seconds since the epoch, an ISO 8601 date-time (a browser's datetime-local
field, taken as UTC unless it has an offset), or relative to now as `now`, `now-6h`, `now-30m`, `now-7d`.
"""

from __future__ import annotations

import math
import re
import time
from datetime import datetime, timezone

from starlette.datastructures import QueryParams

from iolens.web.auth import Refused

_RELATIVE = re.compile(r"^now(?:-(\d{1,6})([smhdw]))?$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_WINDOW_S = 366 * 86400
PRESETS = (("1h", "now-1h"), ("6h", "now-6h"), ("24h", "now-24h"), ("7d", "now-7d"), ("30d", "now-30d"))


def bad(name: str, why: str) -> Refused:
    return Refused(400, f"{name}: {why}")


def when(text: str, name: str, now: float) -> float:
    text = text.strip()
    m = _RELATIVE.match(text)
    if m:
        return now - (int(m.group(1)) * _SECONDS[m.group(2)] if m.group(1) else 0)
    try:
        value = float(text)
        if math.isfinite(value) and 0 <= value < 1e11:
            return value
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise bad(name, "expected epoch seconds, an ISO date-time or now-6h") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def window(q: QueryParams, default: str = "now-24h", now: float | None = None) -> tuple[float, float]:
    """The [from, to] window a page shows; at most a year, `from` before `to`."""
    now = time.time() if now is None else now
    t0 = when(q.get("from") or default, "from", now)
    t1 = when(q.get("to") or "now", "to", now)
    if t1 <= t0:
        raise bad("from", "must be before to")
    if t1 - t0 > MAX_WINDOW_S:
        raise bad("from", "the window is longer than a year")
    return t0, t1


def integer(q: QueryParams, name: str, default: int, lo: int, hi: int) -> int:
    text = q.get(name)
    if text is None or text == "":
        return default
    if not re.fullmatch(r"-?\d{1,12}", text):
        raise bad(name, "expected a whole number")
    value = int(text)
    if not lo <= value <= hi:
        raise bad(name, f"expected {lo}..{hi}")
    return value


def choice(q: QueryParams, name: str, options: tuple[str, ...], default: str) -> str:
    value = q.get(name) or default
    if value not in options:
        raise bad(name, f"expected one of {', '.join(options)}")
    return value


def ids(q: QueryParams, name: str, most: int = 12) -> list[int]:
    """`?runs=3,7,9` or `?runs=3&runs=7`: positive ids, at most `most`."""
    out: list[int] = []
    for raw in q.getlist(name):
        for part in raw.split(","):
            part = part.strip()
            if not part:
                continue
            if not (part.isascii() and part.isdigit()) or len(part) > 12:  # int() fails on "²"
                raise bad(name, "expected ids separated by commas")
            out.append(int(part))
    if len(out) > most:
        raise bad(name, f"at most {most} ids")
    return out


def text(q: QueryParams, name: str, most: int = 200) -> str | None:
    value = q.get(name)
    if value is None or value == "":
        return None
    if len(value) > most or any(not c.isprintable() for c in value):
        raise bad(name, f"expected printable text of at most {most} characters")
    return value
