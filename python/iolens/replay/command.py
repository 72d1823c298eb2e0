"""`iolens replay ...`: options only; the work is in the replay package's modules (docs/replay.md)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from iolens.messages import PROG, error

USAGE = f"""usage: {PROG} replay kernel PROFILE --out KERNEL.json
       {PROG} replay run KERNEL.json --dir DIR [--np N] [--scale S] [--keep] [--timeout SECONDS]
       {PROG} replay check ORIGINAL REPLAYED [--scale S] [--json]
       {PROG} replay check PROFILE --dir DIR [--np N] [--scale S] [--keep] [--json]

A profile's I/O as a runnable kernel (docs/replay.md). PROFILE: an iolens log directory or log, a Darshan
log, or profile:ID (a profile in the statistics database: --db, $IOLENS_DB or the config file).
  kernel   writes the kernel: per rank, its files, accesses (size histogram, sequential/consecutive/random
           mix, offsets), fsyncs, metadata calls, in the original's order
  run      runs a kernel in a new directory inside DIR (removed at the end unless --keep); --np N ranks
           (default the kernel's), --scale S multiplies every count (default 1)
  check    compares two profiles quantity by quantity (bytes and operations ±5%, histogram buckets ±5%,
           files by kind ±5%, sequential shares ±5 points, I/O time ±20%); with one PROFILE it makes the
           kernel, runs it under the profiler in DIR and compares
"""


class _Usage(Exception):
    pass


class _Help(Exception):
    """--help was asked for: the usage is printed, status 0."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Usage(message)


def _scale(v: str) -> float:
    try:
        s = float(v)
    except ValueError:
        raise _Usage(f"--scale: expected a number greater than 0, got {v!r}") from None
    if not math.isfinite(s) or s <= 0 or s > 1000:
        raise _Usage(f"--scale: expected a number greater than 0 and at most 1000, got {v!r}")
    return s


def main(argv: Sequence[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        (sys.stdout if argv else sys.stderr).write(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], list(argv[1:])
    handlers = {"kernel": _kernel, "run": _run, "check": _check}
    if command not in handlers:
        return error(f"replay: unknown command {command!r} (kernel, run, check)", 2)
    try:
        return handlers[command](rest)
    except _Help:
        sys.stdout.write(USAGE)
        return 0
    except _Usage as exc:
        return error(f"replay {command}: {exc}", 2)


def _parser(name: str) -> _Parser:
    p = _Parser(prog=f"{PROG} replay {name}", add_help=False)
    p.add_argument("-h", "--help", action="store_true")
    return p


def _parse(p: _Parser, argv: list[str]) -> argparse.Namespace:
    a = p.parse_args(argv)
    if a.help:
        raise _Help
    return a


def _kernel(argv: list[str]) -> int:
    from iolens.replay import kernel as kn
    from iolens.replay.source import SourceError, load

    p = _parser("kernel")
    p.add_argument("profile", nargs="?")
    p.add_argument("--out")
    a = _parse(p, argv)
    if not a.profile:
        raise _Usage("expects a PROFILE (a log directory, a Darshan log or profile:ID)")
    if not a.out:
        raise _Usage("--out: expects the kernel's file name (KERNEL.json)")
    out = Path(a.out)
    if out.is_dir() or not out.parent.is_dir():
        raise _Usage(f"--out: {a.out}: a directory, or its directory does not exist")
    try:
        src = load(a.profile)
    except SourceError as exc:
        return error(str(exc), 2)  # the PROFILE named cannot be used: nothing was written
    doc = kn.build(src)
    kn.write(doc, out)
    uses = sum(len(s["uses"]) for s in doc["streams"])
    print(f"{PROG} replay: kernel of {a.profile}: {doc['ranks']} rank(s), {len(doc['files'])} file(s), "
          f"{uses} file uses -> {out}")  # fmt: skip
    for note in doc["approximations"]:
        print(f"  approximated: {note}")
    return 0


def _run_args(p: _Parser) -> None:
    p.add_argument("--dir")
    p.add_argument("--np", type=int)
    p.add_argument("--scale", default="1")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--timeout", default=None)


def _plan(kernel: dict[str, Any], a: argparse.Namespace) -> tuple[Any, int, float]:
    from iolens.replay import plan as pl

    if a.np is not None and a.np < 1:
        raise _Usage(f"--np: expected a positive integer, got {a.np}")
    np_ = a.np if a.np is not None else int(kernel["ranks"]) or 1
    scale = _scale(a.scale)
    return pl.build(kernel, np_, scale), np_, scale


def _timeout(a: argparse.Namespace) -> float:
    from iolens.replay.run import DEFAULT_TIMEOUT_S

    if a.timeout is None:
        return DEFAULT_TIMEOUT_S
    try:
        t = float(a.timeout)
    except ValueError:
        raise _Usage(f"--timeout: expected seconds, got {a.timeout!r}") from None
    if not math.isfinite(t) or t <= 0:
        raise _Usage(f"--timeout: expected seconds greater than 0, got {a.timeout!r}")
    return t


def _run(argv: list[str]) -> int:
    from iolens.replay import kernel as kn
    from iolens.replay import run as rr

    p = _parser("run")
    p.add_argument("kernel", nargs="?")
    _run_args(p)
    a = _parse(p, argv)
    if not a.kernel:
        raise _Usage("expects KERNEL.json")
    if not a.dir:
        raise _Usage("--dir: expects the directory to run in (a new run directory is made inside it)")
    timeout = _timeout(a)
    try:
        parent = rr.check_dir(a.dir)
        kernel = kn.read(Path(a.kernel))
        plan, np_, scale = _plan(kernel, a)
        rr.find_executor()
    except (rr.ReplayRunError, kn.KernelError) as exc:
        return error(str(exc), getattr(exc, "status", 2))
    try:
        res = rr.run(plan, parent, keep=a.keep, timeout_s=timeout)
    except (rr.ReplayRunError, OSError) as exc:
        return error(f"replay run: {exc}", 1)
    ops = sum(len(v) for v in plan.lines.values())
    where = f"kept in {res.run_dir}" if res.kept else "removed"
    print(f"{PROG} replay: {a.kernel} at {np_} rank(s), scale {scale:g}: {ops} calls in {res.wall_s:.3f} s; "
          f"run directory {where}")  # fmt: skip
    for e in res.errors:
        print(f"  {e}", file=sys.stderr)
    return 0 if not res.errors else 1


def _report_of(text: str) -> dict[str, Any]:
    """The job report of a profile named like a kernel's source."""
    if text.startswith("profile:"):
        from iolens.store import queries
        from iolens.store.api import open_store

        store = open_store(None)
        try:
            num = text.partition(":")[2]
            if not num.isdigit():
                raise _Usage(f"{text!r}: expected profile:ID with a number")
            return dict(queries.get_profile(store.db, int(num))["document"])
        finally:
            store.close()
    from iolens.profile.report import _load, job_report

    jobs = _load(text)
    return job_report(jobs[0])


def _check(argv: list[str]) -> int:
    from iolens.profile.reader import ProfileLogError
    from iolens.replay import check as ck

    p = _parser("check")
    p.add_argument("profiles", nargs="*")
    _run_args(p)
    p.add_argument("--json", action="store_true")
    a = _parse(p, argv)
    if len(a.profiles) not in (1, 2):
        raise _Usage("expects ORIGINAL REPLAYED (two profiles), or one PROFILE with --dir")
    scale = _scale(a.scale)
    if len(a.profiles) == 2:
        if a.dir or a.np or a.keep:
            raise _Usage("--dir, --np and --keep apply to one PROFILE (to run its kernel), not to two")
        try:
            orig, rep = _report_of(a.profiles[0]), _report_of(a.profiles[1])
        except (ProfileLogError, OSError, KeyError) as exc:
            return error(str(exc), 1)
        return _show(ck.compare(orig, rep, scale), a.profiles[0], a.profiles[1], scale, a.json)
    return _check_one(a, scale)


def _check_one(a: argparse.Namespace, scale: float) -> int:
    from iolens.profile.reader import ProfileLogError
    from iolens.replay import check as ck
    from iolens.replay import kernel as kn
    from iolens.replay import run as rr
    from iolens.replay.source import SourceError, load

    if not a.dir:
        raise _Usage("--dir: expects the directory to run the kernel in (needed with one PROFILE)")
    timeout = _timeout(a)
    try:
        parent = rr.check_dir(a.dir)
        rr.find_executor()
    except rr.ReplayRunError as exc:
        return error(str(exc), exc.status)
    try:
        src = load(a.profiles[0])
        orig = _report_of(a.profiles[0])
    except (SourceError, ProfileLogError, OSError) as exc:
        return error(str(exc), 1)
    kernel = kn.build(src)
    plan, np_, _ = _plan(kernel, a)
    with tempfile.TemporaryDirectory(prefix="iolens-replay-profile-") as tmp:
        res = rr.run(plan, parent, keep=a.keep, profile_out=Path(tmp), timeout_s=timeout)
        if res.errors:
            for e in res.errors:
                print(f"  {e}", file=sys.stderr)
            return error("replay check: the kernel's run failed", 1)
        rep = _report_of(tmp)
    return _show(ck.compare(orig, rep, scale * np_ / (int(kernel["ranks"]) or 1)), a.profiles[0],
                 "(its replay)", scale, a.json)  # fmt: skip


def _show(rows: list[Any], original: str, replayed: str, scale: float, as_json: bool) -> int:
    from iolens.replay import check as ck

    if as_json:
        sys.stdout.write(json.dumps(ck.as_json(rows, original, replayed, scale), indent=1) + "\n")
    else:
        sys.stdout.write(ck.text_table(rows))
    return 0 if all(r.passed for r in rows) else 1
