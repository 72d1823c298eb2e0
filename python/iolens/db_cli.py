"""`iolens db …`, `iolens compare` and `iolens report`: options only; the work is in store/ and report/.

Also `autostore()`, which the benchmark, profile and monitor commands call to store what they produced
when a database is configured (store.settings says when).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from rich.console import Console
from rich.text import Text

from iolens import interrupt
from iolens.messages import PROG, error, out_console
from iolens.report.printable import printable
from iolens.store import queries
from iolens.store.db import StoreError, describe
from iolens.store.profiles import document_top_files
from iolens.store.settings import (
    Resolved,
    SettingsError,
    StoreOptions,
    autostore_target,
    resolve,
    take_options,
)
from iolens.store.store import Store, Stored

DB_USAGE = f"""usage: {PROG} db <command> [options]          (every command takes --db PATH_OR_URL)

commands:
  import PATH...     store result documents, IO500 result directories, profile logs, Darshan logs and
                     monitoring sample files (--system NAME tags them); with --sacct: `sacct --parsable2`
                     output (FILE..., - for standard input; or --since 1d to run sacct), the batch
                     system's accounting records [--cluster NAME]
  runs               list runs: [--system S] [--tool T] [--since 7d|2026-05-01] [--limit N] [--json]
  show ID            a run (ID), a profile (profile:ID), or a batch job (job:JOBID, job:CLUSTER:JOBID: its
                     accounting record, profiles and Lustre job_stats side by side) [--json]
  trend              --phase P [--system S] [--tool T] [--config-hash H] [--html FILE]
  regressions        latest run against the median and MAD of earlier like-for-like runs; exit status 0 no
                     regression, 1 one dropped, 2 bad usage or a database error: [--system S]
                     [--threshold 0.10] [--mad 3] [--min-history 3] [--window 20] [--all] [--json]
  jobs               profiles ranked: [--by bytes|meta|small] [--limit N] [--system S] [--since W]
  systems            list systems
  system NAME        create or update a system: [--site S] [--fs-type T] [--fs-version V] [--servers N]
                     [--clients N] [--description D]
  info               where the database is, its schema version and what it holds
  check              look for damage: SQLite's integrity_check, the schema version and every table;
                     exit status 0 no damage, 1 damage found, 2 could not check

The database: --db PATH_OR_URL (a SQLite file, or postgresql://user@host/dbname), else $IOLENS_DB, else the
config file's [store] db, else {{default}}. See docs/db.md.
"""


# `iolens db regressions` exits as diff and grep do: 0 no regression, 1 a regression found, 2 trouble (bad
# usage, or a database that cannot be opened or read).
REGRESSIONS_ERROR = 2
# `iolens db check`: 0 no damage, 1 damage found (or not an iolens database), 2 could not check.
CHECK_ERROR = 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _err(message: str, status: int = 1) -> int:
    """One line whatever the message holds (messages.error escapes what paths and names from files hold)."""
    return error(message, status)


_console = out_console


def _open(opts: StoreOptions, create: bool = False) -> tuple[Store, Resolved]:
    resolved = resolve(opts, fallback_to_default=True)
    assert resolved.url is not None
    if create and resolved.origin == "default":
        Path(resolved.url).parent.mkdir(parents=True, exist_ok=True)
    return Store.open(resolved.url, create=create), resolved


def _since(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return queries.parse_since(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _ref(text: str) -> tuple[str, int]:
    """A run id (`12`, `run:12`) or a profile id (`profile:12`, `p:12`)."""
    kind, _, num = text.rpartition(":")
    kind = {"": "run", "run": "run", "profile": "profile", "p": "profile"}.get(kind, "?")
    if kind == "?" or not num.isdigit():
        raise UsageError(f"{text!r}: expected a run id (12) or a profile id (profile:12)")
    return kind, int(num)


def _check_html_target(out: Path) -> None:
    """--html FILE must name a file that can be written: said before the database is opened."""
    directory = out.parent if str(out.parent) else Path(".")
    if out.is_dir():
        raise UsageError(f"--html {out}: is a directory (name the report's file: {out}/report.html)")
    if not directory.is_dir():
        raise UsageError(f"--html {out}: directory {directory} does not exist")
    if (out.exists() and not os.access(out, os.W_OK)) or not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"--html {out}: cannot be written (permission denied or read-only file system)")


# --- iolens db ------------------------------------------------------------------------------------------


def _cmd_import_sacct(args: argparse.Namespace, opts: StoreOptions) -> int:
    """`iolens db import --sacct FILE...` (`-`: standard input), or with --since and no file, sacct run for
    the jobs since then: every file read first (a bad line refuses all, nothing stored)."""
    from iolens.site import sacct
    from iolens.store import sched_jobs

    reads = []
    if not args.paths:
        if args.since is None:
            raise UsageError("import --sacct: name FILE... (sacct --parsable2 output, - for standard input), "
                             "or --since 1d|2026-11-01 to run sacct")  # fmt: skip
        since = _since(args.since)
        assert since is not None
        try:
            reads.append(("sacct", sacct.run_sacct(since)))
        except sacct.SacctError as exc:
            raise StoreError(f"{exc} (nothing stored)") from None
    elif args.since is not None:
        raise UsageError("--since: only without FILE (it runs sacct)")
    for path in args.paths:
        try:
            if path == "-":
                reads.append((path, sacct.parse(sys.stdin, where="standard input")))
            else:
                reads.append((path, sacct.read_file(path)))
        except sacct.SacctError as exc:
            raise UsageError(f"{exc} (nothing stored)") from None
    store, _ = _open(opts, create=True)
    with store:
        for path, read in reads:
            for job in read.jobs:
                job.cluster = args.cluster or job.cluster
            new, updated, same = sched_jobs.put_jobs(store.db, read.jobs)
            skipped = f"; {read.steps} step lines skipped" if read.steps else ""
            print(
                printable(
                    f"{path}: {len(read.jobs)} jobs: {new} new, {updated} updated, {same} unchanged{skipped}"
                )
            )
    return 0


def _cmd_import(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.store.importer import import_paths

    if args.sacct:
        return _cmd_import_sacct(args, opts)
    if args.cluster or args.since:
        raise UsageError(f"{'--cluster' if args.cluster else '--since'}: only with --sacct")
    if not args.paths:
        raise UsageError("import: name PATH...")
    store, resolved = _open(opts, create=True)
    with store:
        outcomes = import_paths(store, args.paths, system=resolved.system)
    console = _console()
    failed = 0
    for o in outcomes:
        if not o.ok:
            failed += 1
            _err(f"{o.error} (nothing stored)")
            continue
        assert o.stored is not None
        s = o.stored
        what = {"run": f"run {s.id}", "profile": f"profile:{s.id}", "samples": f"sample import {s.id}"}[
            s.kind
        ]
        detail = f" ({s.detail})" if s.detail else ""
        msg = f"{o.path}: stored as {what}{detail}" if s.new else f"{o.path}: already stored as {what}"
        console.print(Text(printable(msg)), soft_wrap=True)
    if not outcomes:
        return _err("nothing to import")
    return 1 if failed else 0


def _cmd_runs(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.report import text

    store, _ = _open(opts)
    with store:
        runs = queries.list_runs(store.db, opts.system, args.tool, _since(args.since), args.limit)
        if args.json:
            print(json.dumps(runs, indent=1))
            return 0
        phases: dict[int, list[dict[str, Any]]] = {}
        for p in queries.phases_of(store.db, [r["id"] for r in runs]):
            phases.setdefault(p["run_id"], []).append(p)
    console = _console()
    if not runs:
        console.print("no runs" + (" matching" if opts.system or args.tool or args.since else ""))
        return 0
    console.print(text.runs_table(runs, phases))
    return 0


def _cmd_show(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.report import text

    if args.id.startswith("job:"):
        return _show_job(args.id[4:], args.json, opts)
    kind, num = _ref(args.id)
    store, _ = _open(opts)
    with store:
        if kind == "run":
            run = queries.get_run(store.db, num, document=args.json)
            if args.json:
                run["document"] = queries.stored_json(store.db, run["document"], f"run {num}'s document")
                print(json.dumps(run, indent=1))
                return 0
            _console().print(text.run_view(run))
            return 0
        prof = queries.get_profile(store.db, num)
        if args.json:
            print(json.dumps(prof, indent=1))
            return 0
        top = document_top_files(prof.get("document") or {}, "top_files_by_bytes")
        if top is None:
            top = queries.profile_files(store.db, num, "bytes", limit=10)
    _console().print(text.profile_view(prof, top))
    return 0


def _show_job(ref: str, as_json: bool, opts: StoreOptions) -> int:
    """A batch job: its accounting record, its profiles and its Lustre job_stats, and where they disagree."""
    from iolens.site import compare
    from iolens.store import sched_jobs

    if not ref:
        raise UsageError("job:: name a job id (job:1234, job:CLUSTER:1234)")
    store, _ = _open(opts)
    with store:
        try:
            job = sched_jobs.get_job(store.db, ref)
        except queries.NotFound as exc:
            if "several clusters" in str(exc):
                raise UsageError(str(exc)) from None
            job = None
        job_id = job["job_id"] if job else ref.rpartition(":")[2]
        ids = sched_jobs.job_profile_ids(store.db, job["cluster"] if job else None, job_id, None)
        if job is None and not ids:
            raise queries.NotFound(f"no job {ref}: no accounting record and no profile with that job id")
        view = compare.overview(store.db, job, ids, job_id)
    if as_json:
        view["profiles"] = [{k: v for k, v in p.items() if k != "document"} for p in view["profiles"]]
        print(json.dumps(view, indent=1, default=str))
        return 0
    for line in compare.text_lines(view):
        print(printable(line))
    return 0


def _cmd_trend(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.report import text

    if args.html:
        _check_html_target(Path(args.html))
    store, _ = _open(opts)
    with store:
        rows = queries.trend(store.db, args.phase, opts.system, args.tool, args.config_hash)
        if not rows:
            known = queries.phase_names(store.db, opts.system)
            hint = f" (phases stored: {', '.join(known[:30])})" if known else ""
            return _err(
                f"no values of phase {args.phase!r}" + (f" on {opts.system}" if opts.system else "") + hint
            )
        if args.html:
            from iolens.report import html

            html.write_trend_report(store, Path(args.html), args.phase, opts.system, rows)
    _console().print(text.trend_view(rows, args.phase, opts.system))
    if args.html:
        print(f"report: {printable(args.html)}")
    return 0


def _cmd_regressions(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.report import text

    try:
        store, _ = _open(opts)
        with store:
            # The nightly health check: damage anywhere in the file is trouble (2), not "no regression".
            store.db.check_damage()
            checks = queries.regressions(
                store.db, args.threshold, args.mad, args.min_history, args.window, opts.system
            )
    except StoreError as exc:
        # Status 1 means "a regression": a nightly job must be able to tell that from "could not check".
        return _err(str(exc), REGRESSIONS_ERROR)
    if args.json:
        print(json.dumps([dict(c.__dict__, ratio=c.ratio) for c in checks], indent=1))
    else:
        _console().print(text.regressions_view(checks, args.all, args.min_history))
    return 1 if any(c.regression for c in checks) else 0


def _cmd_jobs(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.report import text

    store, _ = _open(opts)
    with store:
        try:
            rows = queries.jobs(store.db, args.by, args.limit, opts.system, _since(args.since))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if not rows:
        _console().print("no profiles")
        return 0
    _console().print(text.jobs_table(rows, args.by))
    return 0


def _cmd_systems(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.report import text

    store, _ = _open(opts)
    with store:
        rows = queries.list_systems(store.db)
    _console().print(text.systems_table(rows) if rows else "no systems")
    return 0


def _cmd_system(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.store.records import SystemInfo

    store, _ = _open(opts, create=True)
    with store:
        sid = store.set_system(
            SystemInfo(
                args.name,
                args.site,
                args.fs_type,
                args.fs_version,
                args.servers,
                args.clients,
                args.description,
            )
        )
    print(f"system {printable(args.name)} (id {sid})")
    return 0


def _cmd_info(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.store import schema

    store, resolved = _open(opts)
    with store:
        version = schema.current_version(store.db)
        counts = queries.counts(store.db)
    where = printable(describe(resolved.url or ""))
    print(f"database: {where} ({store.db.dialect}; from {printable(resolved.origin)})")
    print(f"schema version: {version}")
    for k, v in counts.items():
        print(f"{k:>14}: {v:,}")
    return 0


def _cmd_check(args: argparse.Namespace, opts: StoreOptions) -> int:
    from iolens.store.check import check

    resolved = resolve(opts, fallback_to_default=True)
    assert resolved.url is not None
    try:
        result = check(resolved.url)
    except StoreError as exc:
        return _err(f"cannot check: {exc}", CHECK_ERROR)
    print(f"database: {printable(result.location)} ({result.dialect}; from {printable(resolved.origin)})")
    version = "-" if result.schema_version is None else str(result.schema_version)
    print(f"schema version: {version}")
    for what in result.checked:
        print(f"checked: {what}")
    for table, n in result.rows.items():
        print(f"{table:>14}: {n:,} rows read")
    if result.ok:
        print("no damage found")
        return 0
    for problem in result.problems:
        print(f"damage: {printable(problem)}")
    return _err(f"{printable(result.location)}: {len(result.problems)} problem(s) found (listed above)", 1)


def _db_parser() -> _Parser:
    p = _Parser(prog=f"{PROG} db", add_help=False)
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    s = sub.add_parser("import")
    s.add_argument("paths", nargs="*")
    s.add_argument("--sacct", action="store_true")
    s.add_argument("--cluster", default="")
    s.add_argument("--since")
    s.set_defaults(func=_cmd_import)
    s = sub.add_parser("runs")
    s.add_argument("--tool")
    s.add_argument("--since")
    s.add_argument("--limit", type=int)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_runs)
    s = sub.add_parser("show")
    s.add_argument("id")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_show)
    s = sub.add_parser("trend")
    s.add_argument("--phase", required=True)
    s.add_argument("--tool")
    s.add_argument("--config-hash")
    s.add_argument("--html")
    s.set_defaults(func=_cmd_trend)
    s = sub.add_parser("regressions")
    s.add_argument("--threshold", type=float, default=0.10)
    s.add_argument("--mad", type=float, default=3.0)
    s.add_argument("--min-history", type=int, default=3)
    s.add_argument("--window", type=int, default=20)
    s.add_argument("--all", action="store_true")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_cmd_regressions)
    s = sub.add_parser("jobs")
    s.add_argument("--by", default="bytes")
    s.add_argument("--limit", type=int, default=20)
    s.add_argument("--since")
    s.set_defaults(func=_cmd_jobs)
    s = sub.add_parser("systems")
    s.set_defaults(func=_cmd_systems)
    s = sub.add_parser("system")
    s.add_argument("name")
    s.add_argument("--site")
    s.add_argument("--fs-type")
    s.add_argument("--fs-version")
    s.add_argument("--servers", type=int)
    s.add_argument("--clients", type=int)
    s.add_argument("--description")
    s.set_defaults(func=_cmd_system)
    s = sub.add_parser("info")
    s.set_defaults(func=_cmd_info)
    s = sub.add_parser("check")
    s.set_defaults(func=_cmd_check)
    return p


def _guarded(run: Callable[[], int]) -> int:
    try:
        return run()
    except (UsageError, SettingsError) as exc:
        return _err(str(exc), 2)
    except StoreError as exc:
        return _err(str(exc), 1)
    except OSError as exc:
        # Writing a report (--html): a full disk, a file that became a directory, permissions.
        return _err(f"{exc.filename or 'cannot write'}: {exc.strerror or exc}", 1)
    except sqlite3.DatabaseError as exc:
        # A driver error no store call turned into a message (read from a cursor by a view): still one line.
        return _err(f"the database cannot be read: {exc}", 1)
    except KeyboardInterrupt as exc:
        # SIGINT, and SIGTERM or SIGHUP (interrupt.Stopped): a transaction not committed is rolled back.
        signum = exc.signum if isinstance(exc, interrupt.Stopped) else 2
        print(f"{PROG}: stopped by {interrupt.signal_name(signum)} (nothing half-stored)", file=sys.stderr)
        return interrupt.exit_status(signum)


def db_main(argv: Sequence[str]) -> int:
    from iolens.store.db import default_location

    def run() -> int:
        opts, rest = take_options(argv)
        if not rest or rest[0] in ("-h", "--help", "help"):
            (sys.stdout if rest else sys.stderr).write(DB_USAGE.replace("{default}", str(default_location())))
            return 0 if rest else 2
        args = _db_parser().parse_args(rest)
        return int(args.func(args, opts))

    return _guarded(run)


# --- iolens compare, iolens report ------------------------------------------------------------------------

COMPARE_USAGE = f"""usage: {PROG} compare RUN_A RUN_B [RUN_C ...] [--db PATH_OR_URL] [--json]
                      [--allow-mixed-cache]

Runs made in different page-cache modes (evict: the cache dropped before reads, iolens's default; keep:
--keep-cache, IOR and the IO500 app) are refused (exit status 2): their read figures are not like-for-like.
--allow-mixed-cache compares them anyway and marks the runs whose mode differs (red, and '*').
"""
REPORT_USAGE = f"usage: {PROG} report ID --html FILE [--db PATH_OR_URL]   (ID: a run id, or profile:ID)\n"


def compare_main(argv: Sequence[str]) -> int:
    from iolens.report import text

    def run() -> int:
        opts, rest = take_options(argv)
        if not rest or rest[0] in ("-h", "--help"):
            (sys.stdout if rest else sys.stderr).write(COMPARE_USAGE)
            return 0 if rest else 2
        p = _Parser(prog=f"{PROG} compare", add_help=False)
        p.add_argument("ids", nargs="+")
        p.add_argument("--json", action="store_true")
        p.add_argument("--allow-mixed-cache", action="store_true")
        args = p.parse_args(rest)
        ids = []
        for i in args.ids:
            kind, num = _ref(i)
            if kind != "run":
                raise UsageError(f"compare: {i} is not a run")
            ids.append(num)
        if len(ids) < 2:
            raise UsageError("compare: expects at least two runs")
        store, _ = _open(opts)
        with store:
            try:
                c = queries.compare(store.db, ids, allow_mixed_cache=args.allow_mixed_cache)
            except queries.MixedCacheModes as exc:
                return _err(f"compare: {exc}; --allow-mixed-cache compares them anyway", 2)
        if args.json:
            from dataclasses import asdict

            keys = ("id", "tool", "system", "started_at", "valid", "cache_mode")
            out = {
                "runs": [
                    {**{k: r[k] for k in keys}, "mixed_cache": m}
                    for r, m in zip(c.runs, c.mixed_cache, strict=True)
                ],
                "phases": {n: [asdict(f) if f else None for f in figs] for n, figs in c.phases.items()},
                "run_differences": c.run_differences,
                "config_differences": c.config_differences,
            }
            print(json.dumps(out, indent=1, default=str))
            return 0
        _console().print(text.comparison_view(c))
        return 0

    return _guarded(run)


def report_main(argv: Sequence[str]) -> int:
    def run() -> int:
        opts, rest = take_options(argv)
        if not rest or rest[0] in ("-h", "--help"):
            (sys.stdout if rest else sys.stderr).write(REPORT_USAGE)
            return 0 if rest else 2
        p = _Parser(prog=f"{PROG} report", add_help=False)
        p.add_argument("id")
        p.add_argument("--html", required=True)
        args = p.parse_args(rest)
        kind, num = _ref(args.id)
        out = Path(args.html)
        _check_html_target(out)
        from iolens.report import html

        store, _ = _open(opts)
        with store:
            if kind == "run":
                html.write_run_report(store, num, out)
            else:
                html.write_profile_report(store, num, out)
        print(f"report: {printable(str(out))}")
        return 0

    return _guarded(run)


# --- storing what a command produced ------------------------------------------------------------------


def autostore(store_opts: StoreOptions, put: Callable[[Store, str | None], Stored]) -> int:
    """Store a command's result when a database is configured: `put(store, system)` writes it. Says on
    standard error where it went; returns 0, or 1 when it could not be stored (said why)."""
    try:
        target = autostore_target(store_opts, check=False)
        if target is None:
            return 0
        assert target.url is not None
        with Store.open(target.url, create=True) as store:
            stored = put(store, target.system)
    except (SettingsError, StoreError, ValueError) as exc:
        return _err(f"the result was not stored: {exc}")
    what = {"run": f"run {stored.id}", "profile": f"profile:{stored.id}", "samples": f"{stored.detail}"}[
        stored.kind
    ]
    verb = "stored as" if stored.new else "already stored as"
    if stored.kind == "samples":
        verb = "stored" if stored.new else "already stored:"
    Console(stderr=True, highlight=False).print(
        Text(f"{verb} {what} in {printable(describe(target.url))}", style="dim"), soft_wrap=True
    )
    return 0


def store_profile_logs(store_opts: StoreOptions, logs: Path | list[Path]) -> int:
    """autostore() for the logs an `iolens profile` run wrote, or `iolens profile report` read (a log, a
    directory of logs, or a list of them: one profile per job)."""
    from iolens.profile.darshan_log import is_darshan_log
    from iolens.store import darshan_logs, profiles

    def put(store: Store, system: str | None) -> Stored:
        if isinstance(logs, Path) and logs.is_file() and is_darshan_log(logs):
            return store.put_profile(darshan_logs.profile_record(logs), system)
        stored = [store.put_profile(r, system) for r in profiles.iolens_jobs(logs)]
        return stored[-1]

    return autostore(store_opts, put)


@contextmanager
def monitor_sink(store_opts: StoreOptions) -> Iterator[Callable[[dict[str, Any]], None] | None]:
    """For `iolens monitor`: a callable that stores every sample record (in batches) when a database is
    configured, else None."""
    import socket

    from iolens.store.sample_sink import SampleSink

    try:
        target = autostore_target(store_opts, check=False)
        if target is None:
            yield None
            return
        assert target.url is not None
        store = Store.open(target.url, create=True)
    except (SettingsError, StoreError) as exc:
        _err(f"samples will not be stored: {exc}")
        yield None
        return
    url = target.url

    def stopped(why: str) -> None:
        _err(f"samples are not being stored (the monitor goes on; kept in memory and tried again): {why}")

    def resumed(dropped: int) -> None:
        lost = f" ({dropped} samples beyond what memory keeps were dropped meanwhile)" if dropped else ""
        Console(stderr=True, highlight=False).print(
            Text(f"iolens: samples are stored again{lost}"), soft_wrap=True
        )

    sink = SampleSink(
        store,
        socket.gethostname(),
        on_error=stopped,
        on_resume=resumed,
        reopen=lambda: Store.open(url, create=True),
    )
    try:
        yield sink
    finally:
        try:
            sink.close()
            if sink.stored:
                Console(stderr=True, highlight=False).print(
                    Text(f"stored {sink.stored} samples in {printable(describe(url))}", style="dim"),
                    soft_wrap=True,
                )
            if sink.dropped:
                why = sink.failed or "the database did not answer"
                _err(f"{sink.dropped} samples were not stored: {why}")
        finally:
            try:
                sink.store.close()
            except StoreError:
                pass


def store_document(store_opts: StoreOptions, doc: Any, source_path: str | None = None) -> int:
    """autostore() for a result document (results.Document)."""
    from iolens.store import documents

    return autostore(
        store_opts, lambda store, system: store.put_run(documents.run_record(doc, source_path), system)
    )
