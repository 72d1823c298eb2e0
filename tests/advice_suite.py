"""The advice-quality suite (tests/data/advice_suite/README.md): real programs and small C, MPI and HDF5 codes
whose right advice is written down in cases.json, each built here and run under `iolens profile`; then the
rules that fired against the rules that should have, and the precision and recall of the rules over the suite.

`python -m tests.advice_suite` runs the whole suite and prints its table (the runtime from build/native, or
IOLENS_PROFILE_LIB); tests/test_advice_quality.py runs it under pytest.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolens.profile import advice
from iolens.profile.job import load_jobs
from iolens.profile.report import job_report

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "tests" / "data" / "advice_suite"
RULES = [r.__name__ for r in advice.RULES]
# Running as root and oversubscribing 2 cores are the test machine's needs (tests/conftest.py's mpi_env).
MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_rmaps_base_oversubscribe": "1",
    "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
}


class CaseSkipped(Exception):
    """A tool the case needs is missing here."""


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    command: list[str]
    fires: frozenset[str]
    why: str
    ranks: int = 1
    build: dict[str, Any] | None = None
    setup: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Environment of the profiled run and of the report ("{work}": the case's directory), e.g.
    # IOLENS_PARALLEL_FS to make the case's directory count as on a parallel file system.
    env: dict[str, str] = field(default_factory=dict)
    # Phrases no advice of the case may hold: what the program does already ("use collective MPI-IO").
    never_says: tuple[str, ...] = ()


def load_cases(path: Path = SUITE / "cases.json") -> list[Case]:
    doc = json.loads(path.read_text())
    cases = []
    for c in doc["cases"]:
        unknown = set(c["fires"]) - set(RULES)
        if unknown:
            raise ValueError(f"{path}: case {c['name']}: unknown rules {sorted(unknown)}")
        cases.append(
            Case(
                name=c["name"],
                what=c["what"],
                command=list(c["command"]),
                fires=frozenset(c["fires"]),
                why=c["why"],
                ranks=int(c.get("ranks", 1)),
                build=c.get("build"),
                setup=c.get("setup", {}),
                evidence=c.get("evidence", {}),
                env=c.get("env", {}),
                never_says=tuple(c.get("never_says", ())),
            )
        )
    return cases


@dataclass
class Outcome:
    case: Case
    fired: frozenset[str]
    report: dict[str, Any]
    seconds: float  # the profiled run, wall clock
    printed: dict[str, int]  # what the program said it did: its KEY=N lines

    @property
    def right(self) -> bool:
        return self.fired == self.case.fires

    def expected_evidence(self) -> dict[str, dict[str, int]]:
        """The case's evidence, "=KEY" values replaced by the program's own count."""
        out: dict[str, dict[str, int]] = {}
        for rule, pins in self.case.evidence.items():
            out[rule] = {
                k: self.printed[v[1:]] if isinstance(v, str) and v.startswith("=") else v
                for k, v in pins.items()
            }
        return out


def _printed(stdout: str) -> dict[str, int]:
    out = {}
    for line in stdout.splitlines():
        key, eq, value = line.strip().partition("=")
        if eq and key.isidentifier() and value.isdigit():
            out[key] = int(value)
    return out


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise CaseSkipped(f"{tool} not found")
    return path


def build(case: Case, bin_dir: Path) -> None:
    """Compile the case's C source into bin_dir (once)."""
    b = case.build
    if not b:
        return
    out = bin_dir / Path(b["source"]).stem
    if out.exists():
        return
    cmd = [
        _need(b["compiler"]),
        "-O2",
        "-Wall",
        "-o",
        str(out),
        str(SUITE / b["source"]),
        *b.get("flags", []),
    ]
    if "pkg_config" in b:
        flags = subprocess.run(
            [_need("pkg-config"), "--cflags", "--libs", b["pkg_config"]], capture_output=True, text=True
        )
        if flags.returncode != 0:
            raise CaseSkipped(f"pkg-config {b['pkg_config']}: {flags.stderr.strip()}")
        cmd += shlex.split(flags.stdout)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{case.name}: {shlex.join(cmd)} failed:\n{r.stderr}")


def prepare(case: Case, work: Path) -> None:
    """The case's inputs, made before the profiled run (not profiled)."""
    s = case.setup
    if "tree" in s:
        t = s["tree"]
        d = work / t["dir"]
        d.mkdir()
        for i in range(t["files"]):
            (d / f"f{i:04d}.txt").write_bytes(bytes([97 + i % 26]) * t["bytes"])
    if "file" in s:
        with open(work / s["file"]["name"], "wb") as f:
            for _ in range(s["file"]["mib"]):
                f.write(b"\x5a" * (1 << 20))
    if "sql" in s:
        q = s["sql"]
        lines = ["CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, value REAL);"]
        if q["transaction"]:
            lines.append("BEGIN;")
        lines += [f"INSERT INTO t (name, value) VALUES ('row {i}', {i * 0.5});" for i in range(q["rows"])]
        if q["transaction"]:
            lines.append("COMMIT;")
        (work / q["file"]).write_text("\n".join(lines) + "\n")


def _argv(case: Case, bin_dir: Path) -> list[str]:
    subst = {"{python}": sys.executable, "{bin}": str(bin_dir), "{data}": str(SUITE)}
    out = []
    for a in case.command:
        for k, v in subst.items():
            a = a.replace(k, v)
        out.append(a)
    if not case.build:
        _need(out[0])
    return out


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    """os.environ with these values while the report is made (the report reads IOLENS_PARALLEL_FS)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_case(case: Case, root: Path, bin_dir: Path, iolens: list[str], lib: Path) -> Outcome:
    """Build, prepare and run one case under `iolens profile` in a directory of its own under root (on the
    file system the suite's expectations assume: a disk, not a tmpfs), and report its logs."""
    build(case, bin_dir)
    argv = _argv(case, bin_dir)
    work = root / case.name
    work.mkdir()
    prepare(case, work)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env["IOLENS_PROFILE_LIB"] = str(lib)
    case_env = {k: v.replace("{work}", str(work)) for k, v in case.env.items()}
    env.update(case_env)
    launch: list[str] = []
    if case.ranks > 1:
        _need("mpirun")
        env.update(MPI_ENV)
        launch = ["--launcher", "mpirun", "--np", str(case.ranks)]
    logs = work / "iolens-logs"
    cmd = [*iolens, "profile", "--no-report", "--out", str(logs), *launch, "--", *argv]
    t0 = time.monotonic()
    r = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{case.name}: {shlex.join(cmd)} exited {r.returncode}:\n{r.stderr[-2000:]}")
    with _environ(case_env):
        jobs = load_jobs(logs)
        if len(jobs) != 1:
            raise RuntimeError(f"{case.name}: {len(jobs)} jobs in {logs}")
        rep = job_report(jobs[0])
    return Outcome(case, frozenset(a["rule"] for a in rep["advice"]), rep, seconds, _printed(r.stdout))


# --- scoring ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    rule: str
    true_pos: int
    false_pos: int
    false_neg: int

    @property
    def precision(self) -> float | None:
        fired = self.true_pos + self.false_pos
        return self.true_pos / fired if fired else None

    @property
    def recall(self) -> float | None:
        expected = self.true_pos + self.false_neg
        return self.true_pos / expected if expected else None


def score(outcomes: list[Outcome]) -> tuple[list[Score], Score]:
    """Per rule over the suite, and over every rule together (micro-averaged): a rule that fired where the
    case says it should is a true positive, where it says nothing a false positive; one that should have
    fired and did not, a false negative."""
    rows = []
    for rule in RULES:
        tp = sum(1 for o in outcomes if rule in o.fired and rule in o.case.fires)
        fp = sum(1 for o in outcomes if rule in o.fired and rule not in o.case.fires)
        fn = sum(1 for o in outcomes if rule not in o.fired and rule in o.case.fires)
        rows.append(Score(rule, tp, fp, fn))
    total = Score(
        "all rules", *(sum(getattr(s, k) for s in rows) for k in ("true_pos", "false_pos", "false_neg"))
    )
    return rows, total


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def table(outcomes: list[Outcome]) -> str:
    """The suite's two tables as Markdown: the cases (expected, fired, time) and the rules' scores."""
    lines = ["| case | expected | fired | run s |", "|---|---|---|---|"]
    for o in outcomes:
        mark = "" if o.right else " **(wrong)**"
        lines.append(
            f"| {o.case.name} | {', '.join(sorted(o.case.fires)) or '(none)'} | "
            f"{', '.join(sorted(o.fired)) or '(none)'}{mark} | {o.seconds:.1f} |"
        )
    rows, total = score(outcomes)
    lines += [
        "",
        "| rule | fired rightly | fired wrongly | missed | precision | recall |",
        "|---|---|---|---|---|---|",
    ]
    for s in [*rows, total]:
        lines.append(
            f"| {s.rule} | {s.true_pos} | {s.false_pos} | {s.false_neg} | {_ratio(s.precision)} | "
            f"{_ratio(s.recall)} |"
        )
    return "\n".join(lines)


def main() -> int:
    build_dir = Path(os.environ.get("IOLENS_PROFILE_BUILD", REPO / "build" / "native"))
    lib = Path(os.environ.get("IOLENS_PROFILE_LIB", build_dir / "libiolens-profile.so")).resolve()
    if not lib.is_file():
        print(f"profiler runtime not built: {lib} (make native, or set IOLENS_PROFILE_LIB)", file=sys.stderr)
        return 2
    script = Path(sys.executable).parent / "iolens"
    iolens = [str(script)] if script.is_file() else [sys.executable, "-m", "iolens"]
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="iolens-advice-suite-", dir="/tmp") as tmp:
        root, bin_dir = Path(tmp) / "work", Path(tmp) / "bin"
        root.mkdir()
        bin_dir.mkdir()
        for case in load_cases():
            try:
                outcomes.append(run_case(case, root, bin_dir, iolens, lib))
            except CaseSkipped as exc:
                print(f"skipped {case.name}: {exc}", file=sys.stderr)
            shutil.rmtree(root / case.name, ignore_errors=True)
    print(table(outcomes))
    return 0 if all(o.right for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
