"""Fixtures and builders for the statistics-database tests: a private PostgreSQL server for the session, a
fresh database per test on each backend (`db_url`, parametrized sqlite / postgresql), result documents with
chosen figures, and running `iolens` as a separate process.

The PostgreSQL server is Debian's (initdb/pg_ctl from PATH or /usr/lib/postgresql/*/bin), started once per
session on a Unix socket in a temporary directory with trust authentication, and removed at the end.
PostgreSQL refuses to run as root: as root, the server runs as the unprivileged `nobody` user (runuser).
The PostgreSQL cases are skipped only when the server binaries are missing.
"""

from __future__ import annotations

import copy
import glob
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO, sample_document

IO500_REFERENCE = REPO / "tests" / "data" / "io500"


def pg_bin(name: str) -> str | None:
    """A PostgreSQL server program: on PATH, else the newest under /usr/lib/postgresql."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    return versions[-1] if versions else None


@dataclass
class PgServer:
    socket_dir: str
    user: str = "iolens"
    _counter: Iterator[int] = itertools.count(1)

    def url(self, dbname: str) -> str:
        return f"postgresql://{self.user}@/{dbname}?host={self.socket_dir}"

    def new_database(self) -> str:
        import psycopg

        name = f"iolens_test_{os.getpid()}_{next(self._counter)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        return self.url(name)


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd
    runuser = shutil.which("runuser")
    if runuser is None:
        pytest.skip("running as root without runuser: cannot start PostgreSQL as another user")
    return [runuser, "-u", "nobody", "--", *cmd]


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    initdb, pg_ctl = pg_bin("initdb"), pg_bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not installed: apt-get install postgresql")
    pytest.importorskip("psycopg")
    base = tempfile.mkdtemp(prefix="iolens-pg-")
    if os.geteuid() == 0:
        os.chown(base, 65534, 65534)  # nobody
    data = os.path.join(base, "data")
    log = os.path.join(base, "server.log")
    try:
        subprocess.run(
            _as_server_user(
                [
                    initdb,
                    "-D",
                    data,
                    "-A",
                    "trust",
                    "-U",
                    "iolens",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "--no-instructions",
                ]
            ),
            check=True,
            capture_output=True,
        )
        opts = (
            f"-c listen_addresses='' -c unix_socket_directories={base} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50"
        )
        subprocess.run(
            _as_server_user([pg_ctl, "-D", data, "-o", opts, "-l", log, "-w", "-t", "60", "start"]),
            check=True,
            capture_output=True,
        )
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(base, ignore_errors=True)
        detail = (exc.stderr or b"").decode(errors="replace").strip()
        pytest.fail(f"cannot start PostgreSQL: {detail}")
    try:
        yield PgServer(base)
    finally:
        subprocess.run(
            _as_server_user([pg_ctl, "-D", data, "-m", "immediate", "-w", "stop"]),
            capture_output=True,
            check=False,
        )
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty database on each backend: a SQLite file path, or a postgresql:// URL."""
    if request.param == "sqlite":
        return str(tmp_path / "iolens.db")
    server: PgServer = request.getfixturevalue("pg_server")
    return server.new_database()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return str(tmp_path / "iolens.db")


# --- documents ----------------------------------------------------------------------------------------


# What a migration's statement makes: (kind, name, the table of a trigger).
_MADE = re.compile(r"\s*CREATE (TABLE|INDEX|TRIGGER) (\w+)(?:.*? ON (\w+))?", re.S)


def as_older_version(db: Any, version: int) -> None:
    """Make the database look as an iolens of schema `version` left it: what every later migration made
    (tables, indexes, triggers) dropped, the version put back. Opening it then migrates it again."""
    from iolens.store.schema import MIGRATIONS

    for steps in reversed(MIGRATIONS[version:]):
        for step in steps:
            for statement in [step] if isinstance(step, str) else step(db.dialect):
                made = _MADE.match(statement)
                if made:
                    kind, name, table = made.groups()
                    where = f" ON {table}" if kind == "TRIGGER" and db.dialect == "postgresql" else ""
                    db.execute(f"DROP {kind} IF EXISTS {name}{where}")
    db.execute("UPDATE iolens_meta SET value = ? WHERE key = 'schema_version'", (str(version),))


def ior_document(
    write_bw: float,
    read_bw: float | None = None,
    started: str = "2026-05-01T10:00:00Z",
    transfer: int = 1048576,
    hostname: str = "node01",
    p99_ns: int = 1_900_000,
) -> dict[str, Any]:
    """The conftest sample document (an ior write+read run) with the given bandwidths, start and transfer
    size (the transfer size is in the config: another size is another configuration)."""
    doc = copy.deepcopy(sample_document())
    doc["started_at"] = started
    doc["ended_at"] = started.replace(":00Z", ":30Z")
    doc["host"]["hostname"] = hostname
    doc["config"]["transfer-size"] = transfer
    for phase, bw in zip(
        doc["phases"], (write_bw, read_bw if read_bw is not None else write_bw), strict=True
    ):
        phase["bw_bytes_per_s"] = bw
        phase["latency_ns"]["p99"] = p99_ns
    for summary, bw in zip(
        doc["summary"], (write_bw, read_bw if read_bw is not None else write_bw), strict=True
    ):
        summary["bw_mean_bytes_per_s"] = bw
    return doc


# --- running iolens -----------------------------------------------------------------------------------


def iolens_env(extra: dict[str, str] | None = None, home: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python"), env.get("PYTHONPATH")]))
    for key in ("IOLENS_DB", "IOLENS_SYSTEM", "IOLENS_CONFIG"):
        env.pop(key, None)
    if home is not None:
        env["HOME"] = str(home)
        env["XDG_DATA_HOME"] = str(home / ".local" / "share")
        env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["COLUMNS"] = "200"
    if extra:
        env.update(extra)
    return env


def iolens(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `python -m iolens ARGS` (this checkout's code) and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "iolens", *args],
        capture_output=True,
        text=True,
        env=env if env is not None else iolens_env(),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


# --- a tiny real IO500 run ----------------------------------------------------------------------------

TINY_IO500 = """\
[global]
datadir = {root}/data
resultdir = {root}/results
timestamp-resultdir = FALSE
[debug]
stonewall-time = 1
[ior-easy]
transferSize = 64k
blockSize = 1m
[ior-hard]
segmentCount = 10
[mdtest-easy]
n = 50
[mdtest-hard]
n = 50
"""


def tiny_io500(root: Path, *args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`iolens io500` on 2 processes with sizes that run in well under a second on a tmpfs (1 MiB per rank
    for ior-easy, 10 segments for ior-hard, 50 mdtest items, a 1 s stonewall: an invalid run, but every phase
    runs for real); its output, and its result directory."""
    cfg = root / "io500.ini"
    cfg.write_text(TINY_IO500.format(root=root))
    r = iolens("io500", str(cfg), "--np", "2", "--no-live", *args, env=env)
    return r, root / "results"
