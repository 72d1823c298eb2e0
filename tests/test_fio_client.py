"""`iolens fio --client`: fio's multi-client mode run by mpirun, one rank per client (here two clients on
this host, `localhost` twice), reported as fio's client mode reports (docs/fio.md, "Multi-client mode")."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from iolens import fio_clients, launch

DATA = Path(__file__).parent / "data"


def _jobfile(path: Path, name: str, directory: Path, rw: str, bs: str, size: str, extra: str = "") -> Path:
    path.write_text(f"[{name}]\nrw={rw}\nbs={bs}\nsize={size}\ndirectory={directory}\n{extra}")
    return path


def _files(directory: Path) -> list[str]:
    """The job files in a directory (not iolens's ledger of the files it made, `.iolens-owned`)."""
    return sorted(p.name for p in directory.iterdir() if not p.name.startswith("."))


def _iolens(iolens_bin: list[str], args: list[str], env: dict[str, str] | None, cwd: Path) -> Any:
    cmd = [*iolens_bin, "fio", *args, "--no-live"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env, cwd=cwd)


@pytest.fixture
def two_jobs(tmpfs_dir: Path, tmp_path: Path) -> tuple[Path, Path, Path]:
    """A write job for client 0 and a read job for client 1, both into tmpfs_dir."""
    a = _jobfile(tmp_path / "a.fio", "ja", tmpfs_dir, "write", "64k", "1m")
    b = _jobfile(tmp_path / "b.fio", "jb", tmpfs_dir, "read", "4k", "512k")
    return a, b, tmpfs_dir


def test_each_client_runs_its_own_job_file_on_its_own_rank(
    iolens_bin: list[str], mpi_env: dict[str, str], two_jobs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    a, b, data = two_jobs
    args = ["--client=localhost", str(a), "--client=localhost", str(b), "--json", str(tmp_path / "docs.json")]
    proc = _iolens(iolens_bin, [*args, "--launcher-args=--display-map"], mpi_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    # mpirun's map: two application contexts of one rank each, on this host, not bound to a core (a client
    # runs its numjobs threads on every CPU, as a fio server does).
    assert "Num procs: 2" in proc.stdout
    for rank in (0, 1):
        assert re.search(rf"App: {rank} Process rank: {rank} Bound: (N/A|UNBOUND)", proc.stdout), proc.stdout
    # What reached the file system: client 0 wrote its job's file as rank 0's, client 1 laid out and read its
    # own as rank 1's; neither ran the other's job.
    assert _files(data) == ["ja.0.0", "jb.1.0"]
    assert (data / "ja.0.0").stat().st_size == 1 << 20 and (data / "jb.1.0").stat().st_size == 512 << 10
    docs = json.loads((tmp_path / "docs.json").read_text())
    assert [[j["name"] for j in d["fio"]["jobs"]] for d in docs] == [["ja"], ["jb"]]
    assert docs[0]["fio"]["jobs"][0]["write"]["ios"] == 16 and docs[1]["fio"]["jobs"][0]["read"]["ios"] == 128
    # One engine per client (mpirun's application contexts), each told its client's index.
    assert [d["fio_client"] for d in docs] == [
        {"host": "localhost", "port": 8765, "index": 0},
        {"host": "localhost", "port": 8765, "index": 1},
    ]
    assert [f"--client-index={i}" in d["engine_command"] for i, d in enumerate(docs)] == [True, True]
    assert [d["comm"]["ranks"] for d in docs] == [1, 1]
    # The text: each client's report after its "<hostname> " line, as fio, then "All clients".
    host = docs[0]["host"]["hostname"]
    out = proc.stdout
    starts = [m.start() for m in re.finditer(rf"^<{re.escape(host)}> $", out, re.M)]
    assert len(starts) == 2, out
    first, second, rest = out[starts[0] : starts[1]], out[starts[1] :], out[out.index("All clients:") :]
    assert "ja: (groupid=0, jobs=1)" in first and "write: IOPS=" in first and "(1024KiB/" in first
    assert "jb" not in first
    assert "jb: (groupid=0, jobs=1)" in second and "read: IOPS=" in second and "(512KiB/" in second
    assert f"{data}/ja.0.0" in first and f"{data}/jb.1.0" in second
    assert rest.startswith("All clients: (groupid=0, jobs=2): err= 0:")
    assert "(512KiB/" in rest and "(1024KiB/" in rest and "percentiles" not in rest


def test_json_has_fios_client_stats_shape(
    iolens_bin: list[str], mpi_env: dict[str, str], two_jobs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    a, b, _ = two_jobs
    args = ["--client=localhost,8766", str(a), "--client=localhost,8767", str(b), "--output-format=json"]
    proc = _iolens(iolens_bin, args, mpi_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)
    # Captured once from fio 3.33: `fio --client=localhost,8766 a.fio --client=localhost,8767 b.fio
    # --output-format=json` with the same two jobs against two `fio --server` on this host.
    theirs = json.loads((DATA / "fio_3.33_client_stats.json").read_text())
    assert set(theirs) <= set(ours) and "jobs" not in ours
    stats = ours["client_stats"]
    assert [(e["jobname"], e["hostname"], e["port"]) for e in stats] == [
        ("ja", "localhost", 8766),
        ("jb", "localhost", 8767),
        ("All clients", "localhost", 8767),
    ]
    fio_job, fio_all = theirs["client_stats"][0], theirs["client_stats"][-1]
    for entry, ref in ((stats[0], fio_job), (stats[1], fio_job), (stats[2], fio_all)):
        assert set(ref) <= set(entry) and set(entry) - set(ref) <= {"iolens"}
        for d in ("read", "write", "trim"):
            assert set(ref[d]) <= set(entry[d]), d
    total = stats[2]
    assert total["write"]["io_bytes"] == 1 << 20 and total["read"]["io_bytes"] == 512 << 10
    assert total["read"]["total_ios"] == 128 and total["write"]["total_ios"] == 16
    assert total["write"]["clat_ns"]["N"] == 16 and "percentile" not in total["write"]["clat_ns"]
    assert stats[0]["read"]["io_bytes"] == 0 and stats[1]["write"]["io_bytes"] == 0


def test_hosts_file_with_comments_and_blank_lines(
    iolens_bin: list[str], mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# the clients\n\nlocalhost\n   \n# another\nlocalhost\n")
    job = _jobfile(tmp_path / "w.fio", "w", tmpfs_dir, "write", "64k", "256k", "numjobs=2\ngroup_reporting\n")
    proc = _iolens(iolens_bin, [f"--client={hosts}", str(job), "--output-format=json"], mpi_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)["client_stats"]
    # Every client ran the common job file with numjobs instances: 2 clients x 2 instances, four files.
    assert _files(tmpfs_dir) == [f"w.{i}.0" for i in range(4)]
    assert [e["jobname"] for e in stats] == ["w", "w", "All clients"]
    assert [e["iolens"].get("instances") for e in stats[:2]] == [2, 2]
    assert stats[2]["write"]["io_bytes"] == 4 * (256 << 10)


def test_server_is_not_needed(iolens_bin: list[str], tmp_path: Path) -> None:
    for arg in ("--server", "--server=,8766"):
        proc = _iolens(iolens_bin, [arg], None, tmp_path)
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and "not needed" in proc.stderr and "--client" in proc.stderr


@pytest.mark.parametrize(
    "case",
    ["unknown-host", "empty-hosts-file", "launcher-local", "np-differs", "bad-client-job", "sock"],
)
def test_bad_inputs_exit_2_and_create_nothing(
    case: str, iolens_bin: list[str], mpi_env: dict[str, str], tmpfs_dir: Path, tmp_path: Path
) -> None:
    good = _jobfile(tmp_path / "good.fio", "g", tmpfs_dir, "write", "64k", "256k")
    bad = _jobfile(tmp_path / "bad.fio", "b", tmpfs_dir, "write", "64k", "256k", "no_such_option=1\n")
    empty = tmp_path / "hosts"
    empty.write_text("# nobody\n\n")
    args = {
        "unknown-host": ["--client=localhost,no-such-host.invalid", str(good)],
        "empty-hosts-file": [f"--client={empty}", str(good)],
        "launcher-local": ["--client=localhost", str(good), "--launcher", "local"],
        "np-differs": ["--client=localhost,localhost", str(good), "--np", "3"],
        "bad-client-job": ["--client=localhost", str(good), "--client=localhost", str(bad)],
        "sock": ["--client=sock:/tmp/fio.sock", str(good)],
    }[case]
    proc = _iolens(iolens_bin, args, mpi_env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("iolens: error: "), proc.stderr
    assert list(tmpfs_dir.iterdir()) == []
    if case == "bad-client-job":
        assert "no_such_option" in proc.stderr and "bad.fio" in proc.stderr


# --- reading the command line (no run) ---------------------------------------------------------------------


def test_client_forms_as_fio_reads_them(tmp_path: Path) -> None:
    plan = fio_clients.parse(["--client=h1", "a.fio", "b.fio", "--client", "ip:h2,4444", "c.fio"])
    assert plan is not None
    assert [(c.host, c.port, c.jobfiles) for c in plan.clients] == [
        ("h1", 8765, ["a.fio", "b.fio"]),
        ("h2", 4444, ["c.fio"]),
    ]
    plan = fio_clients.parse(["--bs=4k", "common.fio", "--client=h1,8766,h2", "--client=h3", "own.fio"])
    assert plan is not None
    assert [(c.host, c.port) for c in plan.clients] == [("h1", 8766), ("h2", 8765), ("h3", 8765)]
    assert fio_clients.client_args(plan, 0) == ["--bs=4k", "common.fio", "--client-index=0"]
    assert fio_clients.client_args(plan, 2) == ["--bs=4k", "own.fio", "--client-index=2"]
    # A readable file is a file of hosts (words, as fio's fscanf reads them); job files after it are common.
    hosts = tmp_path / "list"
    hosts.write_text("n1 n2\n\n# comment\n  n3,9000\n")
    plan = fio_clients.parse([f"--client={hosts}", "job.fio"])
    assert plan is not None
    assert [(c.host, c.port, c.jobfiles) for c in plan.clients] == [
        ("n1", 8765, []),
        ("n2", 8765, []),
        ("n3", 9000, []),
    ]
    assert plan.common == ["job.fio"]
    assert fio_clients.parse(["job.fio", "--bs=4k"]) is None
    with pytest.raises(fio_clients.ClientError):
        fio_clients.parse(["--client=8766"])


def test_launcher_commands_place_one_rank_per_client(tmp_path: Path) -> None:
    cmds = [["eng", "fio", "a.fio", "--client-index=0"], ["eng", "fio", "my job.fio", "--client-index=1"]]
    mpirun = launch.clients_command("mpirun", ["n1", "n2"], cmds, ["--mca", "x", "y"])
    assert mpirun == [
        *("mpirun", "--bind-to", "none", "--mca", "x", "y"),
        *("-np", "1", "--host", "n1:1", *cmds[0]),
        *(":", "-np", "1", "--host", "n2:1", *cmds[1]),
    ]
    twice = launch.clients_command("mpirun", ["localhost", "localhost"], cmds)
    assert twice.count("localhost:2") == 2
    assert launch.clients_command("mpirun", ["n1", "n2"], cmds, mpi_flavor="mpich")[2:5] == [
        "1",
        "-hosts",
        "n1",
    ]
    conf = tmp_path / "multi-prog.conf"
    srun = launch.clients_command("srun", ["n2", "n1"], cmds, multi_prog=conf)
    assert srun == [
        *("srun", "-n", "2", "--nodelist=n2,n1", "--ntasks-per-node=1", "--distribution=arbitrary"),
        *("--multi-prog", str(conf)),
    ]
    assert conf.read_text() == '0 eng fio a.fio --client-index=0\n1 eng fio "my job.fio" --client-index=1\n'
    with pytest.raises(launch.LaunchError):
        launch.clients_command("local", ["n1"], cmds[:1])
