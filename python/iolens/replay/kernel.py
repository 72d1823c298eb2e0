"""A kernel: the runnable description of a profile's I/O (docs/replay.md, "The kernel"), made from a Source
(source.py), written and read as JSON. It holds full-size figures; plan.py scales them when it runs.

Per rank ("stream"), in the order the original first touched each file: per file and layer (POSIX, STDIO),
the opens, stats, seeks, fsyncs, the reads and the writes as (size, count) pairs that reproduce the access
size histogram and the bytes, their consecutive and sequential counts, read/write switches, and the file's
first and last timestamps; the stream's namespace calls (mkdir, unlink, opendir, readdir). Files are named
relative to the common directory of the originals (their layout below it kept).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from iolens.atomic import write_text
from iolens.profile.sizes import bucket_upper
from iolens.replay.source import NAMESPACE_OPS, FileUse, Source

SCHEMA = "iolens-replay-kernel"
SCHEMA_VERSION = 1
_SIZE = re.compile(r"POSIX_SIZE_(READ|WRITE)_(.+)")
# The largest access of the open-ended bucket ("1G+") a kernel makes.
TOP_BUCKET_MAX = 4 << 30


class KernelError(Exception):
    """A kernel file that cannot be used: the message names the file and what is wrong."""


def _label(suffix: str) -> str:
    return suffix[: -len("_PLUS")] + "+" if suffix.endswith("_PLUS") else suffix.replace("_", "-")


def _buckets(c: dict[str, int], what: str) -> list[tuple[int, int, int]]:
    """(lowest, highest, count) of each non-empty bucket of one direction, smallest first."""
    out = []
    for name, n in c.items():
        m = _SIZE.fullmatch(name)
        if not m or m[1] != what or not n:
            continue
        hi = bucket_upper(_label(m[2]))
        out.append((hi, n))
    out.sort()
    bounds = []
    prev = -1.0
    all_hi = sorted(bucket_upper(_label(m[2])) for name in c if (m := _SIZE.fullmatch(name)) and m[1] == what)
    for hi, n in out:
        below = [h for h in all_hi if h < hi]
        prev = max(below) if below else -1.0
        lo = int(prev) + 1
        top = TOP_BUCKET_MAX if hi == float("inf") else int(hi)
        bounds.append((lo, top, n))
    return bounds


def sizes_for(c: dict[str, int], what: str, total_bytes: int) -> list[list[int]]:
    """(size, count) pairs whose counts fill the histogram's buckets and whose bytes add up to total_bytes
    (as near as the buckets allow). The profile's common access sizes (reads and writes together: Darshan
    keeps one list) are used where they fall in a bucket, unless the bytes come out nearer without them (a
    common write size is no guide to reads that returned nothing); the other accesses of every bucket take
    one common position between the bucket's bounds."""
    buckets = _buckets(c, what)
    if not buckets:
        return []
    common = [(c.get(f"POSIX_ACCESS{i}_ACCESS", 0), c.get(f"POSIX_ACCESS{i}_COUNT", 0)) for i in range(1, 5)]
    best: list[list[int]] = []
    for guide in (common, []):
        pairs = _fill(buckets, guide, total_bytes)
        if not best or abs(_bytes(pairs) - total_bytes) < abs(_bytes(best) - total_bytes):
            best = pairs
    return best


def _bytes(pairs: list[list[int]]) -> int:
    return sum(s * k for s, k in pairs)


def _fill(
    buckets: list[tuple[int, int, int]], common: list[tuple[int, int]], total_bytes: int
) -> list[list[int]]:
    pairs: dict[int, int] = {}
    free: list[tuple[int, int, int]] = []
    for lo, hi, n in buckets:
        left = n
        for size, count in common:
            if count and lo <= size <= hi and left:
                take = min(count, left)
                pairs[size] = pairs.get(size, 0) + take
                left -= take
        if left:
            free.append((lo, hi, left))
    rest = total_bytes - sum(s * k for s, k in pairs.items())
    if free:
        low = sum(lo * k for lo, _, k in free)
        span = sum((hi - lo) * k for lo, hi, k in free)
        theta = min(max((rest - low) / span, 0.0), 1.0) if span else 0.0
        exact = [(lo + theta * (hi - lo), k, lo, hi) for lo, hi, k in free]
        placed = sum(int(x) * k for x, k, _, _ in exact)
        extra = max(rest - placed, 0)
        for x, k, _lo, hi in exact:
            base = int(x)
            plus = min(extra, k) if base < hi else 0
            extra -= plus
            if k - plus:
                pairs[base] = pairs.get(base, 0) + k - plus
            if plus:
                pairs[base + 1] = pairs.get(base + 1, 0) + plus
    return [[s, k] for s, k in sorted(pairs.items())]


def _even_sizes(total_bytes: int, n: int) -> list[list[int]]:
    if n <= 0:
        return []
    q, r = divmod(total_bytes, n)
    return [[s, k] for s, k in ((q, n - r), (q + 1, r)) if k]


def _stamp_range(c: dict[str, int], prefix: str) -> tuple[int, int]:
    starts = [v for k, v in c.items() if k.startswith(prefix) and k.endswith("_START_TIMESTAMP") and v]
    ends = [v for k, v in c.items() if k.startswith(prefix) and k.endswith("_END_TIMESTAMP") and v]
    return (min(starts) - 1 if starts else 0, max(ends) - 1 if ends else 0)


def _direction(c: dict[str, int], layer: str, what: str) -> dict[str, Any] | None:
    upper = "READ" if what == "read" else "WRITE"
    n = c.get(f"{layer}_{upper}S", 0)
    nbytes = c.get(f"{layer}_BYTES_{'READ' if what == 'read' else 'WRITTEN'}", 0)
    if not n:
        return None
    if layer == "POSIX":
        # The histogram is what the check compares: it wins when it and the count differ (a record split
        # over ranks splits each bucket's remainder to the first ranks).
        sizes = sizes_for(c, upper, nbytes) or _even_sizes(nbytes, n)
        seq, consec = c.get(f"POSIX_SEQ_{upper}S", 0), c.get(f"POSIX_CONSEC_{upper}S", 0)
    else:
        # STDIO keeps no histogram and no sequence counters: the accesses are even and follow each other.
        sizes, seq, consec = _even_sizes(nbytes, n), n - 1, n - 1
    n = sum(k for _, k in sizes)
    seq = min(seq, n - 1)
    return {"sizes": sizes, "bytes": nbytes, "seq": seq, "consec": min(consec, seq)}


def _layer_use(u: FileUse, layer: str, file_no: int, t0: int) -> dict[str, Any] | None:
    c = u.counters
    p = layer + "_"
    opens = c.get(p + "OPENS", 0) + (c.get("STDIO_FDOPENS", 0) if layer == "STDIO" else 0)
    reads, writes = _direction(c, layer, "read"), _direction(c, layer, "write")
    stats = c.get("POSIX_STATS", 0) if layer == "POSIX" else 0
    if not (opens or reads or writes or stats):
        return None
    start, end = _stamp_range(c, p)
    use: dict[str, Any] = {
        "file": file_no,
        "layer": layer.lower(),
        "opens": opens,
        "stats": stats,
        "seeks": c.get(p + "SEEKS", 0),
        "fsyncs": c.get(p + "FSYNCS", 0) + c.get(p + "FDSYNCS", 0) if layer == "POSIX" else 0,
        "flushes": c.get("STDIO_FLUSHES", 0) if layer == "STDIO" else 0,
        "dups": c.get("POSIX_DUPS", 0) if layer == "POSIX" else 0,
        # fileno() on a stream: counted as an open of the POSIX record (as Darshan does)
        "filenos": c.get("POSIX_FILENOS", 0) if layer == "POSIX" else 0,
        "rw_switches": c.get("POSIX_RW_SWITCHES", 0) if layer == "POSIX" else 0,
        "writes_first": c.get(p + "F_WRITE_START_TIMESTAMP", 0) <= c.get(p + "F_READ_START_TIMESTAMP", 0)
        or not c.get(p + "F_READ_START_TIMESTAMP", 0),
        "start_ns": (u.start_ns + start - t0) if start else None,
        "end_ns": (u.start_ns + end - t0) if end else None,
        "read": reads,
        "write": writes,
    }
    return use


def relative_names(paths: list[str]) -> dict[str, str]:
    """Each path's name below the originals' common directory: never absolute, never with '..'."""
    norm = {p: os.path.normpath("/" + p.lstrip("/")) for p in paths}
    dirs = [os.path.dirname(n) for n in norm.values()]
    root = os.path.commonpath(dirs) if dirs else "/"
    out = {}
    for p, n in norm.items():
        rel = os.path.relpath(n, root)
        out[p] = rel if rel not in (".", "") else os.path.basename(n) or "file"
    return out


def build(src: Source) -> dict[str, Any]:
    """The kernel of a source, as its JSON document."""
    paths = sorted({u.path for u in src.uses})
    names = relative_names(paths)
    number = {p: i for i, p in enumerate(paths)}
    t0 = min((u.start_ns for u in src.uses), default=0)
    users: dict[str, set[int]] = {p: set() for p in paths}
    streams: dict[int, list[dict[str, Any]]] = {r: [] for r in range(src.ranks)}
    for u in src.uses:
        users[u.path].add(u.rank)
        for layer in ("POSIX", "STDIO"):
            use = _layer_use(u, layer, number[u.path], t0)
            if use is not None:
                streams.setdefault(u.rank, []).append(use)
    for uses in streams.values():
        uses.sort(key=lambda x: (x["start_ns"] is None, x["start_ns"] or 0, x["file"], x["layer"]))
    files = [
        {
            "name": names[p],
            "original": p,
            "ranks": sorted(users[p]),
            "kind": "common" if len(users[p]) > 1 else "per-rank",
        }
        for p in paths
    ]
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "source": src.name,
        "ranks": src.ranks,
        "concurrent": src.mpi,
        "files": files,
        "streams": [
            {
                "rank": r,
                "namespace": src.namespace.get(r, dict.fromkeys(NAMESPACE_OPS, 0)),
                "uses": streams[r],
            }
            for r in sorted(streams)
        ],
        "approximations": src.approximations,
    }


def write(kernel: dict[str, Any], out: Path) -> None:
    write_text(out, json.dumps(kernel, indent=1) + "\n")


def read(path: Path) -> dict[str, Any]:
    """A kernel file, checked enough that plan.py can trust its shape."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise KernelError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KernelError(f"{path}: cannot read: {exc}") from None
    except ValueError as exc:
        raise KernelError(f"{path}: not JSON ({exc}): truncated or not a kernel") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise KernelError(f"{path}: not an iolens replay kernel (schema {SCHEMA!r} expected)")
    if doc.get("schema_version") != SCHEMA_VERSION:
        raise KernelError(f"{path}: kernel schema version {doc.get('schema_version')!r}, expected 1")
    try:
        files = doc["files"]
        for f in files:
            name = str(f["name"])
            if name.startswith("/") or ".." in Path(name).parts or not name:
                raise KernelError(f"{path}: file name {name!r} is absolute or leaves the run directory")
        for s in doc["streams"]:
            for u in s["uses"]:
                if not 0 <= int(u["file"]) < len(files) or u["layer"] not in ("posix", "stdio"):
                    raise KernelError(f"{path}: rank {s['rank']}: a use names no file of the kernel")
        int(doc["ranks"])
    except (KeyError, TypeError, ValueError) as exc:
        raise KernelError(f"{path}: malformed kernel ({type(exc).__name__}: {exc})") from None
    return doc
