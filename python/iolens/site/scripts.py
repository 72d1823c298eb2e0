"""The pieces a center installs, as text: the Slurm TaskProlog and Epilog scripts, the PBS hooks, and the
lines slurm.conf needs. Values (paths, partitions) are written into the scripts, quoted for sh, so a script
reads no settings file and runs no Python when it has nothing to do.

Why scripts and not a SPANK plugin (docs/site.md, "Installing for a center"): a script runs in a process of
its own, so whatever goes wrong in it cannot crash slurmstepd or srun; it does not depend on the Slurm
version's headers and ABI (a SPANK plugin must be rebuilt with every Slurm upgrade, and a plugin that fails to
load can fail every job); and both scripts always exit 0, so a failure never fails a job nor drains a node.
"""

from __future__ import annotations

import shlex

from iolens.site.config import SiteConfig

TASK_PROLOG = "iolens-task-prolog.sh"
EPILOG = "iolens-epilog.sh"
PBS_HOOK = "iolens_pbs_hook.py"
OFF_VALUES = ("off", "0", "no", "false")


def task_prolog(cfg: SiteConfig) -> str:
    """Run by slurmstepd as the user before each task (the batch script too); what it prints as `export
    NAME=value` and `unset NAME` lines is set in the task's environment. Profiling on: LD_PRELOAD gets the
    runtime and the logs go to the job's directory. Off (IOLENS_PROFILE=off in the job's environment, a
    partition left out, the runtime or the log directory missing): the runtime is taken out of LD_PRELOAD if
    an earlier step put it there, and nothing else is said."""
    off = " ".join(cfg.off_partitions)
    return f"""#!/bin/sh
# iolens TaskProlog (written by `iolens site install`; docs/site.md). Always exits 0: a TaskProlog that fails
# would fail the task. Prints only `export`/`unset` lines, which slurmstepd applies to the task.
LIB={shlex.quote(str(cfg.lib))}
SPOOL={shlex.quote(str(cfg.spool))}
OFF_PARTITIONS=' {off} '
without_lib() {{
    # LD_PRELOAD without the runtime (an earlier step of the job may have put it there)
    printf '%s' "${{LD_PRELOAD:-}}" | tr ' ' ':' | tr ':' '\\n' | grep -vxF "$LIB" | paste -sd: -
}}
off() {{
    case ":${{LD_PRELOAD:-}}:" in
        *":$LIB:"*) echo "export LD_PRELOAD=$(without_lib)" ;;
    esac
    exit 0
}}
case "${{IOLENS_PROFILE:-on}}" in {"|".join(OFF_VALUES)}|OFF|Off) off ;; esac
[ -n "${{SLURM_JOB_ID:-}}" ] || off
case "$OFF_PARTITIONS" in *" ${{SLURM_JOB_PARTITION:-}} "*) [ -n "${{SLURM_JOB_PARTITION:-}}" ] && off ;; esac
[ -r "$LIB" ] || off
DIR="$SPOOL/$SLURM_JOB_ID"
[ -d "$DIR" ] || mkdir -m 0700 "$DIR" 2>/dev/null || [ -d "$DIR" ] || off
[ -w "$DIR" ] || off
case ":${{LD_PRELOAD:-}}:" in
    *":$LIB:"*) ;;
    *) echo "export LD_PRELOAD=$LIB${{LD_PRELOAD:+:$LD_PRELOAD}}" ;;
esac
echo "export IOLENS_PROFILE_DIR=$DIR"
echo "unset IOLENS_LOG_DIR"
exit 0
"""


def epilog(cfg: SiteConfig, config_path: str) -> str:
    """Run by slurmd as root on every node of the job at its end. A job without a directory (opted out,
    nothing profiled) costs a test of one directory; otherwise `iolens site epilog` runs, killed past the
    time limit (the work it hands to the background is in a session of its own and survives). Always exits 0:
    an Epilog that fails drains the node."""
    limit = int(cfg.epilog_timeout_s) + 2
    log = cfg.log_dir / "iolens-epilog.log"
    return f"""#!/bin/sh
# iolens Epilog (written by `iolens site install`; docs/site.md). Always exits 0 (a failing Epilog drains the
# node) and ends within {limit} s.
SPOOL={shlex.quote(str(cfg.spool))}
[ -n "${{SLURM_JOB_ID:-}}" ] && [ -d "$SPOOL/$SLURM_JOB_ID" ] || exit 0
# Every node marks its end; only the job's first node stores it (scontrol expands the node list from
# slurm.conf, without asking the controller). When scontrol cannot say, iolens decides.
NODE="${{SLURMD_NODENAME:-$(hostname)}}"
NODES="${{SLURM_JOB_NODELIST:-${{SLURM_NODELIST:-}}}}"
touch "$SPOOL/$SLURM_JOB_ID/.iolens-ended.$NODE" 2>/dev/null
if [ -n "$NODES" ]; then
    FIRST=$(timeout 2 scontrol show hostnames "$NODES" 2>/dev/null | head -n 1)
    [ -n "$FIRST" ] && [ "$FIRST" != "$NODE" ] && exit 0
fi
timeout -s KILL {limit} {shlex.quote(cfg.python)} -m iolens.site epilog --config {shlex.quote(config_path)} \\
    </dev/null >>{shlex.quote(str(log))} 2>&1
exit 0
"""


def slurm_conf_lines(directory: str) -> str:
    return (
        f"TaskProlog={directory}/{TASK_PROLOG}\n"
        f"Epilog={directory}/{EPILOG}\n"
        "# A job's accounting record comes from slurmdbd (iolens site sync runs sacct): keep\n"
        "# JobAcctGatherType and AccountingStorageType=accounting_storage/slurmdbd as the center has them.\n"
    )


def pbs_hook(cfg: SiteConfig, config_path: str) -> str:
    """One PBS hook for two events (qmgr: event = "execjob_launch,execjob_epilogue"). At launch the runtime
    is put in the job's environment (the launch hook may edit it); at the end `iolens site epilog --pbs`
    runs with the job's facts in its environment, killed past the time limit. The hook imports nothing of
    iolens (it runs in PBS's own Python): its decisions are the two functions below, which run without PBS
    (tests load this file without a `pbs` module). Any exception is caught: the hook always accepts."""
    limit = int(cfg.epilog_timeout_s) + 2
    return f"""# iolens PBS hook (written by `iolens site install --pbs`; docs/site.md)
import os
import subprocess

LIB = {str(cfg.lib)!r}
SPOOL = {str(cfg.spool)!r}
OFF_QUEUES = {sorted(cfg.off_partitions)!r}
PYTHON = {cfg.python!r}
CONFIG = {config_path!r}
LIMIT_S = {limit}


def launch_env(env, job_id, queue):
    \"\"\"The variables to set in the job's environment (an empty dict: profiling off).\"\"\"
    preload = [p for p in (env.get("LD_PRELOAD") or "").replace(" ", ":").split(":") if p]
    if (env.get("IOLENS_PROFILE") or "on").lower() in {OFF_VALUES!r} or queue in OFF_QUEUES \\
            or not job_id or not os.access(LIB, os.R_OK):
        return {{"LD_PRELOAD": ":".join(p for p in preload if p != LIB)}} if LIB in preload else {{}}
    d = os.path.join(SPOOL, job_id)
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return {{}}
    return {{"LD_PRELOAD": ":".join([LIB] + [p for p in preload if p != LIB]), "IOLENS_PROFILE_DIR": d,
            "IOLENS_LOG_DIR": ""}}


def epilogue_env(facts):
    \"\"\"The environment `iolens site epilog --pbs` reads the job's facts from.\"\"\"
    return {{"IOLENS_PBS_" + k.upper(): "" if v is None else str(v) for k, v in facts.items()}}


def epilogue(facts):
    if not os.path.isdir(os.path.join(SPOOL, str(facts.get("job_id")))):
        return
    env = dict(os.environ, **epilogue_env(facts))
    with open(os.path.join(os.path.dirname(SPOOL), "iolens-epilog.log"), "ab") as log:
        subprocess.run([PYTHON, "-m", "iolens.site", "epilog", "--pbs", "--config", CONFIG],
                       stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, timeout=LIMIT_S)


try:
    import pbs
except ImportError:
    pbs = None

if pbs is not None:
    try:
        e = pbs.event()
        j = e.job
        if e.type == pbs.EXECJOB_LAUNCH:
            env = dict(e.env)
            user_env = {{k: env.get(k) for k in ("LD_PRELOAD", "IOLENS_PROFILE")}}
            for k, v in launch_env(user_env, str(j.id), str(j.queue)).items():
                e.env[k] = v
        elif e.type == pbs.EXECJOB_EPILOGUE:
            epilogue({{
                "job_id": str(j.id), "job_name": str(j.Job_Name), "user": str(j.euser),
                "queue": str(j.queue), "account": str(j.Account_Name or ""),
                "exec_host": str(j.exec_host or ""), "exit_status": j.Exit_status, "stime": j.stime,
                "server": str(pbs.server().name), "ncpus": str(j.Resource_List["ncpus"] or ""),
                "nodect": str(j.Resource_List["nodect"] or ""), "primary": int(bool(j.in_ms_mom())),
            }})
    except Exception:  # the job must never suffer for iolens
        pass
    pbs.event().accept()
"""
