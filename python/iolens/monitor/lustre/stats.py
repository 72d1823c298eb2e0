"""The Lustre "stats" family: llite, osc, mdc, obdfilter, mdt, exports' stats, md_stats and service stats.

    snapshot_time             1710759783.271040288 secs.nsecs
    start_time                1710759000.000000000 secs.nsecs        (2.15+)
    elapsed_time              783.271040288 secs.nsecs               (2.15+)
    open                      35955554 samples [usecs] 0 172939 3393651645 8836730033307
    ioctl                     114 samples [reqs]

Every variant of ../shared/data/lustre/README.md is read: header times as `secs.nsecs`, as `secs.usecs` whose
fraction is a microsecond count without zero padding, as plain integers, with a colon after the name or the
unit in parentheses; counter lines split on whitespace whatever the name column's width (25 or 35); with
count only, count and min/max/sum, or with sumsq; any unit, legacy ones (`usec`, `sec`, `bufs`) included.
Counters with no samples are absent from these files. A line that fits none of this is skipped and counted.
"""

from __future__ import annotations

from iolens.monitor.common import Tree, parse_time, to_int

TIME_KEYS = ("snapshot_time", "start_time", "elapsed_time")


def parse_header_time(parts: list[str]) -> tuple[str, float] | None:
    """(key, seconds) of a `snapshot_time[:] VALUE [UNIT]` line split on whitespace, else None."""
    if not parts:
        return None
    key = parts[0].rstrip(":")
    if key not in TIME_KEYS or len(parts) < 2:
        return None
    value, rest = parts[1], parts[2:]
    if value.endswith(".") and rest and rest[0].isdigit():
        # `%llu.%9lu` (mdc's modify RPC stats): a fraction printed space-padded, `1700000000. 12345678`; its
        # digits are the count of nanoseconds (parse_time reads an unpadded fraction by its unit).
        value, rest = value + rest[0], rest[1:]
    unit = rest[0] if rest else None
    seconds = parse_time(value, unit)
    return None if seconds is None else (key, seconds)


def parse_counter(parts: list[str]) -> tuple[str, Tree] | None:
    """(name, {samples, unit, min, max, sum[, sumsq]}) of a counter line split on whitespace, else None."""
    if len(parts) < 3 or parts[2] != "samples":
        return None
    try:
        counter: Tree = {"samples": to_int(parts[1])}
    except ValueError:
        return None
    rest = parts[3:]
    if rest and rest[0].startswith("[") and rest[0].endswith("]"):
        counter["unit"] = rest[0][1:-1]
        rest = rest[1:]
    if len(rest) not in (0, 3, 4):
        return None
    try:
        nums = [to_int(x) for x in rest]
    except ValueError:
        return None
    if nums:
        counter["min"], counter["max"], counter["sum"] = nums[0], nums[1], nums[2]
        if len(nums) == 4:
            counter["sumsq"] = nums[3]
    return parts[0], counter


def parse(text: str) -> tuple[Tree, int]:
    """{snapshot_time, start_time?, elapsed_time?, counters: {name: counter}} and the count of skipped
    lines."""
    out: Tree = {}
    counters: Tree = {}
    skipped = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        c = parse_counter(parts)
        if c is not None:
            counters[c[0]] = c[1]
            continue
        t = parse_header_time(parts)
        if t is not None:
            out[t[0]] = t[1]
            continue
        skipped += 1
    out["counters"] = counters
    return out, skipped
