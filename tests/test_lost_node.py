"""iolens/lost_node.py without a cluster: a launcher named srun that reports a node failure and then waits
forever (as srun does for the output of a crashed node's tasks) is stopped, and the run says why. The real
case runs on the test cluster (tests/test_cluster_node_loss.py)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from iolens import launch, lost_node

STUCK_SRUN = """#!/bin/sh
echo "srun: error: Node failure on node2" >&2
exec sleep 600
"""


def fake_srun(tmp_path: Path, text: str) -> Path:
    script = tmp_path / "srun"
    script.write_text(text)
    script.chmod(0o755)
    return script


def test_srun_stuck_after_a_node_failure_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lost_node, "GRACE_S", 0.5)
    t0 = time.monotonic()
    srun = str(fake_srun(tmp_path, STUCK_SRUN))
    outcome = launch.run_command([srun], "srun", "iolens-bench", on_line=print)
    assert time.monotonic() - t0 < 10
    assert outcome.returncode == -signal.SIGTERM
    assert any("srun reported a node failure" in e and "iolens stopped it" in e for e in outcome.errors)


def test_other_launchers_and_lines_are_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lost_node, "GRACE_S", 0.2)
    quiet = STUCK_SRUN.replace("exec sleep 600", "sleep 1")
    # mpirun's output is not srun's: the same line from it starts nothing; srun that exits by itself in time
    # is not stopped.
    for launcher, text in (("mpirun", quiet), ("srun", quiet.replace("Node failure", "Node fine"))):
        cmd = [str(fake_srun(tmp_path, text))]
        outcome = launch.run_command(cmd, launcher, "iolens-bench", on_line=print)
        assert outcome.returncode == 0 and outcome.errors == [], launcher
