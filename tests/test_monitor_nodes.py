"""`--monitor` under MPI samples every node: each node's local rank 0 runs its engine through node_wrap, which
writes the node's stream into the run's temporary directory, passes signals on and exits as the engine did;
the streams become `monitor.nodes{HOST: …}` with the phase windows marked on each node's own samples."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from iolens import launch, results
from iolens.monitor import node_wrap, stream
from iolens.monitor.attach import parse_iso
from iolens.monitor.nodes import sections
from iolens.monitor.schedule import MonitorRequest

from .monitor_helpers import engine_path, iolens_env, run_iolens


def _run_mpi(args: list[str], mpi_env: dict[str, str], tmp_path: Path) -> tuple[dict[str, Any], str]:
    """`iolens WORKLOAD … --monitor --launcher mpirun --np 2`, with tmp_path as IOLENS_TMPDIR: the kept
    document and the standard output."""
    doc_path = tmp_path / "run.json"
    env = iolens_env(IOLENS_BENCH=str(engine_path()), IOLENS_TMPDIR=str(tmp_path))
    env.update({k: v for k, v in mpi_env.items() if k.startswith(("OMPI_", "PRTE_"))})
    more = ["--monitor", "--launcher", "mpirun", "--np", "2", "--json", str(doc_path), "--no-live"]
    if args[0] == "ior":
        more.append("--text-format=rich")  # the monitor's section is part of iolens's rich view
    r = run_iolens([*args, *more], env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(doc_path.read_text()), r.stdout


def test_ior_under_mpirun_np2_has_its_node_sampled_by_local_rank_0(
    mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    doc, stdout = _run_mpi(
        ["ior", "-F", "-t", "1m", "-b", "16m", "-w", "-r", "-o", str(tmpfs_dir / "f")], mpi_env, tmp_path
    )
    mon = doc["monitor"]
    assert mon["node_scope"] == "launching node and every node (nodes)" and mon["note"] is None
    # One host here: one node entry, written by the wrapper of the rank that was local rank 0.
    (host,) = mon["nodes"]
    node = mon["nodes"][host]
    assert host == doc["host"]["hostname"]
    assert node["local_rank"] == {"variable": "OMPI_COMM_WORLD_LOCAL_RANK", "value": 0}
    assert node["complete"] is True and node["files"] == [f"monitor-{host}.jsonl"]
    times = [s["time"] for s in node["samples"]]
    assert times == sorted(times) and len(times) >= 3
    run_start, run_end = parse_iso(doc["started_at"]), parse_iso(doc["ended_at"])
    assert run_start is not None and run_end is not None
    # The node's sampling spans the engine's run: before it started to after it ended.
    assert times[0] <= run_start and times[-1] >= run_end
    assert [(w["name"], w["iteration"]) for w in node["windows"]] == [("write", 0), ("read", 0)]
    for w, top in zip(node["windows"], mon["windows"], strict=True):
        assert (w["start"], w["end"]) == (top["start"], top["end"])
        first, last = w["samples"]
        assert times[first] > w["start"] and times[last] >= w["end"]
    # Its processes are the node's ranks: both engines, whichever of them ran under the wrapper.
    engines = {s for smp in node["samples"] for s, p in smp["data"].get("proc_io", {}).items()
               if p["comm"] == "iolens-bench"}  # fmt: skip
    assert len(engines) == 2
    # Nothing of the wrappers is left in the run's directory, and the document reads back with its nodes.
    assert not list(tmp_path.glob("iolens-*"))
    model = results.loads(json.dumps(doc))
    assert model.monitor is not None and list(model.monitor.nodes) == [host]
    assert len(model.monitor.nodes[host].windows) == 2
    assert f"node {host}:" in stdout


def test_io500_under_mpirun_has_each_phase_of_its_node_sampled(
    mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    cfg = tmp_path / "io500.ini"
    cfg.write_text(
        f"[global]\ndatadir = {tmpfs_dir}/data\nresultdir = {tmp_path}/results\ntimestamp-resultdir = FALSE\n"
    )
    doc, _ = _run_mpi(["io500", str(cfg), "--quick"], mpi_env, tmp_path)
    mon = doc["monitor"]
    ran = [p["name"] for p in doc["io500"]["phases"] if p.get("engine_document")]
    (host,) = mon["nodes"]
    node = mon["nodes"][host]
    # One stream per phase's launch, read back as one node in time order.
    assert sorted(node["files"]) == sorted(node_wrap.file_name(host, name) for name in ran)
    assert node["complete"] is True
    times = [s["time"] for s in node["samples"]]
    assert times == sorted(times)
    assert set(ran) <= {w["name"] for w in node["windows"]}, "every phase that ran has its window"
    for w in node["windows"]:
        if w["name"] in ran:
            first, last = w["samples"]
            assert times[first] > w["start"] and times[last] >= w["end"]
    assert not list(tmp_path.glob("iolens-*"))


def _disk_sample(t: float, written_bytes: int) -> dict[str, Any]:
    disk = {"written_bytes": written_bytes, "writes_completed": written_bytes // 4096, "read_bytes": 0,
            "reads_completed": 0, "io_time_ms": 0}  # fmt: skip
    return {
        "type": "sample",
        "seq": 0,
        "time": t,
        "elapsed_s": 0.0,
        "rates": {},
        "data": {"diskstats": {"sda": disk}},
    }


def _stream(path: Path, host: str, samples: list[dict[str, Any]], end: bool = True) -> None:
    sources = {"diskstats": {"available": True, "reads": "/proc/diskstats"}}
    node = {"local_rank": {"variable": "SLURM_LOCALID", "value": 0}, "watching": 1, "command": ["x"]}
    records = [stream.header(samples[0]["time"], "1 s", sources, host=host, node=node), *samples]
    if end:
        records.append({"type": "end", "time": samples[-1]["time"], "samples": len(samples)})
    path.write_text("".join(stream.dumps(r) + "\n" for r in records))


def test_streams_of_two_hosts_become_two_nodes_with_their_own_figures(tmp_path: Path) -> None:
    t0 = 1_700_000_000.0
    mib = 1 << 20
    # node-a writes 10 MiB/s through both phases; node-b writes only in the second, at 40 MiB/s.
    _stream(tmp_path / "monitor-node-a.jsonl", "node-a",
            [_disk_sample(t0 + i, 10 * mib * i) for i in range(5)])  # fmt: skip
    _stream(tmp_path / "monitor-node-b.jsonl", "node-b",
            [_disk_sample(t0 + i + 0.5, 40 * mib * max(0, i - 2)) for i in range(5)], end=False)  # fmt: skip
    (tmp_path / "monitor-broken.jsonl").write_text("not json\n")  # no header: left out
    wins = [
        {"name": "write", "iteration": 0, "start": t0 + 0.2, "end": t0 + 1.8, "placed": "progress"},
        {"name": "write", "iteration": 1, "start": t0 + 2.6, "end": t0 + 3.4, "placed": "progress"},
    ]
    nodes = sections(tmp_path, wins)
    assert list(nodes) == ["node-a", "node-b"]
    a, b = nodes["node-a"], nodes["node-b"]
    assert a["complete"] is True and b["complete"] is False
    assert a["local_rank"] == {"variable": "SLURM_LOCALID", "value": 0} and a["interval"] == "1 s"
    assert len(a["samples"]) == 5 and a["started"] == t0 and a["ended"] == t0 + 4
    assert [w["samples"] for w in a["windows"]] == [[1, 2], [3, 4]]
    assert [w["samples"] for w in b["windows"]] == [[0, 2], [3, 3]]

    def write_rate(node: dict[str, Any], i: int) -> float:
        (dev,) = node["windows"][i]["figures"]["devices"]
        return dev["write_bytes_per_s"]

    assert write_rate(a, 0) == pytest.approx(10 * mib) and write_rate(a, 1) == pytest.approx(10 * mib)
    # node-b: its samples at 0.5 to 2.5 (nothing written) for the first window; 2.5 to 3.5 for the second.
    assert write_rate(b, 0) == 0 and write_rate(b, 1) == pytest.approx(40 * mib)
    # The window itself is the run's, not moved per node.
    assert (b["windows"][1]["start"], b["windows"][1]["end"]) == (t0 + 2.6, t0 + 3.4)


def test_streams_of_several_launches_on_one_host_are_one_node_in_time_order(tmp_path: Path) -> None:
    t0 = 1_700_000_000.0
    _stream(tmp_path / "monitor-h-ior-easy-write.jsonl", "h", [_disk_sample(t0 + i, i) for i in range(3)])
    _stream(tmp_path / "monitor-h-ior-easy-read.jsonl", "h", [_disk_sample(t0 + 10 + i, 5) for i in range(2)])
    (node,) = sections(tmp_path, []).values()
    assert [s["time"] for s in node["samples"]] == [t0, t0 + 1, t0 + 2, t0 + 10, t0 + 11]
    assert sorted(node["files"]) == ["monitor-h-ior-easy-read.jsonl", "monitor-h-ior-easy-write.jsonl"]


# --- the wrapper as a real process ------------------------------------------------------------------------


def _wrap(directory: Path, cmd: list[str], env: dict[str, str] | None = None, **kw: Any) -> subprocess.Popen:
    prefix = node_wrap.command(directory, MonitorRequest(0.05))
    base = {k: v for k, v in iolens_env().items() if k not in node_wrap.LOCAL_RANK_VARS}
    return subprocess.Popen([*prefix, *cmd], env={**base, **(env or {})}, **kw)


def _records(path: Path) -> list[dict[str, Any]]:
    return list(stream.read(path.read_text().splitlines()))


def test_the_wrapper_exits_as_its_engine_did_and_writes_a_whole_stream(tmp_path: Path) -> None:
    p = _wrap(tmp_path, ["sh", "-c", "sleep 0.3; exit 3"], {"OMPI_COMM_WORLD_LOCAL_RANK": "0"})
    assert p.wait(timeout=60) == 3
    (path,) = tmp_path.glob("monitor-*.jsonl")
    recs = _records(path)
    assert recs[0]["type"] == "header" and recs[-1]["type"] == "end"
    assert recs[0]["node"]["local_rank"] == {"variable": "OMPI_COMM_WORLD_LOCAL_RANK", "value": 0}
    samples = [r for r in recs if r["type"] == "sample"]
    assert len(samples) >= 4 and recs[-1]["samples"] == len(samples)
    assert samples[-1]["time"] - samples[0]["time"] >= 0.3


def test_a_signal_to_the_wrapper_reaches_the_engine_and_the_wrapper_ends_by_it(tmp_path: Path) -> None:
    marker = tmp_path / "got-term"
    # The engine notes the SIGTERM it received, then dies of it.
    script = f"trap 'touch {marker}; trap - TERM; kill -TERM $$' TERM; while :; do sleep 0.05; done"
    p = _wrap(tmp_path, ["sh", "-c", script], {"SLURM_LOCALID": "0"})
    path = tmp_path / node_wrap.file_name(os.uname().nodename)
    deadline = time.monotonic() + 30
    while not (path.exists() and sum(r["type"] == "sample" for r in _records(path)) >= 3):
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=30) == -signal.SIGTERM
    assert marker.exists()
    assert _records(path)[-1]["type"] == "end"


def test_other_ranks_of_the_node_become_their_engine_and_write_nothing(tmp_path: Path) -> None:
    # exec: the engine has the wrapper's process id, and no stream is written.
    p = _wrap(tmp_path, ["sh", "-c", "echo $$"], {"PMIX_LOCAL_RANK": "1"}, stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 0 and int(out) == p.pid
    assert not list(tmp_path.iterdir())
    # Without a local-rank variable the first rank to create the node's stream samples; a later one execs.
    (tmp_path / node_wrap.file_name(os.uname().nodename)).write_text("")
    p = _wrap(tmp_path, ["sh", "-c", "echo $$; exit 5"], stdout=subprocess.PIPE, text=True)
    out, _ = p.communicate(timeout=60)
    assert p.returncode == 5 and int(out) == p.pid


def test_a_node_that_cannot_write_its_stream_says_so_and_runs_its_engine(tmp_path: Path) -> None:
    missing = tmp_path / "not-shared"
    p = _wrap(missing, ["sh", "-c", "exit 4"], {"MPI_LOCALRANKID": "0"}, stderr=subprocess.PIPE, text=True)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 4
    assert "IOLENS_TMPDIR" in err and "this node is not sampled" in err and "Traceback" not in err


def test_the_wrapper_goes_between_the_launcher_and_the_engine_under_mpi_only() -> None:
    wrap = node_wrap.command(Path("/shared/tmp/x"), MonitorRequest(), "ior-easy-write")
    assert wrap[:3] == [sys.executable, "-m", "iolens.monitor.node_wrap"] and wrap[-1] == "--"
    assert "--interval" not in wrap and wrap[wrap.index("--tag") + 1] == "ior-easy-write"
    req = launch.RunRequest("ior", ["-w"], np=4, launcher="srun", launcher_args=["-p", "x"], wrapper=wrap)
    cmd = launch.build_command(req, "/e")
    assert cmd == ["srun", "-n", "4", "-p", "x", *wrap, "/e", "ior", "-w", "--comm", "mpi"]
    local = launch.RunRequest("ior", ["-w"], np=2, wrapper=wrap)
    assert launch.build_command(local, "/e") == ["/e", "ior", "-w", "--np", "2"]
    assert node_wrap.file_name("a/b c", "ior-easy") == "monitor-a_b_c-ior-easy.jsonl"
