"""The test cluster as a pytest fixture: `slurm_cluster` (session scope), registered in tests/conftest.py.

Skips every test that asks for it, with the reason, when the cluster cannot start here (Slurm, munge or
MariaDB not installed, not root, no network namespaces), unless IOLENS_REQUIRE_CLUSTER=1 (CI sets it): then
they fail, so that the cluster tests cannot quietly vanish from CI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.netns import ClusterError
from tests.cluster.slurm import SlurmCluster


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """A running two-node Slurm cluster with accounting (tests/cluster/slurm.py); stopped at the end."""
    cluster = SlurmCluster(nodes=2)
    try:
        cluster.start()
    except ClusterError as exc:
        if os.environ.get("IOLENS_REQUIRE_CLUSTER") == "1":
            pytest.fail(f"test cluster not started, and IOLENS_REQUIRE_CLUSTER=1: {exc}")
        pytest.skip(f"test cluster not started: {exc}")
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster_work(slurm_cluster: SlurmCluster, request: pytest.FixtureRequest) -> Path:
    """A fresh directory for the test that every host of the cluster sees (tests' own tmp_path is in this
    host's /tmp, which the nodes do not see), with an empty tmp/ in it for IOLENS_TMPDIR."""
    d = slurm_cluster.workdir / request.node.name
    (d / "tmp").mkdir(parents=True)
    return d
