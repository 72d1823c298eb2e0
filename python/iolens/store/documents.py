"""iolens result documents (docs/schema.md) as run records: a row for the run, a row per phase.

What a phase row holds, by workload (docs/db.md "Phases"):

- ior: one row per (access, iteration): value = bw_bytes_per_s (B/s), ops = transfers, latency per transfer.
- mdtest: one row per (phase, iteration): value = rate_per_s (items/s, mdtest's rate), latency per item.
- md-workbench: one row per phase (precreate, benchmark per iteration, cleanup): value = rate_per_s
  (md-workbench's iops/s), ops = objects, latency of its main operation (create, read, delete).
- find: one row "find": value = rate_per_s (entries/s), ops = entries scanned, latency per stat call.
- fio: one row per job and direction that moved data, named JOB:read / JOB:write: value = bw_bytes_per_s,
  ops = I/Os, latency = lat_ns (issue to completion).
- io500: one row per IO500 phase (value in the app's unit, GiB/s or kIOPS, with its time window and
  validity), then kind "score" rows bw, md and score (and bw-x, md-x, score-x in extended mode).
"""

from __future__ import annotations

import shlex
from typing import Any

from iolens import results
from iolens.store.records import PhaseRow, RunRecord, Sample, canonical_json, config_hash, epoch, sha256


def _latency(lat: results.Latency | None) -> dict[str, Any]:
    if lat is None or lat.count == 0:
        return {}
    return {
        "lat_count": lat.count,
        "lat_mean_ns": lat.mean,
        "p50_ns": lat.p50,
        "p90_ns": lat.p90,
        "p99_ns": lat.p99,
        "p99_9_ns": lat.p99_9,
        "max_ns": lat.max,
    }


def _ior_phases(doc: results.IorDocument) -> list[PhaseRow]:
    rows = []
    for p in doc.phases:
        rows.append(
            PhaseRow(
                name=p.name,
                iteration=p.iteration,
                value=p.bw_bytes_per_s,
                unit="B/s",
                bytes=p.bytes,
                ops=p.ops,
                time_s=p.times.total_s,
                valid=None if p.verify is None else p.verify.errors == 0,
                status="ok",
                **_latency(p.latency_ns),
            )
        )
    return rows


def _mdtest_phases(doc: results.MdtestDocument) -> list[PhaseRow]:
    return [
        PhaseRow(
            name=p.name,
            iteration=p.iteration,
            value=p.rate_per_s,
            unit="items/s",
            ops=p.items,
            time_s=p.time_s,
            valid=None if p.verify is None else p.verify.errors == 0,
            status="ok",
            **_latency(p.latency_ns),
        )
        for p in doc.phases
    ]


_MDWB_MAIN_OP = {"precreate": "create", "benchmark": "read", "cleanup": "delete"}


def _mdworkbench_phases(doc: results.MdworkbenchDocument) -> list[PhaseRow]:
    return [
        PhaseRow(
            name=p.name,
            iteration=p.iteration,
            value=p.rate_per_s,
            unit="ops/s",
            ops=p.objects,
            time_s=p.time_s,
            valid=p.errors == 0,
            status="ok",
            **_latency(p.latency_ns.get(_MDWB_MAIN_OP.get(p.name, ""))),
        )
        for p in doc.phases
    ]


def _find_phases(doc: results.FindDocument) -> list[PhaseRow]:
    f = doc.find
    if f is None:
        return []
    return [
        PhaseRow(
            name="find",
            value=f.rate_per_s,
            unit="entries/s",
            ops=f.scanned,
            time_s=f.time_s,
            valid=f.errors == 0,
            status="ok",
            **_latency(f.latency_ns),
        )
    ]


def _fio_phases(doc: results.FioDocument) -> list[PhaseRow]:
    rows = []
    for job in doc.jobs:
        for direction in job.directions:
            d = job.direction(direction)
            rows.append(
                PhaseRow(
                    name=f"{job.name}:{direction}",
                    value=d.bw_bytes_per_s,
                    unit="B/s",
                    bytes=d.bytes,
                    ops=d.ios,
                    time_s=d.runtime_s,
                    valid=None if job.verify is None else job.verify.errors == 0,
                    status="ok",
                    **_latency(d.lat_ns),
                )
            )
    return rows


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _io500_phases(doc: results.Io500Document) -> list[PhaseRow]:
    s = doc.io500
    if s is None:
        return []
    rows = []
    for p in s.phases:
        f = p.figures
        rows.append(
            PhaseRow(
                name=p.name,
                value=p.score,
                unit=p.unit,
                bytes=_int(f.get("bytes")),
                ops=_int(f.get("items")) if "items" in f else _int(f.get("scanned")),
                time_s=p.runtime_s,
                started_at=epoch(p.started_at),
                ended_at=epoch(p.ended_at),
                p50_ns=_int(f.get("latency_p50_ns")),
                p99_ns=_int(f.get("latency_p99_ns")),
                valid=p.valid,
                status=p.status,
            )
        )
    rows += score_rows(s.score.bw_gib_per_s, s.score.md_kiops, s.score.score, s.score.valid)
    if s.extended_score is not None:
        x = s.extended_score
        rows += score_rows(x.bw_gib_per_s, x.md_kiops, x.score, x.valid, suffix="-x")
    return rows


def score_rows(bw: float, md: float, score: float, valid: bool, suffix: str = "") -> list[PhaseRow]:
    """IO500's three figures as rows of kind "score" (so they have trends and regressions like phases)."""
    return [
        PhaseRow(name=f"bw{suffix}", kind="score", value=bw, unit="GiB/s", valid=valid),
        PhaseRow(name=f"md{suffix}", kind="score", value=md, unit="kIOPS", valid=valid),
        PhaseRow(name=f"score{suffix}", kind="score", value=score, unit="score", valid=valid),
    ]


def _file_system(doc: results.Document) -> str | None:
    if isinstance(doc, results.IorDocument):
        return doc.target.file_system or None
    if isinstance(doc, results.FindDocument) and doc.find is not None:
        return doc.find.file_system or None
    if isinstance(doc, results.FioDocument) and doc.jobs:
        return doc.jobs[0].file_system or None
    return None


def cache_mode(doc: results.Document) -> str | None:
    """The page cache before the run's buffered reads (docs/db.md "Cache modes"): an ior run's choice when it
    read; an io500 run's, "evict" in documents written before iolens recorded it (its io500 always evicted
    then); a fio run's from its jobs' cache= modes (results.FioDocument.cache_mode); None for the other
    workloads."""
    if isinstance(doc, results.IorDocument | results.FioDocument):
        return doc.cache_mode
    if isinstance(doc, results.Io500Document) and doc.io500 is not None:
        return doc.io500.cache_mode or "evict"
    return None


def run_record(doc: results.Document, source_path: str | None = None) -> RunRecord:
    """The run record of a parsed result document. Its uid is the hash of the document's canonical JSON,
    so the same document stored twice (or reformatted) is one run."""
    text = canonical_json(doc.raw)
    phases: list[PhaseRow]
    valid: bool | None = doc.ok and doc.verify_errors == 0
    score = None
    chash = config_hash(doc.config)
    if isinstance(doc, results.IorDocument):
        phases = _ior_phases(doc)
    elif isinstance(doc, results.MdtestDocument):
        phases = _mdtest_phases(doc)
    elif isinstance(doc, results.MdworkbenchDocument):
        phases = _mdworkbench_phases(doc)
    elif isinstance(doc, results.FindDocument):
        phases = _find_phases(doc)
    elif isinstance(doc, results.FioDocument):
        phases = _fio_phases(doc)
    elif isinstance(doc, results.Io500Document):
        phases = _io500_phases(doc)
        if doc.io500 is not None:
            valid = doc.io500.valid
            score = doc.io500.score.score
        # The IO500 config hash, as result.txt has it: iolens runs and the app's runs of one config match.
        chash = str(doc.config.get("config_hash") or chash)
    else:  # pragma: no cover - DOCUMENT_TYPES and this list grow together
        phases = []
    for row in phases:
        if row.status is None:
            row.status = "ok"
    samples = _monitor(doc.raw, phases)
    return RunRecord(
        uid=sha256(text),
        tool=doc.workload or "ior",
        origin="iolens",
        status=doc.status,
        document=text,
        version=doc.version or None,
        command=shlex.join(doc.command) if doc.command else None,
        config=doc.config,
        config_hash=chash,
        started_at=epoch(doc.started_at),
        ended_at=epoch(doc.ended_at),
        ranks=doc.comm.ranks or None,
        nodes=doc.comm.nodes or None,
        hostname=doc.host.hostname or None,
        file_system=_file_system(doc),
        valid=valid,
        score=score,
        source_path=source_path,
        cache_mode=cache_mode(doc),
        phases=phases,
        samples=samples,
    )


def _monitor(raw: dict[str, Any], phases: list[PhaseRow]) -> list[Sample]:
    """A document's "monitor" object (`--monitor`): its phase windows go on the phase rows (finer than the
    documents' own times), its samples are stored with the run (host: the sampled node)."""
    mon = raw.get("monitor")
    if not isinstance(mon, dict):
        return []
    windows: dict[tuple[str, Any], tuple[float, float]] = {}
    for w in mon.get("windows") or []:
        if (
            isinstance(w, dict)
            and isinstance(w.get("start"), int | float)
            and isinstance(w.get("end"), int | float)
        ):
            windows[(str(w.get("name")), w.get("iteration"))] = (float(w["start"]), float(w["end"]))
            windows.setdefault((str(w.get("name")), None), (float(w["start"]), float(w["end"])))
    for row in phases:
        if row.kind != "phase":
            continue
        found = windows.get((row.name, row.iteration)) or windows.get((row.name, None))
        if found is None and ":" in row.name:  # fio: JOB:read runs in the window of JOB's group
            job = row.name.rsplit(":", 1)[0]
            for (name, _), span in windows.items():
                head, _, jobs = name.partition(": ")
                if head.startswith("group ") and job in [j.strip() for j in jobs.split(",")]:
                    found = span
                    break
        if found is not None:  # the monitor's windows are the finer ones (the documents' are to the second)
            row.started_at, row.ended_at = found
    from iolens.store.samples import record_samples

    host = str(mon.get("host") or raw.get("host", {}).get("hostname") or "unknown")
    streams: list[tuple[str, Any]] = [(host, mon.get("samples"))]
    nodes = mon.get("nodes")
    if isinstance(nodes, dict):  # under MPI, each node's own samples (its host)
        streams.extend((str(h), n.get("samples")) for h, n in nodes.items() if isinstance(n, dict))
    out: list[Sample] = []
    for who, records in streams:
        for rec in records if isinstance(records, list) else []:
            if isinstance(rec, dict) and rec.get("type", "sample") == "sample" and "time" in rec:
                try:
                    out.extend(record_samples(rec, who))
                except ValueError:
                    continue
    return out
