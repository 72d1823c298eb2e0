"""The text of a Darshan log's own member of the report (`darshan`): its modules stacked from the library
the program called (HDF5, PnetCDF) down to POSIX, so a reader sees what HDF5 writes became in MPI-IO and in
POSIX calls, and the H5D datasets. Reads nothing but the report dict, like the rest of the text view."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

# Each module's (opens, reads, writes) as sums of its Darshan counters; top of the stack first.
STACK: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    ("PNETCDF_VAR", ("OPENS",), ("INDEP_READS", "COLL_READS", "NB_READS"),
     ("INDEP_WRITES", "COLL_WRITES", "NB_WRITES")),
    ("PNETCDF_FILE", ("CREATES", "OPENS"), (), ()),
    ("H5D", ("OPENS",), ("READS",), ("WRITES",)),
    ("H5F", ("OPENS",), (), ()),
    ("MPI-IO", ("INDEP_OPENS", "COLL_OPENS"), ("INDEP_READS", "COLL_READS", "SPLIT_READS", "NB_READS"),
     ("INDEP_WRITES", "COLL_WRITES", "SPLIT_WRITES", "NB_WRITES")),
    ("STDIO", ("OPENS", "FDOPENS"), ("READS",), ("WRITES",)),
    ("POSIX", ("OPENS",), ("READS",), ("WRITES",)),
)  # fmt: skip
PREFIX = {"MPI-IO": "MPIIO"}


def _sum(totals: dict[str, Any], prefix: str, names: Sequence[str]) -> int:
    return int(sum(totals.get(f"{prefix}_{n}", 0) for n in names))


def layer_rows(layers: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per module of the log, top of the stack first: records, opens, reads, writes, bytes, times."""
    rows = []
    for name, opens, reads, writes in STACK:
        t = layers.get(name)
        if t is None:
            continue
        p = PREFIX.get(name, name)
        rows.append(
            {
                "module": name,
                "records": t["records"],
                "opens": _sum(t, p, opens),
                "reads": _sum(t, p, reads),
                "writes": _sum(t, p, writes),
                "bytes_read": int(t.get(f"{p}_BYTES_READ", 0)),
                "bytes_written": int(t.get(f"{p}_BYTES_WRITTEN", 0)),
                "read_time_s": float(t.get(f"{p}_F_READ_TIME", 0.0)),
                "write_time_s": float(t.get(f"{p}_F_WRITE_TIME", 0.0)),
                "meta_time_s": float(t.get(f"{p}_F_META_TIME", 0.0)),
            }
        )
    return rows


def darshan_view(
    d: dict[str, Any],
    table: Callable[[str, Sequence[str], Sequence[Sequence[str | Text]]], Table],
    size: Callable[[float], str],
    secs: Callable[[float], str],
) -> list[RenderableType]:
    lib = f", Darshan {d['library_version']}" if d.get("library_version") else ""
    out: list[RenderableType] = [
        Text(f"Read from a Darshan log (format {d['log_version']}{lib}; modules: {', '.join(d['modules'])})",
             style="dim"),
    ]  # fmt: skip
    rows = layer_rows(d["layers"])
    if rows:
        out.append(
            table(
                "Darshan modules (the library the program called first, POSIX last)",
                ["module", "records", "opens", "reads", "writes", "read", "written", "read time",
                 "write time", "meta time"],
                [(r["module"], str(r["records"]), str(r["opens"]), str(r["reads"]), str(r["writes"]),
                  size(r["bytes_read"]), size(r["bytes_written"]), secs(r["read_time_s"]),
                  secs(r["write_time_s"]), secs(r["meta_time_s"])) for r in rows],
            )
        )  # fmt: skip
    mpi = d["layers"].get("MPI-IO")
    if mpi:
        calls = _sum(mpi, "MPIIO", ("INDEP_READS", "INDEP_WRITES", "COLL_READS", "COLL_WRITES", "SPLIT_READS",
                                    "SPLIT_WRITES", "NB_READS", "NB_WRITES"))  # fmt: skip
        coll = _sum(mpi, "MPIIO", ("COLL_READS", "COLL_WRITES", "SPLIT_READS", "SPLIT_WRITES"))
        if calls:
            out.append(Text(f"MPI-IO: {coll} of {calls} reads and writes collective", style="dim"))
    if d.get("datasets"):
        out.append(
            table(
                "HDF5 datasets (by bytes)",
                ["dataset", "rank", "reads", "writes", "read", "written", "collective"],
                [(Text(ds["name"]), str(ds["rank"]), str(ds["H5D_READS"]), str(ds["H5D_WRITES"]),
                  size(max(ds["H5D_BYTES_READ"], 0)), size(max(ds["H5D_BYTES_WRITTEN"], 0)),
                  "yes" if ds["H5D_USE_MPIIO_COLLECTIVE"] > 0 else "no") for ds in d["datasets"][:10]],
            )
        )  # fmt: skip
    # PnetCDF variables: the report's PnetCDF layer (layers.pnetcdf) shows them, as for iolens's own logs.
    return out
