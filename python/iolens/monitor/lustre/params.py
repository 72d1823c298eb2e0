"""Lustre parameters as `lctl get_param` names them, and where it finds them.

`lctl get_param NAME` looks under /proc/fs/lustre, /sys/fs/lustre and /sys/kernel/debug/lustre, in that
order; a `.` in the name is a `/` in the path, and globs are allowed. Its output holds one `NAME=` line before
each multi-line value (`NAME=VALUE` for a one-line value). This module finds parameters the same way, splits
lctl's output back into parameters, and names the parts of a parameter (component, target, kind, client NID).
"""

from __future__ import annotations

import glob
import os
import re

ROOTS = ("/proc/fs/lustre", "/sys/fs/lustre", "/sys/kernel/debug/lustre")

# The statistics the monitor reads: parameter pattern → the parser that reads it.
PATTERNS = {
    "llite.*.stats": "stats",
    "osc.*.stats": "stats",
    "mdc.*.stats": "stats",
    "lmv.*.md_stats": "stats",
    "osc.*.rpc_stats": "rpc_stats",
    "mdc.*.rpc_stats": "rpc_stats",
    "obdfilter.*.stats": "stats",
    "mdt.*.stats": "stats",
    "mdt.*.md_stats": "stats",
    "obdfilter.*.job_stats": "job_stats",
    "mdt.*.job_stats": "job_stats",
    "obdfilter.*.brw_stats": "brw_stats",
    "osd-*.*.brw_stats": "brw_stats",
}
# One file per client on a server: many files to read each interval, so only on request.
EXPORT_PATTERNS = {
    "obdfilter.*.exports.*.stats": "stats",
    "mdt.*.exports.*.stats": "stats",
}

# What lustre_exporter calls each kind of device in its `component` label.
COMPONENTS = {
    "llite": "client",
    "osc": "osc",
    "mdc": "mdc",
    "lmv": "lmv",
    "obdfilter": "ost",
    "mdt": "mdt",
    "mds": "mds",
    "ost": "oss",
    "ldlm": "ldlm",
}

# `NAME=`: a first part, a dot, then anything without space or `=` (dots included). Written without a
# repeated group: `(?:\.[^\s=]+)+` reads the same names but backtracks exponentially on a long dotted line
# without `=` (`a.a.a.…`: 6,000 characters took minutes).
_PARAM_LINE = re.compile(r"^([A-Za-z0-9_\-]+\.[^\s=]+)=(.*)$")


def kind_of(name: str) -> str:
    """The parser a parameter needs, from its last part."""
    last = name.rsplit(".", 1)[-1]
    if last in ("job_stats", "rpc_stats", "brw_stats"):
        return last
    return "stats"


def describe(name: str) -> dict[str, str]:
    """component, target, file (the last part) and, for a per-client file, nid; `service` for the parts
    between target and file (`ost.OSS.ost_io.stats`)."""
    parts = name.split(".")
    first = parts[0]
    comp = "osd" if first.startswith("osd-") else COMPONENTS.get(first, first)
    out = {"component": comp, "target": parts[1] if len(parts) > 2 else "", "file": parts[-1]}
    middle = parts[2:-1]
    if middle and middle[0] == "exports":
        out["nid"] = ".".join(middle[1:])
    elif middle:
        out["service"] = ".".join(middle)
    return out


def split_output(text: str) -> list[tuple[str | None, str]]:
    """(parameter name or None, its text) for each parameter in `lctl get_param` output, or the whole text
    under None when there is no `NAME=` line (a copy of the file itself)."""
    entries: list[tuple[str | None, str]] = []
    name: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        m = _PARAM_LINE.match(line)
        if m is not None:
            if name is not None or any(x.strip() for x in lines):
                entries.append((name, "\n".join(lines)))
            name = m.group(1)
            lines = [m.group(2)] if m.group(2) else []
        else:
            lines.append(line)
    if name is not None or any(x.strip() for x in lines):
        entries.append((name, "\n".join(lines)))
    return entries


# debugfs is root's only: where client statistics are since 2.12.
DEBUGFS_HINT = "client statistics in debugfs are readable by root only"


def denied_roots(roots: tuple[str, ...] = ROOTS) -> dict[str, str]:
    """{root: why} of the roots that are there but may not be searched (glob would pass over them without a
    word: /sys/kernel/debug is mode 0700)."""
    out: dict[str, str] = {}
    for root in roots:
        try:
            os.stat(root)
        except PermissionError:
            pass
        except OSError:
            continue  # not there: no Lustre (or no debugfs), nothing to say
        else:
            if not os.path.isdir(root) or os.access(root, os.R_OK | os.X_OK):
                continue
        hint = DEBUGFS_HINT if "/debug/" in root + "/" else "run as root?"
        out[root] = f"permission denied ({hint})"
    return out


def find(patterns: dict[str, str], roots: tuple[str, ...] = ROOTS) -> dict[str, str]:
    """{parameter name: path} of every file matching the patterns, the first root winning, as lctl does."""
    found: dict[str, str] = {}
    for root in roots:
        if not os.path.isdir(root):
            continue
        for pattern in patterns:
            for path in sorted(glob.glob(os.path.join(root, *pattern.split(".")))):
                if not os.path.isfile(path):
                    continue
                name = ".".join(os.path.relpath(path, root).split(os.sep))
                found.setdefault(name, path)
    return found
