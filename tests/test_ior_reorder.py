"""-C (reorder tasks) as IOR does it: reads go one node away, which is tasks-on-node-0 ranks when ranks fill
a node before the next (block mapping) and one rank when they go round-robin over the nodes (cyclic). The
engine's test hook IOLENS_TEST_HOST gives each local rank a host name, so several "nodes" run here."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .ior_helpers import assert_only_canary_left, place_canary, run_engine

KIB = 1024

# hosts of ranks 0..3 -> (mapping, read shift with -Q 1, -W check shift)
LAYOUTS = {
    "block": ("a,a,b,b", "block", 2, 0),
    "cyclic": ("a,b,a,b", "cyclic", 1, 2),
    "one-node": ("a,a,a,a", "block", 0, 0),
}


def env_with_hosts(hosts: str) -> dict[str, str]:
    return dict(os.environ, IOLENS_TEST_HOST=hosts)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_reorder_moves_reads_one_node_away_for_the_task_mapping(
    engine: Path, tmpfs_dir: Path, layout: str
) -> None:
    hosts, mapping, shift, check_shift = LAYOUTS[layout]
    env = env_with_hosts(hosts)
    canary = place_canary(tmpfs_dir)
    path = tmpfs_dir / "c"
    base = ["-F", "-t", "4k", "-b", "64k", "-o", str(path)]
    res = run_engine(engine, [*base, "-C", "-w", "-W", "-r", "-R", "-k"], np=4, env=env)
    assert res.returncode == 0, res.stderr
    target = res.doc["target"]
    assert (target["task_mapping"], target["read_rank_shift"], target["check_rank_shift"]) == (
        mapping,
        shift,
        check_shift,
    )
    assert res.doc["comm"]["nodes"] == len(set(hosts.split(",")))
    write, read = res.doc["phases"]
    assert write["verify"]["errors"] == 0 and write["verify"]["bytes_checked"] == 4 * 64 * KIB
    assert read["verify"]["errors"] == 0 and read["verify"]["bytes_checked"] == 4 * 64 * KIB

    # Cut rank 2's file short: the rank that reads it, (r + shift) mod 4 == 2, is the one that fails.
    os.truncate(f"{path}.00000002", 8 * KIB)
    bad = run_engine(engine, [*base, "-C", "-r", "-k"], np=4, env=env)
    assert bad.returncode == 1
    assert bad.doc["error"]["rank"] == (2 - shift) % 4
    assert f"{path}.00000002" in bad.doc["error"]["message"]
    assert run_engine(engine, [*base, "--remove-only"], np=4).returncode == 0
    assert_only_canary_left(tmpfs_dir, canary)


def test_task_per_node_offset_counts_nodes_in_the_mapping(engine: Path, tmpfs_dir: Path) -> None:
    # 6 ranks on 3 nodes, round-robin: -Q 2 moves reads two nodes, i.e. two ranks, away.
    res = run_engine(
        engine,
        ["-F", "-C", "-Q", "2", "-t", "4k", "-b", "16k", "-w", "-r", "-R", "-o", str(tmpfs_dir / "q")],
        np=6,
        env=env_with_hosts("x,y,z,x,y,z"),
    )
    assert res.returncode == 0, res.stderr
    assert (res.doc["target"]["task_mapping"], res.doc["target"]["read_rank_shift"]) == ("cyclic", 2)
    assert res.doc["phases"][1]["verify"]["errors"] == 0
    assert list(tmpfs_dir.iterdir()) == []
