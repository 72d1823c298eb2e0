"""A kernel made concrete for one run: each rank's list of calls (the executor's plan lines,
native/main/iolens_replay.c) and what must exist before the run (the inputs the original read, made
unprofiled by run.py).

Scaling (docs/replay.md, "Scaling"): --scale s multiplies every count (accesses per size, opens, stats,
seeks, fsyncs, namespace calls) by s, rounded so that the sums round as the totals do; access sizes stay,
so bytes scale by s and the histogram's shares stay; file count and layout stay. --np N runs N ranks:
rank j replays the original rank j mod R (R the kernel's ranks); a file of one rank becomes one file per
new rank, a file common to ranks stays one file; so totals scale by N/R (weak scaling).

Offsets: within a (rank, file, direction), the first access is at the rank's base; a consecutive access
starts where the previous one ended, a sequential one a size further on, a random one somewhere before the
previous end (never sequential by Darshan's definition). The kinds are interleaved evenly. MPI ranks sharing
a file get disjoint regions (the profile cannot say whether they overlapped); processes of a program that
is not MPI run one after another on the same bytes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

# A gap between two files' activity shorter than this is not replayed as a pause.
MIN_PAUSE_NS = 1_000_000
MAX_PAUSE_NS = 10_000_000_000


@dataclass
class RunPlan:
    lines: dict[int, list[str]]  # rank -> plan lines
    concurrent: bool = True  # the ranks at once (MPI), else one after another
    prepare_files: dict[str, int] = field(default_factory=dict)  # name -> size: inputs made before the run
    prepare_dirs: list[str] = field(default_factory=list)
    scratch: dict[str, int] = field(default_factory=dict)  # directory -> entries (for unlinks and readdirs)
    expected: dict[str, int] = field(default_factory=dict)


def scaled(n: int, s: float) -> int:
    return int(round(n * s)) if n else 0


def _scale_pairs(pairs: list[list[int]], s: float) -> list[list[int]]:
    out, cum, done = [], 0, 0
    for size, k in pairs:
        cum += k
        now = int(round(cum * s))
        if now - done:
            out.append([size, now - done])
        done = now
    return out


def _spread(kinds: dict[str, int]) -> list[str]:
    """The kinds interleaved evenly (each at its own regular step)."""
    keyed = []
    for kind, n in kinds.items():
        keyed += [((i + 0.5) / n, kind) for i in range(n)]
    keyed.sort()
    return [k for _, k in keyed]


def offsets(
    pairs: list[list[int]], seq: int, consec: int, base: int, rng: random.Random
) -> list[tuple[int, int]]:
    """(offset, size) of each access."""
    sizes = [size for size, k in pairs for _ in range(k)]
    rng.shuffle(sizes)  # sizes mixed, as a program's are (the histogram does not say in which order)
    n = len(sizes)
    if not n:
        return []
    seq = min(seq, n - 1)
    consec = min(consec, seq)
    kinds = ["first", *_spread({"consec": consec, "gap": seq - consec, "random": n - 1 - seq})]
    out = []
    end = base
    for size, kind in zip(sizes, kinds, strict=True):
        if kind == "first" or kind == "consec":
            off = end
        elif kind == "gap":
            off = end + max(size, 1)
        else:
            room = end - base - size
            off = base + (rng.randrange(room + 1) if room > 0 else 0)
            if off >= end and end > base:
                off = base
        out.append((off, size))
        end = off + size
    return out


def _interleave(reads: list[str], writes: list[str], switches: int, writes_first: bool) -> list[str]:
    """The reads and the writes in alternating blocks: switches + 1 blocks (as many as there are)."""
    if not reads or not writes:
        return writes + reads
    first, second = (writes, reads) if writes_first else (reads, writes)
    blocks = max(switches + 1, 2)
    na, nb = (blocks + 1) // 2, blocks // 2
    na, nb = min(na, len(first)), min(nb, len(second))
    out: list[str] = []
    for i in range(max(na, nb)):
        if i < na:
            out += first[len(first) * i // na : len(first) * (i + 1) // na]
        if i < nb:
            out += second[len(second) * i // nb : len(second) * (i + 1) // nb]
    return out


def _every(items: list[str], extra: list[str]) -> list[str]:
    """The extra lines spread evenly among items (each after its share of them)."""
    if not extra:
        return items
    out: list[str] = []
    k = len(extra)
    step = len(items) / k if items else 0
    j = 0
    for i, line in enumerate(items):
        out.append(line)
        while j < k and (j + 1) * step <= i + 1:
            out.append(extra[j])
            j += 1
    out += extra[j:]
    return out


def build(kernel: dict[str, Any], np_: int, scale: float, seed: int = 1) -> RunPlan:
    files = kernel["files"]
    ranks = int(kernel["ranks"]) or 1
    streams = {int(s["rank"]): s for s in kernel["streams"]}
    plan = RunPlan(lines={}, concurrent=bool(kernel.get("concurrent", True)))
    rng = random.Random(seed)
    # Names per new rank: a per-rank file of original rank r is "rank.J/<name>" for new rank J when the run
    # has another rank count; common files keep their names.
    same = np_ == ranks

    def name_of(file_no: int, new_rank: int) -> str:
        f = files[file_no]
        if same or f["kind"] == "common":
            return f["name"]
        return f"rank.{new_rank}/{f['name']}"

    # Region sizes of the common files: the largest extent any rank's accesses need, laid out by rank.
    extents: dict[tuple[int, int, str], list[tuple[int, int]]] = {}
    for j in range(np_):
        s = streams.get(j % ranks)
        if s is None:
            continue
        for u in s["uses"]:
            for what in ("read", "write"):
                d = u.get(what)
                if d:
                    pairs = _scale_pairs(d["sizes"], scale)
                    n = sum(k for _, k in pairs)
                    total = sum(k for _, k in d["sizes"]) or 1
                    seq, consec = scaled(d["seq"], n / total), scaled(d["consec"], n / total)
                    extents[(j, id(u), what)] = offsets(pairs, seq, consec, 0, rng)
    region: dict[int, int] = {}
    per_rank_extent: dict[tuple[int, int], int] = {}
    for j in range(np_):
        s = streams.get(j % ranks)
        for u in s["uses"] if s else []:
            for what in ("read", "write"):
                accs = extents.get((j, id(u), what), [])
                e = max((o + z for o, z in accs), default=0)
                key = (u["file"], j)
                per_rank_extent[key] = max(per_rank_extent.get(key, 0), e)
    for (f, _j), e in per_rank_extent.items():
        region[f] = max(region.get(f, 0), e)
    # Per (rank, file): a stream use, and the filenos its POSIX record counts (made on the stream).
    stdio_files = {
        (j, u["file"]) for j in range(np_) for u in _uses(streams, j, ranks) if u["layer"] == "stdio"
    }
    filenos_of = {
        (j, u["file"]): int(u.get("filenos", 0))
        for j in range(np_)
        for u in _uses(streams, j, ranks)
        if u["layer"] == "posix" and (j, u["file"]) in stdio_files
    }
    nfid = 0
    pause_total = 0
    touched: set[str] = set()
    for j in range(np_):
        s = streams.get(j % ranks)
        lines: list[str] = []
        plan.lines[j] = lines
        if s is None:
            continue
        ns = s.get("namespace", {})
        for i in range(scaled(int(ns.get("MKDIRS", 0)), scale)):
            lines.append(f"D scratch.{j}/made.{i}")
        if ns.get("MKDIRS"):
            plan.prepare_dirs.append(f"scratch.{j}")
        last_end: int | None = None
        for u in s["uses"]:
            f = files[u["file"]]
            # Ranks at once share a file in disjoint regions; processes one after another (a writer, then
            # a reader) use the same bytes.
            base = j * region.get(u["file"], 0) if f["kind"] == "common" and plan.concurrent else 0
            path = name_of(u["file"], j)
            if u.get("start_ns") is not None and last_end is not None:
                gap = int(u["start_ns"]) - last_end
                if gap > MIN_PAUSE_NS:
                    pause = min(int(gap * scale), MAX_PAUSE_NS)
                    pause_total += pause
                    lines.append(f"P {pause}")
            if u.get("end_ns") is not None:
                last_end = max(last_end or 0, int(u["end_ns"]))
            fid = nfid
            nfid += 1
            ops: dict[str, list[str]] = {"read": [], "write": []}
            ends = {"read": 0, "write": 0}
            for what, code in (("read", "R"), ("write", "W")):
                for off, size in extents.get((j, id(u), what), []):
                    ops[what].append(f"{code} {fid} {off + base} {size}")
                    ends[what] = max(ends[what], off + base + size)
            # The first use of a file that writes before it reads creates it, as the original did (its
            # creation cost is part of the I/O time): nothing is made beforehand unless it reads past what
            # it writes. Any other file read or only opened is an input: made before the run.
            creates = path not in touched and bool(u.get("write")) and bool(u.get("writes_first", True))
            if creates and ends["read"] <= ends["write"]:
                pass
            elif ends["read"] or not u.get("write") or (u["layer"] == "stdio" and path not in touched):
                plan.prepare_files[path] = max(plan.prepare_files.get(path, 0), ends["read"])
                creates = False
            touched.add(path)
            body = _interleave(
                ops["read"],
                ops["write"],
                scaled(int(u.get("rw_switches", 0)), scale),
                bool(u.get("writes_first", True)),
            )
            stdio = u["layer"] == "stdio"
            fsyncs = [f"S {fid}"] * scaled(int(u.get("fsyncs", 0)) + int(u.get("flushes", 0)), scale)
            seeks = [f"K {fid} {base}"] * scaled(int(u.get("seeks", 0)), scale)
            body = _every(body, fsyncs)
            # A seek moves the stream; the executor's next access seeks back where the plan says when needed.
            body = _every(body, seeks)
            filenos = int(u.get("filenos", 0))
            real = int(u.get("opens", 0)) - int(u.get("dups", 0)) - filenos
            has_data = bool(u.get("read") or u.get("write"))
            if stdio:
                # The filenos of the same file's POSIX record are made on this stream.
                fileno_lines = [f"N {fid}"] * scaled(filenos_of.get((j, u["file"]), 0), scale)
            elif real <= 0 and not has_data and (j, u["file"]) in stdio_files:
                # Only filenos (and stats): they are the stream's, made in its use.
                lines += [f"T {path}"] * scaled(int(u.get("stats", 0)), scale)
                continue
            opens = max(scaled(real + (0 if (j, u["file"]) in stdio_files else filenos), scale), 1)
            dups = scaled(int(u.get("dups", 0)), scale)
            mode = _mode(u, stdio)
            opener = "F" if stdio else "O"
            stats = [f"T {path}"] * scaled(int(u.get("stats", 0)), scale)
            if not (u.get("read") or u.get("write") or u.get("opens")):
                # stats only: the file must exist; no open
                lines += stats
                if path not in touched:
                    plan.prepare_files.setdefault(path, 0)
                continue
            segments = [body[len(body) * i // opens : len(body) * (i + 1) // opens] for i in range(opens)]
            for i, seg in enumerate(segments):
                # A stream that creates its file: "w+" the first time (fopen's "r+" needs the file).
                lines.append(f"{opener} {fid} {'w+' if stdio and creates and i == 0 else mode} {path}")
                if i == 0:
                    lines += stats
                    lines += [f"X {fid}"] * dups
                    if stdio:
                        lines += fileno_lines
                lines += seg
                lines.append(f"C {fid}")
        for i in range(scaled(int(ns.get("OPENDIRS", 0)), scale)):
            lines.append(f"L lists.{j}/d.{i}")
        od = scaled(int(ns.get("OPENDIRS", 0)), scale)
        if od:
            per = max(scaled(int(ns.get("READDIRS", 0)), scale) // od - 3, 0)
            for i in range(od):
                plan.scratch[f"lists.{j}/d.{i}"] = per
        unl = scaled(int(ns.get("UNLINKS", 0)), scale)
        for i in range(unl):
            lines.append(f"U gone.{j}/u.{i}")
        if unl:
            plan.scratch[f"gone.{j}"] = unl
    plan.expected["pause_ns"] = pause_total
    return plan


def _uses(streams: dict[int, Any], j: int, ranks: int) -> list[dict[str, Any]]:
    s = streams.get(j % ranks)
    return list(s["uses"]) if s else []


def _mode(u: dict[str, Any], stdio: bool) -> str:
    r, w = bool(u.get("read")), bool(u.get("write"))
    if stdio:
        return "r+" if (r or w) else "r"
    return "rw" if r and w else ("w" if w else "r")
