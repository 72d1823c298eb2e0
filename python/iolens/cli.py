"""The `iolens` command: parses iolens's own options and hands everything else to the engine untouched."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from iolens import __version__, fio_client_run, fio_clients, interrupt, ior_script, launch, pipeline
from iolens.engine import EngineNotFound, engine_version, find_engine
from iolens.messages import PROG, error, out_console
from iolens.pipeline import FioOutput, RunOptions
from iolens.report.ior_output import TEXT_FORMATS
from iolens.store.settings import SettingsError, StoreOptions, autostore_target, store_help, take_options

WORKLOADS = ("ior", "mdtest", "md-workbench", "find", "fio")
# The workloads with two text layouts: the classic one of IOR/mdtest and iolens's rich view (--text-format).
TEXT_FORMAT_WORKLOADS = ("ior", "mdtest")

USAGE = f"""usage: {PROG} [--version] <command> [options]

commands:
  ior    IOR-class bandwidth benchmark (`{PROG} ior --help` for its options)
  mdtest mdtest-class metadata benchmark: create, stat, read, remove files and directories
  md-workbench  md-workbench's metadata benchmark: precreate, delete/create/read iterations, cleanup
  find   parallel namespace walk: iolens find DIR [-newer FILE] [-size N[c]] [-name GLOB]
  fio    fio-class I/O: iolens fio JOBFILE... | --name=NAME --rw=randread --bs=4k ... (fio's options)
  io500  the IO500 suite from an IO500 config: iolens io500 CONFIG.ini [--quick] [--dry-run] [--np N]
  monitor  this node's I/O statistics (Linux, NFS, Lustre) live, as JSON lines, for Prometheus:
           iolens monitor [--interval 1s] [--out FILE] [--prometheus PORT] | iolens monitor parse FILE
  profile  run a program under the I/O profiler and report: iolens profile [options] -- CMD ARGS...
           iolens profile report PATH [--json]   (a log, a directory of logs, a Darshan log)
  db       the statistics database: iolens db import|runs|show|trend|regressions|jobs|systems|info
  compare  runs side by side: iolens compare RUN_A RUN_B [RUN_C ...]
  report   a self-contained HTML report: iolens report ID --html FILE
  web      the center's I/O portal on the database: iolens web [--port 8050] | iolens web token add USER
  replay   a profile's I/O as a runnable kernel, run and checked against the original (docs/replay.md):
           iolens replay kernel PROFILE --out K.json | run K.json --dir DIR | check PROFILE --dir DIR
  site     every job of a cluster profiled and stored with its batch record (Slurm, PBS):
           iolens site install|check|sync|epilog   (docs/site.md)

Every command takes --db PATH_OR_URL (or $IOLENS_DB, or the config file): ior, mdtest, find, fio, io500,
profile (and profile report) and monitor store what they produce there when one is configured (tagged
--system NAME; --no-store skips it); db, compare and report read it. See docs/db.md.
"""

IO500_HELP = f"""usage: {PROG} io500 CONFIG.ini [--mode standard|extended] [--quick] [--dry-run] [--np N]
                    [--nodes N] [--launcher local|mpirun|srun] [--launcher-args "STR"] [--json FILE]
                    [--no-live] [--keep-cache]
       {PROG} io500 --verify CONFIG.ini RESULT.txt

Runs the IO500 phases with iolens's ior, mdtest, find and md-workbench workloads (one engine launch per phase)
and writes the IO500 app's result directory (result.txt, result_summary.txt, config.ini, the phases' outputs,
...) plus iolens documents.

  --mode M               standard (default) or extended (adds find-easy, find-hard and md-workbench)
  --quick                a first look: 2 s stonewall and small sizes; never a valid IO500 run
  --dry-run              print every phase's command and parameters; create and run nothing
  --np N                 processes (default 1)
  --nodes N              spread the processes over N nodes (mpirun, srun), as for ior and mdtest
  --launcher L           local (fork on this node, default), mpirun or srun
  --launcher-args "STR"  extra launcher arguments, split like a shell does
  --json FILE            also write the run's iolens document to FILE
  --no-live              no live display while the run goes on
  --keep-cache           keep the page cache before the ior read phases, as the IO500 app does (default:
                         evict each file before its read, so read figures are the storage's); result.txt,
                         result_summary.txt and the document say which
  --monitor[=T]          sample the nodes' I/O statistics during the run, into the document (docs/monitor.md;
                         under mpirun/srun every node, by its local rank 0, into IOLENS_TMPDIR)
  --verify               check the config hash and score hash of RESULT.txt against CONFIG.ini
""" + store_help("the whole run is stored (not by --dry-run, --verify)")

PROFILE_HELP = f"""usage: {PROG} profile [--trace] [--out DIR] [--launcher local|mpirun|srun] [--np N]
                      [--launcher-args "STR"] [--no-report] [--all-files] -- CMD [ARGS...]
       {PROG} profile report PATH [--json] [--all-files]

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
  --all-files            count code and libraries (the loader's files, /usr, /lib*, /etc, site-packages,
                         .py/.pyc, .so) as data in the report; by default they are one line of their own
  --                     everything after it is the command (needed when CMD starts with '-')

  report PATH            the report of one log, of a directory of logs, or of a Darshan log
  report PATH --json     the same as JSON (its structure: docs/profile.md)
  report PATH --all-files  as --all-files above

environment: IOLENS_PROFILE_LIB (the runtime to preload instead of the installed one),
  IOLENS_PROFILE_EXCLUDE (comma-separated path prefixes not recorded; default /proc,/sys,/dev),
  IOLENS_PARALLEL_FS (comma-separated directories whose files the advice takes as on a parallel file system)
""" + store_help("each job of the logs written or reported is stored")

RUN_HELP = """usage: {prog} {workload} [iolens options] [{workload} options]

iolens options (everything else goes to the engine unchanged):
  --np N                 ranks to run (default 1)
  --nodes N              spread the ranks over N nodes (mpirun, srun)
  --launcher L           local (fork on this node, default), mpirun or srun
  --launcher-args "STR"  extra launcher arguments, split like a shell does
  --json FILE            also write the result document (JSON) to FILE
  --no-live              no live progress line while the run goes on
  --text-format=F        classic (the layout IOR and mdtest print, for their parsers), rich (iolens's
                         tables) or auto (the default: classic unless standard output is a terminal)
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

fio's multi-client mode (docs/fio.md, "Multi-client mode"):
  --client=HOST[,HOST...] | --client=FILE [JOBFILE...]
                         one rank on each client's host (--launcher mpirun, the default here, or srun),
                         each running the job files given after its --client (else the common ones);
                         reported per client and "All clients" as fio does. No `fio --server` is needed.
"""

# `iolens ior -f SCRIPT` is read by the front end (ior_script.py): one engine run per test.
IOR_HELP = """
ior script files (as IOR's; docs/ior.md):
  -f SCRIPT              run IOR's script: each RUN between IOR START and IOR STOP is one test, run one after
                         the other (options carry over; the command line's are the first test's); --json FILE
                         writes the list of the tests' documents; --db stores each test as its own run
"""

FIO_VALUED = ("--output-format", "--output", "--per-second-log")
FIO_FORMATS = ("normal", "json", "json+")

# Bad iolens options: reported as `iolens: error: ...` with exit status 2.
UsageError = pipeline.UsageError


_VALUED = ("--np", "--nodes", "--launcher", "--launcher-args", "--json", "--text-format")


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
        opts.np_given = True
    elif name == "--nodes":
        opts.nodes = _positive(name, value)
    elif name == "--launcher":
        if value not in launch.LAUNCHERS:
            raise UsageError(f"--launcher: expected one of {', '.join(launch.LAUNCHERS)}, got {value!r}")
        opts.launcher = value
        opts.launcher_given = True
    elif name == "--launcher-args":
        try:
            opts.launcher_args = shlex.split(value)
        except ValueError as exc:
            raise UsageError(f"--launcher-args: {exc}") from None
    elif name == "--json":
        if not value:
            raise UsageError("--json: expects a file name")
        opts.json = Path(value)
    elif name == "--text-format":
        if value not in TEXT_FORMATS:
            raise UsageError(f"--text-format: expected one of {', '.join(TEXT_FORMATS)}, got {value!r}")
        opts.text_format = value


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


def _show_help(workload: str) -> int:
    print(RUN_HELP.format(prog=PROG, workload=workload))
    if workload == "fio":
        print(f"       {PROG} fio [iolens options] JOBFILE... | --name=NAME --rw=MODE --bs=SIZE ...")
        print(FIO_HELP)
    if workload == "ior":
        print(IOR_HELP)
    try:
        engine = find_engine()
    except EngineNotFound as exc:
        print(f"(the engine's {workload} options cannot be listed: {exc})")
        return 0
    out = subprocess.run([str(engine), workload, "--help"], capture_output=True, text=True, check=False)
    print(f"{workload} options (from {engine.name}):")
    sys.stdout.write(out.stdout or out.stderr)
    return 0


def _run_workload(workload: str, argv: Sequence[str], store: StoreOptions | None = None) -> int:
    from iolens.monitor import attach as monitor_attach

    try:
        monitor_req, argv = monitor_attach.take_option(argv)
        opts = split_args(argv, FIO_VALUED if workload == "fio" else ())
        output = fio_output(opts) if workload == "fio" else None
        if opts.text_format != "auto" and workload not in TEXT_FORMAT_WORKLOADS:
            raise UsageError(f"--text-format: {workload} has one text layout (it applies to ior and mdtest)")
    except (UsageError, monitor_attach.MonitorOptionError) as exc:
        return error(str(exc))
    if opts.help:
        return _show_help(workload)
    if workload == "fio":
        clients = _fio_clients(opts)
        if isinstance(clients, int):
            return clients
        if clients is not None:
            run = pipeline.RunInput(workload, opts, [PROG, workload, *argv], output, store, monitor_req)
            return fio_client_run.run_clients(run, clients)
    if "--check" in opts.engine_args:
        return _check_only(workload, opts)
    typed = [PROG, workload, *argv]
    if workload == "ior":
        try:
            script, base = ior_script.take_script_option(opts.engine_args)
        except ior_script.ScriptError as exc:
            return error(str(exc))
        if script is not None:
            run = pipeline.RunInput(
                workload, replace(opts, engine_args=base), typed, output, store, monitor_req
            )
            return ior_script.run_script(script, run, base)
    run = pipeline.RunInput(workload, opts, typed, output, store, monitor_req)
    return pipeline.run_workload(run)


def _fio_clients(opts: RunOptions) -> fio_clients.ClientPlan | int | None:
    """fio's multi-client mode (--client), None without it, or an exit status (--server, a bad --client)."""
    if fio_clients.wants_server(opts.engine_args):
        return error(fio_clients.SERVER_MESSAGE)
    try:
        return fio_clients.parse(opts.engine_args)
    except fio_clients.ClientError as exc:
        return error(str(exc))


def _check_only(workload: str, opts: RunOptions) -> int:
    """The user asked only for validation: one local engine run, no launcher."""
    try:
        engine = find_engine()
    except EngineNotFound as exc:
        return error(str(exc), 1)
    req = launch.RunRequest(workload, [a for a in opts.engine_args if a != "--check"], np=opts.np)
    checked = launch.precheck(req, engine)
    for line in checked.stderr_tail:
        print(line, file=sys.stderr)
    for msg in checked.errors:
        error(msg)
    if checked.returncode == 0:
        print(f"{PROG}: {workload} options ok")
    return checked.returncode


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
        elif arg in ("--quick", "--dry-run", "--verify", "--no-live", "--keep-cache", "-h", "--help"):
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
            if opts.get("--keep-cache"):
                raise UsageError("io500 --verify: --keep-cache applies to a run, not to checking its files")
            if len(pos) != 2:
                raise UsageError("io500 --verify: expects CONFIG.ini and RESULT.txt")
            return driver.verify_command(pos[0], pos[1], out_console())
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
        problem = pipeline.json_target_problem(json_path) if json_path is not None else None
        if problem is not None:
            raise UsageError(f"--json: {problem}")
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
            keep_cache=bool(opts.get("--keep-cache")),
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
                status = driver.main_run(run_opts, out_console(), err, on_document=docs.append)
            if mon is not None and docs:
                mon.add_to_io500(docs[0], json_path, out_console())
        if docs and store is not None and not pipeline.store_document(store, docs[0]) and status == 0:
            status = 1
        return status
    except (UsageError, monitor_attach.MonitorOptionError) as exc:
        return error(str(exc))
    except driver.DriverError as exc:
        return error(driver.config_error_line(str(exc)), exc.status)


_PROFILE_VALUED = ("--out", "--launcher", "--np", "--launcher-args")


def profile_args(argv: Sequence[str]) -> tuple[str, Any]:
    """`iolens profile`'s arguments: ("help", None), ("report", (PATH, as_json, all_files)) or ("run",
    ProfileRequest).

    iolens's options come first; the command starts after `--` or at the first argument that is not an
    option, and everything from there on is the program's, untouched.
    """
    from iolens.profile.run import ProfileRequest

    args = list(argv)
    if args and args[0] == "report":
        as_json = all_files = False
        paths: list[str] = []
        for a in args[1:]:
            if a == "--json":
                as_json = True
            elif a == "--all-files":
                all_files = True
            elif a in ("-h", "--help"):
                return "help", None
            elif a.startswith("-") and a != "-":
                raise UsageError(
                    f"profile report: unknown option {a!r} (profile report PATH [--json] [--all-files])"
                )
            else:
                paths.append(a)
        if len(paths) != 1:
            raise UsageError("profile report: expects one PATH (a log, or a directory of logs)")
        return "report", (paths[0], as_json, all_files)
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
        elif arg == "--all-files":
            req.all_files = True
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
        return error(str(exc))
    if kind == "help":
        sys.stdout.write(PROFILE_HELP)
        return 0
    if kind == "report":
        path, as_json, all_files = value
        if not os.path.exists(path):
            return error(f"profile report: {path}: no such file or directory")
        status = profile_report.report_command(path, as_json, out_console(), error, all_files)
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
        return profile_run.run_profile(value, out_console(), Console(stderr=True, highlight=False), on_logs)
    except profile_run.ProfileLibNotFound as exc:
        return error(str(exc), 1)
    except profile_run.ProfileRunError as exc:
        return error(str(exc))


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
    """The exit status of `iolens ARGS`. A stop signal (SIGINT, SIGTERM, SIGHUP) ends any command the same
    way: what it was doing is cleaned up, one line says which signal, and the status is 128 + its number (the
    run commands first stop their engine and report: pipeline.py, docs/reliability.md)."""
    try:
        with interrupt.raising():
            args = list(sys.argv[1:] if argv is None else argv)
            early = interrupt.STOP.signum
            if early is not None and not (args[:1] and args[0] in (*WORKLOADS, "io500")):
                # Came while the command was starting (entry.py): nothing was done yet.
                raise interrupt.Stopped(early)
            return _main(args)
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, interrupt.Stopped) else int(signal.SIGINT)
        print(f"{PROG}: stopped by {interrupt.signal_name(signum)}", file=sys.stderr)
        return interrupt.exit_status(signum)


def _main(argv: Sequence[str] | None) -> int:
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
    if command in ("db", "profile") and os.environ.get("IOLENS_PARALLEL_FS"):
        # Read where advice is made (a report, an import): a bad value is said before anything runs.
        from iolens.profile.places import PlacesError, parallel_dirs

        try:
            parallel_dirs()
        except PlacesError as exc:
            return error(str(exc))
    if command in ("db", "compare", "report"):
        from iolens import db_cli

        commands = {"db": db_cli.db_main, "compare": db_cli.compare_main, "report": db_cli.report_main}
        return commands[command](rest)
    if command == "site":
        from iolens.site import command as site_command

        return site_command.main(rest)
    if command == "replay":
        from iolens.replay import command as replay_command

        return replay_command.main(rest)
    if command == "web":
        from iolens.web import command as web_command

        return web_command.main(rest)
    if command in WORKLOADS or command == "io500":
        try:
            store, rest = take_options(rest)
            if not _asks_help(rest):
                autostore_target(store)  # a bad config file is said before anything runs
        except SettingsError as exc:
            return error(str(exc))
        with interrupt.STOP.handling():
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
            return error(str(exc))
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
            return error(str(exc))
        if asks_help:
            return monitor_command.main(rest)
        if rest[:1] == ["parse"]:
            if store != StoreOptions():
                return error(
                    "monitor parse: stores nothing (it shows what the parsers read from a file): --db, "
                    "--system and --no-store do not apply (to store a sample stream: iolens db import FILE)"
                )
            return monitor_command.main(rest)
        with db_cli.monitor_sink(store) as sink:
            return monitor_command.main(rest, sink)
    sys.stderr.write(USAGE)
    return error(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(main())
