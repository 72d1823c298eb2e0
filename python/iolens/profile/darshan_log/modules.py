"""Darshan's PnetCDF records as the modules of an iolens log: one ModuleTable per module and rank, under
Darshan's counter names in iolens's units, so that the report's PnetCDF layer (iolens.profile.pnetcdf) reads
a Darshan log as it reads iolens's own (docs/profile.md, "PnetCDF").

PNETCDF_FILE's records are already the file rows' PNETCDF_FILE_* columns (job.py's FILE_MODULES): a rank's
module is its rows that have any of them. PNETCDF_VAR's records are "FILE:VARIABLE" with the file's record id
beside them: the variable's name is what follows the file's name, the text an iolens log records for it.
"""

from __future__ import annotations

import numpy as np

from iolens.profile.darshan_log import format as fmt
from iolens.profile.darshan_log.reader import DarshanLog
from iolens.profile.reader import FileTable, ModuleTable, Section

# Darshan's module ids are not iolens's: these are iolens's (docs/profile-log.md, "Modules").
FILE_MODULE_ID, VAR_MODULE_ID = 4, 6
# The shape of the common accesses, which iolens does not keep (its ACCESSn_ACCESS/_COUNT it does).
NOT_KEPT = ("_LENGTH_D", "_STRIDE_D")


def _file_table(table: FileTable) -> ModuleTable | None:
    names = [n for n in table.names if n.startswith("PNETCDF_FILE_")]
    if not names or not len(table):
        return None
    values = np.stack([table.column(n) for n in names], axis=1)
    rows = np.flatnonzero(values.any(axis=1))
    if not rows.size:
        return None
    merges = tuple(table_merge(n) for n in names)
    return ModuleTable(
        name="PNETCDF_FILE",
        module_id=FILE_MODULE_ID,
        section=Section(tuple(names), merges),
        paths=[table.paths[i] for i in rows.tolist()],
        values=values[rows],
        contributions=np.ones(rows.size, dtype=np.uint32),
        texts=[{} for _ in range(rows.size)],
    )


def table_merge(name: str) -> str:
    from iolens.profile.darshan_log.job import merge_of  # job.py imports this module

    return merge_of(name)


def _var_table(log: DarshanLog, rank: int) -> ModuleTable | None:
    from iolens.profile.darshan_log.job import LEFT_OUT, _convert

    records = log.records.get(fmt.PNETCDF_VAR)
    if records is None:
        return None
    mine = np.flatnonzero(records.ranks == rank)
    if not mine.size:
        return None
    layout = records.module.layout
    names = [n for n in layout.counters + layout.fcounters if not any(x in n for x in (*LEFT_OUT, *NOT_KEPT))]
    values = np.stack([_convert(n, records.column(n)[mine], records) for n in names], axis=1)
    paths, texts = [], []
    for i in mine.tolist():
        name = log.names.get(int(records.ids[i]), f"(Darshan record {int(records.ids[i]):016x}: no name)")
        file = log.names.get(int(records.file_rec_ids[i])) if records.file_rec_ids is not None else None
        var = name[len(file) + 1 :] if file and name.startswith(file + ":") else ""
        paths.append(name)
        texts.append({"variable": var} if var else {})
    return ModuleTable(
        name="PNETCDF_VAR",
        module_id=VAR_MODULE_ID,
        section=Section(tuple(names), tuple(table_merge(n) for n in names)),
        paths=paths,
        values=values,
        contributions=np.ones(mine.size, dtype=np.uint32),
        texts=texts,
    )


def pnetcdf_modules(log: DarshanLog, rank: int, table: FileTable) -> dict[str, ModuleTable]:
    """The PNETCDF_FILE and PNETCDF_VAR modules of one rank (-1: the shared records) of a Darshan log."""
    out = {}
    for t in (_file_table(table), _var_table(log, rank)):
        if t is not None:
            out[t.name] = t
    return out
