"""`iolens replay check`: an original profile against its replay's, quantity by quantity, from their reports
(profile/report.py's job_report): what must agree within 5% (bytes, operation counts, each histogram
bucket, files by kind), the sequential and consecutive shares (within 5 points), and the I/O time (within
20%, meaningful on the same system only).

With --scale s, the original's counts and bytes are multiplied by s before the comparison (file counts are
not: a scaled kernel has the same files); rounding then allows one more operation of difference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COUNT_TOLERANCE = 0.05
SHARE_TOLERANCE = 0.05
TIME_TOLERANCE = 0.20


@dataclass
class Row:
    group: str
    quantity: str
    original: float
    replayed: float
    tolerance: str
    passed: bool


def _count_row(group: str, name: str, o: float, r: float, scale: float, scaled: bool = True) -> Row:
    want = o * scale if scaled else o
    slack = max(COUNT_TOLERANCE * want, 1.0 if scaled and scale != 1.0 else 0.0)
    return Row(group, name, want, r, "±5%", abs(r - want) <= slack + 1e-9)


def _share(n: int, d: int) -> float:
    return n / d if d else 0.0


def compare(orig: dict[str, Any], rep: dict[str, Any], scale: float = 1.0) -> list[Row]:
    """Rows for two job reports."""
    rows: list[Row] = []
    so, sr = orig["summary"], rep["summary"]
    for k in ("bytes_read", "bytes_written", "reads", "writes"):
        rows.append(_count_row("data", k, so[k], sr[k], scale))
    for layer, names in (("posix", ("opens", "stats", "seeks", "fsyncs")), ("stdio", ("opens", "seeks"))):
        lo, lr = orig["layers"].get(layer) or {}, rep["layers"].get(layer) or {}
        extra = ("fdsyncs",) if layer == "posix" else ("flushes",)
        for k in names:
            o = lo.get(k, 0) + (lo.get(extra[0], 0) if k == names[-1] and layer == "posix" else 0)
            r = lr.get(k, 0) + (lr.get(extra[0], 0) if k == names[-1] and layer == "posix" else 0)
            rows.append(_count_row("operations", f"{layer} {k}", o, r, scale))
        if layer == "stdio":
            rows.append(
                _count_row("operations", "stdio flushes", lo.get("flushes", 0), lr.get("flushes", 0), scale)
            )
    oo, orp = orig.get("operations") or {}, rep.get("operations") or {}
    for k in ("MKDIRS", "UNLINKS", "OPENDIRS", "READDIRS"):
        rows.append(_count_row("operations", k.lower(), oo.get(k, 0), orp.get(k, 0), scale))
    ao, ar = orig["access_sizes"], rep["access_sizes"]
    for what in ("read", "write"):
        for label, o, r in zip(ao["buckets"], ao[what], ar[what], strict=False):
            if o or r:
                rows.append(_count_row(f"{what} sizes", label, o, r, scale))
    fo, fr = so["files"], sr["files"]
    for k in ("read_only", "write_only", "read_write"):
        rows.append(_count_row("files", k.replace("_", "-"), fo[k], fr[k], 1.0, scaled=False))
    po, pr = orig["access_patterns"], rep["access_patterns"]
    for what in ("reads", "writes"):
        for kind in ("seq", "consec"):
            o = _share(po[f"{kind}_{what}"], po[what])
            r = _share(pr[f"{kind}_{what}"], pr[what])
            if po[what] or pr[what]:
                rows.append(
                    Row(
                        "patterns",
                        f"{kind} share of {what}",
                        o,
                        r,
                        "±5 pts",
                        abs(o - r) <= SHARE_TOLERANCE + 1e-9,
                    )
                )
    to, tr = so["io_time_s"] * scale, sr["io_time_s"]
    rows.append(Row("time", "I/O time (s)", to, tr, "±20%", abs(tr - to) <= TIME_TOLERANCE * to + 1e-9))
    return rows


def summary(rows: list[Row]) -> dict[str, Any]:
    failed = [f"{r.group}: {r.quantity}" for r in rows if not r.passed]
    return {"rows": len(rows), "passed": len(rows) - len(failed), "failed": failed}


def as_json(rows: list[Row], original: str, replayed: str, scale: float) -> dict[str, Any]:
    return {
        "schema": "iolens-replay-check",
        "schema_version": 1,
        "original": original,
        "replayed": replayed,
        "scale": scale,
        "rows": [
            {
                "group": r.group,
                "quantity": r.quantity,
                "original": r.original,
                "replayed": r.replayed,
                "tolerance": r.tolerance,
                "pass": r.passed,
            }
            for r in rows
        ],
        "summary": summary(rows),
    }


def _fmt(v: float, group: str) -> str:
    if group == "patterns":
        return f"{v:.3f}"
    if group == "time":
        return f"{v:.4f}"
    return f"{v:,.0f}" if abs(v - round(v)) < 1e-9 else f"{v:,.1f}"


def text_table(rows: list[Row]) -> str:
    head = ("group", "quantity", "original", "replayed", "within", "result")
    cells = [head] + [
        (r.group, r.quantity, _fmt(r.original, r.group), _fmt(r.replayed, r.group), r.tolerance,
         "pass" if r.passed else "FAIL")
        for r in rows
    ]  # fmt: skip
    widths = [max(len(c[i]) for c in cells) for i in range(len(head))]
    out = []
    for n, c in enumerate(cells):
        out.append(
            "  ".join(
                x.rjust(w) if 2 <= i <= 3 else x.ljust(w)
                for i, (x, w) in enumerate(zip(c, widths, strict=True))
            ).rstrip()
        )
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    s = summary(rows)
    out.append(f"{s['passed']} of {s['rows']} within tolerance")
    return "\n".join(out) + "\n"
