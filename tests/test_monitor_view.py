"""The live view `iolens monitor` draws in a terminal, rendered from a synthetic sample: every kind of thing
gets its row with the rates a user reads (MiB/s, IOPS, average I/O size, metadata ops/s, busy share), the
system line, and the sources that are unavailable or read only in part."""

from __future__ import annotations

import re

from rich.console import Console

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
    assert rows["4242 iolens-bench"] == ["4.00", "12.00", "64", "192", "64.0"]
    for title in ("block devices", "NFS mounts", "Lustre", "processes"):
        assert title in text
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
