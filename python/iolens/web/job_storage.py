"""A job against the storage: its rates beside the latest benchmark figures of its system.

The figures come from the system's latest IO500 run (its IOR and mdtest phases), its latest mdtest run and its
latest IOR run of each transfer size (store.portal_jobs.latest_benchmarks). A job's write (read) rate is
compared with the best write (read) figure, "the file system's measured bandwidth", and its typical access
(the mean bytes per call) with the figure whose transfer size is nearest (by ratio). Users see the figures
and the runs' dates only: a benchmark's command and paths are staff's, who get the run ids as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from iolens.io500.phases import parse_size
from iolens.render import human_bytes
from iolens.report import text as fmt

GIB, MIB = 1024**3, 1024**2
# A phase's unit -> the factor to B/s (bandwidths) or operations/s (metadata rates).
TO_RATE = {"B/s": 1.0, "MiB/s": MIB, "GiB/s": GIB, "kIOPS": 1e3, "items/s": 1.0, "ops/s": 1.0}
# IO500's fixed transfer sizes (its rules); ior-easy's is the config's transferSize (the app's default: 2m).
IO500_HARD_TRANSFER = 47008
IO500_RND4K_TRANSFER = 4096
IO500_EASY_TRANSFER = 2 * MIB
TOOL_LABELS = {"io500": "IO500", "ior": "IOR", "mdtest": "mdtest"}


@dataclass(frozen=True)
class Figure:
    """One benchmark phase's figure, as a rate."""

    run_id: int
    tool: str
    phase: str
    kind: str  # "write", "read" (rate in B/s) or "meta" (operations/s)
    rate: float
    transfer: int | None  # bytes per call (IOR phases)
    started_at: float | None
    valid: bool | None

    @property
    def label(self) -> str:
        """e.g. "IO500 ior-hard-write, 47008-byte transfers", "IOR write, 1.00 MiB transfers"."""
        size = ""
        if self.transfer:
            size = (
                f", {self.transfer}-byte transfers"
                if self.transfer % 1024
                else (f", {human_bytes(self.transfer)} transfers")
            )
        return f"{TOOL_LABELS.get(self.tool, self.tool)} {self.phase}{size}"

    @property
    def shown(self) -> str:
        return rate_text(self.rate, self.kind)

    @property
    def date(self) -> str:
        return fmt.when(self.started_at).split(" ")[0] if self.started_at is not None else "an unknown date"


def rate_text(rate: float, kind: str) -> str:
    if kind == "meta":
        return f"{rate / 1e3:,.1f} k ops/s" if rate >= 1e4 else f"{rate:,.0f} ops/s"
    return fmt.value(rate, "B/s")


def percent(x: float) -> str:
    p = x * 100
    if p == 0:
        return "0%"
    if p < 0.01:
        return "under 0.01%"
    return f"{p:.0f}%" if p >= 10 else f"{p:.1f}%" if p >= 1 else f"{p:.2f}%"


def _size(value: Any) -> int | None:
    if isinstance(value, int) and value > 0:
        return value
    if isinstance(value, str):
        return parse_size(value)
    return None


def _io500_transfer(phase: str, config: dict[str, Any] | None) -> int | None:
    if phase.startswith("ior-hard"):
        return IO500_HARD_TRANSFER
    if phase.startswith("ior-rnd4K"):
        return IO500_RND4K_TRANSFER
    if phase.startswith("ior-easy"):
        easy = (config or {}).get("ior-easy")
        return (_size(easy.get("transferSize")) if isinstance(easy, dict) else None) or IO500_EASY_TRANSFER
    return None


def figures(runs: list[dict[str, Any]]) -> list[Figure]:
    """The figures of latest_benchmarks' runs (newest first): every IO500 IOR and mdtest phase, every mdtest
    phase, and the write and read of the newest IOR run of each transfer size."""
    out: list[Figure] = []
    seen_ior: set[tuple[int | None, str]] = set()
    for run in runs:
        config = run["config"] if isinstance(run["config"], dict) else None
        for ph in run["phases"]:
            factor = TO_RATE.get(ph.unit or "")
            if ph.kind != "phase" or ph.value is None or factor is None or ph.value <= 0:
                continue
            name, tool = ph.name, run["tool"]
            if tool == "io500" and name.startswith("ior-"):
                kind, transfer = (
                    ("write" if name.endswith("-write") else "read"),
                    _io500_transfer(name, config),
                )
            elif (tool == "io500" and name.startswith("mdtest-")) or tool == "mdtest":
                kind, transfer = "meta", None
            elif tool == "ior" and name in ("write", "read"):
                kind, transfer = name, _size((config or {}).get("transfer-size"))
                if (transfer, kind) in seen_ior:
                    continue  # an older run of the same size
                seen_ior.add((transfer, kind))
            else:
                continue
            out.append(Figure(run["id"], tool, name, kind, ph.value * factor, transfer, run["started_at"],
                              ph.valid))  # fmt: skip
    return out


@dataclass(frozen=True)
class Sentence:
    text: str
    runs: tuple[int, ...]  # the runs of the figures it cites (staff see them)


JOB_FIGURES = {
    # kind: (bytes or operations, rate, mean size per call, past tense, what)
    "write": ("bytes_written", "write_rate_bytes_per_s", "mean_write_bytes", "wrote", "write"),
    "read": ("bytes_read", "read_rate_bytes_per_s", "mean_read_bytes", "read", "read"),
}


def compare(job: dict[str, Any], figs: list[Figure]) -> list[Sentence]:
    """The job's survey row (portal_jobs.survey_row) beside the figures, as sentences."""
    out: list[Sentence] = []
    for kind, (amount, rate_key, size_key, did, what) in JOB_FIGURES.items():
        rate, size = job.get(rate_key), job.get(size_key)
        if not job.get(amount) or not rate:
            continue
        cands = [f for f in figs if f.kind == kind]
        if not cands:
            out.append(Sentence(f"This job {did} at {rate_text(rate, kind)}; no benchmark of this system "
                                f"measured its {what} bandwidth.", ()))  # fmt: skip
            continue
        best = max(cands, key=lambda f: f.rate)
        text = (
            f"This job {did} at {rate_text(rate, kind)}: {percent(rate / best.rate)} of the file system's "
            f"measured {what} bandwidth ({best.shown}, {best.label}, {best.date})"
        )
        cited = [best]
        sized = [f for f in cands if f.transfer]
        if size and sized:
            near = min(sized, key=lambda f: (abs(math.log(f.transfer / size)), -(f.started_at or 0)))  # type: ignore[operator]
            text += (
                f", with {human_bytes(size)} {what}s that the benchmark shows run at {near.shown} "
                f"({near.label}, {near.date})"
            )
            cited.append(near)
        out.append(Sentence(text + ".", tuple(dict.fromkeys(f.run_id for f in cited))))
    ops, meta_rate = job.get("meta_ops"), job.get("meta_rate_ops_per_s")
    meta = [f for f in figs if f.kind == "meta"]
    if ops and meta_rate and meta:
        best = max(meta, key=lambda f: f.rate)
        out.append(Sentence(
            f"Its {ops:,} metadata operations ran at {rate_text(meta_rate, 'meta')}: "
            f"{percent(meta_rate / best.rate)} of the fastest metadata rate the benchmarks measured "
            f"({best.shown}, {best.label}, {best.date}).",
            (best.run_id,),
        ))  # fmt: skip
    return out
