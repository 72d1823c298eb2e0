"""`iolens io500`: run the IO500 phases with the engine, one launch per phase; write the app's result files.

The flow follows the IO500 app's main(): read the config, make the result and data directories (timestamped
if asked), write config-orig.ini and config.ini, run each phase in order (dropping caches first if asked),
score and validate with `score.evaluate()`, write result.txt and result_summary.txt, remove the data, and
end with "; END". Both files, the output and the document say which page-cache mode the ior read phases ran
in (io500/cache.py: evicted before each read, iolens's default, or kept with --keep-cache, as the app).
Per phase the result directory also gets the engine's text report (PHASE.txt) and its JSON document
(PHASE.json); the whole run is one more document, `iolens-io500.json` (docs/schema.md, "io500 documents").

A phase's figure is the app's: ior phases bytes / time / 2^30 (IOR's aggFileSizeForBW / time, the engine's
phases[].bytes / times.total_s); mdtest phases mdtest's rate / 1000 (items between the barriers that open
and close the phase: the engine's rate_per_s); find the entries scanned / time / 1000. A phase's runtime
(t_delta, and what the validity rules compare with the stonewall) is the engine's own time for its work
(engine_time), as the app times the benchmark inside its MPI job; the launch is not part of it.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from iolens import __version__, atomic, interrupt, launch, render, results
from iolens.io500 import cache, rank_csv, results_files
from iolens.io500.hashes import format_number, score_hash
from iolens.io500.ini import IniError, load_config
from iolens.io500.phases import (
    ENGINE_KINDS,
    GIB,
    MDWB_DEFAULT_KIOPS,
    Plan,
    PlanError,
    PlannedPhase,
    mdworkbench_args,
    option_error,
    plan,
)
from iolens.io500.score import (
    Evaluation,
    PhaseOutcome,
    RunRules,
    compute_scores,
    evaluate,
    hashed_phases,
)
from iolens.io500.spec import PHASE_BY_NAME, ScoreGroup

VERSION = f"iolens-{__version__}"
DOCUMENT_NAME = "iolens-io500.json"
SCHEMA_VERSION = 1
TIMESTAMP_FORMAT = "%Y.%m.%d-%H.%M.%S"
QUICK_REASON = "QUICK MODE (iolens io500 --quick): short stonewall and capped sizes, not a valid IO500 run"

# Files the phases leave in the result directory that the app removes at the end (status files).
STATUS_FILES = ("ior-easy.stonewall", "ior-hard.stonewall", "mdtest-easy.stonewall", "mdtest-hard.stonewall")


class DriverError(Exception):
    """The run cannot start or go on; `status` is the exit status (2: bad config or options, nothing done)."""

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class DriverOptions:
    config: str
    mode: str = "standard"
    quick: bool = False
    dry_run: bool = False
    np: int = 1
    nodes: int | None = None  # spread the processes over this many nodes (mpirun, srun), as ior/mdtest do
    launcher: str = "local"
    launcher_args: list[str] = field(default_factory=list)
    json: Path | None = None
    live: bool = True
    keep_cache: bool = False  # --keep-cache: the ior read phases keep the page cache, as the app's IOR does
    argv: list[str] = field(default_factory=list)  # the command line, for the document
    # Under mpirun/srun: the command each rank of a phase runs before its engine, given the phase's name
    # (--monitor's per-node sampler, launch.RunRequest.wrapper).
    engine_wrapper: Callable[[str], Sequence[str]] | None = None


@dataclass
class PhaseRecord:
    """What happened in one phase: the outcome the scoring reads, and what the document reports."""

    planned: PlannedPhase
    status: str  # "ok", "failed", "skipped"
    outcome: PhaseOutcome | None
    engine_returncode: int | None = None
    error: str | None = None
    document: results.Document | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # comments for this phase's section in result.txt
    wall_s: float | None = None  # the driver's wall time around the engine launch, process start included
    cache: dict[str, Any] | None = None  # ior reads: the engine's page-cache record of the read (policy, ...)

    @property
    def name(self) -> str:
        return self.planned.name


# ------------------------------------------------------------------------------------------------ preparing


def prepare(opts: DriverOptions, now: datetime | None = None) -> Plan:
    """Read the config and build the phase table; raise DriverError (status 2) for what cannot run. No I/O."""
    if opts.mode not in ("standard", "extended"):
        raise DriverError(f"--mode: expected standard or extended, got {opts.mode!r}")
    try:
        config = load_config(opts.config)
    except IniError as exc:
        raise DriverError(str(exc)) from None
    stamp = (now or datetime.now()).strftime(TIMESTAMP_FORMAT)
    datadir = config.get("global", "datadir") or "./datafiles"
    try:
        return plan(
            config,
            opts.mode,
            opts.quick,
            opts.np,
            stamp,
            check_dirs=not opts.dry_run,
            free_bytes=free_space(datadir),
            free_inodes=free_inodes(datadir),
            mpi=opts.launcher != "local",
            keep_cache=opts.keep_cache,
        )
    except PlanError as exc:
        raise DriverError(str(exc)) from None


def free_space(path: str) -> int | None:
    """Free bytes (for an unprivileged user) of the file system that holds, or will hold, `path`."""
    st = _statvfs_of(path)
    return st.f_bavail * st.f_frsize if st is not None else None


def free_inodes(path: str) -> int | None:
    """Free inodes (for an unprivileged user) there; None when unknown or unlimited (f_files 0: btrfs...)."""
    st = _statvfs_of(path)
    if st is None or st.f_files == 0:
        return None
    return st.f_favail


def _statvfs_of(path: str) -> os.statvfs_result | None:
    """statvfs of `path` or of its nearest existing parent; None when that cannot be known (a directory on
    the way that this user cannot enter: the plan's directory check says so in its own words)."""
    p = Path(path)
    try:
        while not p.exists():
            if p.parent == p:
                return None
            p = p.parent
        return os.statvfs(p)
    except OSError:
        return None


def engine_request(
    opts: DriverOptions, workload: str, args: Sequence[str], np: int | None = None
) -> launch.RunRequest:
    """A launch of the run's processes (or `np` of them: find's nproc) with the run's launcher and nodes; a
    launch of fewer processes than nodes spreads them over as many nodes as it has processes."""
    ranks = np or opts.np
    nodes = min(opts.nodes, ranks) if opts.nodes is not None else None
    return launch.RunRequest(workload, list(args), ranks, nodes, opts.launcher, opts.launcher_args)


def mpi_flavor(opts: DriverOptions) -> str:
    """How this mpirun spells ranks per node (only asked when it matters: mpirun with --nodes)."""
    if opts.launcher == "mpirun" and opts.nodes is not None:
        return launch.detect_mpi_flavor()
    return "openmpi"


def rules_for(plan_: Plan, dry_run: bool = False) -> RunRules:
    base = RunRules.from_config(plan_.config, dry_run=dry_run)
    return RunRules(
        stonewall=plan_.stonewall_s,
        minwrite=base.minwrite,
        dry_run=dry_run,
        pause_dir=base.pause_dir,
        files_per_dir=base.files_per_dir,
    )


def dry_run_report(plan_: Plan, opts: DriverOptions, console: Console) -> None:
    """Every phase with its command and key parameters; nothing is created or run."""
    console.print(
        Text(
            f"iolens io500 --dry-run: {plan_.config.path} ({plan_.mode} mode, {opts.np} process(es), "
            f"launcher {opts.launcher}){' --quick' if plan_.quick else ''}",
            style="bold",
        )
    )
    console.print(f"data directory:   {plan_.dirs.datadir}")
    console.print(f"result directory: {plan_.dirs.resultdir}")
    console.print(f"stonewall:        {plan_.stonewall_s} s")
    console.print(f"config-hash:      {plan_.config.config_hash_text}")
    console.print(Text(cache.headline(plan_.cache_mode)), soft_wrap=True)
    flavor = mpi_flavor(opts)
    for i, p in enumerate(plan_.phases, start=1):
        params = "  ".join(f"{k}={v}" for k, v in p.params.items())
        head = Text(f"{i:2d}. {p.name}", style="bold cyan")
        if params:
            head.append(f"   {params}")
        if p.skip is not None:
            head.append(f"   ({p.skip})", style="yellow")
        console.print(head, soft_wrap=True)
        if p.kind in ENGINE_KINDS:
            args = p.args
            if p.kind == "md-workbench":
                pps, fpp = (
                    plan_.config.get("mdworkbench", "precreatePerSet"),
                    plan_.config.get("mdworkbench", "filesPerProc"),
                )
                count = "AUTO"  # the app's rule: from mdtest-easy-write's rate, once that has run
                args = mdworkbench_args(p, pps or count, fpp or count)
            req = engine_request(opts, p.kind, args, p.np)
            command = shlex.join(launch.build_command(req, "iolens-bench", flavor))
            console.print(Text(f"    {command}"), soft_wrap=True)
        elif p.kind == "timestamp":
            console.print(Text(f"    create {p.params['file']}"), soft_wrap=True)
    _print_notes(plan_, console)
    console.print(Text("dry run: no directory was created and nothing ran", style="dim"))


def _print_notes(plan_: Plan, console: Console) -> None:
    for option, change in plan_.caps.items():
        console.print(Text(f"--quick: {option} {change}", style="yellow"), soft_wrap=True)
    for note in plan_.notes:
        console.print(Text(f"note: {note}", style="yellow"), soft_wrap=True)


# ---------------------------------------------------------------------------------------------- directories


class DataDirs:
    """The directories a run creates, so that at the end it removes exactly those (when empty)."""

    def __init__(self) -> None:
        self.created: list[Path] = []

    def make(self, path: str | Path) -> None:
        """mkdir -p, remembering every directory that did not exist before."""
        p = Path(path)
        missing = []
        while not p.exists():
            missing.append(p)
            if p.parent == p:
                break
            p = p.parent
        for d in reversed(missing):
            d.mkdir()
            self.created.append(d)

    def remove_created(self) -> list[str]:
        """rmdir what this run made, deepest first; the ones that were not empty are returned."""
        left = []
        for d in reversed(self.created):
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                left.append(str(d))
        return left


def _ledger_names(directory: Path) -> list[str]:
    """The names the engine recorded as its own in a directory (see docs/ior.md, "Safety")."""
    try:
        return [n for n in (directory / ".iolens-owned").read_text().split("\n") if n]
    except OSError:
        return []


def remove_ior_files(path: str, flags: list[str], runner: Runner, opts: DriverOptions) -> None:
    """Remove an ior phase's kept files (-k) with the engine's own `--remove-only` run, so the rules of
    what iolens may delete (its ledger) live in one place."""
    req = launch.RunRequest("ior", [*flags, "--remove-only", "--quiet", "-o", path], np=opts.np)
    try:
        with open(os.devnull, "w") as null:
            launch.run(req, runner.engine, on_line=lambda _line: None, stdout=null)
    except launch.LaunchError:
        pass


# --------------------------------------------------------------------------------------------- live display


class Display:
    """What the user sees while the run goes: the phases done, the current one with its live rate, the time
    left in the stonewall, and the running score (a rich Live on a terminal, one line per phase otherwise)."""

    def __init__(self, plan_: Plan, console: Console, err: Console, live: bool) -> None:
        self.plan = plan_
        self.console = console
        self.err = err
        self.records: list[PhaseRecord] = []
        self.current: PlannedPhase | None = None
        self.index = 0
        self.progress: dict[str, Any] | None = None
        self.t_phase = time.monotonic()
        self.t_run = time.monotonic()
        self.live: Live | None = None
        if live and err.is_terminal:
            self.live = Live(self, console=err, transient=True, refresh_per_second=8)

    def __enter__(self) -> Display:
        if self.live is not None:
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def start(self, p: PlannedPhase, index: int) -> None:
        self.current, self.index, self.progress = p, index, None
        self.t_phase = time.monotonic()

    def on_progress(self, progress: dict[str, Any]) -> None:
        self.progress = progress

    def on_line(self, line: str) -> None:
        target = self.live.console if self.live is not None else self.err
        target.print(Text(line), soft_wrap=True)

    def message(self, text: str, style: str = "") -> None:
        target = self.live.console if self.live is not None else self.err
        target.print(Text(text, style=style), soft_wrap=True)

    def done(self, record: PhaseRecord) -> None:
        self.records.append(record)
        self.current = None
        if self.live is None:
            self.err.print(_phase_line(record, len(self.records), len(self.plan.phases)), soft_wrap=True)

    def running_score(self) -> Text:
        scores = {r.name: r.outcome.score for r in self.records if r.outcome is not None}
        s = compute_scores(scores, extended=False)
        return Text(
            f"running score: BW {s.bw:.3f} GiB/s  MD {s.md:.3f} kIOPS  SCORE {s.score:.3f}"
            f"   (total {time.monotonic() - self.t_run:.1f} s)",
            style="bold",
        )

    def __rich__(self) -> RenderableType:
        parts: list[RenderableType] = [phase_table(self.records, compact=True)]
        if self.current is not None:
            p = self.current
            wall = time.monotonic() - self.t_phase
            line = Text(f"[{self.index}/{len(self.plan.phases)}] ", style="dim")
            line.append(f"{p.name}  ", style="bold cyan")
            if self.progress is not None:
                line.append_text(render.progress_line(self.progress, wall, p.kind))
                elapsed = self.progress.get("elapsed_s")
            else:
                line.append(f"starting ({wall:.1f} s)", style="dim")
                elapsed = None
            if p.stonewall_s:
                spent = elapsed if isinstance(elapsed, int | float) else 0.0
                left = max(0.0, p.stonewall_s - spent)
                line.append(f"  stonewall: {left:.1f} s left", style="yellow")
            parts.append(line)
        parts.append(self.running_score())
        return Group(*parts)


def _figure(record: PhaseRecord) -> str:
    if record.outcome is None or record.status == "skipped":
        return "-"
    return format_number(record.outcome.score)


def _phase_line(record: PhaseRecord, index: int, total: int) -> Text:
    spec = PHASE_BY_NAME[record.name]
    t = Text(f"[{index}/{total}] {record.name:<20} ")
    if record.status == "skipped":
        t.append(record.planned.skip or record.status, style="yellow")
        return t
    o = record.outcome
    assert o is not None
    if spec.dummy:
        t.append(f"done  {o.runtime_s:.3f} s")
    else:
        t.append(f"{format_number(o.score):>15} {spec.unit}  {o.runtime_s:.3f} s", style="bold")
    if record.status == "failed":
        t.append(f"  FAILED: {record.error}", style="red")
    return t


def phase_table(
    records: Sequence[PhaseRecord], verdicts: dict[str, list[str]] | None = None, compact: bool = False
) -> Table:
    """The phases done: name, figure, unit, time, and (after the evaluation) whether each is valid."""
    table = Table(box=None, padding=(0, 2, 0, 0), show_edge=False)
    table.add_column("phase")
    table.add_column("score", justify="right")
    table.add_column("unit")
    table.add_column("time (s)", justify="right")
    if not compact:
        table.add_column("")
    for r in records:
        spec = PHASE_BY_NAME[r.name]
        o = r.outcome
        unit = "" if spec.dummy else spec.unit
        runtime = f"{o.runtime_s:.3f}" if o is not None else "-"
        note = ""
        if r.status == "skipped":
            note = r.planned.skip or r.status
        elif r.status == "failed":
            note = f"FAILED: {r.error}"
        elif verdicts is not None and verdicts.get(r.name):
            note = "INVALID"
        if spec.group == ScoreGroup.NONE and not spec.dummy and not note:
            note = "(not scored)"
        row = [r.name, "" if spec.dummy else _figure(r), unit, runtime]
        if not compact:
            row.append(note)
        table.add_row(*row)
    return table


# ------------------------------------------------------------------------------------------- running phases


def _now() -> datetime:
    return datetime.now()


class Runner:
    """Runs a plan: one engine launch per phase, in order."""

    def __init__(
        self,
        plan_: Plan,
        opts: DriverOptions,
        engine: Path,
        display: Display,
        drop_caches: Callable[[], None] | None = None,
    ) -> None:
        self.plan = plan_
        self.opts = opts
        self.engine = engine
        self.display = display
        self.resultdir = Path(plan_.dirs.resultdir)
        self.drop_caches = drop_caches
        self.records: list[PhaseRecord] = []
        self.mdwb_counts: tuple[int, int] | None = None  # (precreatePerSet, filesPerProc), once known

    def record(self, name: str) -> PhaseRecord | None:
        for r in self.records:
            if r.name == name:
                return r
        return None

    def run_all(self) -> None:
        for index, p in enumerate(self.plan.phases, start=1):
            if interrupt.STOP.requested:
                return
            self.display.start(p, index)
            rec = self.run_phase(p)
            self.records.append(rec)
            self.display.done(rec)

    def run_phase(self, p: PlannedPhase) -> PhaseRecord:
        setup: list[tuple[str, str]] = []
        if p.kind == "md-workbench":
            setup = self._mdworkbench_counts(p)
        exe = p.exe()
        setup += [("exe", exe)] if exe else []
        if p.kind == "find":
            # The app prints the processes of its find whether or not `nproc` is set (all of them by default).
            setup.append(("nproc", str(p.np or self.opts.np)))
        # A phase that needs one that failed cannot run either (the planner handled run = FALSE).
        need = _needs_failed(p, self)
        if p.skip is None and need is not None:
            p.skip = f"skipped: it needs {need}, which failed"
        # As the app: caches are dropped first, then the wait for the pause file, then the phase starts.
        if p.skip is None and self.drop_caches is not None and not PHASE_BY_NAME[p.name].dummy:
            self.drop_caches()
        pause = self._pause(p)
        if p.skip is not None:
            now = _now()
            outcome = PhaseOutcome(p.name, 0.0, 0.0, setup_lines=setup, t_start=now, t_end=now)
            rec = PhaseRecord(p, "skipped", outcome, notes=[f"phase skipped: {p.skip}"])
        elif p.kind == "timestamp":
            t_start, t0 = _now(), time.monotonic()
            Path(p.params["file"]).touch()
            outcome = PhaseOutcome(p.name, 0.0, time.monotonic() - t0, t_start=t_start, t_end=_now())
            rec = PhaseRecord(p, "ok", outcome)
        else:
            rec = self._run_engine(p, setup)
        if pause is not None and rec.outcome is not None:
            rec.outcome.pause_started, rec.outcome.pause_file = pause
        return rec

    def _mdworkbench_counts(self, p: PlannedPhase) -> list[tuple[str, str]]:
        """The md-workbench phase's counts (the app's rule: from mdtest-easy-write's rate unless the config
        sets them), its full arguments, and the lines result.txt shows before its exe."""
        if self.mdwb_counts is None:
            easy = self.record("mdtest-easy-write")
            ok = easy is not None and easy.outcome is not None and easy.status == "ok"
            kiops = easy.outcome.score if ok and easy is not None and easy.outcome is not None else 0.0
            given = self.plan.config.get("mdworkbench", "precreatePerSet") is not None
            if kiops <= 0 and not given:
                self.display.message(
                    "warning: md-workbench takes its sizes from mdtest-easy-write's rate, and "
                    f"mdtest-easy-write did not run: {MDWB_DEFAULT_KIOPS:g} kIOPS is used instead (the app's "
                    "rule)",
                    "yellow",
                )
            self.mdwb_counts = self.plan.mdworkbench_counts(kiops, self.opts.np)
            if not given:
                # As the app: the rate the sizes came from, for a later cleanup run (a C double, host order).
                (self.resultdir / "mdworkbench-size").write_bytes(struct.pack("=d", kiops))
        precreate, files = self.mdwb_counts
        p.args = mdworkbench_args(p, precreate, files)
        return [("filesPerProc", str(files)), ("precreatePerSet", str(precreate))]

    def _pause(self, p: PlannedPhase) -> tuple[datetime, str] | None:
        """With `pause-dir` set, wait while PAUSE-DIR/PHASE exists, as the app does before every phase;
        returns when the wait began and the file looked for (result.txt's t_pause and its comment)."""
        pause_dir = self.plan.config.get("debug", "pause-dir")
        if pause_dir is None:
            return None
        started = _now()
        flag = f"{pause_dir}/{p.name}"
        if os.path.exists(flag):
            self.display.message(f"pausing before {p.name} while {flag} exists")
        while os.path.exists(flag) and not interrupt.STOP.requested:
            time.sleep(0.2)
        return started, flag

    def _run_engine(self, p: PlannedPhase, setup: list[tuple[str, str]]) -> PhaseRecord:
        json_path = self.resultdir / f"{p.name}.json"
        text_path = self.resultdir / f"{p.name}.txt"
        req = engine_request(self.opts, p.kind, [*p.args, "--json", str(json_path), "--progress"], p.np)
        if self.opts.engine_wrapper is not None:
            req = replace(req, wrapper=self.opts.engine_wrapper(p.name))
        t_start = _now()
        t0 = time.monotonic()
        with open(text_path, "w", encoding="utf-8") as out:
            try:
                rc = launch.run(
                    req,
                    self.engine,
                    on_progress=self.display.on_progress,
                    on_line=self.display.on_line,
                    stdout=out,
                )
            except launch.LaunchError as exc:
                raise DriverError(str(exc), 1) from None
        wall = time.monotonic() - t0
        t_end = _now()
        # Until the engine's document says how long the phase's work took, the wall time is all there is.
        outcome = PhaseOutcome(p.name, 0.0, wall, setup_lines=setup, t_start=t_start, t_end=t_end)
        rec = PhaseRecord(p, "ok", outcome, engine_returncode=rc.returncode, wall_s=wall)
        doc = None
        error = "; ".join(rc.errors) if rc.errors else None
        if json_path.exists():
            try:
                doc = results.load(json_path)
            except results.ResultError as exc:
                error = error or str(exc)
        rec.document = doc
        if doc is not None and doc.error is not None:
            error = doc.error.message
        if doc is None or (not doc.ok and not doc.verify_errors):
            rec.status = "failed"
            rec.error = error or f"the engine exited with status {rc.returncode} and wrote no document"
            rec.notes.append(f"ERROR iolens-bench failed: {rec.error}")
            if p.kind == "find":
                outcome.find_failed = True
            return rec
        # The app's per-rank CSV (IOR's and pfind's; the engine wrote mdtest's) of a phase with figures.
        csv_error = rank_csv.write_phase_csv(p.name, doc, self.resultdir)
        if csv_error is not None:
            self.display.message(f"warning: {csv_error}", "yellow")
        # A verification failure still has figures: the phase is scored, and invalid by its error count.
        _fill_outcome(p, doc, outcome, rec)
        if rec.status == "ok" and (not doc.ok or rc.returncode != 0):
            rec.status = "failed"
            rec.error = error or f"the engine exited with status {rc.returncode}"
        if rec.status == "failed":
            rec.notes.append(f"ERROR iolens-bench failed: {rec.error}")
        return rec


def _needs_failed(p: PlannedPhase, runner: Runner) -> str | None:
    from iolens.io500.phases import NEEDS

    need = NEEDS.get(p.name)
    if need is None:
        return None
    rec = runner.record(need)
    return need if rec is not None and rec.status == "failed" else None


def _raw_stonewall_hit(doc: results.Document, phase: str) -> bool | None:
    for raw in doc.raw.get("phases", []):
        if isinstance(raw, dict) and raw.get("name") == phase and isinstance(raw.get("stonewall"), dict):
            hit = raw["stonewall"].get("hit")
            return hit if isinstance(hit, bool) else None
    return None


def engine_time(doc: results.Document) -> float | None:
    """How long the engine worked on the phase: the sum of the times of every phase of its document (ior:
    each first open to last close; mdtest: each step between its barriers, the tree's included; find: the
    walk). This is what the app's t_delta measures — rank 0's clock around the benchmark's run inside the
    already started MPI job — without the process launch the driver's wall time includes; None when the
    document has no timed phase."""
    if isinstance(doc, results.IorDocument):
        times = [ph.times.total_s for ph in doc.phases]
    elif isinstance(doc, results.MdtestDocument):
        times = [mp.time_s for mp in doc.phases]
    elif isinstance(doc, results.FindDocument):
        times = [doc.find.time_s] if doc.find is not None else []
    elif isinstance(doc, results.MdworkbenchDocument):
        times = [ph.time_s for ph in doc.phases]
    else:
        times = []
    return sum(times) if times else None


def _fill_outcome(p: PlannedPhase, doc: results.Document, o: PhaseOutcome, rec: PhaseRecord) -> None:
    """The phase's figure and the inputs of the validity rules, from the engine's document."""
    worked = engine_time(doc)
    if worked is not None:
        o.runtime_s = worked  # t_delta, and the runtime the validity rules compare with the stonewall
    if isinstance(doc, results.IorDocument):
        ph = next((x for x in doc.phases if x.name == p.engine_phase), None)
        if ph is None:
            rec.status, rec.error = "failed", f"the engine's document has no {p.engine_phase} phase"
            return
        o.score = ph.bytes / ph.times.total_s / GIB if ph.times.total_s > 0 else 0.0
        o.errors = ph.verify.errors if ph.verify is not None else 0
        rec.figures = {
            "bytes": ph.bytes,
            "time_s": ph.times.total_s,
            "bw_bytes_per_s": ph.bw_bytes_per_s,
            "latency_p50_ns": ph.latency_ns.p50,
            "latency_p99_ns": ph.latency_ns.p99,
        }
        if p.name in cache.IOR_READ_PHASES:
            c = ph.cache
            rec.cache = {"policy": c.policy, "evicted": c.evicted, "o_direct": c.o_direct, "note": c.note}
            if c.note:
                rec.notes.append(f"cache: {c.note}")
        if ph.name == "write":
            o.write_time_s = ph.times.total_s
            sw = ph.stonewall
            if sw is not None:
                o.stonewall_hit_s = sw.time_s
                tput = sw.bytes_at_deadline / sw.time_s / GIB if sw.time_s > 0 else 0.0
                o.result_lines.append(("throughput-stonewall", f"{tput:.2f}"))
                rec.figures["stonewall"] = {
                    "time_s": sw.time_s,
                    "bytes_at_deadline": sw.bytes_at_deadline,
                    "hit": _raw_stonewall_hit(doc, ph.name),
                }
    elif isinstance(doc, results.MdtestDocument):
        mp = next((x for x in doc.phases if x.name == p.engine_phase), None)
        if mp is None:
            rec.status, rec.error = "failed", f"the engine's document has no {p.engine_phase} phase"
            return
        o.score = mp.rate_per_s / 1000
        o.errors = mp.verify.errors if mp.verify is not None else 0
        rec.figures = {
            "items": mp.items,
            "time_s": mp.time_s,
            "rate_per_s": mp.rate_per_s,
            "io500_rate_per_s": mp.io500_rate_per_s,
            "latency_p50_ns": mp.latency_ns.p50,
            "latency_p99_ns": mp.latency_ns.p99,
        }
        sw = mp.stonewall
        if sw is not None:
            # Not hit: the engine reports no stonewall time; the whole phase is the "stonewall" figure then.
            sw_time = sw.time_s if sw.time_s > 0 else mp.time_s
            rate = sw.items_sum_at_deadline / sw_time / 1000 if sw_time > 0 else 0.0
            o.result_lines.append(("rate-stonewall", f"{rate:f}"))
            rec.figures["stonewall"] = {
                "hit": sw.hit,
                "items_sum_at_deadline": sw.items_sum_at_deadline,
                "time_s": sw.time_s,
            }
    elif isinstance(doc, results.MdworkbenchDocument):
        _fill_mdworkbench(p, doc, o, rec)
    elif isinstance(doc, results.FindDocument):
        f = doc.find
        if f is None:
            rec.status, rec.error = "failed", "the engine's find document has no figures"
            o.find_failed = True
            return
        o.score = f.scanned / f.time_s / 1000 if f.time_s > 0 else 0.0
        o.found = f.matched
        o.result_lines += [("found", str(f.matched)), ("total-files", str(f.scanned))]
        rec.figures = {
            "scanned": f.scanned,
            "matched": f.matched,
            "time_s": f.time_s,
            "rate_per_s": f.rate_per_s,
            "errors": f.errors,
        }


def _fill_mdworkbench(
    p: PlannedPhase, doc: results.MdworkbenchDocument, o: PhaseOutcome, rec: PhaseRecord
) -> None:
    """An md-workbench phase as the app scores it: md-workbench's rate / 1000 (precreate, cleanup: their
    phase; bench: the second of its two iterations), its maxOpTime lines, its error count."""
    o.errors = doc.errors
    if p.engine_phase == "benchmark":
        runs = doc.benchmarks()
        o.iterations = len(runs)
        if len(runs) != 2:
            return  # invalid, score 0, as the app (score.phase_reasons says why)
        first, main = runs
        o.result_lines += [
            ("maxOpTime", f"{main.max_op_time_s:f}"),
            ("scoreIteration0", f"{(first.rate_per_s or 0.0) / 1000:f}"),
            ("maxOpTime0", f"{first.max_op_time_s:f}"),
        ]
    else:
        main_ = next((x for x in doc.phases if x.name == p.engine_phase), None)
        if main_ is None:
            rec.status, rec.error = "failed", f"the engine's document has no {p.engine_phase} phase"
            return
        main = main_
        o.result_lines.append(("maxOpTime", f"{main.max_op_time_s:f}"))
    o.score = (main.rate_per_s or 0.0) / 1000
    rec.figures = {
        "rate_per_s": main.rate_per_s,
        "objects": main.objects,
        "time_s": main.time_s,
        "max_op_time_s": main.max_op_time_s,
        "errors": doc.errors,
        "iterations": o.iterations,
    }


# ------------------------------------------------------------------------------------------------- finishing


def _rehash(ev: Evaluation) -> None:
    """Recompute both score hashes after the driver changed a validity flag."""
    scores = {v.outcome.name: v.outcome.score for v in ev.phases}
    names = [v.outcome.name for v in ev.phases]
    ev.hash = score_hash(
        ev.version,
        [(n, scores[n]) for n in hashed_phases(names, False)],
        ev.scores.md,
        ev.scores.bw,
        ev.scores.score,
        ev.valid,
    )
    if ev.extended_scores is not None:
        x = ev.extended_scores
        ev.extended_hash = score_hash(
            None,
            [(n, scores[n]) for n in hashed_phases(names, True)],
            x.md,
            x.bw,
            x.score,
            bool(ev.extended_valid),
        )


def evaluate_run(
    plan_: Plan, records: Sequence[PhaseRecord], extra_reasons: Sequence[str] = ()
) -> Evaluation:
    outcomes = [r.outcome for r in records if r.outcome is not None]
    ev = evaluate(outcomes, rules_for(plan_), VERSION, plan_.mode)
    changed = False
    reasons = list(extra_reasons)
    if plan_.quick:
        reasons.insert(0, QUICK_REASON)
    if reasons:
        ev.setup_reasons.extend(reasons)
        if ev.valid:
            ev.valid, changed = False, True
    if changed:
        _rehash(ev)
    return ev


def summary_file(plan_: Plan, ev: Evaluation) -> results_files.SummaryFile:
    """result_summary.txt as the app writes it, with the cache mode's comment (after its first line)."""
    summary = results_files.build_summary(ev)
    summary.comments.append(cache.comment(plan_.cache_mode))
    return summary


def write_results(
    plan_: Plan, records: Sequence[PhaseRecord], ev: Evaluation, procs: int, start: datetime, end: datetime
) -> None:
    """result.txt (with the driver's notes per phase) and result_summary.txt, as the app writes them, each
    with the cache mode's comment."""
    rd = Path(plan_.dirs.resultdir)
    result = results_files.build_result(ev, plan_.config, procs, plan_.dirs.resultdir, start=start, end=end)
    run = result.sections[0]
    # After [run]'s `mode`: the app's verifier and INI reader skip comments, so the hashes are unchanged.
    pairs = [ln.key if isinstance(ln, results_files.Pair) else None for ln in run.lines]
    at = pairs.index("mode") + 1
    run.lines.insert(at, results_files.Comment(cache.comment(plan_.cache_mode)))
    notes = {r.name: r.notes for r in records if r.notes}
    for section in result.sections:
        for note in notes.get(section.name, []):
            # Before the score line, where the app prints a phase's own messages.
            at = next(
                (
                    i
                    for i, ln in enumerate(section.lines)
                    if isinstance(ln, results_files.Pair) and ln.key == "score"
                ),
                len(section.lines),
            )
            section.lines.insert(at, results_files.Comment(note))
    (rd / "result.txt").write_text(result.render(), encoding="utf-8", errors="surrogateescape")
    (rd / "result_summary.txt").write_text(summary_file(plan_, ev).render(), encoding="utf-8")


def _iso(dt: datetime | None) -> str | None:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if dt is not None else None


def run_document(
    plan_: Plan,
    opts: DriverOptions,
    records: Sequence[PhaseRecord],
    ev: Evaluation,
    start: datetime,
    end: datetime,
    error: str | None,
    left_behind: Sequence[str],
) -> dict[str, Any]:
    """The whole run as one document (docs/schema.md, "io500 documents")."""
    verdicts = {v.spec.name: v for v in ev.phases}
    first_doc = next((r.document for r in records if r.document is not None), None)
    host = (
        {"hostname": first_doc.host.hostname, "kernel": first_doc.host.kernel}
        if first_doc is not None
        else {"hostname": socket.gethostname(), "kernel": platform.release()}
    )
    comm: dict[str, Any] = {
        "kind": "local" if opts.launcher == "local" else "mpi",
        "ranks": opts.np,
        "nodes": opts.nodes or 0,
        "tasks_per_node": 0,
        "max_clock_offset_ns": 0,
    }
    if first_doc is not None:
        c = first_doc.comm
        comm = {
            "kind": c.kind,
            "ranks": c.ranks,
            "nodes": c.nodes,
            "tasks_per_node": c.tasks_per_node,
            "max_clock_offset_ns": c.max_clock_offset_ns,
        }
    phases = []
    for r in records:
        spec = PHASE_BY_NAME[r.name]
        v = verdicts.get(r.name)
        o = r.outcome
        phases.append(
            {
                "name": r.name,
                "status": r.status,
                "scored": spec.group != ScoreGroup.NONE,
                "group": spec.group.name.lower() if spec.group != ScoreGroup.NONE else None,
                "unit": None if spec.dummy else spec.unit,
                "score": o.score if o is not None and not spec.dummy else None,
                "valid": v.valid if v is not None else False,
                "invalid_reasons": v.reasons if v is not None else [],
                "skip_reason": r.planned.skip,
                "error": r.error,
                "runtime_s": o.runtime_s if o is not None else None,
                "wall_s": r.wall_s,
                "started_at": _iso(o.t_start) if o is not None else None,
                "ended_at": _iso(o.t_end) if o is not None else None,
                "workload": r.planned.kind if r.planned.kind in ENGINE_KINDS else None,
                "command": (
                    ["iolens-bench", r.planned.kind, *r.planned.args]
                    if r.planned.kind in ENGINE_KINDS
                    else []
                ),
                "np": r.planned.np or opts.np if r.planned.kind in ENGINE_KINDS else None,
                "params": dict(r.planned.params),
                "figures": r.figures,
                "engine_document": f"{r.name}.json" if r.document is not None else None,
                "engine_output": f"{r.name}.txt" if r.engine_returncode is not None else None,
                "engine_returncode": r.engine_returncode,
                "cache": r.cache,
            }
        )

    def scores(x: Any, valid: bool, hash_value: int) -> dict[str, Any]:
        return {
            "bw_gib_per_s": x.bw,
            "md_kiops": x.md,
            "score": x.score,
            "valid": valid,
            "hash": f"{hash_value:X}",
        }

    doc = {
        "schema_version": SCHEMA_VERSION,
        "tool": "iolens",
        "version": __version__,
        "workload": "io500",
        "status": "failed" if error else "ok",
        "error": {"message": error, "rank": None, "phase": None} if error else None,
        "command": list(opts.argv),
        "started_at": _iso(start),
        "ended_at": _iso(end),
        "host": host,
        "comm": comm,
        "build": (first_doc.raw.get("build") if first_doc is not None else None)
        or {"mpi": False, "liburing": False},
        "config": {
            "path": plan_.config.path,
            "config_hash": plan_.config.config_hash_text,
            "values": {s: dict(opts_) for s, opts_ in plan_.config.values.items()},
        },
        "io500": {
            "version": ev.version,
            "mode": plan_.mode,
            "quick": plan_.quick,
            "quick_caps": dict(plan_.caps),
            "np": opts.np,
            "nodes": opts.nodes,
            "launcher": opts.launcher,
            "timestamp": plan_.dirs.timestamp,
            "datadir": plan_.dirs.datadir,
            "resultdir": plan_.dirs.resultdir,
            "stonewall_s": plan_.stonewall_s,
            "cache_mode": plan_.cache_mode,
            "notes": list(plan_.notes),
            "phases": phases,
            "score": scores(ev.scores, ev.valid, ev.hash),
            "extended_score": (
                scores(ev.extended_scores, bool(ev.extended_valid), ev.extended_hash or 0)
                if ev.extended_scores is not None
                else None
            ),
            "valid": ev.valid,
            "invalid_reasons": ev.reasons,
            "left_behind": list(left_behind),
        },
    }
    return doc


def _write_json(path: Path, doc: dict[str, Any]) -> None:
    atomic.write_text(path, json.dumps(doc, indent=2) + "\n")


# ---------------------------------------------------------------------------------------------------- a run


@dataclass
class RunResult:
    exit_code: int
    evaluation: Evaluation | None
    records: list[PhaseRecord]
    resultdir: str
    document: dict[str, Any] | None = None


def drop_caches_command(cmd: str, opts: DriverOptions) -> list[str]:
    """How `drop-caches-cmd` runs. The app has every rank call system(cmd), so that every node of the job
    drops its caches; iolens does the same through the launcher (mpirun, srun) with the run's processes.
    Locally every rank shares this node's caches: the command runs once."""
    shell = ["/bin/sh", "-c", cmd]
    if opts.launcher == "local":
        return shell
    return [*launch.launcher_prefix(engine_request(opts, "drop-caches", []), mpi_flavor(opts)), *shell]


def _drop_caches_fn(plan_: Plan, display: Display, opts: DriverOptions) -> Callable[[], None] | None:
    if not plan_.config.value("global", "drop-caches"):
        return None
    cmd = plan_.config.get("global", "drop-caches-cmd") or ""
    argv = drop_caches_command(cmd, opts)

    def drop() -> None:
        # As the app: a failing command is a warning, not the end of the run.
        try:
            rc = subprocess.run(argv, check=False, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        except OSError as exc:
            display.message(f"warning: drop-caches-cmd {cmd!r}: {argv[0]}: {exc.strerror}", "yellow")
            return
        if rc.returncode != 0:
            display.message(f"warning: drop-caches-cmd {cmd!r} returned {rc.returncode}", "yellow")

    return drop


def cleanup_data(plan_: Plan, runner: Runner, dirs: DataDirs, opts: DriverOptions) -> list[str]:
    """Remove the data as the app does at the end: the ior files (by the ledger), mdtest trees that a delete
    phase did not remove (with the engine's own remove run), the status files, the directories the run made.
    Returns what is left behind (directories that were not empty)."""
    d = plan_.dirs.datadir
    fpp = bool(plan_.config.value("ior-easy", "filePerProc"))
    unique = bool(plan_.config.value("ior-easy", "uniqueDir"))
    easy_flags = (["-F"] if fpp else []) + (["-u"] if unique else [])
    remove_ior_files(f"{d}/ior-easy/ior_file_easy", easy_flags, runner, opts)
    remove_ior_files(f"{d}/ior-hard/file", [], runner, opts)
    for group in ("mdtest-easy", "mdtest-hard"):
        tree = Path(d) / group
        delete = plan_.phase(f"{group}-delete")
        if not tree.exists() or delete is None or not _ledger_names(tree):
            continue
        # The delete phase did not run (or failed): the engine's remove run takes away what it made.
        req = engine_request(opts, "mdtest", [*delete.args, "--quiet"])
        try:
            with open(os.devnull, "w") as null:
                launch.run(req, runner.engine, on_line=lambda _line: None, stdout=null)
        except launch.LaunchError:
            pass
    _remove_mdworkbench(plan_, runner, opts)
    rd = Path(plan_.dirs.resultdir)
    for name in (*STATUS_FILES, "timestampfile"):
        try:
            (rd / name).unlink()
        except FileNotFoundError:
            pass
    return dirs.remove_created()


def _remove_mdworkbench(plan_: Plan, runner: Runner, opts: DriverOptions) -> None:
    """md-workbench's data sets, when its delete phase did not remove them (it did not run, or failed): the
    engine's cleanup run (-3), which deletes only what the ledger of its directory lists."""
    delete = plan_.phase("mdworkbench-delete")
    tree = Path(plan_.dirs.datadir) / "mdworkbench"
    if delete is None or not tree.exists() or not _ledger_names(tree):
        return
    precreate, files = runner.mdwb_counts or plan_.mdworkbench_counts(0.0, opts.np)
    base = [a for a in delete.args if not a.startswith(("-P=", "-I=")) and a != "-3"]
    req = engine_request(opts, "md-workbench", [*base, f"-P={precreate}", f"-I={files}", "-3", "--quiet"])
    try:
        with open(os.devnull, "w") as null:
            launch.run(req, runner.engine, on_line=lambda _line: None, stdout=null)
    except launch.LaunchError:
        pass


def execute(plan_: Plan, opts: DriverOptions, engine: Path, console: Console, err: Console) -> RunResult:
    """Run every phase, evaluate, write the result directory, remove the data; the exit status says how."""
    dirs = DataDirs()
    start = _now()
    # The result directory first (the app makes it before anything else), then the data directories.
    # prepare() tried both; should one fail now all the same, the error names the option's line.
    option = "resultdir"
    try:
        dirs_result = DataDirs()
        dirs_result.make(plan_.dirs.resultdir)
        results_files.write_config_files(plan_.dirs.resultdir, plan_.config)
        option = "datadir"
        dirs.make(plan_.dirs.datadir)
        for sub in ("ior-easy", "ior-hard"):
            dirs.make(f"{plan_.dirs.datadir}/{sub}")
    except OSError as exc:
        where = exc.filename if exc.filename is not None else getattr(plan_.dirs, option)
        message = f"cannot create {where}: {exc.strerror or exc}"
        raise DriverError(str(option_error(plan_.config, "global", option, message))) from None

    console.print(
        Text(
            f"iolens io500 {VERSION}: {plan_.config.path} ({plan_.mode}, {opts.np} process(es), "
            f"{opts.launcher})",
            style="bold",
        ),
        soft_wrap=True,
    )
    if plan_.quick:
        console.print(Text("--quick: " + QUICK_REASON, style="bold yellow"), soft_wrap=True)
    _print_notes(plan_, console)
    console.print(f"result directory: {plan_.dirs.resultdir}")
    console.print(f"data directory:   {plan_.dirs.datadir}")
    mode = plan_.cache_mode
    console.print(Text(cache.headline(mode), style=_cache_style(mode)), soft_wrap=True)

    display = Display(plan_, console, err, opts.live)
    runner = Runner(plan_, opts, engine, display, _drop_caches_fn(plan_, display, opts))
    interrupted: str | None = None
    fatal: str | None = None
    with display:
        try:
            runner.run_all()
        except KeyboardInterrupt:  # only when interrupt.STOP is not handling the signals
            interrupted = f"interrupted by SIGINT during {_current(display, runner)}"
        except DriverError as exc:
            fatal = str(exc)
    stop = interrupt.STOP.signum
    if interrupted is None and stop is not None:
        interrupted = f"interrupted by {interrupt.signal_name(stop)} during {_current(display, runner)}"
    end = _now()
    extra = []
    if interrupted:
        extra.append(f"RUN INTERRUPTED ({interrupted})")
    if fatal:
        extra.append(f"RUN STOPPED: {fatal}")
    ev = evaluate_run(plan_, runner.records, extra)
    # From here on the run's outcome is decided: a signal now is recorded but neither cuts the removal of the
    # data short nor changes what the result files say.
    with interrupt.STOP.shielded():
        left = cleanup_data(plan_, runner, dirs, opts)
    write_results(plan_, runner.records, ev, opts.np, start, end)
    failed = [r for r in runner.records if r.status == "failed"]
    error = (
        fatal
        or interrupted
        or (f"{len(failed)} phase(s) failed: " + ", ".join(r.name for r in failed) if failed else None)
    )
    doc = run_document(plan_, opts, runner.records, ev, start, end, error, left)
    rd = Path(plan_.dirs.resultdir)
    _write_json(rd / DOCUMENT_NAME, doc)
    if opts.json is not None:
        try:
            _write_json(opts.json, doc)
        except OSError as exc:
            err.print(Text(f"iolens: error: --json: cannot write {opts.json}: {exc.strerror}"))

    print_summary(plan_, runner.records, ev, console, left)
    if interrupted:
        signum = stop if stop is not None else signal.SIGINT
        err.print(Text(f"iolens: error: {interrupted}; the results so far are in {plan_.dirs.resultdir}"))
        return RunResult(interrupt.exit_status(signum), ev, runner.records, plan_.dirs.resultdir, doc)
    return RunResult(1 if error else 0, ev, runner.records, plan_.dirs.resultdir, doc)


def _cache_style(mode: str) -> str:
    """Kept caches are said loudly: the read figures may be memory's."""
    return "yellow" if mode == cache.KEEP else "dim"


def _current(display: Display, runner: Runner) -> str:
    """The phase running when the run stopped (or the last one that ran)."""
    if display.current is not None:
        return display.current.name
    return runner.records[-1].name if runner.records else "the start"


def print_summary(
    plan_: Plan, records: Sequence[PhaseRecord], ev: Evaluation, console: Console, left: Sequence[str]
) -> None:
    verdicts = {v.spec.name: v.reasons for v in ev.phases}
    console.print()
    console.print(phase_table(records, verdicts))
    console.print()
    # The app's own lines (result_summary.txt, which the app also prints): what scripts read.
    console.print(Text(summary_file(plan_, ev).render().rstrip("\n")), soft_wrap=True)
    if not ev.valid:
        reasons = ev.reasons
        console.print(
            Text(
                f"not a valid IO500 run ({len(reasons)} reason(s)); the first: {reasons[0]}"
                if reasons
                else "not a valid IO500 run",
                style="yellow",
            ),
            soft_wrap=True,
        )
    if plan_.quick:
        console.print(Text("--quick run: a first look, NOT a valid IO500 result", style="bold yellow"))
    for d in left:
        console.print(Text(f"left behind (not empty): {d}", style="yellow"), soft_wrap=True)
    console.print(Text(f"results: {plan_.dirs.resultdir}"), soft_wrap=True)


def verify_command(config: str, result: str, console: Console) -> int:
    """`iolens io500 --verify CONFIG result.txt`: both hashes, as io500-verify checks them."""
    try:
        report = results_files.verify(config, result)
    except IniError as exc:
        raise DriverError(str(exc)) from None
    except OSError as exc:
        raise DriverError(f"{result}: cannot read: {exc.strerror}") from None
    console.print(Text(report.render().rstrip("\n")), soft_wrap=True)
    console.print(Text(f"verify: {report.status}", style="bold"))
    return report.exit_code


def check_mpi_hints(plan_: Plan, engine: Path | str) -> None:
    """The MPI hints the MPIIO phases will read (each --mpiio.hintsFileName, the IOR_HINT__ variables),
    checked by the engine itself before any phase runs: a bad line is refused naming it, before the earlier
    phases did their I/O. The engine's --check of a write into an empty scratch directory does no I/O."""
    hint_files = sorted(
        {a for p in plan_.phases if p.runs_engine for a in p.args if a.startswith("--mpiio.hintsFileName")}
    )
    if not any(p.runs_engine and "MPIIO" in (a.upper() for a in p.args) for p in plan_.phases):
        return
    for option in hint_files or [""]:
        with tempfile.TemporaryDirectory(prefix="iolens-io500-hints-") as scratch:
            argv = [str(engine), "ior", "-a", "MPIIO", "-w", "-o", f"{scratch}/probe"]
            argv += [*([option] if option else []), "--check", "--comm", "local", "--no-space-check"]
            proc = subprocess.run(argv, check=False, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if proc.returncode != 0:
            msgs = [m for m in map(launch.parse_error, proc.stderr.splitlines()) if m]
            why = msgs[0] if msgs else f"the engine refused the MPI hints (exit {proc.returncode})"
            raise DriverError(why)


def config_error_line(message: str) -> str:
    """One line, whatever the message holds."""
    return re.sub(r"\s*\n\s*", " ", message).strip()


def main_run(
    opts: DriverOptions,
    console: Console,
    err: Console,
    on_document: Callable[[dict[str, Any]], None] | None = None,
) -> int:
    """Prepare (exit 2 on a bad config, no I/O), then dry-run or execute; `on_document` is given the run's
    document (the statistics database stores it)."""
    from iolens.engine import EngineNotFound, find_engine

    try:
        # --np, --nodes and the launcher go together (as the run asks them, before find's fewer processes).
        launch.RunRequest("ior", [], opts.np, opts.nodes, opts.launcher, opts.launcher_args).validate()
    except launch.LaunchError as exc:
        raise DriverError(str(exc)) from None
    plan_ = prepare(opts)
    if opts.dry_run:
        dry_run_report(plan_, opts, console)
        return 0
    try:
        engine = find_engine()
    except EngineNotFound as exc:
        raise DriverError(str(exc), 1) from None
    if opts.launcher != "local" and shutil.which(opts.launcher) is None:
        raise DriverError(f"--launcher {opts.launcher}: {opts.launcher} not found on PATH")
    check_mpi_hints(plan_, engine)
    result = execute(plan_, opts, engine, console, err)
    if on_document is not None and result.document is not None:
        on_document(result.document)
    return result.exit_code
