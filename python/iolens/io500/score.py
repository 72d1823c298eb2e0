"""IO500 scoring and validity, as the IO500 app (io500 at commit 02091cf) decides them.

Phases run in the order of spec.PHASES; standard mode leaves out the optional (extended-only) ones:

    ior-easy-write, mdtest-easy-write, timestamp, ior-hard-write, mdtest-hard-write, find,
    ior-easy-read, mdtest-easy-stat, ior-hard-read, mdtest-hard-stat, mdtest-easy-delete,
    mdtest-hard-read, mdtest-hard-delete, ior-rnd4K-easy-read (measured, not scored)

Extended mode adds mdworkbench-create (not scored) after mdtest-easy-write, find-easy (MD) after the
timestamp, find-hard (MD) and mdworkbench-bench (MD) after find, and mdworkbench-delete (not scored) before
mdtest-easy-delete.

Units: ior phases in GiB/s (bytes / seconds / 2**30), mdtest and md-workbench in kIOPS (items / seconds /
1000), find in kIOPS of *all* files it looked at (total files / seconds / 1000), not only the matches.

Scores: BW is the geometric mean of the scored ior phases, MD of the scored metadata phases; a phase whose
score is not positive is left out of its mean (a group with none left scores 0); SCORE = sqrt(BW * MD). The
extended score ([SCOREX]) is the same over all scored phases including the extended-only ones; it is
invalid when any phase that ran is invalid (the run-wide checks invalidate [SCORE] only, as in the app).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from iolens.io500.hashes import format_hash, score_hash
from iolens.io500.ini import Io500Config
from iolens.io500.spec import PHASE_BY_NAME, PHASES, PhaseSpec, ScoreGroup, runnable_phases

GIB = 2**30

IOR_WRITE_PHASES = frozenset({"ior-easy-write", "ior-hard-write"})
IOR_READ_PHASES = frozenset({"ior-easy-read", "ior-hard-read", "ior-rnd4K-easy-read"})
FIND_PHASES = frozenset({"find", "find-easy", "find-hard"})
MDWORKBENCH_PHASES = frozenset({"mdworkbench-create", "mdworkbench-bench", "mdworkbench-delete"})


def ior_score(bytes_moved: float, seconds: float) -> float:
    """An ior phase's score in GiB/s."""
    return bytes_moved / seconds / GIB if seconds > 0 else 0.0


def md_score(items: float, seconds: float) -> float:
    """An mdtest / md-workbench phase's score in kIOPS (a find phase passes the total files it scanned)."""
    return items / seconds / 1000 if seconds > 0 else 0.0


@dataclass
class PhaseOutcome:
    """What the driver measured for one phase: the inputs of the validity rules and of result.txt."""

    name: str
    score: float  # GiB/s or kIOPS, as above
    runtime_s: float  # the phase's time (t_delta): the engine's time for its work, without the launch
    errors: int = 0  # errors the benchmark counted, data verification included
    write_time_s: float | None = None  # ior write phases: time of the write (IOR's write time)
    stonewall_hit_s: float | None = None  # ior write phases: when the stonewall stopped the writers
    found: int | None = None  # find phases: files that matched
    find_failed: bool = False  # find phases: the find itself failed
    iterations: int | None = None  # mdworkbench-bench: iterations done (must be 2)
    # result.txt lines this phase prints before its own validity messages (exe, nproc, ...) and after them
    # (throughput-stonewall, rate-stonewall, found, total-files, ...); values already formatted.
    setup_lines: list[tuple[str, str]] = field(default_factory=list)
    result_lines: list[tuple[str, str]] = field(default_factory=list)
    t_start: datetime | None = None
    t_end: datetime | None = None
    # pause-dir set: when the wait for the pause file began (t_pause) and the file looked for.
    pause_started: datetime | None = None
    pause_file: str | None = None


@dataclass(frozen=True)
class RunRules:
    """The settings the validity rules depend on (from the config and the command line)."""

    stonewall: int = 300
    minwrite: int = 300  # 30 under Student Cluster Competition rules
    dry_run: bool = False
    pause_dir: bool = False
    files_per_dir: bool = False  # mdtest-hard files-per-dir set (> 0)

    @classmethod
    def from_config(cls, config: Io500Config, dry_run: bool = False) -> RunRules:
        """The rules of a parsed config (and of --dry-run)."""
        fpd = config.get("mdtest-hard", "files-per-dir")
        return cls(
            stonewall=config.stonewall,
            minwrite=config.minwrite,
            dry_run=dry_run,
            pause_dir=config.get("debug", "pause-dir") is not None,
            files_per_dir=fpd is not None and int(fpd) > 0,
        )


def phase_reasons(spec: PhaseSpec, outcome: PhaseOutcome, rules: RunRules) -> tuple[list[str], list[str]]:
    """Why a phase is invalid: (the phase's own checks, the driver's checks after it), as the app words them.

    The two lists are written at different places of the phase's section in result.txt.
    """
    own: list[str] = []
    name = spec.name
    if name in IOR_WRITE_PHASES or name in IOR_READ_PHASES:
        if outcome.errors:
            own.append(f"Errors ({outcome.errors}) occured during phase in IOR. This invalidates your run.")
        if (
            name in IOR_WRITE_PHASES
            and outcome.write_time_s is not None
            and outcome.write_time_s < rules.stonewall
        ):
            hit = outcome.stonewall_hit_s if outcome.stonewall_hit_s is not None else 0.0
            own.append(
                f"Write phase needed {outcome.write_time_s:f}s instead of stonewall {rules.stonewall}s. "
                f"Stonewall was hit at {hit:.1f}s"
            )
    elif name in FIND_PHASES:
        if outcome.find_failed:
            own.append("PFind returned with an error, this is invalid.")
        elif outcome.found == 0:
            own.append("Find didn't find anything, this is likely invalid.")
    elif name in MDWORKBENCH_PHASES:
        if outcome.errors:
            own.append(
                f"Errors ({outcome.errors}) occured during the md-workbench phase. This invalidates your run."
            )
        if name == "mdworkbench-bench" and outcome.iterations is not None and outcome.iterations != 2:
            own.append(
                "During the md-workbench phase not two iterations are performed but "
                f"{outcome.iterations} This invalidates your run."
            )
    elif name.startswith("mdtest-") and outcome.errors:
        # iolens rule: the app does not look at mdtest's error count, but a failed verification
        # (mdtest-hard-read checks the data it reads) must not give a valid result.
        own.append(f"Errors ({outcome.errors}) occured during phase in mdtest. This invalidates your run.")

    after: list[str] = []
    if not rules.dry_run:
        if spec.verify_stonewall and outcome.runtime_s < rules.stonewall:
            after.append(
                f"Runtime of phase ({outcome.runtime_s:f}) is below stonewall time. This shouldn't happen!"
            )
        elif outcome.score == 0.0 and not spec.dummy:
            after.append("Resulting score shouldn't be 0.0")
    if spec.verify_stonewall and outcome.runtime_s < rules.minwrite:
        after.append("Runtime is smaller than expected minimum runtime")
    return own, after


def run_reasons(rules: RunRules) -> tuple[list[str], list[str]]:
    """Run-wide reasons: (set up before the start: dry run, pause-dir; found while validating the options)."""
    setup: list[str] = []
    if rules.dry_run:
        setup.append("DRY RUN MODE ACTIVATED")
    if rules.pause_dir:
        setup.append("PAUSING BETWEEN RUNS ACTIVATED")
    validate: list[str] = []
    if rules.stonewall != rules.minwrite:
        validate.append(f"stonewall-time {rules.stonewall}s != {rules.minwrite}s")
    if rules.files_per_dir:
        validate.append("files-per-dir is set")
    return setup, validate


@dataclass(frozen=True)
class Scores:
    md: float  # kIOPS
    bw: float  # GiB/s
    score: float  # sqrt(md * bw)


def group_score(scores: Mapping[str, float], group: ScoreGroup, extended: bool) -> float:
    """Geometric mean of the positive scores of one group, multiplied in phase order as the app does."""
    product = 1.0
    count = 0
    for spec in PHASES:
        if spec.group != group or (spec.optional and not extended):
            continue
        value = scores.get(spec.name, 0.0)
        if value <= 0:
            continue
        product *= value
        count += 1
    return math.pow(product, 1.0 / count) if count else 0.0


def compute_scores(scores: Mapping[str, float], extended: bool = False) -> Scores:
    """MD, BW and SCORE from phase scores (missing phases count as not run)."""
    md = group_score(scores, ScoreGroup.MD, extended)
    bw = group_score(scores, ScoreGroup.BW, extended)
    overall = 1.0
    overall *= md
    overall *= bw
    return Scores(md=md, bw=bw, score=math.sqrt(overall))


def hashed_phases(names: Iterable[str], extended: bool) -> list[str]:
    """The phases (of those given, in their order) whose score enters the standard or the extended hash."""
    out = []
    for name in names:
        spec = PHASE_BY_NAME.get(name)
        if spec is None or spec.group == ScoreGroup.NONE:
            continue
        if spec.optional == extended:
            out.append(name)
    return out


@dataclass
class PhaseVerdict:
    spec: PhaseSpec
    outcome: PhaseOutcome
    own_reasons: list[str]
    check_reasons: list[str]

    @property
    def valid(self) -> bool:
        return not self.own_reasons and not self.check_reasons

    @property
    def reasons(self) -> list[str]:
        return self.own_reasons + self.check_reasons


@dataclass
class Evaluation:
    """Everything the result files say about a run, computed from the phase outcomes."""

    mode: str
    version: str
    rules: RunRules
    phases: list[PhaseVerdict]
    setup_reasons: list[str]
    validate_reasons: list[str]
    valid: bool
    scores: Scores
    hash: int
    extended_valid: bool | None = None
    extended_scores: Scores | None = None
    extended_hash: int | None = None

    @property
    def hash_text(self) -> str:
        return format_hash(self.hash)

    @property
    def reasons(self) -> list[str]:
        """Every reason the run is invalid, each prefixed with where it came from."""
        out = [f"[run] {r}" for r in self.setup_reasons + self.validate_reasons]
        for v in self.phases:
            if not v.spec.optional:
                out.extend(f"[{v.spec.name}] {r}" for r in v.reasons)
        return out


def evaluate(
    outcomes: Sequence[PhaseOutcome], rules: RunRules, version: str, mode: str = "standard"
) -> Evaluation:
    """Apply the validity rules and compute scores and hashes, as the app does at the end of a run.

    `outcomes` are the phases that ran (any order; they are put in the app's order). A scored phase that did
    not run counts as score 0, which leaves it out of its mean.
    """
    allowed = {p.name: i for i, p in enumerate(runnable_phases(mode))}
    seen: set[str] = set()
    for o in outcomes:
        if o.name not in allowed:
            raise ValueError(f"phase {o.name!r} does not run in {mode} mode")
        if o.name in seen:
            raise ValueError(f"phase {o.name!r} given twice")
        seen.add(o.name)
    ordered = sorted(outcomes, key=lambda o: allowed[o.name])
    verdicts = []
    for o in ordered:
        spec = PHASE_BY_NAME[o.name]
        own, after = phase_reasons(spec, o, rules)
        verdicts.append(PhaseVerdict(spec, o, own, after))
    setup, validate = run_reasons(rules)
    valid = not setup and not validate and all(v.valid for v in verdicts if not v.spec.optional)
    scores_by_name = {o.name: o.score for o in ordered}
    names = [o.name for o in ordered]

    std = compute_scores(scores_by_name, extended=False)
    std_hash = score_hash(
        version,
        [(n, scores_by_name[n]) for n in hashed_phases(names, False)],
        std.md,
        std.bw,
        std.score,
        valid,
    )
    ev = Evaluation(mode, version, rules, verdicts, setup, validate, valid, std, std_hash)
    if mode == "extended":
        # As the app (main.c): its extended flag is cleared only after a phase that ran invalid
        # (is_valid_phase, which every phase resets before it runs); the run-wide checks (stonewall-time,
        # files-per-dir, dry run, pause-dir) clear the standard flag only.
        ext_valid = all(v.valid for v in verdicts)
        ext = compute_scores(scores_by_name, extended=True)
        ev.extended_valid = ext_valid
        ev.extended_scores = ext
        ev.extended_hash = score_hash(
            None,
            [(n, scores_by_name[n]) for n in hashed_phases(names, True)],
            ext.md,
            ext.bw,
            ext.score,
            ext_valid,
        )
    return ev
