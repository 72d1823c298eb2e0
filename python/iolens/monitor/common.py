"""What every collector shares: the collector interface, reading a statistics file, the small text helpers
(times with their unit, sizes with a suffix), and rates from two readings with reset detection.

A collector's reading is a tree of plain dicts (JSON as it goes into the stream, docs/monitor.md); its leaves
are numbers (counters or gauges) or strings (units, names). Rates are computed by walking the previous and the
current tree together (rates()).
"""

from __future__ import annotations

import errno
import math
import os
from collections.abc import Iterable
from typing import Any

Tree = dict[str, Any]


class SourceUnavailable(Exception):
    """The source cannot be read here (missing, no permission, not mounted); the message says why."""


class Unreadable(SourceUnavailable):
    """The file is there but we may not read it (permission denied): trying again will not help."""


class Collector:
    """A source of statistics: read() returns one reading (a tree of dicts), or raises SourceUnavailable.

    `skipped` counts the malformed lines seen since the collector was made (each one skipped, never fatal).
    `unreadable` names the parts of a source that is read only in part ({part: why}; Lustre: a parameter or a
    root we may not read); the sampler reports each part once.
    `gauges` names the numeric leaves that are not counters (no rate is computed for them);
    `new_from_zero` says that a key absent from the previous reading counted from zero (Lustre omits
    counters with no samples and jobs come and go) rather than being a new, already-running counter.
    """

    name = ""
    gauges: frozenset[str] = frozenset()
    # Keys whose whole subtree is gauges (Lustre's `values`: RPCs in flight, pending pages).
    gauge_nodes: frozenset[str] = frozenset()
    new_from_zero = False
    # Every numeric leaf is a gauge (meminfo, loadavg): no rates at all.
    all_gauges = False

    def __init__(self) -> None:
        self.skipped = 0
        self.unreadable: dict[str, str] = {}

    def read(self) -> Tree:
        raise NotImplementedError

    def describe(self) -> str:
        """Where the source reads from, for the stream's header."""
        return ""

    def reappeared(self, prev: Tree | None, cur: Tree) -> list[str]:
        """Resets that rates() cannot see from two readings (dotted paths, the source's name first): called
        with every reading, the first one too (prev None)."""
        return []


# How the bytes of a statistics file become text: a byte that is not UTF-8 (in a process renamed with one, or
# a job id of Lustre <= 2.15, which prints ids unescaped) becomes the four characters `\xHH`, as Lustre 2.16
# escapes them. Never a lone surrogate, which no UTF-8 output (stream, InfluxDB, Prometheus) can encode.
TEXT_ERRORS = "backslashreplace"


def decode(data: bytes) -> str:
    """Statistics text from bytes (TEXT_ERRORS)."""
    return data.decode("utf-8", TEXT_ERRORS)


def read_file(path: str) -> str:
    """The whole file as text; SourceUnavailable with the reason when it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise SourceUnavailable(f"{path}: no such file") from None
    except PermissionError:
        raise Unreadable(f"{path}: permission denied (run as root?)") from None
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        if exc.errno in (errno.ENODEV, errno.ENXIO, errno.ESRCH):
            reason = "gone"
        raise SourceUnavailable(f"{path}: {reason}") from None
    return decode(data)


# The kernel and Lustre print 64-bit counters: at most 20 digits. A longer number is a damaged line, and it
# would harm what comes after: int() refuses more than 4300 digits with an error of its own, float() makes
# one infinite (which no JSON stream may hold), and a rate or a scaled value of a huge int overflows.
MAX_DIGITS = 20


def to_int(text: str) -> int:
    """An integer field of at most 20 ASCII digits (a 64-bit counter, signed or not); ValueError when it is
    not one (the caller skips the line)."""
    t = text.strip()
    digits = t[1:] if t[:1] in ("-", "+") else t
    if not (digits.isascii() and digits.isdigit()) or len(digits) > MAX_DIGITS:
        raise ValueError(f"not a 64-bit integer: {text[:40]!r}")
    return int(t)


def to_float(text: str) -> float:
    """A finite decimal number (a load average, a pressure ratio); ValueError when it is not one (an
    infinity or NaN, which no JSON stream may hold, is not)."""
    t = text.strip()
    if not t.isascii() or len(t) > 64:
        raise ValueError(f"not a number: {text[:40]!r}")
    value = float(t)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text[:40]!r}")
    return value


def parse_time(value: str, unit: str | None = None) -> float | None:
    """A Lustre time value in seconds: `S.N secs.nsecs`, `S.U secs.usecs` where U is a count of microseconds
    printed *without* zero padding (`.20113` is 20113 µs), a plain integer, or a decimal fraction. None when
    the text is not a time (a number beyond 64 bits is not: see MAX_DIGITS)."""
    unit = (unit or "").strip("()[]")
    whole, dot, frac = value.partition(".")
    digits = whole[1:] if whole.startswith("-") else whole
    if not (digits.isascii() and digits.isdigit()) or len(digits) > MAX_DIGITS or len(frac) > MAX_DIGITS:
        return None
    if dot and not (frac.isascii() and frac.isdigit()):
        return None
    if (unit == "secs.nsecs" and len(frac) == 9) or (unit == "secs.usecs" and len(frac) == 6):
        # Zero-padded: the decimal reading is the same; the common case, kept quick.
        return float(value)
    if not dot:
        return float(int(whole))
    if unit in ("secs.usecs", "secs.usec") and len(frac) <= 6:
        return int(whole) + int(frac) / 1e6
    if unit in ("secs.nsecs", "secs.nsec") and len(frac) <= 9:
        return int(whole) + int(frac) / 1e9
    return float(value)


_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def size_value(text: str) -> int | None:
    """`4K` → 4096, `1M` → 1048576, `128` → 128 (powers of 1024, as Lustre prints bucket labels)."""
    t = text.strip()
    if not t:
        return None
    mult = _SUFFIX.get(t[-1].upper()) if not t[-1].isdigit() else 1
    num = t if t[-1].isdigit() else t[:-1]
    if mult is None or not (num.isascii() and num.isdigit()) or len(num) > MAX_DIGITS:
        return None
    return int(num) * mult


# Units of Lustre counters that are times, and their length in seconds (legacy spellings included).
TIME_UNITS = {"usecs": 1e-6, "usec": 1e-6, "secs": 1.0, "sec": 1.0, "nsecs": 1e-9, "msecs": 1e-3}


# --- rates -------------------------------------------------------------------------------------------------


_NUMBER = (int, float)


def rates(
    prev: Tree | None,
    cur: Tree,
    dt: float,
    collector: Collector,
    path: tuple[str, ...] = (),
    resets: list[str] | None = None,
) -> Tree:
    """Per-second rates of the counters of `cur` since `prev`, as a tree of the same shape holding only
    counter leaves.

    A counter that went down was reset (cleared, or the node or target restarted) somewhere in the interval:
    its rate counts from zero (the new value over dt), never negative. A node whose `start_time` (Lustre
    2.15+) changed, or whose `snapshot_time` went back, was reset as a whole. A key that is new in `cur` has
    no rate unless the collector says such keys counted from zero (then value / dt). Each reset is appended
    to `resets` as a dotted path.
    """
    out: Tree = {}
    if prev is None or dt <= 0 or collector.all_gauges:
        return out
    node_reset = False
    # Compared only as numbers: a reading read back from a damaged stream (nodes.py) may hold anything there.
    start0, start1 = prev.get("start_time"), cur.get("start_time")
    snap0, snap1 = prev.get("snapshot_time"), cur.get("snapshot_time")
    if type(start0) in _NUMBER and type(start1) in _NUMBER and start1 != start0:
        node_reset = True
        if resets is not None:
            resets.append(".".join((*path, "start_time")))
    elif type(snap0) in _NUMBER and type(snap1) in _NUMBER and snap1 < snap0:
        # A snapshot older than the one before: not the same counters any more (a restarted target).
        node_reset = True
        if resets is not None:
            resets.append(".".join((*path, "snapshot_time")))
    gauges = collector.gauges
    # type() rather than isinstance(): a bool is no counter, and this loop runs for every value of every
    # reading (a Lustre server's job_stats holds hundreds of thousands).
    for key, value in cur.items():
        kind = type(value)
        if kind is dict:
            if key in collector.gauge_nodes:
                continue
            before = prev.get(key)
            if type(before) is dict and not node_reset:
                sub = rates(before, value, dt, collector, (*path, key), resets)
            elif collector.new_from_zero or node_reset:
                sub = _from_zero(value, dt, gauges, collector.gauge_nodes)
            else:
                continue
            if sub:
                out[key] = sub
        elif (kind is int or kind is float) and key not in gauges:
            before = prev.get(key)
            if node_reset:
                out[key] = value / dt
            elif type(before) is int or type(before) is float:
                if value < before:
                    if resets is not None:
                        resets.append(".".join((*path, key)))
                    out[key] = value / dt
                else:
                    out[key] = (value - before) / dt
            elif collector.new_from_zero:
                out[key] = value / dt
    return out


def _from_zero(tree: Tree, dt: float, gauges: frozenset[str], gauge_nodes: frozenset[str]) -> Tree:
    out: Tree = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            if key in gauge_nodes:
                continue
            sub = _from_zero(value, dt, gauges, gauge_nodes)
            if sub:
                out[key] = sub
        elif isinstance(value, int | float) and not isinstance(value, bool) and key not in gauges:
            out[key] = value / dt
    return out


def walk_numbers(tree: Tree, path: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], float]]:
    """Every numeric leaf of a tree with its path."""
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from walk_numbers(value, (*path, key))
        elif isinstance(value, int | float) and not isinstance(value, bool):
            yield (*path, key), value


def subtree(tree: Any, key: str) -> Tree:
    """tree[key] when both are objects, else {}: a reading read back from a damaged stream may hold anything
    where an object belongs (nodes.py keeps only records of the right outline)."""
    value = tree.get(key) if isinstance(tree, dict) else None
    return value if isinstance(value, dict) else {}
