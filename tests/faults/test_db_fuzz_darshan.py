"""Fuzzing the import of Darshan logs (Hypothesis): real logs (the example logs the darshan package ships,
which the import tests use too) truncated, with bytes flipped, or with a stretch replaced by random bytes.
Each import is a clean refusal (one line naming the log, nothing stored) or a profile whose figures are
sound; never an exception, never a hang. The logs are read by iolens's own reader
(iolens.profile.darshan_log); the darshan library only provides the seeds. Cases found are kept under
tests/data/fuzz/darshan/ and replayed (the first four crashed the darshan library, which iolens used to
read logs with)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolens.store import Store, queries
from iolens.store.importer import import_paths

from ..conftest import REPO

CORPUS = REPO / "tests" / "data" / "fuzz" / "darshan"
# Small real logs.
SEEDS = (
    "example.darshan",
    "ior_hdf5_example.darshan",
    "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan",
)


def _example(name: str) -> Path:
    darshan = pytest.importorskip("darshan")
    return Path(darshan.__file__).parent / "examples" / "example_logs" / name


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    pytest.importorskip("darshan")
    d = tempfile.mkdtemp(prefix="iolens-fuzz-darshan-")
    s = Store.open(str(Path(d) / "fuzz.db"))
    try:
        yield s
    finally:
        s.close()
        shutil.rmtree(d, ignore_errors=True)


def _check(store: Store, log: Path) -> None:
    outcomes = import_paths(store, [str(log)])
    assert len(outcomes) == 1
    o = outcomes[0]
    if not o.ok:
        assert o.error is not None and "\n" not in o.error.strip(), o.error
        assert o.error.startswith(str(log)) and "Traceback" not in o.error, o.error
        return
    assert o.stored is not None and o.stored.kind == "profile"
    p = queries.get_profile(store.db, o.stored.id)
    for k in ("files", "reads", "writes", "bytes_read", "bytes_written", "opens"):
        assert p[k] is None or p[k] >= 0, (k, p[k])
    files = queries.profile_files(store.db, o.stored.id)
    # Every record's file is a row; the profile's `files` counts the regular ones (not <STDOUT>, ...).
    assert len(files) >= p["files"]


@st.composite
def damaged_logs(draw: st.DrawFn) -> bytes:
    data = _example(draw(st.sampled_from(SEEDS))).read_bytes()
    how = draw(st.sampled_from(["truncate", "flip", "random"]))
    if how == "truncate":
        return data[: draw(st.integers(0, len(data) - 1))]
    if how == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 6))):
            i = draw(st.integers(0, len(out) - 1))
            out[i] ^= draw(st.integers(1, 255))
        return bytes(out)
    start = draw(st.integers(0, len(data) - 1))
    junk = draw(st.binary(min_size=1, max_size=256))
    return data[:start] + junk + data[start + len(junk) :]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=damaged_logs())
def test_damaged_darshan_log_is_refused_cleanly_or_imported_soundly(
    store: Store, tmp_path: Path, data: bytes
) -> None:
    log = Path(tempfile.mkdtemp(dir=tmp_path)) / "fuzz.darshan"
    log.write_bytes(data)
    _check(store, log)


def _corpus() -> list[Path]:
    return sorted(CORPUS.glob("*.darshan"))


def test_darshan_fuzz_corpus_is_there() -> None:
    assert len(_corpus()) >= 4, f"{CORPUS}: the kept cases are missing"


@pytest.mark.parametrize("case", _corpus(), ids=lambda p: p.name)
def test_darshan_fuzz_corpus_case_gives_what_it_expects(store: Store, tmp_path: Path, case: Path) -> None:
    """Each kept log: imported (`ok` in NAME.expect) or refused with the message it names."""
    expect = case.with_suffix(".expect").read_text().strip()
    log = tmp_path / case.name
    shutil.copy(case, log)
    _check(store, log)
    outcome = import_paths(store, [str(log)])[0]
    if expect == "ok":
        assert outcome.ok, outcome.error
    else:
        assert not outcome.ok and expect.removeprefix("refused: ") in (outcome.error or ""), outcome.error
