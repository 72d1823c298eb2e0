"""`iolens site ...`: options only; the work is in the site package's modules (docs/site.md)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from iolens.messages import PROG, error

DEFAULT_DIR = "/etc/iolens"

USAGE = f"""usage: {PROG} site install (--slurm | --pbs) --log-dir DIR --db URL [--dir {DEFAULT_DIR}]
                   [--system NAME] [--cluster NAME] [--off-partitions P1,P2] [--epilog-timeout 5]
                   [--lustre-jobid %j]
       {PROG} site check [--config {DEFAULT_DIR}/iolens-site.conf]
       {PROG} site sync [--config FILE] [--since 1d|2026-11-01] [--no-sacct] [--min-age 60]
       {PROG} site epilog [--pbs] [--config FILE]        (run by the Epilog script / the PBS hook)

Every job profiled on a cluster, stored in the statistics database with its batch system's record
(docs/site.md). install writes the settings, the TaskProlog and Epilog scripts (Slurm) or the hook (PBS) into
--dir, and prints what to add to slurm.conf / qmgr; check checks an installation; sync stores what epilogs
deferred and imports the accounting records of all jobs (sacct).
"""


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(message)


def _config_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", default=f"{DEFAULT_DIR}/iolens-site.conf")


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        (sys.stdout if argv else sys.stderr).write(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], list(argv[1:])
    handlers = {"install": _install, "check": _check, "sync": _sync, "epilog": _epilog}
    if command not in handlers:
        return error(f"site: unknown command {command!r} (install, check, sync, epilog)", 2)
    return handlers[command](rest)


def _install(argv: list[str]) -> int:
    from iolens.profile.run import ProfileLibNotFound, find_profile_lib
    from iolens.site.config import SiteConfig
    from iolens.site.install import install
    from iolens.store.db import StoreError

    p = _Parser(prog=f"{PROG} site install", add_help=False)
    kind = p.add_mutually_exclusive_group(required=True)
    kind.add_argument("--slurm", action="store_true")
    kind.add_argument("--pbs", action="store_true")
    p.add_argument("--log-dir", required=True)
    p.add_argument("--db", required=True)
    p.add_argument("--dir", default=DEFAULT_DIR)
    p.add_argument("--system", default="")
    p.add_argument("--cluster", default="")
    p.add_argument("--off-partitions", default="")
    p.add_argument("--epilog-timeout", type=float, default=5.0)
    p.add_argument("--lustre-jobid", default="%j")
    try:
        a = p.parse_args(argv)
        if not 0.5 <= a.epilog_timeout <= 60:
            raise _Usage(f"--epilog-timeout: expected 0.5..60 seconds, got {a.epilog_timeout:g}")
        log_dir = Path(a.log_dir)
        if not log_dir.is_absolute():
            raise _Usage(f"--log-dir {a.log_dir}: give an absolute path (every node must see the same one)")
        if log_dir.exists() and not log_dir.is_dir():
            raise _Usage(f"--log-dir {a.log_dir}: exists and is not a directory")
        lib = find_profile_lib()
    except _Usage as exc:
        return error(f"site install: {exc}", 2)
    except ProfileLibNotFound as exc:
        return error(f"site install: {exc}", 2)
    cfg = SiteConfig(
        scheduler="slurm" if a.slurm else "pbs", log_dir=log_dir, db=a.db, lib=lib, system=a.system,
        cluster=a.cluster, off_partitions=[x.strip() for x in a.off_partitions.split(",") if x.strip()],
        epilog_timeout_s=a.epilog_timeout, lustre_jobid=a.lustre_jobid,
    )  # fmt: skip
    try:
        lines = install(cfg, Path(a.dir).absolute())
    except (OSError, StoreError) as exc:
        return error(f"site install: {exc}", 1)
    print("\n".join(lines))
    return 0


def _load(
    argv: list[str], prog: str, extra: list[tuple[str, dict[str, object]]]
) -> tuple[argparse.Namespace, object]:
    from iolens.site.config import load

    p = _Parser(prog=f"{PROG} site {prog}", add_help=False)
    _config_arg(p)
    for name, kw in extra:
        p.add_argument(name, **kw)  # type: ignore[arg-type]
    a = p.parse_args(argv)
    return a, load(Path(a.config))


def _check(argv: list[str]) -> int:
    from iolens.site.config import SiteConfigError
    from iolens.site.install import check

    try:
        a, cfg = _load(argv, "check", [])
    except (_Usage, SiteConfigError) as exc:
        return error(f"site check: {exc}", 2)
    ok, bad = check(cfg, Path(a.config).absolute().parent)  # type: ignore[arg-type]
    for line in ok:
        print(f"ok: {line}")
    for line in bad:
        print(f"problem: {line}")
    return 1 if bad else 0


def _sync(argv: list[str]) -> int:
    from iolens.site import sync
    from iolens.site.config import SiteConfigError
    from iolens.site.sacct import SacctError
    from iolens.store import queries
    from iolens.store.db import StoreError

    try:
        a, cfg = _load(argv, "sync", [("--since", {}), ("--no-sacct", {"action": "store_true"}),
                                      ("--min-age", {"type": float, "default": sync.MIN_AGE_S})])  # fmt: skip
        since = queries.parse_since(a.since) if a.since else None
    except (_Usage, SiteConfigError, ValueError) as exc:
        return error(f"site sync: {exc}", 2)
    now = time.time()
    status = 0
    for line in sync.store_pending(cfg, now, a.min_age):  # type: ignore[arg-type]
        print(line)
        status = 1 if "not stored" in line else status
    if not a.no_sacct:
        try:
            print(sync.sync_accounting(cfg, since, now))  # type: ignore[arg-type]
        except (SacctError, StoreError) as exc:
            return error(f"site sync: {exc}", 1)
    return status


def _epilog(argv: list[str]) -> int:
    """Always 0, and said in one line: the Epilog's exit status must never drain a node or fail a job."""
    started = time.monotonic()
    try:
        from iolens.site import epilog
        from iolens.site.config import SiteConfig

        a, cfg = _load(argv, "epilog", [("--pbs", {"action": "store_true"})])
        assert isinstance(cfg, SiteConfig)
        if a.pbs:
            job, node, first = epilog.pbs_job(os.environ)
        else:
            job, node, first = epilog.slurm_job(os.environ, cfg.ask_controller)
        print(epilog.run(cfg, job, node, first, started).line(), flush=True)
    except BaseException as exc:  # noqa: BLE001 - said, never the job's trouble
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} epilog: not run: {exc}", flush=True)
    return 0
