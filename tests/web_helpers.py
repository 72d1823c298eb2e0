"""The web portal's tests: a database with real stored content, a real `iolens web` server, tokens, Chromium.

seed() fills a database the way a center's would be filled: ior run documents imported on two systems (one
with a hostile name), profiles imported from real log files owned by two different users (the portal's
owner of a job is the owner of its logs), and monitoring samples of two hosts. It returns what it made.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from iolens.monitor import stream
from iolens.monitor.lustre.collector import LustreCollector
from iolens.monitor.sampler import Sampler
from iolens.store.importer import import_paths
from iolens.store.records import Sample
from iolens.store.store import Store

from .db_helpers import iolens, iolens_env, ior_document
from .monitor_helpers import free_port, stop_process
from .profile_logs import FileSpec, LogSpec, MountSpec, write_log

MiB = 1 << 20
S = 10**9
HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">\x07'
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")

# Two users of this machine own the two users' logs (root can give files to any uid; names from pwd).
USER_A = pwd.getpwuid(1).pw_name  # daemon on Debian
USER_B = pwd.getpwuid(2).pw_name  # bin


@dataclass
class Seeded:
    url: str
    systems: list[str] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    jobs: dict[str, list[int]] = field(default_factory=dict)  # user -> profile ids
    hosts: list[str] = field(default_factory=list)
    t0: float = 0.0  # the samples' first time
    t1: float = 0.0


def _job_log(directory: Path, pid: int, exe: str, paths: list[str], start_s: float, big: bool) -> None:
    files = [FileSpec(i, p, 1) for i, p in enumerate(paths, 1)]
    recs = []
    for i, _ in enumerate(paths, 1):
        size = 8 * MiB if big else 47008
        counters = {
            "POSIX_OPENS": 2, "POSIX_WRITES": 64, "POSIX_READS": 32, "POSIX_BYTES_WRITTEN": 64 * size,
            "POSIX_BYTES_READ": 32 * size, "POSIX_F_WRITE_TIME": 400_000_000,
            "POSIX_F_READ_TIME": 100_000_000, "POSIX_F_META_TIME": 20_000_000, "POSIX_STATS": 3,
        }  # fmt: skip
        recs.append((0, i, counters))
    spec = LogSpec(
        pid=pid, exe=exe, cmdline=[exe.rsplit("/", 1)[-1], "--out", paths[0]], files=files,
        mounts=[MountSpec(1, "/lus", "lustre")], file_recs=recs, proc_recs=[(0, {})],
        start_wall_ns=int(start_s * S), start_mono_ns=5 * S, end_ns=5 * S + 20 * S, job_id=f"job-{pid}",
    )  # fmt: skip
    write_log(directory, spec)


def _ids(outcomes: list[Any]) -> list[int]:
    for o in outcomes:
        assert o.ok and o.stored is not None, o.error
    return [o.stored.id for o in outcomes]


def seed(url: str, root: Path, now: float | None = None) -> Seeded:
    """Fill the database at `url` (created) and say what is in it."""
    now = time.time() if now is None else now
    out = Seeded(url)
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    systems = ["lustre-prod", HOSTILE]
    with Store.open(url) as store:
        for si, system in enumerate(systems):
            out.systems.append(system)
            for k in range(4):
                started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - (5 - k) * 86400))
                bw = (2.0 - (0.9 if k == 3 else 0.0)) * 1024**3  # the last run regresses
                doc = ior_document(bw, bw * 1.2, started=started, hostname=f"node0{si + 1}")
                path = docs / f"ior-{si}-{k}.json"
                path.write_text(json.dumps(doc))
                outcome = import_paths(store, [str(path)], system)
                out.runs += _ids(outcome)
        for user, exe, big in ((USER_A, "/usr/bin/climate", True), (USER_B, "/opt/" + HOSTILE, False)):
            ids = []
            for n in range(2):
                d = root / f"logs-{user}-{n}"
                d.mkdir()
                paths = [f"/lus/{user}/run{n}/out.{i}" for i in range(3)]
                if not big:
                    paths.append("/lus/" + HOSTILE)
                _job_log(d, 4000 + len(ids) + (0 if big else 100), exe, paths, now - 3600 * (2 - n), big)
                uid = pwd.getpwnam(user).pw_uid
                for f in d.iterdir():
                    os.chown(f, uid, uid)
                outcome = import_paths(store, [str(d)], systems[0])
                ids += _ids(outcome)
            out.jobs[user] = ids
        out.hosts = ["node01", "node02"]
        out.t0, out.t1 = now - 3 * 3600, now
        samples = []
        t = out.t0
        while t <= out.t1:
            for h, host in enumerate(out.hosts):
                phase = (t - out.t0) / 600.0
                rate = 1e6 * (1 + h + phase % 3)
                samples.append(Sample(t, host, "diskstats", "vda", "read_bytes_per_s", rate))
                samples.append(Sample(t, host, "diskstats", "vda", "read_bytes", 1e9 + t))
                samples.append(Sample(t, host, "cpu", "", "busy_per_s", 0.2 + 0.1 * h))
            t += 10.0
        store.put_samples(samples, "seed-samples")
    return out


LUSTRE_DATA = Path(__file__).parent / "data" / "lustre"
# The job_stats files of one OST and one MDT, as a Lustre server holds them (tests/data/lustre).
JOB_STATS_FILES = {
    ("obdfilter", "lfs-OST0000"): "ost-job_stats-2.12.txt",
    ("mdt", "lfs-MDT0000"): "mdt-job_stats-2.12.txt",
}


def _scaled_job_stats(text: str, factors: dict[str, int]) -> str:
    """A job_stats text with each job's `samples` and `sum` counts multiplied by its factor (1 when not
    given): the same jobs later, or (a smaller factor) after Lustre dropped a job and counted it anew."""
    out, factor = [], 1
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("- job_id:"):
            factor = factors.get(line.split(":", 1)[1].strip(), 1)
        elif factor != 1:
            line = re.sub(r"\b(samples|sum):(\s*)(\d+)", lambda m, k=factor: f"{m[1]}:{m[2]}{int(m[3]) * k}",
                          line)  # fmt: skip
        out.append(line)
    return "".join(out)


def job_stats_samples(
    url: str, root: Path, host: str, snapshots: list[tuple[float, dict[str, int]]],
    rename: dict[str, str] | None = None,
) -> None:  # fmt: skip
    """Store what `iolens monitor` records of a Lustre server's job_stats at the given times: at each
    (time, {job id: factor}) the job_stats files of tests/data/lustre, each job's counts multiplied by its
    factor, are put where Lustre keeps them (under a root the collector searches as lctl does), read by the
    monitor's Lustre collector and sampler into the monitor's stream records (timed as asked), and the stream
    file is stored with `iolens db import`'s importer. `rename`: job ids given other ids (before the
    factors apply)."""
    tree = root / "lustre"
    sampler = Sampler([LustreCollector(mode="files", roots=(str(tree),), rediscover_s=0.0)])
    lines = [stream.dumps(stream.header(snapshots[0][0], "1s", {}, host=host))]
    for t, factors in snapshots:
        for (kind, target), name in JOB_STATS_FILES.items():
            (tree / kind / target).mkdir(parents=True, exist_ok=True)
            text = (LUSTRE_DATA / name).read_text()
            for old, new in (rename or {}).items():
                text = re.sub(rf"(- job_id:\s+){re.escape(old)}$", rf"\g<1>{new}", text, flags=re.M)
            text = _scaled_job_stats(text, factors)
            (tree / kind / target / "job_stats").write_text(text)
        record, _ = sampler.sample()
        assert "lustre" in record["data"], record
        record["time"] = t
        lines.append(stream.dumps(record))
    path = root / f"{host}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with Store.open(url) as store:
        _ids(import_paths(store, [str(path)]))


def token(url: str, user: str, staff: bool = False) -> str:
    r = iolens("web", "token", "add", user, *(["--staff"] if staff else []), "--db", url, env=iolens_env())
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


@dataclass
class Server:
    base: str
    proc: subprocess.Popen[str]
    log: Path


@contextlib.contextmanager
def portal(url: str, *args: str, log_dir: Path, timeout: float = 30) -> Iterator[Server]:
    """A real `iolens web` on a free port of 127.0.0.1, stopped (SIGTERM) afterwards."""
    port = free_port()
    log = log_dir / f"portal-{port}.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "iolens", "web", "--db", url, "--port", str(port), *args],
            stdout=fh, stderr=subprocess.STDOUT, text=True, env=iolens_env(), start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the portal did not start:\n{log.read_text()}")
            time.sleep(0.1)
        yield Server(base, proc, log)
    finally:
        if proc.poll() is None:
            stop_process(proc)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def fetch(
    url: str, token: str | None = None, headers: dict[str, str] | None = None, data: bytes | None = None
) -> tuple[int, dict[str, str], str]:
    """GET (or POST with data) without following redirects: status, headers, body."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a: Any, **k: Any) -> None:
            return None

    h = dict(headers or {})
    if token:
        h["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, headers=h, method="POST" if data is not None else "GET")
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, dict(resp.headers), resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode("utf-8", "replace")


def chromium() -> str:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI"):
        pytest.fail("no Chromium installed (Debian: apt-get install chromium; .ci/run installs it)")
    pytest.skip("no Chromium installed (Debian: apt-get install chromium)")


def close_contexts(browser: Any) -> None:
    """Close a test's pages and contexts, leaving the session's browser (conftest.browser) open."""
    for context in list(browser.contexts):
        context.close()
