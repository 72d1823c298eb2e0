"""Accounting records in the database: `iolens db import --sacct` on real `sacct --parsable2` output
(tests/data/site: captured from Slurm 22.05 with slurmdbd and MariaDB, jobs profiled by the site scripts,
one opted out, one failing, an array, one cancelled, one running then completed), on SQLite and
PostgreSQL; re-imports; bad lines; and what `scontrol show job` adds in the epilog."""

from __future__ import annotations

import calendar
import subprocess
import sys
import time
from pathlib import Path

from iolens.site import facts, sacct
from iolens.store import Store, sched_jobs

from .db_helpers import db_url, iolens, iolens_env, pg_server  # noqa: F401 - fixtures
from .site_helpers import DATA

UTC = iolens_env({"TZ": "UTC"})  # sacct wrote the times in the capturing machine's zone, UTC


def _utc(text: str) -> float:
    return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def test_real_sacct_output_is_read_job_by_job_steps_skipped() -> None:
    read = sacct.read_file(str(DATA / "sacct-steps.txt"))
    jobs = {j.job_id: j for j in read.jobs}
    assert sorted(jobs, key=int) == ["1", "2", "3", "4", "5", "6", "7", "8"] and read.steps == 8
    assert (jobs["3"].state, jobs["3"].exit_code, jobs["3"].exit_signal) == ("FAILED", 3, 0)
    assert jobs["7"].state == "CANCELLED"  # "CANCELLED by 0": the state, not who did it
    assert (jobs["8"].job_ref, jobs["8"].array_job_id, jobs["8"].array_task_id) == ("4_1", "4", "1")
    assert (jobs["4"].job_ref, jobs["4"].array_task_id) == ("4_2", "2")
    one = jobs["1"]
    assert (one.cluster, one.user_name, one.uid, one.partition_name, one.nodes, one.cpus, one.node_list) == (
        "sitetest",
        "root",
        0,
        "batch",
        1,
        2,
        "vm",
    )
    assert one.tasks is None  # an allocation's NTasks is empty: its steps have them


def test_import_is_idempotent_and_a_running_job_is_updated_when_it_ends(tmp_path: Path, db_url: str) -> None:  # noqa: F811
    r = iolens("db", "import", "--sacct", str(DATA / "sacct-running.txt"), "--db", db_url, env=UTC)
    assert r.returncode == 0, r.stderr
    assert "8 jobs: 8 new, 0 updated, 0 unchanged" in r.stdout
    with Store.open(db_url, create=False) as store:
        row = sched_jobs.get_job(store.db, "6")
        assert (row["state"], row["ended_at"], row["started_at"]) == (
            "RUNNING",
            None,
            _utc("2026-11-27T18:34:39"),
        )
        first_id = row["id"]
    r = iolens("db", "import", "--sacct", str(DATA / "sacct-done.txt"), "--db", db_url, env=UTC)
    assert "8 jobs: 0 new, 2 updated, 6 unchanged" in r.stdout, r.stdout  # 6 ended, 7 was cancelled
    r = iolens("db", "import", "--sacct", str(DATA / "sacct-done.txt"), "--db", db_url, env=UTC)
    assert "8 jobs: 0 new, 0 updated, 8 unchanged" in r.stdout
    with Store.open(db_url, create=False) as store:
        row = sched_jobs.get_job(store.db, "sitetest:6")
        assert (row["id"], row["state"], row["ended_at"], row["elapsed_s"]) == (
            first_id,
            "COMPLETED",
            _utc("2026-11-27T18:35:04"),
            25.0,
        )
        assert sched_jobs.get_job(store.db, "4_1")["job_id"] == "8"  # by the id as Slurm shows it
        assert len(store.db.query("SELECT id FROM sched_jobs")) == 8
    show = iolens("db", "show", "job:4_1", "--db", db_url, env=UTC)
    assert "job 4_1 (id 8) on cluster sitetest" in show.stdout and "array job 4, task 1" in show.stdout
    assert "no profile of the job is stored" in show.stdout


def test_an_epilog_record_does_not_replace_sacct_but_fills_what_it_lacks(tmp_path: Path) -> None:
    url = str(tmp_path / "db.sqlite")
    r = iolens("db", "import", "--sacct", str(DATA / "sacct-done.txt"), "--db", url, env=UTC)
    assert r.returncode == 0, r.stderr
    late = sched_jobs.SchedJob("slurm", "sitetest", "1", "epilog", state="COMPLETING", tasks=2, exit_code=9)
    with Store.open(url) as store:
        assert sched_jobs.put_jobs(store.db, [late]) == (0, 1, 0)
        row = sched_jobs.get_job(store.db, "1")
    assert (row["state"], row["exit_code"], row["tasks"], row["source"]) == ("COMPLETED", 0, 2, "sacct")


def test_a_bad_line_is_refused_by_number_and_nothing_is_stored(tmp_path: Path) -> None:
    lines = (DATA / "sacct-done.txt").read_text().splitlines()
    url = str(tmp_path / "db.sqlite")
    cases = {
        "short": (lines[:3] + [lines[3].rsplit("|", 1)[0]], "line 4: 17 fields, the header has 18"),
        "exit": (lines[:2] + [lines[2].replace("|0:0", "|zero")], "line 3: exit code 'zero'"),
        "time": (
            lines[:2] + [lines[2].replace("2026-11-27T18:34:36", "yesterday")],
            "line 3: time 'yesterday'",
        ),
        "header": (lines[1:], "line 1: not a header"),
    }
    for name, (text, said) in cases.items():
        path = tmp_path / f"{name}.txt"
        path.write_text("\n".join(text) + "\n")
        r = iolens("db", "import", "--sacct", str(DATA / "sacct-done.txt"), str(path), "--db", url, env=UTC)
        assert r.returncode == 2 and said in r.stderr and str(path) in r.stderr, (name, r.stderr)
        assert "Traceback" not in r.stderr
    assert not Path(url).exists()  # refused before the database was opened


def test_scontrol_fills_the_epilog_record() -> None:
    line = (DATA / "scontrol-running.txt").read_text()
    env = dict(ln.split("=", 1) for ln in (DATA / "epilog-env.txt").read_text().splitlines())
    job = facts.merge_scontrol(facts.slurm_env_job(env), facts.parse_scontrol(line))
    assert (job.job_id, job.user_name, job.uid, job.partition_name, job.nodes, job.tasks, job.cpus) == (
        "9",
        "root",
        0,
        "batch",
        1,
        1,
        1,
    )
    assert job.state == "RUNNING" and job.started_at is not None and job.ended_at is None
    assert facts.expand_hostlist("n[01-03,7],gpu[1-2]x") == ["n01", "n02", "n03", "n7", "gpu1x", "gpu2x"]


def test_standard_input_and_the_options_that_need_each_other(tmp_path: Path) -> None:
    url = str(tmp_path / "db.sqlite")
    r = subprocess.run([sys.executable, "-m", "iolens", "db", "import", "--sacct", "-", "--db", url], env=UTC,
                       input=(DATA / "sacct-steps.txt").read_text(), capture_output=True, text=True,
                       timeout=60, check=False)  # fmt: skip
    assert r.returncode == 0 and "-: 8 jobs: 8 new, 0 updated, 0 unchanged; 8 step lines skipped" in r.stdout
    done = str(DATA / "sacct-done.txt")
    cases = [
        (["--sacct"], "--since 1d"),
        (["--since", "1d", done], "--since"),
        (["--cluster", "x", done], "--cluster: only with --sacct"),
    ]
    for args, said in cases:
        r = iolens("db", "import", *args, "--db", str(tmp_path / "other.db"), env=UTC)
        assert r.returncode == 2 and said in r.stderr, (args, r.stderr)
    assert not (tmp_path / "other.db").exists()


def test_a_completing_job_on_two_nodes_keeps_the_epilogs_counts_and_its_end_state() -> None:
    # Real Epilog input from the two-node test cluster (tests/data/site/README.md).
    env = dict(ln.split("=", 1) for ln in (DATA / "epilog-env-2nodes.txt").read_text().splitlines())
    fields = facts.parse_scontrol((DATA / "scontrol-completing.txt").read_text())
    job = facts.merge_scontrol(facts.slurm_env_job(env), {**fields, "NumNodes": "1", "NumCPUs": "2"})
    assert (job.nodes, job.tasks, job.cpus, job.node_list) == (2, 4, 4, "node[1-2]")
    assert (job.state, job.exit_code, job.exit_signal) == ("FAILED", 3, 0)
    assert job.started_at is not None and job.ended_at is not None
    assert facts.ended_state("None", 0, 0) == "COMPLETED"
    assert facts.ended_state("TimeLimit", 0, 15) == "TIMEOUT"
    assert facts.ended_state("None", 0, 15) is None  # cancelled or not: sacct says
    assert facts.cpus_per_node_total("2(x2),4") == 8 and facts.cpus_per_node_total("2(x") is None
