"""The live view `iolens monitor` draws in a terminal, rendered from synthetic samples: every kind of thing
gets its row with the rates a user reads (MiB/s, IOPS, average I/O size, metadata ops/s, busy share), the
system line, and the sources that are unavailable or read only in part; processes per command and job (never
per process id), counted as proc_agg.py counts them; and the view of a real monitor in a real terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

from rich.console import Console

from iolens.monitor.procio import ProcInfo
from iolens.monitor.view import LiveView

MIB = 1 << 20


def _record() -> dict:
    lustre = "llite.lfs-ffff8881.stats"
    return {
        "type": "sample",
        "seq": 7,
        "time": 1_700_000_000.0,
        "data": {
            "loadavg": {"load1": 1.5, "load5": 0.75, "load15": 0.25},
            "stat": {"procs_blocked": 2},
            "pressure": {"some": {"avg10": 12.5}, "full": {"avg10": 3.25}},
            "meminfo": {"dirty_bytes": 64 * MIB, "writeback_bytes": 8 * MIB},
            "lustre": {
                lustre: {"kind": "stats", "component": "client", "target": "lfs-ffff8881", "file": "stats"}
            },
            "proc_io": {"4242": {"comm": "iolens-bench"}},
        },
        "rates": {
            "diskstats": {
                "sda": {
                    "read_bytes": 100 * MIB,
                    "written_bytes": 50 * MIB,
                    "reads_completed": 800,
                    "writes_completed": 400,
                    "io_time_ms": 500,
                }
            },  # fmt: skip
            "mountstats": {
                "/scratch": {
                    "bytes": {"server_read_bytes": 2 * MIB, "server_write_bytes": 6 * MIB},
                    "ops": {
                        "READ": {"ops": 20},
                        "WRITE": {"ops": 60},
                        "GETATTR": {"ops": 15},
                        "LOOKUP": {"ops": 5},
                    },
                }
            },  # fmt: skip
            "lustre": {
                lustre: {
                    "counters": {
                        "read_bytes": {"sum": 10 * MIB, "samples": 10},
                        "write_bytes": {"sum": 30 * MIB, "samples": 30},
                        "open": {"samples": 40},
                        "close": {"samples": 40},
                    }
                }
            },  # fmt: skip
            "proc_io": {"4242": {"read_bytes": 4 * MIB, "write_bytes": 12 * MIB, "syscr": 64, "syscw": 192}},
        },
    }


def _rows(text: str) -> dict[str, list[str]]:
    """First cell → the other cells, for every table row of the rendered text."""
    out = {}
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) > 3:
            out[cells[0]] = cells[1:]
    return out


def test_live_view_shows_each_device_mount_target_and_process_with_its_rates() -> None:
    view = LiveView(1.0, "node07")
    view.event({"type": "event", "event": "unavailable", "source": "cgroup_io", "reason": "no io controller"})
    view.event({"type": "event", "event": "partial", "source": "lustre",
                "unreadable": {"/sys/kernel/debug/lustre": "permission denied"}})  # fmt: skip
    view.update(_record())
    console = Console(record=True, width=160, force_terminal=False, color_system=None)
    console.print(view)
    text = console.export_text()
    assert "iolens monitor  node07" in text and "samples 1" in text and "every 1 s" in text
    assert "load 1.50 0.75 0.25" in text and "blocked 2" in text
    assert "io pressure avg10 some 12.5% full 3.2%" in text and "dirty 64.0 MiB  writeback 8.0 MiB" in text
    rows = _rows(text)
    # name: read MiB/s, write MiB/s, read IOPS, write IOPS, avg I/O KiB[, metadata ops/s][, busy %]
    assert rows["sda"] == ["100.00", "50.00", "800", "400", "128.0", "50"]
    assert rows["/scratch"] == ["2.00", "6.00", "20", "60", "102.4", "20"]
    assert rows["client lfs-ffff8881"] == ["10.00", "30.00", "10", "30", "1024.0", "80"]
    for title in ("block devices", "NFS mounts", "Lustre"):
        assert title in text
    # Commands need two readings of their totals (below); no row per process id.
    assert "4242" not in text and "commands" not in text
    assert "cgroup_io: unavailable — no io controller" in text
    assert "lustre: partly unavailable — /sys/kernel/debug/lustre: permission denied" in text


def test_live_view_before_the_first_rates_says_so() -> None:
    view = LiveView(0.5, "node07")
    record = _record()
    record["rates"] = {}
    view.update(record)
    console = Console(record=True, width=160, force_terminal=False, color_system=None)
    console.print(view)
    text = console.export_text()
    assert "(rates from the second sample on)" in text and "block devices" not in text


def _io(rchar: int, wchar: int, syscr: int, syscw: int, rbytes: int, wbytes: int, comm: str) -> dict:
    return {"rchar": rchar, "wchar": wchar, "syscr": syscr, "syscw": syscw, "read_bytes": rbytes,
            "write_bytes": wbytes, "cancelled_write_bytes": 0, "comm": comm}  # fmt: skip


def _proc_record(when: float, procs: dict[str, dict]) -> dict:
    return {"type": "sample", "seq": 1, "time": when, "data": {"proc_io": procs}, "rates": {"proc_io": {}}}


def _render(view: LiveView) -> str:
    console = Console(record=True, width=160, force_terminal=False, color_system=None)
    console.print(view)
    return console.export_text()


def test_live_view_lists_processes_per_command_and_job_counting_an_exited_child_once() -> None:
    # bash (job 77) runs dd 101 and dd 102; cp has no job. In the next two seconds dd 101 writes 2 MiB more
    # and exits (bash reaps it: bash's counters take in all of 101's, 6 MiB), dd 102 writes 2 MiB, a new
    # dd 103 writes 1 MiB, cp copies 8 MiB.
    info = {100: ProcInfo(None, "77"), 101: ProcInfo(100, "77"), 102: ProcInfo(100, "77"),
            103: ProcInfo(100, "77"), 200: ProcInfo(None, "")}  # fmt: skip
    bash = _io(1000, 2000, 10, 20, 0, 0, "bash")
    dd101 = _io(4 * MIB, 4 * MIB, 64, 64, 0, 4 * MIB, "dd")
    dd101_at_exit = _io(6 * MIB, 6 * MIB, 96, 96, 0, 6 * MIB, "dd")
    view = LiveView(1.0, "node07")
    view.update(_proc_record(1000.0, {
        "100": bash, "101": dd101, "102": _io(MIB, MIB, 16, 16, 0, MIB, "dd"),
        "200": _io(0, 0, 0, 0, 0, 0, "cp"),
    }), info)  # fmt: skip
    assert "commands" not in _render(view)  # the first reading's figures are all the processes did so far
    reaped = {k: bash[k] + dd101_at_exit[k] for k in dd101 if k != "comm"}
    view.update(_proc_record(1002.0, {
        "100": {**reaped, "comm": "bash"},
        "102": _io(3 * MIB, 3 * MIB, 48, 48, 0, 3 * MIB, "dd"),
        "103": _io(MIB, MIB, 16, 16, 0, MIB, "dd"),
        "200": _io(8 * MIB, 8 * MIB, 128, 128, 8 * MIB, 8 * MIB, "cp"),
    }), info)  # fmt: skip
    text = _render(view)
    assert "commands (/proc/PID/io per command and job; ops are system calls)" in text
    rows = _rows(text)
    # command: job, processes, read MiB/s, write MiB/s, read calls/s, write calls/s, avg I/O KiB
    assert rows["cp"] == ["-", "1", "4.00", "4.00", "64", "64", "64.0"]
    assert rows["dd"] == ["77", "2", "0.00", "1.50", "24", "24", "32.0"]
    # bash: the 2 MiB dd 101 wrote after its last reading, not its 6 MiB again (which per-process rates,
    # bash's counters' increase, would say: 3.00 MiB/s)
    assert rows["bash"] == ["77", "1", "0.00", "1.00", "16", "16", "32.0"]
    lines = text.splitlines()
    order = [
        next(i for i, ln in enumerate(lines) if ln.strip().startswith(c + " ")) for c in ("cp", "dd", "bash")
    ]
    assert order == sorted(order)  # busiest first
    for pid in ("100", "101", "102", "103", "200"):
        assert pid not in text


def test_live_view_shows_the_busiest_commands_and_counts_the_rest() -> None:
    view = LiveView(1.0, "node07")
    for when, k in ((1000.0, 0), (1001.0, 1)):
        procs = {str(1000 + i): _io(0, 0, 0, 0, 0, k * (i + 1) * MIB, f"cmd{i:02d}") for i in range(25)}
        view.update(_proc_record(when, procs))
    text = _render(view)
    rows = _rows(text)
    assert sorted(rows.keys() & {f"cmd{i:02d}" for i in range(25)}) == [f"cmd{i:02d}" for i in range(5, 25)]
    assert rows["cmd24"] == ["-", "1", "0.00", "25.00", "0", "0", "-"]
    assert "… and 5 more commands" in text


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")
# A process that names itself, says so, then writes 64 KiB every 0.05 s until killed.
WRITER = """
import os, sys, time
with open("/proc/self/comm", "w") as f:
    f.write("view-writer")
os.write(1, b"ready\\n")
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
while True:
    os.write(fd, b"x" * 65536)
    time.sleep(0.05)
"""


def test_a_real_monitor_in_a_terminal_shows_the_watched_command_and_its_job(
    iolens_bin: list[str], tmp_path: Path
) -> None:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path / "out")], stdout=subprocess.PIPE,
                              env={**os.environ, "SLURM_JOB_ID": "31337"})  # fmt: skip
    master, slave = pty.openpty()
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"ready\n"
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        mon = subprocess.Popen(
            [*iolens_bin, "monitor", "--pid-tree", str(writer.pid), "--sources", "proc_io",
             "--interval", "0.3", "--duration", "2"],
            stdin=slave, stdout=slave, stderr=slave, env={**os.environ, "TERM": "xterm", "COLUMNS": "160"},
        )  # fmt: skip
        os.close(slave)
        slave = -1
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other end closed: the monitor exited
                break
            if not chunk:
                break
            out += chunk
        assert mon.wait(timeout=60) == 0
    finally:
        writer.kill()
        writer.wait()
        os.close(master)
        if slave >= 0:
            os.close(slave)
    text = _ANSI.sub("", out.decode("utf-8", "replace"))
    assert "commands (/proc/PID/io per command and job" in text, text[-3000:]
    rows = [
        re.split(r"\s{2,}", ln.strip()) for ln in text.splitlines() if ln.strip().startswith("view-writer")
    ]
    assert rows, text[-3000:]
    # job, one process, writing about 64 KiB / 0.05 s = 1.25 MiB/s of characters (its write calls: 20/s)
    assert all(r[1:3] == ["31337", "1"] for r in rows), rows
    assert any(10 <= float(r[6]) <= 30 for r in rows), rows
    assert str(writer.pid) not in text
