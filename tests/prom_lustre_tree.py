"""A Lustre parameter tree made of the tests/data/lustre samples, for the Prometheus tests: an OSS (obdfilter
stats and job_stats, osd brw_stats), an MDS (md_stats) and a client (llite stats, osc and mdc rpc_stats), read
with `--lustre-root` or LustreCollector."""

from __future__ import annotations

from pathlib import Path

from .monitor_helpers import sample_text

FILES = {
    "obdfilter/lfs-OST0000/stats": "obdfilter-export-stats-2.12.txt",
    "obdfilter/lfs-OST0000/job_stats": "ost-job_stats-2.12.txt",
    "osd-ldiskfs/lfs-OST0000/brw_stats": "osd-ldiskfs-brw_stats-2.15.txt",
    "mdt/lfs-MDT0000/md_stats": "mdt-md_stats-old.txt",
    "llite/lfs-ffff88/stats": "llite-stats-2.14.txt",
    "osc/lfs-OST0000-osc-ffff88/rpc_stats": "osc-rpc_stats-2.17.txt",
    "mdc/lfs-MDT0000-mdc-ffff88/rpc_stats": "mdc-rpc_stats-2.15.txt",
}


def lustre_tree(root: Path) -> Path:
    for rel, sample in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = sample_text(sample)
        if text.startswith("llite.") or text.split("\n", 1)[0].endswith("="):
            text = text.split("\n", 1)[1]  # a sample saved from lctl keeps its `NAME=` line
        path.write_text(text)
    return root
