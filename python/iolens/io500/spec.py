"""The IO500 application's sections, options and phases, declared once (as io500 at commit 02091cf has them).

Every INI section of an IO500 config is one phase of the app (`global` and `debug` are dummy phases that
only carry options). The table below is the single source for the INI reader (which keys exist, their types
and defaults), the `config.ini` writer (the order the app prints them in), the config hash (which options
carry a value), and the scoring (which phases run in which mode, which score group they belong to).

It was generated once from `io500 --list` (tests/test_io500_ini.py checks that rendering these defaults
gives that listing byte for byte) and completed with what the listing cannot show, read from the app's phase
sources: each option's type, and whether an empty default is "no value" (NULL: not hashed) or the empty
string (hashed). The help texts are iolens's own words.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum, IntFlag


class OptType(Enum):
    """The value types the app checks while parsing (its INI_* types)."""

    STRING = "string"
    INT = "int"  # optional minus sign and digits
    UINT = "uint"  # digits only, 32 bit
    UINT64 = "uint64"  # digits only, 64 bit
    BOOL = "bool"  # true/false (any case) or 1/0, stored as TRUE/FALSE
    FLOAT = "float"  # digits, '.', 'e', '+', '-'


class PhaseType(IntFlag):
    """The app's phase type bits."""

    DUMMY = 1
    WRITE = 2
    READ = 4
    UPDATE = 8
    REMOVE = 16
    OPTIONAL = 32  # runs (and is scored) in extended mode only


class ScoreGroup(IntEnum):
    """Which geometric mean a phase's score enters; in the order the app computes and hashes them."""

    NONE = 0
    MD = 1
    BW = 2


@dataclass(frozen=True)
class OptionSpec:
    name: str  # as the app spells it (the INI reader matches it case-insensitively)
    type: OptType
    default: str | None  # None: no value (printed empty, not part of the config hash); "" is a value
    help: str


@dataclass(frozen=True)
class PhaseSpec:
    name: str
    type: PhaseType
    group: ScoreGroup
    options: tuple[OptionSpec, ...]
    runs: bool  # has a run step (appears as a [section] in result.txt); option-only sections do not
    verify_stonewall: bool = False  # a write phase: its runtime must reach the stonewall time

    @property
    def optional(self) -> bool:
        return bool(self.type & PhaseType.OPTIONAL)

    @property
    def dummy(self) -> bool:
        return bool(self.type & PhaseType.DUMMY)

    @property
    def unit(self) -> str:
        # The app decides the unit by the first letter of the phase name.
        return "GiB/s" if self.name.startswith("i") else "kIOPS"

    def option(self, name: str) -> OptionSpec | None:
        low = name.lower()
        for opt in self.options:
            if opt.name.lower() == low:
                return opt
        return None


S, INT, U, U64, B, F = (
    OptType.STRING,
    OptType.INT,
    OptType.UINT,
    OptType.UINT64,
    OptType.BOOL,
    OptType.FLOAT,
)

_API = OptionSpec(
    "API", S, None, "storage API for this phase (default: the API of the parent section or [global])"
)
_RUN = OptionSpec("run", B, "TRUE", "run this phase")
_VERBOSITY = OptionSpec("verbosity", INT, None, "verbosity passed to the benchmark (-v repeated)")
_COLLECTIVE = OptionSpec("collective", B, None, "collective I/O, where the API supports it")

_FIND_OPTIONS = (
    OptionSpec("external-script", S, None, "run this executable instead of the built-in parallel find"),
    OptionSpec("external-mpi-args", S, "", "launcher arguments for the external script"),
    OptionSpec("external-extra-args", S, "", "extra arguments for the external script"),
    OptionSpec("nproc", U, None, "number of processes for the find (default: all)"),
    _RUN,
    OptionSpec("pfind-queue-length", INT, "10000", "parallel find: work queue length"),
    OptionSpec("pfind-steal-next", B, "FALSE", "parallel find: steal work from the next rank"),
    OptionSpec(
        "pfind-parallelize-single-dir-access-using-hashing",
        B,
        "FALSE",
        "parallel find: split the reading of one directory between ranks by hashing",
    ),
)

_W, _R, _D = PhaseType.WRITE, PhaseType.READ, PhaseType.REMOVE
_OPT, _DUMMY = PhaseType.OPTIONAL, PhaseType.DUMMY

PHASES: tuple[PhaseSpec, ...] = (
    PhaseSpec(
        "global",
        _DUMMY,
        ScoreGroup.NONE,
        (
            OptionSpec("datadir", S, "./datafiles", "directory the benchmark writes its files into"),
            OptionSpec("timestamp-datadir", B, "TRUE", "append a timestamp directory to datadir"),
            OptionSpec("resultdir", S, "./results", "directory for the result files"),
            OptionSpec("timestamp-resultdir", B, "TRUE", "append a timestamp directory to resultdir"),
            OptionSpec("api", S, "POSIX", "default storage API; words after the first are API options"),
            OptionSpec("drop-caches", B, "FALSE", "drop the page cache before each I/O phase"),
            OptionSpec(
                "drop-caches-cmd",
                S,
                'sudo -n bash -c "echo 3 > /proc/sys/vm/drop_caches"',
                "command that drops the caches",
            ),
            OptionSpec("io-buffers-on-gpu", B, "FALSE", "allocate the I/O buffers on a GPU"),
            OptionSpec("verbosity", U, "1", "verbosity of the driver (1-10)"),
            OptionSpec("scc", B, "FALSE", "Student Cluster Competition rules (30 s minimum write time)"),
            OptionSpec(
                "dataPacketType", S, "timestamp", "data pattern: timestamp, offset, incompressible, random"
            ),
        ),
        runs=False,
    ),
    PhaseSpec(
        "debug",
        _DUMMY,
        ScoreGroup.NONE,
        (
            OptionSpec(
                "stonewall-time", INT, "300", "stonewall seconds; anything but 300 (30 with scc) is invalid"
            ),
            OptionSpec(
                "pause-dir", S, None, "pause before a phase while a file of its name is here; invalid"
            ),
        ),
        runs=False,
    ),
    PhaseSpec(
        "ior-easy",
        _DUMMY,
        ScoreGroup.NONE,
        (
            _API,
            OptionSpec("transferSize", S, "2m", "bytes per I/O call"),
            OptionSpec("blockSize", S, "9920000m", "bytes per rank; a multiple of transferSize"),
            OptionSpec("filePerProc", B, "TRUE", "one file per process"),
            OptionSpec("uniqueDir", B, "FALSE", "one directory per process"),
            _RUN,
            _VERBOSITY,
        ),
        runs=False,
    ),
    PhaseSpec("ior-easy-write", _W, ScoreGroup.BW, (_API, _RUN), runs=True, verify_stonewall=True),
    PhaseSpec(
        "mdtest-easy",
        _DUMMY,
        ScoreGroup.NONE,
        (_API, OptionSpec("n", U64, "1000000", "files per process"), _RUN),
        runs=False,
    ),
    PhaseSpec("mdtest-easy-write", _W, ScoreGroup.MD, (_API, _RUN), runs=True, verify_stonewall=True),
    PhaseSpec(
        "mdworkbench",
        _DUMMY,
        ScoreGroup.NONE,
        (
            _API,
            OptionSpec("waitingTime", F, "0.0", "waiting time per operation, relative to its runtime"),
            OptionSpec(
                "precreatePerSet", U64, None, "files to precreate per set (default: from mdtest-easy)"
            ),
            OptionSpec("filesPerProc", U64, None, "files per iteration and set (default: from mdtest-easy)"),
            _RUN,
            _VERBOSITY,
        ),
        runs=False,
    ),
    PhaseSpec("mdworkbench-create", _W | _OPT, ScoreGroup.NONE, (_RUN,), runs=True),
    PhaseSpec("timestamp", _DUMMY, ScoreGroup.NONE, (), runs=True),
    PhaseSpec("find-easy", _R | _OPT, ScoreGroup.MD, _FIND_OPTIONS, runs=True),
    PhaseSpec(
        "ior-hard",
        _DUMMY,
        ScoreGroup.NONE,
        (
            _API,
            OptionSpec("segmentCount", INT, "10000000", "segments of 47008 bytes per rank"),
            _COLLECTIVE,
            _RUN,
            _VERBOSITY,
        ),
        runs=False,
    ),  # fmt: skip
    PhaseSpec(
        "ior-hard-write", _W, ScoreGroup.BW, (_API, _COLLECTIVE, _RUN), runs=True, verify_stonewall=True
    ),
    PhaseSpec(
        "mdtest-hard",
        _DUMMY,
        ScoreGroup.NONE,
        (
            _API,
            OptionSpec("n", U64, "1000000", "files per process"),
            OptionSpec("files-per-dir", U64, None, "limit files per directory (mdtest -I); invalid"),
            _RUN,
        ),
        runs=False,
    ),
    PhaseSpec("mdtest-hard-write", _W, ScoreGroup.MD, (_API, _RUN), runs=True, verify_stonewall=True),
    PhaseSpec("find", _R, ScoreGroup.MD, _FIND_OPTIONS, runs=True),
    PhaseSpec("find-hard", _R | _OPT, ScoreGroup.MD, _FIND_OPTIONS, runs=True),
    PhaseSpec("mdworkbench-bench", _W | _OPT, ScoreGroup.MD, (_RUN,), runs=True),
    PhaseSpec("ior-easy-read", _R, ScoreGroup.BW, (_API, _RUN), runs=True),
    PhaseSpec("mdtest-easy-stat", _R, ScoreGroup.MD, (_API, _RUN), runs=True),
    PhaseSpec("ior-hard-read", _R, ScoreGroup.BW, (_API, _COLLECTIVE, _RUN), runs=True),
    PhaseSpec("mdtest-hard-stat", _R, ScoreGroup.MD, (_API, _RUN), runs=True),
    PhaseSpec("mdworkbench-delete", _D | _OPT, ScoreGroup.NONE, (_RUN,), runs=True),
    PhaseSpec("mdtest-easy-delete", _D, ScoreGroup.MD, (_API, _RUN), runs=True),
    PhaseSpec("mdtest-hard-read", _R, ScoreGroup.MD, (_API, _RUN), runs=True),
    PhaseSpec("mdtest-hard-delete", _D, ScoreGroup.MD, (_API, _RUN), runs=True),
    PhaseSpec("ior-rnd4K-easy-read", _R, ScoreGroup.NONE, (_API, _RUN), runs=True),
)

PHASE_BY_NAME: dict[str, PhaseSpec] = {p.name: p for p in PHASES}
_PHASE_BY_LOWER: dict[str, PhaseSpec] = {p.name.lower(): p for p in PHASES}

MODES = ("standard", "extended")


def find_section(name: str) -> PhaseSpec | None:
    """The phase whose section is `name`, compared case-insensitively as the app does."""
    return _PHASE_BY_LOWER.get(name.lower())


def runnable_phases(mode: str) -> tuple[PhaseSpec, ...]:
    """The phases that run, in order: in standard mode the optional (extended-only) phases are left out."""
    if mode not in MODES:
        raise ValueError(f"unknown IO500 mode {mode!r} (expected one of {', '.join(MODES)})")
    return tuple(p for p in PHASES if p.runs and (mode == "extended" or not p.optional))
