#!/usr/bin/env python3
"""Reading a Darshan log of 100 000 records: `iolens db import LOG` (into a new SQLite database each run),
`iolens profile report LOG --json` and `iolens profile report LOG`, side by side with PyDarshan's own
`python -m darshan summary LOG` on the same log and, for the record, the import of iolens before this
change (commit f569988: the darshan library record by record, in a child process). Run alternately, median
of the runs (5 by default), wall time and peak RSS (ru_maxrss from wait4, measured from a small process of
its own), and each command's ratio to `darshan summary`. Target: the import ≤ 2 s and ≤ 200 MB.

The log is a real one: bench/many_files.c (creates, writes, reads back and stats N files) run under Darshan's
LD_PRELOAD (non-MPI mode; MAX_RECORDS, MODMEM and NAMEMEM raised so it keeps every record), with the
Darshan that bench/build_darshan.sh built into /var/tmp/iolens-peers/darshan (never committed). It is kept
there (logs/) and reused.

    DARSHAN_SRC=... bench/build_darshan.sh
    PYTHONPATH=python .venv/bin/python bench/darshan_import.py            # bench/results/darshan_import.txt
    PYTHONPATH=python .venv/bin/python bench/darshan_import.py --quick    # 10 000 files, one run, prints
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import benchlib as bl

FILES = 100_000
TARGET_S, TARGET_BYTES = 2.0, 200 * 10**6
PEERS = Path(os.environ.get("IOLENS_PEERS", "/var/tmp/iolens-peers")) / "darshan"
OLD_COMMIT = "f569988"
HEADERS = ["command", "runs", "wall s (median)", "wall s (max)", "CPU s (median)", "peak MiB (median)",
           "peak MiB (max)", "wall / summary", "CPU / summary", "peak / summary", "met"]  # fmt: skip


# Like benchlib.peak, from a small process of its own, with the command's CPU time too: the machine is shared,
# and CPU seconds say what the command costs whatever else runs.
_MEASURE = (
    "import os, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
    "_, status, ru = os.wait4(p.pid, 0)\n"
    "print(time.perf_counter() - t, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, "
    "os.waitstatus_to_exitcode(status))\n"
)


def measure(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak RSS in MiB of cmd; BenchError when it fails."""
    out = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], env=env, capture_output=True, text=True)
    try:
        wall, cpu, mib, status = out.stdout.split()
    except ValueError:
        raise bl.BenchError(f"{' '.join(cmd)}: {out.stderr[-300:]}") from None
    if int(status) != 0:
        raise bl.BenchError(f"{' '.join(cmd)}: exit {status}: {out.stderr[-300:]}")
    return float(wall), float(cpu), float(mib)


def make_log(prefix: Path, files: int, where: Path) -> Path:
    """A Darshan log of `files` POSIX records (kept under PEERS/logs and reused)."""
    logs = PEERS / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"many-files-{files}.darshan"
    if log.exists():
        return log
    lib = prefix / "lib" / "libdarshan.so"
    if not lib.exists():
        raise bl.BenchError(f"{lib}: not built (DARSHAN_SRC=... bench/build_darshan.sh)")
    exe = bl.build_c("many_files.c", where)
    # Not under /var: Darshan leaves files there out by default (as /usr, /etc, /proc ...).
    files_dir = Path(tempfile.mkdtemp(prefix="iolens-many-files-", dir="/tmp"))
    # Darshan keeps 1024 records per module unless told: room for every file, memory for them and their
    # names (MiB), non-MPI mode, a log file of our own.
    config = where / "darshan.conf"
    config.write_text(f"MAX_RECORDS {files + 1000} POSIX,STDIO\nMODMEM 1024\nNAMEMEM 256\n")
    env = dict(os.environ)
    env.update({"LD_PRELOAD": str(lib), "DARSHAN_ENABLE_NONMPI": "1", "DARSHAN_CONFIG_PATH": str(config),
                "DARSHAN_LOGFILE": str(log)})  # fmt: skip
    out = subprocess.run(
        [str(exe), str(files_dir), str(files), "1024"], env=env, capture_output=True, text=True
    )
    shutil.rmtree(files_dir, ignore_errors=True)
    if out.returncode != 0 or not log.exists():
        raise bl.BenchError(f"many_files under Darshan: exit {out.returncode}: {out.stderr[-300:]}")
    return log


def old_importer(where: Path) -> Path:
    """iolens's Darshan import as of OLD_COMMIT, as a script of its own (its child process runs the same
    file, not the module that replaced it)."""
    src = subprocess.run(
        ["git", "-C", str(bl.REPO_DIR), "show", f"{OLD_COMMIT}:python/iolens/store/darshan_logs.py"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    src = src.replace(
        '[sys.executable, "-m", "iolens.store.darshan_logs", str(path)]',
        "[sys.executable, __file__, str(path)]",
    )
    store = (
        "def _store(log: str, db: str) -> None:\n"
        "    from iolens.store import Store\n"
        "    with Store.open(db, create=True) as s:\n"
        "        s.put_profile(profile_record(Path(log)), None)\n\n\n"
    )
    src = src.replace(
        'if __name__ == "__main__":\n    sys.exit(_main(sys.argv[1:]))',
        store + 'if __name__ == "__main__":\n    if sys.argv[1] == "--store":\n'
        "        _store(sys.argv[2], sys.argv[3])\n"
        "    else:\n        sys.exit(_main(sys.argv[1:]))",
    )
    path = where / "old_darshan_import.py"
    path.write_text(src)
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    bl.common_args(p, default_runs=5)
    p.add_argument("--files", type=int, default=None, help=f"records in the log (default {FILES})")
    p.add_argument("--log", default=None, help="a Darshan log to use instead of making one")
    p.add_argument("--darshan", default=str(PEERS / "install"), help="Darshan's install prefix")
    p.add_argument("--no-old", action="store_true", help=f"leave out the import of iolens {OLD_COMMIT}")
    args = p.parse_args()
    runs = args.runs or (1 if args.quick else 5)
    n = args.files or (FILES // 10 if args.quick else FILES)

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(bl.REPO_DIR / "python"), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    report = bl.Report("darshan_import", f"Reading a Darshan log of {n} records: iolens vs PyDarshan")
    scratch = Path(os.environ.get("TMPDIR", "/var/tmp"))
    report.header += bl.machine_lines(paths=[scratch])
    with bl.scratch_dir(scratch, "darshan-import") as d:
        log = Path(args.log) if args.log else make_log(Path(args.darshan), n, d)
        import darshan  # the peer: PyDarshan, as installed with iolens[darshan]

        report.header.append(
            f"log:     {log.name}, {log.stat().st_size / 1e6:.1f} MB, made by bench/many_files.c under "
            f"Darshan's LD_PRELOAD; PyDarshan {darshan.__version__}"
        )
        py = sys.executable
        tools: dict[str, list[str]] = {
            "iolens db import": [py, "-m", "iolens", "db", "import", str(log), "--db", "{db}"],
            "iolens profile report --json": [py, "-m", "iolens", "profile", "report", str(log), "--json"],
            "iolens profile report": [py, "-m", "iolens", "profile", "report", str(log)],
            "python -m darshan summary": [py, "-m", "darshan", "summary", str(log), "--output", "{html}"],
        }
        if not args.no_old:
            tools[f"iolens {OLD_COMMIT} db import (darshan library)"] = [py, str(old_importer(d)), "--store",
                                                                       str(log), "{db}"]  # fmt: skip
        got: dict[str, list[tuple[float, float, float]]] = {t: [] for t in tools}
        # The databases on tmpfs: the import's figure is iolens's work, not the disk's fsync.
        with bl.scratch_dir(Path("/dev/shm"), "darshan-import-db") as shm:
            for k, (_, tool) in enumerate(bl.alternating(tuple(tools), runs)):
                cmd = [c.replace("{db}", str(shm / f"db{k}.sqlite")).replace("{html}", str(d / f"s{k}.html"))
                       for c in tools[tool]]  # fmt: skip
                report.command(cmd)
                wall, cpu, mib = measure(cmd, env)
                got[tool].append((wall, cpu, mib))
                bl.progress(f"{tool}: {wall:.2f} s, CPU {cpu:.2f} s, {mib:.0f} MiB")
                for f in shm.glob("db*.sqlite*"):
                    f.unlink()
        peer = "python -m darshan summary"
        pw, pc, pm = (bl.median([x[i] for x in got[peer]]) for i in range(3))
        rows = []
        for tool, xs in got.items():
            walls, cpus, mibs = [x[0] for x in xs], [x[1] for x in xs], [x[2] for x in xs]
            target = tool.startswith("iolens") and OLD_COMMIT not in tool
            ok = bl.median(walls) <= TARGET_S and bl.median(mibs) * bl.MIB <= TARGET_BYTES
            rows.append([
                tool, len(xs), bl.median(walls), max(walls), bl.median(cpus), bl.median(mibs), max(mibs),
                bl.median(walls) / pw, bl.median(cpus) / pc, bl.median(mibs) / pm,
                ("yes" if ok else "NO") if target else "-",
            ])  # fmt: skip
    report.section(
        f"Wall time and peak RSS (target for iolens ≤ {TARGET_S:.0f} s and ≤ {TARGET_BYTES // 10**6} MB = "
        f"{TARGET_BYTES / bl.MIB:.0f} MiB)",
        bl.table(HEADERS, rows),
    )
    report.notes(
        "Wall time is the whole command: Python's start, imports, reading the log and, for the import, "
        "storing the profile and one row per file into a new SQLite database (on /dev/shm); the reports "
        "print to /dev/null. CPU is the command's user + system time (the machine is shared: wall time "
        "depends on what else runs, CPU time much less).",
        "`python -m darshan summary` reads the log with the darshan library and writes its HTML summary "
        "(plots included): it is the peer the issue names; the ratios are each command's median over its "
        "median.",
        f"The {OLD_COMMIT} row is iolens's import before this change (the darshan library, record by record, "
        "in a child process): the same work as the first row.",
        "Runs alternate between the commands (ABC CBA ...); 'met' compares the medians with the targets.",
    )
    report.emit(args.out, args.quick)


if __name__ == "__main__":
    bl.main_wrapper(main)
