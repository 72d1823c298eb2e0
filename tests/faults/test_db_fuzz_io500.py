"""Fuzzing the import of official IO500 result directories (Hypothesis): result.txt, result_summary.txt and
the phase outputs the app keeps (IOR's and mdtest's text), truncated, with bytes flipped, lines dropped or
repeated, or replaced by random bytes. Each import is a clean refusal (a one-line message naming the
file, nothing stored) or an import whose stored run agrees with the files; never an exception, never a
hang. Cases found are kept under tests/data/fuzz/io500_dir/ (a directory per case holding the damaged
files, the rest taken from tests/data/io500) and replayed."""

from __future__ import annotations

import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolens.io500.results_files import parse_result
from iolens.store import Store, queries
from iolens.store.importer import Outcome, import_paths

from ..conftest import REPO
from ..db_helpers import IO500_REFERENCE

CORPUS = REPO / "tests" / "data" / "fuzz" / "io500_dir"
FILES = ("result.txt", "result_summary.txt", "ior-easy-write.txt", "mdtest-easy-write.txt")
HANG_S = 20


class Hang(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise Hang(f"the import did not finish within {HANG_S} s")


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    d = tempfile.mkdtemp(prefix="iolens-fuzz-io500-")
    s = Store.open(str(Path(d) / "fuzz.db"))
    try:
        yield s
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def _import(store: Store, directory: Path) -> list[Outcome]:
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_S)
    try:
        return import_paths(store, [str(directory)])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _check(store: Store, directory: Path) -> None:
    """The import of a (damaged) result directory: refused cleanly, or stored as the files say."""
    outcomes = _import(store, directory)
    assert len(outcomes) == 1
    o = outcomes[0]
    if not o.ok:
        assert o.error is not None and "\n" not in o.error.strip(), o.error
        assert o.error.startswith(str(directory)), o.error
        assert "Traceback" not in o.error
        return
    assert o.stored is not None and o.stored.kind == "run"
    run = queries.get_run(store.db, o.stored.id)
    result = parse_result((directory / "result.txt").read_text(encoding="utf-8"))
    stated = result.phase_scores()
    for p in run["phases"]:
        if p["kind"] == "phase" and p["value"] is not None:
            assert p["value"] == pytest.approx(stated[p["name"]]), p["name"]


def _mutate(data: bytes, how: str, draw: st.DrawFn) -> bytes:
    if not data:
        return data
    if how == "truncate":
        return data[: draw(st.integers(0, len(data) - 1))]
    if how == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, len(out) - 1))
            out[i] ^= draw(st.integers(1, 255))
        return bytes(out)
    if how == "digit":
        # A digit changed for another: the numbers the cross-checks compare.
        digits = [i for i, b in enumerate(data) if 48 <= b <= 57]
        out = bytearray(data)
        i = draw(st.sampled_from(digits))
        out[i] = 48 + (out[i] - 48 + draw(st.integers(1, 9))) % 10
        return bytes(out)
    if how == "lines":
        lines = data.split(b"\n")
        i = draw(st.integers(0, len(lines) - 1))
        if draw(st.booleans()):
            del lines[i]
        else:
            lines.insert(i, lines[i])
        return b"\n".join(lines)
    # random: a stretch replaced by random bytes
    start = draw(st.integers(0, len(data) - 1))
    junk = draw(st.binary(min_size=1, max_size=64))
    return data[:start] + junk + data[start + len(junk) :]


@st.composite
def damaged_files(draw: st.DrawFn) -> dict[str, bytes]:
    names = draw(st.lists(st.sampled_from(FILES), min_size=1, max_size=2, unique=True))
    out = {}
    for name in names:
        how = draw(st.sampled_from(["truncate", "flip", "digit", "lines", "random"]))
        out[name] = _mutate((IO500_REFERENCE / name).read_bytes(), how, draw)
    return out


def _directory(base: Path, files: dict[str, bytes]) -> Path:
    d = Path(tempfile.mkdtemp(prefix="run-", dir=base))
    for f in IO500_REFERENCE.iterdir():
        if f.is_file():
            shutil.copy(f, d / f.name)
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=damaged_files())
def test_damaged_io500_result_directory_is_refused_cleanly_or_imported_as_it_says(
    store: Store, tmp_path: Path, files: dict[str, bytes]
) -> None:
    d = _directory(tmp_path, files)
    try:
        _check(store, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def _corpus() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.is_dir())


def test_io500_fuzz_corpus_is_there() -> None:
    assert len(_corpus()) >= 5, f"{CORPUS}: the kept cases are missing"


@pytest.mark.parametrize("case", _corpus(), ids=lambda p: p.name)
def test_io500_fuzz_corpus_case_gives_what_it_expects(store: Store, tmp_path: Path, case: Path) -> None:
    """Each kept case: imported (`ok`) or refused with the message it names (`refused: TEXT`)."""
    lines = (case / "expect").read_text().splitlines()
    files = {f.name: f.read_bytes() for f in case.iterdir() if f.name in FILES}
    assert files, f"{case}: holds none of {FILES}"
    d = _directory(tmp_path, files)
    for line in lines[1:]:
        if line.startswith("remove: "):
            (d / line.removeprefix("remove: ")).unlink()
    _check(store, d)
    outcome = _import(store, d)[0]
    if lines[0] == "ok":
        assert outcome.ok, outcome.error
    else:
        assert lines[0].startswith("refused: ")
        assert not outcome.ok and lines[0].removeprefix("refused: ") in (outcome.error or ""), outcome.error
