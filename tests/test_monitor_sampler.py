"""The sampler on real files that change under it: rates across counter resets (a value going down, a new
Lustre start_time, a job vanishing from job_stats) are never negative, and a source that vanishes is reported
once while sampling goes on."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from iolens.monitor.common import Collector, SourceUnavailable, Tree, rates
from iolens.monitor.diskstats import DiskstatsCollector
from iolens.monitor.lustre.collector import LustreCollector
from iolens.monitor.meminfo import MeminfoCollector
from iolens.monitor.sampler import Sampler


def _disk(written_sectors: int, reads: int = 5) -> str:
    return f" 254 0 vda {reads} 0 80 1 7 0 {written_sectors} 2 0 3 4 0 0 0 0 1 1\n"


def all_rates(records: list[dict]) -> list[float]:
    out: list[float] = []

    def walk(tree: object) -> None:
        if isinstance(tree, dict):
            for v in tree.values():
                walk(v)
        elif isinstance(tree, int | float):
            out.append(float(tree))

    for r in records:
        walk(r.get("rates", {}))
    return out


def test_a_counter_going_down_is_a_reset_and_its_rate_counts_from_zero(tmp_path: Path) -> None:
    f = tmp_path / "diskstats"
    f.write_text(_disk(1000))
    s = Sampler([DiskstatsCollector(str(tmp_path))])
    s.sample()
    f.write_text(_disk(3000))
    second, _ = s.sample()
    assert second["rates"]["diskstats"]["vda"]["written_bytes"] > 0
    f.write_text(_disk(200, reads=1))  # the device was re-created: counters restarted
    third, _ = s.sample()
    r = third["rates"]["diskstats"]["vda"]
    assert min(r.values()) >= 0
    dt = third["elapsed_s"] - second["elapsed_s"]
    assert r["written_bytes"] == pytest.approx(200 * 512 / dt, rel=0.01)
    assert "diskstats.vda.sectors_written" in third["resets"]
    assert "diskstats.vda.reads_completed" in third["resets"]
    assert "ios_in_progress" not in r  # a gauge has no rate


def _stats(snapshot: float, start: float | None, open_samples: int) -> str:
    text = f"snapshot_time {snapshot:.9f} secs.nsecs\n"
    if start is not None:
        text += f"start_time {start:.9f} secs.nsecs\nelapsed_time {snapshot - start:.9f} secs.nsecs\n"
    return text + f"open {open_samples} samples [usecs] 1 9 {open_samples * 3} {open_samples * 20}\n"


def test_a_new_lustre_start_time_resets_every_counter_of_the_file(tmp_path: Path) -> None:
    target = tmp_path / "llite" / "lfs-ffff"
    target.mkdir(parents=True)
    f = target / "stats"
    f.write_text(_stats(1000.0, 900.0, 500))
    s = Sampler([LustreCollector(mode="files", roots=(str(tmp_path),))])
    s.sample()
    f.write_text(_stats(1001.0, 900.0, 800))
    second, _ = s.sample()
    assert second["rates"]["lustre"]["llite.lfs-ffff.stats"]["counters"]["open"]["samples"] > 0
    # Cleared (lctl set_param llite.*.stats=clear): a new start_time, and fewer samples than before... or
    # even more: the start_time says it was reset whatever the values.
    f.write_text(_stats(1002.0, 1001.5, 900))
    third, _ = s.sample()
    dt = third["elapsed_s"] - second["elapsed_s"]
    rate = third["rates"]["lustre"]["llite.lfs-ffff.stats"]["counters"]["open"]["samples"]
    assert rate == pytest.approx(900 / dt, rel=0.01)
    assert "lustre.llite.lfs-ffff.stats.start_time" in third["resets"]
    assert min(all_rates([second, third])) >= 0


def test_a_snapshot_time_going_back_resets_the_file(tmp_path: Path) -> None:
    """Releases before 2.15 print no start_time: a target restarted between two readings shows an older
    snapshot, and its counters may even have grown past the old values."""
    target = tmp_path / "obdfilter" / "lfs-OST0000"
    target.mkdir(parents=True)
    f = target / "stats"
    f.write_text(_stats(5000.0, None, 100))
    s = Sampler([LustreCollector(mode="files", roots=(str(tmp_path),))])
    s.sample()
    f.write_text(_stats(4000.0, None, 150))
    second, _ = s.sample()
    assert "lustre.obdfilter.lfs-OST0000.stats.snapshot_time" in second["resets"]
    rate = second["rates"]["lustre"]["obdfilter.lfs-OST0000.stats"]["counters"]["open"]["samples"]
    assert rate == pytest.approx(150 / second["elapsed_s"], rel=0.05)


def _jobs(*jobs: tuple[str, int]) -> str:
    lines = ["job_stats:"]
    for job_id, n in jobs:
        lines += [
            f"- job_id:          {job_id}",
            "  snapshot_time:   1700000000",
            f"  write_bytes:     {{ samples: {n}, unit: bytes, min: 4096, max:1048576, sum: {n * 4096} }}",
        ]
    return "\n".join(lines) + "\n"


def test_a_job_that_vanished_and_came_back_counts_from_zero(tmp_path: Path) -> None:
    target = tmp_path / "obdfilter" / "lfs-OST0000"
    target.mkdir(parents=True)
    f = target / "job_stats"
    f.write_text(_jobs(("a", 100), ("b", 50)))
    s = Sampler([LustreCollector(mode="files", roots=(str(tmp_path),))])
    s.sample()
    f.write_text(_jobs(("a", 150)))  # b was cleaned up (job_cleanup_interval)
    second, _ = s.sample()
    jobs = second["rates"]["lustre"]["obdfilter.lfs-OST0000.job_stats"]["jobs"]
    assert set(jobs) == {"a"}
    assert "resets" not in second  # a job gone is no reset of the others
    f.write_text(_jobs(("a", 160), ("b", 10), ("c", 1)))  # b is back, counting from zero; c is new
    third, _ = s.sample()
    assert third["resets"] == ["lustre.obdfilter.lfs-OST0000.job_stats.jobs.b"]
    dt = third["elapsed_s"] - second["elapsed_s"]
    jobs = third["rates"]["lustre"]["obdfilter.lfs-OST0000.job_stats"]["jobs"]
    assert jobs["b"]["counters"]["write_bytes"]["sum"] == pytest.approx(10 * 4096 / dt, rel=0.01)
    assert jobs["a"]["counters"]["write_bytes"]["samples"] == pytest.approx(10 / dt, rel=0.01)
    # Back within one interval with fewer samples than before: a reset, not a negative rate.
    f.write_text(_jobs(("a", 5), ("b", 12)))
    fourth, _ = s.sample()
    assert "lustre.obdfilter.lfs-OST0000.job_stats.jobs.a.counters.write_bytes.samples" in fourth["resets"]
    assert min(all_rates([second, third, fourth])) >= 0


def test_rates_of_gauges_and_first_readings() -> None:
    c = MeminfoCollector()
    assert rates({"dirty_bytes": 10}, {"dirty_bytes": 5}, 1.0, c) == {}
    d = DiskstatsCollector()
    assert rates(None, {"vda": {"reads_completed": 5}}, 1.0, d) == {}
    # A device that appears is not new I/O: no rate until its second reading.
    assert rates({}, {"vdb": {"reads_completed": 5}}, 1.0, d) == {}


def test_a_vanished_source_is_reported_once_and_sampling_goes_on(tmp_path: Path) -> None:
    (tmp_path / "diskstats").write_text(_disk(10))
    (tmp_path / "meminfo").write_text("Dirty: 4 kB\nWriteback: 0 kB\n")
    s = Sampler([DiskstatsCollector(str(tmp_path)), MeminfoCollector(str(tmp_path))], retry_s=0.0)
    records: list[dict] = []
    events: list[dict] = []
    removed = threading.Event()
    restored = threading.Event()

    def on_record(rec: dict) -> None:
        records.append(rec)
        if len(records) == 3:
            (tmp_path / "diskstats").unlink()
            removed.set()
        if len(records) == 8:
            (tmp_path / "diskstats").write_text(_disk(20))
            restored.set()
        if len(records) == 11:
            s.stop()

    n = s.run(0.02, on_record, events.append, duration=5.0)
    assert n == 11 and removed.is_set() and restored.is_set()
    assert [e["event"] for e in events if e["source"] == "diskstats"] == ["unavailable", "available"]
    assert "no such file" in events[0]["reason"]
    # Every sample has meminfo; diskstats is missing from the samples taken while it was gone.
    assert all("meminfo" in r["data"] for r in records)
    assert [("diskstats" in r["data"]) for r in records] == [True] * 3 + [False] * 5 + [True] * 3
    assert min(all_rates(records)) >= 0


class _Broken(Collector):
    name = "broken"

    def read(self) -> Tree:
        raise ZeroDivisionError("a bug in a parser")


class _Gone(Collector):
    name = "gone"

    def read(self) -> Tree:
        raise SourceUnavailable("not here")


def test_a_collector_that_raises_does_not_stop_the_others(tmp_path: Path) -> None:
    (tmp_path / "meminfo").write_text("Dirty: 4 kB\n")
    s = Sampler([_Broken(), _Gone(), MeminfoCollector(str(tmp_path))], retry_s=0.0)
    rec, events = s.sample()
    assert rec["data"] == {"meminfo": {"dirty_bytes": 4096}}
    assert [(e["source"], e["reason"]) for e in events] == [
        ("broken", "ZeroDivisionError: a bug in a parser"),
        ("gone", "not here"),
    ]
    rec, events = s.sample()
    assert events == [] and rec["data"] == {"meminfo": {"dirty_bytes": 4096}}
    av = s.availability()
    assert av["broken"]["available"] is False and av["meminfo"]["available"] is True


def test_malformed_lines_are_counted_in_the_sample(tmp_path: Path) -> None:
    (tmp_path / "diskstats").write_text(_disk(10) + "junk line\n")
    s = Sampler([DiskstatsCollector(str(tmp_path))])
    s.sample()
    rec, _ = s.sample()
    assert rec["skipped_lines"] == {"diskstats": 2}
    assert "vda" in rec["data"]["diskstats"]


def test_run_samples_at_zero_and_every_interval_up_to_the_duration(tmp_path: Path) -> None:
    (tmp_path / "meminfo").write_text("Dirty: 4 kB\n")
    s = Sampler([MeminfoCollector(str(tmp_path))])
    records: list[dict] = []
    assert s.run(0.05, records.append, duration=0.2) == 5
    gaps = [b["elapsed_s"] - a["elapsed_s"] for a, b in zip(records, records[1:], strict=False)]
    assert all(0.03 < g < 0.2 for g in gaps)
