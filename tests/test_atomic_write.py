"""Whole-file writes of results (iolens.atomic): a regular file is replaced by rename, anything else is
written in place and keeps its kind (a rename onto /dev/null, as root, would turn the machine's /dev/null
into a plain file)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from iolens import atomic


def test_regular_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old and longer\n")
    atomic.write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_fifo_stays_a_fifo_and_gets_the_text(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    atomic.write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert got == ["through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_symlink_is_written_through_and_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("x")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    atomic.write_text(link, "via the link\n")
    assert link.is_symlink() and real.read_text() == "via the link\n"


def test_character_device_node_is_kept(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("mknod of a character device needs root")
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    atomic.write_text(null, "gone\n")
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null"]
