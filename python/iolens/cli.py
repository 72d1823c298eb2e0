"""The `iolens` command: parses iolens's own options and hands everything else to the engine untouched."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from iolens import __version__, fio_json, fio_log, launch, render, results
from iolens.engine import EngineNotFound, engine_version, find_engine
from iolens.store.settings import SettingsError, StoreOptions, autostore_target, store_help, take_options

WORKLOADS = ("ior", "mdtest", "find", "fio")
PROG = "iolens"

USAGE = f"""usage: {PROG} [--version] <command> [options]

commands:
  ior    IOR-class bandwidth benchmark (`{PROG} ior --help` for its options)
  mdtest mdtest-class metadata benchmark: create, stat, read, remove files and directories
  find   parallel namespace walk: iolens find DIR [-newer FILE] [-size N[c]] [-name GLOB]
  fio    fio-class I/O: iolens fio JOBFILE... | --name=NAME --rw=randread --bs=4k ... (fio's options)
  io500  the IO500 suite from an IO500 config: iolens io500 CONFIG.ini [--quick] [--dry-run] [--np N]
  monitor  this node's I/O statistics (Linux, NFS, Lustre) live, as JSON lines, for Prometheus:
           iolens monitor [--interval 1s] [--out FILE] [--prometheus PORT] | iolens monitor parse FILE
  profile  run a program under the I/O profiler and report: iolens profile [options] -- CMD ARGS...
           iolens profile report PATH [--json]   (a log, or a directory of logs)
  db       the statistics database: iolens db import|runs|show|trend|regressions|jobs|systems|info
  compare  runs side by side: iolens compare RUN_A RUN_B [RUN_C ...]
  report   a self-contained HTML report: iolens report ID --html FILE

Every command takes --db PATH_OR_URL (or $IOLENS_DB, or the config file): ior, mdtest, find, fio, io500,
profile (and profile report) and monitor store what they produce there when one is configured (tagged
--system NAME; --no-store skips it); db, compare and report read it. See docs/db.md.
"""

IO500_HELP = f"""usage: {PROG} io500 CONFIG.ini [--mode standard|extended] [--quick] [--dry-run] [--np N]
                    [--nodes N] [--launcher local|mpirun|srun] [--launcher-args "STR"] [--json FILE]
                    [--no-live]
       {PROG} io500 --verify CONFIG.ini RESULT.txt

Runs the IO500 phases with iolens's ior, mdtest and find workloads (one engine launch per phase) and writes
the IO500 app's result directory (result.txt, result_summary.txt, config.ini, ...) plus iolens documents.

  --mode M               standard (default) or extended (adds find-easy and find-hard)
  --quick                a first look: 2 s stonewall and small sizes; never a valid IO500 run
  --dry-run              print every phase's command and parameters; create and run nothing
  --np N                 processes (default 1)
  --nodes N              spread the processes over N nodes (mpirun, srun), as for ior and mdtest
  --launcher L           local (fork on this node, default), mpirun or srun
  --launcher-args "STR"  extra launcher arguments, split like a shell does
  --json FILE            also write the run's iolens document to FILE
  --no-live              no live display while the run goes on
  --monitor[=T]          sample the nodes' I/O statistics during the run, into the document (docs/monitor.md;
                         under mpirun/srun every node, by its local rank 0, into IOLENS_TMPDIR)
  --verify               check the config hash and score hash of RESULT.txt against CONFIG.ini
""" + store_help("the whole run is stored (not by --dry-run, --verify)")

PROFILE_HELP = f"""usage: {PROG} profile [--trace] [--out DIR] [--launcher local|mpirun|srun] [--np N]
                      [--launcher-args "STR"] [--no-report] -- CMD [ARGS...]
       {PROG} profile report PATH [--json]

Runs CMD with the profiler runtime (libiolens-profile.so) preloaded: every process of the run writes a log
of its I/O into the profile directory; then prints the job's report. The exit status is CMD's (127 or 126,
as a shell says, when it cannot be started). SIGINT, SIGTERM and SIGHUP are passed on to CMD, which is
waited for (and killed after IOLENS_PROFILE_KILL_AFTER seconds, default 8); its logs are still reported.
The guide: docs/profile.md; the log format: docs/profile-log.md.

  --trace                also record every call, in order (IOLENS_TRACE=1)
  --out DIR              where the logs go (default: a new directory iolens-profile-DATE-TIME here)
  --launcher L           local (run CMD here, the default), mpirun or srun
  --np N                 ranks, with mpirun or srun
  --launcher-args "STR"  extra launcher arguments, split like a shell does
  --no-report            write the logs, print no report
  --                     everything after it is the command (needed when CMD starts with '-')

  report PATH            the report of one log or of a directory of logs
  report PATH --json     the same as JSON (its structure: docs/profile.md)

environment: IOLENS_PROFILE_LIB (the runtime to preload instead of the installed one),
  IOLENS_PROFILE_EXCLUDE (comma-separated path prefixes not recorded; default /proc,/sys,/dev)
""" + store_help("each job of the logs written or reported is stored")

RUN_HELP = """usage: {prog} {workload} [iolens options] [{workload} options]

iolens options (everything else goes to the engine unchanged):
  --np N                 ranks to run (default 1)
  --nodes N              spread the ranks over N nodes (mpirun, srun)
  --launcher L           local (fork on this node, default), mpirun or srun
  --launcher-args "STR"  extra launcher arguments, split like a shell does
  --json FILE            also write the result document (JSON) to FILE
  --no-live              no live progress line while the run goes on
  --monitor[=T]          sample this node's I/O statistics every T (default 0.1 s, then 1 s after 10 s)
                         during the run, kept in the document with each phase's window (docs/monitor.md);
                         under mpirun/srun every node too, by its local rank 0, into IOLENS_TMPDIR
  --                     pass every later argument to the engine
  -h, --help             this help, then the engine's
""" + store_help("the result document is stored (a failed run too)")


# `iolens fio` also takes these fio options itself (fio's names): they choose what is written, not what runs.
FIO_HELP = """
fio output options (as fio's; every other option and the job files go to the engine unchanged):
  --output-format=F      normal (fio's report, the default), json (fio's JSON shape, docs/fio.md),
                         json+ (json with the latency bins)
  --output=FILE          write that output to FILE instead of standard output
  --per-second-log FILE  CSV, a row per job, second and direction: job, t_s, direction, ios, bytes,
                         iops, bw_bytes_per_s, p50_ns, p90_ns, p99_ns, p99_9_ns, max_ns
"""

FIO_VALUED = ("--output-format", "--output", "--per-second-log")
FIO_FORMATS = ("normal", "json", "json+")


class UsageError(Exception):
    """Bad iolens options: reported as `iolens: error: ...` with exit status 2."""


@dataclass
class RunOptions:
    np: int = 1
    nodes: int | None = None
    launcher: str = "local"
    launcher_args: list[str] = field(default_factory=list)
    json: Path | None = None
    live: bool = True
    help: bool = False
    engine_args: list[str] = field(default_factory=list)
    # The workload's own iolens options (split_args' `extra`), by name: the last value given.
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FioOutput:
    """What `iolens fio` writes: fio's report or its JSON shape, to standard output or a file, and the
    per-second log."""

    format: str = "normal"
    file: Path | None = None
    per_second_log: Path | None = None


_VALUED = ("--np", "--nodes", "--launcher", "--launcher-args", "--json")


def _positive(opt: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise UsageError(f"{opt}: expected a positive integer, got {value!r}") from None
    if n < 1:
        raise UsageError(f"{opt}: expected a positive integer, got {value!r}")
    return n


def split_args(argv: Sequence[str], extra: Sequence[str] = ()) -> RunOptions:
    """Take iolens's long options out of argv; keep every other argument, in order, for the engine.

    Hand-rolled rather than argparse: IOR's short flags (-o, -t, -N, ...) and fio's --opt=value options must
    reach the engine exactly as typed, and only exact long names (or NAME=VALUE) count as ours, never
    prefixes. `extra` names the workload's own valued options (FIO_VALUED), collected in opts.extra.
    """
    opts = RunOptions()
    i = 0
    args = list(argv)
    while i < len(args):
        arg = args[i]
        if arg == "--":
            opts.engine_args.extend(args[i + 1 :])
            break
        name, eq, inline = arg.partition("=")
        if name in _VALUED or name in extra:
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                raise UsageError(f"{name}: expects a value")
            if name in extra:
                opts.extra[name] = value
            else:
                _set(opts, name, value)
        elif arg == "--no-live":
            opts.live = False
        elif arg in ("-h", "--help"):
            opts.help = True
        else:
            opts.engine_args.append(arg)
        i += 1
    return opts


def _set(opts: RunOptions, name: str, value: str) -> None:
    if name == "--np":
        opts.np = _positive(name, value)
    elif name == "--nodes":
        opts.nodes = _positive(name, value)
    elif name == "--launcher":
        if value not in launch.LAUNCHERS:
            raise UsageError(f"--launcher: expected one of {', '.join(launch.LAUNCHERS)}, got {value!r}")
        opts.launcher = value
    elif name == "--launcher-args":
        try:
            opts.launcher_args = shlex.split(value)
        except ValueError as exc:
            raise UsageError(f"--launcher-args: {exc}") from None
    elif name == "--json":
        if not value:
            raise UsageError("--json: expects a file name")
        opts.json = Path(value)


def _writable(opt: str, value: str) -> Path:
    """A file iolens is to write: named, in a directory that exists (checked before anything runs)."""
    if not value:
        raise UsageError(f"{opt}: expects a file name")
    path = Path(value)
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{opt}: directory {parent} does not exist")
    if path.is_dir():
        raise UsageError(f"{opt}: {path} is a directory")
    return path


def fio_output(opts: RunOptions) -> FioOutput:
    """`iolens fio`'s output options (opts.extra), checked."""
    fmt = opts.extra.get("--output-format", "normal")
    if fmt not in FIO_FORMATS:
        raise UsageError(
            f"--output-format: expected one of {', '.join(FIO_FORMATS)}, got {fmt!r} "
            "(iolens writes fio's normal report and its JSON shapes, not terse or combinations)"
        )
    out = opts.extra.get("--output")
    log = opts.extra.get("--per-second-log")
    return FioOutput(
        format=fmt,
        file=_writable("--output", out) if out is not None else None,
        per_second_log=_writable("--per-second-log", log) if log is not None else None,
    )


def _error(message: str, status: int = 2) -> int:
    Console(stderr=True, highlight=False).print(Text(f"{PROG}: error: {message}"), soft_wrap=True)
    return status


def _out_console() -> Console:
    console = Console(highlight=False)
    if not console.is_terminal:
        # Piped output goes to logs and files: keep the wide tables on one line each.
        console.width = 200
    return console


class _LiveStatus:
    """Renderable that the Live display redraws: spinner, phase, rate so far, elapsed time."""

    def __init__(self, workload: str, label: str) -> None:
        self.t0 = time.monotonic()
        self.workload = workload
        self.label = label
        self.progress: dict[str, Any] | None = None
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> Spinner:
        wall = time.monotonic() - self.t0
        if self.progress is None:
            text = Text(f"{self.label}  {wall:.1f} s", style="dim")
        else:
            text = render.progress_line(self.progress, wall, self.workload)
        self.spinner.update(text=text)
        return self.spinner


def _show_help(workload: str) -> int:
    print(RUN_HELP.format(prog=PROG, workload=workload))
    if workload == "fio":
        print(f"       {PROG} fio [iolens options] JOBFILE... | --name=NAME --rw=MODE --bs=SIZE ...")
        print(FIO_HELP)
    try:
        engine = find_engine()
    except EngineNotFound as exc:
        print(f"(the engine's {workload} options cannot be listed: {exc})")
        return 0
    out = subprocess.run([str(engine), workload, "--help"], capture_output=True, text=True, check=False)
    print(f"{workload} options (from {engine.name}):")
    sys.stdout.write(out.stdout or out.stderr)
    return 0


def _copy_atomic(src: Path, dst: Path) -> None:
    # Same promise as the engine's own --json: a document at the path is always complete.
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def _write_atomic(dst: Path, text: str) -> None:
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, dst)


def _run_workload(workload: str, argv: Sequence[str], store: StoreOptions | None = None) -> int:
    from iolens.monitor import attach as monitor_attach

    try:
        monitor_req, argv = monitor_attach.take_option(argv)
        opts = split_args(argv, FIO_VALUED if workload == "fio" else ())
        output = fio_output(opts) if workload == "fio" else None
    except (UsageError, monitor_attach.MonitorOptionError) as exc:
        return _error(str(exc))
    if opts.help:
        return _show_help(workload)
    if opts.json is not None:
        parent = opts.json.parent if str(opts.json.parent) else Path(".")
        if not parent.is_dir():
            return _error(f"--json: directory {parent} does not exist")
    try:
        engine = find_engine()
    except EngineNotFound as exc:
        return _error(str(exc), 1)

    if "--check" in opts.engine_args:
        # The user asked only for validation: one local engine run, no launcher.
        req = launch.RunRequest(workload, [a for a in opts.engine_args if a != "--check"], np=opts.np)
        checked = launch.precheck(req, engine)
        for line in checked.stderr_tail:
            print(line, file=sys.stderr)
        for msg in checked.errors:
            _error(msg)
        if checked.returncode == 0:
            print(f"{PROG}: {workload} options ok")
        return checked.returncode

    # With MPI launchers rank 0 may run on another node: IOLENS_TMPDIR can name a shared directory.
    tmp_parent = os.environ.get("IOLENS_TMPDIR") or None
    if tmp_parent is not None and not os.path.isdir(tmp_parent):
        return _error(f"IOLENS_TMPDIR={tmp_parent}: not a directory")
    started_at = _utc_now()
    with tempfile.TemporaryDirectory(prefix="iolens-", dir=tmp_parent) as tmp:
        doc_path = Path(tmp) / "result.json"
        req = launch.RunRequest(
            workload=workload,
            args=[*opts.engine_args, "--json", str(doc_path), "--progress", "--quiet"],
            np=opts.np,
            nodes=opts.nodes,
            launcher=opts.launcher,
            launcher_args=opts.launcher_args,
        )
        try:
            req.validate()
        except launch.LaunchError as exc:
            return _error(str(exc))
        try:
            with monitor_attach.attached(monitor_req, workload) as mon:
                if mon is not None and req.uses_mpi:
                    # Every node sampled by its local rank 0, into the run's (shared) temporary directory.
                    mon.sample_nodes(Path(tmp))
                    req = replace(req, wrapper=mon.engine_wrapper())
                outcome = _launch(
                    req,
                    engine,
                    opts.live,
                    mon.on_progress if mon is not None else None,
                    mon.on_engine_exit if mon is not None else None,
                )
        except launch.LaunchError as exc:
            return _error(str(exc))
        except KeyboardInterrupt:
            print(f"{PROG}: interrupted", file=sys.stderr)
            return 128 + signal.SIGINT

        if outcome.returncode == launch.EXIT_BAD_INPUT or outcome.stopped_by_check:
            if outcome.stopped_by_check:
                for line in outcome.stderr_tail:
                    print(line, file=sys.stderr)
            for msg in outcome.errors or [f"the engine refused the options (exit {outcome.returncode})"]:
                _error(msg)
            return outcome.returncode if outcome.returncode > 0 else 1

        if not doc_path.exists():
            return _no_document(outcome, req, opts.json, started_at)
        if mon is not None:
            mon.add_to_file(doc_path)
        return _finish(doc_path, opts, outcome, output, store)


def _finish(
    doc_path: Path,
    opts: RunOptions,
    outcome: launch.RunOutcome,
    output: FioOutput | None = None,
    store: StoreOptions | None = None,
) -> int:
    """Read the run's document, keep a copy (--json), show it with its workload's view (or, for fio, write
    the output asked for); the exit status."""
    try:
        doc = results.load(doc_path)
    except results.ResultError as exc:
        return _error(str(exc), 1)
    if doc.error is not None:
        # First on standard error, one line, before anything else is shown: what a script or a log keeps.
        where = [f"rank {doc.error.rank}"] if doc.error.rank is not None and doc.error.rank >= 0 else []
        where += [f"phase {doc.error.phase}"] if doc.error.phase else []
        _error(doc.error.message + (f" ({', '.join(where)})" if where else ""), 1)
    if opts.json is not None:
        try:
            _copy_atomic(doc_path, opts.json)
        except OSError as exc:
            _error(f"--json: cannot write {opts.json}: {exc.strerror}", 1)
    written = True
    if isinstance(doc, results.FioDocument):
        written = _fio_outputs(doc, output or FioOutput())
    else:
        render.print_document(doc, _out_console())
    # The engine also prints its error on stderr; the line above has said it already.
    for msg in outcome.errors:
        if doc.error is None or msg.strip() != doc.error.message.strip():
            _error(msg, 1)
    if not doc.ok or outcome.returncode != 0:
        status = outcome.returncode if outcome.returncode > 0 else 1
    else:
        status = 1 if doc.verify_errors or not written else 0
    if store is not None and not _store(store, doc.raw) and status == 0:
        status = 1
    return status


def _store(store: StoreOptions, raw: dict[str, Any]) -> bool:
    """Store a result document when a database is configured (docs/db.md); False when that failed (the
    reason is said on standard error)."""
    from iolens import db_cli

    return db_cli.store_document(store, results.parse(raw)) == 0


def _fio_outputs(doc: results.FioDocument, output: FioOutput) -> bool:
    """fio's report or its JSON shape (on standard output or in --output), and the per-second log; False if
    a file could not be written (said on standard error)."""
    ok = True
    if output.format == "normal":
        if output.file is None:
            render.print_document(doc, _out_console())
            text = None
        else:
            buf = io.StringIO()
            render.print_document(doc, Console(file=buf, width=200, highlight=False, force_terminal=False))
            text = buf.getvalue()
    else:
        text = fio_json.dumps(fio_json.to_fio_json(doc, plus=output.format == "json+"))
        if output.file is None:
            sys.stdout.write(text)
            sys.stdout.flush()
    if output.file is not None and text is not None:
        try:
            _write_atomic(output.file, text)
        except OSError as exc:
            ok = not _error(f"--output: cannot write {output.file}: {exc.strerror}", 1)
    if output.per_second_log is not None:
        try:
            _write_atomic(output.per_second_log, fio_log.per_second_csv(doc))
        except OSError as exc:
            ok = not _error(f"--per-second-log: cannot write {output.per_second_log}: {exc.strerror}", 1)
    return ok


def _launch(
    req: launch.RunRequest,
    engine: Path,
    live: bool,
    watch: launch.ProgressCallback | None = None,
    on_exit: launch.ExitCallback | None = None,
) -> launch.RunOutcome:
    err = Console(stderr=True, highlight=False)
    if not (live and err.is_terminal):
        return launch.run(req, engine, on_progress=watch, on_exit=on_exit)
    status = _LiveStatus(req.workload, f"starting {req.workload} with {req.np} rank(s) ({req.launcher})")
    with Live(status, console=err, transient=True, refresh_per_second=8) as display:

        def on_progress(progress: dict[str, Any]) -> None:
            status.progress = progress
            if watch is not None:
                watch(progress)

        def on_line(line: str) -> None:
            # Printed through the Live console so the line lands above the status, not through it.
            display.console.print(Text(line), soft_wrap=True)

        return launch.run(req, engine, on_progress=on_progress, on_line=on_line, on_exit=on_exit)


def _utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _no_document(
    outcome: launch.RunOutcome, req: launch.RunRequest, json_path: Path | None, started_at: str
) -> int:
    """The engine wrote no document (under mpirun/srun a rank died before rank 0 could write one): say so,
    and still leave a failed document at --json, so a script that reads it learns what happened."""
    rc = outcome.returncode
    if rc < 0:
        try:
            how = f"was killed by {signal.Signals(-rc).name}"
        except ValueError:
            how = f"was killed by signal {-rc}"
    else:
        how = f"exited with status {rc}"
    what = f"{req.launcher} {how} and the engine" if req.uses_mpi else f"the engine {how} and"
    message = "; ".join([*outcome.errors, f"{what} wrote no result document"])
    hint = ""
    if req.uses_mpi:
        hint = " (if rank 0 ran on another node, set IOLENS_TMPDIR to a directory all nodes share)"
    status = _error(message + hint, 1)
    if json_path is not None:
        doc = results.failure_document(
            req.workload,
            message,
            outcome.command,
            "mpi" if req.uses_mpi else "local",
            req.np,
            started_at,
            _utc_now(),
        )
        try:
            _write_atomic(json_path, json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            _error(f"--json: cannot write {json_path}: {exc.strerror}", 1)
    return status


@contextlib.contextmanager
def _nodes_tmp(wanted: bool) -> Iterator[Path | None]:
    """A temporary directory for the per-node monitor streams of an MPI io500 run (under IOLENS_TMPDIR, which
    should be a directory every node shares), or None when not wanted."""
    if not wanted:
        yield None
        return
    tmp_parent = os.environ.get("IOLENS_TMPDIR") or None
    if tmp_parent is not None and not os.path.isdir(tmp_parent):
        raise UsageError(f"IOLENS_TMPDIR={tmp_parent}: not a directory")
    with tempfile.TemporaryDirectory(prefix="iolens-", dir=tmp_parent) as tmp:
        yield Path(tmp)


_IO500_VALUED = ("--mode", "--np", "--nodes", "--launcher", "--launcher-args", "--json")


def _io500_args(argv: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """Options and positional arguments of `iolens io500`; hand-rolled so that a value starting with '-'
    (`--launcher-args --oversubscribe`) is taken as the value it is."""
    opts: dict[str, Any] = {}
    positional: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name in _IO500_VALUED:
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                raise UsageError(f"{name}: expects a value")
            opts[name] = value
        elif arg in ("--quick", "--dry-run", "--verify", "--no-live", "-h", "--help"):
            opts[arg] = True
        elif arg.startswith("-") and arg != "-":
            raise UsageError(f"io500: unknown option {arg!r} (see iolens io500 --help)")
        else:
            positional.append(arg)
        i += 1
    return opts, positional


def _io500(argv: Sequence[str], store: StoreOptions | None = None) -> int:
    from iolens.io500 import driver
    from iolens.monitor import attach as monitor_attach

    try:
        monitor_req, io500_argv = monitor_attach.take_option(argv)
        opts, pos = _io500_args(io500_argv)
        if opts.get("-h") or opts.get("--help"):
            sys.stdout.write(IO500_HELP)
            return 0
        if opts.get("--verify"):
            if len(pos) != 2:
                raise UsageError("io500 --verify: expects CONFIG.ini and RESULT.txt")
            return driver.verify_command(pos[0], pos[1], _out_console())
        if len(pos) != 1:
            raise UsageError("io500: expects one CONFIG.ini (see iolens io500 --help)")
        launcher = opts.get("--launcher", "local")
        if launcher not in launch.LAUNCHERS:
            raise UsageError(f"--launcher: expected one of {', '.join(launch.LAUNCHERS)}, got {launcher!r}")
        try:
            launcher_args = shlex.split(opts.get("--launcher-args", ""))
        except ValueError as exc:
            raise UsageError(f"--launcher-args: {exc}") from None
        json_path = Path(opts["--json"]) if "--json" in opts else None
        if json_path is not None:
            parent = json_path.parent if str(json_path.parent) else Path(".")
            if not parent.is_dir():
                raise UsageError(f"--json: directory {parent} does not exist")
        run_opts = driver.DriverOptions(
            config=pos[0],
            mode=opts.get("--mode", "standard"),
            quick=bool(opts.get("--quick")),
            dry_run=bool(opts.get("--dry-run")),
            np=_positive("--np", opts["--np"]) if "--np" in opts else 1,
            nodes=_positive("--nodes", opts["--nodes"]) if "--nodes" in opts else None,
            launcher=launcher,
            launcher_args=launcher_args,
            json=json_path,
            live=not opts.get("--no-live"),
            argv=[PROG, "io500", *argv],
        )
        err = Console(stderr=True, highlight=False)
        docs: list[dict[str, Any]] = []
        if run_opts.dry_run:
            monitor_req = None
        with _nodes_tmp(monitor_req is not None and launcher != "local") as tmp:
            with monitor_attach.attached(monitor_req, "io500") as mon:
                if mon is not None and tmp is not None:
                    # Every node of every phase sampled by its local rank 0 (monitor/node_wrap.py).
                    mon.sample_nodes(tmp)
                    run_opts.engine_wrapper = mon.engine_wrapper
                status = driver.main_run(run_opts, _out_console(), err, on_document=docs.append)
            if mon is not None and docs:
                mon.add_to_io500(docs[0], json_path, _out_console())
        if docs and store is not None and not _store(store, docs[0]) and status == 0:
            status = 1
        return status
    except (UsageError, monitor_attach.MonitorOptionError) as exc:
        return _error(str(exc))
    except driver.DriverError as exc:
        return _error(driver.config_error_line(str(exc)), exc.status)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT


_PROFILE_VALUED = ("--out", "--launcher", "--np", "--launcher-args")


def profile_args(argv: Sequence[str]) -> tuple[str, Any]:
    """`iolens profile`'s arguments: ("help", None), ("report", (PATH, as_json)) or ("run", ProfileRequest).

    iolens's options come first; the command starts after `--` or at the first argument that is not an
    option, and everything from there on is the program's, untouched.
    """
    from iolens.profile.run import ProfileRequest

    args = list(argv)
    if args and args[0] == "report":
        as_json = False
        paths: list[str] = []
        for a in args[1:]:
            if a == "--json":
                as_json = True
            elif a in ("-h", "--help"):
                return "help", None
            elif a.startswith("-") and a != "-":
                raise UsageError(f"profile report: unknown option {a!r} (profile report PATH [--json])")
            else:
                paths.append(a)
        if len(paths) != 1:
            raise UsageError("profile report: expects one PATH (a log, or a directory of logs)")
        return "report", (paths[0], as_json)
    req = ProfileRequest(command=[])
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            req.command = args[i + 1 :]
            break
        name, eq, inline = arg.partition("=")
        if name in _PROFILE_VALUED:
            if eq:
                value = inline
            elif i + 1 < len(args):
                i += 1
                value = args[i]
            else:
                raise UsageError(f"{name}: expects a value")
            if name == "--out":
                if not value:
                    raise UsageError("--out: expects a directory")
                req.out = Path(value)
            elif name == "--np":
                req.np = _positive(name, value)
            elif name == "--launcher":
                if value not in launch.LAUNCHERS:
                    known = ", ".join(launch.LAUNCHERS)
                    raise UsageError(f"--launcher: expected one of {known}, got {value!r}")
                req.launcher = value
            else:
                try:
                    req.launcher_args = shlex.split(value)
                except ValueError as exc:
                    raise UsageError(f"--launcher-args: {exc}") from None
        elif arg == "--trace":
            req.trace = True
        elif arg == "--no-report":
            req.report = False
        elif arg in ("-h", "--help"):
            return "help", None
        elif arg.startswith("-"):
            raise UsageError(f"profile: unknown option {arg!r} (put the command after --)")
        else:
            req.command = args[i:]
            break
        i += 1
    if not req.command:
        raise UsageError("profile: no command to run (iolens profile [options] -- CMD ARGS...)")
    if req.launcher == "local" and req.np != 1:
        raise UsageError("--np: the local launcher runs the command once; use --launcher mpirun or srun")
    return "run", req


def _profile(argv: Sequence[str], store: StoreOptions | None = None) -> int:
    from iolens.profile import report as profile_report
    from iolens.profile import run as profile_run

    try:
        kind, value = profile_args(argv)
    except UsageError as exc:
        return _error(str(exc))
    if kind == "help":
        sys.stdout.write(PROFILE_HELP)
        return 0
    if kind == "report":
        path, as_json = value
        if not os.path.exists(path):
            return _error(f"profile report: {path}: no such file or directory")
        status = profile_report.report_command(path, as_json, _out_console(), _error)
        if status == 0 and store is not None:
            # Stored as `iolens profile` stores what it wrote (docs/db.md); the report is printed first.
            from iolens import db_cli

            status = db_cli.store_profile_logs(store, Path(path))
        return status

    def on_logs(logs: list[Path]) -> None:
        # Stored when a database is configured (docs/db.md); the exit status stays the program's.
        from iolens import db_cli

        if store is not None:
            db_cli.store_profile_logs(store, logs)

    try:
        return profile_run.run_profile(value, _out_console(), Console(stderr=True, highlight=False), on_logs)
    except profile_run.ProfileLibNotFound as exc:
        return _error(str(exc), 1)
    except profile_run.ProfileRunError as exc:
        return _error(str(exc))


def _print_version() -> int:
    print(f"{PROG} {__version__}")
    try:
        print(f"engine: {engine_version()}")
    except EngineNotFound as exc:
        print(f"engine: not available ({exc})")
    return 0


def _asks_help(args: Sequence[str], first_only: bool = False) -> bool:
    """True when the command's own options ask for its help (before any `--`; with first_only, only the
    first argument counts: what follows may be another program's command line, as in `iolens profile`).
    Help is printed without reading the config file, so a broken one does not hide it."""
    own = list(args[:1]) if first_only else list(args[: args.index("--")] if "--" in args else args)
    return "-h" in own or "--help" in own


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write(USAGE)
        return 2
    command, rest = args[0], args[1:]
    if command in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0
    if command in ("--version", "-V", "version"):
        return _print_version()
    if command in ("db", "compare", "report"):
        from iolens import db_cli

        commands = {"db": db_cli.db_main, "compare": db_cli.compare_main, "report": db_cli.report_main}
        return commands[command](rest)
    if command in WORKLOADS or command == "io500":
        try:
            store, rest = take_options(rest)
            if not _asks_help(rest):
                autostore_target(store)  # a bad config file is said before anything runs
        except SettingsError as exc:
            return _error(str(exc))
        return _run_workload(command, rest, store) if command in WORKLOADS else _io500(rest, store)
    if command == "profile":
        try:
            store, rest = take_options(rest, leading_valued=_PROFILE_VALUED)
            if rest[:1] == ["report"]:
                # No program's command line follows: the store options may come anywhere.
                after, tail = take_options(rest[1:])
                store = StoreOptions(
                    after.db or store.db, after.system or store.system, store.no_store or after.no_store
                )
                rest = ["report", *tail]
            if not (_asks_help(rest, first_only=True) or (rest[:1] == ["report"] and _asks_help(rest[1:]))):
                autostore_target(store)
        except SettingsError as exc:
            return _error(str(exc))
        return _profile(rest, store)
    if command == "monitor":
        from iolens import db_cli
        from iolens.monitor import command as monitor_command

        try:
            store, rest = take_options(rest)
            asks_help = _asks_help(rest)
            if rest[:1] != ["parse"] and not asks_help:
                autostore_target(store)
        except SettingsError as exc:
            return _error(str(exc))
        if asks_help:
            return monitor_command.main(rest)
        if rest[:1] == ["parse"]:
            if store != StoreOptions():
                return _error(
                    "monitor parse: stores nothing (it shows what the parsers read from a file): --db, "
                    "--system and --no-store do not apply (to store a sample stream: iolens db import FILE)"
                )
            return monitor_command.main(rest)
        with db_cli.monitor_sink(store) as sink:
            return monitor_command.main(rest, sink)
    sys.stderr.write(USAGE)
    return _error(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(main())
