"""mdtest 4's text output, line for line, from an iolens mdtest document (`--text-format=classic`).

Scripts written for mdtest read its output by awk field positions ("SUMMARY rate:" tables, "N tasks, M
files/directories", the -v lines): this renders the same lines with the same columns and spacing, in the
same order, so they keep working. The figures are iolens's: a phase's rate is all ranks' items over the
phase's time from its opening barrier to its closing one, which is what mdtest's table shows too.
Differences are listed in docs/mdtest.md ("Classic text output").
"""

from __future__ import annotations

import calendar
import math
import os
import time
from collections.abc import Iterable
from typing import Any

from iolens.results import MdtestDocument, MdtestPhase

# mdtest's release whose output this reproduces; the program token stays one word ("mdtest-4.0.0+iolens-V").
MDTEST_RELEASE = "4.0.0"

# The SUMMARY rows, in mdtest's order, with mdtest's names; None marks the directory rows (shown unless -F
# only) and the file rows (unless -D only); the tree rows are always there.
_DIR_ROWS = (
    ("dir-create", "Directory creation"),
    ("dir-stat", "Directory stat"),
    ("dir-rename", "Directory rename"),
    ("dir-remove", "Directory removal"),
)
_FILE_ROWS = (
    ("file-create", "File creation"),
    ("file-stat", "File stat"),
    ("file-read", "File read"),
    ("file-remove", "File removal"),
)
_TREE_ROWS = (("tree-create", "Tree creation"), ("tree-remove", "Tree removal"))

# mdtest 4.0.0 prefixes a -v line with the source line that printed it ("V-1: Rank   0 Line  1113 ..."); the
# same numbers keep such lines identical for a script that matches them whole.
_V_LINE = {
    "setting": 1767,
    "op-header": 2622,
    "iteration": 2015,
    "tree-create": 2091,
    "dir-create": 1113,
    "dir-stat": 1114,
    "dir-rename": 1115,
    "dir-remove": 1116,
    "file-create": 1399,
    "file-stat": 1403,
    "file-read": 1404,
    "file-remove": 1405,
    "tree-remove": 2201,
}
# The per-iteration -v result lines: mdtest's labels, padding included.
_V_LABEL = {
    "tree-create": "V-1: main:   Tree creation     :",
    "dir-create": "   Directory creation:",
    "dir-stat": "   Directory stat    :",
    "dir-rename": "   Directory rename :",
    "dir-remove": "   Directory removal :",
    "file-create": "  File creation     :",
    "file-stat": "  File stat         :",
    "file-read": "  File read         :",
    "file-remove": "  File removal      :",
    "tree-remove": "main   Tree removal      :",
}


def _cfg(doc: MdtestDocument, key: str, default: Any = None) -> Any:
    return doc.config.get(key, default)


def _on(doc: MdtestDocument, key: str) -> bool:
    v = _cfg(doc, key)
    return v is True or v == 1


def _vline(level: int, line: int, text: str) -> str:
    return f"V-{level}: Rank {0:3d} Line {line:5d} {text}"


def _stamp(iso: str) -> str:
    """mdtest's "%m/%d/%Y %H:%M:%S" in local time, from the document's ISO-8601 UTC time."""
    try:
        t = time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ")
        return time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(calendar.timegm(t)))
    except (ValueError, OverflowError):
        return time.strftime("%m/%d/%Y %H:%M:%S")


def _command_line(doc: MdtestDocument) -> str:
    """mdtest's "Command line used: PROGRAM 'arg' 'arg' ..." from the command as typed."""
    cmd = list(doc.command) or ["mdtest"]
    if len(cmd) >= 2 and cmd[1] == "mdtest":
        cmd = [f"{cmd[0]}-mdtest", *cmd[2:]]
    return "Command line used: " + cmd[0] + "".join(f" '{a}'" for a in cmd[1:])


def _fs_lines(path: str) -> list[str]:
    """mdtest's "Path" and "FS" lines (statvfs of the test path, or of its parent when the run removed it)."""
    lines = [f"{'Path':<20}: {path}"]
    for probe in (path, os.path.dirname(os.path.abspath(path))):
        try:
            st = os.statvfs(probe)
        except OSError:
            continue
        if not st.f_blocks:
            break
        total = st.f_blocks * st.f_bsize
        used = (1 - (st.f_bfree * st.f_bsize) / total) * 100
        size, unit = total / (1 << 30), "GiB"
        if size > 1024:
            size, unit = total / (1 << 40), "TiB"
        iused = (1 - st.f_ffree / st.f_files) * 100 if st.f_files else 0.0
        lines.append(
            f"{'FS':<20}: {size:.1f} {unit}   Used FS: {used:2.1f}%   "
            f"Inodes: {st.f_files / (1 << 20):.1f} Mi   Used Inodes: {iused:2.1f}%"
        )
        break
    return lines


def _nodemap(doc: MdtestDocument) -> str:
    """mdtest's "Nodemap:": 1 for each rank on rank 0's node (iolens knows how many, placed in blocks)."""
    ranks = doc.comm.ranks or 1
    if doc.comm.nodes <= 1:
        return "1" * ranks
    on_first = doc.comm.tasks_per_node or 1
    return "".join("1" if r < on_first else "0" for r in range(ranks))


def _what(doc: MdtestDocument) -> str:
    files, dirs = _on(doc, "files-only"), _on(doc, "dirs-only")
    return "files/directories" if files and dirs else "files" if files else "directories"


def _rows(doc: MdtestDocument) -> list[tuple[str, str]]:
    files, dirs = _on(doc, "files-only"), _on(doc, "dirs-only")
    rows: list[tuple[str, str]] = []
    if dirs:
        rows.extend(_DIR_ROWS)
    if files:
        rows.extend(_FILE_ROWS)
    return rows + list(_TREE_ROWS)


def _stats(values: list[float]) -> tuple[float, float, float, float]:
    """max, min, mean and the sample standard deviation (mdtest divides by n - 1; 0 for one value)."""
    if not values:
        return 0.0, 0.0, 0.0, 0.0
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return max(values), min(values), mean, sd


def _rank_figures(p: MdtestPhase, want_time: bool) -> list[float]:
    out = []
    for r in p.per_rank:
        if want_time:
            out.append(r.time_s)
        else:
            out.append(r.items / r.time_s if r.time_s > 0 else 0.0)
    return out


def summary_lines(
    doc: MdtestDocument, phases: list[MdtestPhase], iterations: int, want_time: bool
) -> list[str]:
    """One "SUMMARY rate:" (or "SUMMARY time:") table of mdtest 4, its rows in mdtest's order."""
    rank_stats = _on(doc, "showRankStatistics")
    lines = ["", f"SUMMARY {'time' if want_time else 'rate'}: (of {iterations} iterations)"]
    head = "   Operation     " + (
        "per Rank: Max            Min           Mean      per Iteration:" if rank_stats else "               "
    )
    lines.append(head + " Max            Min           Mean        Std Dev")
    lines.append(
        "   ---------      "
        + ("         ---            ---           ----       " if rank_stats else "")
        + "               ---            ---           ----        -------"
    )
    for name, title in _rows(doc):
        mine = [p for p in phases if p.name == name]
        per_iter = [p.time_s if want_time else p.rate_per_s for p in mine]
        mx, mn, mean, sd = _stats(per_iter)
        tree = name.startswith("tree-")
        line = f"   {title:<22} " if tree else f"   {title:<18} "
        if rank_stats:
            ranks = [v for p in mine for v in _rank_figures(p, want_time)]
            rmx, rmn, rmean, _ = _stats(ranks)
            line += f"{rmx:14.3f} {rmn:14.3f} {rmean:14.3f}     "
        if not tree:
            line += "    "
        line += f"{mx:14.3f} {mn:14.3f} {mean:14.3f} {sd:14.3f}"
        lines.append(line)
    return lines


def _verbose_iteration(doc: MdtestDocument, phases: list[MdtestPhase], it: int) -> list[str]:
    """mdtest's -v lines of one iteration: the tree's, the directories' (after all their phases), the files',
    then the tree's removal; a rate per rank, as mdtest prints it there."""
    lines = [_vline(1, _V_LINE["iteration"], f"main: * iteration {it + 1} *")]
    by_name = {p.name: p for p in phases if p.iteration == it}
    create, remove = bool(_cfg(doc, "create-only")), bool(_cfg(doc, "remove-only"))

    def result(name: str, per_rank: bool) -> str:
        p = by_name.get(name)
        t = p.time_s if p else 0.0
        r = (p.rate_per_s / max(p.tasks or 1, 1) if per_rank else p.rate_per_s) if p else 0.0
        return _vline(1, _V_LINE[name], f"{_V_LABEL[name]} {t:14.3f} sec, {r:14.3f} ops/sec")

    if create:
        lines.append(result("tree-create", False))
    if _on(doc, "dirs-only"):
        lines.extend(result(n, True) for n, _ in _DIR_ROWS)
    if _on(doc, "files-only"):
        lines.extend(result(n, True) for n, _ in _FILE_ROWS)
    if remove:
        lines.append(result("tree-remove", False))
    return lines


def _parameter_lines(doc: MdtestDocument) -> list[str]:
    """mdtest's -v dump of its settings (lines 2388-2423 of mdtest 4.0.0), from the run's configuration."""

    def tf(key: str) -> str:
        return "True" if _on(doc, key) else "False"

    paths = [p for p in str(_cfg(doc, "dir", ".")).split("@")]
    rows: list[tuple[int, str, str]] = [
        (2388, "api", str(_cfg(doc, "api", "")).upper()),
        (2389, "barriers", "False" if _cfg(doc, "no-barriers", 0) else "True"),
        (2390, "collective_creates", tf("collective-creates")),
        (2391, "create_only", tf("create-only")),
    ]
    out = [_vline(1, n, f"{k:<24}: {v}") for n, k, v in rows]
    out.append(_vline(1, 2392, "dirpath(s):"))
    out.extend(_vline(1, 2394, f"\t{p}") for p in paths)
    more: list[tuple[int, str, str]] = [
        (2396, "dirs_only", tf("dirs-only")),
        (2397, "read_bytes", str(_cfg(doc, "read-bytes", 0))),
        (2398, "read_only", tf("read-only")),
        (2399, "first", str(_cfg(doc, "first-tasks", 1))),
        (2400, "files_only", tf("files-only")),
        (2404, "iterations", str(_cfg(doc, "iterations", 1))),
        (2405, "items_per_dir", str(_cfg(doc, "items-per-dir", 0))),
        (2406, "last", str(_cfg(doc, "last-tasks", 0))),
        (2407, "leaf_only", tf("leaf-only")),
        (2408, "items", str(_cfg(doc, "items", 0))),
        (2409, "nstride", str(_cfg(doc, "stride", 0))),
        (2410, "pre_delay", str(_cfg(doc, "pre-iteration-delay", 0))),
        (2411, "remove_only", tf("remove-only")),
        (2412, "random_seed", str(_cfg(doc, "random-seed", 0))),
        (2413, "stride", str(_cfg(doc, "tasks-stride", 1))),
        (2414, "shared_file", tf("shared-file")),
        (2415, "time_unique_dir_overhead", tf("time-unique-dir-overhead")),
        (2416, "stone_wall_timer_seconds", str(_cfg(doc, "stonewall-timer", 0))),
        (2417, "stat_only", tf("stat-only")),
        (2418, "unique_dir_per_task", tf("unique-dir")),
        (2419, "write_bytes", str(_cfg(doc, "write-bytes", 0))),
        (2420, "sync_file", tf("sync-file")),
        (2421, "call_sync", tf("sync-phase")),
        (2422, "depth", str(_cfg(doc, "depth", 0))),
        (2423, "make_node", "1" if _on(doc, "mknod") else "0"),
    ]
    out.extend(_vline(1, n, f"{k:<24}: {v}") for n, k, v in more)
    return out


def _tests(doc: MdtestDocument) -> list[int]:
    """The numbers of tasks of the run's tests (a task range: several), in the order they ran."""
    seen: list[int] = []
    for p in doc.phases:
        t = p.tasks or doc.comm.ranks or 1
        if t not in seen:
            seen.append(t)
    return seen or [doc.comm.ranks or 1]


def _all_procs(doc: MdtestDocument, phases: list[MdtestPhase], iterations: int, want_time: bool) -> list[str]:
    """--print-all-procs: mdtest's "Per process result", each rank's rate (or time) per phase and iteration.
    Its rows as mdtest 4 prints them: the directory rows unless -F alone (its empty "Directory read"
    included), then always the file and tree rows (mdtest has no per-rank figures for the trees: zeros)."""
    lines = ["", f"Per process result ({'time' if want_time else 'rate'}):"]
    dirs_row = [("dir-create", "Directory creation"), ("dir-stat", "Directory stat"), ("", "Directory read")]
    rows = [*dirs_row, *_DIR_ROWS[2:]] if _on(doc, "dirs-only") else []
    rows += [*_FILE_ROWS, *_TREE_ROWS]
    ranks = max((p.tasks or doc.comm.ranks or 1 for p in phases), default=doc.comm.ranks or 1)
    for it in range(iterations):
        lines.append(f"iteration: {it}")
        for name, title in rows:
            p = next((x for x in phases if x.name == name and x.iteration == it), None)
            figures = _rank_figures(p, want_time) if p and not name.startswith("tree-") else []
            figures += [0.0] * (ranks - len(figures))
            lines.append(
                f"Test {title}" + "".join(f"{' ' if k == 0 else ','}{v:e}" for k, v in enumerate(figures))
            )
    return lines


def render(doc: MdtestDocument) -> str:
    """The whole of mdtest 4's standard output for this run, as text (lines end with a newline)."""
    out: list[str] = []
    verbosity = int(_cfg(doc, "verbosity", 0) or 0)
    iterations = int(_cfg(doc, "iterations", 1) or 1)
    out.append(f"-- started at {_stamp(doc.started_at)} --")
    out.append("")
    nodes = doc.comm.nodes or 1
    out.append(
        f"mdtest-{MDTEST_RELEASE}+iolens-{doc.version} was launched with {doc.comm.ranks or 1} total task(s) "
        f"on {nodes} node(s)"
    )
    out.append(_command_line(doc))
    all_phases = not any(_on(doc, k) for k in ("create-only", "stat-only", "read-only", "remove-only")) or (
        all(_on(doc, k) for k in ("create-only", "stat-only", "read-only", "remove-only"))
        and _on(doc, "rename-dirs")
    )
    if verbosity >= 1 and all_phases:
        out.append(_vline(1, _V_LINE["setting"], "main: Setting create/stat/read/remove_only to True"))
    if _on(doc, "read-only") and _on(doc, "files-only") and not _cfg(doc, "read-bytes", 0):
        out.append("WARNING: Read bytes is 0, thus, a read test will actually just open/close")
    if verbosity >= 1:
        out.extend(_parameter_lines(doc))
    path = doc.geometry.paths[0] if doc.geometry and doc.geometry.paths else str(_cfg(doc, "dir", "."))
    out.extend(_fs_lines(path))
    out.append(f"Nodemap: {_nodemap(doc)}")
    stride = int(_cfg(doc, "stride", 0) or 0)
    if doc.geometry is not None and doc.geometry.stride is not None:
        stride = doc.geometry.stride
    if stride:
        out.append(f"V-0: Rank {0:3d} Line {2537:5d} Shifting ranks by {stride} for each phase.")
    seed = int(_cfg(doc, "random-seed", 0) or 0)
    if seed > 0 and _on(doc, "random"):
        out.append(f"random seed: {seed}")
    items = doc.geometry.items_per_rank if doc.geometry else 0
    print_time, both = _on(doc, "print-time"), _on(doc, "print-rate-and-time")
    for tasks in _tests(doc):
        phases = [p for p in doc.phases if (p.tasks or doc.comm.ranks or 1) == tasks]
        if _on(doc, "shared-file"):
            out.append(f"{tasks} tasks, 1 file")  # mdtest's words for -S
        else:
            out.append(f"{tasks} tasks, {tasks * items} {_what(doc)}")
        if verbosity >= 1:
            out.append(_vline(1, _V_LINE["op-header"], ""))
            out.append(
                _vline(1, _V_LINE["op-header"] + 1, "   Operation               Duration              Rate")
            )
            out.append(
                _vline(1, _V_LINE["op-header"] + 2, "   ---------               --------              ----")
            )
        for it in range(iterations):
            if verbosity >= 1:
                out.extend(_verbose_iteration(doc, phases, it))
            out.extend(_stonewall(phases, it, tasks))
        for want_time in (False, True) if both else (print_time,):
            if _on(doc, "print-all-procs"):
                out.extend(_all_procs(doc, phases, iterations, want_time))
            out.extend(summary_lines(doc, phases, iterations, want_time))
        errors = sum(p.verify.errors for p in phases if p.verify is not None)
        if errors:
            out.append("")
            out.append(
                f"ERROR: verifying the data on read ({errors} errors)! Take the performance values with care!"
            )
            out.append("")
    out.append(f"-- finished at {_stamp(doc.ended_at or doc.started_at)} --")
    out.append("")
    return "\n".join(out) + "\n"


def _stonewall(phases: Iterable[MdtestPhase], it: int, tasks: int) -> list[str]:
    out = []
    for p in phases:
        sw = p.stonewall
        if p.iteration == it and sw is not None and sw.hit:
            avg = sw.items_sum_at_deadline / max(tasks, 1)
            out.append(f"Continue stonewall hit min: {sw.items_min} max: {sw.items_max} avg: {avg:.1f} ")
    return out
