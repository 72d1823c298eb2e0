"""Running one case: both tools on the same files, alternating, with the device's counters, the process
tree's I/O accounting and the page cache read around every run."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import devwork as dw
from .cases import FioCase, IorCase
from .tools import Reported, fio_cmd, fio_reported, ior_cmd, ior_reported, ior_version


@dataclass
class Sample:
    """One run of one tool."""

    tool: str
    reported: Reported
    dev_run: dw.DevWork  # device work while the tool ran
    dev_total: dw.DevWork  # ... and until its files were fsynced afterwards (write-back it left behind)
    proc: dw.ProcRun  # the tool's process tree: storage bytes read and dirtied, time
    cache_before: tuple[int, int]  # (resident bytes, file bytes) of the case's files before the run
    cache_after: tuple[int, int]


@dataclass
class CaseResult:
    id: str
    kind: str  # fio, ior or mdtest
    fs: str
    device: str | None
    tools: tuple[str, ...]
    samples: list[Sample] = field(default_factory=list)
    reason: str | None = None
    error: str | None = None

    def of(self, tool: str) -> list[Sample]:
        return [s for s in self.samples if s.tool == tool]


@dataclass(frozen=True)
class Setup:
    iolens: list[str]  # the command that runs iolens (the installed console script)
    ior_bin: Path | None  # the official IOR's bin directory
    env: dict[str, str]
    progress: Callable[[str], None] = lambda _m: None
    versions: dict[str, str] = field(default_factory=dict)
    commands: list[list[str]] = field(default_factory=list)  # one of each kind, for the report
    # Rounds added after the first `runs` while settled(result) is false (the device work disagrees): the
    # disk is shared, and another user's I/O during a run only adds to that run's counters, so more rounds
    # bring the smallest readings down to the tools' own work; a real difference stays.
    extra_runs: int = 0
    settled: Callable[[CaseResult], bool] = lambda _r: True


def _note(setup: Setup, cmd: list[str]) -> None:
    key = " ".join(cmd[:3])
    if all(" ".join(c[:3]) != key for c in setup.commands):
        setup.commands.append(cmd)


def run_fio_case(
    case: FioCase, fs: str, runs: int, setup: Setup, scratch: Path, iolens_extra: tuple[str, ...] = ()
) -> CaseResult:
    """Lays the files out once with fio (a job that writes writes them once, so every timed run overwrites
    allocated blocks), then alternates fio and iolens `runs` times each on those files. iolens_extra: options
    given to iolens alone (the tests use it to show that the rule catches a different job)."""
    d = scratch
    dev = dw.device_of(d)
    res = CaseResult(case.id, "fio", fs, dev, ("fio", "iolens"), reason=case.reason)
    env = dict(setup.env, FIDELITY_DIR=str(d), FIDELITY_SIZE=str(case.size))
    out = scratch.parent / f"{scratch.name}.out.json"
    first = dw.run_accounted(fio_cmd("fio", setup.iolens, case.job, out), env=env)
    if first.status != 0:
        res.error = f"fio layout run failed: {first.stderr.strip()[-300:]}"
        return res
    for rnd in _rounds(runs, setup, res):
        order = ("fio", "iolens") if rnd % 2 == 0 else ("iolens", "fio")
        for tool in order:
            cmd = fio_cmd(tool, setup.iolens, case.job, out) + (
                list(iolens_extra) if tool == "iolens" else []
            )
            _note(setup, cmd)
            files = dw.regular_files(d)
            dw.evict(files)
            dw.flush([d])
            s = _measured(cmd, env, files, d, dev, None)
            if s.proc.status != 0:
                res.error = f"{tool} failed: {s.proc.stderr.strip()[-300:]}"
                return res
            s.tool = tool
            s.reported = fio_reported(json.loads(out.read_text()))
            res.samples.append(s)
            setup.progress(f"{case.id} {fs} round {rnd + 1} {tool}: {_brief(s)}")
    out.unlink(missing_ok=True)
    return res


def run_ior_case(
    case: IorCase, fs: str, runs: int, setup: Setup, scratch: Path, tools: tuple[str, ...]
) -> CaseResult:
    """Alternates the official tool and iolens (IOR: also iolens's default eviction mode) `runs` times
    each; every run starts in an empty directory (the harness removes what the last run left in it)."""
    assert setup.ior_bin is not None or "peer" not in tools
    d = scratch
    dev = dw.device_of(d)
    res = CaseResult(case.id, case.kind, fs, dev, tools, reason=case.reason)
    target = ["-o", str(d / "testfile")] if case.kind == "ior" else ["-d", str(d / "md")]
    out = scratch.parent / f"{scratch.name}.out.json"
    stdout = scratch.parent / f"{scratch.name}.stdout.txt"
    for rnd in _rounds(runs, setup, res):
        order = tools if rnd % 2 == 0 else tuple(reversed(tools))
        for tool in order:
            _empty(d)
            cmd = ior_cmd(tool, setup.ior_bin, setup.iolens, case.kind, case.np, [*case.args, *target], out)
            _note(setup, cmd)
            s = _measured(cmd, setup.env, [], d, dev, stdout)
            if s.proc.status != 0:
                res.error = f"{tool} failed: {s.proc.stderr.strip()[-300:]}"
                return res
            s.tool = tool
            s.reported = ior_reported(tool, case.kind, out, stdout)
            v = ior_version(tool, case.kind, out, stdout)
            if v:
                setup.versions[case.kind] = v
            res.samples.append(s)
            setup.progress(f"{case.id} {fs} round {rnd + 1} {tool}: {_brief(s)}")
    _empty(d)
    out.unlink(missing_ok=True)
    stdout.unlink(missing_ok=True)
    return res


def _rounds(runs: int, setup: Setup, res: CaseResult) -> Iterator[int]:
    """0 .. runs-1, then up to setup.extra_runs more while the result is not settled (or has failed)."""
    rnd = 0
    while res.error is None and (rnd < runs or (rnd < runs + setup.extra_runs and not setup.settled(res))):
        yield rnd
        rnd += 1


def _measured(
    cmd: list[str], env: dict[str, str], files: list[Path], d: Path, dev: str | None, stdout: Path | None
) -> Sample:
    before = dw.resident(files)
    s0 = dw.diskstats(dev)
    proc = dw.run_accounted(cmd, env=env, stdout=stdout)
    s1 = dw.diskstats(dev)
    files_after = dw.regular_files(d)
    after = dw.resident(files_after)
    dw.flush([*files_after, *_dirs(d), d])
    s2 = dw.diskstats(dev)
    return Sample("", Reported(), s1 - s0, s2 - s0, proc, before, after)


def _dirs(d: Path) -> list[Path]:
    return [p for p in d.rglob("*") if p.is_dir()]


def _empty(d: Path) -> None:
    """Removes everything inside the harness's own scratch directory d (and commits the removal to the
    journal with an fsync of d, so that it is not counted in the next run)."""
    for p in d.iterdir():
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
    dw.flush([d])


def _brief(s: Sample) -> str:
    r = s.reported
    t = s.dev_total
    rate = " ".join(f"{k} {v / (1 << 20):.0f}" for k, v in r.rates.items() if k in ("write", "read"))
    return (
        f"{rate or f'{r.rate / (1 << 20):.0f}'} MiB/s, read {r.read_bytes >> 20} MiB/{r.read_ios} I/Os, "
        f"write {r.write_bytes >> 20} MiB/{r.write_ios} I/Os; device r {t.read_ios}/{t.read_sectors}s "
        f"w {t.write_ios}/{t.write_sectors}s f {t.flushes}"
    )
