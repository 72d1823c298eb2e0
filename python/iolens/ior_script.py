"""IOR's script files (`iolens ior -f SCRIPT`), read and run as IOR 4 runs them (docs/ior.md).

The grammar, as IOR's parse_options.c reads it:

- Lines up to one that holds only `IOR START` (any case) are ignored; `IOR STOP` ends the script.
- Inside, blank lines and lines starting with `#` are skipped; anything from a `#` on is a comment.
- A directive line holds `key=value` pairs separated by commas (spaces around `=` allowed). A key is one of
  IOR's parameter names (`transferSize`, `filePerProc`, ..., any case) or a command-line flag written with
  its value (`-F=1`, `-t=1m`, `--posix.odirect=1`).
- `RUN` ends a test. Options carry over: each test starts from the one before it. A `RUN` right after a
  `RUN` runs the same test again, and the options after the last `RUN` make one more test, as in IOR.
- The command line's options are the first test's starting point.

Each test becomes one engine run through the pipeline, one after the other (each stored as its own run
with --db). iolens refuses a script IOR would run with surprises: no `IOR START`, no `IOR STOP` (a
truncated file), a line that is not `key=value` — naming the file and line, exit status 2, before any I/O.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from iolens import atomic, launch, pipeline
from iolens.engine import EngineNotFound, find_engine
from iolens.messages import PROG, error
from iolens.report import ior_output

# IOR reads a line into a buffer of MAX_STR (1024) bytes; a longer line is cut there.
MAX_LINE = 1024
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$|^-[A-Za-z]$|^--[A-Za-z][A-Za-z0-9_.-]*$")


class ScriptError(Exception):
    """A script that cannot run: `iolens: error: FILE:LINE: ...`, exit status 2, nothing done."""


@dataclass
class Directive:
    line: int
    key: str
    value: str

    def engine_args(self) -> list[str]:
        # The engine sets IOR's parameter names and "-F"/"--name" spellings through -O (options.c).
        return [f"-O={self.key}={self.value}"]


@dataclass
class ScriptTest:
    """One test of a script: the directives that built it (carried over from the tests before it)."""

    index: int
    directives: list[Directive] = field(default_factory=list)
    run_line: int | None = None  # the RUN line that ran it; None for the options after the last RUN

    def engine_args(self) -> list[str]:
        return [arg for d in self.directives for arg in d.engine_args()]


def _only(text: str, word: str) -> bool:
    return text.strip().lower() == word


def _directives(text: str, where: str, lineno: int) -> list[Directive]:
    """The key=value pairs of one line (IOR's ParseLine and DecodeDirective)."""
    text = text.split("#", 1)[0]
    out: list[Directive] = []
    for piece in text.split(","):
        item = piece.strip()
        if not item:
            raise ScriptError(f"{where}:{lineno}: an empty item (a comma with nothing after it?)")
        if "=" not in item:
            raise ScriptError(f"{where}:{lineno}: '{item}' is not key=value")
        key, _, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not key or not _KEY.match(key):
            raise ScriptError(f"{where}:{lineno}: '{key or item}' is not an option name")
        if not value or any(ch.isspace() for ch in value):
            raise ScriptError(f"{where}:{lineno}: {key}: expects one value, got {value!r}")
        out.append(Directive(lineno, key, value))
    return out


def parse(text: str, where: str) -> list[ScriptTest]:
    """The tests of a script, in order. `where` names the file in messages."""
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if _only(line, "ior start")), None)
    if start is None:
        raise ScriptError(
            f"{where}: no 'IOR START' line (an IOR script runs what lies between IOR START and IOR STOP)"
        )
    tests = [ScriptTest(0)]
    run_pending = False
    for i in range(start + 1, len(lines)):
        lineno = i + 1
        raw = lines[i]
        if len(raw) >= MAX_LINE:
            raise ScriptError(f"{where}:{lineno}: the line is longer than IOR's {MAX_LINE - 1} characters")
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _only(stripped, "ior stop"):
            return tests
        if _only(stripped, "run"):
            if run_pending:  # RUN after RUN: the same test once more
                tests.append(ScriptTest(len(tests), list(tests[-1].directives)))
            tests[-1].run_line = lineno
            run_pending = True
            continue
        if run_pending:  # the first option after a RUN starts the next test from the last one
            tests.append(ScriptTest(len(tests), list(tests[-1].directives)))
            run_pending = False
        tests[-1].directives.extend(_directives(stripped, where, lineno))
    raise ScriptError(
        f"{where}:{len(lines)}: no 'IOR STOP' line after IOR START (line {start + 1}): is the file cut short?"
    )


def take_script_option(engine_args: list[str]) -> tuple[str | None, list[str]]:
    """`-f FILE` (also -fFILE, -f=FILE) out of the engine arguments: (FILE or None, the rest)."""
    rest: list[str] = []
    script: str | None = None
    i = 0
    while i < len(engine_args):
        arg = engine_args[i]
        if arg == "--":
            rest.extend(engine_args[i:])
            break
        if arg == "-f":
            if i + 1 >= len(engine_args):
                raise ScriptError("-f: expects a script file")
            script = engine_args[i + 1]
            i += 2
            continue
        if arg.startswith("-f") and not arg.startswith("--"):
            script = arg[3:] if arg.startswith("-f=") else arg[2:]
            i += 1
            continue
        rest.append(arg)
        i += 1
    return script, rest


def read(path: str) -> list[ScriptTest]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ScriptError(f"-f: cannot read {path}: {exc.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ScriptError(f"{path}:{line}: not text (a byte that is not UTF-8)") from None
    if "\0" in text:
        raise ScriptError(f"{path}:{text[: text.index(chr(0))].count(chr(10)) + 1}: not text (a NUL byte)")
    return parse(text, path)


def _blame(test: ScriptTest, message: str, where: str) -> str:
    """The engine refused a test: name the script line whose key the message names (the last one to set it),
    else the test's RUN line."""
    for d in reversed(test.directives):
        if re.search(rf"(?<![A-Za-z0-9_.-]){re.escape(d.key)}(?![A-Za-z0-9_.-])", message):
            return f"{where}:{d.line}: {message}"
    line = test.run_line or (test.directives[-1].line if test.directives else None)
    return (
        f"{where}:{line}: test {test.index}: {message}" if line else f"{where}: test {test.index}: {message}"
    )


def _precheck(tests: list[ScriptTest], base: list[str], np: int, where: str) -> None:
    """Every test's options checked together by the engine before the first test runs, as IOR validates its
    tests (--dryRun: not the paths, which an earlier test may create; each run checks its own)."""
    try:
        engine = find_engine()
    except EngineNotFound:
        return  # run_workload says so
    for t in tests:
        req = launch.RunRequest("ior", [*base, *t.engine_args(), "--dryRun"], np=np)
        checked = launch.precheck(req, engine)
        if checked.returncode != 0:
            msg = (
                checked.errors[0]
                if checked.errors
                else f"the engine refused the options (exit {checked.returncode})"
            )
            raise ScriptError(_blame(t, msg, where))


def print_test_header(test: ScriptTest, total: int) -> None:
    """The simple per-test heading of iolens's own output."""
    where = f"RUN at line {test.run_line}" if test.run_line else "options after the last RUN"
    print(f"\nTest {test.index} of {total} ({where})", flush=True)


def render_tests(docs: list[dict[str, Any]], text_format: str) -> bool:
    """The script's IOR output once every test has run, as IOR prints it: one banner, each test's results,
    one summary of all tests (Test# = the index in docs); in the rich view each test was shown as it ended.
    False when -O summaryFile could not be written."""
    classic = ior_output.wants_classic(text_format)
    return ior_output.show(docs, classic, lambda: None)


def run_script(path: str, run: pipeline.RunInput, base: list[str]) -> int:
    """Runs the script's tests one after the other; the worst exit status (a refused script: 2, nothing
    run). `base` are the command line's engine arguments (without -f)."""
    try:
        tests = read(path)
        job = launch.mpi_job()
        if job is not None and (job.size or 2) > 1 and len(tests) > 1:
            # Each test is an MPI run of its own, and a rank's process can start MPI only once.
            raise ScriptError(
                f"-f {path}: {len(tests)} tests cannot run inside the MPI job that started iolens "
                f"({job.source}): let iolens start one MPI run per test "
                f"(`iolens ior --launcher mpirun --np N -f {path}`)"
            )
        _precheck(tests, base, run.opts.np, path)
    except ScriptError as exc:
        return error(str(exc))
    docs: list[dict[str, Any]] = []
    worst = 0
    user_json = run.opts.json
    with tempfile.TemporaryDirectory(prefix="iolens-script-") as tmp:
        for t in tests:
            if not ior_output.wants_classic(run.opts.text_format):
                print_test_header(t, len(tests))
            doc_path = Path(tmp) / f"test-{t.index}.json"
            opts = replace(
                run.opts, engine_args=[*base, *t.engine_args()], json=doc_path, ior_script_test=True
            )
            status = pipeline.run_workload(replace(run, opts=opts))
            worst = max(worst, status)
            if doc_path.exists():
                doc = json.loads(doc_path.read_text())
                doc["ior_script"] = {"file": path, "test": t.index, "run_line": t.run_line}
                docs.append(doc)
            if status >= 128:  # stopped by a signal: no further test
                break
    if not render_tests(docs, run.opts.text_format):
        worst = max(worst, 1)
    if user_json is not None:
        try:
            atomic.write_text(user_json, json.dumps(docs, indent=2) + "\n")
        except OSError as exc:
            error(f"--json: cannot write {user_json}: {exc.strerror}", 1)
            worst = max(worst, 1)
    if worst:
        print(
            f"{PROG}: {path}: {len(docs)} of {len(tests)} test(s) ran; exit status {worst}", file=sys.stderr
        )
    return worst
