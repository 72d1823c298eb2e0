"""`iolens replay kernel|run|check` (docs/replay.md): a real program profiled, its kernel made and run at
another rank count and scale, the figures scaled as documented; bad input refused with status 2 before any
I/O; a kernel whose names point outside its run directory writes nothing there; the run directory removed
at the end (kept with --keep) and on SIGTERM; kernels from a Darshan log and from a stored profile."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO, ProfileBuild

DARSHAN_LOG = REPO / "tests" / "data" / "darshan" / "layers-np2.darshan"


@pytest.fixture
def env(profile_build: ProfileBuild, tmp_path: Path) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    e["IOLENS_PROFILE_LIB"] = str(profile_build.lib)
    e["HOME"] = str(tmp_path / "home")
    e["XDG_DATA_HOME"] = str(tmp_path / "home" / "data")
    e["XDG_CONFIG_HOME"] = str(tmp_path / "home" / "config")
    return e


def run(
    iolens_bin: list[str], env: dict[str, str], *args: str, **kw: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*iolens_bin, *args], capture_output=True, text=True, env=env, timeout=120, **kw)


def profile_dd(tmp_path: Path, iolens_bin: list[str], env: dict[str, str], blocks: int) -> Path:
    """dd writing blocks of 4 KiB and reading them back, profiled: the logs' directory."""
    work = tmp_path / f"orig{blocks}"
    work.mkdir()
    logs = tmp_path / f"logs{blocks}"
    script = f"dd if=/dev/zero of=x bs=4k count={blocks} status=none; dd if=x of=/dev/null bs=4k status=none"
    r = run(iolens_bin, env, "profile", "--no-report", "--out", str(logs), "--", "sh", "-c", script, cwd=work)
    assert r.returncode == 0, r.stderr
    return logs


@pytest.fixture
def dd_profile(tmp_path: Path, iolens_bin: list[str], env: dict[str, str]) -> Path:
    return profile_dd(tmp_path, iolens_bin, env, 200)


def kernel_of(iolens_bin: list[str], env: dict[str, str], profile: Path | str, out: Path) -> dict[str, Any]:
    r = run(iolens_bin, env, "replay", "kernel", str(profile), "--out", str(out))
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())


def rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{r['group']}: {r['quantity']}": r for r in doc["rows"]}


def test_kernel_at_two_ranks_and_half_scale_moves_the_documented_bytes(
    tmp_path: Path, dd_profile: Path, iolens_bin: list[str], env: dict[str, str]
) -> None:
    k = kernel_of(iolens_bin, env, dd_profile, tmp_path / "k.json")
    assert k["ranks"] == 2 and k["concurrent"] is False  # two dd processes, not MPI ranks
    names = [f["name"] for f in k["files"]]
    assert names == ["x"]
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    r = run(iolens_bin, env, "replay", "check", str(dd_profile), "--dir", str(run_dir), "--scale", "0.5",
            "--json")  # fmt: skip
    doc = json.loads(r.stdout)
    got = rows(doc)
    # Bytes and counts scale by 0.5; the histogram's bucket and the sequential shares stay.
    assert got["data: bytes_written"]["original"] == 200 * 4096 * 0.5
    assert got["data: bytes_written"]["replayed"] == 100 * 4096
    assert got["data: bytes_read"]["replayed"] == 100 * 4096
    assert got["write sizes: 1K-10K"]["replayed"] == 100
    assert got["patterns: seq share of writes"]["pass"]
    assert [r for r in doc["rows"] if not r["pass"] and r["group"] != "time"] == []
    assert list(run_dir.iterdir()) == []


def test_more_ranks_give_per_rank_files_and_totals_times_n_over_r(
    tmp_path: Path, dd_profile: Path, iolens_bin: list[str], env: dict[str, str]
) -> None:
    argv = ["replay", "check", str(dd_profile), "--dir", str(tmp_path), "--np", "4", "--json"]
    r = run(iolens_bin, env, *argv)
    got = rows(json.loads(r.stdout))
    # 4 ranks replaying a 2-process kernel: each original process twice, totals x2.
    assert got["data: bytes_written"]["replayed"] == 2 * 200 * 4096
    assert got["data: bytes_written"]["pass"] and got["data: bytes_read"]["pass"]


def test_keep_leaves_the_run_directory_with_only_the_kernels_files(
    tmp_path: Path, dd_profile: Path, iolens_bin: list[str], env: dict[str, str]
) -> None:
    kernel_of(iolens_bin, env, dd_profile, tmp_path / "k.json")
    (d := tmp_path / "d").mkdir()
    r = run(iolens_bin, env, "replay", "run", str(tmp_path / "k.json"), "--dir", str(d), "--keep")
    assert r.returncode == 0, r.stderr
    (kept,) = list(d.iterdir())
    assert kept.name.startswith("iolens-replay-")
    assert sorted(p.name for p in kept.rglob("*")) == ["x"]
    assert (kept / "x").stat().st_size == 200 * 4096


BAD = [
    (["run", "{k}"], "--dir"),
    (["run", "{k}", "--dir", "{missing}"], "--dir"),
    (["run", "{k}", "--dir", "{d}", "--np", "0"], "--np"),
    (["run", "{k}", "--dir", "{d}", "--np", "two"], "--np"),
    (["run", "{k}", "--dir", "{d}", "--scale", "0"], "--scale"),
    (["run", "{k}", "--dir", "{d}", "--scale", "nan"], "--scale"),
    (["run", "{k}", "--dir", "{d}", "--timeout", "-3"], "--timeout"),
    (["run", "{notjson}", "--dir", "{d}"], "not JSON"),
    (["run", "{truncated}", "--dir", "{d}"], "not JSON"),
    (["run", "{escape}", "--dir", "{d}"], "leaves the run directory"),
    (["run", "{absolute}", "--dir", "{d}"], "leaves the run directory"),
    (["kernel", "{missing}", "--out", "{d}/k2.json"], "no such file"),
    (["kernel", "{k}"], "--out"),
    (["check", "{k}", "{k}", "--dir", "{d}"], "--dir"),
    (["check", "{k}"], "--dir"),
    (["frobnicate"], "unknown command"),
]


@pytest.mark.parametrize("argv, names", BAD, ids=[f"{a[0]}-{n}-{i}" for i, (a, n) in enumerate(BAD)])
def test_bad_input_is_refused_with_status_2_and_no_io(
    tmp_path: Path, dd_profile: Path, iolens_bin: list[str], env: dict[str, str], argv: list[str], names: str
) -> None:
    k = tmp_path / "k.json"
    kernel_of(iolens_bin, env, dd_profile, k)
    text = k.read_text()
    (tmp_path / "notjson").write_text("this is not a kernel\n")
    (tmp_path / "truncated.json").write_text(text[: len(text) // 2])
    doc = json.loads(text)
    doc["files"][0]["name"] = "../../canary"
    (tmp_path / "escape.json").write_text(json.dumps(doc))
    doc["files"][0]["name"] = str(tmp_path / "canary")
    (tmp_path / "absolute.json").write_text(json.dumps(doc))
    canary = tmp_path / "canary"
    canary.write_text("keep me")
    d = tmp_path / "d"
    d.mkdir()
    subst = {
        "{k}": str(k), "{d}": str(d), "{missing}": str(tmp_path / "missing"),
        "{notjson}": str(tmp_path / "notjson"),
        "{truncated}": str(tmp_path / "truncated.json"), "{escape}": str(tmp_path / "escape.json"),
        "{absolute}": str(tmp_path / "absolute.json"),
    }  # fmt: skip
    args = [a.replace(a, subst[a]) if a in subst else a.replace("{d}", str(d)) for a in argv]
    r = run(iolens_bin, env, "replay", *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert names in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert list(d.iterdir()) == []  # no run directory made, no file written
    assert canary.read_text() == "keep me"


def test_executor_refuses_a_plan_leaving_its_directory_before_any_call(tmp_path: Path) -> None:
    from iolens.replay.run import find_executor

    exe = find_executor()
    cwd = tmp_path / "run"
    cwd.mkdir()
    for bad in ("O 0 w ../outside", "O 0 w /tmp/outside-abs", "D sub/../../up", "Q 1"):
        plan = f"D made\nO 1 w made/f\nW 1 0 10\nC 1\n{bad}\nW 0 0 10\n"
        r = subprocess.run([str(exe)], input=plan, capture_output=True, text=True, timeout=30, cwd=cwd)
        assert r.returncode == 2, (bad, r.stderr)
        assert "plan:5" in r.stderr
        assert list(cwd.iterdir()) == []  # the good lines before it were not run either
    assert not (tmp_path / "outside").exists()


def test_sigterm_stops_the_ranks_and_removes_the_run_directory(
    tmp_path: Path, dd_profile: Path, iolens_bin: list[str], env: dict[str, str]
) -> None:
    k = kernel_of(iolens_bin, env, dd_profile, tmp_path / "k.json")
    # A gap of 8 s between the two processes' files: the run is inside its pause when the signal comes.
    uses = k["streams"][0]["uses"][0]
    uses["end_ns"] = 0
    second = k["streams"][1]["uses"][0]
    second["start_ns"] = 8_000_000_000
    k["streams"][1]["uses"].insert(0, dict(uses, start_ns=0, end_ns=0))
    (tmp_path / "slow.json").write_text(json.dumps(k))
    d = tmp_path / "d"
    d.mkdir()
    cmd = [*iolens_bin, "replay", "run", str(tmp_path / "slow.json"), "--dir", str(d)]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not list(d.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert time.monotonic() - t0 < 5
    assert list(d.iterdir()) == []


def test_kernel_from_a_darshan_log(tmp_path: Path, iolens_bin: list[str], env: dict[str, str]) -> None:
    k = kernel_of(iolens_bin, env, DARSHAN_LOG, tmp_path / "k.json")
    assert k["ranks"] == 2 and k["concurrent"] is True
    assert k["files"] and all(not f["name"].startswith("/") for f in k["files"])
    written = sum(u["write"]["bytes"] for s in k["streams"] for u in s["uses"] if u["write"])
    assert written > 0
    d = tmp_path / "d"
    d.mkdir()
    r = run(iolens_bin, env, "replay", "run", str(tmp_path / "k.json"), "--dir", str(d), "--scale", "0.5")
    assert r.returncode == 0, r.stderr
    assert list(d.iterdir()) == []


def test_kernel_from_a_stored_profile_equals_the_kernel_from_its_logs(
    tmp_path: Path, dd_profile: Path, iolens_bin: list[str], env: dict[str, str]
) -> None:
    db = tmp_path / "stats.db"
    r = run(iolens_bin, env, "db", "import", str(dd_profile), "--db", str(db))
    assert r.returncode == 0, r.stderr
    from_logs = kernel_of(iolens_bin, env, dd_profile, tmp_path / "a.json")
    from_db = kernel_of(iolens_bin, {**env, "IOLENS_DB": str(db)}, "profile:1", tmp_path / "b.json")
    assert [f["name"] for f in from_db["files"]] == [f["name"] for f in from_logs["files"]]

    def total(k: dict[str, Any], what: str) -> int:
        return sum(u[what]["bytes"] for s in k["streams"] for u in s["uses"] if u[what])

    assert total(from_db, "write") == total(from_logs, "write") == 200 * 4096
    assert total(from_db, "read") == total(from_logs, "read")


def test_check_of_two_profiles_passes_on_itself_and_names_what_differs(
    tmp_path: Path, dd_profile: Path, iolens_bin: list[str], env: dict[str, str]
) -> None:
    same = run(iolens_bin, env, "replay", "check", str(dd_profile), str(dd_profile))
    assert same.returncode == 0, same.stderr
    assert "bytes_written" in same.stdout and "FAIL" not in same.stdout
    # Another run with 150 blocks instead of 200: the data rows fail, the shares and kinds still pass.
    logs = profile_dd(tmp_path, iolens_bin, env, 150)
    diff = run(iolens_bin, env, "replay", "check", str(dd_profile), str(logs), "--json")
    assert diff.returncode == 1, diff.stderr
    got = rows(json.loads(diff.stdout))
    assert not got["data: bytes_written"]["pass"] and got["data: bytes_written"]["replayed"] == 150 * 4096
    assert not got["write sizes: 1K-10K"]["pass"]
    assert got["files: read-write"]["pass"] and got["patterns: consec share of writes"]["pass"]
    # At a scale of 0.75 the 150-block run is the 200-block one's replay.
    scaled = run(iolens_bin, env, "replay", "check", str(dd_profile), str(logs), "--scale", "0.75", "--json")
    got = rows(json.loads(scaled.stdout))
    assert got["data: bytes_written"]["pass"] and got["write sizes: 1K-10K"]["pass"]
