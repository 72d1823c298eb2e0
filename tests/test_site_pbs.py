"""The PBS hook without a PBS server: `iolens site install --pbs` writes it, its two decisions (the
launch environment, the epilogue) run as PBS would call them (the file loaded without a `pbs` module),
around a real MPI job; the job is stored with the facts the hook passes. What needs a PBS server (qmgr's
import, the events themselves, pbs.event().job's values) is not tested here: docs/site.md says so."""

from __future__ import annotations

import os
import py_compile
import runpy
import subprocess
from pathlib import Path
from typing import Any

from iolens.store import Store, queries, sched_jobs

from .site_helpers import program


def _install(iolens_bin: list[str], root: Path, *extra: str) -> tuple[Path, dict[str, Any]]:
    r = subprocess.run([*iolens_bin, "site", "install", "--pbs", "--log-dir", str(root / "logs"), "--db",
                        str(root / "db.sqlite"), "--dir", str(root / "etc"), *extra],
                       capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "import hook iolens application/x-python default" in r.stdout
    hook = root / "etc" / "iolens_pbs_hook.py"
    py_compile.compile(str(hook), doraise=True)
    return hook, runpy.run_path(str(hook))  # no `pbs` module here: only the functions are defined


def test_launch_environment_on_and_off(iolens_bin: list[str], tmp_path: Path) -> None:
    _, hook = _install(iolens_bin, tmp_path, "--off-partitions", "debugq")
    on = hook["launch_env"]({"LD_PRELOAD": "/opt/x.so"}, "12.srv", "workq")
    assert on["LD_PRELOAD"].endswith("libiolens-profile.so:/opt/x.so") and on["IOLENS_LOG_DIR"] == ""
    assert on["IOLENS_PROFILE_DIR"] == str(tmp_path / "logs" / "spool" / "12.srv")
    assert (tmp_path / "logs" / "spool" / "12.srv").is_dir()
    lib = on["LD_PRELOAD"].split(":")[0]
    assert hook["launch_env"]({"IOLENS_PROFILE": "off"}, "13.srv", "workq") == {}
    assert hook["launch_env"]({}, "13.srv", "debugq") == {}
    assert hook["launch_env"]({"LD_PRELOAD": f"{lib}:/b.so", "IOLENS_PROFILE": "no"}, "13.srv", "workq") == {
        "LD_PRELOAD": "/b.so"
    }
    assert not (tmp_path / "logs" / "spool" / "13.srv").exists()


def test_a_job_is_stored_by_the_epilogue_with_the_hooks_facts(
    iolens_bin: list[str], mpi_env: dict[str, str], tmp_path: Path
) -> None:
    _, hook = _install(iolens_bin, tmp_path)
    prog = program(tmp_path)
    job_id = "314.pbs-server"
    env = {**mpi_env, "PBS_JOBID": job_id, **hook["launch_env"]({}, job_id, "workq")}
    (tmp_path / "out").mkdir()
    forward = [a for k in ("LD_PRELOAD", "IOLENS_PROFILE_DIR", "PBS_JOBID") for a in ("-x", k)]
    r = subprocess.run(["mpirun", "-np", "2", *forward, str(prog), str(tmp_path / "out"), "10", "4096", "0"],
                       env=env, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    facts = {"job_id": job_id, "job_name": "run.pbs", "user": "root", "queue": "workq", "account": "projA",
             "exec_host": "nodea/0*2+nodeb/0*2", "exit_status": 271, "stime": 1764260000,
             "server": "pbs-server", "ncpus": "4", "nodect": "2", "primary": 1}  # fmt: skip
    assert hook["epilogue_env"]({"exit_status": None})["IOLENS_PBS_EXIT_STATUS"] == ""
    hook["epilogue"](facts)
    log = (tmp_path / "logs" / "iolens-epilog.log").read_text()
    assert f"job {job_id}: stored: profile:1" in log, log
    assert not (tmp_path / "logs" / "spool" / job_id).exists()
    with Store.open(str(tmp_path / "db.sqlite"), create=False) as store:
        row = sched_jobs.get_job(store.db, job_id)
        assert (row["scheduler"], row["cluster"], row["partition_name"], row["account"], row["nodes"]) == (
            "pbs", "pbs-server", "workq", "projA", 2)  # fmt: skip
        assert (row["exit_code"], row["exit_signal"], row["node_list"]) == (None, 15, "nodea,nodeb")
        assert queries.get_profile(store.db, 1)["job_id"] == job_id  # the runtime took PBS_JOBID
        assert sched_jobs.job_profile_ids(store.db, "pbs-server", job_id, None) == [1]
    assert os.access(tmp_path / "etc" / "iolens-site.conf", os.R_OK)
