"""Running the engine's fio workload from tests and reading what it did: its document and fio's iolog."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from .ior_helpers import EngineResult, run_engine


def run_fio(engine: Path, args: list[str], np: int = 1, **kw: Any) -> EngineResult:
    return run_engine(engine, args, np=np, workload="fio", **kw)


def job(res: EngineResult, index: int = 0) -> dict[str, Any]:
    assert res.doc is not None, res.stderr
    assert res.doc["status"] == "ok", res.doc.get("error") or res.stderr
    jobs: list[dict[str, Any]] = res.doc["fio"]["jobs"]
    return jobs[index]


def iolog_ios(path: Path) -> list[tuple[str, str, int, int]]:
    """The I/Os of a fio version 2 iolog: (file, action, offset, length) in issue order."""
    lines = path.read_text().splitlines()
    assert lines[0] == "fio version 2 iolog"
    out = []
    for line in lines[1:]:
        parts = line.rsplit(" ", 3)
        if len(parts) == 4 and parts[1] in ("read", "write"):
            out.append((parts[0], parts[1], int(parts[2]), int(parts[3])))
    return out


def offsets_count(ios: list[tuple[str, str, int, int]]) -> Counter[int]:
    return Counter(off for _, _, off, _ in ios)
