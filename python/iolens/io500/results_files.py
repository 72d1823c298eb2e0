"""The IO500 app's result files (result.txt, result_summary.txt, config-orig.ini, config.ini), io500-verify.

Formats (io500 at commit 02091cf):

- result.txt: `[run]` (procs, version, config-hash, result-dir, mode, run-wide "; ERROR INVALID ..." lines,
  "; START ..."), a blank line, then one `[phase]` section per phase that ran (with pause-dir set t_pause and
  "; Checking for pause file DIR/PHASE" first, then t_start, the phase's own
  lines, "; ERROR INVALID <reason>" lines, score, t_delta, t_end), `[SCORE]` (MD, BW, SCORE with
  " [INVALID]" when invalid, hash), `[SCOREX]` in extended mode, and "; END ...". Pairs are printed
  "%-15s = value"; sections are preceded by a blank line. The reader keeps every line, so reading and
  writing an app's file gives the same bytes.
- result_summary.txt: "IO500 version V (mode)", one "[RESULT]" line per scored phase ("[      ]" for the
  others) and "[SCORE ]" ("[SCOREX]") lines. The app writes no comment there; iolens writes its own comment
  lines ("; " as in result.txt: the cache mode, io500/cache.py) right after the first line, so that the first
  and last lines stay the app's, and the reader keeps comment lines wherever they are.
- config-orig.ini: the INI file as given; config.ini: every option with its value, defaults filled in.

`verify()` does what `io500-verify CONFIG RESULT` does: recompute the config hash from the config, recompute
the score hash from result.txt's text, and compare them with the hashes the file carries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from iolens.io500.hashes import format_hash, format_number, pair_hash, score_hash
from iolens.io500.ini import Io500Config, load_config, scan_lines
from iolens.io500.score import Evaluation, PhaseVerdict, Scores, compute_scores, hashed_phases
from iolens.io500.spec import PHASE_BY_NAME, ScoreGroup

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
INVALID_PREFIX = "ERROR INVALID "


class ResultFileError(ValueError):
    """A result file that cannot be read as the app writes it."""


# ------------------------------------------------------------------------------------------------ result.txt


@dataclass(frozen=True)
class Pair:
    key: str
    value: str

    def render(self) -> str:
        return f"{self.key:<15} = {self.value}"


@dataclass(frozen=True)
class Comment:
    text: str  # after "; "

    def render(self) -> str:
        return f"; {self.text}"


@dataclass(frozen=True)
class Raw:
    text: str  # any other line (warnings of external tools), kept as it is

    def render(self) -> str:
        return self.text


Line = Pair | Comment | Raw


@dataclass
class Section:
    name: str
    lines: list[Line] = field(default_factory=list)

    def get(self, key: str) -> str | None:
        """The last value of `key` in this section, None if absent."""
        value = None
        for line in self.lines:
            if isinstance(line, Pair) and line.key == key:
                value = line.value
        return value

    @property
    def invalid_reasons(self) -> list[str]:
        return [
            line.text[len(INVALID_PREFIX) :]
            for line in self.lines
            if isinstance(line, Comment) and line.text.startswith(INVALID_PREFIX)
        ]

    @property
    def score(self) -> float | None:
        value = self.get("score")
        return float(value) if value is not None else None


_PAIR_LINE = re.compile(r"([0-9A-Za-z_.-]+) *= ?(.*)", re.DOTALL)
_SECTION_LINE = re.compile(r"\[([0-9A-Za-z_-]+)\]")


@dataclass
class ResultFile:
    """result.txt as a list of sections of lines."""

    sections: list[Section]

    def section(self, name: str) -> Section | None:
        for s in self.sections:
            if s.name == name:
                return s
        return None

    def _run(self, key: str) -> str | None:
        run = self.section("run")
        return run.get(key) if run else None

    @property
    def version(self) -> str | None:
        return self._run("version")

    @property
    def config_hash(self) -> str | None:
        return self._run("config-hash")

    @property
    def mode(self) -> str | None:
        return self._run("mode")

    @property
    def procs(self) -> int | None:
        value = self._run("procs")
        return int(value) if value is not None else None

    @property
    def phases(self) -> list[Section]:
        return [s for s in self.sections if s.name not in ("run", "SCORE", "SCOREX")]

    def phase_scores(self) -> dict[str, float]:
        return {s.name: float(v) for s in self.phases if (v := s.get("score")) is not None}

    def score_values(self, extended: bool = False) -> tuple[Scores, bool, str | None] | None:
        """(MD, BW, SCORE), whether valid, and the hash of [SCORE] (or [SCOREX]); None if it is absent."""
        s = self.section("SCOREX" if extended else "SCORE")
        if s is None:
            return None
        md, bw, total = s.get("MD"), s.get("BW"), s.get("SCORE")
        if md is None or bw is None or total is None:
            raise ResultFileError(f"[{s.name}] lacks MD, BW or SCORE")
        parts = total.split()
        return Scores(float(md), float(bw), float(parts[0])), "[INVALID]" not in parts[1:], s.get("hash")

    def render(self) -> str:
        return render_result(self)


def parse_result(text: str) -> ResultFile:
    """Read result.txt text; every line is kept (blank lines are the format's, not kept)."""
    sections: list[Section] = []
    current: Section | None = None
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if raw.strip() == "":
            continue
        m = _SECTION_LINE.fullmatch(raw)
        if m:
            current = Section(m.group(1))
            sections.append(current)
            continue
        if current is None:
            raise ResultFileError(f"line {lineno}: content before the first [section]: {raw[:60]!r}")
        if raw.startswith("; "):
            current.lines.append(Comment(raw[2:]))
            continue
        m = _PAIR_LINE.fullmatch(raw)
        current.lines.append(Pair(m.group(1), m.group(2)) if m else Raw(raw))
    if not sections or sections[0].name != "run":
        raise ResultFileError("not an IO500 result.txt: it does not start with [run]")
    return ResultFile(sections)


def render_result(result: ResultFile) -> str:
    """result.txt text: [run], the blank line the app prints after validating, then blank + each section."""
    out: list[str] = []
    for index, section in enumerate(result.sections):
        out.append(f"[{section.name}]\n" if index == 0 else f"\n[{section.name}]\n")
        out.extend(line.render() + "\n" for line in section.lines)
        if index == 0:
            out.append("\n")
    return "".join(out)


def read_result(path: str | Path) -> ResultFile:
    return parse_result(Path(path).read_text(encoding="utf-8", errors="surrogateescape"))


# ---------------------------------------------------------------------------------------- result_summary.txt


@dataclass(frozen=True)
class SummaryPhase:
    name: str
    score: str  # as printed ("%f")
    unit: str
    time: str  # seconds as printed ("%.3f")
    scored: bool  # "[RESULT]" rather than "[      ]"
    valid: bool

    def render(self) -> str:
        tag = "[RESULT]" if self.scored else "[      ]"
        flag = "" if self.valid else " [INVALID]"
        return f"{tag} {self.name:>20} {self.score:>15} {self.unit} : time {self.time} seconds{flag}"


@dataclass(frozen=True)
class SummaryScore:
    bw: str
    md: str
    total: str
    valid: bool
    extended: bool = False

    def render(self) -> str:
        tag = "[SCOREX]" if self.extended else "[SCORE ]"
        flag = "" if self.valid else " [INVALID]"
        return f"{tag} Bandwidth {self.bw} GiB/s : IOPS {self.md} kiops : TOTAL {self.total}{flag}"


@dataclass
class SummaryFile:
    version: str
    mode: str
    phases: list[SummaryPhase]
    score: SummaryScore | None
    extended_score: SummaryScore | None = None
    comments: list[str] = field(default_factory=list)  # iolens's "; " lines (the app writes none)

    def render(self) -> str:
        lines = [f"IO500 version {self.version} ({self.mode})"]
        lines += [f"; {c}" for c in self.comments]
        lines += [p.render() for p in self.phases]
        if self.score:
            lines.append(self.score.render())
        if self.extended_score:
            lines.append(self.extended_score.render())
        return "".join(line + "\n" for line in lines)


_SUMMARY_HEAD = re.compile(r"IO500 version (.*) \((\w+)\)")
_SUMMARY_PHASE = re.compile(
    r"(\[RESULT\]|\[      \]) +(\S+) +(\S+) (\S+) : time (\S+) seconds( \[INVALID\])?"
)
_SUMMARY_SCORE = re.compile(
    r"\[(SCORE |SCOREX)\] Bandwidth (\S+) GiB/s : IOPS (\S+) kiops : TOTAL (\S+)( \[INVALID\])?"
)


def parse_summary(text: str) -> SummaryFile:
    lines = [line for line in text.split("\n") if line.strip()]
    if not lines or not (head := _SUMMARY_HEAD.fullmatch(lines[0])):
        raise ResultFileError("not an IO500 result_summary.txt: no 'IO500 version' line")
    summary = SummaryFile(head.group(1), head.group(2), [], None)
    for lineno, line in enumerate(lines[1:], start=2):
        if line.startswith("; "):
            summary.comments.append(line[2:])
        elif m := _SUMMARY_PHASE.fullmatch(line):
            scored = m.group(1) == "[RESULT]"
            summary.phases.append(
                SummaryPhase(m.group(2), m.group(3), m.group(4), m.group(5), scored, m.group(6) is None)
            )
        elif m := _SUMMARY_SCORE.fullmatch(line):
            ext = m.group(1) == "SCOREX"
            score = SummaryScore(m.group(2), m.group(3), m.group(4), m.group(5) is None, ext)
            if ext:
                summary.extended_score = score
            else:
                summary.score = score
        else:
            raise ResultFileError(f"result_summary.txt line {lineno}: unexpected {line[:60]!r}")
    return summary


def read_summary(path: str | Path) -> SummaryFile:
    return parse_summary(Path(path).read_text(encoding="utf-8", errors="surrogateescape"))


# --------------------------------------------------------------------------------------------- writing a run


def _ts(value: datetime | None) -> str:
    return (value or datetime.now()).strftime(TIMESTAMP_FORMAT)


def _phase_section(verdict: PhaseVerdict, verbosity: int) -> Section:
    o, spec = verdict.outcome, verdict.spec
    s = Section(spec.name)
    if o.pause_file is not None:
        if verbosity > 0:
            s.lines.append(Pair("t_pause", _ts(o.pause_started)))
        s.lines.append(Comment(f"Checking for pause file {o.pause_file}"))
    if verbosity > 0:
        s.lines.append(Pair("t_start", _ts(o.t_start)))
    s.lines += [Pair(k, v) for k, v in o.setup_lines]
    s.lines += [Comment(INVALID_PREFIX + r) for r in verdict.own_reasons]
    s.lines += [Pair(k, v) for k, v in o.result_lines]
    s.lines += [Comment(INVALID_PREFIX + r) for r in verdict.check_reasons]
    if not spec.dummy:
        s.lines.append(Pair("score", format_number(o.score)))
    if verbosity > 0:
        s.lines.append(Pair("t_delta", f"{o.runtime_s:.4f}"))
        s.lines.append(Pair("t_end", _ts(o.t_end)))
    return s


def _score_section(name: str, scores: Scores, valid: bool, hash_value: int) -> Section:
    flag = "" if valid else " [INVALID]"
    return Section(
        name,
        [
            Pair("MD", format_number(scores.md)),
            Pair("BW", format_number(scores.bw)),
            Pair("SCORE", format_number(scores.score) + flag),
            Pair("hash", format_hash(hash_value)),
        ],
    )


def build_result(
    evaluation: Evaluation,
    config: Io500Config,
    procs: int,
    result_dir: str,
    verbosity: int | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> ResultFile:
    """result.txt for an evaluated run (verbosity: the config's [global] verbosity unless given)."""
    if verbosity is None:
        verbosity = int(config.get("global", "verbosity") or 1)
    run = Section(
        "run",
        [
            Pair("procs", str(procs)),
            Pair("version", evaluation.version),
            Pair("config-hash", config.config_hash_text),
            Pair("result-dir", result_dir),
            Pair("mode", evaluation.mode),
        ],
    )
    run.lines += [Comment(INVALID_PREFIX + r) for r in evaluation.setup_reasons]
    if verbosity > 0:
        run.lines.append(Comment(f"START {_ts(start)}"))
    run.lines += [Comment(INVALID_PREFIX + r) for r in evaluation.validate_reasons]
    sections = [run] + [_phase_section(v, verbosity) for v in evaluation.phases]
    sections.append(_score_section("SCORE", evaluation.scores, evaluation.valid, evaluation.hash))
    if evaluation.mode == "extended":
        assert evaluation.extended_scores is not None and evaluation.extended_hash is not None
        sections.append(
            _score_section(
                "SCOREX",
                evaluation.extended_scores,
                bool(evaluation.extended_valid),
                evaluation.extended_hash,
            )
        )
    if verbosity > 0:
        sections[-1].lines.append(Comment(f"END {_ts(end)}"))
    return ResultFile(sections)


def build_summary(evaluation: Evaluation) -> SummaryFile:
    """result_summary.txt for an evaluated run."""
    phases = [
        SummaryPhase(
            v.spec.name,
            format_number(v.outcome.score),
            v.spec.unit,
            f"{v.outcome.runtime_s:.3f}",
            v.spec.group != ScoreGroup.NONE,
            v.valid,
        )
        for v in evaluation.phases
    ]
    sc = evaluation.scores
    score = SummaryScore(
        format_number(sc.bw), format_number(sc.md), format_number(sc.score), evaluation.valid
    )
    ext = None
    if evaluation.mode == "extended" and evaluation.extended_scores is not None:
        x = evaluation.extended_scores
        ext = SummaryScore(
            format_number(x.bw),
            format_number(x.md),
            format_number(x.score),
            bool(evaluation.extended_valid),
            True,
        )
    return SummaryFile(evaluation.version, evaluation.mode, phases, score, ext)


def write_config_files(result_dir: str | Path, config: Io500Config) -> None:
    """config-orig.ini (the INI as given) and config.ini (every option, defaults filled in)."""
    d = Path(result_dir)
    (d / "config-orig.ini").write_bytes(config.source)
    (d / "config.ini").write_text(config.render(), encoding="utf-8", errors="surrogateescape")


def write_result_dir(
    result_dir: str | Path,
    config: Io500Config,
    evaluation: Evaluation,
    procs: int,
    verbosity: int | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> None:
    """Write result.txt, result_summary.txt, config-orig.ini and config.ini into result_dir."""
    d = Path(result_dir)
    d.mkdir(parents=True, exist_ok=True)
    write_config_files(d, config)
    result = build_result(evaluation, config, procs, str(d), verbosity=verbosity, start=start, end=end)
    (d / "result.txt").write_text(result.render(), encoding="utf-8", errors="surrogateescape")
    (d / "result_summary.txt").write_text(build_summary(evaluation).render(), encoding="utf-8")


# ------------------------------------------------------------------------------------------------- rescoring


@dataclass
class Rescore:
    """Scores and hashes recomputed from a result.txt, beside what the file says."""

    computed: Scores  # from the phase scores as printed (six decimals: SCORE may differ in the last digit)
    stated: Scores | None
    stated_valid: bool | None
    hash_from_text: (
        int  # over the file's own text as io500-verify computes it, "valid=NO" added if marked invalid
    )
    hash_from_values: int  # the score hash over `computed`
    stated_hash: str | None


def rescore(result: ResultFile) -> Rescore:
    """Recompute MD, BW, SCORE and the score hash from the phase scores in a result.txt."""
    phase_scores = result.phase_scores()
    computed = compute_scores(phase_scores, extended=False)
    stated = result.score_values(extended=False)
    valid = stated[1] if stated else True
    names = [s.name for s in result.phases if s.get("score") is not None]
    from_values = score_hash(
        result.version or "",
        [(n, phase_scores[n]) for n in hashed_phases(names, False)],
        computed.md,
        computed.bw,
        computed.score,
        valid,
    )
    return Rescore(
        computed=computed,
        stated=stated[0] if stated else None,
        stated_valid=stated[1] if stated else None,
        hash_from_text=_verifier_hashes(render_result(result))[0]
        ^ (0 if valid else pair_hash("valid", "NO")),
        hash_from_values=from_values,
        stated_hash=stated[2] if stated else None,
    )


# ---------------------------------------------------------------------------------------------------- verify


def _counts_for_hash(section: str) -> bool:
    """Whether a section's `score` enters the score hash (the app's verifier asks its phase table)."""
    spec = PHASE_BY_NAME.get(section)
    if spec is None:
        return True
    return spec.group != ScoreGroup.NONE and not spec.optional


def _verifier_hashes(text: str) -> tuple[int, str | None, str | None, str | None]:
    """Walk result.txt as io500-verify does: (score hash, config-hash read, hash read, version read)."""
    value = 0
    cfg_read = hash_read = version_read = None
    last_section: str | None = None
    for line in scan_lines(text):
        if line.kind == "section":
            last_section = line.name
            continue
        if line.kind != "pair":  # comments, blank lines, empty values and other content are ignored
            continue
        key, val = line.name, line.value
        if key == "version":
            version_read = val
            value ^= pair_hash(key, val)
        elif key == "config-hash":
            cfg_read = val
        elif last_section is None:
            continue
        elif last_section == "SCORE":
            if key == "SCORE":
                # "31.923448 [INVALID]": the app hashes the first space-separated word
                value ^= pair_hash(key, next(word for word in val.split(" ") if word))
            elif key == "hash":
                hash_read = val
            else:
                value ^= pair_hash(key, val)
        elif key == "score" and _counts_for_hash(last_section):
            value ^= pair_hash(last_section, val)
    return value, cfg_read, hash_read, version_read


@dataclass
class VerifyReport:
    """The outcome of verify(): what io500-verify prints and its exit status."""

    config_hash_expected: str
    config_hash_read: str | None
    score_hash_expected: str  # over the file's text, without the "valid=NO" pair
    score_hash_read: str | None
    config_ok: bool
    score_ok: bool  # the score hash matches, with or without the invalid-run pair
    valid_run: bool  # matched without the invalid-run pair
    version_read: str | None = None
    messages: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Both hashes match: the files are as the benchmark wrote them (the run may still be invalid)."""
        return self.config_ok and self.score_ok

    @property
    def exit_code(self) -> int:
        """io500-verify's exit status: 0 only for matching hashes of a valid run."""
        return 0 if self.ok and self.valid_run else 1

    @property
    def status(self) -> str:
        if not self.ok:
            return "invalid: hash mismatch"
        return "OK" if self.valid_run else "OK, but this is an invalid run"

    def render(self) -> str:
        out = []
        if self.version_read is not None:
            out.append(f"result file ver = {self.version_read}")
        out += [
            "[run]",
            f"config-hash     = {self.config_hash_read}",
            f"score-hash      = {self.score_hash_read}",
        ]
        out += self.messages
        return "\n".join(out) + "\n"


def verify_texts(config: Io500Config, result_text: str) -> VerifyReport:
    """verify() on a parsed config and result.txt text."""
    expected_cfg = config.config_hash_text
    score_value, cfg_read, hash_read, version_read = _verifier_hashes(result_text)
    expected_score = format_hash(score_value)
    messages: list[str] = []
    if cfg_read is None:
        messages.append("ERROR: Empty config hash read")
    config_ok = cfg_read == expected_cfg
    if cfg_read is not None and not config_ok:
        messages.append(f"ERROR: Configuration hash expected: {expected_cfg} read: {cfg_read}")
    valid_run = hash_read == expected_score
    score_ok = valid_run
    if not valid_run:
        invalid_hash = format_hash(score_value ^ pair_hash("valid", "NO"))
        if hash_read is not None and hash_read == invalid_hash:
            score_ok = True
            messages.append("")
            messages.append("[OK] But this is an invalid run!")
        else:
            messages.append("")
            messages.append(f'ERROR: Score hash expected: "{expected_score}" read: "{hash_read}"')
    elif config_ok:
        messages.append("")
        messages.append("[OK]")
    return VerifyReport(
        config_hash_expected=expected_cfg,
        config_hash_read=cfg_read,
        score_hash_expected=expected_score,
        score_hash_read=hash_read,
        config_ok=config_ok,
        score_ok=score_ok,
        valid_run=valid_run,
        version_read=version_read,
        messages=messages,
    )


def verify(config_path: str | Path, result_path: str | Path) -> VerifyReport:
    """Check a result.txt against the config it was run with, as `io500-verify CONFIG RESULT` does."""
    config = load_config(config_path)
    text = Path(result_path).read_bytes()
    if b"\0" in text:
        text = text[: text.index(b"\0")]  # the app reads a C string
    return verify_texts(config, text.decode("utf-8", "surrogateescape"))
