"""Hypothesis fuzzing of the profile log reader (iolens.profile.reader) and of `iolens profile report` behind
it: truncated logs, flipped bytes, zeroed ranges, random bytes, damaged images compressed again, of logs
written from docs/profile-log.md and of a log the real runtime wrote. Each must give a clean refusal
(ProfileLogError: one line naming the file; the report's exit status 1) or a result, never another
exception or a hang.

Inputs that once failed are kept in tests/data/fuzz/profile_log/ and replayed first."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from iolens.profile.reader import ProfileLogError, read_log
from iolens.profile.report import report_command

from ..conftest import REPO, ProfileBuild
from ..profile_logs import (
    SPLIT,
    FileSpec,
    LogSpec,
    MountSpec,
    TraceSpec,
    build_image,
    compress,
)

CORPUS = REPO / "tests" / "data" / "fuzz" / "profile_log"
# A case that takes longer than this is a hang (the largest real log here reads in well under a second).
HANG_S = 20
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


class Hang(Exception):
    pass


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def on_alarm(signum: int, frame: object) -> None:
        raise Hang(f"more than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# Where an input that fails is written (Hypothesis would print megabytes of it): copy it to CORPUS.
FOUND = Path(tempfile.gettempdir()) / "iolens-fuzz-found"


def check(data: bytes, suffix: str) -> None:
    try:
        _check(data, suffix)
    except BaseException:
        FOUND.mkdir(exist_ok=True)
        kept = FOUND / f"{hashlib.sha1(data).hexdigest()[:16]}{suffix}"
        kept.write_bytes(data)
        raise AssertionError(f"failing input kept in {kept}") from None


def _check(data: bytes, suffix: str) -> None:
    """The reader and the report on data as a log file: a result or a one-line refusal naming the file."""
    with tempfile.TemporaryDirectory(prefix="iolens-fuzz-") as tmp:
        path = Path(tmp) / f"job.host.1.0{suffix}"
        path.write_bytes(data)
        with time_limit(HANG_S):
            try:
                log = read_log(path)
            except ProfileLogError as exc:
                msg = str(exc)
                assert msg.startswith(str(path)) and "\n" not in msg, msg
            else:
                # what a caller may ask of a log that reads
                len(log.files)
                for _, counters in list(log.files.items())[:50]:
                    assert all(isinstance(v, int) for v in counters.values())
                log.proc  # noqa: B018
                log.trace  # noqa: B018
                assert all(isinstance(m, str) for m in log.messages)
            for as_json in (True, False):
                out = Console(file=io.StringIO(), width=120)
                errors: list[tuple[str, int]] = []

                def err(message: str, status: int, errors: list[tuple[str, int]] = errors) -> int:
                    errors.append((message, status))
                    return status

                status = report_command(path, as_json, out, err)
                if status == 0:
                    assert not errors
                    if as_json:
                        json.loads(out.file.getvalue())  # type: ignore[attr-defined]
                else:
                    assert status == 1 and len(errors) == 1 and "\n" not in errors[0][0], errors


def synthetic_spec() -> LogSpec:
    """A small log of every record kind (4 KiB chunks, so damage lands in every part)."""
    return LogSpec(
        files=[FileSpec(1, "/lus/a", 1), FileSpec(2, "/lus/b", 1), FileSpec(3, "/dev/pts/3", 2, 2)],
        mounts=[MountSpec(1, "/lus", "lustre"), MountSpec(2, "/dev/pts", "devpts")],
        file_recs=[
            (0, 1, {"POSIX_OPENS": 1, "POSIX_WRITES": 3, "POSIX_BYTES_WRITTEN": 3 << 20}),
            (1, 1, {"POSIX_READS": 2, "POSIX_BYTES_READ": 1 << 20, "POSIX_F_READ_START_TIMESTAMP": 5}),
            (0, 2, {"POSIX_OPENS": 2, "POSIX_STATS": 4}),
        ],
        proc_recs=[(0, {"OPENS": 3, "WRITES": 3}), (1, {"READS": 2})],
        trace=[TraceSpec(10, 5, "open", 1), TraceSpec(20, 7, "write", 1, 0, 4096, 0, 4096)],
        paths=[(0x80000001, "/lus/dir")],
        flags=1 | 8,
        chunk_size=4096,
        **SPLIT,
    )


SYNTHETIC = build_image(synthetic_spec())


@pytest.fixture(scope="module")
def runtime_image(profile_build: ProfileBuild) -> bytes:
    """The raw image of a log the real runtime wrote (a traced process that forks, writes and reads)."""
    with tempfile.TemporaryDirectory(prefix="iolens-fuzz-") as tmp:
        logs, scratch = Path(tmp) / "logs", Path(tmp) / "scratch"
        logs.mkdir()
        scratch.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_")}
        env.update(LD_PRELOAD=str(profile_build.lib), IOLENS_PROFILE_DIR=str(logs), IOLENS_TRACE="1")
        subprocess.run(
            [str(profile_build.program("profile_calls")), str(scratch), "read_write"], env=env, check=True,
            capture_output=True, timeout=60,
        )  # fmt: skip
        (log,) = [p for p in logs.iterdir() if p.suffix == ".iolpz"]
        data = log.read_bytes()
    return zlib.decompress(data[16:])


# --- the damage -------------------------------------------------------------------------------------------


# Damage as a recipe (Hypothesis prints the recipe of a failing case, not megabytes of log):
#   ("cut", at) keeps the first `at` bytes (a fraction of the length, so it fits any image),
#   ("flip", at, xor), ("zero", at, n), ("set", offset, u32) a header or chunk-header field to an extreme,
# then the form: "raw", "compressed" (the damaged image compressed again) or "compressed-damaged" with
# ("flip", at, xor) and ("cut", at) on the compressed bytes.
FIELDS = [16, 20, 24, 64, 72, 88, 92, 96, 104, 108, 112, 4096 + 4, 4096 + 12, 4096 + 16]
EXTREMES = [0, 1, 0xFFFFFFFF, 0x7FFFFFFF, 4096, 1 << 20]
fraction = st.floats(0, 1, allow_nan=False)
damage_op = st.one_of(
    st.tuples(st.just("cut"), fraction),
    st.tuples(st.just("flip"), fraction, st.integers(1, 255)),
    st.tuples(st.just("zero"), fraction, st.integers(1, 8192)),
    st.tuples(st.just("set"), st.sampled_from(FIELDS), st.sampled_from(EXTREMES)),
)
packed_op = st.one_of(
    st.tuples(st.just("flip"), fraction, st.integers(1, 255)), st.tuples(st.just("cut"), fraction)
)
recipes = st.tuples(
    st.lists(damage_op, min_size=1, max_size=4),
    st.sampled_from(["raw", "compressed", "compressed-damaged"]),
    st.lists(packed_op, min_size=1, max_size=3),
)


def apply(data: bytearray, ops: list[tuple]) -> bytearray:
    for op in ops:
        at = min(int(op[1] * len(data)), max(len(data) - 1, 0)) if isinstance(op[1], float) else op[1]
        if op[0] == "cut":
            del data[at:]
        elif op[0] == "flip" and data:
            data[at] ^= op[2]
        elif op[0] == "zero" and data:
            data[at : at + op[2]] = bytes(len(data[at : at + op[2]]))
        elif op[0] == "set" and len(data) >= at + 4:
            data[at : at + 4] = op[2].to_bytes(4, "little")
    return data


def damaged(image: bytes, recipe: tuple) -> tuple[bytes, str]:
    ops, form, packed_ops = recipe
    data = bytes(apply(bytearray(image), ops))
    if form == "raw":
        return data, ".iolp"
    packed = bytearray(compress(data))
    if form == "compressed-damaged":
        packed = apply(packed, packed_ops)
    return bytes(packed), ".iolpz"


def corpus() -> list[Path]:
    return sorted(p for p in CORPUS.iterdir() if p.suffix in (".iolp", ".iolpz")) if CORPUS.is_dir() else []


@pytest.mark.parametrize("case", corpus(), ids=lambda p: p.name)
def test_kept_cases(case: Path) -> None:
    check(case.read_bytes(), case.suffix)


def test_the_corpus_is_there() -> None:
    assert len(corpus()) >= 1, f"{CORPUS}: the kept cases are missing"


@FUZZ
@given(recipes)
def test_damaged_logs_written_from_the_document(recipe: tuple) -> None:
    check(*damaged(SYNTHETIC, recipe))


@FUZZ
@given(recipe=recipes)
def test_damaged_logs_of_the_real_runtime(runtime_image: bytes, recipe: tuple) -> None:
    check(*damaged(runtime_image, recipe))


@FUZZ
@given(
    st.sampled_from([b"", b"IOLENSP1", b"IOLPZ001"]),
    st.binary(max_size=2000),
    st.sampled_from([".iolp", ".iolpz"]),
)
def test_random_bytes(prefix: bytes, body: bytes, suffix: str) -> None:
    check(prefix + body, suffix)


@FUZZ
@given(st.binary(max_size=5000), st.integers(0, 1 << 40))
def test_random_compressed_images(body: bytes, declared: int) -> None:
    """A valid zlib stream of anything, declaring any length."""
    check(compress(SYNTHETIC[:4096] + body, declared_length=declared), ".iolpz")
