"""Lustre job_stats (obdfilter.*.job_stats, mdt.*.job_stats): per-job server statistics.

    job_stats:
    - job_id:          cluster-testjob1
      snapshot_time:   1461772761
      read_bytes:      { samples:           1, unit: bytes, min:    4096, max:    4096, sum:            4096 }
      write_bytes:     { samples:          25, unit: bytes, min: 1048576, max:16777216, sum:        26214400 }
      getattr:         { samples:           0, unit:  reqs }

YAML-like but not YAML: before 2.15 `max:16777216` may lack its space; 2.15 adds `start_time` and
`elapsed_time` (with a `secs.nsecs` unit) and `sumsq`; 2.16 quotes job ids with unusual characters, escaping
bytes as `\\xHH`, and adds `hist: { 4K: n, 1M: n }` to read_bytes/write_bytes. Counters with no samples are
printed. A line that fits none of this is skipped and counted.

Written for speed (a server may hold tens of thousands of jobs): one compiled expression, run once over the
whole text, reads every job of the common layout; a text with any other line goes job by job, and a job with
such a line through a slower, tolerant reader.
"""

from __future__ import annotations

import gc
import re

from iolens.monitor.common import Tree, parse_time, to_int

# A number in these expressions: at most 20 ASCII digits (a 64-bit counter, common.MAX_DIGITS); a longer
# one fails its line, which is then skipped and counted.
_NUM = "[0-9]{1,20}"
_OP = re.compile(
    rf"\s*([A-Za-z_][\w]*):\s*\{{\s*samples:\s*({_NUM})\s*,\s*unit:\s*([\w.]+)"
    rf"(?:\s*,\s*min:\s*(-?{_NUM})\s*,\s*max:\s*(-?{_NUM})\s*,\s*sum:\s*(-?{_NUM})(?:\s*,\s*sumsq:\s*({_NUM}))?)?"
    # `\s*(?:,\s*)?` rather than `\s*,?\s*`: two whitespace runs side by side backtrack in quadratic time on a
    # long run of blanks (96,000: 22 s).
    r"(?:\s*,\s*hist:\s*\{([^{}]*)\})?\s*(?:,\s*)?\}\s*$"
)
_HEADER_KEYS = ("snapshot_time", "start_time", "elapsed_time")


def unquote_job_id(text: str) -> str:
    """A job id as printed: bare, or quoted ("..." or '...') with `\\xHH`, `\\\\` and `\\"` escapes, the
    bytes decoded as UTF-8 (undecodable bytes stay as `\\xHH`)."""
    t = text.strip()
    if len(t) < 2 or t[0] not in "\"'" or t[-1] != t[0]:
        return t
    body = t[1:-1]
    if "\\" not in body:
        return body
    raw = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "xX" and i + 4 <= len(body) and _is_hex(body[i + 2 : i + 4]):
                raw.append(int(body[i + 2 : i + 4], 16))
                i += 4
                continue
            simple = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'"}.get(nxt)
            if simple is not None:
                raw.extend(simple.encode())
                i += 2
                continue
        raw.extend(ch.encode("utf-8", "surrogateescape"))
        i += 1
    return raw.decode("utf-8", "backslashreplace")


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


# No leading `\s*`: findall tries it at every blank of a long run of them (quadratic); the items found are the
# same without it.
_HIST_ITEM = re.compile(rf"([^\s:,{{}}]+)\s*:\s*({_NUM})\s*(?:,|$)")


def parse_hist(text: str) -> dict[str, int]:
    """`4K: 1, 1M: 3` → {"4K": 1, "1M": 3}; ValueError on anything else."""
    items = _HIST_ITEM.findall(text)
    if len(items) != text.count(":"):
        raise ValueError(text)
    return {k: int(v) for k, v in items}  # at most 20 digits each (_HIST_ITEM)


def _split_top(text: str) -> list[str]:
    """Split `a: 1, hist: { 4K: 1, 1M: 2 }, b: 2` on the commas outside braces."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    return items


def parse_op_slow(line: str) -> tuple[str, Tree] | None:
    """The tolerant reader of an operation line: any key order, unknown keys kept when numeric."""
    name, sep, rest = line.strip().partition(":")
    rest = rest.strip()
    if not sep or not name or not rest.startswith("{") or not rest.endswith("}"):
        return None
    counter: Tree = {}
    try:
        for item in _split_top(rest[1:-1]):
            if not item.strip():
                continue
            key, sep, value = item.partition(":")
            key, value = key.strip(), value.strip()
            if not sep:
                return None
            if key == "hist":
                if not (value.startswith("{") and value.endswith("}")):
                    return None
                counter["hist"] = parse_hist(value[1:-1])
            elif key == "unit":
                counter["unit"] = value
            else:
                counter[key] = to_int(value)
    except ValueError:
        return None
    if "samples" not in counter:
        return None
    return name.strip(), counter


# The fast path: each job's lines matched by two expressions over the whole job (each starting at a newline,
# which the regular expression engine finds quickly), checked against the job's line count; a job with any
# line they do not match (other spacing, key order, a malformed line) goes through the line reader instead.
_JOB = re.compile(r"\n[ \t]*-[ \t]*job_id:")
_OPS = re.compile(
    rf"\n +(\w+): *\{{ samples: *({_NUM}), unit: *(\w+)(?:, min: *(-?{_NUM}), max: *(-?{_NUM}), "
    rf"sum: *(-?{_NUM})(?:, sumsq: *({_NUM}))?)?(?:, hist: (\{{[^{{}}\n]*\}}))? \}}[ \t]*(?=\n|\Z)"
)
_HDR = re.compile(
    r"\n[ \t]*(snapshot_time|start_time|elapsed_time):[ \t]*(\S+)(?:[ \t]+(\S+))?[ \t]*(?=\n|\Z)"
)

# The whole-text pass: one match per operation line, the first operation of a job also taking the job's
# `job_id` line and the header lines before it (groups 1 and 2). Every match starts at a newline and ends at
# the end of a line, so the text is of the common layout when the matches, job lines and header lines add up
# to its line count; otherwise it is read job by job (_fast_job, _slow_job). No possessive quantifiers: Python
# 3.10 has none (every part is bounded by a newline, so the greedy forms match the same).
_WHOLE = re.compile(
    r"\n(?:[ \t]*-[ \t]*(job_id:[^\n]*)"
    r"((?:\n[ \t]*(?:snapshot_time|start_time|elapsed_time):[^\n]*)*)\n)?"
    rf" +(\w+): *\{{ samples: *({_NUM}), unit: *(\w+)(?:, min: *(-?{_NUM}), max: *(-?{_NUM}), "
    rf"sum: *(-?{_NUM})(?:, sumsq: *({_NUM}))?)?(?:, hist: (\{{[^{{}}\n]*\}}))? \}}[ \t]*(?=\n|\Z)"
)


def _whole_text(text: str, start: int) -> Tree | None:
    """Every job from text[start:] (which begins with a newline and a job_id line) in one pass, or None
    when a line is not of the common layout."""
    rows = _WHOLE.findall(text, start)
    lines = text.count("\n", start) - (1 if text.endswith("\n") else 0)
    seen = len(rows)
    jobs: Tree = {}
    counters: Tree = {}
    _int = int  # a local: looked up 700,000 times for 10,000 jobs
    for job_id, header, name, samples, unit, mn, mx, sm, sq, hist in rows:
        if job_id:
            job: Tree = {}
            if header:
                for line in header.split("\n")[1:]:
                    key, _, value = line.partition(":")
                    parts = value.split()
                    seconds = parse_time(parts[0], parts[1] if len(parts) == 2 else None) if parts else None
                    if seconds is None or len(parts) > 2:
                        return None
                    job[key.strip()] = seconds
                    seen += 1
            counters = job["counters"] = {}
            jobs[unquote_job_id(job_id[7:])] = job
            seen += 1
        if sq:
            c: Tree = {"samples": _int(samples), "unit": unit, "min": _int(mn), "max": _int(mx),
                       "sum": _int(sm), "sumsq": _int(sq)}  # fmt: skip
        elif mn:
            c = {"samples": _int(samples), "unit": unit, "min": _int(mn), "max": _int(mx), "sum": _int(sm)}
        else:
            c = {"samples": _int(samples), "unit": unit}
        if hist:
            try:
                c["hist"] = parse_hist(hist[1:-1])
            except ValueError:
                return None
        counters[name] = c
    if seen != lines:
        return None
    return jobs


def _fast_job(text: str, start: int, end: int) -> Tree | None:
    """The job whose lines are text[start:end] (from the newline ending its job_id line), or None when a
    line is not of the common shape."""
    ops = _OPS.findall(text, start, end)
    headers = _HDR.findall(text, start, end)
    lines = text.count("\n", start, end) - (1 if end > start and text[end - 1] == "\n" else 0)
    if len(ops) + len(headers) != lines:
        return None
    job: Tree = {}
    for key, value, unit in headers:
        seconds = parse_time(value, unit or None)
        if seconds is None:
            return None
        job[key] = seconds
    counters: Tree = {}
    for name, samples, unit, mn, mx, sm, sq, hist in ops:
        if sq:
            c: Tree = {"samples": int(samples), "unit": unit, "min": int(mn), "max": int(mx), "sum": int(sm),
                       "sumsq": int(sq)}  # fmt: skip
        elif mn:
            c = {"samples": int(samples), "unit": unit, "min": int(mn), "max": int(mx), "sum": int(sm)}
        else:
            c = {"samples": int(samples), "unit": unit}
        if hist:
            try:
                c["hist"] = parse_hist(hist[1:-1])
            except ValueError:
                return None
        counters[name] = c
    job["counters"] = counters
    return job


def _slow_job(body: str) -> tuple[Tree, int]:
    """The job from its lines, one at a time, any layout; malformed lines skipped and counted."""
    job: Tree = {}
    counters: Tree = {}
    skipped = 0
    for line in body.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        m = _OP.match(line)
        if m is not None:
            name, samples, unit, mn, mx, sm, sq, hist = m.groups()
            c: Tree = {"samples": int(samples), "unit": unit}
            if mn is not None:
                c["min"], c["max"], c["sum"] = int(mn), int(mx), int(sm)
                if sq is not None:
                    c["sumsq"] = int(sq)
            if hist is not None:
                try:
                    c["hist"] = parse_hist(hist)
                except ValueError:
                    skipped += 1
                    continue
            counters[name] = c
            continue
        key, _, value = stripped.partition(":")
        if key in _HEADER_KEYS:
            parts = value.split()
            seconds = parse_time(parts[0], parts[1] if len(parts) > 1 else None) if parts else None
            if seconds is None:
                skipped += 1
            else:
                job[key] = seconds
            continue
        op = parse_op_slow(stripped)
        if op is None:
            skipped += 1
        else:
            counters[op[0]] = op[1]
    job["counters"] = counters
    return job, skipped


def parse(text: str) -> tuple[Tree, int]:
    """{"jobs": {job_id: {snapshot_time, start_time?, elapsed_time?, counters: {op: counter}}}} and the
    count of skipped lines."""
    # Tens of thousands of small dicts: the cyclic collector would scan them again and again, for nothing.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse(text)
    finally:
        if enabled:
            gc.enable()


def _parse(text: str) -> tuple[Tree, int]:
    text = "\n" + text
    first = _JOB.search(text)
    # Before the first job: the `job_stats:` line; anything else is skipped.
    prefix = text[: first.start()] if first is not None else text
    skipped = sum(1 for ln in prefix.splitlines() if ln.strip() and ln.strip() != "job_stats:")
    if first is None:
        return {"jobs": {}}, skipped
    fast = _whole_text(text, first.start())
    if fast is not None:
        return {"jobs": fast}, skipped
    jobs: Tree = {}
    heads = [(m.start(), m.end()) for m in _JOB.finditer(text)]
    for i, (_, id_at) in enumerate(heads):
        end = heads[i + 1][0] if i + 1 < len(heads) else len(text)
        nl = text.find("\n", id_at, end)
        if nl < 0:
            nl = end
        job = _fast_job(text, nl, end)
        if job is None:
            job, n = _slow_job(text[nl:end])
            skipped += n
        jobs[unquote_job_id(text[id_at:nl])] = job
    return {"jobs": jobs}, skipped
