"""The IO500 phases as iolens runs them: each phase's engine workload and arguments, derived from a config.

The arguments follow the IO500 app (io500 at commit 02091cf; its result.txt shows them in `exe` lines), mapped
onto iolens-bench's flags. Notes on them, and what differs from the app:

- `--dataPacketType=…` comes first on the ior and mdtest lines, as the app puts it (the engine writes IOR's
  and mdtest's packets byte for byte). The per-rank CSVs are passed as the app passes
  them (`-O saveRankPerformanceDetailsCSV=RESULTDIR/PHASE.csv`, `--saveRankPerformanceDetails=…`): the engine
  writes mdtest's, the driver writes IOR's and pfind's from the engine's documents (io500/rank_csv.py).
- The seeds (`-G`) are the app's (a hash of the phase and the run's timestamp) as an unsigned number: the app
  prints them as signed ints, the engine takes seeds >= 0; the bits are the same.
- ior-rnd4K-easy-read reads `-s -1` (as many segments as the files hold, as the current app does) where the
  app at 02091cf asked for 10,000,000 segments of 4 KiB, most of them past the end of the files.
- `API = MPIIO …` (any case, with the app's `--mpiio.*` options: hintsFileName, showHints, preallocate,
  useFileView, useStridedDatatype) runs the ior phases through the engine's MPI-IO backend, which needs MPI
  ranks (--launcher mpirun/srun); `collective = TRUE` in [ior-hard] (or its phases) passes -c as the app does,
  and is refused with POSIX, where the app's IOR would ignore it. iolens's mdtest and find run POSIX only, so
  an MPIIO API reaching an mdtest phase ([global] api) is refused. The hints files (and IOR_HINT__ variables)
  are checked by the engine before the first phase.
- `--keep-cache` (iolens io500 --keep-cache) is added to the ior read phases (io500/cache.py): the engine then
  keeps the page cache before them, as the app's IOR does; without it the engine evicts (its default).
- mdtest has no `--posix.odirect` in the engine: the option reaches the ior-easy phases only (a note says so
  for mdtest). An ior phase whose transfers are not a multiple of 512 bytes cannot be O_DIRECT: ior-hard's
  47008-byte transfers never are, so `--posix.odirect` reaching ior-hard is refused (PlanError), where the
  app's IOR would fail in the middle of the run; the error says to give ior-hard its own `API = POSIX`.

Nothing here does I/O but one probe: `plan()` checks the config (errors name the file and line, `PlanError`),
tries that datadir and resultdir can be made (an empty directory made and removed in each, or in its parent,
unless check_dirs is off as for --dry-run), and returns the phase table; the driver runs it.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from iolens.io500 import cache
from iolens.io500.hashes import hash_update
from iolens.io500.ini import Io500Config, scan_lines
from iolens.io500.spec import PHASE_BY_NAME, find_section, runnable_phases

GIB = 2**30
MIB = 2**20

# --quick: a short stonewall and sizes a laptop runs in seconds (the whole run well under a minute).
QUICK_STONEWALL_S = 2
QUICK_CAPS = {
    ("ior-easy", "blockSize"): 64 * MIB,  # bytes per rank
    ("ior-hard", "segmentCount"): 1000,  # 47 MB per rank
    ("mdtest-easy", "n"): 5000,
    ("mdtest-hard", "n"): 2000,
}

IOR_HARD_XFER = 47008
# Shares of the data directory's free space that ior-easy, and ior-easy and ior-hard together, may fill.
FREE_SHARE_EASY = 0.45
FREE_SHARE_ALL = 0.9
_FIT_WHY = (
    ": the engine refuses a write that cannot fit, stonewall or not (a write that ends before the stonewall "
    "is invalid, as in the app)"
)
MDTEST_HARD_BYTES = 3901
# O_DIRECT transfers must be a multiple of the device's logical block size; 512 bytes is the least any Linux
# file system asks (the engine refuses other sizes before any I/O, as this planner does before the run).
O_DIRECT_ALIGN = 512

# Phase -> its option section ([ior-easy] holds the options of ior-easy-write/-read and ior-rnd4K-easy-read).
PARENT = {
    "ior-easy-write": "ior-easy",
    "ior-easy-read": "ior-easy",
    "ior-rnd4K-easy-read": "ior-easy",
    "ior-hard-write": "ior-hard",
    "ior-hard-read": "ior-hard",
    "mdtest-easy-write": "mdtest-easy",
    "mdtest-easy-stat": "mdtest-easy",
    "mdtest-easy-delete": "mdtest-easy",
    "mdtest-hard-write": "mdtest-hard",
    "mdtest-hard-stat": "mdtest-hard",
    "mdtest-hard-read": "mdtest-hard",
    "mdtest-hard-delete": "mdtest-hard",
    "mdworkbench-create": "mdworkbench",
    "mdworkbench-bench": "mdworkbench",
    "mdworkbench-delete": "mdworkbench",
}

# A phase that works on what another phase wrote: skipped (with a reason) when that one does not run.
NEEDS = {
    "ior-easy-read": "ior-easy-write",
    "ior-rnd4K-easy-read": "ior-easy-write",
    "ior-hard-read": "ior-hard-write",
    "mdtest-easy-stat": "mdtest-easy-write",
    "mdtest-easy-delete": "mdtest-easy-write",
    "mdtest-hard-stat": "mdtest-hard-write",
    "mdtest-hard-read": "mdtest-hard-write",
    "mdtest-hard-delete": "mdtest-hard-write",
    "find": "timestamp",
    "find-easy": "mdtest-easy-write",
    "find-hard": "timestamp",
    "mdworkbench-bench": "mdworkbench-create",
    "mdworkbench-delete": "mdworkbench-create",
}

ENGINE_KINDS = ("ior", "mdtest", "find", "md-workbench")

# md-workbench (extended mode), as the app runs it: 10 data sets per process, the reader 1 rank away, and,
# when the config does not set precreatePerSet and filesPerProc, both from mdtest-easy-write's rate: what it
# would create in min(stonewall, 60) s, spread over the processes and the 10 sets.
MDWB_SETS = 10
MDWB_RUN_S = 60
MDWB_DEFAULT_KIOPS = 10.0  # the app's rate when mdtest-easy-write did not run
QUICK_MDWB_PER_SET = 500  # --quick: objects per set and per iteration at most
MDWB_STEPS = {
    "mdworkbench-create": ["-1"],
    "mdworkbench-bench": ["-2", "-R=2", "-X"],
    "mdworkbench-delete": ["-3"],
}

# At most 20 digits (any 64-bit count): a longer number is malformed, not a slow int() or a huge size.
_SIZE_RE = re.compile(r"([0-9]{1,20})([kKmMgGtT]?)")
_SIZE_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class PlanError(ValueError):
    """A config iolens cannot run; the message names the file and line (or the option)."""


def parse_size(text: str) -> int | None:
    """An IOR size (`2m`, `47008`, `9920000m`: k/m/g/t are powers of 1024) in bytes; None if malformed."""
    m = _SIZE_RE.fullmatch(text.strip())
    if not m:
        return None
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


def format_size(n: int) -> str:
    """Bytes as the shortest exact IOR size text (`64m`, `47008`)."""
    for unit in ("t", "g", "m", "k"):
        size = _SIZE_UNITS[unit]
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return str(n)


def run_timestamp_seed(phase: str, timestamp: str) -> int:
    """The app's u_phase_unique_random_number(): the string hash of phase + timestamp (0 and -1 give 4711)."""
    value = hash_update(hash_update(0, phase), timestamp)
    return 4711 if value in (0, 0xFFFFFFFF) else value


@dataclass(frozen=True)
class RunDirs:
    """Where a run puts its data and results (after the timestamp-* options)."""

    datadir: str
    resultdir: str
    timestamp: str  # the app's "%Y.%m.%d-%H.%M.%S"


@dataclass
class PlannedPhase:
    """One phase of the run: what the driver launches (or why it does not)."""

    name: str
    kind: str  # "ior", "mdtest", "find", "md-workbench", "timestamp"
    args: list[str] = field(default_factory=list)  # engine arguments after the workload (no --np/--json)
    np: int | None = None  # ranks for this phase when not the run's (find's nproc)
    stonewall_s: int | None = None  # the phase stops after this (write phases, ior-rnd4K-easy-read)
    engine_phase: str = ""  # the phase of the engine's document that carries the figure
    skip: str | None = None  # why this phase does not run (run = FALSE, a phase it needs did not run)
    params: dict[str, str] = field(default_factory=dict)  # the key parameters, for --dry-run and the JSON

    @property
    def workload(self) -> str:
        return self.kind

    @property
    def runs_engine(self) -> bool:
        return self.kind in ENGINE_KINDS and self.skip is None

    def exe(self) -> str:
        """The command as result.txt's `exe` line shows it (the engine's name for the app's ./ior etc.)."""
        if self.kind not in ENGINE_KINDS:
            return ""
        return " ".join(["iolens-bench", self.kind, *self.args])


@dataclass
class Plan:
    config: Io500Config
    mode: str
    quick: bool
    dirs: RunDirs
    stonewall_s: int
    phases: list[PlannedPhase]
    notes: list[str] = field(
        default_factory=list
    )  # what iolens does differently from the app for this config
    caps: dict[str, str] = field(default_factory=dict)  # --quick: option -> "given -> used"
    cache_mode: str = cache.EVICT  # the page cache before the ior read phases (io500/cache.py)

    def phase(self, name: str) -> PlannedPhase | None:
        for p in self.phases:
            if p.name == name:
                return p
        return None

    def mdworkbench_counts(self, mdtest_easy_kiops: float, np: int) -> tuple[int, int]:
        """(precreatePerSet, filesPerProc) of the md-workbench phases: the config's when it sets them, else
        the app's rule from mdtest-easy-write's rate in kIOPS (MDWB_DEFAULT_KIOPS when it did not run), capped
        with --quick."""
        pps, fpp = (
            self.config.get("mdworkbench", "precreatePerSet"),
            self.config.get("mdworkbench", "filesPerProc"),
        )
        if pps is not None and fpp is not None:
            return int(pps), int(fpp)
        rate = mdtest_easy_kiops if mdtest_easy_kiops > 0 else MDWB_DEFAULT_KIOPS
        seconds = min(self.stonewall_s, MDWB_RUN_S)
        per_set = int(rate * seconds * 1000 / np) // MDWB_SETS
        if self.quick:
            per_set = min(per_set, QUICK_MDWB_PER_SET)
        return per_set, per_set


def mdworkbench_args(p: PlannedPhase, precreate: int | str, files: int | str) -> list[str]:
    """An md-workbench phase's full engine arguments once its counts are known (the app's order)."""
    return [*p.args, f"-P={precreate}", f"-I={files}", *MDWB_STEPS[p.name]]


# ------------------------------------------------------------------------------------------ config locations


def option_lines(config: Io500Config) -> dict[tuple[str, str], int]:
    """(section, option) -> the line of the config that set it last (app spellings)."""
    out: dict[tuple[str, str], int] = {}
    text = config.source.decode("utf-8", "surrogateescape")
    section = None
    for line in scan_lines(text):
        if line.kind == "section":
            section = find_section(line.name)
        elif line.kind == "pair" and section is not None:
            opt = section.option(line.name)
            if opt is not None:
                out[(section.name, opt.name)] = line.lineno
    return out


class _Where:
    def __init__(self, config: Io500Config) -> None:
        self.config = config
        self.lines = option_lines(config)

    def __call__(self, section: str, option: str) -> str:
        """Where an option comes from: 'CONFIG:LINE: option = value', or its section when it is a default."""
        value = self.config.get(section, option)
        line = self.lines.get((section, option))
        if line is not None:
            return f"{self.config.path}:{line}: {option} = {value}"
        return f"{self.config.path}: [{section}] {option} = {value} (default)"

    def error(self, section: str, option: str, message: str) -> PlanError:
        return PlanError(f"{self(section, option)}: {message}")


def option_error(config: Io500Config, section: str, option: str, message: str) -> PlanError:
    """An error about an option, naming the config line that set it (or its section, for a default)."""
    return _Where(config).error(section, option, message)


# ---------------------------------------------------------------------------------------------------- paths


def effective_dirs(config: Io500Config, timestamp: str) -> RunDirs:
    datadir = config.get("global", "datadir") or "./datafiles"
    resultdir = config.get("global", "resultdir") or "./results"
    if config.value("global", "timestamp-datadir"):
        datadir = f"{datadir}/{timestamp}"
    if config.value("global", "timestamp-resultdir"):
        resultdir = f"{resultdir}/{timestamp}"
    return RunDirs(datadir=datadir, resultdir=resultdir, timestamp=timestamp)


def _check_dir(where: _Where, option: str, path: str) -> None:
    """The directory exists and is writable, or can be made: its parent exists and is writable.

    Writable is tried, not inferred from the mode bits: an empty directory is made and removed at once
    (os.access says yes to root everywhere, and nothing but a try knows /proc, a read-only mount or an ACL).
    """
    p = Path(path)
    try:
        if p.exists():
            if not p.is_dir():
                raise where.error("global", option, f"{path} exists and is not a directory")
            _probe_dir(where, option, p, f"directory {path}")
            return
        parent = p.parent if str(p.parent) else Path(".")
        if parent.exists() and not parent.is_dir():
            raise where.error("global", option, f"{parent} is not a directory")
        if not parent.is_dir():
            raise where.error("global", option, f"parent directory {parent} does not exist")
    except PermissionError:
        # Path.exists() says so for a directory on the way that this user cannot enter (search permission).
        blocked = next((str(a) for a in reversed(p.absolute().parents) if not os.access(a, os.X_OK)), path)
        raise where.error("global", option, f"cannot enter {blocked} (permission denied)") from None
    _probe_dir(where, option, parent, f"parent directory {parent}")


def _probe_dir(where: _Where, option: str, directory: Path, what: str) -> None:
    """Make and remove an empty directory in `directory`; a failure is the option's error."""
    try:
        probe = tempfile.mkdtemp(prefix=".iolens-probe-", dir=directory)
    except OSError as exc:
        raise where.error(
            "global", option, f"{what} is not writable (cannot create a directory in it: {exc.strerror})"
        ) from None
    os.rmdir(probe)


# ------------------------------------------------------------------------------------------------- the plan


# The module options an `API = …` value may carry, per API, as the app passes them on to IOR (its
# --MODULE.* options) and as iolens's engine knows them.
MPIIO_OPTIONS = (
    "--mpiio.hintsFileName",
    "--mpiio.showHints",
    "--mpiio.preallocate",
    "--mpiio.useFileView",
    "--mpiio.useStridedDatatype",
)
API_OPTIONS: dict[str, tuple[str, ...]] = {
    "posix": ("--posix.odirect",),
    "mpiio": MPIIO_OPTIONS,
    "hdf5": (
        "--hdf5.hintsFileName",
        "--hdf5.showHints",
        "--hdf5.collectiveMetadata",
        "--hdf5.noFill",
        "--hdf5.setAlignment",
    ),
    "ncmpi": ("--ncmpi.hintsFileName", "--ncmpi.showHints"),
    "mmap": ("--mmap.madv_dont_need", "--mmap.madv_pattern"),
}
# The APIs over an MPI library: they need MPI ranks, and `collective` applies to them.
MPI_APIS = ("mpiio", "hdf5", "ncmpi")


@dataclass
class _Api:
    args: list[str]  # -a posix
    odirect: bool
    section: str  # where the API value comes from (for an error naming its line)
    option: str
    mpi: bool = False  # MPIIO, HDF5, NCMPI: needs MPI ranks; `collective` applies
    options: list[str] = field(default_factory=list)  # its --MODULE.* options, passed on as the app does
    kind: str = "posix"  # the API, lower case


def _api(config: Io500Config, where: _Where, phase: str) -> _Api:
    """The phase's API: its own API key, else its section's, else [global] api (as the app falls back)."""
    chain = [phase]
    if phase in PARENT:
        chain.append(PARENT[phase])
    value, section, option = None, "global", "api"
    for name in chain:
        spec = PHASE_BY_NAME[name]
        if spec.option("API") is not None and config.get(name, "API") is not None:
            value, section, option = config.get(name, "API"), name, "API"
            break
    if value is None:
        value = config.get("global", "api") or "POSIX"
    words = value.split()
    kind = words[0].lower() if words else ""
    if kind not in API_OPTIONS:
        raise where.error(
            section,
            option,
            f"API {words[0] if words else '(empty)'!r} is not supported: iolens runs "
            f"{', '.join(k.upper() for k in API_OPTIONS)}",
        )
    odirect = False
    options: list[str] = []
    for word in words[1:]:
        if kind == "posix" and word == "--posix.odirect":
            odirect = True
        elif word.split("=", 1)[0] in API_OPTIONS[kind]:
            options.append(word)
        else:
            raise where.error(
                section,
                option,
                f"API option {word!r} is not supported with {words[0]} "
                f"(iolens: {', '.join(API_OPTIONS[kind])})",
            )
    # The API's name as the config spells it (`-a POSIX`, as the app's exe lines show it).
    return _Api(["-a", words[0]], odirect, section, option, kind in MPI_APIS, options, kind)


def _collective(config: Io500Config, phase: str) -> tuple[bool, str]:
    """ior-hard's `collective`: the phase's own key, else [ior-hard]'s (as the app decides -c); and the
    section that said so."""
    for section in (phase, "ior-hard"):
        value = config.value(section, "collective")
        if value is not None:
            return bool(value), section
    return False, "ior-hard"


def _odirect_refusal(phase: str, transfer: int, api_section: str) -> str:
    """Why a phase cannot run with --posix.odirect (its transfers are not O_DIRECT-aligned); what to do."""
    if phase.startswith("ior-hard"):
        # Linux refuses (EINVAL) an O_DIRECT write whose size or offset is not a multiple of the logical block
        # size; 47008 is not a multiple of even 512, so no file system that takes O_DIRECT would take these.
        why = (
            f"--posix.odirect cannot apply to {phase}: ior-hard's fixed {IOR_HARD_XFER}-byte transfers are "
            f"not a multiple of {O_DIRECT_ALIGN} bytes, so they cannot be O_DIRECT (IOR's writes would fail "
            "mid-run); "
        )
        if api_section in ("ior-hard", phase):
            return why + f"remove --posix.odirect from [{api_section}] API"
        return why + (
            f"to keep O_DIRECT for ior-easy, give ior-hard its own API without it: add 'API = POSIX' to "
            f"[ior-hard] (or set the option in [ior-easy] API instead of [{api_section}])"
        )
    return (
        f"--posix.odirect cannot apply to {phase}: transferSize {transfer} is not a multiple of "
        f"{O_DIRECT_ALIGN} bytes, so its transfers cannot be O_DIRECT"
    )


def _size_option(config: Io500Config, where: _Where, section: str, option: str) -> int:
    text = config.get(section, option) or ""
    size = parse_size(text)
    if size is None or size <= 0:
        raise where.error(section, option, "expected a size > 0 (a number with k, m, g or t)")
    return size


def plan(
    config: Io500Config,
    mode: str = "standard",
    quick: bool = False,
    np: int = 1,
    timestamp: str = "1970.01.01-00.00.00",
    check_dirs: bool = True,
    free_bytes: int | None = None,
    free_inodes: int | None = None,
    mpi: bool = True,
    keep_cache: bool = False,
) -> Plan:
    """The phase table of a run of `config`; raise PlanError for what iolens cannot run (no I/O).

    `free_bytes` (the data directory's free space, if known) caps the ior sizes so that what the ior phases
    could write fits: the engine refuses a write larger than the free space even when a stonewall would stop
    it long before (IO500's defaults, 9920000m per process and 10,000,000 segments, never fit).
    `free_inodes` caps mdtest's item counts the same way (IO500's default of 1,000,000 files per process
    each for mdtest-easy and mdtest-hard is more than most file systems hold at 4 processes). A data
    directory too small for even one transfer or one item per process is refused here, before any I/O.
    `mpi` says whether the ranks are MPI ranks (a launcher other than local): MPIIO needs them.
    `keep_cache` gives the ior read phases --keep-cache (the app's IOR never evicts; iolens does by default).
    """
    where = _Where(config)
    notes: list[str] = []
    caps: dict[str, str] = {}
    dirs = effective_dirs(config, timestamp)
    if check_dirs:
        for option in ("datadir", "resultdir"):
            _check_dir(where, option, config.get("global", option) or "")

    if config.value("global", "io-buffers-on-gpu"):
        raise where.error("global", "io-buffers-on-gpu", "GPU buffers are not supported by iolens")
    for section in ("find", "find-easy", "find-hard"):
        if config.get(section, "external-script") is not None:
            raise where.error(section, "external-script", "external find scripts are not supported by iolens")
        nproc = config.value(section, "nproc")
        if isinstance(nproc, int) and not 1 <= nproc <= np:
            raise where.error(section, "nproc", f"must be between 1 and the run's {np} processes")

    # The config's own value is checked whatever --quick then uses instead: the config is wrong either way.
    if config.stonewall < 0:
        raise where.error("debug", "stonewall-time", "must not be negative")
    stonewall = QUICK_STONEWALL_S if quick else config.stonewall

    # ior-easy
    xfer = _size_option(config, where, "ior-easy", "transferSize")
    if xfer % 8:
        raise where.error("ior-easy", "transferSize", "must be a multiple of 8 bytes (iolens's data pattern)")
    block = _size_option(config, where, "ior-easy", "blockSize")
    # The exe lines show the sizes as the config wrote them (`-b 2048m`), as the app's do, unless capped.
    xfer_text = (config.get("ior-easy", "transferSize") or "").strip()
    block_text = (config.get("ior-easy", "blockSize") or "").strip()
    if block % xfer:
        raise where.error("ior-easy", "blockSize", f"must be a multiple of transferSize ({xfer} bytes)")
    segments = int(config.get("ior-hard", "segmentCount") or 0)
    if segments <= 0:
        raise where.error("ior-hard", "segmentCount", "must be at least 1")
    n_easy = int(config.get("mdtest-easy", "n") or 0)
    n_hard = int(config.get("mdtest-hard", "n") or 0)
    for section, n in (("mdtest-easy", n_easy), ("mdtest-hard", n_hard)):
        if n <= 0:
            raise where.error(section, "n", "must be at least 1")
    fpd_value = config.get("mdtest-hard", "files-per-dir")
    files_per_dir = int(fpd_value) if fpd_value is not None else 0

    if quick:
        cap = QUICK_CAPS[("ior-easy", "blockSize")]
        if block > cap:
            new = max(xfer, cap // xfer * xfer)
            caps["[ior-easy] blockSize"] = f"{config.get('ior-easy', 'blockSize')} -> {format_size(new)}"
            block, block_text = new, format_size(new)
        for (section, option), limit in QUICK_CAPS.items():
            if section == "ior-easy":
                continue
            given = {"segmentCount": segments, "n": n_easy if section == "mdtest-easy" else n_hard}[option]
            if given > limit:
                caps[f"[{section}] {option}"] = f"{given} -> {limit}"
        segments = min(segments, QUICK_CAPS[("ior-hard", "segmentCount")])
        n_easy = min(n_easy, QUICK_CAPS[("mdtest-easy", "n")])
        n_hard = min(n_hard, QUICK_CAPS[("mdtest-hard", "n")])
        if files_per_dir and n_hard % files_per_dir:
            raise where.error("mdtest-hard", "files-per-dir", f"--quick uses n = {n_hard}: must divide it")

    if free_bytes is not None and free_bytes < np * (xfer + IOR_HARD_XFER):
        raise where.error(
            "global",
            "datadir",
            f"the data directory's file system has {free_bytes} bytes free: too little for one transfer of "
            f"ior-easy and ior-hard per process ({np} x ({xfer} + {IOR_HARD_XFER}) bytes)",
        )
    if free_inodes is not None:
        # Every mdtest item is an inode; the directories (a few per process) and ior's files come on top.
        inode_budget = int(free_inodes * FREE_SHARE_ALL) - 16 * np - 64
        wanted = (n_easy + n_hard) * np
        if inode_budget < 2 * np:
            raise where.error(
                "global",
                "datadir",
                f"the data directory's file system has {free_inodes} free inodes: too few for mdtest",
            )
        if wanted > inode_budget:
            scale = inode_budget / wanted
            new_easy, new_hard = max(1, int(n_easy * scale)), max(1, int(n_hard * scale))
            if files_per_dir:
                new_hard = max(files_per_dir, new_hard // files_per_dir * files_per_dir)
            notes.append(
                f"[mdtest-easy] n {n_easy} -> {new_easy} and [mdtest-hard] n {n_hard} -> {new_hard} per "
                f"process to fit the free inodes of the data directory ({free_inodes}): the engine refuses "
                "to create more files than can fit, stonewall or not"
            )
            n_easy, n_hard = new_easy, new_hard
    if free_bytes is not None:
        easy_budget = int(free_bytes * FREE_SHARE_EASY) // np
        if block > easy_budget:
            new = max(xfer, easy_budget // xfer * xfer)
            notes.append(
                f"[ior-easy] blockSize {block_text} -> {format_size(new)} per process to fit "
                f"the free space of the data directory ({free_bytes / GIB:.1f} GiB){_FIT_WHY}"
            )
            block, block_text = new, format_size(new)
        hard_budget = int(free_bytes * FREE_SHARE_ALL) - block * np
        hard_cap = max(1, hard_budget // (IOR_HARD_XFER * np))
        if segments > hard_cap:
            notes.append(
                f"[ior-hard] segmentCount {segments} -> {hard_cap} to fit the free space of the data "
                f"directory ({free_bytes / GIB:.1f} GiB, ior-easy's files included){_FIT_WHY}"
            )
            segments = hard_cap

    d, r = dirs.datadir, dirs.resultdir
    fpp = bool(config.value("ior-easy", "filePerProc"))
    unique = bool(config.value("ior-easy", "uniqueDir"))
    seed = {
        g: str(run_timestamp_seed(g, timestamp))
        for g in ("ior-easy", "ior-hard", "mdtest-easy", "mdtest-hard", "md-workbench")
    }

    # [global] dataPacketType, first on every ior and mdtest line, as the app puts it.
    packet = "--dataPacketType=" + str(config.get("global", "dataPacketType") or "timestamp")

    def ior_easy(with_reorder: bool = True) -> list[str]:
        a = [packet, "-g", "-G", seed["ior-easy"], "-k", "-e", "-o", f"{d}/ior-easy/ior_file_easy"]
        if with_reorder:
            a += ["-C", "-Q", "1", "-O", f"stoneWallingStatusFile={r}/ior-easy.stonewall"]
            a += ["-t", xfer_text, "-b", block_text]
        return a + (["-u"] if unique else []) + (["-F"] if fpp else [])

    def ior_hard() -> list[str]:
        return [
            packet, "-C", "-Q", "1", "-g", "-G", seed["ior-hard"], "-k", "-e", "-o", f"{d}/ior-hard/file",
            "-O", f"stoneWallingStatusFile={r}/ior-hard.stonewall",
            "-t", str(IOR_HARD_XFER), "-b", str(IOR_HARD_XFER), "-s", str(segments),
        ]  # fmt: skip

    def md_easy() -> list[str]:
        return [
            packet, "-n", str(n_easy), "-u", "-L", "-F", "-P", "-G", seed["mdtest-easy"], "-N", "1",
            "-d", f"{d}/mdtest-easy", "-x", f"{r}/mdtest-easy.stonewall",
        ]  # fmt: skip

    def md_hard() -> list[str]:
        a = [packet, "-n", str(n_hard)]
        if files_per_dir:
            a += ["-I", str(files_per_dir)]
        return a + [
            "-t", "-w", str(MDTEST_HARD_BYTES), "-e", str(MDTEST_HARD_BYTES), "-P", "-G", seed["mdtest-hard"],
            "-N", "1", "-F", "-d", f"{d}/mdtest-hard", "-x", f"{r}/mdtest-hard.stonewall",
        ]  # fmt: skip

    def ior_api(phase: str, transfer: int) -> list[str]:
        api = _api(config, where, phase)
        need = NEEDS.get(phase)
        runs = _run_false(config, phase) is None and (need is None or _run_false(config, need) is None)
        if api.odirect and transfer % O_DIRECT_ALIGN and runs:  # a phase that does not run does no I/O
            raise where.error(api.section, api.option, _odirect_refusal(phase, transfer, api.section))
        if api.mpi and not mpi and runs:
            raise where.error(
                api.section,
                api.option,
                f"{api.args[1]} needs MPI ranks: run iolens io500 with --launcher mpirun or --launcher srun",
            )
        return api.args + (["--posix.odirect"] if api.odirect else []) + api.options

    def ior_csv(phase: str) -> list[str]:
        """IOR's per-rank CSV, RESULTDIR/PHASE.csv, where the app puts it (after the API)."""
        return ["-O", f"saveRankPerformanceDetailsCSV={r}/{phase}.csv"]

    def hard_c(phase: str) -> list[str]:
        """ior-hard's -c, where the app puts it (after -w, or -r -R)."""
        collective, section = _collective(config, phase)
        if collective and not _api(config, where, phase).mpi:
            # The app passes -c, which IOR's POSIX ignores; iolens never ignores a setting.
            raise where.error(
                section,
                "collective",
                "collective I/O needs API = MPIIO, HDF5 or NCMPI (POSIX and MMAP have no collective "
                "transfers)",
            )
        return ["-c"] if collective else []

    def md_api(phase: str) -> list[str]:
        api = _api(config, where, phase)
        if api.kind != "posix":
            raise where.error(
                api.section,
                api.option,
                f"{api.args[1]} reaches {phase}: iolens's mdtest runs POSIX only; set API = {api.args[1]} in "
                "[ior-easy] and [ior-hard] (or their phases) instead",
            )
        if api.odirect:
            note = (
                "--posix.odirect is not passed to mdtest phases (nor to md-workbench's): the engine's mdtest "
                "and md-workbench have no O_DIRECT option"
            )
            if note not in notes:
                notes.append(note)
        return api.args

    def md_workbench(phase: str) -> list[str]:
        # The app's arguments before the counts (-P, -I) and the phase's step, which the driver adds
        # (mdworkbench_args) once mdtest-easy-write's rate is known.
        verbosity = config.value("mdworkbench", "verbosity")
        waiting = config.get("mdworkbench", "waitingTime") or "0.0"
        a = ["--dataPacketType=" + str(config.get("global", "dataPacketType") or "timestamp")]
        a += ["-v"] * (verbosity if isinstance(verbosity, int) else 0)
        a += ["--process-reports", *md_api(phase), f"-o={d}/mdworkbench", f"-t={float(waiting):f}", "-O=1"]
        a += [f"--run-info-file={r}/mdworkbench.status", f"-D={MDWB_SETS}"]
        return a + [f"-G={seed['md-workbench']}"]

    sw = str(stonewall)
    phases: list[PlannedPhase] = []
    for spec in runnable_phases(mode):
        name = spec.name
        p = PlannedPhase(name, "ior")
        if name in ("ior-easy-write", "ior-easy-read") and fpp and _api(config, where, name).kind == "ncmpi":
            api = _api(config, where, name)
            raise where.error(
                api.section,
                api.option,
                f"{name} writes a file per process (filePerProc = TRUE), which -a NCMPI cannot do (nor the "
                "app's IOR): use another API for ior-easy, or filePerProc = FALSE",
            )
        if name == "ior-easy-write":
            p.args = ior_easy() + ["-w", "-D", sw, "-O", "stoneWallingWearOut=1", *ior_api(name, xfer)]
            p.args += ior_csv(name)
            p.stonewall_s, p.engine_phase = stonewall, "write"
        elif name == "ior-easy-read":
            p.args = ior_easy() + ["-r", "-R", *ior_api(name, xfer), *ior_csv(name)]
            p.engine_phase = "read"
        elif name == "ior-rnd4K-easy-read":
            api = _api(config, where, name)
            if api.kind in ("hdf5", "ncmpi") and _run_false(config, name) is None:
                # -z and -s -1 have no meaning in a data set of the library's own layout: IOR refuses them too
                # (the app's run would fail at this phase, after the others).
                raise where.error(
                    api.section,
                    api.option,
                    f"{name} reads random 4 KiB transfers (-z) of as many segments as the files hold "
                    f"(-s -1), which -a {api.args[1]} cannot do (nor the app's IOR): use POSIX or MPIIO for "
                    f"ior-easy, or set run = FALSE in [{name}]",
                )
            p.args = ior_easy(with_reorder=False) + [
                "-r", "-D", sw, "-z", "-z", *ior_api(name, 4096), *ior_csv(name), "-t", "4096", "-b", "4096",
                "-s", "-1", "-O", "stoneWallingWearOut=1",
            ]  # fmt: skip
            if fpp:
                p.args += ["-C", "-Q", "2"]
            p.stonewall_s, p.engine_phase = stonewall, "read"
        elif name == "ior-hard-write":
            p.args = ior_hard() + ["-w", *hard_c(name), "-D", sw, *ior_api(name, IOR_HARD_XFER)]
            p.args += [*ior_csv(name), "-O", "stoneWallingWearOut=1"]
            p.stonewall_s, p.engine_phase = stonewall, "write"
        elif name == "ior-hard-read":
            p.args = ior_hard() + ["-r", "-R", *hard_c(name), *ior_api(name, IOR_HARD_XFER), *ior_csv(name)]
            p.engine_phase = "read"
        elif name.startswith("mdtest-"):
            p.kind = "mdtest"
            base = md_easy() if name.startswith("mdtest-easy") else md_hard()
            step = name.rsplit("-", 1)[1]
            extra = {
                "write": ["-C", "-Y", "-W", sw],
                "stat": ["-T"],
                "read": ["-E", "-X"],
                "delete": ["-r"],
            }[step]
            # The app's order: the step's flags, the per-rank CSV, then the API.
            p.args = base + extra + [f"--saveRankPerformanceDetails={r}/{name}.csv", *md_api(name)]
            p.engine_phase = {"write": "file-create", "stat": "file-stat", "read": "file-read"}.get(
                step, "file-remove"
            )
            if step == "write":
                p.stonewall_s = stonewall
        elif name in ("find", "find-easy", "find-hard"):
            p.kind = "find"
            if name == "find":
                p.args = [d, "-newer", f"{r}/timestampfile", "-size", "3901c", "-name", "*01*"]
            elif name == "find-easy":
                p.args = [f"{d}/mdtest-easy/", "-name", "*01*"]
            else:
                p.args = [
                    f"{d}/mdtest-hard/",
                    "-newer",
                    f"{r}/timestampfile",
                    "-size",
                    "3901c",
                    "-name",
                    "*01*",
                ]
            nproc = config.value(name, "nproc")
            p.np = nproc if isinstance(nproc, int) else None
            p.engine_phase = "find"
        elif name == "timestamp":
            p.kind = "timestamp"
            p.params["file"] = f"{r}/timestampfile"
        elif name in MDWB_STEPS:
            p.kind = "md-workbench"
            p.args = md_workbench(name)
            p.engine_phase = "benchmark" if name == "mdworkbench-bench" else name.rsplit("-", 1)[1]
            if p.engine_phase == "create":
                p.engine_phase = "precreate"
            elif p.engine_phase == "delete":
                p.engine_phase = "cleanup"
        else:  # pragma: no cover - the spec and this table are written together
            raise AssertionError(f"phase {name} has no plan")
        if name in cache.IOR_READ_PHASES:
            if keep_cache:
                p.args.append("--keep-cache")
            p.params["cache"] = cache.mode_for(keep_cache)
        phases.append(p)
        _fill_params(p, xfer_text, block_text, segments, n_easy, n_hard, stonewall, fpp)

    _apply_skips(config, phases)
    pps, fpp_ = config.get("mdworkbench", "precreatePerSet"), config.get("mdworkbench", "filesPerProc")
    if mode == "extended" and (pps is None) != (fpp_ is None):
        # The app's validate(): both or neither.
        missing = "filesPerProc" if fpp_ is None else "precreatePerSet"
        given = "precreatePerSet" if fpp_ is None else "filesPerProc"
        raise where.error("mdworkbench", given, f"set {missing} too, or neither (the app's rule)")
    if config.value("debug", "pause-dir") is not None:
        notes.append("pause-dir is set: before each phase the run waits while PAUSE-DIR/PHASE exists")
    return Plan(config, mode, quick, dirs, stonewall, phases, notes, caps, cache.mode_for(keep_cache))


def _fill_params(
    p: PlannedPhase, xfer: str, block: str, segments: int, n_easy: int, n_hard: int, stonewall: int, fpp: bool
) -> None:
    if p.name.startswith("ior-easy"):
        p.params.update(transferSize=xfer, blockSize=block, filePerProc=str(fpp))
    elif p.name.startswith("ior-rnd4K"):
        p.params.update(transferSize="4096", segments="-1 (what the files hold)")
    elif p.name.startswith("ior-hard"):
        p.params.update(transferSize=str(IOR_HARD_XFER), segmentCount=str(segments))
    elif p.name.startswith("mdtest-easy"):
        p.params.update(n=str(n_easy))
    elif p.name.startswith("mdtest-hard"):
        p.params.update(n=str(n_hard), bytes=str(MDTEST_HARD_BYTES))
    elif p.kind == "md-workbench":
        p.params.update(dataSets=str(MDWB_SETS), counts="AUTO: from mdtest-easy-write's rate unless set")
    if p.stonewall_s is not None:
        p.params["stonewall"] = f"{stonewall} s"
    if p.np is not None:
        p.params["nproc"] = str(p.np)


def _run_false(config: Io500Config, phase: str) -> str | None:
    """The section whose `run = FALSE` skips the phase (its own or its parent's), or None."""
    for section in (phase, PARENT.get(phase)):
        spec = PHASE_BY_NAME.get(section) if section else None
        if spec is not None and spec.option("run") is not None and config.get(section, "run") == "FALSE":
            return section
    return None


def _apply_skips(config: Io500Config, phases: list[PlannedPhase]) -> None:
    """run = FALSE in the phase's section or its parent's; then phases that need a skipped one."""
    by_name = {p.name: p for p in phases}
    for p in phases:
        if p.skip is not None:
            continue
        section = _run_false(config, p.name)
        if section is not None:
            p.skip = f"run = FALSE in [{section}]"
    for p in phases:
        need = NEEDS.get(p.name)
        if p.skip is None and need is not None and need in by_name and by_name[need].skip is not None:
            p.skip = f"skipped: it needs {need}, which does not run"
