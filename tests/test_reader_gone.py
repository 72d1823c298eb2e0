"""Standard output whose reader went away (`iolens ... | head`): no traceback, the command still completes."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path


def _run_into_closed_pipe(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the first byte
    try:
        return subprocess.run(cmd, stdout=w, stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(w)


def test_help_into_a_closed_pipe_ends_quietly(iolens_bin: list[str]) -> None:
    p = _run_into_closed_pipe([*iolens_bin, "ior", "--help"])
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr, p.stderr


def test_a_run_into_a_closed_pipe_still_cleans_up_and_stores(iolens_bin: list[str], tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    data = tmp_path / "data"
    data.mkdir()
    cmd = [*iolens_bin, "ior", "--db", str(db), "-w", "-r", "-t", "4k", "-b", "64k", "-o", str(data / "f")]
    p = _run_into_closed_pipe(cmd)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    assert list(data.iterdir()) == []  # its file removed, as after any run without -k
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
