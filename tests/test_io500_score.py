"""IO500 scoring, validity, hashes, result files and verification against the official app's reference run."""

from __future__ import annotations

import math
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from iolens.io500.hashes import format_hash, format_number, hash_update, pair_hash, score_hash
from iolens.io500.ini import load_config, parse_config
from iolens.io500.results_files import (
    TIMESTAMP_FORMAT,
    Comment,
    Pair,
    ResultFile,
    build_result,
    build_summary,
    parse_result,
    parse_summary,
    read_result,
    read_summary,
    rescore,
    verify,
    write_result_dir,
)
from iolens.io500.score import (
    PhaseOutcome,
    RunRules,
    compute_scores,
    evaluate,
    ior_score,
    md_score,
)

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "tests" / "data" / "io500"
VERSION = "02091cf254d8-anchor"
SCORED_STANDARD = [
    "ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write", "find", "ior-easy-read",
    "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdtest-easy-delete", "mdtest-hard-read",
    "mdtest-hard-delete",
]  # fmt: skip


@pytest.fixture(scope="module")
def ref() -> Path:
    if not (REF / "result.txt").is_file():
        pytest.fail(f"IO500 reference files missing at {REF} (tests/data/io500 is part of the repository)")
    return REF


@pytest.fixture(scope="module")
def ref_result(ref: Path) -> ResultFile:
    return read_result(ref / "result.txt")


# ----------------------------------------------------------------------------------------- the hash itself


def test_string_hash_rotates_left_by_two_and_adds_signed_bytes() -> None:
    assert hash_update(0, "") == 0
    assert hash_update(0, "A") == 65
    assert hash_update(0, "AB") == (65 << 2) + 66
    assert hash_update(0xC0000000, "") == 0xC0000000
    assert hash_update(0xC0000000, "a") == 0x00000003 + 97  # the two top bits rotate into the bottom
    # Bytes above 127 are added as negative (signed char): "é" is 0xC3 0xA9 in UTF-8.
    assert hash_update(0, "\u00e9") == 0xFFFFFEB8  # 0 - 61 = 0xFFFFFFC3, rotated 0xFFFFFF0F, - 87
    assert pair_hash("key", "val") == hash_update(0, "keyval")
    assert format_hash(0x0000ABCD) == "ABCD" and format_hash(0x60567C1B) == "60567C1B"


# ---------------------------------------------------------------------------------------------- reference run


def test_phase_values_of_the_reference_run_give_its_md_bw_and_score(ref_result: ResultFile) -> None:
    stated = ref_result.score_values()
    assert stated is not None
    scores, valid, stated_hash = stated
    computed = compute_scores(ref_result.phase_scores())
    assert format_number(computed.md) == "406.206294"
    assert format_number(computed.bw) == "2.508840"
    # result.txt prints the phase scores with six decimals; the app computed SCORE from the unrounded values,
    # so from the printed ones SCORE can differ in the sixth decimal (here 31.923447 against 31.923448).
    assert math.isclose(computed.score, scores.score, abs_tol=2e-6)
    assert not valid and stated_hash == "60567C1B"


def test_score_hash_of_the_reference_run(ref_result: ResultFile) -> None:
    run_section = ref_result.section("SCORE")
    assert run_section is not None
    phases = [(name, ref_result.section(name).get("score")) for name in SCORED_STANDARD]  # type: ignore[union-attr]
    md, bw = run_section.get("MD"), run_section.get("BW")
    total = run_section.get("SCORE").split()[0]  # type: ignore[union-attr]
    assert format_hash(score_hash(VERSION, phases, md, bw, total, valid=False)) == "60567C1B"  # type: ignore[arg-type]
    assert format_hash(score_hash(VERSION, phases, md, bw, total, valid=True)) != "60567C1B"  # type: ignore[arg-type]
    # The unscored ior-rnd4K-easy-read is not part of the hash.
    rnd = ("ior-rnd4K-easy-read", "3.900484")
    assert format_hash(score_hash(VERSION, [*phases, rnd], md, bw, total, valid=False)) != "60567C1B"  # type: ignore[arg-type]
    again = rescore(ref_result)
    assert format_hash(again.hash_from_text) == again.stated_hash == "60567C1B"
    assert again.stated_valid is False


def test_evaluating_the_reference_phases_reproduces_md_bw_validity_and_hash(ref_result: ResultFile) -> None:
    cfg = parse_config((REF / "config-quick.ini").read_bytes())
    ev = evaluate(_reference_outcomes(ref_result), RunRules.from_config(cfg), VERSION)
    assert not ev.valid
    assert format_number(ev.scores.md) == "406.206294" and format_number(ev.scores.bw) == "2.508840"
    # The same hash the app would print for SCORE = 31.923447 (what the rounded inputs give).
    expected = score_hash(
        VERSION, [(n, ref_result.phase_scores()[n]) for n in SCORED_STANDARD], ev.scores.md, ev.scores.bw,
        ev.scores.score, valid=False,
    )  # fmt: skip
    assert ev.hash == expected
    invalid = {v.spec.name: v.reasons for v in ev.phases if not v.valid}
    assert set(invalid) == {"ior-easy-write", "mdtest-easy-write", "ior-hard-write", "mdtest-hard-write"}
    assert ev.validate_reasons == ["stonewall-time 5s != 300s"]


def test_result_txt_written_from_the_reference_phases_matches_the_apps_file(
    ref: Path, ref_result: ResultFile
) -> None:
    cfg = load_config(ref / "config-quick.ini")
    ev = evaluate(_reference_outcomes(ref_result), RunRules.from_config(cfg), VERSION)
    start, end = _comment_time(ref_result, "START"), _comment_time(ref_result, "END")
    ours = build_result(ev, cfg, procs=2, result_dir="./results", start=start, end=end).render()
    theirs = (ref / "result.txt").read_text()
    # Everything but SCORE and its hash (computed from unrounded phase values by the app) is byte-equal.
    assert _mask_total(ours) == _mask_total(theirs)
    summary = build_summary(ev).render()
    assert _mask_total(summary) == _mask_total((ref / "result_summary.txt").read_text())


def test_reference_result_files_read_and_write_back_byte_for_byte(ref: Path) -> None:
    text = (ref / "result.txt").read_text()
    assert parse_result(text).render() == text
    summary = (ref / "result_summary.txt").read_text()
    parsed = parse_summary(summary)
    assert parsed.render() == summary
    assert parsed.version == VERSION and parsed.mode == "standard"
    assert [p.name for p in parsed.phases if not p.scored] == ["timestamp", "ior-rnd4K-easy-read"]
    assert parsed.score is not None and not parsed.score.valid and parsed.score.total == "31.923448"


def test_reference_result_accessors(ref_result: ResultFile) -> None:
    assert ref_result.procs == 2 and ref_result.version == VERSION and ref_result.mode == "standard"
    assert ref_result.config_hash == "D9E23945"
    easy = ref_result.section("ior-easy-write")
    assert easy is not None and easy.score == 1.810145
    assert easy.invalid_reasons[0].startswith("Write phase needed 2.209768s instead of stonewall 5s")
    assert ref_result.section("find").get("total-files") == "1843987"  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------------- verify


def test_verify_accepts_the_reference_result_as_an_invalid_run(ref: Path) -> None:
    report = verify(ref / "config-quick.ini", ref / "result.txt")
    assert report.ok and report.config_ok and report.score_ok and not report.valid_run
    assert report.status == "OK, but this is an invalid run"
    assert report.exit_code == 1  # io500-verify exits 1 for an invalid run too
    assert "[OK] But this is an invalid run!" in report.render()
    # config.ini (the filled-in copy the app writes) verifies the same run.
    assert verify(ref / "config.ini", ref / "result.txt").ok


def test_verify_rejects_a_tampered_phase_value(ref: Path, tmp_path: Path) -> None:
    text = (ref / "result.txt").read_text()
    assert text.count("score           = 808.321295\n") == 1
    (tmp_path / "result.txt").write_text(text.replace("= 808.321295\n", "= 808.321296\n"))
    report = verify(ref / "config-quick.ini", tmp_path / "result.txt")
    assert report.config_ok and not report.score_ok and not report.ok
    assert report.status == "invalid: hash mismatch" and report.exit_code == 1
    assert 'ERROR: Score hash expected: "' in report.render()


def test_verify_rejects_a_result_that_claims_validity(ref: Path, tmp_path: Path) -> None:
    text = (ref / "result.txt").read_text().replace("31.923448 [INVALID]", "31.923448")
    (tmp_path / "result.txt").write_text(text)
    assert verify(ref / "config-quick.ini", tmp_path / "result.txt").ok  # [INVALID] is not hashed: the
    # marker is informational; validity is carried by the hash, which still says invalid:
    assert not verify(ref / "config-quick.ini", tmp_path / "result.txt").valid_run


def test_verify_ignores_the_unscored_phase_and_rejects_another_config(ref: Path, tmp_path: Path) -> None:
    text = (ref / "result.txt").read_text().replace("= 3.900484\n", "= 9.999999\n")
    (tmp_path / "result.txt").write_text(text)
    assert verify(ref / "config-quick.ini", tmp_path / "result.txt").ok
    other = (ref / "config-quick.ini").read_text().replace("n = 1000000", "n = 999999", 1)
    (tmp_path / "other.ini").write_text(other)
    report = verify(tmp_path / "other.ini", ref / "result.txt")
    assert not report.config_ok and not report.ok
    assert "ERROR: Configuration hash expected:" in report.render()


# ------------------------------------------------------------------------------------------ scores and rules


def test_units() -> None:
    assert ior_score(10 * 2**30, 10.0) == 1.0
    assert md_score(5000, 2.0) == 2.5
    assert ior_score(1, 0.0) == 0.0


def test_geometric_means_leave_out_phases_without_a_positive_score() -> None:
    scores = {"ior-easy-write": 4.0, "ior-hard-write": 1.0, "ior-easy-read": 0.0, "mdtest-easy-write": 9.0}
    sc = compute_scores(scores)
    assert sc.bw == pytest.approx(2.0) and sc.md == pytest.approx(9.0)
    assert sc.score == pytest.approx(math.sqrt(18.0))
    assert compute_scores({"ior-easy-write": 1.0}).score == 0.0  # no MD phase at all: MD 0, SCORE 0
    # Extended-only phases count in the extended score only.
    ext = {"mdtest-easy-write": 1.0, "find-easy": 100.0}
    assert compute_scores(ext).md == 1.0 and compute_scores(ext, extended=True).md == pytest.approx(10.0)


def _valid_outcomes(mode: str = "standard") -> list[PhaseOutcome]:
    out = []
    for i, name in enumerate(_names(mode)):
        o = PhaseOutcome(name, score=1.0 + i, runtime_s=310.0 if "write" in name else 20.0)
        if name in ("ior-easy-write", "ior-hard-write"):
            o.write_time_s, o.stonewall_hit_s = 305.0, 300.0
        if name.startswith("find"):
            o.found = 10
        if name == "mdworkbench-bench":
            o.iterations = 2
        if name == "timestamp":
            o.score = 0.0
        out.append(o)
    return out


def _names(mode: str) -> list[str]:
    from iolens.io500.spec import runnable_phases

    return [p.name for p in runnable_phases(mode)]


def test_a_run_that_follows_the_rules_is_valid_and_verifies_ok(tmp_path: Path) -> None:
    cfg = parse_config("[global]\ndatadir = /scratch/io500\n", str(tmp_path / "c.ini"))
    (tmp_path / "c.ini").write_bytes(cfg.source)
    ev = evaluate(_valid_outcomes(), RunRules.from_config(cfg), "iolens-test")
    assert ev.valid and ev.reasons == []
    write_result_dir(
        tmp_path / "res", cfg, ev, procs=4, start=datetime(2024, 1, 1), end=datetime(2024, 1, 1, 1)
    )
    report = verify(tmp_path / "c.ini", tmp_path / "res" / "result.txt")
    assert report.ok and report.valid_run and report.exit_code == 0 and report.status == "OK"
    assert report.render().endswith("\n[OK]\n")
    written = read_result(tmp_path / "res" / "result.txt")
    assert written.procs == 4 and written.mode == "standard"
    assert "[INVALID]" not in (tmp_path / "res" / "result_summary.txt").read_text()
    assert read_summary(tmp_path / "res" / "result_summary.txt").render() == build_summary(ev).render()
    assert (tmp_path / "res" / "config.ini").read_text() == cfg.render()


@pytest.mark.parametrize(
    ("change", "where", "reason"),
    [
        ({"stonewall": 5}, "[run]", "stonewall-time 5s != 300s"),
        ({"dry_run": True}, "[run]", "DRY RUN MODE ACTIVATED"),
        ({"pause_dir": True}, "[run]", "PAUSING BETWEEN RUNS ACTIVATED"),
        ({"files_per_dir": True}, "[run]", "files-per-dir is set"),
        ({"minwrite": 30}, "[run]", "stonewall-time 300s != 30s"),  # scc rules with a 300 s stonewall
    ],
)
def test_run_wide_rules(change: dict[str, object], where: str, reason: str) -> None:
    ev = evaluate(_valid_outcomes(), RunRules(**change), "v")  # type: ignore[arg-type]
    assert not ev.valid
    assert f"{where} {reason}" in ev.reasons


def _with(name: str, **fields: object) -> list[PhaseOutcome]:
    outcomes = _valid_outcomes()
    for o in outcomes:
        if o.name == name:
            for k, v in fields.items():
                setattr(o, k, v)
    return outcomes


@pytest.mark.parametrize(
    ("name", "fields", "reason"),
    [
        ("ior-easy-write", {"write_time_s": 120.5, "stonewall_hit_s": 118.0},
         "Write phase needed 120.500000s instead of stonewall 300s. Stonewall was hit at 118.0s"),
        ("ior-hard-write", {"runtime_s": 250.0},
         "Runtime of phase (250.000000) is below stonewall time. This shouldn't happen!"),
        ("mdtest-hard-write", {"runtime_s": 299.0}, "Runtime is smaller than expected minimum runtime"),
        ("ior-easy-read", {"errors": 3},
         "Errors (3) occured during phase in IOR. This invalidates your run."),
        ("mdtest-hard-read", {"errors": 1},
         "Errors (1) occured during phase in mdtest. This invalidates your run."),
        ("find", {"found": 0}, "Find didn't find anything, this is likely invalid."),
        ("find", {"find_failed": True}, "PFind returned with an error, this is invalid."),
        ("mdtest-easy-stat", {"score": 0.0}, "Resulting score shouldn't be 0.0"),
    ],
)  # fmt: skip
def test_phase_rules(name: str, fields: dict[str, object], reason: str) -> None:
    ev = evaluate(_with(name, **fields), RunRules(), "v")
    assert not ev.valid
    assert f"[{name}] {reason}" in ev.reasons
    bad = [v for v in ev.phases if not v.valid]
    assert [v.spec.name for v in bad] == [name]


def test_the_unscored_phase_still_decides_validity() -> None:
    ev = evaluate(_with("ior-rnd4K-easy-read", errors=2), RunRules(), "v")
    assert not ev.valid


def test_dry_run_skips_the_runtime_and_zero_score_checks_but_not_the_minimum_runtime() -> None:
    outcomes = [PhaseOutcome(n, score=0.0, runtime_s=0.01) for n in _names("standard")]
    ev = evaluate(outcomes, RunRules(dry_run=True), "v")
    easy = next(v for v in ev.phases if v.spec.name == "ior-easy-write")
    assert easy.check_reasons == ["Runtime is smaller than expected minimum runtime"]
    assert next(v for v in ev.phases if v.spec.name == "find").valid
    assert ev.scores.score == 0.0


def test_extended_mode_scores_and_hashes_the_extended_phases_apart(tmp_path: Path) -> None:
    outcomes = _valid_outcomes("extended")
    bench = next(o for o in outcomes if o.name == "mdworkbench-bench")
    bench.iterations = 1
    ev = evaluate(outcomes, RunRules(), "v", mode="extended")
    assert ev.valid  # an extended-only phase does not invalidate the standard run ...
    assert ev.extended_valid is False  # ... only the extended one
    assert ev.extended_scores is not None and ev.extended_scores.md != ev.scores.md
    std = evaluate([o for o in outcomes if o.name in _names("standard")], RunRules(), "v")
    assert ev.scores == std.scores and ev.hash == std.hash
    cfg = parse_config("")
    (tmp_path / "c.ini").write_bytes(b"")
    write_result_dir(tmp_path / "r", cfg, ev, procs=1)
    result = read_result(tmp_path / "r" / "result.txt")
    assert [s.name for s in result.sections][-2:] == ["SCORE", "SCOREX"]
    x = result.score_values(extended=True)
    assert x is not None and x[1] is False and x[2] == format_hash(ev.extended_hash or 0)
    summary = (tmp_path / "r" / "result_summary.txt").read_text().splitlines()
    assert summary[-1].startswith("[SCOREX] Bandwidth ") and summary[-1].endswith(" [INVALID]")
    assert "(extended)" in summary[0]
    # io500-verify checks [SCORE] only; extended-only phase scores are not in that hash.
    assert verify(tmp_path / "c.ini", tmp_path / "r" / "result.txt").exit_code == 0


def _extended_hash_from_file(result: ResultFile, valid: bool) -> int:
    """[SCOREX]'s hash recomputed from the printed figures: the extended-only phases, MD, BW, SCORE."""
    x = result.section("SCOREX")
    assert x is not None
    value = 0
    for name in ("find-easy", "find-hard", "mdworkbench-bench"):
        section = result.section(name)
        assert section is not None
        value ^= pair_hash(name, section.get("score") or "")
    for key in ("MD", "BW"):
        value ^= pair_hash(key, x.get(key) or "")
    value ^= pair_hash("SCORE", (x.get("SCORE") or "").split()[0])
    return value if valid else value ^ pair_hash("valid", "NO")


@pytest.mark.parametrize(
    ("ini", "reason"),
    [
        ("[debug]\nstonewall-time = 400\n", "stonewall-time 400s != 300s"),
        ("[mdtest-hard]\nfiles-per-dir = 5000\n", "files-per-dir is set"),
    ],
)
def test_run_wide_checks_invalidate_score_but_not_scorex(tmp_path: Path, ini: str, reason: str) -> None:
    # The app clears its extended flag only after an invalid phase (main.c: !is_valid_phase); the option
    # checks of validate() clear the standard one. Every phase here passes its own checks (writes of 410 s).
    cfg = parse_config(ini, str(tmp_path / "c.ini"))
    (tmp_path / "c.ini").write_bytes(cfg.source)
    outcomes = _valid_outcomes("extended")
    for o in outcomes:
        if "write" in o.name:
            o.runtime_s = 410.0
        if o.name in ("ior-easy-write", "ior-hard-write"):
            o.write_time_s, o.stonewall_hit_s = 405.0, 400.0
    ev = evaluate(outcomes, RunRules.from_config(cfg), "v", mode="extended")
    assert not ev.valid and ev.reasons == [f"[run] {reason}"]
    assert all(v.valid for v in ev.phases)
    assert ev.extended_valid is True
    write_result_dir(tmp_path / "r", cfg, ev, procs=2)
    result = read_result(tmp_path / "r" / "result.txt")
    std, ext = result.score_values(), result.score_values(extended=True)
    assert std is not None and std[1] is False
    assert ext is not None and ext[1] is True  # no " [INVALID]" after [SCOREX] SCORE
    assert ext[2] == format_hash(_extended_hash_from_file(result, valid=True))
    summary = (tmp_path / "r" / "result_summary.txt").read_text().splitlines()
    assert summary[-2].startswith("[SCORE ] ") and summary[-2].endswith(" [INVALID]")
    assert summary[-1].startswith("[SCOREX] ") and not summary[-1].endswith("[INVALID]")
    # The same phases under a 300 s stonewall give the same extended hash: the option did not enter it.
    ok = evaluate(outcomes, RunRules(), "v", mode="extended")
    assert ok.valid and ok.extended_hash == ev.extended_hash and ok.hash != ev.hash
    report = verify(tmp_path / "c.ini", tmp_path / "r" / "result.txt")
    assert report.ok and not report.valid_run


def test_an_invalid_standard_phase_invalidates_scorex_too(tmp_path: Path) -> None:
    outcomes = _valid_outcomes("extended")
    next(o for o in outcomes if o.name == "ior-easy-read").errors = 2
    ev = evaluate(outcomes, RunRules(), "v", mode="extended")
    assert not ev.valid and ev.extended_valid is False
    write_result_dir(tmp_path / "r", parse_config(""), ev, procs=1)
    result = read_result(tmp_path / "r" / "result.txt")
    ext = result.score_values(extended=True)
    assert ext is not None and ext[1] is False
    assert ext[2] == format_hash(_extended_hash_from_file(result, valid=False))


def test_evaluate_rejects_phases_of_the_other_mode_and_duplicates() -> None:
    with pytest.raises(ValueError, match="does not run in standard mode"):
        evaluate([PhaseOutcome("find-easy", 1.0, 1.0)], RunRules(), "v")
    with pytest.raises(ValueError, match="given twice"):
        evaluate([PhaseOutcome("find", 1.0, 1.0)] * 2, RunRules(), "v")


# ---------------------------------------------------------------------------------------------------- helpers

_SETUP_KEYS = {"exe", "nproc", "filesPerProc", "precreatePerSet"}
_MAIN_KEYS = {"t_start", "score", "t_delta", "t_end"}


def _reference_outcomes(result: ResultFile) -> list[PhaseOutcome]:
    """Phase outcomes that reproduce the reference run: its scores, runtimes, timestamps and extra lines."""
    summary = {p.name: p for p in read_summary(REF / "result_summary.txt").phases}
    outcomes = []
    for s in result.phases:
        o = PhaseOutcome(s.name, score=float(s.get("score") or 0.0), runtime_s=0.0)
        o.runtime_s = _runtime(s.get("t_delta") or "0", summary[s.name].time)
        o.t_start = datetime.strptime(s.get("t_start") or "", TIMESTAMP_FORMAT)
        o.t_end = datetime.strptime(s.get("t_end") or "", TIMESTAMP_FORMAT)
        for line in s.lines:
            if isinstance(line, Pair) and line.key not in _MAIN_KEYS:
                (o.setup_lines if line.key in _SETUP_KEYS else o.result_lines).append((line.key, line.value))
            if isinstance(line, Comment) and line.text.startswith("ERROR INVALID Runtime of phase ("):
                o.runtime_s = float(
                    line.text.split("(")[1].split(")")[0]
                )  # the exact runtime the app printed
            if isinstance(line, Comment) and line.text.startswith("ERROR INVALID Write phase needed "):
                words = line.text.split()
                o.write_time_s = float(words[5].rstrip("s"))
                o.stonewall_hit_s = float(words[-1].rstrip("s"))
        if s.name == "find":
            o.found = int(s.get("found") or 0)
        outcomes.append(o)
    return outcomes


def _runtime(t_delta: str, summary_time: str) -> float:
    """A runtime that prints as both t_delta ("%.4f") and the summary's time ("%.3f")."""
    low = max(float(t_delta) - 0.00005, float(summary_time) - 0.0005)
    high = min(float(t_delta) + 0.00005, float(summary_time) + 0.0005)
    value = (low + high) / 2
    assert f"{value:.4f}" == t_delta and f"{value:.3f}" == summary_time
    return value


def _comment_time(result: ResultFile, word: str) -> datetime:
    for s in result.sections:
        for line in s.lines:
            if isinstance(line, Comment) and line.text.startswith(word + " "):
                return datetime.strptime(line.text[len(word) + 1 :], TIMESTAMP_FORMAT)
    raise AssertionError(f"no {word} line")


def _mask_total(text: str) -> str:
    out = []
    for line in text.splitlines():
        if line.startswith(("SCORE ", "hash ")):
            line = line.split("=")[0] + "= <masked>"
        elif line.startswith("[SCORE ]"):
            line = line.split(" : TOTAL ")[0]
        out.append(line)
    return "\n".join(out)


def test_helpers_do_not_touch_the_reference_directory(ref: Path, tmp_path: Path) -> None:
    # The reference files are read-only inputs; everything above writes to tmp_path only.
    shutil.copy(ref / "result.txt", tmp_path / "copy.txt")
    assert (tmp_path / "copy.txt").read_bytes() == (ref / "result.txt").read_bytes()
