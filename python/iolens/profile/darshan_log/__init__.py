"""Darshan logs as iolens input: reader.py reads the log's bytes (no darshan library needed), format.py is
what a log holds, job.py makes it an iolens job (report, JSON, advice, store), view.py shows its modules."""

from iolens.profile.darshan_log.job import DarshanJob, darshan_job, load_darshan_job
from iolens.profile.darshan_log.reader import DarshanLog, DarshanLogError, is_darshan_log, read_darshan_log

__all__ = [
    "DarshanJob",
    "DarshanLog",
    "DarshanLogError",
    "darshan_job",
    "is_darshan_log",
    "load_darshan_job",
    "read_darshan_log",
]
