"""The cases: fio job files (jobs/*.fio) and IOR/mdtest command lines (ior_lines.txt), kept as data beside
this code. A job file names its files through ${FIDELITY_DIR} and its size through ${FIDELITY_SIZE}, which the
harness sets (both tools expand environment variables in job files); its first lines say what it is:

    ; fidelity: size=64m                  the size of the recorded bench (the test and --quick use less)
    ; fidelity: reason=FIELD[,FIELD]: TEXT   which device counters may differ between the tools, and why
"""

from __future__ import annotations

import fnmatch
import shlex
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
JOBS = HERE / "jobs"
LINES = HERE / "ior_lines.txt"
SIZE_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str) -> int:
    t = text.strip().lower()
    if t and t[-1] in SIZE_UNITS:
        return int(t[:-1]) * SIZE_UNITS[t[-1]]
    return int(t)


@dataclass(frozen=True)
class FioCase:
    id: str
    job: Path
    size: int  # bytes per job instance (FIDELITY_SIZE)
    reason: str | None  # a documented reason why device work may differ, else None
    writes: bool  # the job writes (its files are written once before the timed runs)


@dataclass(frozen=True)
class IorCase:
    id: str
    kind: str  # ior or mdtest
    np: int
    args: tuple[str, ...]  # without -o / -d, which the harness adds
    reason: str | None


def fio_case(job: Path, size: int | None = None) -> FioCase:
    meta: dict[str, str] = {}
    writes = False
    for line in job.read_text().splitlines():
        s = line.strip()
        if s.startswith("; fidelity:"):
            key, _, value = s[len("; fidelity:") :].strip().partition("=")
            meta[key.strip()] = value.strip()
        key, eq, value = s.replace(" ", "").partition("=")
        if eq and key in ("rw", "readwrite"):
            writes = writes or value not in ("read", "randread")
    return FioCase(
        id=job.stem,
        job=job,
        size=size if size is not None else parse_size(meta.get("size", "16m")),
        reason=meta.get("reason"),
        writes=writes,
    )


def fio_cases(pattern: str = "*") -> list[FioCase]:
    return [fio_case(j) for j in sorted(JOBS.glob("*.fio")) if _matches(j.stem, pattern)]


def ior_case(line: str) -> IorCase:
    """`ID NP ior|mdtest ARGS... [# reason: FIELD[,FIELD]: TEXT]`"""
    body, _, comment = line.partition("#")
    reason = comment.split("reason:", 1)[1].strip() if "reason:" in comment else None
    words = shlex.split(body)
    return IorCase(words[0], words[2], int(words[1]), tuple(words[3:]), reason)


def ior_cases(pattern: str = "*") -> list[IorCase]:
    out = []
    for line in LINES.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            c = ior_case(line)
            if _matches(c.id, pattern):
                out.append(c)
    return out


def scaled(c: IorCase, divisor: int) -> IorCase:
    """The same line with -b (unless it equals -t: IOR's hard shape), -s and -n divided (for --quick)."""
    args = list(c.args)
    t = args[args.index("-t") + 1] if "-t" in args else None
    for i, a in enumerate(args[:-1]):
        nxt = args[i + 1]
        if a == "-b" and nxt != t:
            n = parse_size(nxt) // divisor
            unit = args[args.index("-t") + 1] if t else "1m"
            args[i + 1] = str(max(parse_size(unit), n - n % parse_size(unit)))
        elif a in ("-s", "-n"):
            args[i + 1] = str(max(1, int(nxt) // divisor))
    return IorCase(c.id, c.kind, c.np, tuple(args), c.reason)


def _matches(name: str, pattern: str) -> bool:
    return any(fnmatch.fnmatchcase(name, p.strip()) for p in pattern.split(","))
