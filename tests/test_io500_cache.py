"""`iolens io500 --keep-cache`: the ior read phases evict the page cache by default and keep it on request,
and the run says which in result.txt, result_summary.txt, its output and its document.

The runs are real and tiny (db_helpers.TINY_IO500: 1 MiB per process, 10 ior-hard segments, 50 mdtest items)
on a disk file system, under strace: what reached the kernel (posix_fadvise(DONTNEED) on each file an ior
read phase reads) is the evidence, beside the engine's own mincore check in each phase's document.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from iolens import results
from iolens.io500 import cache, results_files
from iolens.io500.spec import runnable_phases
from iolens.store import io500_dir

from .db_helpers import TINY_IO500, iolens, iolens_env

STANDARD = [p.name for p in runnable_phases("standard")]
DONTNEED = re.compile(r"fadvise64\(\d+<([^>]+)>, 0, 0, POSIX_FADV_DONTNEED[) ]")  # "<unfinished ...>" too


def env_for(engine: Path) -> dict[str, str]:
    return iolens_env({"IOLENS_BENCH": str(engine)})


def traced_io500(
    engine: Path, root: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], Counter[str]]:
    """The tiny run on 2 local processes under `strace -f`: its output, and how many times each file was
    dropped from the page cache (posix_fadvise DONTNEED, by path)."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    cfg = root / "io500.ini"
    cfg.write_text(TINY_IO500.format(root=root))
    trace = root / "strace.txt"
    strace = ["strace", "-f", "--seccomp-bpf", "-qq", "-e", "trace=fadvise64", "-e", "signal=none", "-y",
              "-o", str(trace)]  # fmt: skip
    out = subprocess.run(
        [*strace, sys.executable, "-m", "iolens", "io500", str(cfg), "--np", "2", "--no-live", *args],
        capture_output=True, text=True, env=env_for(engine), timeout=300, check=False,
    )  # fmt: skip
    dropped = Counter(m.group(1) for m in DONTNEED.finditer(trace.read_text()))
    return out, dropped


def _names(dropped: Counter[str]) -> dict[str, int]:
    """Dropped files by their name under the data directory (its timestamped part left out)."""
    return {"/".join(Path(p).parts[-2:]): n for p, n in dropped.items()}


@pytest.mark.parametrize("mode", [cache.EVICT, cache.KEEP])
def test_ior_reads_evict_by_default_keep_with_keep_cache_and_the_run_says_which(
    engine: Path, disk_dir: Path, mode: str
) -> None:
    out, dropped = traced_io500(engine, disk_dir, *(["--keep-cache"] if mode == cache.KEEP else []))
    assert out.returncode == 0, out.stderr[-3000:]
    rd = disk_dir / "results"

    # What reached the kernel: before each ior read phase each process dropped the file it reads (ior-easy's
    # two files: ior-easy-read and ior-rnd4K-easy-read; ior-hard's one file: by both processes); nothing
    # with --keep-cache.
    if mode == cache.EVICT:
        assert _names(dropped) == {
            "ior-easy/ior_file_easy.00000000": 2,
            "ior-easy/ior_file_easy.00000001": 2,
            "ior-hard/file": 2,
        }
    else:
        assert dropped == Counter()

    # The engine's record of each read: the policy, and (on this disk file system) whether every page went.
    doc = results.load(rd / "iolens-io500.json")
    assert isinstance(doc, results.Io500Document) and doc.io500 is not None
    assert doc.io500.cache_mode == mode
    for p in doc.io500.phases:
        if p.name in cache.IOR_READ_PHASES:
            assert p.cache is not None and p.cache.policy == mode, p.name
            assert p.cache.evicted is (mode == cache.EVICT), p.name
            assert ("--keep-cache" in p.command) is (mode == cache.KEEP), p.name
        else:
            assert p.cache is None and "--keep-cache" not in p.command, p.name

    # result.txt: the comment right after [run]'s mode; the hashes are the app's (comments are not hashed).
    result = results_files.read_result(rd / "result.txt")
    run = result.sections[0]
    keys = [ln.key if isinstance(ln, results_files.Pair) else ln for ln in run.lines]
    at = keys.index("mode") + 1
    assert run.lines[at] == results_files.Comment(cache.comment(mode))
    assert [s.name for s in result.phases] == STANDARD
    said = "page cache was kept (--keep-cache)"
    kept = [
        s.name
        for s in result.phases
        if any(isinstance(ln, results_files.Comment) and said in ln.text for ln in s.lines)
    ]
    assert kept == (sorted(cache.IOR_READ_PHASES, key=STANDARD.index) if mode == cache.KEEP else [])
    report = results_files.verify(disk_dir / "io500.ini", rd / "result.txt")
    assert report.ok and not report.valid_run  # a 1 s stonewall: hashes match, the run is invalid

    # result_summary.txt: the app's first and last lines, the comment second; the reader keeps it.
    lines = (rd / "result_summary.txt").read_text().splitlines()
    assert lines[0].startswith("IO500 version iolens-") and lines[-1].startswith("[SCORE ]")
    assert lines[1] == "; " + cache.comment(mode)
    summary = results_files.read_summary(rd / "result_summary.txt")
    assert summary.comments == [cache.comment(mode)] and [p.name for p in summary.phases] == STANDARD

    # The store's reader of IO500 result directories takes the mode from result.txt and checks the summary
    # against it (the app's files only: iolens's PHASE.txt are its engine's reports, not IOR's output).
    app_files = disk_dir / "app-files"
    app_files.mkdir()
    for name in ("result.txt", "result_summary.txt", "config.ini", "config-orig.ini"):
        shutil.copy(rd / name, app_files / name)
    assert io500_dir.run_record(app_files).cache_mode == mode
    # The run's own output says it before the phases run.
    assert cache.headline(mode) in out.stdout


def test_dry_run_passes_keep_cache_to_the_three_ior_reads_only(engine: Path, disk_dir: Path) -> None:
    cfg = disk_dir / "io500.ini"
    cfg.write_text(TINY_IO500.format(root=disk_dir))
    for args, mode in (([], cache.EVICT), (["--keep-cache"], cache.KEEP)):
        out = iolens("io500", str(cfg), "--dry-run", "--np", "2", *args, env=env_for(engine))
        assert out.returncode == 0, out.stderr
        commands = dict(re.findall(r"^\s*\d+\. (\S+).*\n\s+(iolens-bench .*)$", out.stdout, re.M))
        keeping = sorted(n for n, c in commands.items() if "--keep-cache" in c.split())
        assert keeping == (sorted(cache.IOR_READ_PHASES) if mode == cache.KEEP else [])
        assert cache.headline(mode) in out.stdout
        assert re.search(rf"ior-easy-read .*cache={mode}", out.stdout)
    assert sorted(p.name for p in disk_dir.iterdir()) == ["io500.ini"]  # nothing made


def test_keep_cache_with_verify_is_refused(engine: Path) -> None:
    out = iolens("io500", "--verify", "--keep-cache", "a.ini", "result.txt", env=env_for(engine))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (
        "iolens: error: io500 --verify: --keep-cache applies to a run, not to checking its files"
    )


def test_keep_cache_reaches_every_mpi_rank(engine: Path, disk_dir: Path, mpi_env: dict[str, str]) -> None:
    # Under mpirun each ior read phase is one MPI job: every rank keeps the cache (the engine's record of the
    # read is the ranks' reduction: evicted only if every rank dropped its file).
    cfg = disk_dir / "io500.ini"
    cfg.write_text(TINY_IO500.format(root=disk_dir))
    env = {**mpi_env, **env_for(engine)}
    for args, mode in (([], cache.EVICT), (["--keep-cache"], cache.KEEP)):
        out = iolens("io500", str(cfg), "--np", "2", "--no-live", "--launcher", "mpirun",
                     "--launcher-args", "--oversubscribe", *args, env=env)  # fmt: skip
        assert out.returncode == 0, out.stderr[-3000:]
        rd = disk_dir / "results"
        for phase in cache.IOR_READ_PHASES:
            raw = json.loads((rd / f"{phase}.json").read_text())
            assert raw["comm"]["kind"] == "mpi" and raw["comm"]["ranks"] == 2
            read = next(p for p in raw["phases"] if p["name"] == "read")
            assert (read["cache"]["policy"], read["cache"]["evicted"]) == (mode, mode == cache.EVICT), phase
        assert results_files.read_summary(rd / "result_summary.txt").comments == [cache.comment(mode)]
        shutil.rmtree(rd)
