"""`--monitor` on real benchmark runs: the samples land in the kept document with each phase's window on
their clock; and how windows are placed from progress lines, durations and engine documents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from iolens import results
from iolens.monitor.attach import MonitorOptionError, MonitorRequest, parse_iso, take_option, windows

from .monitor_helpers import engine_path, iolens_env, run_iolens


def _run(args: list[str], tmp_path: Path) -> tuple[dict[str, Any], str]:
    doc_path = tmp_path / "run.json"
    env = iolens_env(IOLENS_BENCH=str(engine_path()))
    # The monitor's section is part of iolens's rich view (IOR's classic layout has none).
    view = ["--text-format=rich"] if args[0] == "ior" else []
    r = run_iolens([*args, *view, "--json", str(doc_path), "--no-live"], env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(doc_path.read_text()), r.stdout


def _check_windows_on_the_samples(doc: dict[str, Any]) -> dict[str, Any]:
    mon = doc["monitor"]
    samples = mon["samples"]
    times = [s["time"] for s in samples]
    assert times == sorted(times) and len(times) >= 2
    run_start, run_end = parse_iso(doc["started_at"]), parse_iso(doc["ended_at"])
    assert run_start is not None and run_end is not None
    # The sampler ran from before the engine started to after it ended.
    assert times[0] <= run_start + 0.05 and times[-1] >= run_end
    prev_end = 0.0
    for w in mon["windows"]:
        assert run_start - 0.01 <= w["start"] <= w["end"] <= run_end + 0.01
        assert w["start"] >= prev_end - 1e-6  # in order, not overlapping
        prev_end = w["end"]
        first, last = w["samples"]
        assert times[first] > w["start"] and (first == 0 or times[first - 1] <= w["start"])
        assert times[last] >= w["end"] and (last == first or times[last - 1] < w["end"])
    return mon


def test_monitor_on_a_real_ior_run_stores_samples_with_phase_windows(disk_dir: Path, tmp_path: Path) -> None:
    doc, stdout = _run(
        [
            "ior",
            "--monitor",
            "-F",
            "-t",
            "1m",
            "-b",
            "32m",
            "-w",
            "-r",
            "-e",
            "--np",
            "2",
            "-o",
            str(disk_dir / "f"),
        ],
        tmp_path,
    )
    mon = _check_windows_on_the_samples(doc)
    assert [(w["name"], w["iteration"]) for w in mon["windows"]] == [("write", 0), ("read", 0)]
    assert mon["host"] == doc["host"]["hostname"] and mon["rank0_host"] == doc["host"]["hostname"]
    assert mon["node_scope"] == "launching node" and mon["note"] is None
    assert mon["interval"].startswith("0.1 s")
    assert mon["sources"]["diskstats"]["available"] is True
    # Samples 0.1 s apart (the default is fine for a short run).
    gaps = [b["time"] - a["time"] for a, b in zip(mon["samples"], mon["samples"][1:], strict=False)]
    assert max(gaps) < 0.5
    # The write phase wrote 64 MiB and fsynced it: the disk and the engine's processes show writes in it.
    write = mon["windows"][0]["figures"]
    assert sum(d["write_bytes_per_s"] for d in write["devices"]) > 0
    writers = [p["name"] for p in write["processes"] if p["write_bytes_per_s"] > 0]
    assert writers and all(name.endswith(" iolens-bench") for name in writers), write["processes"]
    # The kept document reads back with its monitor section, and the report shows it.
    model = results.loads(json.dumps(doc))
    assert model.monitor is not None and len(model.monitor.windows) == 2
    assert model.monitor.windows[0].samples == tuple(mon["windows"][0]["samples"])
    assert "monitor:" in stdout and "write #0" in stdout


def test_a_phase_that_prints_progress_is_anchored_by_it(tmp_path: Path) -> None:
    # The null backend and a 1-second stonewall: the write phase lasts 1 s and prints progress lines. The
    # data pattern is iolens's (-l iolens), stamped into every 1 MiB transfer, so the 1 TiB cannot be done in
    # under a second (IOR's default timestamp packet is filled once: the phase would end at once).
    doc, _ = _run(
        [
            "ior",
            "--monitor=50ms",
            "-l",
            "iolens",
            "-a",
            "null",
            "-t",
            "1m",
            "-b",
            "1t",
            "-D",
            "1",
            "-w",
            "-o",
            str(tmp_path / "f"),
        ],
        tmp_path,
    )
    mon = _check_windows_on_the_samples(doc)
    (w,) = mon["windows"]
    assert w["placed"] == "progress"
    assert w["end"] - w["start"] == pytest.approx(doc["phases"][0]["times"]["total_s"], abs=1e-3)
    run_start = parse_iso(doc["started_at"])
    assert run_start is not None and 0 <= w["start"] - run_start < 0.25
    assert mon["interval"] == "0.05 s"
    assert w["samples"][1] - w["samples"][0] >= 15


def test_monitor_on_mdtest_marks_every_phase(tmp_path: Path) -> None:
    doc, _ = _run(
        ["mdtest", "--monitor", "-n", "200", "-F", "--np", "1", "-d", str(tmp_path / "md")], tmp_path
    )
    mon = _check_windows_on_the_samples(doc)
    assert [w["name"] for w in mon["windows"]] == [p["name"] for p in doc["phases"]]


def test_monitor_on_fio_marks_each_reporting_group_with_its_own_io(tmpfs_dir: Path, tmp_path: Path) -> None:
    # Two groups of 1 s each (the second after a stonewall): a writer, then a reader of what it wrote (no
    # layout to write first), on tmpfs.
    job = [
        "--bs=64k",
        "--size=16m",
        f"--directory={tmpfs_dir}",
        "--filename=f",
        "--time_based",
        "--runtime=1s",
    ]
    doc, stdout = _run(
        ["fio", "--monitor", "--name=w", "--rw=write", *job, "--name=r", "--stonewall", "--rw=read", *job],
        tmp_path,
    )
    mon = _check_windows_on_the_samples(doc)
    assert [w["name"] for w in mon["windows"]] == ["group 0: w", "group 1: r"]
    for w, group in zip(mon["windows"], doc["fio"]["groups"], strict=True):
        # Each group ran 1 s and printed progress lines: anchored by them, and as long as the group ran.
        assert w["placed"] == "progress"
        assert w["end"] - w["start"] == pytest.approx(group["elapsed_s"], abs=1e-3)
        assert w["samples"][1] - w["samples"][0] >= 5

    def moved(w: dict[str, Any], key: str) -> dict[str, int]:
        """Each process's counter growth between the first and the last sample taken inside the window."""
        first, last = w["samples"]
        a, b = (mon["samples"][i]["data"]["proc_io"] for i in (first, last - 1))
        return {pid: b[pid][key] - a[pid][key] for pid in a if pid in b and a[pid]["comm"] == "iolens-bench"}

    # The job's worker made write system calls (hardly a read) in the writer's group, the reverse in the
    # reader's (the samples inside each window: the figures' span reaches one interval into its neighbour).
    write, read = mon["windows"]

    def mostly(w: dict[str, Any], does: str, not_: str) -> bool:
        other = moved(w, not_)
        return any(n > 1000 and other[pid] < n / 100 for pid, n in moved(w, does).items())

    assert mostly(write, "syscw", "syscr") and mostly(read, "syscr", "syscw")
    assert "group 0: w" in stdout


def test_monitor_on_io500_quick_marks_every_phase_in_both_documents(tmpfs_dir: Path, tmp_path: Path) -> None:
    cfg = tmp_path / "io500.ini"
    cfg.write_text(
        f"[global]\ndatadir = {tmpfs_dir}/data\nresultdir = {tmp_path}/results\ntimestamp-resultdir = FALSE\n"
    )
    doc, stdout = _run(["io500", str(cfg), "--quick", "--monitor"], tmp_path)
    kept = json.loads((tmp_path / "results" / "iolens-io500.json").read_text())
    assert kept["monitor"] == doc["monitor"]  # the result directory's document was rewritten with it
    mon = doc["monitor"]
    ran = [p for p in doc["io500"]["phases"] if p.get("engine_document")]
    assert len(ran) >= 12
    by_name = {w["name"]: w for w in mon["windows"]}
    times = [s["time"] for s in mon["samples"]]
    assert times == sorted(times)
    for p in ran:
        w = by_name[p["name"]]
        # The window is the phase's own engine run, to the millisecond.
        sub = json.loads((tmp_path / "results" / p["engine_document"]).read_text())
        assert w["placed"] == "document"
        assert (w["start"], w["end"]) == (parse_iso(sub["started_at"]), parse_iso(sub["ended_at"]))
        first, last = w["samples"]
        assert times[first] > w["start"] and times[last] >= w["end"] and last >= first
    starts = [w["start"] for w in mon["windows"]]
    assert starts == sorted(starts)
    assert times[0] <= starts[0] and times[-1] >= mon["windows"][-1]["end"]
    # The engine's processes were sampled while they ran. (Which phase's figures show their writes is luck
    # here: a --quick phase on tmpfs lasts tens of milliseconds, less than the 0.1 s interval, so a process
    # is seen by two samples, and its rates computed, only when the samples happen to fall in its life.)
    names = {p["name"] for w in mon["windows"] for p in w["figures"]["processes"]}
    engines = {n for n in names if n.endswith(" iolens-bench")}
    assert engines, [w["figures"]["processes"] for w in mon["windows"]]
    assert "monitor:" in stdout and "ior-easy-write" in stdout


def test_bad_monitor_interval_is_a_usage_error() -> None:
    r = run_iolens(["ior", "--monitor=soon", "-w"])
    assert r.returncode == 2 and "--monitor: expected a time" in r.stderr
    with pytest.raises(MonitorOptionError):
        take_option(["--monitor=0"])


def test_take_option_leaves_everything_else_and_what_follows_a_double_dash() -> None:
    req, rest = take_option(["-w", "--monitor", "-t", "1m", "--", "--monitor"])
    assert req == MonitorRequest(None) and rest == ["-w", "-t", "1m", "--", "--monitor"]
    req, rest = take_option(["--monitor=250ms", "-r"])
    assert req is not None and req.interval_s == pytest.approx(0.25) and rest == ["-r"]
    assert take_option(["-r"]) == (None, ["-r"])
    assert MonitorRequest().schedule(0.5) == 0.1 and MonitorRequest().schedule(60) == 1.0


# --- window placement ---------------------------------------------------------------------------------------


def _ior_doc(*phases: tuple[str, int, float, float]) -> dict[str, Any]:
    return {
        "workload": "ior",
        "started_at": "2026-01-01T00:00:00.000Z",
        "ended_at": "2026-01-01T00:00:10.000Z",
        "phases": [
            {"name": n, "iteration": it, "times": {"open_s": o, "total_s": t}} for n, it, t, o in phases
        ],
    }


T0 = parse_iso("2026-01-01T00:00:00.000Z") or 0.0


def test_windows_from_progress_lines_estimates_and_the_evict_marker() -> None:
    doc = _ior_doc(("write", 0, 3.0, 0.01), ("read", 0, 0.2, 0.0), ("write", 1, 0.3, 0.0))
    progress = [
        (T0 + 1.52, {"phase": "write", "iteration": 0, "elapsed_s": 0.5}),
        (T0 + 2.0, {"phase": "write", "iteration": 0, "elapsed_s": 0.99}),  # delivered late: not the best
        (T0 + 4.0, {"phase": "evict-cache", "iteration": 0}),
    ]
    w = windows(doc, progress, T0, T0 + 10)
    assert w[0]["placed"] == "progress"
    assert w[0]["start"] == pytest.approx(T0 + 1.01) and w[0]["end"] == pytest.approx(T0 + 4.01)
    # The read came after the cache was evicted, which was after the write.
    assert w[1]["placed"] == "estimate" and w[1]["start"] == pytest.approx(T0 + 4.01)
    assert w[2]["start"] == pytest.approx(w[1]["end"])


def test_anchored_windows_late_lines_neither_overlap_nor_run_past_the_end() -> None:
    doc = _ior_doc(("write", 0, 3.0, 0.0), ("read", 0, 6.99, 0.0))
    progress = [
        # The write's line came 20 ms late, the read's 5 ms late: read would start before write ended,
        # and end 15 ms after the run did.
        (T0 + 0.52, {"phase": "write", "iteration": 0, "elapsed_s": 0.5}),
        (T0 + 3.505, {"phase": "read", "iteration": 0, "elapsed_s": 0.5}),
    ]
    w, r = windows(doc, progress, T0, T0 + 10)
    assert (w["placed"], r["placed"]) == ("progress", "progress")
    assert w["end"] == pytest.approx(T0 + 3.02)
    assert r["start"] >= w["end"] and r["end"] == pytest.approx(T0 + 10.0)
    assert r["end"] - r["start"] == pytest.approx(6.98)  # no room for all of it: it starts where write ended


def test_estimated_windows_never_run_past_the_end_of_the_run() -> None:
    doc = _ior_doc(("write", 0, 6.0, 0.0), ("read", 0, 6.0, 0.0))
    w = windows(doc, [], T0, T0 + 10)
    assert w[0]["start"] == pytest.approx(T0) and w[0]["end"] == pytest.approx(T0 + 6)
    assert w[1]["end"] == pytest.approx(T0 + 10) and w[1]["start"] >= w[0]["end"]


def test_fio_groups_find_and_io500_phases_get_windows(tmp_path: Path) -> None:
    fio = {
        "workload": "fio",
        "started_at": "2026-01-01T00:00:00.000Z",
        "ended_at": "2026-01-01T00:00:10.000Z",
        "fio": {
            "jobs": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "groups": [{"id": 0, "jobs": [0, 1], "elapsed_s": 2.0}, {"id": 1, "jobs": [2], "elapsed_s": 3.0}],
        },
    }
    w = windows(fio, [(T0 + 5.0, {"phase": "group 1", "elapsed_s": 1.0})], T0, T0 + 10)
    assert [x["name"] for x in w] == ["group 0: a, b", "group 1: c"]
    assert w[1]["placed"] == "progress" and w[1]["start"] == pytest.approx(T0 + 4.0)
    find = {"workload": "find", "started_at": "2026-01-01T00:00:00.000Z", "find": {"time_s": 0.5}}
    assert windows(find, [], T0, T0 + 1)[0]["end"] == pytest.approx(T0 + 0.5)
    (tmp_path / "ior-easy-write.json").write_text(
        json.dumps({"started_at": "2026-01-01T00:00:01.250Z", "ended_at": "2026-01-01T00:00:03.500Z"})
    )
    io500 = {
        "workload": "io500",
        "io500": {
            "resultdir": str(tmp_path),
            "phases": [
                {"name": "ior-easy-write", "engine_document": "ior-easy-write.json"},
                {"name": "timestamp", "engine_document": None, "started_at": "2026-01-01T00:00:04Z",
                 "ended_at": "2026-01-01T00:00:04Z"},
                {"name": "find", "engine_document": None, "started_at": None, "ended_at": None},
            ],
        },
    }  # fmt: skip
    (tmp_path / "mdtest-easy-write.json").write_text(
        json.dumps({"started_at": "2026-01-01T00:00:04.100Z", "ended_at": "2026-01-01T00:00:04.900Z"})
    )
    io500["io500"]["phases"].insert(
        2, {"name": "mdtest-easy-write", "engine_document": "mdtest-easy-write.json"}
    )
    w = windows(io500, [], T0, T0 + 10)
    assert [(x["name"], x["placed"]) for x in w] == [
        ("ior-easy-write", "document"),
        ("timestamp", "document (seconds)"),
        ("mdtest-easy-write", "document"),
    ]
    assert w[0]["start"] == pytest.approx(T0 + 1.25) and w[0]["end"] == pytest.approx(T0 + 3.5)
    # Known to the second only: after the phase before it, before the phase after it.
    assert w[1]["start"] == pytest.approx(T0 + 4.0) and w[1]["end"] == pytest.approx(T0 + 4.0)


def test_a_document_with_a_broken_monitor_section_is_refused(sample_doc: dict[str, Any]) -> None:
    sample_doc["monitor"] = {
        "host": "h", "interval": "1 s", "started": 1.0, "ended": 2.0, "note": None, "sources": {},
        "events": [], "windows": [], "samples": [{"no": "time"}],
    }  # fmt: skip
    with pytest.raises(results.ResultError, match=r"monitor\.samples\[0\]"):
        results.parse(sample_doc)
    sample_doc["monitor"]["samples"] = [{"time": 1.5, "data": {}, "rates": {}}]
    doc = results.parse(sample_doc)
    assert doc.monitor is not None and doc.monitor.samples[0]["time"] == 1.5
