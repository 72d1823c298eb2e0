"""A job's end: its logs reduced into a profile and stored with the batch system's facts, within a hard
time limit, and the raw logs removed only once the store has committed.

On every node of the job the epilog marks the node as done in the job's directory; the job's first node
(Slurm: the first of SLURM_JOB_NODELIST; PBS: the mother superior) does the work. It writes the facts next to
the logs (`.iolens-job.json`), then hands the reduction and the store to a worker in a session of its own
and waits for it until the time limit. A worker that is not done by then goes on in the background (at most
background_timeout_s); one that fails leaves the directory as it is, and `iolens site sync` stores it later.
Nothing here raises to the caller: the outcome is a line for the epilog's log.
"""

from __future__ import annotations

import fcntl
import json
import os
import pwd
import select
import signal
import socket
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from iolens import atomic
from iolens.site.config import SiteConfig
from iolens.site.facts import FactError, expand_hostlist, merge_scontrol, scontrol_job, slurm_env_job
from iolens.store.sched_jobs import SchedJob

FACTS = ".iolens-job.json"
LOCK = ".iolens-lock"
ENDED = ".iolens-ended."  # + node name: that node's epilog ran
# Of the time limit, what the first node may spend waiting for the other nodes' epilogs to mark theirs.
WAIT_SHARE = 0.4
# Kept for the worker's own use: what it needs to exit after its result is written.
MARGIN_S = 0.3


@dataclass
class Outcome:
    job_id: str
    what: str  # "stored", "background", "deferred", "not first node", "no directory", "refused", "failed"
    detail: str = ""
    seconds: float = 0.0

    def line(self) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        detail = f": {self.detail}" if self.detail else ""
        return f"{stamp} job {self.job_id}: {self.what}{detail} ({self.seconds:.2f} s)"


def read_facts(job_dir: Path) -> SchedJob | None:
    try:
        data = json.loads((job_dir / FACTS).read_text())
        return SchedJob(**data)
    except (OSError, ValueError, TypeError):
        return None


def slurm_job(env: Mapping[str, str], ask_controller: bool = True) -> tuple[SchedJob, str, bool]:
    """The job, this node's name, and whether this node is the job's first (Slurm's Epilog environment)."""
    job = slurm_env_job(env)
    node = env.get("SLURMD_NODENAME") or socket.gethostname()
    try:
        nodes = expand_hostlist(job.node_list) if job.node_list else []
    except FactError:
        nodes = []  # a list this cannot read: every node stores, the first one to lock the directory wins
    first = not nodes or nodes[0] == node
    if first and ask_controller:
        job = merge_scontrol(job, scontrol_job(job.job_id))
    if job.ended_at is None:
        job.ended_at = time.time()
    return job, node, first


def pbs_job(env: Mapping[str, str]) -> tuple[SchedJob, str, bool]:
    """The job as the PBS hook passed it (IOLENS_PBS_* variables: scripts.pbs_hook)."""

    def get(k: str) -> str:
        return env.get(f"IOLENS_PBS_{k.upper()}", "")

    job_id = get("job_id")
    if not job_id:
        raise FactError("IOLENS_PBS_JOB_ID is not set: not run by the iolens PBS hook")
    hosts = [h.split("/")[0] for h in get("exec_host").split("+") if h]
    status = get("exit_status")
    code = int(status) if status.lstrip("-").isdigit() else None
    job = SchedJob(
        scheduler="pbs", cluster=get("server"), job_id=job_id, source="pbs-hook", job_ref=job_id,
        job_name=get("job_name") or None, user_name=get("user") or None, account=get("account") or None,
        partition_name=get("queue") or None, nodes=len(dict.fromkeys(hosts)) or None,
        cpus=int(get("ncpus")) if get("ncpus").isdigit() else None,
        node_list=",".join(dict.fromkeys(hosts)) or None,
        started_at=float(get("stime")) if get("stime").isdigit() else None, ended_at=time.time(),
        # PBS: Exit_status >= 256 is 256 + the signal that killed the job's top process
        exit_code=code if code is None or code < 256 else None,
        exit_signal=code - 256 if code is not None and code >= 256 else None,
        state="F",
    )  # fmt: skip
    if array := job_id.partition("[")[2].partition("]")[0]:
        job.array_job_id, job.array_task_id = job_id.split("[")[0] + "[]", array
    if job.started_at is not None:
        job.elapsed_s = job.ended_at - job.started_at  # type: ignore[operator]
    return job, socket.gethostname(), get("primary") != "0"


def run(cfg: SiteConfig, job: SchedJob, node: str, first: bool, started: float) -> Outcome:
    """The epilog on one node; never raises, returns within the time limit."""
    deadline = started + cfg.epilog_timeout_s

    def done(what: str, detail: str = "") -> Outcome:
        return Outcome(job.job_id, what, detail, time.monotonic() - started)

    job.cluster = cfg.cluster or job.cluster
    job_dir = cfg.job_dir(job.job_id)
    try:
        st = job_dir.stat()
    except OSError:
        return done("no directory", "profiling was off for the job")
    if job.uid is None and job.user_name:
        try:
            job.uid = pwd.getpwnam(job.user_name).pw_uid
        except KeyError:
            pass
    if job.uid is not None and st.st_uid != job.uid:
        # A user may make a directory for another's job id in the spool (it is writable by all): its logs are
        # not that job's.
        return done("refused", f"{job_dir} belongs to uid {st.st_uid}, the job's user is uid {job.uid}")
    try:
        (job_dir / f"{ENDED}{node}").touch()
    except OSError as exc:
        return done("failed", f"cannot mark {node} as ended in {job_dir}: {exc.strerror}")
    if not first:
        return done("not first node", f"{node} marked as ended")
    try:
        atomic.write_text(job_dir / FACTS, json.dumps(job.as_dict(), sort_keys=True))
    except OSError as exc:
        return done("failed", f"cannot write {job_dir / FACTS}: {exc.strerror}")
    return _hand_to_worker(cfg, job_dir, deadline, done)


def _hand_to_worker(cfg: SiteConfig, job_dir: Path, deadline: float, done) -> Outcome:  # type: ignore[no-untyped-def]
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(r)
        os.close(w)
        return done("deferred", f"cannot start a worker ({exc.strerror}): iolens site sync stores it")
    if pid == 0:  # the worker: its own session, so that the Epilog's time limit does not kill it
        os.close(r)
        status = 1
        try:
            os.setsid()
            signal.alarm(int(cfg.background_timeout_s))
            result = store_job_dir(
                cfg, job_dir, wait_until=deadline - cfg.epilog_timeout_s * (1 - WAIT_SHARE)
            )
            status = 0
            try:
                os.write(w, (json.dumps(result) + "\n").encode())
            except OSError:  # the Epilog has returned: the outcome goes to its log (our standard output)
                line = Outcome(job_dir.name, f"{result['what']} in the background", result["detail"]).line()
                print(line, flush=True)
        except BaseException as exc:  # noqa: BLE001 - said to the parent, never raised
            try:
                os.write(
                    w,
                    (
                        json.dumps({"what": "failed", "detail": str(exc) or type(exc).__name__}) + "\n"
                    ).encode(),
                )
            except OSError:
                pass
        finally:
            os._exit(status)
    os.close(w)
    buf = b""
    try:
        while b"\n" not in buf:
            left = deadline - MARGIN_S - time.monotonic()
            if left <= 0 or not select.select([r], [], [], left)[0]:
                return done("background", f"still storing after the time limit (worker pid {pid})")
            chunk = os.read(r, 65536)
            if not chunk:
                break
            buf += chunk
    finally:
        os.close(r)
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        result = json.loads(buf.decode().splitlines()[0])
    except (ValueError, IndexError):
        return done("deferred", "the worker ended without a word: iolens site sync stores it")
    return done(str(result.get("what", "failed")), str(result.get("detail", "")))


def _other_nodes_done(job_dir: Path, job: SchedJob | None) -> bool:
    if job is None or not job.node_list or job.scheduler != "slurm":
        return True
    try:
        nodes = expand_hostlist(job.node_list)
    except FactError:
        return True
    return all((job_dir / f"{ENDED}{n}").exists() for n in nodes)


def store_job_dir(cfg: SiteConfig, job_dir: Path, wait_until: float | None = None) -> dict[str, str]:
    """Reduce and store the logs of one job directory with its facts, then remove them (after the commit).
    Holds the directory's lock (a second caller finds it taken and leaves it). wait_until (monotonic): wait
    until then for the other nodes' epilogs to mark theirs. Returns {"what", "detail"}; raises on failure
    (store errors, unreadable logs), leaving the directory as it was."""
    from iolens.profile.run import RUN_SUFFIXES
    from iolens.store import profiles, sched_jobs
    from iolens.store.store import Store

    lock_fd = os.open(job_dir / LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return {"what": "busy", "detail": "another worker is storing it"}
        job = read_facts(job_dir)
        while (
            wait_until is not None and time.monotonic() < wait_until and not _other_nodes_done(job_dir, job)
        ):
            time.sleep(0.05)
        # Root reads what the job's user wrote: only regular files of the directory's owner (a symlink to
        # another user's log, or a FIFO that would block the read, is left alone).
        owner = job_dir.stat().st_uid
        logs = sorted(
            p
            for p in job_dir.iterdir()
            if p.suffix in RUN_SUFFIXES and stat.S_ISREG((st := p.lstat()).st_mode) and st.st_uid == owner
        )
        records = profiles.iolens_jobs(logs) if logs else []
        stored = []
        with Store.open(cfg.db, create=True) as store:
            for rec in records:
                s = store.put_profile(rec, cfg.system or None)
                stored.append(s)
            if job is not None:
                sched_jobs.put_jobs(store.db, [job])
                for s in stored:
                    sched_jobs.link_profile(store.db, s.id, job.cluster, job.job_id)
        # Committed: the raw logs may go (only those read; a file that appeared since stays).
        for p in logs:
            p.unlink(missing_ok=True)
        for p in job_dir.iterdir():
            if p.name.startswith(ENDED) or p.name in (FACTS,):
                p.unlink(missing_ok=True)
        (job_dir / LOCK).unlink(missing_ok=True)
        try:
            job_dir.rmdir()
        except OSError:
            pass
    finally:
        os.close(lock_fd)
    refs = ", ".join(f"profile:{s.id}" + ("" if s.new else " (already stored)") for s in stored)
    return {"what": "stored", "detail": f"{refs or 'no profile (no logs)'}; {len(logs)} log(s) removed"}
