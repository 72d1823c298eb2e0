"""A Lustre parameter tree made of the tests/data/lustre samples, for the Prometheus tests: an OSS (obdfilter
stats and job_stats, osd brw_stats), an MDS (md_stats) and a client (llite stats, osc and mdc rpc_stats), read
with `--lustre-root` or LustreCollector.

`advance` rewrites the tree with every count multiplied by a whole factor, as Lustre would print the files
after more I/O of the same kind: the same layout, the same percentages (Lustre's `count * 100 / total` of k
times both is unchanged), so every rate taken between two versions is proportional to the sample's counts."""

from __future__ import annotations

import os
import re
from pathlib import Path

from .monitor_helpers import sample_text

FILES = {
    "obdfilter/lfs-OST0000/stats": "obdfilter-export-stats-2.12.txt",
    "obdfilter/lfs-OST0000/job_stats": "ost-job_stats-2.12.txt",
    "osd-ldiskfs/lfs-OST0000/brw_stats": "osd-ldiskfs-brw_stats-2.15.txt",
    "mdt/lfs-MDT0000/md_stats": "mdt-md_stats-old.txt",
    "llite/lfs-ffff88/stats": "llite-stats-2.14.txt",
    "osc/lfs-OST0000-osc-ffff88/rpc_stats": "osc-rpc_stats-2.17.txt",
    "mdc/lfs-MDT0000-mdc-ffff88/rpc_stats": "mdc-rpc_stats-2.15.txt",
}
# An MDT's job_stats, for the tests that need per-job metadata operations.
MDT_JOBS = {"mdt/lfs-MDT0000/job_stats": "mdt-job_stats-2.12.txt"}


def texts(files: dict[str, str] = FILES) -> dict[str, str]:
    """{path in the tree: text} as the files are read from Lustre (a sample saved from lctl without its
    `NAME=` line)."""
    out = {}
    for rel, sample in files.items():
        text = sample_text(sample)
        if text.startswith("llite.") or text.split("\n", 1)[0].endswith("="):
            text = text.split("\n", 1)[1]
        out[rel] = text
    return out


def lustre_tree(root: Path, files: dict[str, str] = FILES) -> Path:
    for rel, text in texts(files).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def _times(space: str, digits: str, k: int) -> str:
    """A printed count times k, in the same field width where it fits (printf's `%10lu` pads to 10), never
    run into the text before it."""
    new = str(int(digits) * k)
    return " " * max(len(space) + len(digits) - len(new), 1 if space else 0) + new


_COUNT = re.compile(r"( *)(\d+)")
# A table row: `4K:` then, per column, a count and its two percentages (columns split by `|`).
_ROW = re.compile(r"^(\d+[KMG]?:\t*)(.*)$")
# A stats line: NAME COUNT samples [unit], then min max sum sumsq for the counters that keep them.
_STATS = re.compile(r"^(\S+ +)(\d+)( samples \[\w+\])((?: +\d+)*)$")
# A job_stats counter: { samples: N, unit: U, min: .., max: .., sum: .., sumsq: .. }.
_JOB_FIELD = re.compile(r"((?:samples|sum|sumsq):)( *)(\d+)")


def _scaled_line(line: str, k: int) -> str:
    m = _ROW.match(line)
    if m:
        columns = m.group(2).split("|")
        return m.group(1) + "|".join(
            _COUNT.sub(lambda c: _times(c.group(1), c.group(2), k), col, count=1) for col in columns
        )
    m = _STATS.match(line)
    if m:
        rest = m.group(4).split(" ")
        numbers = [i for i, w in enumerate(rest) if w]
        for i in numbers[2:]:  # sum and sumsq; min and max stay
            rest[i] = str(int(rest[i]) * k)
        return m.group(1) + str(int(m.group(2)) * k) + m.group(3) + " ".join(rest)
    return _JOB_FIELD.sub(lambda j: j.group(1) + _times(j.group(2) or " ", j.group(3), k), line)


def scaled(text: str, k: int) -> str:
    """A stats, md_stats, job_stats, rpc_stats or brw_stats text with every count (and sum) times k; minima,
    maxima, header gauges and times stay."""
    return "".join(
        _scaled_line(line.rstrip("\n"), k) + ("\n" if line.endswith("\n") else "")
        for line in text.splitlines(keepends=True)
    )


def advance(root: Path, k: int, files: dict[str, str] = FILES) -> None:
    """Rewrite the tree's files with every count k times the sample's, each replaced whole (rename), so that
    a reader never sees half a file."""
    for rel, text in texts(files).items():
        path = root / rel
        tmp = path.with_name(path.name + ".new")
        tmp.write_text(scaled(text, k))
        os.replace(tmp, path)
