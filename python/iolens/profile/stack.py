"""Each file's layers stacked (docs/profile.md, "The layer stack"): what the program's HDF5 calls became in
MPI-IO and then in POSIX calls, and whether collective buffering happened, from the report's `layers` alone
(the JSON document), so that the text report and the HTML page of a stored profile show the same.

A layer is one entry of LEVELS, top to bottom: the report's list under `layers` and the function that turns
one file's entry into rows (label, value). PnetCDF sits between HDF5 and MPI-IO; a further layer is one
more entry; a layer with no entry is not shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from iolens.render import human_bytes

Rows = list[tuple[str, str]]
BYTES = {"write": "bytes_written", "read": "bytes_read"}
RANKS = {"write": "writer_ranks", "read": "reader_ranks"}
PAST = {"write": "wrote", "read": "read"}


@dataclass(frozen=True)
class Level:
    layer: str  # "HDF5", "MPI-IO", "POSIX"
    rows: Rows


@dataclass(frozen=True)
class Stack:
    path: str
    levels: list[Level]
    sentence: str  # what the writes (reads) became beneath, and whether collective buffering happened


def _ranks(ranks: Sequence[int]) -> str:
    if not ranks:
        return "none"
    shown = ", ".join(map(str, ranks[:8]))
    return f"{len(ranks)} ({shown}{', …' if len(ranks) > 8 else ''})"


def _sizes(sizes: dict[str, Any] | None, what: str) -> str:
    """The histogram's non-empty buckets: "100K-1M: 2270, 1M-4M: 8"."""
    if not sizes:
        return "-"
    pairs = [f"{b}: {n}" for b, n in zip(sizes["buckets"], sizes[what], strict=False) if n]
    return ", ".join(pairs) or "-"


def _mean(total: float, count: int) -> str:
    return human_bytes(total / count) if count else "-"


def hdf5_level(f: dict[str, Any]) -> Rows:
    ds = f.get("datasets") or []
    writes = sum(d["writes"] for d in ds)
    reads = sum(d["reads"] for d in ds)
    coll_w = sum(d["collective"]["writes"] for d in ds)
    coll_r = sum(d["collective"]["reads"] for d in ds)
    names = ", ".join(d["name"] for d in ds[:5]) + (", …" if len(ds) > 5 else "")
    align = f"{f['alignment']} bytes (threshold {f['align_threshold']})" if f["alignment"] > 1 else "none"
    return [
        ("datasets", f"{len(ds)}: {names}" if ds else "0"),
        ("H5Dwrite", f"{writes} ({coll_w} collective, {writes - coll_w} independent), "
                     f"{human_bytes(sum(d['bytes_written'] for d in ds))}"),
        ("H5Dread", f"{reads} ({coll_r} collective, {reads - coll_r} independent), "
                    f"{human_bytes(sum(d['bytes_read'] for d in ds))}"),
        ("driver, alignment", f"{'MPI-IO' if f['use_mpiio'] else 'not MPI-IO'}, alignment {align}"),
    ]  # fmt: skip


def pnetcdf_level(f: dict[str, Any]) -> Rows:
    vs = f.get("variables") or []
    names = ", ".join(v["name"] for v in vs[:5]) + (", …" if len(vs) > 5 else "")

    def moved(what: str, key: str) -> str:
        modes: dict[str, int] = {}
        for v in vs:
            for mode, n in v[f"{what}s"].items():
                modes[mode] = modes.get(mode, 0) + n
        total = sum(modes.values())
        kinds = ", ".join(f"{n} {mode}" for mode, n in modes.items() if n)
        return f"{total} ({kinds or 'none'}), {human_bytes(sum(v[key] for v in vs))}"

    return [
        ("variables", f"{len(vs)}: {names}" if vs else "0"),
        ("put calls", moved("write", "bytes_written")),
        ("get calls", moved("read", "bytes_read")),
    ]


def _by_kind(ops: dict[str, dict[str, int]], what: str) -> str:
    parts = [f"{ops[k][what]} {k}" for k in ops if ops[k][what]]
    return ", ".join(parts) or "0"


def mpiio_level(f: dict[str, Any]) -> Rows:
    ops = f["ops"]
    writes = sum(v["writes"] for v in ops.values())
    reads = sum(v["reads"] for v in ops.values())
    hints = ", ".join(f"{k}={v}" for k, v in sorted(f["hints"].items())) or "none reported"
    if f["hints_differ"]:
        hints += " (ranks differ: the lowest rank's)"
    said = {"write": (_by_kind(ops, "writes"), writes), "read": (_by_kind(ops, "reads"), reads)}
    return [("ranks", _ranks(f["ranks"])), *_moved(f, said), ("hints", hints)]


def _moved(f: dict[str, Any], said: dict[str, tuple[str, int]]) -> Rows:
    """A layer's writes and reads (said: what -> (its calls as text, their number)), then their sizes."""
    rows = [
        (f"{what}s", f"{text}: {human_bytes(f[BYTES[what]])}, mean {_mean(f[BYTES[what]], n)}")
        for what, (text, n) in said.items()
    ]
    return rows + [(f"{what} sizes", _sizes(f.get("access_sizes"), what)) for what in said]


def posix_level(f: dict[str, Any]) -> Rows:
    said = {
        what: (f"{f[what + 's']} by ranks {_ranks(f[RANKS[what]])}", f[what + "s"])
        for what in ("write", "read")
    }
    return [
        *_moved(f, said),
        ("not aligned", f"{f['file_not_aligned']} of {f['reads'] + f['writes']} "
                        f"(file system {f['fs_type'] or '?'})"),
        ("time", f"write {f['write_time_s']:.3f} s, read {f['read_time_s']:.3f} s, "
                 f"meta {f['meta_time_s']:.3f} s"),
    ]  # fmt: skip


# Top to bottom: (the key under `layers`, the name shown, the renderer of one file's entry).
LEVELS: tuple[tuple[str, str, Callable[[dict[str, Any]], Rows]], ...] = (
    ("hdf5", "HDF5", hdf5_level),
    ("pnetcdf", "PnetCDF", pnetcdf_level),
    ("mpiio", "MPI-IO", mpiio_level),
    ("posix_files", "POSIX", posix_level),
)


def _became(mpi: dict[str, Any], posix: dict[str, Any] | None, what: str) -> str | None:
    """ "N collective MPI-IO writes of X became M POSIX writes of Y by K ranks: …" for writes or reads."""
    ops = mpi["ops"]
    coll = ops["collective"][f"{what}s"] + ops["split collective"][f"{what}s"]
    total = sum(v[f"{what}s"] for v in ops.values())
    if not total:
        return None
    moved = mpi[BYTES[what]]
    kinds = f" ({coll} collective, {total - coll} independent or non-blocking)" if 0 < coll < total else ""
    kind = "collective " if coll == total else "" if coll else "independent "
    count = f"{total} {kind}MPI-IO {what}s{kinds}"
    mpi_ranks = len(mpi["kind_ranks"].get("collective", [])) or len(mpi["ranks"])
    head = f"{count} of {_mean(moved, total)} on average by {len(mpi['ranks'])} rank(s)"
    if posix is None:
        return f"{head}: no POSIX record of the file beneath."
    n = posix[f"{what}s"]
    ranks = posix[RANKS[what]]
    tail = f"became {n} POSIX {what}s of {_mean(posix[BYTES[what]], n)} on average by {len(ranks)} rank(s)"
    cb = (mpi.get("collective_buffering") or {}).get(what)
    if cb:
        verdict = (
            f"collective buffering happened: {cb['posix_ranks']} aggregator rank(s) "
            f"({', '.join(map(str, cb['aggregators']))}) did the {what}s of the {cb['mpiio_ranks']} ranks"
        )
    elif coll:
        verdict = (
            f"no collective buffering showed (as many ranks {PAST[what]} the file through POSIX as made the "
            "collective calls)"
            if len(ranks) >= mpi_ranks
            else "no collective buffering showed"
        )
    else:
        verdict = (
            "no collective buffering: the calls were independent, each reached the file system on its own"
        )
    return f"{head} {tail}: {verdict}."


def _h5_said(h5: dict[str, Any]) -> str:
    ds = h5.get("datasets") or []
    writes, reads = sum(d["writes"] for d in ds), sum(d["reads"] for d in ds)
    coll = sum(d["collective"]["writes"] + d["collective"]["reads"] for d in ds)
    return (
        f"HDF5: {writes} H5Dwrite and {reads} H5Dread calls on {len(ds)} dataset(s), {coll} of them "
        "collective."
    )


def _nc_said(nc: dict[str, Any]) -> str:
    vs = nc.get("variables") or []
    puts = sum(sum(v["writes"].values()) for v in vs)
    gets = sum(sum(v["reads"].values()) for v in vs)
    coll = sum(v["writes"].get("collective", 0) + v["reads"].get("collective", 0) for v in vs)
    return f"PnetCDF: {puts} put and {gets} get calls on {len(vs)} variable(s), {coll} of them collective."


IDLE = {
    "reads": "read sizes",
    "writes": "write sizes",
    "H5Dread": "",
    "H5Dwrite": "",
    "put calls": "",
    "get calls": "",
}


def _drop_idle(rows: Rows) -> Rows:
    """Rows of reads (writes) of a layer that made none are left out: a written file shows its writes."""
    gone = {k for k, v in rows if k in IDLE and (v == "0" or v.startswith(("0 ", "0:")))}
    gone |= {IDLE[k] for k in gone}
    return [(k, v) for k, v in rows if k not in gone]


def stacks(layers: dict[str, Any]) -> list[Stack]:
    """One stack per file of a layer above POSIX, by path."""
    by_layer: dict[str, dict[str, dict[str, Any]]] = {
        key: {e["path"]: e for e in layers.get(key) or [] if isinstance(e, dict) and "path" in e}
        for key, _, _ in LEVELS
    }
    upper = sorted({p for key, _, _ in LEVELS[:-1] for p in by_layer[key]})
    out = []
    for path in upper:
        levels = [
            Level(name, _drop_idle(render(by_layer[key][path])))
            for key, name, render in LEVELS
            if path in by_layer[key]
        ]
        said = []
        h5 = by_layer["hdf5"].get(path)
        if h5 is not None:
            said.append(_h5_said(h5))
        nc = by_layer["pnetcdf"].get(path)
        if nc is not None:
            said.append(_nc_said(nc))
        mpi = by_layer["mpiio"].get(path)
        posix = by_layer["posix_files"].get(path)
        if mpi is not None:
            said.extend(s for s in (_became(mpi, posix, w) for w in ("write", "read")) if s)
        elif posix is not None:
            said.append(
                f"Not through MPI-IO: {posix['writes']} POSIX writes and {posix['reads']} reads beneath, no "
                "collective buffering."
            )
        out.append(Stack(path, levels, " ".join(said)))
    return out
