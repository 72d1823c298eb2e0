"""IOR 4's JSON and CSV (`-O summaryFormat=JSON|CSV`), written from iolens's ior documents: keys, nesting and
order as IOR 4.0.0's src/ior-output.c writes them, figures with its 4 decimals (docs/ior.md, "Output").
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from iolens.report import ior_test
from iolens.report.ior_test import MIB, Doc, Row, Streams, SummaryRow, Test

# ---- IOR's JSON (-O summaryFormat=JSON) ------------------------------------------------------------------


def _json_value(value: Any, depth: int) -> str:
    pad = "  " * (depth + 1)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [
            f"{pad}{json.dumps(k, ensure_ascii=False)}: {_json_value(v, depth + 1)}" for k, v in value.items()
        ]
        return "{\n" + ", \n".join(items) + "\n" + "  " * depth + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + ", \n".join(pad + _json_value(v, depth + 1) for v in value) + "\n" + "  " * depth + "]"
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # A figure, as IOR's PrintKeyValDouble writes it: 4 decimals; an infinity as a string.
        return f"{value:.4f}" if math.isfinite(value) else json.dumps(f"{value:.4f}")
    return json.dumps("" if value is None else str(value), ensure_ascii=False)


def ior_json_object(docs: Sequence[Doc], verbosity: int, log: Callable[[str], None]) -> dict[str, Any]:
    """IOR's JSON document for these tests, keys in IOR's order (log lines go to `log`)."""
    tests = ior_test.tests_of(docs)
    first = docs[0] if docs else {}
    top: dict[str, Any] = {
        "Version": ior_test.IOR_VERSION,
        "Began": ior_test.ctime(first.get("started_at")),
        "Command line": ior_test.command_line(first),
        "Machine": ior_test.machine(first, verbosity),
        "tests": [],
    }
    for t in tests:
        size, used, inodes, used_inodes = t.capacity()
        test: dict[str, Any] = {
            "TestID": t.id,
            "StartTime": ior_test.ctime(t.doc.get("started_at")),
            "Path": t.first_file,
            "Capacity": size,
            "Used Capacity": used,
            "Inodes": inodes,
            "Used Inodes": used_inodes,
            "Parameters": dict(t.parameters(verbosity)),
        }
        for line in ior_test.test_preamble(t, verbosity) + ior_test.debug_banner(t):
            log(line)
        test["Options"] = dict(t.options(verbosity))
        results: list[dict[str, Any]] = []
        for e in ior_test.test_events(t, verbosity):
            if e.kind == "log":
                log(e.text)
            elif e.kind == "row" and e.row is not None:
                r = e.row
                results.append(
                    {
                        "access": r.access,
                        "bwMiB": float(r.bw_mib),
                        "blockKiB": float(r.block_kib),
                        "xferKiB": float(r.xfer_kib),
                        "iops": float(r.iops),
                        "latency": float(r.latency_s),
                        "openTime": float(r.open_s),
                        "wrRdTime": float(r.xfer_s),
                        "closeTime": float(r.close_s),
                        "totalTime": float(r.total_s),
                    }
                )
            elif e.kind == "remove":
                results.append({"access": "remove", "totalTime": float(e.time_s)})
        test["Results"] = results
        if verbosity >= 1:
            best: dict[str, Any] = {}
            if t.writes():
                best.update(writeMiB=float(t.max_bw("write") / MIB), writeMB=float(t.max_bw("write") / 1e6))
            if t.reads():
                best.update(readMiB=float(t.max_bw("read") / MIB), readMB=float(t.max_bw("read") / 1e6))
            test["max"] = best
        pairs = ior_test.wear_out_pairs(t)
        if pairs is not None:
            log(f"Pairs deadlineForStonewallingaccessed: {pairs}")
        top["tests"].append(test)
    top["summary"] = [_json_summary(t, s) for t in tests for s in t.summaries()]
    top["Finished"] = ior_test.ctime(docs[-1].get("ended_at") if docs else None)
    return top


def _json_summary(t: Test, s: SummaryRow) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "operation": s.operation,
        "API": t.api,
        "TestID": t.id,
        "ReferenceNumber": t.ref_num,
        "segmentCount": t.segments,
        "blockSize": t.block,
        "transferSize": t.xfer,
        "numTasks": t.tasks,
        "tasksPerNode": t.tpn,
        "repetitions": t.reps,
        "filePerProc": t.fpp,
        "reorderTasks": t.reorder,
        "taskPerNodeOffset": t.task_offset,
        "reorderTasksRandom": t.reorder_random,
        "reorderTasksRandomSeed": t.reorder_seed,
        "bwMaxMIB": float(s.bw_max),
        "bwMinMIB": float(s.bw_min),
        "bwMeanMIB": float(s.bw_mean),
        "bwStdMIB": float(s.bw_sd),
        "OPsMax": float(s.ops_max),
        "OPsMin": float(s.ops_min),
        "OPsMean": float(s.ops_mean),
        "OPsSD": float(s.ops_sd),
        "MeanTime": float(s.time_mean),
    }
    if s.stonewall_s is not None and s.stonewall_mib is not None:
        entry.update(StoneWallTime=float(s.stonewall_s), StoneWallbwMeanMIB=float(s.stonewall_mib))
    entry["xsizeMiB"] = float(s.agg_mib)
    return entry


def render_ior_json(docs: Sequence[Doc], verbosity: int, out: TextIO, log: TextIO | None = None) -> None:
    """IOR's `-O summaryFormat=JSON` document (one JSON value: `out` holds nothing else)."""
    s = Streams(out, log)
    obj = ior_json_object(docs, verbosity, s.logl)
    out.write(_json_value(obj, 0) + "\n")
    out.flush()


# ---- IOR's CSV (-O summaryFormat=CSV) --------------------------------------------------------------------

CSV_HEADER = (
    "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter"
)


def csv_row(r: Row, tasks: int) -> str:
    figures = (
        r.bw_mib,
        r.iops,
        r.latency_s,
        r.block_kib,
        r.xfer_kib,
        r.open_s,
        r.xfer_s,
        r.close_s,
        r.total_s,
    )
    return ",".join([r.access, *(f"{x:.4f}" for x in figures), str(tasks), str(r.iteration)])


def render_ior_csv(docs: Sequence[Doc], verbosity: int, out: TextIO, log: TextIO | None = None) -> None:
    """IOR's `-O summaryFormat=CSV`: per test a header line and a row per phase (IOR writes no summary)."""
    s = Streams(out, log)
    for t in ior_test.tests_of(docs):
        for line in ior_test.test_preamble(t, verbosity):
            s.logl(line)
        for e in ior_test.test_events(t, verbosity):
            if e.kind == "log":
                s.logl(e.text)
            elif e.kind == "header":
                s.res(CSV_HEADER)
            elif e.kind == "row" and e.row is not None:
                s.res(csv_row(e.row, t.tasks))
        pairs = ior_test.wear_out_pairs(t)
        if pairs is not None:
            s.logl(f"Pairs deadlineForStonewallingaccessed: {pairs}")
    out.flush()
