"""Lustre histogram tables: osc/mdc `rpc_stats` and obdfilter/osd `brw_stats`.

    snapshot_time:         1567452327.426346009 (secs.nsecs)
    read RPCs in flight:  0
    pending write pages:  0

                            read                    write
    pages per rpc         rpcs   % cum % |       rpcs   % cum %
    1:                       0   0   0   |          0   0   0
    256:                    12 100 100   |        137  99 100

A header (times, then `name: value` lines), then tables separated by blank lines; each table starts with a
line of tabs or spaces around its column headings, `read` and `write` (and a `|`), then a title row (`pages
per rpc`, `rpcs in flight`, `offset`, `RPC latency (us)`; brw_stats: `pages per bulk r/w`, `discontiguous
pages`, `disk I/Os in flight`, `I/O time (1/1000s)`, `disk I/O size` ...), then rows `BUCKET: count pct
cumpct | count pct cumpct` with tabs and spaces in any mix. Buckets may carry a unit suffix (`4K:`, `1M:`).

mdc `rpc_stats` begins with a one-column table of the modify RPCs in flight (Lustre's
obd_mod_rpc_stats_seq_show), after a `modify_RPCs_in_flight:` value line:

    \t\t\tmodify
    rpcs in flight        rpcs   % cum %
    1:\t\t     52861  86  86

Its rows are {modify: count}; such a table is named by its heading and title (`modify rpcs in flight`), so it
does not take the name of the read/write `rpcs in flight` table after it. The counts are kept; the percentages
are derived figures and are not. A line that fits none of this is skipped and counted.
"""

from __future__ import annotations

import re

from iolens.monitor.common import Tree, size_value, to_float, to_int
from iolens.monitor.lustre.stats import parse_header_time

# `pages per rpc         rpcs   % cum % |       rpcs   % cum %` → title, column unit. The title is what comes
# before the first place this tail matches (_title); searched for, not matched with a lazy `(.*?)` before
# `\s+`, which backtracks in quadratic time and more on a long line of spaces.
_TITLE_TAIL = re.compile(r"\s(\w+)\s+%\s+cum\s*%\s*(?:\|.*)?$")
_ROW = re.compile(r"^\s*([^\s:][^:]*?):\s*(-?\d[\d\s]*(?:\|[\d\s]*)*)$")
# The column headings Lustre prints above its tables.
COLUMNS = ("read", "write", "modify")
READ_WRITE = ["read", "write"]


def table_columns(line: str) -> list[str] | None:
    """The columns of a table that this line opens (`read write`, `modify`), else None: only column headings
    (and `|`) between tabs and spaces, each once."""
    words = line.replace("|", " ").split()
    if not words or len(set(words)) != len(words) or any(w not in COLUMNS for w in words):
        return None
    return words


def is_table_start(line: str) -> bool:
    """The line that opens a table (detect() recognises rpc_stats and brw_stats by it)."""
    return table_columns(line) is not None


def _row(line: str, columns: list[str]) -> tuple[str, Tree] | None:
    """(bucket, {column: count}) of a row: one `count pct cumpct` group per column, split by `|`; a group
    may be missing at the end (a row of the first column only)."""
    m = _ROW.match(line)
    if m is None:
        return None
    groups = [g.split() for g in m.group(2).split("|")]
    if not groups[0] or len(groups) > len(columns):
        return None
    row: Tree = {}
    try:
        for col, nums in zip(columns, groups, strict=False):
            if nums:
                row[col] = to_int(nums[0])
    except ValueError:
        return None
    return m.group(1).strip(), row


def parse(text: str) -> tuple[Tree, int]:
    """{snapshot_time?, start_time?, elapsed_time?, values: {name: number}, tables: {title: {unit, buckets:
    {bucket: {read, write} or {modify}}}}} and the count of skipped lines. A bucket with a size suffix also
    gets `bytes` (its value in bytes)."""
    out: Tree = {}
    values: Tree = {}
    tables: Tree = {}
    skipped = 0
    table: Tree | None = None
    columns = READ_WRITE
    want_title = False
    for line in text.splitlines():
        if not line.strip():
            table = None
            want_title = False
            continue
        opened = table_columns(line)
        if opened is not None:
            table = None
            columns = opened
            want_title = True
            continue
        if want_title:
            want_title = False
            if _row(line, columns) is None:
                m = _TITLE_TAIL.search(line)
                title, unit = (line[: m.start()].strip(), m.group(1)) if m else (line.strip(), "")
                if columns != READ_WRITE:
                    title = f"{' '.join(columns)} {title}"
                base, n = title, 2
                while title in tables:
                    title = f"{base} ({n})"
                    n += 1
                table = {"unit": unit, "buckets": {}}
                tables[title] = table
                continue
            # Rows with no title row: a table all the same, named by its position.
            table = {"unit": "", "buckets": {}}
            tables[f"table {len(tables) + 1}"] = table
        if table is not None:
            r = _row(line, columns)
            if r is None:
                skipped += 1
                continue
            bucket, row = r
            if not bucket.isdigit():
                size = size_value(bucket)
                if size is not None:
                    row["bytes"] = size
            table["buckets"][bucket] = row
            continue
        t = parse_header_time(line.split())
        if t is not None:
            out[t[0]] = t[1]
            continue
        key, sep, value = line.partition(":")
        parts = value.split()
        if sep and key.strip() and parts:
            try:
                values[key.strip()] = to_int(parts[0])
                continue
            except ValueError:
                try:
                    values[key.strip()] = to_float(parts[0])
                    continue
                except ValueError:
                    pass
        skipped += 1
    out["values"] = values
    out["tables"] = tables
    return out, skipped
