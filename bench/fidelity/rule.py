"""The rule: the device work of iolens and its peer agrees within TOLERANCE (with a floor for small counts),
and only then is the rate compared (target: iolens >= 1.00x the peer). For IOR and mdtest lines, a model of
what IOR's semantics require of the device is checked too (it needs no official IOR, so the tests run it).

Device work is the smallest reading of each counter over a tool's runs: the disk is shared with whatever else
runs on the machine, whose I/O can only add to a reading, never take from it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .cases import parse_size
from .devwork import DEV_FIELDS, SECTOR, DevWork
from .measure import CaseResult, Sample

TOLERANCE = 0.05
# Floors for small counts: device work of a run that is not its job's I/O. A run of iolens fsyncs its
# ownership ledger (.iolens-owned) in the job's directory when it creates files and its result document in
# $TMPDIR (a journal commit and a flush or two each, on a disk /tmp); mpirun's session files live in /tmp;
# atime and mtime updates reach the journal; and the disk is shared with the machine's other users. 32 read
# and 64 write I/Os, 512 read and 1024 written sectors (256 and 512 KiB) and 4 flushes cover that and are far
# below what the recorded cases move (at least 2 MiB per case), so a job whose I/O reaches the device
# differently still fails.
FLOORS = {"read_ios": 32, "read_sectors": 512, "write_ios": 64, "write_sectors": 1024, "flushes": 4}
RATE_TARGET = 1.00


def least(samples: list[Sample], attr: str = "dev_total") -> DevWork:
    if not samples:
        return DevWork()
    return DevWork(*(min(getattr(getattr(s, attr), f) for s in samples) for f in DEV_FIELDS))


def agrees(a: int, b: int, name: str) -> bool:
    return abs(a - b) <= max(TOLERANCE * max(abs(a), abs(b)), FLOORS[name])


def differing(a: DevWork, b: DevWork) -> list[str]:
    return [f for f in DEV_FIELDS if not agrees(getattr(a, f), getattr(b, f), f)]


def settled(res: CaseResult) -> bool:
    """Whether the smallest device readings of the two tools agree (measure.Setup.settled)."""
    peer = "fio" if res.kind == "fio" else "peer"
    if peer not in res.tools:
        return True
    p, m = res.of(peer), res.of("iolens")
    return not differing(least(p), _compared(res, p, m))


@dataclass
class Verdict:
    id: str
    fs: str
    peer: str
    peer_dev: DevWork
    iolens_dev: DevWork
    device_diff: list[str]  # fields outside the tolerance
    reported_diff: list[str]  # bytes or I/O counts the two tools report differently
    model_diff: list[str] = field(default_factory=list)  # what IOR's semantics require, not met
    ratios: dict[str, float] = field(default_factory=dict)  # iolens / peer, medians, per phase or overall
    reason: str | None = None

    @property
    def device_ok(self) -> bool:
        return not self.device_diff and not self.reported_diff and not self.model_diff

    @property
    def rate_ratio(self) -> float:
        return min(self.ratios.values()) if self.ratios else float("nan")

    @property
    def excused(self) -> bool:
        """Whether a documented reason ("FIELD[,FIELD]: why") names every device counter that differs (a
        reason never covers different reported figures or a broken model)."""
        if not self.reason or self.reported_diff or self.model_diff:
            return False
        named = {f.strip() for f in self.reason.partition(":")[0].split(",")}
        return set(self.device_diff) <= named

    @property
    def status(self) -> str:
        if not self.device_ok:
            return "DIFFERS (documented)" if self.excused else "DIFFERS"
        return "ok, rate met" if self.rate_ratio >= RATE_TARGET else "ok, rate below"


def judge(res: CaseResult, peer: str, mine: str) -> Verdict:
    p, m = res.of(peer), res.of(mine)
    pd, md = least(p), least(m)
    rep = _reported_diff(p, m, exact=not _is_mixed(res, p))
    compared = md if rep else _compared(res, p, m)
    ratios: dict[str, float] = {}
    # IOR: its write and read phases each; fio: all the job's bytes/s; mdtest: items/s over its file phases.
    phases = ("write", "read") if res.kind == "ior" else ("all",)
    for phase in phases:
        a = statistics.median(_rate(s, phase) for s in m)
        b = statistics.median(_rate(s, phase) for s in p)
        if b > 0:
            ratios[phase] = a / b
    diff = differing(pd, compared)
    return Verdict(res.id, res.fs, peer, pd, md, diff, rep, ratios=ratios, reason=res.reason)


def _is_mixed(res: CaseResult, p: list[Sample]) -> bool:
    return res.kind == "fio" and _mixed(p)


def _compared(res: CaseResult, p: list[Sample], m: list[Sample]) -> DevWork:
    """iolens's device work as the rule compares it with the peer's: per I/O of each direction in a mixed
    fio job (_per_peer_io), as read otherwise."""
    return _per_peer_io(least(m), p, m) if _is_mixed(res, p) else least(m)


def _per_peer_io(md: DevWork, p: list[Sample], m: list[Sample]) -> DevWork:
    """iolens's device work of a mixed job scaled, direction by direction, to the peer's number of I/Os in
    that direction: each tool draws each I/O's direction, so one may do 2% more reads than the other by
    chance, and its device reads are then 2% more for no fault of either. What is compared is the device
    work per I/O of each direction."""

    def ratio(d: str) -> float:
        a = statistics.median(getattr(s.reported, f"{d}_ios") for s in p)
        b = statistics.median(getattr(s.reported, f"{d}_ios") for s in m)
        return a / b if b else 1.0

    r, w = ratio("read"), ratio("write")
    scaled = (md.read_ios * r, md.read_sectors * r, md.write_ios * w, md.write_sectors * w, md.flushes)
    return DevWork(*(round(x) for x in scaled))


def _mixed(samples: list[Sample]) -> bool:
    return any(s.reported.read_ios and s.reported.write_ios for s in samples)


def _figures(s: Sample) -> dict[str, int]:
    r = s.reported
    return {
        "read_bytes": r.read_bytes, "write_bytes": r.write_bytes, "read_ios": r.read_ios,
        "write_ios": r.write_ios, "total_bytes": r.read_bytes + r.write_bytes,
        "total_ios": r.read_ios + r.write_ios,
    }  # fmt: skip


def _reported_diff(p: list[Sample], m: list[Sample], exact: bool) -> list[str]:
    """Bytes and I/O counts the tools report differently. A mixed fio job draws each I/O's direction from its
    random generator, and iolens's generator is not fio's: there the totals must be equal and each direction
    may differ by what chance allows — within the tolerance, or within 4 standard deviations of the
    difference of two draws of n I/Os at the pooled share (sqrt(2 n p (1 - p))); everywhere else every figure
    must be equal."""
    if not p or not m:
        return ["a tool has no runs"]
    out = []
    for f in _figures(p[0]):
        pv = sorted({_figures(s)[f] for s in p})
        mv = sorted({_figures(s)[f] for s in m})
        if pv == mv:
            continue
        if not exact and not f.startswith("total"):
            t = _figures(p[0])
            n = max(1, t["total_ios"])
            share = (sum(s.reported.read_ios for s in p + m) / len(p + m)) / n
            chance = 4 * (2 * n * share * (1 - share)) ** 0.5
            floor = max(FLOORS["read_ios"], chance) * (t["total_bytes"] / n if "bytes" in f else 1)
            if all(abs(x - y) <= max(TOLERANCE * max(x, y), floor) for x in pv for y in mv):
                continue
        out.append(f"reported {f} {pv} vs {mv}")
    return out


def _rate(s: Sample, phase: str) -> float:
    return s.reported.rate if phase == "all" else s.reported.rates.get(phase, 0.0)


def ior_model(args: tuple[str, ...], kind: str, np: int, tool: str, s: Sample, on_device: bool) -> list[str]:
    """What the line requires of the device and of the report, whoever runs it (IOR's semantics):
    bytes = ranks x segments x block; with -e (fsync after the write) the written sectors reach the device
    before the tool ends; with -k and no -e they are dirty in the cache, and reach it when the harness
    fsyncs the file; a read after iolens's eviction comes from the device, a read with the cache kept (IOR,
    iolens --keep-cache) does not (the data was just written on this node)."""
    bad: list[str] = []
    r = s.reported
    if kind == "mdtest":
        n = int(_opt(args, "-n", "0"))
        if r.write_ios != np * n:
            bad.append(f"items {r.write_ios} != ranks x -n = {np * n}")
        w = int(_opt(args, "-w", "0"))
        if on_device and "-y" in args and w > 0 and s.dev_run.write_sectors * SECTOR < np * n * w:
            bad.append(f"-y: {s.dev_run.write_sectors} sectors written during the run < {np * n * w} bytes")
        return bad
    b = parse_size(_opt(args, "-b", "1m"))
    seg = int(_opt(args, "-s", "1"))
    want = np * seg * b
    for d in ("write", "read"):
        got = getattr(r, f"{d}_bytes")
        if got != want:
            bad.append(f"{d} bytes {got} != ranks x -s x -b = {want}")
    if not on_device:
        return bad
    slack = max(TOLERANCE * want, FLOORS["read_sectors"] * SECTOR)
    if "-e" in args and s.dev_run.write_sectors * SECTOR < want:
        bad.append(
            f"-e: {s.dev_run.write_sectors * SECTOR} bytes written to the device during the run < {want}"
        )
    if "-k" in args and s.dev_total.write_sectors * SECTOR < want:
        bad.append(f"-k: {s.dev_total.write_sectors * SECTOR} bytes reached the device after fsync < {want}")
    # Reads: the device's counter for what must have been read (others' I/O only adds to it), the tool's own
    # accounting for what must not (others' reads would show in the device's counter).
    read = s.dev_run.read_sectors * SECTOR
    if tool == "iolens-evict" and read < want - slack:
        bad.append(f"evict: {read} bytes read from the device < {want} read")
    # A run that kept the cache still reads its programs and libraries from the device when the kernel's
    # background reclaim has dropped them since the last run (seen: 484-640 KiB for mpirun + IOR); a run that
    # re-read the data reads all of it. Half the data tells the two apart whatever the loader needs.
    if tool in ("peer", "iolens") and s.proc.read_bytes >= want // 2:
        bad.append(
            f"cache kept: the tool read {s.proc.read_bytes} bytes from the device (the data was cached)"
        )
    return bad


def _opt(args: tuple[str, ...], flag: str, default: str) -> str:
    return args[args.index(flag) + 1] if flag in args else default
