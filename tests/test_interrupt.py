"""Stop signals in the front end (iolens.interrupt, iolens.launch): recorded, handed to the child exactly once
whether they reached `iolens` alone or its whole group, a child that ignores them killed within the bound,
and a process started as one rank of an MPI job recognised as such."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from iolens import launch

# The child stands in for the engine: it says which signals reach it and either stops at the first or ignores
# them all.
CHILD = textwrap.dedent(
    """
    import signal, sys, time
    ignore = sys.argv[1] == "ignore"
    def got(signum, frame):
        print(f"child got {signum}", file=sys.stderr, flush=True)
        if not ignore:
            sys.exit(0)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, got)
    print("child ready", file=sys.stderr, flush=True)
    time.sleep(60)
    """
)

# The parent is iolens's own machinery: STOP.handling() around launch._stream, as the pipeline runs it.
PARENT = textwrap.dedent(
    """
    import sys
    from iolens import interrupt, launch
    interrupt.ESCALATE_AFTER_S = float(sys.argv[3])
    with interrupt.STOP.handling():
        out = launch._stream([sys.executable, "-c", sys.argv[1], sys.argv[2]], None,
                             lambda line: print(line, flush=True), launcher="local")
    print(f"returncode {out.returncode} signal {out.signal}", flush=True)
    """
)


def _parent(mode: str, escalate_s: float = 20.0, nohup: bool = False) -> subprocess.Popen[str]:
    def ignore_hup() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    proc = subprocess.Popen(
        [sys.executable, "-c", PARENT, CHILD, mode, str(escalate_s)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=ignore_hup if nohup else None,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "child ready", line
    return proc


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("target", ["process", "group"])
def test_a_stop_signal_reaches_the_child_once_and_the_front_end_goes_on(
    sig: signal.Signals, target: str
) -> None:
    proc = _parent("stop")
    if target == "group":
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    # Once, even when the whole group was signalled: the child runs in a group of its own.
    assert out.count(f"child got {int(sig)}") == 1, out
    assert f"returncode 0 signal {int(sig)}" in out, out
    assert proc.returncode == 0, out


def test_a_run_started_under_nohup_goes_on_through_sighup() -> None:
    proc = _parent("stop", nohup=True)
    proc.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert proc.poll() is None, "SIGHUP, ignored by nohup, stopped the run"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert f"child got {int(signal.SIGHUP)}\n" not in out, out
    assert f"returncode 0 signal {int(signal.SIGTERM)}" in out, out


def test_a_child_that_ignores_the_signal_is_killed_after_the_bound() -> None:
    proc = _parent("ignore", escalate_s=1.0)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    took = time.monotonic() - t0
    assert f"child got {int(signal.SIGTERM)}" in out
    assert f"returncode {-int(signal.SIGKILL)} signal {int(signal.SIGTERM)}" in out, out
    assert 1.0 <= took < 10.0, took


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "4"}, (1, 4)),
        ({"PMI_RANK": "0", "PMI_SIZE": "2"}, (0, 2)),
        ({"PMIX_RANK": "3"}, (3, None)),
        # A batch script sets SLURM_PROCID but is no launch; an srun step of several tasks is.
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "8"}, None),
        ({"SLURM_PROCID": "0", "SLURM_STEP_ID": "0", "SLURM_STEP_NUM_TASKS": "1"}, None),
        ({"SLURM_PROCID": "5", "SLURM_STEP_ID": "2", "SLURM_STEP_NUM_TASKS": "8"}, (5, 8)),
        ({"OMPI_COMM_WORLD_RANK": "not-a-number"}, None),
    ],
)
def test_an_mpi_job_rank_is_recognised_from_the_launchers_environment(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: tuple[int, int | None] | None
) -> None:
    for var in [k for k in os.environ if k.startswith(("OMPI_", "PMI", "SLURM_", "MV2_", "ALPS_"))]:
        monkeypatch.delenv(var)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    job = launch.mpi_job()
    assert (None if job is None else (job.rank, job.size)) == expected


def test_the_engine_of_an_mpi_job_rank_runs_as_that_rank_without_a_launcher() -> None:
    job = launch.MpiJob(rank=1, size=2, source="OMPI_COMM_WORLD_RANK=1")
    req = launch.RunRequest("ior", ["-w"], np=2, in_job=job)
    assert launch.build_command(req, "/e/iolens-bench") == ["/e/iolens-bench", "ior", "-w", "--comm", "mpi"]
