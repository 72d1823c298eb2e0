"""Access size histogram buckets: the upper bound of a bucket label as the report writes them ("10K-100K",
"1G+"; report.access_sizes), for the advice and the store, which both ask which buckets are small."""

from __future__ import annotations

import re

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def bucket_upper(label: str) -> float:
    """Upper bound in bytes, inclusive, of a histogram bucket labelled like "10K-100K" (Darshan's buckets:
    that one holds 10241..102400 bytes, DARSHAN_BUCKET_INC; iolens's runtime alike) or "1G+" (infinite; as
    is a label of no known form)."""
    if label.endswith("+"):
        return float("inf")
    m = re.fullmatch(r"\d+[KMGT]?-(\d+)([KMGT]?)", label)
    if not m:
        return float("inf")
    return float(int(m[1]) * _UNITS[m[2]])
