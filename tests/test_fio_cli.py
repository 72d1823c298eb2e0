"""`iolens fio` without the engine: which arguments are iolens's and which go to the engine untouched, and the
whole command driven through a stand-in engine (IOLENS_BENCH) that follows the engine's contract and "writes"
the synthetic document of test_fio_model."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from iolens import cli

from .ior_helpers import stand_in_engine
from .test_fio_model import KiB4, sample_fio_document

# --- the argument split ------------------------------------------------------------------------------------


def _split(argv: list[str]) -> cli.RunOptions:
    return cli.split_args(argv, cli.FIO_VALUED)


def test_fio_options_go_to_the_engine_exactly_as_typed() -> None:
    argv = [
        "--name=rr", "--rw=randread", "--np", "2", "--bs=4k", "--output-format=json", "--iodepth=32",
        "--output", "out.json", "jobs.fio", "--per-second-log=sec.csv", "--json", "doc.json", "--no-live",
        "--filename=/x/--np", "--size", "1g",
    ]  # fmt: skip
    opts = _split(argv)
    assert opts.engine_args == [
        "--name=rr", "--rw=randread", "--bs=4k", "--iodepth=32", "jobs.fio", "--filename=/x/--np",
        "--size", "1g",
    ]  # fmt: skip
    assert opts.np == 2 and opts.json == Path("doc.json") and not opts.live
    assert opts.extra == {"--output-format": "json", "--output": "out.json", "--per-second-log": "sec.csv"}


def test_only_exact_names_are_iolens_options() -> None:
    argv = ["--output-form=json", "--outputs=x", "--np2", "--json-file=x", "--per-second=x", "--nodes-x=1"]
    opts = _split(argv)
    assert opts.engine_args == argv and opts.extra == {} and opts.np == 1 and opts.json is None


def test_fio_output_options_are_fios_only() -> None:
    # For ior, --output-format is the engine's business, as before.
    opts = cli.split_args(["-w", "--output-format=json", "--output", "x"])
    assert opts.engine_args == ["-w", "--output-format=json", "--output", "x"] and opts.extra == {}


def test_values_that_look_like_options_stay_values() -> None:
    opts = _split(["--launcher-args", "--output=x --np 3", "--output", "--rw=read", "--name=a"])
    assert opts.launcher_args == ["--output=x", "--np", "3"] and opts.np == 1
    assert opts.extra == {"--output": "--rw=read"} and opts.engine_args == ["--name=a"]


def test_double_dash_passes_the_rest_even_our_names() -> None:
    opts = _split(["--output-format=json", "--", "--output-format=terse", "--np", "3"])
    assert opts.extra == {"--output-format": "json"}
    assert opts.engine_args == ["--output-format=terse", "--np", "3"]


def test_output_options_are_checked(tmp_path: Path) -> None:
    out = cli.fio_output(_split([f"--output={tmp_path}/o.json", "--output-format", "json+"]))
    assert out == cli.FioOutput("json+", tmp_path / "o.json", None)
    assert cli.fio_output(_split([])) == cli.FioOutput()
    for argv, message in [
        (["--output-format=terse"], r"--output-format: expected one of normal, json, json\+, got 'terse'"),
        (["--output-format=json,normal"], "--output-format: expected one of"),
        ([f"--output={tmp_path}/nowhere/o.json"], "--output: directory .*nowhere does not exist"),
        ([f"--per-second-log={tmp_path}"], "--per-second-log: .* is a directory"),
        (["--output="], "--output: expects a file name"),
    ]:
        with pytest.raises(cli.UsageError, match=message):
            cli.fio_output(_split(argv))
    with pytest.raises(cli.UsageError, match="--per-second-log: expects a value"):
        _split(["--name=a", "--per-second-log"])


def test_fio_is_a_command() -> None:
    assert "fio" in cli.WORKLOADS and "iolens fio JOBFILE" in cli.USAGE


# --- the whole command, with a stand-in engine -------------------------------------------------------------

FAKE_ENGINE = r'''#!{python}
"""Stand-in for iolens-bench fio: follows the engine's command-line contract, does no I/O."""
import json, os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(args) + "\n")
if args[1:] == ["--help"]:
    print("  --rw=MODE                  read, write, randread, randwrite, rw, randrw")
    sys.exit(0)
if "--bs=0" in args:
    print("iolens-bench: error: --bs: must be at least 1 byte", file=sys.stderr)
    sys.exit(2)
if "--check" in args:
    sys.exit(0)
print('IOLENS-PROGRESS {"phase": "randrw", "elapsed_s": 0.5, "bytes": 4096, "bw_bytes_per_s": 8192.0, '
      '"estimate": true}', file=sys.stderr)
out = args[args.index("--json") + 1]
shutil.copyfile(os.environ["FAKE_DOC"], out + ".tmp")
os.replace(out + ".tmp", out)
if os.environ.get("FAKE_ERROR"):
    print("iolens-bench: error: " + os.environ["FAKE_ERROR"], file=sys.stderr)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
'''


@pytest.fixture
def fake_fio(tmp_path: Path) -> dict[str, str]:
    return stand_in_engine(tmp_path, FAKE_ENGINE, sample_fio_document())


def _iolens(iolens_bin: list[str], args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*iolens_bin, *args], capture_output=True, text=True, timeout=120, env=env)


def _calls(env: dict[str, str]) -> list[list[str]]:
    log = Path(env["FAKE_LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _with_doc(env: dict[str, str], tmp_path: Path, doc: dict[str, Any], **more: str) -> dict[str, str]:
    path = tmp_path / "other-doc.json"
    path.write_text(json.dumps(doc))
    return dict(env, FAKE_DOC=str(path), **more)


def test_fio_prints_fios_report(iolens_bin: list[str], fake_fio: dict[str, str], tmp_path: Path) -> None:
    native = tmp_path / "native.json"
    args = ["fio", "--name=randrw", "--rw=randrw", "--bs=4k", "--np", "2", "--json", str(native)]
    proc = _iolens(iolens_bin, args, fake_fio)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert "  read: IOPS=100, BW=400KiB/s (410kB/s)(4000KiB/10000msec)" in lines
    assert "    clat percentiles (usec):" in lines and "Run status group 1 (all jobs):" in lines
    assert "warning: cache" in proc.stdout
    assert "IOLENS-PROGRESS" not in proc.stdout + proc.stderr
    # --json keeps the engine's own document, not the fio-shaped one: with the command as typed (the engine's
    # own as engine_command).
    kept = json.loads(native.read_text())
    engine_doc = sample_fio_document()
    assert kept.pop("command") == ["iolens", *args]
    assert kept.pop("engine_command") == engine_doc.pop("command")
    assert kept == engine_doc
    argv = _calls(fake_fio)[-1]
    assert argv[:4] == ["fio", "--name=randrw", "--rw=randrw", "--bs=4k"] and argv[4] == "--json"
    assert {"--progress", "--quiet"} <= set(argv) and argv[-2:] == ["--np", "2"]


def test_fio_json_goes_to_standard_output(iolens_bin: list[str], fake_fio: dict[str, str]) -> None:
    proc = _iolens(iolens_bin, ["fio", "jobs.fio", "--output-format=json"], fake_fio)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)  # nothing but the JSON
    assert out["fio version"] == "iolens-0.1.0"
    assert out["jobs"][0]["read"]["iops"] == pytest.approx(240 / 10.0)
    assert out["jobs"][4]["read"]["clat_ns"]["percentile"]["99.000000"] == 2_007_039
    assert "bins" not in out["jobs"][4]["read"]["clat_ns"]
    assert _calls(fake_fio)[-1][:2] == ["fio", "jobs.fio"]
    assert "--output-format=json" not in _calls(fake_fio)[-1]


def test_fio_json_plus_has_bins(iolens_bin: list[str], fake_fio: dict[str, str]) -> None:
    proc = _iolens(iolens_bin, ["fio", "jobs.fio", "--output-format", "json+"], fake_fio)
    assert proc.returncode == 0, proc.stderr
    bins = json.loads(proc.stdout)["jobs"][4]["read"]["clat_ns"]["bins"]
    assert sum(bins.values()) == 2048


def test_fio_output_file_takes_the_output(
    iolens_bin: list[str], fake_fio: dict[str, str], tmp_path: Path
) -> None:
    target = tmp_path / "fio.json"
    proc = _iolens(iolens_bin, ["fio", "jobs.fio", "--output-format=json", f"--output={target}"], fake_fio)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and json.loads(target.read_text())["jobs"][4]["jobname"] == "seqread"
    report = tmp_path / "fio.txt"
    proc = _iolens(iolens_bin, ["fio", "jobs.fio", "--output", str(report)], fake_fio)
    assert proc.returncode == 0, proc.stderr
    text = report.read_text()
    assert proc.stdout == "" and "Run status group 0 (all jobs):" in text and "\x1b[" not in text
    assert not any(p.name.endswith(".tmp") for p in tmp_path.iterdir())


def test_per_second_log_is_written(iolens_bin: list[str], fake_fio: dict[str, str], tmp_path: Path) -> None:
    log = tmp_path / "sec.csv"
    args = ["fio", "jobs.fio", "--per-second-log", str(log), "--output-format=json"]
    proc = _iolens(iolens_bin, args, fake_fio)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(log.read_text())))
    assert len(rows) == 24 and rows[0]["job"] == "randrw" and rows[-1]["job"] == "seqread"
    written = sum(int(r["bytes"]) for r in rows if r["job"] == "randrw" and r["direction"] == "write")
    assert written == 500 * KiB4
    assert "--per-second-log" not in " ".join(_calls(fake_fio)[-1])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--output-format=terse"], "iolens: error: --output-format: expected one of normal, json, json+"),
        (["--output=/nonexistent-dir/x.json"], "iolens: error: --output: directory /nonexistent-dir"),
        (["--per-second-log"], "iolens: error: --per-second-log: expects a value"),
        (["--np", "0"], "iolens: error: --np: expected a positive integer, got '0'"),
    ],
)
def test_bad_iolens_options_exit_2_before_the_engine_runs(
    iolens_bin: list[str], fake_fio: dict[str, str], args: list[str], message: str
) -> None:
    proc = _iolens(iolens_bin, ["fio", "--name=a", "--rw=read", *args], fake_fio)
    assert proc.returncode == 2 and proc.stderr.startswith(message) and len(proc.stderr.splitlines()) == 1
    assert _calls(fake_fio) == []


def test_bad_engine_option_is_one_clean_error(iolens_bin: list[str], fake_fio: dict[str, str]) -> None:
    proc = _iolens(iolens_bin, ["fio", "--name=a", "--rw=read", "--bs=0"], fake_fio)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "iolens: error: --bs: must be at least 1 byte"


def test_verification_errors_fail_the_run(
    iolens_bin: list[str], fake_fio: dict[str, str], tmp_path: Path
) -> None:
    doc = sample_fio_document()
    doc["fio"]["jobs"][1]["verify"].update(errors=2, first_bad_offset=4096, first_bad_file="/scratch/fio/f")
    proc = _iolens(iolens_bin, ["fio", "jobs.fio"], _with_doc(fake_fio, tmp_path, doc))
    assert proc.returncode == 1
    assert "VERIFICATION FAILED" in proc.stdout and "first at offset 4096 of /scratch/fio/f" in proc.stdout


def test_failed_run_in_json_says_why_on_both_sides(
    iolens_bin: list[str], fake_fio: dict[str, str], tmp_path: Path
) -> None:
    failed = {
        "schema_version": 1, "tool": "iolens", "version": "0.1.0", "workload": "fio", "status": "failed",
        "error": {"message": "randrw: No space left on device", "rank": 1, "phase": "randrw"},
    }  # fmt: skip
    env = _with_doc(fake_fio, tmp_path, failed, FAKE_EXIT="1", FAKE_ERROR="randrw: No space left on device")
    proc = _iolens(iolens_bin, ["fio", "jobs.fio", "--output-format=json"], env)
    assert proc.returncode == 1
    out = json.loads(proc.stdout)
    assert out["iolens"]["status"] == "failed" and out["jobs"] == []
    # Said once, though both the document and the engine's standard error carry it.
    assert proc.stderr.count("No space left on device") == 1 and "Traceback" not in proc.stderr
    proc = _iolens(iolens_bin, ["fio", "jobs.fio"], env)
    assert proc.returncode == 1 and "run failed" in proc.stdout and "No space left on device" in proc.stdout


def test_broken_document_is_an_error_not_a_traceback(
    iolens_bin: list[str], fake_fio: dict[str, str], tmp_path: Path
) -> None:
    doc = sample_fio_document()
    doc["fio"]["jobs"][0]["read"]["clat_ns"]["buckets"].pop()
    env = _with_doc(fake_fio, tmp_path, doc)
    proc = _iolens(iolens_bin, ["fio", "jobs.fio", "--output-format=json"], env)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "iolens: error:" in proc.stderr and "buckets: hold 999 values" in proc.stderr
    assert "Traceback" not in proc.stderr
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(sample_fio_document())[:5000])
    proc = _iolens(iolens_bin, ["fio", "jobs.fio"], dict(fake_fio, FAKE_DOC=str(cut)))
    assert proc.returncode == 1 and "truncated" in proc.stderr and "Traceback" not in proc.stderr


def test_help_lists_fio_output_options_then_the_engines(
    iolens_bin: list[str], fake_fio: dict[str, str]
) -> None:
    proc = _iolens(iolens_bin, ["fio", "--help"], fake_fio)
    assert proc.returncode == 0
    out = proc.stdout
    assert "--output-format=F" in out and "--per-second-log FILE" in out and "--launcher" in out
    engine_part = out.index("fio options (from iolens-bench):")
    assert out.index("--per-second-log") < engine_part < out.index("--rw=MODE  ")
    proc = _iolens(iolens_bin, ["--help"], fake_fio)
    assert proc.returncode == 0 and "fio" in proc.stdout and "iolens fio JOBFILE" in proc.stdout


def test_check_validates_without_running(iolens_bin: list[str], fake_fio: dict[str, str]) -> None:
    proc = _iolens(iolens_bin, ["fio", "--name=a", "--rw=read", "--np", "4", "--check"], fake_fio)
    assert proc.returncode == 0 and "fio options ok" in proc.stdout
    assert _calls(fake_fio)[-1] == ["fio", "--name=a", "--rw=read", "--np", "4", "--comm", "local", "--check"]
