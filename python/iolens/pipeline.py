"""Running one workload (ior, mdtest, find, fio): launch → collect → show → store, with the monitor beside it.

The one place that runs a workload for a person: the CLI calls it with parsed options (the web portal and
the site integration are to call it the same way). Stop signals (SIGINT, SIGTERM, SIGHUP) are handled the
same whatever sent them (interrupt.py): the engine stops, removes what it created and writes its document
marked interrupted; it is shown and stored like any other, and the exit status is 128 + the signal's number.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from iolens import atomic, fio_json, fio_log, interrupt, launch, render, results
from iolens.engine import EngineNotFound, find_engine
from iolens.messages import PROG, error, out_console
from iolens.report import ior_output
from iolens.store.settings import StoreOptions

if TYPE_CHECKING:
    from iolens.monitor.attach import RunMonitor


@dataclass
class RunOptions:
    np: int = 1
    nodes: int | None = None
    launcher: str = "local"
    launcher_args: list[str] = field(default_factory=list)
    json: Path | None = None
    live: bool = True
    help: bool = False
    # True when --np was given (an MPI job's rank refuses one that differs from the job's size).
    np_given: bool = False
    # True when --launcher was given (`iolens fio --client` chooses mpirun when it was not).
    launcher_given: bool = False
    engine_args: list[str] = field(default_factory=list)
    # The workload's own iolens options (split_args' `extra`), by name: the last value given.
    extra: dict[str, str] = field(default_factory=dict)
    # --text-format: "classic" (IOR's/mdtest's layout), "rich" (iolens's tables) or "auto" (classic unless
    # standard output is a terminal).
    text_format: str = "auto"
    # One test of an IOR script (-f): IOR's layouts are written once for all its tests (ior_output.show with
    # every document, Test# = index); each test shows only iolens's rich view, when that is the view asked.
    ior_script_test: bool = False

    def classic_text(self) -> bool:
        """Whether the text on standard output is the classic IOR / mdtest layout (--text-format)."""
        return ior_output.wants_classic(self.text_format)


@dataclass(frozen=True)
class FioOutput:
    """What `iolens fio` writes: fio's report or its JSON shape, to standard output or a file, and the
    per-second log."""

    format: str = "normal"
    file: Path | None = None
    per_second_log: Path | None = None


@dataclass(frozen=True)
class RunInput:
    """Everything a run needs besides the workload's own flags: what the user typed (kept in the document
    as its `command`), where the result goes, and the monitor request."""

    workload: str
    opts: RunOptions
    typed: list[str]
    output: FioOutput | None = None
    store: StoreOptions | None = None
    monitor: Any = None  # monitor.attach.MonitorRequest | None


class UsageError(Exception):
    """Options that cannot run together: `iolens: error: ...`, exit status 2, nothing done."""


def job_rank_request(opts: RunOptions, workload: str, args: list[str]) -> launch.RunRequest | None:
    """When this process is itself one rank of an MPI job (`mpirun -np 4 iolens ior ...`, as job scripts
    written for IOR do), the request that runs the engine as that rank; None otherwise."""
    job = launch.mpi_job()
    if job is None or job.size == 1:
        return None
    if opts.launcher != "local":
        raise UsageError(
            f"--launcher {opts.launcher}: this process is already rank {job.rank} of an MPI job "
            f"({job.source}); run `iolens {workload}` without --launcher under it"
        )
    if opts.np_given and job.size is not None and opts.np != job.size:
        raise UsageError(f"--np {opts.np}: the MPI job that started this process has {job.size} ranks")
    return launch.RunRequest(workload=workload, args=args, np=job.size or 1, in_job=job)


def json_target_problem(path: Path) -> str | None:
    """Why the document could not be written at `path` (checked before the run, so a long benchmark does not
    end in "cannot write"), or None."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return f"directory {parent} does not exist"
    if path.is_dir():
        return f"{path} is a directory"
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"{path} cannot be written (permission denied)"
    return None


def run_workload(run: RunInput) -> int:
    """Run it; the exit status (docs/reliability.md)."""
    from iolens.monitor import attach as monitor_attach

    opts = run.opts
    if opts.json is not None:
        problem = json_target_problem(opts.json)
        if problem is not None:
            return error(f"--json: {problem}")
    try:
        engine = find_engine()
    except EngineNotFound as exc:
        return error(str(exc), 1)

    # With MPI launchers rank 0 may run on another node: IOLENS_TMPDIR can name a shared directory.
    tmp_parent = os.environ.get("IOLENS_TMPDIR") or None
    if tmp_parent is not None and not os.path.isdir(tmp_parent):
        return error(f"IOLENS_TMPDIR={tmp_parent}: not a directory")
    started_at = _utc_now()
    with tempfile.TemporaryDirectory(prefix="iolens-", dir=tmp_parent) as tmp:
        doc_path = Path(tmp) / "result.json"
        engine_args = [*opts.engine_args, "--json", str(doc_path), "--progress", "--quiet"]
        try:
            req = job_rank_request(opts, run.workload, engine_args) or launch.RunRequest(
                workload=run.workload,
                args=engine_args,
                np=opts.np,
                nodes=opts.nodes,
                launcher=opts.launcher,
                launcher_args=opts.launcher_args,
            )
            req.validate()
        except (launch.LaunchError, UsageError) as exc:
            return error(str(exc))
        quiet_rank = req.in_job is not None and req.in_job.rank != 0
        try:
            with monitor_attach.attached(None if quiet_rank else run.monitor, run.workload) as mon:
                if mon is not None and req.uses_mpi:
                    # Every node sampled by its local rank 0, into the run's (shared) temporary directory.
                    mon.sample_nodes(Path(tmp))
                    req = replace(req, wrapper=mon.engine_wrapper())
                outcome = _launch(
                    req,
                    engine,
                    opts.live and not quiet_rank,
                    mon.on_progress if mon is not None else None,
                    mon.on_engine_exit if mon is not None else None,
                    quiet=quiet_rank,
                )
        except launch.LaunchError as exc:
            return error(str(exc))

        if not outcome.started:
            return _stopped_before_start(run, req, started_at)
        if quiet_rank:
            # Rank 0 of the job shows, keeps and stores the document and its exit status is the job's (the
            # engine's ranks agree on errors). The others end with 0 after a run or an agreed stop: a non-zero
            # status would make mpirun kill rank 0 before it has shown and stored the result.
            rc = outcome.returncode
            return 0 if rc in (0, 1) else (rc if rc > 0 else 1)
        if req.uses_mpi and not outcome.stopped_by_check and any(tmp in e for e in outcome.errors):
            # Rank 0 ran on a node that does not see this directory (its own /tmp): not the user's options.
            return _no_document(outcome, req, opts.json, started_at, run.typed, mon)
        if (
            outcome.returncode == launch.EXIT_BAD_INPUT and outcome.signal is None
        ) or outcome.stopped_by_check:
            if outcome.stopped_by_check:
                for line in outcome.stderr_tail:
                    print(line, file=sys.stderr)
            for msg in outcome.errors or [f"the engine refused the options (exit {outcome.returncode})"]:
                error(msg)
            return outcome.returncode if outcome.returncode > 0 else 1

        if not doc_path.exists():
            return _no_document(outcome, req, opts.json, started_at, run.typed, mon)
        if mon is not None:
            mon.add_to_file(doc_path)
        return _finish(doc_path, run, outcome)


def _stopped_before_start(run: RunInput, req: launch.RunRequest, started_at: str) -> int:
    """A stop signal came before the engine started: nothing was done; the document says so."""
    signum = interrupt.STOP.signum or 0
    message = f"stopped by {interrupt.signal_name(signum)} before the run started; nothing was done"
    error(message, 1)
    if run.opts.json is not None:
        doc = results.failure_document(
            run.workload,
            message,
            run.typed,
            "mpi" if req.uses_mpi else "local",
            req.np,
            started_at,
            _utc_now(),
        )
        doc["interrupted"] = {"signal": interrupt.signal_name(signum), "phase": None}
        try:
            atomic.write_text(run.opts.json, json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            error(f"--json: cannot write {run.opts.json}: {exc.strerror}", 1)
    return interrupt.exit_status(signum)


def _mark(raw: dict[str, Any], run: RunInput, outcome: launch.RunOutcome) -> None:
    """What the front end adds to the engine's document: the command as the user typed it (the engine's own,
    with its temporary --json path, moves to engine_command) and, for a run stopped by a signal, which."""
    if "engine_command" not in raw:
        raw["engine_command"] = raw.get("command", [])
    raw["command"] = list(run.typed)
    if outcome.signal is not None and not isinstance(raw.get("interrupted"), dict):
        # The engine names the signal itself when it got it; this is for one it never saw (it had finished).
        err = raw.get("error")
        phase = err.get("phase") if isinstance(err, dict) else None
        raw["interrupted"] = {"signal": interrupt.signal_name(outcome.signal), "phase": phase}


def _finish(doc_path: Path, run: RunInput, outcome: launch.RunOutcome) -> int:
    """Read the run's document, keep a copy (--json), show it with its workload's view (or, for fio, write
    the output asked for), store it; the exit status."""
    try:
        raw = results.load(doc_path).raw
        _mark(raw, run, outcome)
        doc = results.parse(raw)
    except results.ResultError as exc:
        return error(str(exc), 1)
    opts = run.opts
    stopped = outcome.signal is not None
    if doc.error is not None:
        # First on standard error, one line, before anything else is shown: what a script or a log keeps.
        where = [f"rank {doc.error.rank}"] if doc.error.rank is not None and doc.error.rank >= 0 else []
        where += [f"phase {doc.error.phase}"] if doc.error.phase else []
        error(doc.error.message + (f" ({', '.join(where)})" if where else ""), 1)
    elif stopped:
        error(f"stopped by {interrupt.signal_name(outcome.signal or 0)}", 1)
    if opts.json is not None:
        try:
            atomic.write_text(opts.json, json.dumps(raw, indent=2) + "\n")
        except OSError as exc:
            error(f"--json: cannot write {opts.json}: {exc.strerror}", 1)
    written = True
    if isinstance(doc, results.FioDocument):
        written = _fio_outputs(doc, run.output or FioOutput())
    elif isinstance(doc, results.MdtestDocument) and opts.classic_text():
        from iolens.report import mdtest_classic

        sys.stdout.write(mdtest_classic.render(doc))
        sys.stdout.flush()
    else:
        written = _show(doc, raw, opts.text_format, opts.ior_script_test)
    # The engine also prints its error on stderr; the line above has said it already.
    for msg in outcome.errors:
        if doc.error is None or msg.strip() != doc.error.message.strip():
            error(msg, 1)
    if not doc.ok or outcome.returncode != 0:
        status = outcome.returncode if outcome.returncode > 0 else 1
    else:
        status = 1 if doc.verify_errors or not written else 0
    if run.store is not None and not store_document(run.store, raw) and status == 0:
        status = 1
    if stopped:
        signum = outcome.signal or 0
        print(
            f"{PROG}: stopped by {interrupt.signal_name(signum)}: the figures above are of the work done "
            "until then; what the run created was removed (unless -k)",
            file=sys.stderr,
        )
        return interrupt.exit_status(signum)
    return status


def _show(doc: results.Document, raw: dict[str, Any], text_format: str, script_test: bool = False) -> bool:
    """Show a run: an ior run in IOR's layouts or the rich view (report/ior_output.py), the others in the rich
    view; False when an output file could not be written."""
    console = out_console()
    if isinstance(doc, results.IorDocument):
        classic = ior_output.wants_classic(text_format)
        if script_test:
            if ior_output.rich_view_shown([raw], classic):
                render.print_document(doc, console)
            return True
        return ior_output.show([raw], classic, lambda: render.print_document(doc, console))
    render.print_document(doc, console)
    return True


def store_document(store: StoreOptions, raw: dict[str, Any]) -> bool:
    """Store a result document when a database is configured (docs/db.md); False when that failed (the
    reason is said on standard error)."""
    from iolens import db_cli

    return db_cli.store_document(store, results.parse(raw)) == 0


def _fio_outputs(doc: results.FioDocument, output: FioOutput) -> bool:
    """fio's report or its JSON shape (on standard output or in --output), and the per-second log; False if
    a file could not be written (said on standard error)."""
    ok = fio_emit(
        output,
        lambda console: render.print_document(doc, console),
        lambda plus: fio_json.to_fio_json(doc, plus=plus),
    )
    if output.per_second_log is not None:
        try:
            atomic.write_text(output.per_second_log, fio_log.per_second_csv(doc))
        except OSError as exc:
            ok = not error(f"--per-second-log: cannot write {output.per_second_log}: {exc.strerror}", 1)
    return ok


def fio_emit(
    output: FioOutput, draw: Callable[[Console], None], shaped: Callable[[bool], dict[str, Any]]
) -> bool:
    """fio's report (`draw` on a console) or its JSON shape (`shaped(plus)`), on standard output or in
    --output; False if the file could not be written (said on standard error)."""
    if output.format == "normal":
        if output.file is None:
            draw(out_console())
            text = None
        else:
            buf = io.StringIO()
            draw(Console(file=buf, width=200, highlight=False, force_terminal=False))
            text = buf.getvalue()
    else:
        text = fio_json.dumps(shaped(output.format == "json+"))
        if output.file is None:
            sys.stdout.write(text)
            sys.stdout.flush()
    if output.file is not None and text is not None:
        try:
            atomic.write_text(output.file, text)
        except OSError as exc:
            return not error(f"--output: cannot write {output.file}: {exc.strerror}", 1)
    return True


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
        if interrupt.STOP.requested:
            text = Text(
                f"stopping ({interrupt.STOP.name}): removing what the run created ...", style="yellow"
            )
        elif self.progress is None:
            text = Text(f"{self.label}  {wall:.1f} s", style="dim")
        else:
            text = render.progress_line(self.progress, wall, self.workload)
        self.spinner.update(text=text)
        return self.spinner


def _launch(
    req: launch.RunRequest,
    engine: Path,
    live: bool,
    watch: launch.ProgressCallback | None = None,
    on_exit: launch.ExitCallback | None = None,
    quiet: bool = False,
) -> launch.RunOutcome:
    if quiet:
        return launch.run(req, engine, on_progress=watch, on_line=lambda _line: None, on_exit=on_exit)
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
    outcome: launch.RunOutcome,
    req: launch.RunRequest,
    json_path: Path | None,
    started_at: str,
    typed: list[str],
    mon: RunMonitor | None = None,
) -> int:
    """The engine wrote no document (under mpirun/srun a rank died before rank 0 could write one): say so,
    and still leave a failed document at --json, so a script that reads it learns what happened, with what
    --monitor sampled until then (a node's stream cut short by the failure is marked not complete)."""
    rc = outcome.returncode
    if rc < 0:
        how = f"was killed by {interrupt.signal_name(-rc)}"
    else:
        how = f"exited with status {rc}"
    what = f"{req.launcher} {how} and the engine" if req.uses_mpi else f"the engine {how} and"
    message = "; ".join([*outcome.errors, f"{what} wrote no result document"])
    if outcome.signal is not None:
        message = f"stopped by {interrupt.signal_name(outcome.signal)}: {message}"
    hint = ""
    if req.uses_mpi:
        hint = " (if rank 0 ran on another node, set IOLENS_TMPDIR to a directory all nodes share)"
    status = error(message + hint, 1)
    if json_path is not None:
        doc = results.failure_document(
            req.workload,
            message,
            typed,
            "mpi" if req.uses_mpi or req.in_job is not None else "local",
            req.np,
            started_at,
            _utc_now(),
        )
        doc["engine_command"] = list(outcome.command)
        if outcome.signal is not None:
            doc["interrupted"] = {"signal": interrupt.signal_name(outcome.signal), "phase": None}
        if mon is not None:
            doc["monitor"] = mon.section(doc)
        try:
            atomic.write_text(json_path, json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            error(f"--json: cannot write {json_path}: {exc.strerror}", 1)
    if outcome.signal is not None:
        return interrupt.exit_status(outcome.signal)
    return status
