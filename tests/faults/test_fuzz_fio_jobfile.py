"""Hypothesis against fio job files, read by the engine's C parser (native/workload/fio_jobfile.c and the
option table of fio_options.c) through `iolens-bench fio JOBFILE --check`, which reads, validates and checks
the paths of a job, and does no I/O.

Whatever the file holds, the engine must accept it (exit 0) or refuse it with one line,
`iolens-bench: error: FILE:LINE: …`, and exit 2 — never die by a signal, never hang, never another status,
never write a file. The inputs are job files in the layouts docs/fio.md describes, damaged (values of every
kind of option swapped for hostile ones, lines doubled, cut, spliced with garbage, NUL and non-UTF-8 bytes,
lines longer than the parser's buffers, includes of themselves and of devices, `${VAR}` forms), and job files
built from the option table's own names. Each example launches the engine once: the runs are few (100).

Inputs once found failing are kept in tests/data/fuzz/fio-jobfile and replayed by test_kept_job_files."""

from __future__ import annotations

import os
import re
import resource
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..conftest import REPO
from ..monitor_helpers import fuzz_cases

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Every option of a fio job, from the table iolens declares them in (the names after `{0, "`).
OPTION_NAMES = re.findall(r'\{0, "([a-z_]+)"', (REPO / "native" / "workload" / "fio_options.c").read_text())

SEEDS = [
    b"; a comment\n# another\n[global]\nioengine=psync\ndirectory=${FIO_TEST_DIR}\nbs=8k\nsize=1m\n\n"
    b"[writer]\nrw=write\n\n[reader]\nstonewall\nrw=read\n",
    b"[global]\nbs=4k\nsize=1m\nrw=randread\ntime_based\n[a]\nruntime=300ms\n[b]\nruntime=500ms\n"
    b"[c]\nstonewall\nruntime=200ms\n",
    b"[mixed]\nrw=randrw\nrwmixread=70\nbssplit=4k/50:64k/50\nnrfiles=4\nsize=4m\niodepth=8\n"
    b"ioengine=io_uring\nrandom_distribution=zipf:1.2\nnumjobs=2\ngroup_reporting\n",
    b"[v]\nrw=write\nsize=256k\nverify=crc32c\ndo_verify=1\nfsync=4\nend_fsync=1\n"
    b"ioengine=psync\ncache=cold\nramp_time=0\nloops=2\noffset=4k\nfilesize=128k\nblockalign=4k\n",
]
VALUES = [b"", b"0", b"1", b"-1", b"4k", b"1m", b"1g", b"16e", b"1e", b"4k:8k", b"99999999999999999999t",
          b"18446744073709551616", b"9" * 5000, b"1x", b"k", b"-4k", b"0x10", b"1.5", b"nan", b"inf",
          b"4k/50:8k/50", b"4k/", b"/", b":::", b"4k/101", b"4k/50:", b"zipf:1.2", b"zipf:", b"zipf:0",
          b"pareto:x", b"normal:-1", b"normal:1e999", b"1s", b"100ms", b"1x", b"99999999999999999999d",
          b"1-2", b"2-1", b"-", b"1-", b"io_uring", b"libaio", b"bogus", b"read", b"randrw", b"crc32c",
          b"cold", b"hot", b"x" * 300, b"x" * 5000, b"/", b"/dev/null", b"/proc/self/fd/0", b"a:b:c",
          b"${HOME}", b"${", b"${}", b"${IOLENS_FUZZ_UNSET}", b"${" + b"V" * 300 + b"}", b"$", b"\xff\xfe",
          b"\xc3\xa9", b"\x1b[31m", b"\r", b"\t1", b"=", b"==", b"#", b";"]  # fmt: skip
LINES = [b"[global]", b"[j]", b"[", b"]", b"[]", b"[ a ]", b"[a]b", b"[" + b"n" * 300 + b"]", b"[j] # c",
         b"include", b"include ", b"include nonexistent.fio", b"include /dev/null", b"include .",
         b"include job.fio", b"include ${IOLENS_FUZZ_UNSET}", b"name=x", b"=x", b"stonewall", b"thread",
         b"bogus=1", b"\x00", b"a\x00b=1", b"\xff\xfe\xfd", b"x" * 5000, b"bs=" + b"4" * 4100,
         b"  ; indented comment", b"\r", b"rw=write\r"]  # fmt: skip


@st.composite
def option_line(draw: st.DrawFn) -> bytes:
    name = draw(st.sampled_from(OPTION_NAMES)).encode()
    if draw(st.integers(0, 9)) == 0:
        return name  # a flag, or an option without its value
    spaces = draw(st.sampled_from([b"", b" ", b"\t", b"  "]))
    return name + spaces + b"=" + spaces + draw(st.sampled_from(VALUES) | st.binary(max_size=10))


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    lines = draw(st.sampled_from(SEEDS)).split(b"\n")
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["value", "value", "option", "option", "insert", "drop", "double", "cut"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "value" and b"=" in lines[i]:
            key = lines[i].partition(b"=")[0]
            lines[i] = key + b"=" + draw(st.sampled_from(VALUES) | st.binary(max_size=10))
        elif op == "option":
            lines.insert(i, draw(option_line()))
        elif op == "insert":
            lines.insert(i, draw(st.sampled_from(LINES) | st.binary(max_size=20)))
        elif op == "drop" and len(lines) > 1:
            del lines[i]
        elif op == "double":
            lines[i:i] = [lines[i]] * draw(st.sampled_from([1, 2, 70]))
        elif op == "cut":
            lines = lines[: i + 1]
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
    return b"\n".join(lines) + draw(st.sampled_from([b"", b"\n"]))


@st.composite
def built(draw: st.DrawFn) -> bytes:
    out: list[bytes] = []
    for _ in range(draw(st.integers(1, 4))):
        odd = b"[" + draw(st.binary(max_size=6)) + b"]"
        out.append(draw(st.sampled_from([b"[global]", b"[job]", b"[job2]", odd])))
        out.extend(draw(st.lists(option_line(), max_size=6)))
    return b"\n".join(out) + b"\n"


MEMORY_LIMIT = 1 << 30


def _limit_memory() -> None:
    # A parser that reads without bound (an include of /dev/zero) fails here instead of filling the machine.
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def check_job_file(engine: Path, text: bytes, directory: Path) -> str:
    """The engine's --check of this job file: exit 0 silently, or 2 with one clean line (returned)."""
    job = directory / "job.fio"
    job.write_bytes(text)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_FUZZ")}
    env["FIO_TEST_DIR"] = str(directory)
    # AddressSanitizer (IOLENS_BENCH=an ASan build) reserves terabytes of address space: no limit then.
    limit = None if "ASAN_OPTIONS" in os.environ else _limit_memory
    try:
        r = subprocess.run([str(engine), "fio", "job.fio", "--check"], cwd=directory, env=env,
                           capture_output=True, timeout=20, check=False, preexec_fn=limit)  # fmt: skip
    except subprocess.TimeoutExpired:
        pytest.fail(f"iolens-bench fio --check hung on:\n{text[:2000]!r}")
    err = r.stderr.decode("utf-8", "backslashreplace")
    assert r.returncode >= 0, f"killed by signal {-r.returncode}: {err}\n{text[:2000]!r}"
    assert r.returncode in (0, 2), f"exit {r.returncode}: {err}\n{text[:2000]!r}"
    if r.returncode == 2:
        assert err.startswith("iolens-bench: error: ") and err.count("\n") == 1, err
        # One clean line: what the file held is never echoed raw (a carriage return, an escape sequence).
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", err), err
    else:
        assert err == "", err
    assert sorted(p.name for p in directory.iterdir()) == ["job.fio"], "--check wrote a file"
    return err


def test_the_seed_job_files_are_accepted(engine: Path, tmp_path: Path) -> None:
    for i, seed in enumerate(SEEDS):
        d = tmp_path / str(i)
        d.mkdir()
        assert check_job_file(engine, seed, d) == ""  # accepted


@FUZZ
@given(text=damaged() | built())
def test_damaged_job_files_are_accepted_or_refused_in_one_line(
    engine: Path, tmp_path_factory: pytest.TempPathFactory, text: bytes
) -> None:
    check_job_file(engine, text, tmp_path_factory.mktemp("fio"))


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in fuzz_cases("fio-jobfile")])
def test_kept_job_files(engine: Path, iolens_bin: list[str], path: Path, tmp_path: Path) -> None:
    """Each kept job file starts with a comment line `# expect: TEXT`: the refusal must hold TEXT, from the
    engine and from `iolens fio JOBFILE --check` alike."""
    text = path.read_bytes()
    m = re.match(rb"# expect: (.*)\n", text)
    assert m is not None, f"{path}: the first line must be '# expect: TEXT'"
    expected = m.group(1).decode()
    assert expected in check_job_file(engine, text, tmp_path)
    limit = None if "ASAN_OPTIONS" in os.environ else _limit_memory
    r = subprocess.run([*iolens_bin, "fio", "job.fio", "--check"], cwd=tmp_path, capture_output=True,
                       timeout=60, check=False, preexec_fn=limit)  # fmt: skip
    err = r.stderr.decode("utf-8", "backslashreplace")
    assert r.returncode == 2 and err.startswith("iolens: error: ") and err.count("\n") == 1, err
    assert expected in err and "Traceback" not in err
