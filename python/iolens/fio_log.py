"""The per-second log of a fio run (`iolens fio --per-second-log FILE`): one CSV row per job, second and
direction in which I/Os completed, from the document's per_second entries."""

from __future__ import annotations

import csv
import io
from typing import Any

from iolens.results import FIO_DIRECTIONS, FioDocument

COLUMNS = (
    "job", "t_s", "direction", "ios", "bytes", "iops", "bw_bytes_per_s",
    "p50_ns", "p90_ns", "p99_ns", "p99_9_ns", "max_ns",
)  # fmt: skip


def per_second_rows(doc: FioDocument) -> list[dict[str, Any]]:
    """The rows, job by job in the document's order, then by second, read before write. Each entry covers a
    whole second, so its I/Os and bytes are also its rates."""
    rows = []
    for job in doc.jobs:
        for sec in sorted(job.per_second, key=lambda s: s.t_s):
            for d in FIO_DIRECTIONS:
                s = sec.direction(d)
                if s.ios <= 0:
                    continue
                values = (
                    job.name, sec.t_s, d, s.ios, s.bytes, float(s.ios), float(s.bytes),
                    s.p50_ns, s.p90_ns, s.p99_ns, s.p99_9_ns, s.max_ns,
                )  # fmt: skip
                rows.append(dict(zip(COLUMNS, values, strict=True)))
    return rows


def per_second_csv(doc: FioDocument) -> str:
    """The CSV text, with a header line."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(per_second_rows(doc))
    return out.getvalue()
