"""A Lustre tree we may read only in part (debugfs without root, a parameter file of mode 000): the parts that
could not be read are named with the reason, once, the rest is sampled, and nothing is searched again each
sample; with nothing readable the source is unavailable for "permission denied", not "vanished"."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolens.monitor.common import Unreadable
from iolens.monitor.lustre import collector as lustre_collector
from iolens.monitor.lustre.collector import LustreCollector
from iolens.monitor.sampler import Sampler

from .monitor_helpers import iolens_env, sample_text

NOBODY = 65534
OST_STATS = "obdfilter.lfs-OST0000.stats"
RPC = "osc.lfs-OST0000-osc-ffff88.rpc_stats"


def _tree(root: Path, osts: tuple[str, ...] = ("lfs-OST0000",)) -> Path:
    for ost in osts:
        (root / "obdfilter" / ost).mkdir(parents=True)
        (root / "obdfilter" / ost / "stats").write_text(sample_text("obdfilter-export-stats-2.12.txt"))
    (root / "osc" / "lfs-OST0000-osc-ffff88").mkdir(parents=True)
    (root / "osc" / "lfs-OST0000-osc-ffff88" / "rpc_stats").write_text("snapshot_time: 1.0 (secs.nsecs)\n")
    return root


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A scratch directory another user can enter (pytest's own is its owner's only)."""
    path = Path(tempfile.mkdtemp(prefix="iolens-test-", dir="/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _as_nobody(args: list[str], home: Path) -> subprocess.CompletedProcess[str]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to run iolens as another user")
    cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
           sys.executable, "-m", "iolens", *args]  # fmt: skip
    env = {k: v for k, v in iolens_env(HOME=str(home)).items() if not k.startswith(("XDG_", "IOLENS_DB"))}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_a_user_who_may_read_part_of_the_tree_is_told_which_parts_once(shared_tmp: Path) -> None:
    root = _tree(shared_tmp / "proc")
    (root / "osc" / "lfs-OST0000-osc-ffff88" / "rpc_stats").chmod(0o000)
    debug = _tree(shared_tmp / "debug")
    debug.chmod(0o700)  # as /sys/kernel/debug: root's only
    r = _as_nobody(["monitor", "--lustre-root", str(root), "--lustre-root", str(debug), "--sources", "lustre",
                    "--interval", "0.1", "--duration", "0.5", "--out", "-"], shared_tmp)  # fmt: skip
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in r.stdout.splitlines()]
    header = records[0]
    lustre = header["sources"]["lustre"]
    assert lustre["available"] is True
    assert set(lustre["unreadable"]) == {str(debug), RPC}
    assert "permission denied" in lustre["unreadable"][str(debug)]
    assert "permission denied" in lustre["unreadable"][RPC]
    partial = [x for x in records if x.get("event") == "partial"]
    assert len(partial) == 1 and set(partial[0]["unreadable"]) == {str(debug), RPC}
    samples = [x for x in records if x["type"] == "sample"]
    assert len(samples) >= 4
    assert all(list(s["data"]["lustre"]) == [OST_STATS] for s in samples)
    assert r.stderr.count("lustre partly unavailable: ") == 1 and RPC in r.stderr


def test_a_user_who_may_read_none_of_the_tree_is_told_permission_denied(shared_tmp: Path) -> None:
    root = _tree(shared_tmp / "proc")
    for f in root.rglob("*"):
        if f.is_file():
            f.chmod(0o000)
    debug = _tree(shared_tmp / "debug")
    debug.chmod(0o700)
    r = _as_nobody(["monitor", "--lustre-root", str(root), "--lustre-root", str(debug), "--sources", "lustre",
                    "--interval", "0.1", "--duration", "0.3", "--out", "-"], shared_tmp)  # fmt: skip
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in r.stdout.splitlines()]
    lustre = records[0]["sources"]["lustre"]
    assert lustre["available"] is False
    assert lustre["reason"].startswith("nothing readable: ") and "vanished" not in lustre["reason"]
    assert f"{OST_STATS}: " in lustre["reason"] and "permission denied" in lustre["reason"]
    assert f"{debug}: permission denied" in lustre["reason"]
    assert [x["event"] for x in records if x["type"] == "event"] == ["unavailable"]


def test_an_unreadable_parameter_is_not_searched_for_again_each_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "lustre", ("lfs-OST0000", "lfs-OST0001"))
    denied = str(root / "osc" / "lfs-OST0000-osc-ffff88" / "rpc_stats")
    real_read = lustre_collector.read_file

    def read_file(path: str) -> str:
        if path == denied:
            raise Unreadable(f"{path}: permission denied (run as root?)")
        return real_read(path)

    finds: list[int] = []
    real_find = lustre_collector.params.find

    def find(*args: object, **kw: object) -> dict[str, str]:
        finds.append(1)
        return real_find(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(lustre_collector, "read_file", read_file)
    monkeypatch.setattr(lustre_collector.params, "find", find)
    c = LustreCollector(roots=(str(root),), rediscover_s=3600)
    s = Sampler([c])
    events = []
    both = [OST_STATS, "obdfilter.lfs-OST0001.stats"]
    for _ in range(5):
        record, evs = s.sample()
        events.extend(evs)
        assert list(record["data"]["lustre"]) == both
    assert len(finds) == 1  # a permission error is no reason to search the tree again
    assert [e["event"] for e in events] == ["partial"]
    said = {RPC: f"{denied}: permission denied (run as root?)"}
    assert events[0]["unreadable"] == said and s.availability()["lustre"]["unreadable"] == said
    # A file that vanishes is another matter: the tree is searched again at the next sample.
    shutil.rmtree(root / "obdfilter" / "lfs-OST0001")
    s.sample()
    record, _ = s.sample()
    assert len(finds) == 2 and list(record["data"]["lustre"]) == [OST_STATS]


def test_prometheus_counts_the_parts_of_a_source_that_could_not_be_read() -> None:
    from iolens.monitor.prometheus import exposition

    sources = {
        "lustre": {"available": True, "unreadable": {"a": "x", "b": "y"}},
        "loadavg": {"available": True},
    }
    text = exposition({"time": 1.0, "data": {}}, sources)
    assert 'iolens_monitor_unreadable_parts{source="lustre"} 2' in text
    assert 'iolens_monitor_unreadable_parts{source="loadavg"}' not in text
