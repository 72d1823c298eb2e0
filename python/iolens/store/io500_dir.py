"""Official IO500 result directories (result.txt, result_summary.txt, config*.ini) as run records.

The phase values and scores are taken as the app printed them in result.txt (read by
iolens.io500.results_files); result_summary.txt, when present, must agree with them. The app also keeps each
phase's benchmark output (PHASE.txt: IOR's and mdtest's own text, read by iolens.io500.app_output): when
present it must agree with result.txt too, and it gives the phase's transfers and bytes (ior, from the
stonewall pairs) or items (mdtest, from "Continue stonewall hit"), and the document keeps what it says.
A directory that iolens io500 wrote also holds iolens-io500.json, the richer document: the importer takes
that one instead (store.importer decides). The run's page-cache mode is result.txt's "; iolens cache mode"
comment when there is one (io500/cache.py), else that of the tool that wrote it. Times in result.txt are
the local time of the machine that ran the benchmark; they are read as local time here (docs/db.md).
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

from iolens.io500 import cache
from iolens.io500.app_output import AppOutputError, IorOutput, MdtestOutput, parse_output
from iolens.io500.ini import IniError, parse_config
from iolens.io500.results_files import (
    Comment,
    ResultFileError,
    parse_result,
    parse_summary,
)
from iolens.io500.spec import PHASE_BY_NAME
from iolens.store.documents import score_rows
from iolens.store.records import PhaseRow, RunRecord, canonical_json, sha256

RESULT = "result.txt"
SUMMARY = "result_summary.txt"
# Config files, the effective one first (the app writes config.ini with every default filled in).
CONFIG_NAMES = ("config.ini", "config-orig.ini")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


# Two figures printed with six decimals are the same text when they differ by less than half the last digit.
SIX_DECIMALS = 0.5e-6


class Io500DirError(ValueError):
    """A directory that is not a complete IO500 result directory; the message says what is wrong."""


def is_result_dir(path: Path) -> bool:
    return path.is_dir() and (path / RESULT).is_file()


def _local_time(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.strptime(text.strip(), TIME_FORMAT).timestamp()
    except ValueError:
        return None


def _read_text(path: Path) -> str:
    """A file of the directory as text: UTF-8 (the app writes ASCII), refused when it is not."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Io500DirError(f"{path}: cannot read: {exc.strerror}") from None
    if b"\0" in data:
        raise Io500DirError(f"{path}: holds NUL bytes (a damaged file?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise Io500DirError(
            f"{path}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8 text (a damaged file?)"
        ) from None


def _comment_time(lines: list[Any], word: str) -> float | None:
    for line in lines:
        text = getattr(line, "text", None)
        if isinstance(text, str) and text.startswith(word + " "):
            return _local_time(text[len(word) + 1 :])
    return None


def _config(directory: Path) -> tuple[dict[str, str], dict[str, dict[str, str | None]] | None]:
    """The config files' texts, and the effective config's values (None when it does not parse)."""
    texts: dict[str, str] = {}
    names = [n for n in CONFIG_NAMES if (directory / n).is_file()]
    names += sorted(p.name for p in directory.glob("*.ini") if p.name not in names)
    for name in names:
        texts[name] = _read_text(directory / name)
    values = None
    for name in names:
        try:
            cfg = parse_config(texts[name].encode("utf-8"), str(directory / name))
        except IniError:
            continue
        values = {section: dict(options) for section, options in cfg.values.items()}
        break
    return texts, values


def run_record(directory: Path) -> RunRecord:
    """The run in an official IO500 result directory; Io500DirError when it is incomplete or damaged."""
    result_path = directory / RESULT
    text = _read_text(result_path)
    if text and not text.endswith("\n"):
        # The app ends every line; a last line without its end is a file cut short, possibly in the middle
        # of a number ("SCORE = 31.92" read as 31.92 instead of 31.923448).
        last = text.rsplit("\n", 1)[-1]
        raise Io500DirError(f"{result_path}: the last line {last[:40]!r} has no end (the file is truncated)")
    try:
        result = parse_result(text)
    except ResultFileError as exc:
        raise Io500DirError(f"{result_path}: {exc}") from None
    run = result.section("run")
    assert run is not None  # parse_result checks the file starts with [run]
    if result.version is None or result.config_hash is None:
        raise Io500DirError(f"{result_path}: [run] lacks version or config-hash")
    try:
        stated = result.score_values(extended=False)
    except ResultFileError as exc:
        raise Io500DirError(f"{result_path}: {exc}") from None
    except ValueError as exc:
        raise Io500DirError(f"{result_path}: [SCORE]: {exc}") from None
    if stated is None:
        raise Io500DirError(f"{result_path}: no [SCORE] section (the file is truncated, or the run stopped)")
    scores, valid, _ = stated

    phases: list[PhaseRow] = []
    files: dict[str, str] = {RESULT: text}
    outputs: dict[str, Any] = {}
    for section in result.phases:
        spec = PHASE_BY_NAME.get(section.name)
        try:
            value = section.score
            t_delta = section.get("t_delta")
            time_s = float(t_delta) if t_delta is not None else None
        except ValueError as exc:
            raise Io500DirError(f"{result_path}: [{section.name}]: not a number: {exc}") from None
        if value is not None and not math.isfinite(value):
            raise Io500DirError(f"{result_path}: [{section.name}]: score is not a finite number")
        row = PhaseRow(
            name=section.name,
            value=value,
            unit=(spec.unit if spec is not None else None) if value is not None else None,
            time_s=time_s,
            started_at=_local_time(section.get("t_start")),
            ended_at=_local_time(section.get("t_end")),
            valid=not section.invalid_reasons,
            status="ok",
        )
        output_path = directory / f"{section.name}.txt"
        if output_path.is_file():
            files[output_path.name] = _read_text(output_path)
            if section.name.startswith(("ior-", "mdtest-")):
                output = _phase_output(output_path, files[output_path.name], section.name, value)
                outputs[section.name] = output.to_dict()
                _fill_from_output(row, output)
        phases.append(row)
    phases += score_rows(scores.bw, scores.md, scores.score, valid)
    extended = result.score_values(extended=True) if result.section("SCOREX") else None
    if extended is not None:
        x, xvalid, _ = extended
        phases += score_rows(x.bw, x.md, x.score, xvalid, suffix="-x")

    summary_path = directory / SUMMARY
    if summary_path.is_file():
        summary_text = _read_text(summary_path)
        _check_summary(summary_path, summary_text, result.phase_scores(), scores.score)
        files[SUMMARY] = summary_text
    config_texts, config_values = _config(directory)
    files.update(config_texts)

    last = result.sections[-1]
    document: dict[str, Any] = {
        "format": "io500-result-directory",
        "directory": str(directory),
        "files": files,
    }
    if outputs:
        document["phase_outputs"] = outputs
    return RunRecord(
        uid=sha256("io500-app\0" + text),
        tool="io500",
        origin="io500-app",
        status="ok",
        document=canonical_json(document),
        version=result.version,
        command=None,
        config=config_values,
        config_hash=result.config_hash,
        started_at=_comment_time(run.lines, "START"),
        ended_at=_comment_time(last.lines, "END"),
        ranks=result.procs,
        valid=valid,
        score=scores.score,
        source_path=str(directory),
        cache_mode=_cache_mode(run.lines, result.version or ""),
        phases=phases,
    )


def _cache_mode(run_lines: list[Any], version: str) -> str:
    """The page cache before the ior reads: as [run]'s comment says (iolens io500 writes it), else "evict" for
    a directory of an iolens io500 run written before that comment existed (it always evicted), else "keep":
    the app's IOR never drops the cache itself (its `drop-caches` is a config key, compared as such)."""
    stated = cache.mode_in(line.text for line in run_lines if isinstance(line, Comment))
    if stated is not None:
        return stated
    return cache.EVICT if version.startswith("iolens-") else cache.KEEP


def _check_summary(path: Path, text: str, phase_scores: dict[str, float], score: float) -> None:
    try:
        summary = parse_summary(text)
    except ResultFileError as exc:
        raise Io500DirError(f"{path}: {exc}") from None
    for p in summary.phases:
        if p.name not in phase_scores:
            continue
        try:
            value = float(p.score)
        except ValueError:
            raise Io500DirError(f"{path}: {p.name}: score {p.score!r} is not a number") from None
        # Both files print the same figure with six decimals: the texts must be the same number.
        if not math.isclose(value, phase_scores[p.name], rel_tol=0, abs_tol=SIX_DECIMALS):
            raise Io500DirError(
                f"{path}: {p.name} is {p.score} here but {phase_scores[p.name]:f} in {RESULT}: "
                "the two files are not from the same run"
            )
    if summary.score is None:
        raise Io500DirError(f"{path}: no [SCORE ] line (truncated?)")
    if not math.isclose(float(summary.score.total), score, rel_tol=0, abs_tol=SIX_DECIMALS):
        raise Io500DirError(f"{path}: TOTAL {summary.score.total} differs from {RESULT}'s SCORE {score:f}")


# The operation of mdtest's SUMMARY rate table that is each mdtest phase's score (the app's rate[] index).
_MDTEST_OPERATION = {
    "write": "File creation",
    "stat": "File stat",
    "read": "File read",
    "delete": "File removal",
}


def _phase_output(path: Path, text: str, phase: str, score: float | None) -> IorOutput | MdtestOutput:
    """A phase's IOR or mdtest output, which must be complete and agree with result.txt's score."""
    try:
        output = parse_output(text)
    except AppOutputError as exc:
        raise Io500DirError(f"{path}: {exc}") from None
    want = "ior" if phase.startswith("ior-") else "mdtest"
    if (want == "ior") != isinstance(output, IorOutput):
        raise Io500DirError(f"{path}: holds {'IOR' if want == 'mdtest' else 'mdtest'} output, not {want}'s")
    if not score:
        return output
    if isinstance(output, IorOutput):
        access = "write" if phase.endswith("-write") else "read"
        row = output.row(access)
        if row is None:
            raise Io500DirError(f"{path}: no {access} row in IOR's results")
        # result.txt has the figure in GiB/s with six decimals (±0.0005 MiB/s once times 1024); IOR as
        # many decimals as its PPDouble chose: six below 1 MiB/s, two below 3600, none from 3600 on.
        printed = _ior_decimals(text, access, row.bw_mib_per_s)
        tolerance = 0.5 * 10.0**-printed + 0.5e-6 * 1024 + 1e-9 * row.bw_mib_per_s
        if abs(row.bw_mib_per_s - score * 1024) > tolerance:
            raise Io500DirError(
                f"{path}: {access} {row.bw_mib_per_s} MiB/s here but {score:f} GiB/s in {RESULT}: "
                "the two files are not from the same run"
            )
    else:
        operation = _MDTEST_OPERATION.get(phase.rsplit("-", 1)[1])
        rate = output.rate(operation) if operation is not None else None
        if operation is not None and rate is None:
            raise Io500DirError(f"{path}: no '{operation}' row in mdtest's SUMMARY rate")
        # mdtest prints ops/s with three decimals; result.txt the same figure in kIOPS with six.
        if rate is not None and abs(rate.max - score * 1000) > 0.0015 + 1e-9 * rate.max:
            raise Io500DirError(
                f"{path}: {operation} {rate.max} ops/s here but {score:f} kIOPS in {RESULT}: "
                "the two files are not from the same run"
            )
    return output


def _ior_decimals(text: str, access: str, bw_mib_per_s: float) -> int:
    """How many decimals IOR printed the bandwidth of its `access` results row with: read from the row
    itself, else IOR's rule (PPDouble in ior-output.c: %.6f below 1, %.2f below 3600, %.0f above)."""
    for line in text.split("\n"):
        words = line.split()
        if len(words) > 1 and words[0] == access:
            try:
                if float(words[1]) != bw_mib_per_s:
                    continue
            except ValueError:
                continue
            return len(words[1].partition(".")[2])
    return 6 if bw_mib_per_s < 1 else 2 if bw_mib_per_s < 3600 else 0


def _fill_from_output(row: PhaseRow, output: IorOutput | MdtestOutput) -> None:
    """What the benchmark's own output adds to result.txt's row: transfers and bytes, or items."""
    if isinstance(output, IorOutput):
        moved = output.moved()
        if moved is not None:
            row.ops, row.bytes = moved
    else:
        row.ops = output.items()
