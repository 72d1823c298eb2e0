"""The Lustre collector: finds the statistics files the way `lctl get_param` does and reads them each
interval, or runs `lctl get_param` when asked (or when the files are not visible but lctl is there).

The reading is {parameter name: {kind, component, target[, nid | service], ...what its parser read}}.
Parameters are looked for again every `rediscover_s` seconds (targets mount and unmount, clients connect)
and after a file vanished. A root that may not be searched (debugfs without root) and a parameter file that
may not be read are kept in `unreadable` with the reason and reported once by the sampler; such a file is not
read again, and a root is looked at again only at the next rediscovery (permissions do not change from one
sample to the next, and a re-scan each interval would cost every sample).
"""

from __future__ import annotations

import shutil
import subprocess
import time

from iolens.monitor.common import TEXT_ERRORS, Collector, SourceUnavailable, Tree, Unreadable, read_file
from iolens.monitor.lustre import params, parse

MODES = ("auto", "files", "lctl")
# Job ids remembered per job_stats to know one that comes back; past this many the memory starts again.
SEEN_JOBS_MAX = 1_000_000


class LustreCollector(Collector):
    name = "lustre"
    gauges = frozenset({"snapshot_time", "start_time", "elapsed_time", "min", "max", "bytes"})
    gauge_nodes = frozenset({"values"})
    # Lustre leaves out counters with no samples, and jobs appear: a new key counted from zero.
    new_from_zero = True

    def __init__(
        self,
        mode: str = "auto",
        roots: tuple[str, ...] = params.ROOTS,
        exports: bool = False,
        lctl: str = "lctl",
        rediscover_s: float = 30.0,
    ) -> None:
        super().__init__()
        if mode not in MODES:
            raise ValueError(f"lustre mode {mode!r}: expected one of {', '.join(MODES)}")
        self.mode = mode
        self.roots = roots
        self.patterns = dict(params.PATTERNS)
        if exports:
            self.patterns.update(params.EXPORT_PATTERNS)
        self.lctl = lctl
        self.rediscover_s = rediscover_s
        self.files: dict[str, str] = {}
        self._found_at: float | None = None
        self.using = ""
        # Every job id each job_stats listed so far (reappeared()); forgotten past SEEN_JOBS_MAX.
        self._seen_jobs: dict[str, set[str]] = {}

    def reappeared(self, prev: Tree | None, cur: Tree) -> list[str]:
        """`lustre.PARAM.jobs.ID` of each job that is back in a job_stats after it was gone from it (Lustre
        dropped it after job_cleanup_interval of inactivity; its counters start again from zero). Set
        operations over the job ids: a server lists tens of thousands."""
        out: list[str] = []
        for name, entry in cur.items():
            if entry.get("kind") != "job_stats":
                continue
            jobs = entry.get("jobs", {}).keys()
            seen = self._seen_jobs.get(name)
            if seen is None or len(seen) > SEEN_JOBS_MAX:
                seen = self._seen_jobs[name] = set()
            if prev is not None:  # (none after the source was unavailable: nothing is known of the gap)
                before = prev.get(name, {}).get("jobs", {}).keys()
                back = (jobs - before) & seen
                out.extend(f"{self.name}.{name}.jobs.{job}" for job in sorted(back))
            seen.update(jobs)
        return out

    def describe(self) -> str:
        if self.using == "lctl":
            return f"{self.lctl} get_param " + " ".join(self.patterns)
        return f"{len(self.files)} parameter(s) under " + ", ".join(self.roots)

    def _discover(self) -> None:
        now = time.monotonic()
        if self._found_at is not None and now - self._found_at < self.rediscover_s:
            return
        self._found_at = now
        self.files = {}
        if self.mode != "lctl":
            for root, why in params.denied_roots(self.roots).items():
                self.unreadable.setdefault(root, why)
            found = params.find(self.patterns, self.roots)
            self.files = {name: path for name, path in found.items() if name not in self.unreadable}
        if self.files:
            self.using = "files"
        elif self.mode != "files" and shutil.which(self.lctl) is not None:
            self.using = "lctl"
        else:
            self.using = ""

    def _entry(self, name: str, text: str) -> Tree:
        kind = params.kind_of(name)
        data, skipped = parse(kind, text)
        self.skipped += skipped
        entry: Tree = {"kind": kind, **params.describe(name)}
        entry.update(data)
        return entry

    def read(self) -> Tree:
        self._discover()
        if self.using == "files":
            return self._read_files()
        if self.using == "lctl":
            return self._read_lctl()
        if self.unreadable:
            raise SourceUnavailable(self._denied())
        where = ", ".join(self.roots)
        hint = "" if self.mode == "files" else " and no lctl on PATH"
        raise SourceUnavailable(
            f"no Lustre statistics under {where}{hint} (no Lustre here, or client stats in debugfs need root)"
        )

    def _denied(self) -> str:
        return "nothing readable: " + "; ".join(f"{part}: {why}" for part, why in self.unreadable.items())

    def _read_files(self) -> Tree:
        out: Tree = {}
        gone = False
        for name, path in list(self.files.items()):
            try:
                text = read_file(path)
            except Unreadable as exc:
                self.unreadable[name] = str(exc)
                del self.files[name]
                continue
            except SourceUnavailable:
                gone = True
                continue
            out[name] = self._entry(name, text)
        if gone:
            self._found_at = None
        if not out:
            raise SourceUnavailable(
                "the Lustre statistics files vanished" if gone or not self.unreadable else self._denied()
            )
        return out

    def _read_lctl(self) -> Tree:
        try:
            proc = subprocess.run(
                [self.lctl, "get_param", *self.patterns],
                capture_output=True,
                text=True,
                errors=TEXT_ERRORS,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self._found_at = None
            raise SourceUnavailable(f"{self.lctl} get_param: {exc}") from None
        out: Tree = {}
        for name, text in params.split_output(proc.stdout):
            if name is not None:
                out[name] = self._entry(name, text)
        if not out:
            self._found_at = None
            err = proc.stderr.strip().splitlines()
            raise SourceUnavailable(
                f"{self.lctl} get_param found no statistics" + (f": {err[0]}" if err else "")
            )
        return out
