"""`iolens site install` writes the pieces a center installs; `iolens site check` checks them."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from iolens.site import scripts
from iolens.site.config import CONFIG_NAME, SiteConfig

SPOOL_MODE = 0o1733  # sticky, anyone may make a directory, nobody but root may list them


def _write(path: Path, text: str, mode: int) -> None:
    """path written whole, with `mode` from its creation: the configuration may hold the database's
    password, so it is never readable by others, not even for a moment before a chmod."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode & 0o700)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def pieces(cfg: SiteConfig, directory: Path) -> dict[Path, tuple[str, int]]:
    conf = str(directory / CONFIG_NAME)
    out = {directory / CONFIG_NAME: (cfg.to_text(), 0o600)}
    if cfg.scheduler == "slurm":
        out[directory / scripts.TASK_PROLOG] = (scripts.task_prolog(cfg), 0o755)
        out[directory / scripts.EPILOG] = (scripts.epilog(cfg, conf), 0o755)
    else:
        out[directory / scripts.PBS_HOOK] = (scripts.pbs_hook(cfg, conf), 0o644)
    return out


def install(cfg: SiteConfig, directory: Path) -> list[str]:
    """Write the settings and scripts into directory, make the log directory and its spool, and create the
    database's schema. The lines to say (what to add to slurm.conf or qmgr)."""
    from iolens.store import sched_jobs
    from iolens.store.store import Store

    directory.mkdir(parents=True, exist_ok=True)
    cfg.spool.mkdir(parents=True, exist_ok=True)
    os.chmod(cfg.spool, SPOOL_MODE)
    with Store.open(cfg.db, create=True) as store:
        sched_jobs.set_view_settings(
            store.db, {"lustre_jobid": cfg.lustre_jobid, "tolerance": f"{cfg.tolerance:g}"}
        )
    for path, (text, mode) in pieces(cfg, directory).items():
        _write(path, text, mode)
    lines = [f"wrote {p}" for p in pieces(cfg, directory)]
    if cfg.scheduler == "slurm":
        lines += ["add to slurm.conf on every node (then `scontrol reconfigure`):",
                  *scripts.slurm_conf_lines(str(directory)).splitlines()]  # fmt: skip
    else:
        hook = directory / scripts.PBS_HOOK
        lines += ["install the hook (qmgr, on the PBS server):",
                  "  create hook iolens", "  set hook iolens event = \"execjob_launch,execjob_epilogue\"",
                  f"  import hook iolens application/x-python default {hook}"]  # fmt: skip
    lines.append(
        f"and run `{cfg.python} -m iolens site sync --config {directory / CONFIG_NAME}` every few minutes"
    )
    return lines


def check(cfg: SiteConfig, directory: Path) -> tuple[list[str], list[str]]:
    """(what is right, what is wrong) of an installation."""
    from iolens.store.store import Store

    ok: list[str] = []
    bad: list[str] = []
    (ok if os.access(cfg.lib, os.R_OK) else bad).append(
        f"profiler runtime {cfg.lib}" + ("" if os.access(cfg.lib, os.R_OK) else ": missing or not readable")
    )
    try:
        st = cfg.spool.stat()
        mode = stat.S_IMODE(st.st_mode)
        if mode != SPOOL_MODE:
            bad.append(
                f"{cfg.spool}: mode {mode:o}, expected {SPOOL_MODE:o} (users make their job's directory)"
            )
        else:
            ok.append(f"spool {cfg.spool} (mode {mode:o})")
    except OSError as exc:
        bad.append(f"{cfg.spool}: {exc.strerror}")
    for path, (text, mode) in pieces(cfg, directory).items():
        try:
            now = path.read_text()
        except OSError as exc:
            bad.append(f"{path}: {exc.strerror}")
            continue
        if path.suffix != ".conf" and now != text:
            bad.append(f"{path}: differs from what `iolens site install` writes (edited? install again)")
        elif mode & 0o111 and not os.access(path, os.X_OK):
            bad.append(f"{path}: not executable")
        else:
            ok.append(str(path))
    try:
        with Store.open(cfg.db, create=False):
            ok.append("database opens, schema up to date")
    except Exception as exc:  # noqa: BLE001 - said as a problem
        bad.append(f"database: {exc}")
    if cfg.scheduler == "slurm" and shutil.which("scontrol"):
        try:
            r = subprocess.run(
                ["scontrol", "show", "config"], capture_output=True, text=True, timeout=5, check=False
            )
            conf = r.stdout if r.returncode == 0 else ""
        except (OSError, subprocess.TimeoutExpired):
            conf = ""
        for key, name in (("TaskProlog", scripts.TASK_PROLOG), ("Epilog", scripts.EPILOG)):
            want = str(directory / name)
            found = [ln for ln in conf.splitlines() if ln.split("=")[0].strip() == key]
            if not conf:
                bad.append("scontrol show config: no answer (is slurmctld up?)")
                break
            if not found or want not in found[0]:
                bad.append(f"slurm.conf: {key} is not {want}")
            else:
                ok.append(f"slurm.conf: {key}={want}")
    return ok, bad
