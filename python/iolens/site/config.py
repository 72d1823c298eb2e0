"""The site's settings: one INI file ([site] section) written by `iolens site install`, read by the epilog,
`iolens site sync` and `iolens site check`. It may hold the database's password: install writes it 0600.
"""

from __future__ import annotations

import configparser
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path

CONFIG_NAME = "iolens-site.conf"
SPOOL = "spool"  # LOG_DIR/spool/JOBID: one directory per running job, the runtime's logs
SCHEDULERS = ("slurm", "pbs")


class SiteConfigError(ValueError):
    """A settings file or option that cannot be used; the message names it."""


@dataclass
class SiteConfig:
    scheduler: str
    log_dir: Path
    db: str
    lib: Path
    python: str = sys.executable
    system: str = ""  # tag the profiles with this storage system (iolens db system)
    cluster: str = ""  # else the scheduler's (SLURM_CLUSTER_NAME, PBS server name)
    off_partitions: list[str] = field(default_factory=list)  # no profiling in these partitions / queues
    epilog_timeout_s: float = 5.0  # the epilog returns within this, whatever happens
    background_timeout_s: float = 600.0  # work the epilog handed to the background stops after this
    lustre_jobid: str = "%j"  # the job_stats id Lustre gives the job's I/O (its jobid_name, or %j)
    tolerance: float = 0.10  # profile vs job_stats: a relative difference beyond this is said
    # The epilog asks the controller (`scontrol show job`, at most 2 s) for the job's times and state; "no"
    # leaves them to sacct (iolens site sync) where the controller must not get one more RPC per job.
    ask_controller: bool = True

    @property
    def spool(self) -> Path:
        return self.log_dir / SPOOL

    def job_dir(self, job_id: str) -> Path:
        return self.spool / job_id

    def to_text(self) -> str:
        lines = ["# iolens site settings (docs/site.md); written by `iolens site install`", "[site]"]
        for f in fields(self):
            v = getattr(self, f.name)
            text = (
                ", ".join(v) if isinstance(v, list) else ("yes" if v else "no") if isinstance(v, bool) else v
            )
            lines.append(f"{f.name} = {text}")
        return "\n".join(lines) + "\n"


def _number(section: configparser.SectionProxy, key: str, default: float, path: Path) -> float:
    text = section.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise SiteConfigError(f"{path}: {key} = {text!r}: expected a number") from None
    if not value > 0:
        raise SiteConfigError(f"{path}: {key} = {text!r}: expected a number above 0")
    return value


def load(path: Path) -> SiteConfig:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        with open(path, encoding="utf-8") as f:
            parser.read_file(f)
    except OSError as exc:
        raise SiteConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except configparser.Error as exc:
        raise SiteConfigError(f"{path}: {exc.message.splitlines()[0]}") from None
    if not parser.has_section("site"):
        raise SiteConfigError(f"{path}: no [site] section")
    s = parser["site"]
    known = {f.name for f in fields(SiteConfig)}
    unknown = sorted(set(s) - known)
    if unknown:
        raise SiteConfigError(f"{path}: [site] has unknown key(s): {', '.join(unknown)}")
    for key in ("scheduler", "log_dir", "db", "lib"):
        if not s.get(key):
            raise SiteConfigError(f"{path}: [site] {key} is missing")
    if s["scheduler"] not in SCHEDULERS:
        raise SiteConfigError(f"{path}: scheduler = {s['scheduler']!r}: expected {' or '.join(SCHEDULERS)}")
    return SiteConfig(
        scheduler=s["scheduler"],
        log_dir=Path(s["log_dir"]),
        db=s["db"],
        lib=Path(s["lib"]),
        python=s.get("python") or sys.executable,
        system=s.get("system", ""),
        cluster=s.get("cluster", ""),
        off_partitions=[p.strip() for p in s.get("off_partitions", "").split(",") if p.strip()],
        epilog_timeout_s=_number(s, "epilog_timeout_s", 5.0, path),
        background_timeout_s=_number(s, "background_timeout_s", 600.0, path),
        lustre_jobid=s.get("lustre_jobid") or "%j",
        tolerance=_number(s, "tolerance", 0.10, path),
        ask_controller=_yes_no(s, "ask_controller", path),
    )


def _yes_no(section: configparser.SectionProxy, key: str, path: Path) -> bool:
    text = (section.get(key) or "yes").strip().lower()
    if text not in ("yes", "no"):
        raise SiteConfigError(f"{path}: {key} = {text!r}: expected yes or no")
    return text == "yes"
