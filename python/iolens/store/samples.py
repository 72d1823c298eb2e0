"""Monitoring sample streams (JSON lines) as narrow samples: (time, host, source, target, metric, value).

Two kinds of line are read (docs/db.md "Monitoring samples"):

- the records `iolens monitor` writes: `{"type": "sample", "time": T, "data": {SOURCE: TREE}, "rates":
  {SOURCE: TREE}}` where TREE is nested objects with numbers at the leaves. The keys between the source and
  the leaf make the target ("vda", "scratch-OST0001/read"), the leaf's key is the metric; a value under
  `rates` is stored as metric `NAME_per_s`. The host is the record's `host`, else the `host`/`hostname` of
  the stream's header record, else the file's name up to its first dot. Other record types (events,
  headers) carry no samples.
- narrow records, one sample each: `{"t": T, "host": H, "source": S, "target": X, "metric": M, "value": V}`
  (`time` for `t`; `target` and `unit` optional).

A line that is not JSON, or not one of those, refuses the whole file (a truncated last line too).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolens.store.records import Sample, file_sha256

HEADER_TYPES = ("header", "start", "stream", "meta")


class SampleError(ValueError):
    """A sample stream that cannot be read completely; names the file and line."""


@dataclass
class SampleBatch:
    uid: str
    samples: Iterable[Sample]


def _leaves(tree: Any, prefix: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], float]]:
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, (*prefix, str(key)))
    elif isinstance(tree, bool):
        return
    elif isinstance(tree, int | float):
        yield prefix, float(tree)


def record_samples(record: dict[str, Any], host: str) -> Iterator[Sample]:
    """The samples of one `iolens monitor` sample record (host: the record's own, when it has one)."""
    t = record.get("time")
    if isinstance(t, bool) or not isinstance(t, int | float):
        raise ValueError("a sample record without a numeric time")
    host = str(record.get("host") or host)
    for part, suffix in (("data", ""), ("rates", "_per_s")):
        sources = record.get(part) or {}
        if not isinstance(sources, dict):
            raise ValueError(f"{part}: expected an object")
        for source, tree in sources.items():
            for path, value in _leaves(tree, ()):
                if not path:
                    continue
                if not math.isfinite(value):
                    continue
                yield Sample(float(t), host, str(source), "/".join(path[:-1]), path[-1] + suffix, value)


def _narrow(record: dict[str, Any]) -> Sample:
    t = record.get("t", record.get("time"))
    value = record.get("value")
    if isinstance(t, bool) or not isinstance(t, int | float):
        raise ValueError("t: expected a number")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ValueError("value: expected a number or null")
    for key in ("host", "source", "metric"):
        if not isinstance(record.get(key), str) or not record[key]:
            raise ValueError(f"{key}: expected a non-empty string")
    unit = record.get("unit")
    return Sample(
        float(t),
        record["host"],
        record["source"],
        str(record.get("target") or ""),
        record["metric"],
        None if value is None else float(value),
        str(unit) if unit else None,
    )


def parse_lines(lines: Iterable[bytes], name: str, default_host: str) -> Iterator[Sample]:
    """Samples from JSON lines; SampleError names the first bad line."""
    host = default_host
    seen = False
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            cut = "" if raw.endswith(b"\n") else " (the file ends in the middle of a line: truncated?)"
            raise SampleError(f"{name}:{lineno}: not a JSON object{cut}: {exc}") from None
        if not isinstance(record, dict):
            raise SampleError(f"{name}:{lineno}: not a JSON object")
        kind = record.get("type")
        try:
            if kind == "sample":
                yield from record_samples(record, host)
                seen = True
            elif kind in HEADER_TYPES:
                host = str(record.get("host") or record.get("hostname") or host)
            elif kind is None and "metric" in record:
                yield _narrow(record)
                seen = True
            elif kind is None:
                raise ValueError("neither a sample record nor a narrow sample")
        except ValueError as exc:
            raise SampleError(f"{name}:{lineno}: {exc}") from None
    if not seen:
        raise SampleError(f"{name}: no samples in it")


def read_samples(path: Path) -> SampleBatch:
    """The samples of a file (read lazily, inside the storing transaction); the uid hashes its bytes."""
    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise SampleError(f"{path}: cannot read: {exc.strerror}") from None

    def lines() -> Iterator[Sample]:
        with open(path, "rb") as f:
            yield from parse_lines(f, str(path), path.name.split(".", 1)[0])

    return SampleBatch("samples:" + digest, lines())
