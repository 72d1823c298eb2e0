"""Helpers shared by the bench/ scripts: running a child with its rusage, scratch directories, the machine
description, statistics and the text tables written to bench/results/.

The scripts import this module from their own directory (``python3 bench/NAME.py`` puts bench/ first on
``sys.path``); it is not part of the iolens package.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
MIB = 1 << 20
GIB = 1 << 30

# Where an engine built by the usual recipes ends up, in the order they are tried.
ENGINE_CANDIDATES = (
    REPO_DIR / "build" / "native" / "iolens-bench",
    Path("/tmp/bench-build/iolens-bench"),
)


@dataclass
class Run:
    """One finished child process: exit status, wall time and CPU time (its own and its reaped children's)."""

    cmd: list[str]
    returncode: int
    wall_s: float
    user_s: float
    sys_s: float
    stdout: str
    stderr: str

    @property
    def cpu_s(self) -> float:
        return self.user_s + self.sys_s

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def describe_failure(self) -> str:
        tail = (self.stderr.strip() or self.stdout.strip()).splitlines()[-3:]
        return f"exit status {self.returncode}: {' | '.join(tail) or '(no output)'}"


def run(cmd: Sequence[str | os.PathLike[str]], *, cwd: Path | None = None) -> Run:
    """Runs cmd to completion and returns its rusage from wait4 (so the figures are the child's alone,
    including the processes it forked and waited for, and not this Python process's)."""
    argv = [os.fspath(c) for c in cmd]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        return Run(
            argv,
            proc.returncode,
            wall,
            ru.ru_utime,
            ru.ru_stime,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


# Measures a command from a small process of its own: a child forked from a big Python process would count
# the parent's pages it shared before its exec in its ru_maxrss (the kernel keeps the larger of the two).
_PEAK = (
    "import os, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "_, status, ru = os.wait4(p.pid, 0)\n"
    "print(time.perf_counter() - t, ru.ru_maxrss / 1024, os.waitstatus_to_exitcode(status))\n"
)


def peak(cmd: Sequence[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MiB (ru_maxrss of cmd, from wait4) and exit status of cmd (its standard
    output thrown away); BenchError when it fails."""
    out = subprocess.run([sys.executable, "-c", _PEAK, *cmd], env=env, capture_output=True, text=True)
    try:
        wall, mib, status = out.stdout.split()
    except ValueError:
        raise BenchError(f"{' '.join(cmd)}: {out.stderr[-300:]}") from None
    if int(status) != 0:
        raise BenchError(f"{' '.join(cmd)}: exit {status}: {out.stderr[-300:]}")
    return float(wall), float(mib), int(status)


def check(r: Run, what: str) -> Run:
    if not r.ok:
        raise BenchError(f"{what} failed ({r.describe_failure()}): {shlex.join(r.cmd)}")
    return r


class BenchError(RuntimeError):
    """A benchmark could not be run (missing tool, failing command); reported without a traceback."""


def _sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def main_wrapper(main: Any) -> None:
    """Runs main() so that SIGTERM and Ctrl-C still run the scratch-directory clean-ups."""
    signal.signal(signal.SIGTERM, _sigterm)
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


@contextmanager
def scratch_dir(base: Path, tag: str) -> Iterator[Path]:
    """A fresh directory under base that is removed, with everything in it, when the block ends."""
    if not base.is_dir():
        raise BenchError(f"scratch base {base} is not a directory")
    d = Path(tempfile.mkdtemp(prefix=f"iolens-bench-{tag}-", dir=base))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def find_engine(explicit: str | None) -> Path:
    if explicit:
        p = Path(explicit)
        if not os.access(p, os.X_OK):
            raise BenchError(f"--engine {p}: not an executable file")
        return p.resolve()
    env = os.environ.get("IOLENS_BENCH")
    if env and os.access(env, os.X_OK):
        return Path(env).resolve()
    for c in ENGINE_CANDIDATES:
        if os.access(c, os.X_OK):
            return c
    found = shutil.which("iolens-bench")
    if found:
        return Path(found)
    raise BenchError(
        "iolens-bench not found; build it with\n"
        "  cmake -S native -B build/native -DCMAKE_BUILD_TYPE=Release -DIOLENS_TESTS=OFF && "
        "cmake --build build/native -j\n"
        "or name it with --engine PATH or $IOLENS_BENCH"
    )


def build_plain_loop(dest: Path) -> Path:
    """Compiles bench/plain_loop.c with gcc -O2 into dest and returns the executable."""
    return build_c("plain_loop.c", dest)


def build_c(source: str, dest: Path) -> Path:
    """Compiles bench/<source> (a one-file C program) with gcc -O2 into dest/<its stem> and returns the
    executable."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise BenchError(f"gcc not found: it is needed to build bench/{source}")
    exe = dest / Path(source).stem
    check(
        run([gcc, "-O2", "-std=c11", "-Wall", "-Wextra", "-o", str(exe), str(BENCH_DIR / source)]),
        f"building {source}",
    )
    return exe


def engine_doc(path: Path) -> dict[str, Any]:
    """Reads an engine result document and refuses one that did not succeed or has an unknown schema."""
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise BenchError(f"engine document {path}: {e}") from e
    if doc.get("schema_version") != 1:
        raise BenchError(f"engine document {path}: schema_version {doc.get('schema_version')!r} is not 1")
    if doc.get("status") != "ok":
        raise BenchError(f"engine run failed: {doc.get('error')}")
    return doc


def phase(doc: dict[str, Any], name: str, iteration: int = 0) -> dict[str, Any]:
    for p in doc["phases"]:
        if p["name"] == name and p["iteration"] == iteration:
            return dict(p)
    raise BenchError(f"engine document has no {name} phase (iteration {iteration})")


def median(xs: Sequence[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def spread(xs: Sequence[float]) -> str:
    """min–max of the runs, so a reader sees how noisy the median is."""
    if not xs:
        return "-"
    return f"{_cell(float(min(xs)))}–{_cell(float(max(xs)))}"


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def paired_ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """a[i] / b[i] for runs taken side by side: each pair shares the machine's state of that moment, so
    their ratio carries less of the machine's drift than a ratio of two medians does."""
    return [ratio(x, y) for x, y in zip(a, b, strict=True)]


def bootstrap_ci(
    xs: Sequence[float], level: float = 0.95, rounds: int = 4000, seed: int = 1
) -> tuple[float, float]:
    """A percentile-bootstrap confidence interval of the median of xs (fixed seed: the same runs give the
    same interval). With 9 runs it is coarse, but it says whether a 3% gap is more than the noise."""
    if len(xs) < 2:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(rounds))
    lo = meds[int((1 - level) / 2 * rounds)]
    hi = meds[min(rounds - 1, int((1 + level) / 2 * rounds))]
    return (lo, hi)


def bootstrap_rounds_ci(
    rounds: Sequence[Any], stat: Any, level: float = 0.95, draws: int = 4000, seed: int = 1
) -> tuple[float, float]:
    """A percentile-bootstrap confidence interval of stat(rounds), resampling whole rounds (each round holds
    every configuration's run of that moment, so the pairing survives the resampling). For a statistic of
    several medians, such as the ratio of two added costs, where a run-by-run ratio of small differences
    would be mostly noise."""
    if len(rounds) < 2:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    draws_ = (stat(rng.choices(list(rounds), k=len(rounds))) for _ in range(draws))
    vals = sorted(v for v in draws_ if v == v)  # a draw whose denominator was 0 gives NaN: left out
    if not vals:
        return (float("nan"), float("nan"))
    lo = vals[int((1 - level) / 2 * len(vals))]
    hi = vals[min(len(vals) - 1, int((1 + level) / 2 * len(vals)))]
    return (lo, hi)


def alternating(tools: Sequence[str], rounds: int) -> Iterator[tuple[int, str]]:
    """(round, tool) in an order that alternates the tools run by run and flips the order every other
    round (ABC CBA ABC …), so a slow drift of the machine does not favour the tool that runs first."""
    for r in range(rounds):
        order = list(tools) if r % 2 == 0 else list(reversed(tools))
        for t in order:
            yield r, t


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(c: object) -> str:
    if isinstance(c, float):
        if c != c:  # NaN
            return "-"
        if abs(c) < 10:
            return f"{c:.3f}"
        return f"{c:.1f}" if abs(c) < 1000 else f"{c:.0f}"
    return str(c)


def _first_line(cmd: Sequence[str]) -> str:
    try:
        out = subprocess.run(list(cmd), capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    return out.strip().splitlines()[0] if out.strip() else "?"


def source_commit() -> str:
    """The git commit of this checkout (the engine's source when it was built here), marked when native/ or
    bench/ holds changes not committed."""
    git = ["git", "-C", str(REPO_DIR)]
    head = _first_line([*git, "rev-parse", "HEAD"])
    if head == "?":
        return "? (not a git checkout)"
    dirty = _first_line([*git, "status", "--porcelain", "--", "native", "bench"]) != "?"
    return head + (" + uncommitted changes in native/ or bench/" if dirty else "")


def engine_commit(version: str) -> str:
    """The git commit an engine was built from, as its --version line says ("... commit 1fe2ad43d996"),
    with what a "+dirty" suffix means; engines built before they said so get "unknown"."""
    words = version.split()
    if "commit" not in words[:-1]:
        return "unknown (this engine's --version does not name its commit)"
    commit = words[words.index("commit") + 1]
    if commit.endswith("+dirty"):
        return f"{commit} (built with uncommitted changes to native/ on top of {commit[: -len('+dirty')]})"
    return commit


def file_system(path: Path) -> str:
    """'fstype (source)' of the mount holding path."""
    out = _first_line(["findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", str(path)])
    parts = out.split()
    return f"{parts[0]} ({parts[1]})" if len(parts) >= 2 else out


def machine_lines(engine: Path | None = None, paths: Sequence[Path] = ()) -> list[str]:
    model = "?"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    osname = "?"
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                osname = line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    lines = [
        f"date:    {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"host:    nproc={_first_line(['nproc'])}, {model}, {mem_gib:.0f} GiB RAM",
        f"os:      {osname}, kernel {platform.release()}",
        f"load:    1-minute load average {os.getloadavg()[0]:.2f} when the benchmark started",
        f"source:  {source_commit()}",
    ]
    if engine is not None:
        version = _first_line([str(engine), "--version"])
        lines.append(f"engine:  {version} ({engine})")
        lines.append(f"engine commit: {engine_commit(version)}")
    for p in paths:
        lines.append(f"fs:      {p}: {file_system(p)}")
    return lines


@dataclass
class Report:
    """The text written to bench/results/<name>.txt: a title, the machine, sections of tables and notes,
    and the commands used."""

    name: str
    title: str
    header: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)

    def section(self, heading: str, text: str = "") -> None:
        self.body += ["", heading, "-" * len(heading)]
        if text:
            self.body.append(text)

    def notes(self, *paragraphs: str) -> None:
        """A Notes section: one wrapped bullet per paragraph."""
        self.section("Notes")
        for p in paragraphs:
            self.body.append(textwrap.fill(p, width=108, initial_indent="- ", subsequent_indent="  "))

    def add(self, text: str) -> None:
        self.body.append(text)

    def command(self, cmd: Sequence[str | os.PathLike[str]]) -> None:
        """Records a command once (the first run of each kind), with scratch paths as they were."""
        line = shlex.join(os.fspath(c) for c in cmd)
        if line not in self.commands:
            self.commands.append(line)

    def text(self) -> str:
        """The report, with paths inside this checkout written relative to its root (a recorded result
        names the code, not the machine it ran on)."""
        out = [
            self.title,
            "=" * len(self.title),
            *self.header,
            *self.body,
            "",
            "Commands (one of each kind; scratch paths were temporary directories, removed afterwards)",
            "-" * 40,
        ]
        out += [f"  {c}" for c in self.commands]
        return "\n".join(out).replace(f"{REPO_DIR}/", "") + "\n"

    def emit(self, out: str | None, quick: bool) -> None:
        """Prints the report and writes it: to --out if given, else to bench/results/<name>.txt for a full
        run (a --quick run only prints, so a smoke test does not overwrite the recorded results)."""
        self.body += ["", f"1-minute load average when the benchmark ended: {os.getloadavg()[0]:.2f}"]
        text = self.text()
        print(text)
        target = Path(out) if out else (None if quick else RESULTS_DIR / f"{self.name}.txt")
        if target is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            print(f"written to {target}")


def common_args(p: argparse.ArgumentParser, default_runs: int = 5) -> None:
    p.add_argument("--quick", action="store_true", help="few, small runs: a smoke test that takes seconds")
    p.add_argument(
        "--runs",
        type=int,
        default=None,
        help=f"runs per tool and configuration (default {default_runs}; 1 with --quick)",
    )
    p.add_argument(
        "--engine",
        default=None,
        help="path of iolens-bench (default: $IOLENS_BENCH, build/native, /tmp/bench-build, then PATH)",
    )
    p.add_argument("--out", default=None, help="write the results here instead of bench/results/<name>.txt")


def profiler_lib(p: argparse.ArgumentParser) -> tuple[argparse.Namespace, Path]:
    """The arguments of a profiler benchmark (--build too) and the runtime built there; exits when it is not
    built or MPI's mpicc and mpirun are not on PATH."""
    p.add_argument("--build", default=str(REPO_DIR / "build" / "native"), help="a CMake build of native/")
    args = p.parse_args()
    lib = Path(args.build) / "libiolens-profile.so"
    if not lib.is_file():
        raise SystemExit(f"{lib}: not built (make native)")
    if shutil.which("mpicc") is None or shutil.which("mpirun") is None:
        raise SystemExit("mpicc and mpirun are needed")
    return args, lib


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)
