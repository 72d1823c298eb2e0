"""Several nodes' `iolens monitor --db postgresql://…` into one PostgreSQL server (docs/monitor.md "From every
node into PostgreSQL"): each node a real `iolens monitor` in its own UTS namespace, so it has its own host
name as a node would; every sample of every node's stream arrives, filed under that node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolens.store import Store

from .db_helpers import iolens_env

NODES = ("cn001", "cn002", "cn003")


def test_every_node_stores_its_own_samples(pg_server: object, tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a host name per simulated node")
    url = pg_server.new_database()  # type: ignore[attr-defined]
    Store.open(url).close()  # the schema, as a center's first node would make it
    env = iolens_env()
    procs = {}
    for node in NODES:
        out = tmp_path / f"{node}.jsonl"
        script = (
            f'hostname {node} && exec "$0" -m iolens monitor --db "$1" --interval 0.2 --duration 2.4 '
            f'--sources diskstats,meminfo,loadavg,stat --no-live --out "$2"'
        )
        procs[node] = subprocess.Popen(
            ["unshare", "--uts", "sh", "-c", script, sys.executable, url, str(out)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    for node, p in procs.items():
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, (node, err)
        assert "stored" in err and "error" not in err, err
    with Store.open(url) as st:
        counts = dict(st.db.query("SELECT host, count(*) FROM monitor_samples GROUP BY host"))
        hosts = {r[0] for r in st.db.query("SELECT DISTINCT host FROM series")}
    assert hosts == set(NODES)
    for node in NODES:
        # Every number of every sample record of the node's own stream is a stored sample.
        expected = 0
        for line in (tmp_path / f"{node}.jsonl").read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "sample":
                expected += sum(1 for _ in _numbers(rec.get("data", {}))) + sum(
                    1 for _ in _numbers(rec.get("rates", {}))
                )
        assert counts[node] == expected, (node, counts, expected)


def _numbers(tree: object) -> list[float]:
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _numbers(v)]
    if isinstance(tree, int | float) and not isinstance(tree, bool):
        return [float(tree)]
    return []
