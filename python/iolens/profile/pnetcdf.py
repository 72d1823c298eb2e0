"""The PnetCDF layer of a job (docs/profile.md, "PnetCDF"): each file's PNETCDF_FILE module records and each
variable's PNETCDF_VAR records merged over the job's processes, with the ranks that used them, and what the
layers beneath did to the same file (MPI-IO, POSIX: the records share the file's path).

A variable's records are named "FILE:VARIABLE" (Darshan's record name); the runtime records the variable's
own name beside them (a Darshan log's reader takes it from the record's file), so the file is that name's
prefix. Logs read from Darshan carry the same modules under the same names (darshan_log/modules.py), so
both show the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from iolens.profile.hdf5 import FileObject, LayerFile, file_entries, module_rows, objects_by_file

if TYPE_CHECKING:
    from iolens.profile.job import Job

# How a put or get was made: Darshan's PNETCDF_VAR_{INDEP,COLL,NB}_{READS,WRITES}.
MODES = {"independent": "INDEP", "collective": "COLL", "non-blocking": "NB"}
# The calls per API family and kind: Darshan's PNETCDF_VAR_{PUT,...}_VAR{,1,A,S,M,N,D}.
APIS = ("PUT", "GET", "IPUT", "IGET", "BPUT")
KINDS = ("VAR", "VAR1", "VARA", "VARS", "VARM", "VARN", "VARD")


@dataclass
class PnetcdfVariable(FileObject):
    """One variable over the whole job."""

    def by_mode(self, what: str) -> dict[str, int]:
        """Reads or writes (what) by how they were made: independent, collective, non-blocking."""
        return {label: self.count(f"PNETCDF_VAR_{m}_{what}") for label, m in MODES.items()}

    @property
    def calls(self) -> dict[str, int]:
        """The calls made, by API family and kind ("put_vara": 3), those made only."""
        out = {}
        for api in APIS:
            for kind in KINDS:
                n = self.count(f"PNETCDF_VAR_{api}_{kind}")
                if n:
                    out[f"{api}_{kind}".lower()] = n
        return out

    def to_json(self, shared_file: bool) -> dict[str, Any]:
        """The variable's entry in its file's `variables` (docs/profile.md, "The JSON report")."""
        c = self.count
        writes = self.by_mode("WRITES")
        return {
            "name": self.name,
            "ranks": list(self.ranks),
            "opens": c("PNETCDF_VAR_OPENS"),
            "defs": c("PNETCDF_VAR_DEFS"),
            "reads": self.by_mode("READS"),
            "writes": writes,
            "calls": self.calls,
            "bytes_read": c("PNETCDF_VAR_BYTES_READ"),
            "bytes_written": c("PNETCDF_VAR_BYTES_WRITTEN"),
            "ndims": c("PNETCDF_VAR_NDIMS"),
            "npoints": c("PNETCDF_VAR_NPOINTS"),
            "datatype_size": c("PNETCDF_VAR_DATATYPE_SIZE"),
            "record_variable": bool(c("PNETCDF_VAR_IS_RECORD_VAR")),
            **self.io_json("PNETCDF_VAR"),
            # Independent blocking writes to a file more than one rank opened (0 otherwise): what a rule
            # suggesting the collective (_all) or non-blocking calls would look at.
            "independent_writes_multi_rank": writes["independent"] if shared_file else 0,
        }


@dataclass
class PnetcdfFile(LayerFile):
    """One PnetCDF file over the whole job, with its variables and the layers beneath it."""

    variables: list[PnetcdfVariable]
    beneath: dict[str, dict[str, int]]

    @property
    def shared(self) -> bool:
        """Used by more than one rank, or created/opened on a communicator of more than one process (a Darshan
        log's shared record has rank -1: every rank's)."""
        ranks = set(self.ranks) | {r for v in self.variables for r in v.ranks}
        return len(ranks) > 1 or -1 in ranks or self.count("PNETCDF_FILE_OPEN_COMM_SIZE") > 1

    def to_json(self) -> dict[str, Any]:
        """The file's entry of the JSON report's `layers.pnetcdf` (docs/profile.md, "The JSON report")."""
        c = self.count
        shared = self.shared
        return {
            "path": self.path,
            "ranks": list(self.ranks),
            "multi_rank": shared,
            "creates": c("PNETCDF_FILE_CREATES"),
            "opens": c("PNETCDF_FILE_OPENS"),
            "closes": c("PNETCDF_FILE_CLOSES"),
            "open_comm_size": c("PNETCDF_FILE_OPEN_COMM_SIZE"),
            "mode": c("PNETCDF_FILE_MODE"),
            "redefs": c("PNETCDF_FILE_REDEFS"),
            "enddefs": c("PNETCDF_FILE_ENDDEFS"),
            "indep_data_begins": c("PNETCDF_FILE_BEGIN_INDEPS"),
            "indep_data_ends": c("PNETCDF_FILE_END_INDEPS"),
            "syncs": c("PNETCDF_FILE_SYNCS"),
            "flushes": c("PNETCDF_FILE_FLUSHES"),
            "waits": {
                "independent": c("PNETCDF_FILE_INDEP_WAITS"),
                "collective": c("PNETCDF_FILE_COLL_WAITS"),
                "failures": c("PNETCDF_FILE_WAIT_FAILURES"),
            },
            "bytes_read": c("PNETCDF_FILE_BYTES_READ"),
            "bytes_written": c("PNETCDF_FILE_BYTES_WRITTEN"),
            "meta_time_s": c("PNETCDF_FILE_F_META_TIME") / 1e9,
            "wait_time_s": c("PNETCDF_FILE_F_WAIT_TIME") / 1e9,
            "errors": c("PNETCDF_FILE_ERRORS"),
            "fs_type": self.fs_type,
            "beneath": self.beneath,
            "variables": [v.to_json(shared) for v in self.variables],
        }


def _beneath(job: Job, path: str) -> dict[str, dict[str, int]]:
    """What the MPI-IO and POSIX layers did to the file (every process): the stack under PnetCDF."""
    mpi = next((f for f in job.mpiio if f.path == path), None)
    out: dict[str, dict[str, int]] = {}
    if mpi is not None:
        out["mpiio"] = {
            "reads": sum(v["reads"] for v in mpi.ops.values()),
            "writes": sum(v["writes"] for v in mpi.ops.values()),
            "collective_writes": mpi.collective_writes,
            "collective_reads": mpi.collective_reads,
            "bytes_written": mpi.count("MPIIO_BYTES_WRITTEN"),
            "bytes_read": mpi.count("MPIIO_BYTES_READ"),
        }
    row = job.files.row_of.get(path)
    if row is not None:
        col = job.files.column
        out["posix"] = {
            "reads": int(col("POSIX_READS")[row]),
            "writes": int(col("POSIX_WRITES")[row]),
            "bytes_read": int(col("POSIX_BYTES_READ")[row]),
            "bytes_written": int(col("POSIX_BYTES_WRITTEN")[row]),
        }
    return out


def pnetcdf_files(job: Job) -> list[PnetcdfFile]:
    """Every PnetCDF file of the job (created or opened, or holding a variable used), by path."""
    files = module_rows(job, "PNETCDF_FILE")
    writes = tuple(f"PNETCDF_VAR_{m}_WRITES" for m in MODES.values())
    reads = tuple(f"PNETCDF_VAR_{m}_READS" for m in MODES.values())
    by_file = objects_by_file(module_rows(job, "PNETCDF_VAR"), "variable", PnetcdfVariable, writes, reads)
    return [
        PnetcdfFile(*entry, beneath=_beneath(job, entry[0])) for entry in file_entries(job, files, by_file)
    ]
