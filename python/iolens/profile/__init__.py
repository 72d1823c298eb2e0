"""The application I/O profiler's Python side: reading the runtime's logs (reader, job), reporting them
(report, advice), and running programs under the runtime (run). The log format: docs/profile-log.md."""

from iolens.profile.reader import ProcessLog, ProfileLogError, read_job, read_log

__all__ = ["ProcessLog", "ProfileLogError", "read_job", "read_log"]
