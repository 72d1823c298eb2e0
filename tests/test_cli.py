"""The Python side, mostly without the real engine: the result model, command construction, the CLI driven
through a stand-in engine (IOLENS_BENCH) that behaves as the engine's contract says, and the live line (also
from the real engine's progress lines)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from iolens import __version__, cli, launch, render, results

from .conftest import REPO
from .ior_helpers import assert_only_canary_left, place_canary, stand_in_engine

# --- results.py ----------------------------------------------------------------------------------------


def test_valid_document_becomes_typed_model(sample_doc: dict[str, Any]) -> None:
    doc = results.parse(sample_doc)
    assert doc.ok and doc.error is None
    assert doc.comm.ranks == 2 and doc.target.file_system == "ext4"
    assert [p.name for p in doc.phases] == ["write", "read"]
    write = doc.phases[0]
    assert write.bytes == 128 * 1024 * 1024 and write.ops == 128
    assert write.times.total_s == pytest.approx(0.261)
    assert write.latency_ns.p99 == 1_900_000 and len(write.latency_ns.buckets) == 3
    assert sum(b.count for b in write.latency_ns.buckets) == write.latency_ns.count
    assert write.verify is not None and write.verify.errors == 0
    assert doc.phases[1].cache.evicted is True and not doc.phases[1].cache.may_be_cache_figure
    assert doc.summary[1].name == "read" and doc.summary[1].latency_ns.buckets == ()
    assert doc.config["transfer-size"] == 1048576


def test_document_file_round_trips(sample_doc: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(sample_doc))
    assert results.load(path).phases[1].bytes == sample_doc["phases"][1]["bytes"]


def test_truncated_document_is_refused_with_a_clear_error(sample_doc: dict[str, Any], tmp_path: Path) -> None:
    text = json.dumps(sample_doc, indent=1)
    path = tmp_path / "r.json"
    path.write_text(text[: len(text) // 2])
    with pytest.raises(results.ResultError, match=r"not valid JSON \(truncated\?\)"):
        results.load(path)


def test_empty_and_missing_documents_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("")
    with pytest.raises(results.ResultError, match="empty"):
        results.load(empty)
    with pytest.raises(results.ResultError, match="no such file"):
        results.load(tmp_path / "absent.json")


@pytest.mark.parametrize("version", [2, 0, "1", None, True])
def test_unknown_schema_version_is_refused(sample_doc: dict[str, Any], version: Any) -> None:
    sample_doc["schema_version"] = version
    with pytest.raises(results.ResultError, match="schema_version"):
        results.parse(sample_doc)


def test_missing_required_key_is_named_with_its_path(sample_doc: dict[str, Any]) -> None:
    del sample_doc["phases"][1]["times"]["xfer_s"]
    with pytest.raises(results.ResultError, match=r"phases\[1\]\.times\.xfer_s: missing"):
        results.parse(sample_doc)


def test_wrong_type_is_refused(sample_doc: dict[str, Any]) -> None:
    sample_doc["phases"][0]["bytes"] = "128"
    with pytest.raises(results.ResultError, match=r"phases\[0\]\.bytes: expected integer, got string"):
        results.parse(sample_doc)


def test_unknown_keys_are_tolerated(sample_doc: dict[str, Any]) -> None:
    sample_doc["future_section"] = {"x": 1}
    sample_doc["phases"][0]["stonewall"] = {
        "deadline_s": 1.0, "wear_out": True, "pairs_min": 10, "pairs_max": 12,
        "bytes_at_deadline": 22, "time_s": 1.01, "hit": True,
    }  # fmt: skip
    doc = results.parse(sample_doc)
    assert doc.phases[0].stonewall is not None and doc.phases[0].stonewall.pairs_max == 12


def test_failed_run_may_be_partial_but_needs_an_error() -> None:
    partial = {
        "schema_version": 1, "tool": "iolens", "workload": "ior", "status": "failed",
        "error": {"message": "write: No space left on device", "rank": 1, "phase": "write"},
    }  # fmt: skip
    doc = results.parse(partial)
    assert not doc.ok and doc.error is not None and doc.error.rank == 1 and doc.phases == ()
    partial["error"] = None
    with pytest.raises(results.ResultError, match="no error object"):
        results.parse(partial)


def test_cache_figure_is_recognised(sample_doc: dict[str, Any]) -> None:
    sample_doc["phases"][1]["cache"] = {"o_direct": False, "policy": "keep", "evicted": False, "note": "kept"}
    assert results.parse(sample_doc).phases[1].cache.may_be_cache_figure


# --- launch.py -----------------------------------------------------------------------------------------

ENGINE = "/opt/iolens/iolens-bench"
ARGS = ["-F", "-t", "1m", "-b", "64m", "-w", "-o", "/scratch/f"]


def test_local_command_forks_np_ranks() -> None:
    req = launch.RunRequest("ior", ARGS, np=4)
    assert launch.build_command(req, ENGINE) == [ENGINE, "ior", *ARGS, "--np", "4"]


def test_mpirun_command_puts_launcher_args_before_the_engine() -> None:
    req = launch.RunRequest("ior", ARGS, np=8, launcher="mpirun", launcher_args=["--bind-to", "core"])
    assert launch.build_command(req, ENGINE) == [
        "mpirun", "-np", "8", "--bind-to", "core", ENGINE, "ior", *ARGS, "--comm", "mpi",
    ]  # fmt: skip


def test_mpirun_spreads_ranks_over_nodes() -> None:
    req = launch.RunRequest("ior", ARGS, np=10, nodes=4, launcher="mpirun")
    cmd = launch.build_command(req, ENGINE)
    assert cmd[:5] == ["mpirun", "-np", "10", "--map-by", "ppr:3:node"]
    assert launch.build_command(req, ENGINE, mpi_flavor="mpich")[:5] == ["mpirun", "-np", "10", "-ppn", "3"]


def test_fio_ranks_are_not_bound_to_one_core_under_open_mpi() -> None:
    fio = launch.RunRequest("fio", ["--name=j"], np=2, launcher="mpirun")
    assert launch.build_command(fio, ENGINE)[:5] == ["mpirun", "-np", "2", "--bind-to", "none"]
    core = ["--bind-to", "core"]
    chosen = launch.RunRequest("fio", ["--name=j"], np=2, launcher="mpirun", launcher_args=core)
    assert launch.build_command(chosen, ENGINE).count("--bind-to") == 1


def _cpus_allowed_under(req: launch.RunRequest, env: dict[str, str]) -> set[str]:
    """What each rank of the request's launcher line may run on, as the kernel says."""
    cmd = [*launch.launcher_prefix(req), "grep", "-h", "Cpus_allowed_list", "/proc/self/status"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=True).stdout
    lines = [line for line in out.splitlines() if line.startswith("Cpus_allowed_list")]
    return {line.split(":", 1)[1].strip() for line in lines}


def test_a_fio_rank_may_use_every_cpu_an_ior_rank_is_pinned(mpi_env: dict[str, str]) -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two CPUs to see a binding")
    every = open("/proc/self/status").read().split("Cpus_allowed_list:")[1].split()[0]
    assert _cpus_allowed_under(launch.RunRequest("fio", np=2, launcher="mpirun"), mpi_env) == {every}
    assert every not in _cpus_allowed_under(launch.RunRequest("ior", np=2, launcher="mpirun"), mpi_env)


def test_srun_command() -> None:
    req = launch.RunRequest("ior", ARGS, np=64, nodes=2, launcher="srun", launcher_args=["--exclusive"])
    assert launch.build_command(req, ENGINE) == [
        "srun", "-n", "64", "-N", "2", "--ntasks-per-node=32", "--exclusive",
        ENGINE, "ior", *ARGS, "--comm", "mpi",
    ]  # fmt: skip


def test_product_defaults_never_allow_root_or_oversubscribe() -> None:
    for launcher in launch.LAUNCHERS:
        cmd = launch.build_command(launch.RunRequest("ior", ARGS, np=2, launcher=launcher), ENGINE)
        assert not any("oversubscribe" in c or "ALLOW_RUN_AS_ROOT" in c for c in cmd)


def test_check_command_runs_locally_without_a_launcher() -> None:
    req = launch.RunRequest("ior", ARGS, np=16, launcher="mpirun")
    assert launch.check_command(req, ENGINE) == [
        ENGINE, "ior", *ARGS, "--np", "16", "--comm", "local", "--check",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 2}, "local launcher"),
        ({"np": 0}, "--np"),
        ({"np": 2, "nodes": 3, "launcher": "srun"}, "--nodes"),
        ({"launcher": "qsub"}, "unknown launcher"),
    ],
)
def test_impossible_requests_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(launch.LaunchError, match=message):
        launch.build_command(launch.RunRequest("ior", ARGS, **kwargs), ENGINE)


def test_progress_and_error_lines_are_recognised() -> None:
    assert launch.parse_progress('IOLENS-PROGRESS {"phase": "write", "bytes": 5}') == {
        "phase": "write",
        "bytes": 5,
    }
    assert launch.parse_progress('0: IOLENS-PROGRESS {"phase": "read"}') == {"phase": "read"}
    assert launch.parse_progress("IOLENS-PROGRESS {broken") is None
    assert launch.parse_progress("some other line") is None
    assert (
        launch.parse_error("iolens-bench: error: -b: must be a multiple of -t")
        == "-b: must be a multiple of -t"
    )


# --- cli.py: argument split ----------------------------------------------------------------------------


def test_ior_short_flags_pass_through_untouched() -> None:
    argv = ["-N", "4", "--np", "2", "-o", "/x/--np", "-t", "1m", "--json=out.json", "-O", "a=1", "--no-live"]
    opts = cli.split_args(argv)
    assert opts.np == 2 and opts.json == Path("out.json") and not opts.live
    assert opts.engine_args == ["-N", "4", "-o", "/x/--np", "-t", "1m", "-O", "a=1"]


def test_launcher_args_take_values_that_look_like_options() -> None:
    opts = cli.split_args(["--launcher", "mpirun", "--launcher-args", "--oversubscribe -x FOO=1", "-w"])
    assert opts.launcher == "mpirun" and opts.launcher_args == ["--oversubscribe", "-x", "FOO=1"]
    assert opts.engine_args == ["-w"]


def test_prefixes_of_iolens_options_are_not_taken() -> None:
    assert cli.split_args(["--n", "3", "--jso", "x"]).engine_args == ["--n", "3", "--jso", "x"]


def test_double_dash_passes_the_rest() -> None:
    opts = cli.split_args(["--np", "2", "--", "--np", "3"])
    assert opts.np == 2 and opts.engine_args == ["--np", "3"]


@pytest.mark.parametrize("argv", [["--np", "zero"], ["--np", "0"], ["--launcher", "pbs"], ["--json"]])
def test_bad_iolens_options_are_usage_errors(argv: list[str]) -> None:
    with pytest.raises(cli.UsageError):
        cli.split_args(argv)


# --- cli.py: whole command, with a stand-in engine -----------------------------------------------------

FAKE_ENGINE = r'''#!{python}
"""Stand-in for iolens-bench: follows the engine's command-line contract, moves no data."""
import json, os, shutil, sys
args = sys.argv[1:]
log = os.environ.get("FAKE_LOG")
if log:
    with open(log, "a") as f:
        f.write(json.dumps(args) + "\n")
if args == ["--version"]:
    print("iolens-bench 0.1.0 (mpi=yes liburing=yes)")
    sys.exit(0)
if args[1:] == ["--help"]:
    print("  -t, --transfer-size SIZE   bytes per I/O call")
    sys.exit(0)
if "-b" in args and args[args.index("-b") + 1] == "10k":
    print("iolens-bench: error: -b: 10240 is not a multiple of -t (4096)", file=sys.stderr)
    sys.exit(2)
if "--check" in args:
    sys.exit(0)
print("a warning the user should still see", file=sys.stderr)
print('IOLENS-PROGRESS {"phase": "write", "iteration": 0, "elapsed_s": 0.5, "bytes": 1048576, '
      '"bw_bytes_per_s": 2097152.0, "estimate": true}', file=sys.stderr)
out = args[args.index("--json") + 1]
doc = os.environ.get("FAKE_DOC")
if doc:
    shutil.copyfile(doc, out + ".tmp")
    os.replace(out + ".tmp", out)
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
'''


@pytest.fixture
def fake_engine(tmp_path: Path, sample_doc: dict[str, Any]) -> dict[str, str]:
    """Environment that makes `iolens` use the stand-in engine; FAKE_DOC is the document it 'writes'."""
    return stand_in_engine(tmp_path, FAKE_ENGINE, sample_doc)


def _run(iolens_bin: list[str], args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*iolens_bin, *args], capture_output=True, text=True, timeout=120, env=env)


def _calls(env: dict[str, str]) -> list[list[str]]:
    log = Path(env["FAKE_LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_version_names_package_and_engine(iolens_bin: list[str], fake_engine: dict[str, str]) -> None:
    proc = _run(iolens_bin, ["--version"], fake_engine)
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[:2] == [
        f"iolens {__version__}",
        "engine: iolens-bench 0.1.0 (mpi=yes liburing=yes)",
    ]


def test_version_without_an_engine_still_answers(iolens_bin: list[str], tmp_path: Path) -> None:
    env = dict(os.environ, IOLENS_BENCH=str(tmp_path / "nothing-here"))
    proc = _run(iolens_bin, ["--version"], env)
    assert proc.returncode == 0 and f"iolens {__version__}" in proc.stdout and "not available" in proc.stdout


def test_package_version_matches_native_version() -> None:
    assert __version__ == (REPO / "native" / "VERSION").read_text().strip()


def test_run_shows_tables_and_copies_the_document(
    iolens_bin: list[str], fake_engine: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "copy.json"
    proc = _run(
        iolens_bin,
        ["ior", "--text-format=rich", "-F", "-t", "1m", "-b", "64m", "--np", "2", "--json", str(out)],
        fake_engine,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Summary of all tests" in proc.stdout
    write_row = next(line for line in proc.stdout.splitlines() if line.lstrip().startswith("write "))
    # 128 MiB in 0.261 s, block 64 MiB = 65536 KiB, transfer 1024 KiB.
    assert "490.42" in write_row and "65536.00" in write_row and "1024.00" in write_row
    assert "verify write iter 0: 128.00 MiB checked, no errors" in proc.stdout
    assert "a warning the user should still see" in proc.stderr
    assert "IOLENS-PROGRESS" not in proc.stderr + proc.stdout
    # The engine's document, with the command as the user typed it (the engine's own, with its temporary
    # --json path, kept as engine_command): what `compare` and the database show.
    engine_doc = json.loads(Path(fake_engine["FAKE_DOC"]).read_text())
    copied = json.loads(out.read_text())
    typed = [
        "iolens",
        "ior",
        "--text-format=rich",
        "-F",
        "-t",
        "1m",
        "-b",
        "64m",
        "--np",
        "2",
        "--json",
        str(out),
    ]
    assert copied["command"] == typed
    assert copied["engine_command"] == engine_doc["command"]
    assert {k: v for k, v in copied.items() if k not in ("command", "engine_command")} == {
        k: v for k, v in engine_doc.items() if k != "command"
    }
    engine_argv = _calls(fake_engine)[-1]
    assert engine_argv[:7] == ["ior", "-F", "-t", "1m", "-b", "64m", "--json"]
    assert {"--progress", "--quiet"} <= set(engine_argv) and engine_argv[-2:] == ["--np", "2"]


def test_bad_flag_is_one_clean_error(iolens_bin: list[str], fake_engine: dict[str, str]) -> None:
    proc = _run(iolens_bin, ["ior", "-t", "4k", "-b", "10k"], fake_engine)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "iolens: error: -b: 10240 is not a multiple of -t (4096)"


def test_bad_flag_under_mpirun_never_starts_the_launcher(
    iolens_bin: list[str], fake_engine: dict[str, str], tmp_path: Path
) -> None:
    # A fake mpirun first on PATH records whether it was ever started.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    marker = tmp_path / "mpirun-started"
    (bindir / "mpirun").write_text(f"#!/bin/sh\ntouch {marker}\nexit 0\n")
    (bindir / "mpirun").chmod(0o755)
    env = dict(fake_engine, PATH=f"{bindir}{os.pathsep}{fake_engine['PATH']}")
    proc = _run(iolens_bin, ["ior", "--launcher", "mpirun", "--np", "4", "-t", "4k", "-b", "10k"], env)
    assert proc.returncode == 2 and "iolens: error: -b:" in proc.stderr
    assert not marker.exists()
    assert _calls(fake_engine)[-1][-3:] == ["--comm", "local", "--check"]


def test_failed_run_shows_the_documents_error(
    iolens_bin: list[str], fake_engine: dict[str, str], tmp_path: Path
) -> None:
    failed = {
        "schema_version": 1, "tool": "iolens", "version": "0.1.0", "workload": "ior", "status": "failed",
        "error": {"message": "write: No space left on device", "rank": 1, "phase": "write"},
    }  # fmt: skip
    doc = tmp_path / "failed.json"
    doc.write_text(json.dumps(failed))
    proc = _run(
        iolens_bin, ["ior", "--text-format=rich", "-w"], dict(fake_engine, FAKE_DOC=str(doc), FAKE_EXIT="1")
    )
    assert proc.returncode == 1
    assert "No space left on device" in proc.stdout and "rank: 1" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_broken_document_is_an_error_not_a_traceback(
    iolens_bin: list[str], fake_engine: dict[str, str], tmp_path: Path
) -> None:
    doc = tmp_path / "broken.json"
    doc.write_text('{"schema_version": 1, "status": "ok", "phases": [')
    proc = _run(iolens_bin, ["ior", "-w"], dict(fake_engine, FAKE_DOC=str(doc)))
    assert proc.returncode == 1
    assert "iolens: error:" in proc.stderr and "truncated" in proc.stderr and "Traceback" not in proc.stderr


def test_engine_that_writes_nothing_is_reported(
    iolens_bin: list[str], fake_engine: dict[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "doc.json"
    proc = _run(iolens_bin, ["ior", "-w", "--json", str(out)], dict(fake_engine, FAKE_DOC="", FAKE_EXIT="1"))
    assert proc.returncode == 1
    assert "exited with status 1 and wrote no result document" in proc.stderr
    # --json still gets a document, and it says the run failed and why.
    doc = json.loads(out.read_text())
    assert (doc["status"], doc["workload"], doc["comm"]) == ("failed", "ior", {"kind": "local", "ranks": 1})
    assert "wrote no result document" in doc["error"]["message"]


def test_page_cache_read_is_warned_loudly(
    iolens_bin: list[str], fake_engine: dict[str, str], sample_doc: dict[str, Any], tmp_path: Path
) -> None:
    sample_doc["phases"][1]["cache"] = {
        "o_direct": False, "policy": "keep", "evicted": False, "note": "--keep-cache: files not evicted",
    }  # fmt: skip
    doc = tmp_path / "cached.json"
    doc.write_text(json.dumps(sample_doc))
    proc = _run(iolens_bin, ["ior", "--text-format=rich", "-w", "-r"], dict(fake_engine, FAKE_DOC=str(doc)))
    assert proc.returncode == 0
    assert "PAGE-CACHE figure" in proc.stdout and "--keep-cache: files not evicted" in proc.stdout


def test_verification_errors_fail_the_run(
    iolens_bin: list[str], fake_engine: dict[str, str], sample_doc: dict[str, Any], tmp_path: Path
) -> None:
    sample_doc["phases"][1]["verify"] = {
        "bytes_checked": 1024, "errors": 3, "first_bad_offset": 4096, "first_bad_rank": 1,
    }  # fmt: skip
    doc = tmp_path / "bad.json"
    doc.write_text(json.dumps(sample_doc))
    proc = _run(
        iolens_bin, ["ior", "--text-format=rich", "-w", "-r", "-R"], dict(fake_engine, FAKE_DOC=str(doc))
    )
    assert proc.returncode == 1
    assert "VERIFICATION FAILED" in proc.stdout and "first at offset 4096 of rank 1" in proc.stdout


def test_help_lists_iolens_options_then_the_engines(
    iolens_bin: list[str], fake_engine: dict[str, str]
) -> None:
    proc = _run(iolens_bin, ["ior", "--help"], fake_engine)
    assert proc.returncode == 0
    assert proc.stdout.index("--launcher") < proc.stdout.index("--transfer-size")


def test_iolens_usage_errors(iolens_bin: list[str], fake_engine: dict[str, str]) -> None:
    proc = _run(iolens_bin, ["ior", "--np", "x"], fake_engine)
    assert (
        proc.returncode == 2
        and proc.stderr.strip() == "iolens: error: --np: expected a positive integer, got 'x'"
    )
    proc = _run(iolens_bin, ["frobnicate"], fake_engine)
    assert proc.returncode == 2 and "unknown command 'frobnicate'" in proc.stderr


def test_python_dash_m_runs_the_same_cli(fake_engine: dict[str, str]) -> None:
    proc = _run([sys.executable, "-m", "iolens"], ["--version"], fake_engine)
    assert proc.returncode == 0 and proc.stdout.startswith(f"iolens {__version__}")


def test_readme_example_flags_are_not_swallowed() -> None:
    # The shared-file "hard" layout of the README: 47008-byte transfers, many segments.
    opts = cli.split_args(textwrap.dedent("-t 47008 -b 47008 -s 1000 -w -r -o /scratch/hard").split())
    assert opts.engine_args == ["-t", "47008", "-b", "47008", "-s", "1000", "-w", "-r", "-o", "/scratch/hard"]


def test_narrow_terminal_drops_columns_but_never_cuts_figures(sample_doc: dict[str, Any]) -> None:
    from rich.console import Console

    from iolens import render

    console = Console(width=80, record=True, force_terminal=False)
    render.print_document(results.parse(sample_doc), console)
    text = console.export_text()
    assert "…" not in text
    assert "490.42" in text and "1.90 ms" in text and "Summary of all tests" in text
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80


# --- the live line of `iolens ior` -----------------------------------------------------------------------


def test_ior_live_line_shows_phase_rate_bytes_and_times() -> None:
    # As ior.c prints it: bytes = rank 0's bytes x ranks, bw_bytes_per_s their rate over the phase so far.
    progress = {"phase": "write", "iteration": 1, "elapsed_s": 2.5, "bytes": 3 * 1024**3,
                "bw_bytes_per_s": 1258291200.0, "estimate": True}  # fmt: skip
    line = render.progress_line(progress, 4.25, "ior").plain
    assert line.startswith("write iter 1")
    assert "1,200.0 MiB/s" in line and "3.00 GiB" in line
    assert "phase 2.5 s" in line and "total 4.2 s" in line and "(estimate)" in line
    assert "items" not in line


def test_engine_progress_lines_become_ior_live_lines(engine: Path, tmpfs_dir: Path) -> None:
    canary = place_canary(tmpfs_dir)
    # A stonewalled write lasts 2 s: the engine reports about every 0.5 s.
    proc = subprocess.run(
        [str(engine), "ior", "--np", "2", "--quiet", "--progress", "-F", "-t", "64k", "-b", "4g", "-w",
         "-D", "2", "-o", str(tmpfs_dir / "live")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert_only_canary_left(tmpfs_dir, canary)
    progress = [p for p in map(launch.parse_progress, proc.stderr.splitlines()) if p is not None]
    assert len(progress) >= 2, proc.stderr
    assert all(p["phase"] == "write" and p["iteration"] == 0 for p in progress)
    moved = [p["bytes"] for p in progress]
    assert moved == sorted(moved) and moved[0] > 0
    elapsed = [p["elapsed_s"] for p in progress]
    assert elapsed == sorted(elapsed) and 0.4 < elapsed[0] and elapsed[-1] < 2.5
    for p in progress:
        assert p["bw_bytes_per_s"] == pytest.approx(p["bytes"] / p["elapsed_s"], rel=0.01)
        line = render.progress_line(p, p["elapsed_s"] + 0.1, "ior").plain
        assert line.startswith("write iter 0") and "MiB/s" in line and f"phase {p['elapsed_s']:.1f} s" in line
