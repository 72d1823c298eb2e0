"""`iolens profile`: argument handling, the environment the profiled program gets (checked with `env` and a
stand-in runtime library through IOLENS_PROFILE_LIB, since a fake library is all a unit test needs), exit
statuses passed through, launcher command lines, and `iolens profile report` on synthetic logs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from iolens import cli
from iolens.profile import run

from .conftest import REPO
from .profile_logs import LogSpec, write_log
from .test_profile_reader import job_dir, two_thread_spec


def iolens(
    iolens_bin: list[str], args: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*iolens_bin, *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd, input=stdin
    )


@pytest.fixture
def fake_lib(tmp_path: Path) -> dict[str, str]:
    """Environment with a stand-in runtime (not a shared object: the loader says so and goes on)."""
    lib = tmp_path / "lib" / "libiolens-profile.so"
    lib.parent.mkdir()
    lib.write_text("not really a library\n")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", *run.SCHEDULER_JOB_IDS)}
    env.pop("IOLENS_JOB_ID", None)
    env.pop("IOLENS_TRACE", None)
    env["IOLENS_PROFILE_LIB"] = str(lib)
    return env


def env_lines(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


# --- arguments ----------------------------------------------------------------------------------------------


def test_usage_lists_profile(iolens_bin: list[str], tmp_path: Path) -> None:
    out = iolens(iolens_bin, ["--help"], dict(os.environ), tmp_path)
    assert out.returncode == 0 and "profile" in out.stdout and "profile report PATH" in out.stdout
    out = iolens(iolens_bin, ["profile", "--help"], dict(os.environ), tmp_path)
    assert out.returncode == 0 and "--launcher-args" in out.stdout and "IOLENS_PROFILE_EXCLUDE" in out.stdout


def test_command_starts_after_double_dash_or_at_the_first_non_option() -> None:
    kind, req = cli.profile_args(["--trace", "--out", "d", "--", "--weird-cmd", "--trace"])
    assert kind == "run" and req.command == ["--weird-cmd", "--trace"] and req.trace and req.out == Path("d")
    kind, req = cli.profile_args(["--no-report", "./app", "--out", "x", "-n", "3"])
    assert req.command == ["./app", "--out", "x", "-n", "3"] and not req.report and req.out is None
    kind, req = cli.profile_args(
        ["--launcher", "mpirun", "--np", "8", "--launcher-args", "--map-by 'ppr:4:node'", "--", "a"]
    )
    assert (req.launcher, req.np, req.launcher_args, req.command) == (
        "mpirun",
        8,
        ["--map-by", "ppr:4:node"],
        ["a"],
    )
    assert cli.profile_args(["--launcher=srun", "--np=2", "b"])[1].launcher == "srun"
    assert cli.profile_args(["report", "dir", "--json"]) == ("report", ("dir", True, False))
    assert cli.profile_args(["report", "--all-files", "dir"]) == ("report", ("dir", False, True))
    assert cli.profile_args(["--all-files", "--", "app"])[1].all_files is True
    assert cli.profile_args(["--", "report"])[1].command == ["report"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "profile: no command to run"),
        (["--trace"], "profile: no command to run"),
        (["--", ], "profile: no command to run"),
        (["--tarce", "--", "ls"], "profile: unknown option '--tarce'"),
        (["--np", "2", "--", "ls"], "--np: the local launcher runs the command once"),
        (["--np", "0", "--launcher", "srun", "--", "ls"], "--np: expected a positive integer, got '0'"),
        (["--launcher", "pbs", "--", "ls"], "--launcher: expected one of local, mpirun, srun, got 'pbs'"),
        (["--out"], "--out: expects a value"),
        (["--out=", "ls"], "--out: expects a directory"),
        (["--launcher-args", "'unclosed", "ls"], "--launcher-args: No closing quotation"),
        (["report"], "profile report: expects one PATH"),
        (["report", "a", "b"], "profile report: expects one PATH"),
        (["report", "a", "--text"], "profile report: unknown option '--text'"),
    ],
)  # fmt: skip
def test_bad_usage(argv: list[str], message: str) -> None:
    with pytest.raises(cli.UsageError, match=re.escape(message)):
        cli.profile_args(argv)


def test_bad_usage_is_one_line_and_status_2(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path
) -> None:
    out = iolens(iolens_bin, ["profile", "--np", "2", "--", "true"], fake_lib, tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "iolens: error: --np: the local launcher runs the command once; use --launcher mpirun or srun"
    ]
    assert not list(tmp_path.glob("iolens-profile-*")), "nothing may be created on bad usage"


# --- the environment the program gets -----------------------------------------------------------------------


def test_program_gets_the_runtime_and_its_settings(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path
) -> None:
    env = {**fake_lib, "LD_PRELOAD": "/opt/other/libhook.so", "IOLENS_PROFILE_EXCLUDE": "/proc,/scratch/tmp"}
    out = iolens(iolens_bin, ["profile", "--out", "logs", "--", "env"], env, tmp_path)
    assert out.returncode == 0, out.stderr
    got = env_lines(out.stdout)
    assert got["LD_PRELOAD"] == f"{fake_lib['IOLENS_PROFILE_LIB']}:/opt/other/libhook.so"
    assert got["IOLENS_PROFILE_DIR"] == str(tmp_path / "logs") and (tmp_path / "logs").is_dir()
    assert re.fullmatch(r"iolens-\d{8}T\d{6}-\d+", got["IOLENS_JOB_ID"])
    assert got["IOLENS_PROFILE_EXCLUDE"] == "/proc,/scratch/tmp"
    assert "IOLENS_TRACE" not in got
    # The rest of the environment is the program's own.
    assert got["PATH"] == env["PATH"] and got["IOLENS_PROFILE_LIB"] == env["IOLENS_PROFILE_LIB"]
    assert f"profile logs go to {tmp_path / 'logs'}" in out.stderr
    assert "no profile log was written" in out.stderr


def test_trace_and_batch_job_id(iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path) -> None:
    out = iolens(
        iolens_bin,
        ["profile", "--trace", "--out", "l", "--", "env"],
        {**fake_lib, "SLURM_JOB_ID": "991"},
        tmp_path,
    )
    got = env_lines(out.stdout)
    assert got["IOLENS_TRACE"] == "1" and got["SLURM_JOB_ID"] == "991" and "IOLENS_JOB_ID" not in got


def test_default_directory_is_new_and_printed(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path
) -> None:
    first = iolens(iolens_bin, ["profile", "env"], fake_lib, tmp_path)
    second = iolens(iolens_bin, ["profile", "env"], fake_lib, tmp_path)
    dirs = sorted(tmp_path.glob("iolens-profile-*"))
    assert len(dirs) == 2 and all(re.fullmatch(r"iolens-profile-\d{8}-\d{6}(-\d+)?", d.name) for d in dirs)
    assert {
        env_lines(first.stdout)["IOLENS_PROFILE_DIR"],
        env_lines(second.stdout)["IOLENS_PROFILE_DIR"],
    } == {str(d) for d in dirs}
    assert str(dirs[0]) in first.stderr + second.stderr


def test_arguments_and_stdin_reach_the_program_untouched(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path
) -> None:
    args = ["profile", "--no-report", "--out", "l", "printf", "%s|", "a", "b c", "--trace", "--", "$HOME", ""]
    out = iolens(iolens_bin, args, fake_lib, tmp_path)
    assert out.returncode == 0 and out.stdout == "a|b c|--trace|--|$HOME||"
    out = iolens(
        iolens_bin, ["profile", "--no-report", "--out", "l", "--", "cat"], fake_lib, tmp_path, stdin="in\n"
    )
    assert out.stdout == "in\n"


@pytest.mark.parametrize(("script", "status"), [("exit 7", 7), ("exit 0", 0), ("kill -TERM $$", 143)])
def test_exit_status_is_the_programs(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path, script: str, status: int
) -> None:
    out = iolens(iolens_bin, ["profile", "--out", "l", "--", "sh", "-c", script], fake_lib, tmp_path)
    assert out.returncode == status


def test_missing_runtime_and_missing_command(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path
) -> None:
    out = iolens(
        iolens_bin, ["profile", "--", "true"], {**fake_lib, "IOLENS_PROFILE_LIB": "/nope/lib.so"}, tmp_path
    )
    assert (
        out.returncode == 1
        and out.stderr.strip() == "iolens: error: IOLENS_PROFILE_LIB=/nope/lib.so: no such file"
    )
    out = iolens(iolens_bin, ["profile", "--out", "l", "--", "no-such-command-xyz"], fake_lib, tmp_path)
    assert out.returncode == 127 and "no-such-command-xyz: command not found" in out.stderr
    (tmp_path / "f").write_text("")
    out = iolens(iolens_bin, ["profile", "--out", "f", "--", "true"], fake_lib, tmp_path)
    assert out.returncode == 2 and "--out: f exists and is not a directory" in out.stderr


@pytest.mark.parametrize(
    ("command", "status", "message"),
    [
        (["/nonexistent"], 127, "/nonexistent: command not found (no such file)"),
        (["no-such-command-xyz", "-v"], 127, "no-such-command-xyz: command not found"),
        (["./data"], 126, "./data: permission denied"),
        (["./sub"], 126, "./sub: is a directory"),
        (["data"], 126, "data: permission denied"),
    ],
)
def test_a_command_that_cannot_start_is_refused_before_anything_is_made(
    iolens_bin: list[str],
    fake_lib: dict[str, str],
    tmp_path: Path,
    command: list[str],
    status: int,
    message: str,
) -> None:
    """As a shell says it (127 not found, 126 found but not runnable), in one line naming the command, and
    neither the default directory nor --out (with its parents) is created."""
    (tmp_path / "data").write_text("not a program\n")
    (tmp_path / "sub").mkdir()
    env = {**fake_lib, "PATH": f"{tmp_path}:{fake_lib.get('PATH', os.defpath)}"}
    before = sorted(p.name for p in tmp_path.iterdir())
    for args in (["profile", "--", *command], ["profile", "--out", "a/b/logs", "--", *command]):
        out = iolens(iolens_bin, args, env, tmp_path)
        assert out.returncode == status
        assert out.stderr.splitlines() == [f"iolens: error: {message}"]
        assert out.stdout == ""
        assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_program_the_kernel_cannot_run_leaves_nothing_behind(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path
) -> None:
    """Executable, but not a format the kernel runs (no #! line): the start fails after the directory was
    made, and the directories iolens made are removed again (one that holds something stays)."""
    prog = tmp_path / "prog"
    prog.write_bytes(b"\x7fELF garbage")
    prog.chmod(0o755)
    out = iolens(iolens_bin, ["profile", "--out", "a/b/logs", "--", "./prog"], fake_lib, tmp_path)
    assert out.returncode == 126
    assert out.stderr.splitlines()[-1] == "iolens: error: ./prog: Exec format error"
    assert not (tmp_path / "a").exists()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "keep").write_text("x")
    out = iolens(iolens_bin, ["profile", "--out", "a/b/logs", "--", "./prog"], fake_lib, tmp_path)
    assert out.returncode == 126 and not (tmp_path / "a" / "b").exists()
    assert (tmp_path / "a" / "keep").read_text() == "x"


def test_packaged_runtime_missing_says_how_to_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IOLENS_PROFILE_LIB", raising=False)
    monkeypatch.setattr(run, "_packaged_lib", lambda: None)
    with pytest.raises(run.ProfileLibNotFound, match="IOLENS_PROFILE_LIB"):
        run.find_profile_lib()


FAKE_PROGRAM = """
import os, sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from tests.profile_logs import FileSpec, LogSpec, MountSpec, write_log
d = Path(os.environ["IOLENS_PROFILE_DIR"])
write_log(d, LogSpec(pid=os.getpid(), job_id=os.environ["IOLENS_JOB_ID"], cmdline=sys.argv,
                     files=[FileSpec(1, "/lus/made-by-the-program", 1)],
                     mounts=[MountSpec(1, "/lus", "lustre")],
                     file_recs=[(0, 1, {{"POSIX_WRITES": 3, "POSIX_BYTES_WRITTEN": 3 * 1048576}})]))
print("program output")
sys.exit(5)
"""


def test_report_of_the_runs_logs_follows_the_program(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path
) -> None:
    """A stand-in program writes its log as the runtime would; an older log in --out is not reported."""
    script = tmp_path / "prog.py"
    script.write_text(FAKE_PROGRAM.format(repo=str(REPO)))
    logs = tmp_path / "logs"
    logs.mkdir()
    write_log(logs, LogSpec(job_id="an-earlier-run", pid=7))
    out = iolens(
        iolens_bin, ["profile", "--out", "logs", "--", sys.executable, str(script)], fake_lib, tmp_path
    )
    assert out.returncode == 5, out.stderr
    assert out.stdout.startswith("program output\n")
    assert "/lus/made-by-the-program" in out.stdout and "3.00 MiB in 3 writes" in out.stdout
    assert "an-earlier-run" not in out.stdout and "iolens-" in out.stdout
    quiet = iolens(
        iolens_bin,
        ["profile", "--no-report", "--out", "logs", sys.executable, str(script)],
        fake_lib,
        tmp_path,
    )
    assert quiet.returncode == 5 and quiet.stdout == "program output\n"


# --- launchers ----------------------------------------------------------------------------------------------


VARS = {"LD_PRELOAD": "/x/libiolens-profile.so", "IOLENS_PROFILE_DIR": "/lus/p", "IOLENS_JOB_ID": "j1"}


def test_mpirun_passes_the_variables_to_the_ranks_only() -> None:
    req = run.ProfileRequest(["./a", "-v"], launcher="mpirun", np=4, launcher_args=["--bind-to", "core"])
    assert run.build_command(req, VARS) == [
        "mpirun", "-np", "4", "-x", "LD_PRELOAD=/x/libiolens-profile.so", "-x", "IOLENS_PROFILE_DIR=/lus/p",
        "-x", "IOLENS_JOB_ID=j1", "--bind-to", "core", "./a", "-v",
    ]  # fmt: skip
    assert run.build_command(req, VARS, "mpich")[3:9] == [
        "-genv", "LD_PRELOAD", "/x/libiolens-profile.so", "-genv", "IOLENS_PROFILE_DIR", "/lus/p"
    ]  # fmt: skip
    launcher_env = run.program_env(req, VARS, {"PATH": "/bin"})
    assert launcher_env == {"PATH": "/bin"}, "the launcher itself must not be profiled"
    local = run.ProfileRequest(["./a"])
    assert run.build_command(local, VARS) == ["./a"]
    assert run.program_env(local, VARS, {"PATH": "/bin"}) == {"PATH": "/bin", **VARS}


def test_srun_exports_the_variables() -> None:
    req = run.ProfileRequest(["./a"], launcher="srun", np=16, launcher_args=["-N", "2"])
    assert run.build_command(req, VARS) == [
        "srun", "-n", "16",
        "--export=ALL,LD_PRELOAD=/x/libiolens-profile.so,IOLENS_PROFILE_DIR=/lus/p,IOLENS_JOB_ID=j1",
        "-N", "2", "./a",
    ]  # fmt: skip
    with pytest.raises(run.ProfileRunError, match="comma"):
        run.build_command(req, {**VARS, "IOLENS_PROFILE_EXCLUDE": "/proc,/sys"})


def test_ld_preload_is_prepended_once(tmp_path: Path) -> None:
    lib = tmp_path / "libiolens-profile.so"
    v = run.profile_vars(lib, tmp_path, False, {"LD_PRELOAD": f"/a.so {lib}:/b.so"})
    assert v["LD_PRELOAD"] == f"{lib}:/a.so:/b.so"
    assert run.profile_vars(lib, tmp_path, False, {})["LD_PRELOAD"] == str(lib)


FAKE_MPIRUN = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "mpirun (Open MPI) 4.1.4"; exit 0; fi
{{ echo "LD_PRELOAD=${{LD_PRELOAD:-unset}}"; for a in "$@"; do echo "ARG $a"; done; }} > {log}
exit 3
"""


def test_mpirun_run_end_to_end(iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "mpirun.txt"
    (bindir / "mpirun").write_text(FAKE_MPIRUN.format(log=record))
    (bindir / "mpirun").chmod(0o755)
    env = {**fake_lib, "PATH": f"{bindir}:{fake_lib['PATH']}"}
    args = ["profile", "--launcher", "mpirun", "--np", "2", "--out", "p", "--", "./solver", "x"]
    out = iolens(iolens_bin, args, env, tmp_path)
    assert out.returncode == 3, out.stderr
    lines = record.read_text().splitlines()
    assert lines[0] == "LD_PRELOAD=unset"
    argv = [line[4:] for line in lines[1:]]
    assert argv[:2] == ["-np", "2"] and argv[-2:] == ["./solver", "x"]
    assert (
        f"LD_PRELOAD={fake_lib['IOLENS_PROFILE_LIB']}" in argv
        and f"IOLENS_PROFILE_DIR={tmp_path / 'p'}" in argv
    )
    out = iolens(iolens_bin, [*args[:1], "--launcher", "srun", "--np", "2", "--", "true"], env, tmp_path)
    if "srun not found" in out.stderr:
        assert out.returncode == 2


# --- iolens profile report ----------------------------------------------------------------------------------


def test_report_of_a_directory(iolens_bin: list[str], tmp_path: Path) -> None:
    d = job_dir(tmp_path)
    out = iolens(iolens_bin, ["profile", "report", str(d)], dict(os.environ), tmp_path)
    assert out.returncode == 0, out.stderr
    assert "job 777" in out.stdout and "/lus/shared" in out.stdout and "Read-after-write" in out.stdout
    assert "sort" in out.stdout and "(after exec)" in out.stdout
    out = iolens(iolens_bin, ["profile", "report", str(d), "--json"], dict(os.environ), tmp_path)
    doc = json.loads(out.stdout)
    (job,) = doc["jobs"]
    assert job["summary"]["bytes_written"] == 10 * 1048576 + 100 and job["summary"]["processes"] == 3
    assert {p["relation"] for p in job["processes"]} == {"root", "child", "exec"}


@pytest.mark.parametrize("value", ["scratch", "/scratch,relative/dir"])
def test_a_bad_parallel_fs_list_is_refused(iolens_bin: list[str], tmp_path: Path, value: str) -> None:
    d = job_dir(tmp_path)
    env = {**os.environ, "IOLENS_PARALLEL_FS": value}
    for args in (["profile", "report", str(d)], ["db", "import", str(d)]):
        out = iolens(iolens_bin, args, env, tmp_path)
        assert out.returncode == 2 and out.stdout == ""
        bad = value.split(",")[-1]
        assert out.stderr.splitlines() == [
            f"iolens: error: IOLENS_PARALLEL_FS: {bad!r} is not an absolute directory"
        ]


def test_report_of_one_log_file(iolens_bin: list[str], tmp_path: Path) -> None:
    path = write_log(tmp_path, two_thread_spec())
    out = iolens(iolens_bin, ["profile", "report", str(path), "--json"], dict(os.environ), tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout)["jobs"][0]["summary"]["reads"] == 27


def test_broken_logs_are_errors_not_tracebacks(iolens_bin: list[str], tmp_path: Path) -> None:
    bad = tmp_path / "x.host.1.0.iolp"
    bad.write_bytes(b"\x7fELF" + b"\0" * 5000)
    out = iolens(iolens_bin, ["profile", "report", str(bad)], dict(os.environ), tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().startswith(f"iolens: error: {bad}: not an iolens profile log")
    z = write_log(tmp_path, two_thread_spec(pid=2))
    data = bytearray(z.read_bytes())
    data[20:24] = b"\xff\xff\xff\xff"
    z.write_bytes(bytes(data))
    out = iolens(iolens_bin, ["profile", "report", str(z)], dict(os.environ), tmp_path)
    assert out.returncode == 1 and "corrupt compressed data" in out.stderr and "Traceback" not in out.stderr
    out = iolens(iolens_bin, ["profile", "report", str(tmp_path / "absent")], dict(os.environ), tmp_path)
    assert out.returncode == 2 and "absent: no such file or directory" in out.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    out = iolens(iolens_bin, ["profile", "report", str(empty)], dict(os.environ), tmp_path)
    assert out.returncode == 1 and "no profile logs" in out.stderr


def test_help_text_names_the_guide() -> None:
    assert "docs/profile.md" in cli.PROFILE_HELP and (REPO / "docs" / "profile.md").is_file()
    assert textwrap.dedent(cli.USAGE).count("profile") >= 2


def test_paths_are_printed_as_they_are(
    iolens_bin: list[str], fake_lib: dict[str, str], tmp_path: Path
) -> None:
    out = iolens(iolens_bin, ["profile", "--out", "logs[bold]x[/bold]", "--", "true"], fake_lib, tmp_path)
    assert out.returncode == 0 and f"profile logs go to {tmp_path / 'logs[bold]x[/bold]'}" in out.stderr
