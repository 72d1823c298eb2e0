"""The Linux collectors: parsers on this machine's real /proc files and on the layouts of other kernels, and
real sampling while a real process writes and fsyncs a file on disk."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from iolens.monitor import cgroupio, diskstats, loadavg, meminfo, mountstats, pressure, procio, procstat
from iolens.monitor.common import SourceUnavailable
from iolens.monitor.diskstats import DiskstatsCollector
from iolens.monitor.mountstats import MountstatsCollector
from iolens.monitor.parsefile import detect
from iolens.monitor.procio import ProcIoCollector
from iolens.monitor.sampler import Sampler

MiB = 1 << 20

# --- parsers on this machine's files ------------------------------------------------------------------------


def test_real_diskstats_parse_with_every_field_the_kernel_prints() -> None:
    text = Path("/proc/diskstats").read_text()
    data, skipped = diskstats.parse(text)
    assert skipped == 0 and data
    width = len(text.split("\n", 1)[0].split()) - 3
    for dev in data.values():
        assert len([k for k in diskstats.FIELDS if k in dev]) == min(width, len(diskstats.FIELDS))
        assert dev["read_bytes"] == dev["sectors_read"] * 512
    assert detect(text) == "diskstats"


@pytest.mark.parametrize(
    "name, parse, kind",
    [
        ("/proc/self/io", procio.parse, "proc_io"),
        ("/proc/meminfo", meminfo.parse, "meminfo"),
        ("/proc/loadavg", loadavg.parse, "loadavg"),
        ("/proc/stat", procstat.parse, "stat"),
        ("/proc/pressure/io", pressure.parse, "pressure"),
        ("/proc/self/mountstats", mountstats.parse, "mountstats"),
    ],
)
def test_real_proc_files_parse_without_a_skipped_line(name: str, parse: object, kind: str) -> None:
    try:
        text = Path(name).read_text()
    except OSError:
        pytest.skip(f"{name} is not readable here")
    data, skipped = parse(text)  # type: ignore[operator]
    assert skipped == 0
    assert detect(text) == kind
    if kind == "meminfo":
        assert {"dirty_bytes", "writeback_bytes"} <= set(data)
        assert data["dirty_bytes"] % 1024 == 0
    if kind == "stat":
        assert data["procs_blocked"] >= 0 and data["processes"] > 0
    if kind == "proc_io":
        assert data["rchar"] > 0


# --- other kernels' layouts ---------------------------------------------------------------------------------


def test_diskstats_of_old_and_new_kernels() -> None:
    text = (
        "   8       0 sda 10 1 80 5 20 2 160 7 0 9 12\n"  # before 4.18: 11 fields
        "   8      16 sdb 10 1 80 5 20 2 160 7 1 9 12 3 0 24 2\n"  # 4.18: discards
        " 259       0 nvme0n1 10 1 80 5 20 2 160 7 0 9 12 3 0 24 2 6 4\n"  # 5.5: flushes
        " 259       1 nvme0n1p1 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        "   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        "broken line\n"
    )
    data, skipped = diskstats.parse(text)
    assert skipped == 1
    assert "discards_completed" not in data["sda"] and data["sda"]["weighted_io_time_ms"] == 12
    assert data["sdb"]["discarded_bytes"] == 24 * 512 and "flushes_completed" not in data["sdb"]
    assert data["nvme0n1"]["flushes_completed"] == 6 and data["nvme0n1"]["flush_time_ms"] == 4


def test_diskstats_collector_leaves_out_partitions_and_loop_devices(tmp_path: Path) -> None:
    (tmp_path / "diskstats").write_text(
        " 259 0 nvme0n1 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        " 259 1 nvme0n1p1 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        " 8 1 sda1 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        " 7 0 loop0 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
        " 253 0 dm-0 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    )
    assert set(DiskstatsCollector(str(tmp_path)).read()) == {"nvme0n1", "dm-0"}
    assert set(DiskstatsCollector(str(tmp_path), devices=r"^(nvme0n1p1|sda1)$").read()) == {
        "nvme0n1p1",
        "sda1",
    }


MOUNTSTATS = """device rootfs mounted on / with fstype rootfs
device srv:/export mounted on /mnt/my\\040data with fstype nfs4 statvers=1.1
\topts:\trw,vers=4.2,rsize=1048576,wsize=1048576,proto=tcp,addr=10.0.0.1,clientaddr=10.0.0.2
\tage:\t1234
\tcaps:\tcaps=0x3ffff,wtmult=512,dtsize=32768,bsize=0,namlen=255
\tsec:\tflavor=1,pseudoflavor=1
\tevents:\t1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27
\tbytes:\t100 200 300 400 500 600 7 8
\tRPC iostats version: 1.1  p/v: 100003/4 (nfs)
\txprt:\ttcp 832 1 2 3 4 5 6 7 8 9 10 11 12
\tper-op statistics
\t        NULL: 1 2 3 4 5 6 7 8 9
\t        READ: 10 11 0 1300 4096000 15 16 17
\t       WRITE: 20 20 0 8392000 2600 30 40 75 1
\t       GETATTR: broken

device old:/v3 mounted on /mnt/old with fstype nfs statvers=1.0
\topts:\trw,vers=3,mountaddr=10.0.0.9,mountvers=3,mountproto=udp
\tage:\t5
\tevents:\t1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23
\tbytes:\t1 2 3 4 5 6 7 8
\tRPC iostats version: 1.0  p/v: 100003/3 (nfs)
\txprt:\tudp 900 1 2 3 4 5 6
\tper-op statistics
\t        READ: 1 1 0 100 200 1 2 3
device proc mounted on /proc with fstype proc
"""


def test_mountstats_nfs4_and_nfs3_with_and_without_the_errors_column() -> None:
    data, skipped = mountstats.parse(MOUNTSTATS)
    assert skipped == 1  # GETATTR: broken
    assert set(data) == {"/mnt/my data", "/mnt/old"}
    m = data["/mnt/my data"]
    assert m["export"] == "srv:/export" and m["fstype"] == "nfs4" and m["age_s"] == 1234
    assert m["bytes"]["server_read_bytes"] == 500 and m["bytes"]["write_pages"] == 8
    assert m["events"]["vfs_open"] == 5 and m["events"]["pnfs_write"] == 27
    assert m["xprt"] == {
        "protocol": "tcp", "port": 832, "bind_count": 1, "connect_count": 2, "connect_time": 3,
        "idle_time": 4, "sends": 5, "recvs": 6, "bad_xids": 7, "req_u": 8, "bklog_u": 9, "max_slots": 10,
        "sending_u": 11, "pending_u": 12,
    }  # fmt: skip
    assert m["ops"]["READ"]["bytes_received"] == 4096000 and "errors" not in m["ops"]["READ"]
    assert m["ops"]["WRITE"]["errors"] == 1 and m["ops"]["WRITE"]["execute_ms"] == 75
    old = data["/mnt/old"]
    assert len(old["events"]) == 23 and old["xprt"]["protocol"] == "udp" and old["xprt"]["recvs"] == 3
    assert mountstats.mount_address(old["opts"]) == "10.0.0.9"
    assert detect(MOUNTSTATS) == "mountstats"


def test_mountstats_collector_takes_the_server_address_from_mountinfo(tmp_path: Path) -> None:
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "mountstats").write_text(MOUNTSTATS)
    (tmp_path / "self" / "mountinfo").write_text(
        "36 35 0:40 / /mnt/my\\040data rw,relatime shared:1 - nfs4 srv:/export rw,vers=4.2,addr=10.1.1.1\n"
    )
    data = MountstatsCollector(str(tmp_path)).read()
    assert data["/mnt/my data"]["mountaddr"] == "10.1.1.1"
    assert data["/mnt/old"]["mountaddr"] == "10.0.0.9"


def test_pressure_cgroup_io_stat_meminfo_and_loadavg_layouts() -> None:
    p, skipped = pressure.parse(
        "some avg10=1.50 avg60=0.75 avg300=0.10 total=123456\n"
        "full avg10=0.50 avg60=0.25 avg300=0.00 total=654\n"
    )
    assert skipped == 0 and p["some"] == {"avg10": 1.5, "avg60": 0.75, "avg300": 0.1, "total_us": 123456}
    # Before 5.13 /proc/pressure/io had no "full" line on some kernels: one line is fine.
    assert pressure.parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")[0]["some"]["total_us"] == 0
    cg, skipped = cgroupio.parse(
        "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n"
        "254:0 rbytes=0 wbytes=4096 rios=0 wios=1 dbytes=0 dios=0 cost.vrate=100.00 cost.usage=12\n"
        "oops\n"
    )
    assert skipped == 1
    assert cg["8:16"]["wbytes"] == 314773504 and cg["254:0"]["cost.usage"] == 12
    assert "cost.vrate" not in cg["254:0"]
    assert detect("8:16 rbytes=1 wbytes=2 rios=3 wios=4 dbytes=0 dios=0\n") == "cgroup_io"
    mi, _ = meminfo.parse("MemTotal: 100 kB\nDirty:  12 kB\nWriteback: 0 kB\nNFS_Unstable: 3 kB\n")
    assert mi == {"dirty_bytes": 12288, "writeback_bytes": 0, "nfs_unstable_bytes": 3072}
    la, skipped = loadavg.parse("0.50 1.25 2.00 3/456 7890\n")
    assert la == {"load1": 0.5, "load5": 1.25, "load15": 2.0, "runnable": 3, "entities": 456}
    assert loadavg.parse("garbage\n")[1] == 1


def test_cgroup_collector_reads_the_given_cgroup_and_says_why_it_cannot(tmp_path: Path) -> None:
    cg = tmp_path / "job.slice"
    cg.mkdir()
    (cg / "io.stat").write_text("8:0 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=0 dios=0\n")
    assert cgroupio.CgroupIoCollector([str(cg)]).read() == {
        str(cg): {"8:0": {"rbytes": 10, "wbytes": 20, "rios": 1, "wios": 2, "dbytes": 0, "dios": 0}}
    }
    with pytest.raises(SourceUnavailable, match="io controller"):
        cgroupio.CgroupIoCollector([str(tmp_path / "other")]).read()


def test_process_tree_is_found_through_the_children_files() -> None:
    script = (
        "import subprocess,sys; p = subprocess.Popen(['sleep', '30']); print(p.pid, flush=True); p.wait()"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert child.stdout is not None
    grandchild = int(child.stdout.readline())
    try:
        found = procio.descendants(os.getpid())
        assert found[0] == os.getpid() and child.pid in found and grandchild in found
        data = ProcIoCollector(trees=[os.getpid()]).read()
        assert str(os.getpid()) not in data  # the sampler's own process is left out
        assert data[str(child.pid)]["comm"].startswith("python")
        assert data[str(grandchild)]["comm"] == "sleep"
    finally:
        os.kill(grandchild, 9)
        child.wait(timeout=10)


# --- real sampling while a real write runs ------------------------------------------------------------------


WRITER = r"""
import os, sys
path, size = sys.argv[1], int(sys.argv[2])
sys.stdin.readline()
block = os.urandom(1 << 20)
with open(path, "wb") as f:
    for _ in range(size >> 20):
        f.write(block)
    f.flush()
    os.fsync(f.fileno())
print("done", flush=True)
sys.stdin.readline()
"""


def _device_of(path: Path) -> str:
    st = os.stat(path)
    uevent = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}/uevent")
    try:
        for line in uevent.read_text().splitlines():
            if line.startswith("DEVNAME="):
                return line.split("=", 1)[1]
    except OSError:
        pass
    pytest.skip(f"{path} is not on a block device")


def test_sampling_during_a_real_write_sees_the_disk_and_the_process_write_the_bytes(disk_dir: Path) -> None:
    size = 64 * MiB
    dev = _device_of(disk_dir)
    target = disk_dir / "written"
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target), str(size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None and writer.stdout is not None
    try:
        sampler = Sampler([DiskstatsCollector(devices=f"^{dev}$"), ProcIoCollector(pids=[writer.pid])])
        records: list[dict] = []
        thread = threading.Thread(
            target=sampler.run, args=(0.1, records.append), kwargs={"final_sample": True}, daemon=True
        )
        thread.start()
        threading.Event().wait(0.3)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        assert writer.stdout.readline().strip() == "done"
        sampler.stop()
        thread.join(timeout=10)
        first, last = records[0]["data"], records[-1]["data"]
        disk_written = last["diskstats"][dev]["written_bytes"] - first["diskstats"][dev]["written_bytes"]
        proc_written = (
            last["proc_io"][str(writer.pid)]["write_bytes"] - first["proc_io"][str(writer.pid)]["write_bytes"]
        )
        assert disk_written >= size
        assert proc_written >= size
        # The rates add up to the same bytes: sum over samples of rate × interval.
        total = 0.0
        for a, b in zip(records, records[1:], strict=False):
            total += b["rates"]["diskstats"][dev]["written_bytes"] * (b["elapsed_s"] - a["elapsed_s"])
        assert total == pytest.approx(disk_written, rel=1e-3)
        assert len(records) >= 4
    finally:
        writer.stdin.close()
        writer.wait(timeout=30)
