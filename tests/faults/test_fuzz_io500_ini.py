"""Hypothesis against IO500 config files, through `iolens io500 FILE --dry-run` as a user runs it.

A config is read, checked and planned before anything is written: the dry run must print the plan and exit 0,
or refuse with exactly one line, `iolens: error: FILE:LINE: …` (the file as given and a line that is in it;
`FILE: …` when no one line is to blame), and exit 2 — never a traceback, never a hang, never a file written.
The inputs are the real configs of tests/data/io500 damaged line by line (values of every type swapped for
hostile ones, keys and sections misspelt, garbage and NUL bytes, bytes that are not UTF-8, cut short), and
configs built from the option table (io500/spec.py) with random values.

Most examples run the command in process (cli.main, its output captured); a few run the installed `iolens` as
a process. Inputs once found failing are kept in tests/data/fuzz/io500-ini and replayed by
test_kept_configs."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolens.cli import main
from iolens.io500.spec import PHASES

from ..conftest import REPO
from ..monitor_helpers import fuzz_cases, time_limit

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DATA = REPO / "tests" / "data" / "io500"
SEEDS = [(DATA / n).read_bytes() for n in ("config.ini", "config-quick.ini", "ini-keys-and-defaults.ini")]
OPTIONS = [(p.name, o.name) for p in PHASES for o in p.options]

VALUES = [b"", b"0", b"1", b"-1", b"2", b"2147483647", b"2147483648", b"-2147483649", b"4294967296",
          b"18446744073709551615", b"18446744073709551616", b"9" * 5000, b"1e+e", b"1e999", b"nan", b"inf",
          b"0.5", b"-0.0", b"TRUE", b"false", b"yes", b"1m", b"0m", b"1x", b"-5m", b"47008", b"99999999999t",
          b"1k", b"16e", b"a" * 300, b"/" * 5000, b"x/" * 3000, b"/tmp/" + b"d" * 300 + b"/x", b"\xc3\xa9",
          b"\xff\xfe", b"\r", b" # comment", b";", b"#", b"\t", b"POSIX", b"S3", b"MPIIO",
          b"POSIX --posix.odirect", b"./datafiles", b"/dev/null", b"/proc/self", b"..", b"-", b"--help",
          b"$(touch pwned)", b"a b c", b'"quoted"', b"\x1b[31m", b" " * 3000 + b"x#"]  # fmt: skip
LINES = [b"[global]", b"[GLOBAL]", b"[ior-easy", b"[]", b"[unknown]", b"[[global]]", b"[ debug ]  # c",
         b"key", b"= value", b"bogus = 1", b"\x00", b"\xff\xfe\xfd", b"#" * 100, b"; comment", b"   ",
         b"\t[find]", b"datadir=", b"a" * 5000]  # fmt: skip


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


@st.composite
def option_line(draw: st.DrawFn) -> bytes:
    section, key = draw(st.sampled_from(OPTIONS))
    if draw(st.booleans()):
        key = key.upper()
    value = draw(st.sampled_from(VALUES) | st.binary(max_size=12))
    return b"[" + section.encode() + b"]\n" + key.encode() + b" = " + value


OPS = ["value", "value", "value", "option", "insert", "drop", "key", "cut", "bytes"]


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    lines = _lines(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(OPS))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "value" and b"=" in lines[i]:
            key, _, _ = lines[i].partition(b"=")
            lines[i] = key + b"= " + draw(st.sampled_from(VALUES) | st.binary(max_size=12))
        elif op == "option":
            lines.insert(i, draw(option_line()))
        elif op == "insert":
            lines.insert(i, draw(st.sampled_from(LINES) | st.binary(max_size=20)))
        elif op == "drop":
            del lines[i]
            if not lines:
                lines = [b""]
        elif op == "key" and b"=" in lines[i]:
            key, eq, rest = lines[i].partition(b"=")
            lines[i] = key[:-2] + draw(st.sampled_from([b"x", b"_", b".", b"", b" ", b"\xe9"])) + eq + rest
        elif op == "cut":
            lines = lines[: i + 1]
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif op == "bytes":
            j = draw(st.integers(0, max(len(lines[i]) - 1, 0)))
            lines[i] = lines[i][:j] + draw(st.binary(min_size=1, max_size=3)) + lines[i][j + 1 :]
    return b"\n".join(lines)


built = st.lists(option_line(), max_size=8).map(lambda xs: b"\n".join(xs) + b"\n")


@contextlib.contextmanager
def _in(directory: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def check_refusal(path: str, text: bytes, rc: int, stdout: str, stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert rc in (0, 2), (rc, stderr)
    if rc == 0:
        assert stdout.startswith("iolens io500 --dry-run: "), stdout[:200]
        assert stderr == ""
        return
    assert stderr.startswith("iolens: error: ") and stderr.endswith("\n") and stderr.count("\n") == 1, stderr
    m = re.match(rf"iolens: error: {re.escape(path)}(?::(\d+))?: ", stderr)
    assert m is not None, f"the error does not name the file first: {stderr!r}"
    if m.group(1) is not None:
        assert 1 <= int(m.group(1)) <= text.count(b"\n") + 1, stderr


def dry_run_in_process(text: bytes, directory: Path) -> None:
    """`iolens io500 config.ini --dry-run` in this process, in an empty directory that must stay so."""
    cfg = directory / "config.ini"
    cfg.write_bytes(text)
    out, err = io.StringIO(), io.StringIO()
    with _in(directory), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        with time_limit(10, "iolens io500 --dry-run"):
            rc = main(["io500", "config.ini", "--dry-run"])
    check_refusal("config.ini", text, rc, out.getvalue(), err.getvalue())
    assert sorted(p.name for p in directory.iterdir()) == ["config.ini"], "a dry run wrote something"


def dry_run_process(text: bytes, directory: Path, iolens_bin: list[str]) -> None:
    cfg = directory / "config.ini"
    cfg.write_bytes(text)
    r = subprocess.run([*iolens_bin, "io500", str(cfg), "--dry-run"], capture_output=True, text=True,
                       errors="backslashreplace", cwd=directory, timeout=60, check=False)  # fmt: skip
    check_refusal(str(cfg), text, r.returncode, r.stdout, r.stderr)
    assert sorted(p.name for p in directory.iterdir()) == ["config.ini"], "a dry run wrote something"


def test_the_reference_configs_dry_run(tmp_path: Path) -> None:
    for i, seed in enumerate(SEEDS):
        d = tmp_path / str(i)
        d.mkdir()
        dry_run_in_process(seed, d)


@FUZZ
@given(text=damaged() | built)
def test_damaged_configs_plan_or_refuse_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, text: bytes
) -> None:
    dry_run_in_process(text, tmp_path_factory.mktemp("io500"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=damaged() | built)
def test_damaged_configs_through_the_installed_command(
    tmp_path_factory: pytest.TempPathFactory, iolens_bin: list[str], text: bytes
) -> None:
    dry_run_process(text, tmp_path_factory.mktemp("io500"), iolens_bin)


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in fuzz_cases("io500-ini")])
def test_kept_configs(path: Path, tmp_path: Path, iolens_bin: list[str]) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    dry_run_in_process(path.read_bytes(), tmp_path / "a")
    dry_run_process(path.read_bytes(), tmp_path / "b", iolens_bin)


# --- the pair expression ---------------------------------------------------------------------------------

# The app's pair expression as iolens used it until it took cubic time on a value of spaces with a comment
# glued to it (tests/data/fuzz/io500-ini/value-of-spaces-then-glued-comment.ini); ini.py now reads the value
# in linear time and must read every line as this expression does.
_WS = r"[ \t\n\v\f\r]"
APP_PAIR = re.compile(rf"{_WS}*([0-9a-zA-Z_.-]+){_WS}*={_WS}*([^#;]*){_WS}*(?:{_WS}[#;].*)?", re.DOTALL)


@settings(max_examples=500, deadline=None)
@given(raw=st.text(alphabet=" \t\v\f\r=#;ab.-_[]é", max_size=14))
def test_pairs_are_read_as_the_apps_expression_reads_them(raw: str) -> None:
    from iolens.io500.ini import scan_lines

    (line,) = scan_lines(raw) if raw else [None]
    m = APP_PAIR.fullmatch(raw) if raw else None
    if m is None:
        assert line is None or line.kind not in ("pair", "empty-pair")
    else:
        assert line is not None and line.kind in ("pair", "empty-pair") and line.name == m.group(1)
        assert line.value == m.group(2).rstrip(" \t\r")


def test_a_long_value_of_spaces_is_read_in_linear_time(tmp_path: Path) -> None:
    text = b"[global]\ndatadir = " + b" " * 4000 + b"x#y\n"
    with time_limit(2, "a value of 4000 spaces"):
        dry_run_in_process(text, tmp_path)
