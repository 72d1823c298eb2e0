"""The pieces of a job's page that are the portal's own (report/html.py makes the rest): the survey table,
the table of layers, and the user's earlier runs of the same program as a table and a plot."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from iolens.render import human_bytes
from iolens.report import text as fmt
from iolens.web.job_storage import percent, rate_text

MIB = 2**20
# The rows of the survey table: (label, the survey row's column, how to show it).
Row = tuple[str, str]


def _s(v: Any) -> str:
    return f"{v:,.3f} s" if v is not None else "-"


def _pct(v: Any) -> str:
    return percent(float(v)) if v is not None else "-"


def _bytes(v: Any) -> str:
    return human_bytes(v) if v is not None else "-"


def _rate(v: Any) -> str:
    return rate_text(float(v), "write") if v else "-"


def _count(v: Any) -> str:
    return f"{int(v):,}" if v is not None else "-"


def survey_table(row: dict[str, Any]) -> list[Row]:
    """The job's I/O summary as the surveys give it (portal_jobs.SURVEY_COLUMNS, FILE_COLUMNS)."""
    return [
        ("total read", f"{_bytes(row['bytes_read'])} in {_count(row['reads'])} calls"),
        ("total written", f"{_bytes(row['bytes_written'])} in {_count(row['writes'])} calls"),
        ("metadata operations", _count(row["meta_ops"])),
        ("read time", _s(row["read_time_s"])),
        ("write time", _s(row["write_time_s"])),
        ("metadata time", _s(row["meta_time_s"])),
        ("I/O time (all processes)", _s(row["io_time_s"])),
        ("run time", _s(row["runtime_s"])),
        ("I/O share of run time", _pct(row["io_share"])),
        ("metadata share of I/O time", _pct(row["meta_share"])),
        ("I/O rate (bytes / I/O time)", _rate(row["io_rate_bytes_per_s"])),
        ("I/O rate (bytes / run time)", _rate(row["runtime_rate_bytes_per_s"])),
        ("files read-only", _count(row["files_read_only"])),
        ("files write-only", _count(row["files_write_only"])),
        ("files read-write", _count(row["files_read_write"])),
        ("processes", _count(row["processes"])),
    ]


LAYER_HEADERS = ("layer", "files", "opens", "reads", "writes", "read", "written", "read time", "write time",
                 "metadata time")  # fmt: skip


def _sum(items: list[dict[str, Any]], key: str) -> float:
    return sum(float(i.get(key) or 0) for i in items if isinstance(i, dict))


def _calls(v: Any) -> float:
    """A dataset's calls (a count) or a variable's (a count by mode: independent, collective, …)."""
    if isinstance(v, dict):
        return sum(x for x in v.values() if isinstance(x, int | float))
    return float(v) if isinstance(v, int | float) else 0.0


# A layer row's figures after its files and opens: calls, bytes, times (summed over the processes).
FIGURES = ("reads", "writes", "bytes_read", "bytes_written", "read_time_s", "write_time_s", "meta_time_s")


def _row(name: str, files: float, opens: float, f: list[float]) -> list[str]:
    counts, moved, times = f[:2], f[2:4], f[4:]
    return [name, _count(files), _count(opens), *map(_count, counts), *map(_bytes, moved), *map(_s, times)]


def layer_rows(layers: dict[str, Any]) -> list[list[str]]:
    """A row for each layer the job used: POSIX and STDIO (their totals), then MPI-IO, HDF5 and PnetCDF (their
    files added up)."""
    rows = []
    for key, name in (("posix", "POSIX"), ("stdio", "STDIO")):
        lay = layers.get(key)
        if isinstance(lay, dict) and lay.get("files"):
            rows.append(_row(name, lay["files"], _sum([lay], "opens"), [_sum([lay], k) for k in FIGURES]))
    mpi = [f for f in layers.get("mpiio") or [] if isinstance(f, dict)]
    if mpi:
        ops = [k for f in mpi for k in (f.get("ops") or {}).values() if isinstance(k, dict)]
        opens = [f["opens"] for f in mpi if isinstance(f.get("opens"), dict)]
        figures = [_sum(ops if k in ("reads", "writes") else mpi, k) for k in FIGURES]
        rows.append(_row("MPI-IO", len(mpi), _sum(opens, "independent") + _sum(opens, "collective"), figures))
    for key, name, part in (("hdf5", "HDF5", "datasets"), ("pnetcdf", "PnetCDF", "variables")):
        files = [f for f in layers.get(key) or [] if isinstance(f, dict)]
        if not files:
            continue
        inner = [d for f in files for d in f.get(part) or [] if isinstance(d, dict)]
        figures = [
            sum(_calls(d.get(k)) for d in inner) if k in ("reads", "writes") else _sum(inner, k)
            for k in FIGURES
        ]
        figures[-1] += _sum(files, "meta_time_s")  # the file's own metadata time, besides its datasets'
        rows.append(_row(name, len(files), _sum(files, "opens") + _sum(files, "creates"), figures))
    return rows


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def earlier_table(runs: list[dict[str, Any]], this_id: int) -> list[dict[str, Any]]:
    return [
        {
            "id": r["id"],
            "this": r["id"] == this_id,
            "job_id": r["job_id"] or "-",
            "started": fmt.when(r["started_at"]),
            "runtime": _s(r["runtime_s"]),
            "processes": _count(r["processes"]),
            "bytes": _bytes(r["bytes_total"]),
            "io_time": _s(r["io_time_s"]),
            "io_share": _pct(r["io_share"]),
            "rate": _rate(r["io_rate_bytes_per_s"]),
        }
        for r in reversed(runs)
    ]


def _trace(
    name: str, x: list[str], y: list[float], text: list[str], color: str, shown: str
) -> dict[str, Any]:
    return {"type": "scatter", "mode": "lines+markers", "name": name, "x": x, "y": y, "text": text,
            "hovertemplate": "%{text}: " + shown + "<extra></extra>", "marker": {"color": color}}  # fmt: skip


def earlier_figure(runs: list[dict[str, Any]], this_id: int) -> dict[str, Any]:
    """Bytes moved (left axis, MiB) and I/O time (right axis, s) of each run over time (UTC), this job
    marked."""
    timed = [r for r in runs if r["started_at"] is not None]
    x = [_iso(r["started_at"]) for r in timed]
    mine = [r for r in timed if r["id"] == this_id]
    names = [f"profile {r['id']}" for r in timed]
    moved = [(r["bytes_total"] or 0) / MIB for r in timed]
    io_time = [r["io_time_s"] or 0 for r in timed]
    data: list[dict[str, Any]] = [
        _trace("MiB moved", x, moved, names, "#1f77b4", "%{y:.1f} MiB"),
        {
            **_trace("I/O time s", x, io_time, names, "#ff7f0e", "%{y:.3f} s"),
            "yaxis": "y2",
            "line": {"dash": "dot"},
        },
    ]
    if mine:
        star = {"color": "#d62728", "size": 13, "symbol": "star"}
        when = [_iso(mine[0]["started_at"])]
        y = [(mine[0]["bytes_total"] or 0) / MIB]
        data.append(
            {"type": "scatter", "mode": "markers", "name": "this job", "x": when, "y": y, "marker": star}
        )
    return {
        "data": data,
        "layout": {
            "margin": {"l": 70, "r": 70, "t": 20, "b": 60},
            "legend": {"orientation": "h", "y": -0.25},
            "xaxis": {"type": "date", "title": {"text": "start (UTC)"}, "gridcolor": "#eee"},
            "yaxis": {"title": {"text": "MiB moved"}, "rangemode": "tozero", "gridcolor": "#eee"},
            "yaxis2": {
                "title": {"text": "I/O time s"},
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
            },
        },
    }
