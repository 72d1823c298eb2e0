"""Combining counter values the way the log's schema says (docs/profile-log.md, "The counter schema"):
`sum`, `max`, `min` (smallest non-zero) and `topv`/`topc` pairs (the four most common access sizes and
strides), over rows of a uint64 matrix, with numpy and without a Python object per record.

The same code merges a process's (thread, file) records into one row per file, a process's threads into
its totals, and the files of many processes into one row per path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

SUM, MAX, MIN, TOPV, TOPC = "sum", "max", "min", "topv", "topc"
MERGES = (SUM, MAX, MIN, TOPV, TOPC)

U64 = np.uint64
_U64_MAX = np.iinfo(np.uint64).max

# POSIX_ACCESS1_ACCESS / POSIX_ACCESS1_COUNT, POSIX_STRIDE3_STRIDE / POSIX_STRIDE3_COUNT: a set's stem, the
# slot number, then what the slot holds.
_SLOT = re.compile(r"^(?P<stem>.*?)(?P<slot>\d+)_[A-Za-z0-9]+$")


@dataclass(frozen=True)
class TopSet:
    """The slots of one most-common-values set: value column k pairs with count column k."""

    name: str
    values: tuple[int, ...]
    counts: tuple[int, ...]


@dataclass(frozen=True)
class MergePlan:
    """Which columns combine how; built once per schema section."""

    n: int
    sum_cols: np.ndarray
    max_cols: np.ndarray
    min_cols: np.ndarray
    top_sets: tuple[TopSet, ...]

    @classmethod
    def build(cls, names: Sequence[str], merges: Sequence[str]) -> tuple[MergePlan, list[str]]:
        """The plan of a schema section, and messages about what it had to guess.

        A topv is paired with the topc of the same stem and slot (`X1_ACCESS` with `X1_COUNT`); the slots of
        one stem form a set. Names that do not follow that pattern are paired in schema order. A merge
        kind this reader does not know is combined as `max` (never more than one process reported).
        """
        messages: list[str] = []
        cols: dict[str, list[int]] = {SUM: [], MAX: [], MIN: []}
        topv: list[tuple[int, str, str]] = []  # (column, stem, slot)
        topc: dict[tuple[str, str], int] = {}
        loose_c: list[int] = []
        for i, (name, merge) in enumerate(zip(names, merges, strict=True)):
            if merge in cols:
                cols[merge].append(i)
                continue
            if merge not in (TOPV, TOPC):
                messages.append(f"counter {name}: unknown merge {merge!r}, combined as the largest value")
                cols[MAX].append(i)
                continue
            m = _SLOT.match(name)
            stem, slot = (m["stem"], m["slot"]) if m else (name, "")
            if merge == TOPV:
                topv.append((i, stem, slot))
            elif m and (stem, slot) not in topc:
                topc[(stem, slot)] = i
            else:
                loose_c.append(i)
        slots: dict[str, list[tuple[int, int, int]]] = {}  # stem -> (slot number, value col, count col)
        loose_v: list[tuple[int, str]] = []
        for col, stem, slot in topv:
            c = topc.pop((stem, slot), None) if slot else None
            if c is None:
                loose_v.append((col, names[col]))
                continue
            slots.setdefault(stem, []).append((int(slot), col, c))
        # Slot 1 is the first of a set, whatever order the schema lists the slots in.
        sets = {
            stem: ([v for _, v, _ in sorted(s)], [c for _, _, c in sorted(s)]) for stem, s in slots.items()
        }
        # What the names do not pair: in schema order, each pair a set of its own.
        loose_c = sorted([*loose_c, *topc.values()])
        for (col, name), c in zip(loose_v, loose_c, strict=False):
            sets[name] = ([col], [c])
        unpaired = [names[c] for c, _ in loose_v[len(loose_c) :]]
        unpaired += [names[c] for c in loose_c[len(loose_v) :]]
        for name in unpaired:
            messages.append(f"counter {name}: a topv/topc slot without its pair, combined as the largest")
            cols[MAX].append(list(names).index(name))
        top = tuple(TopSet(stem, tuple(v), tuple(c)) for stem, (v, c) in sets.items())
        return (
            cls(
                n=len(names),
                sum_cols=np.array(sorted(cols[SUM]), dtype=np.intp),
                max_cols=np.array(sorted(cols[MAX]), dtype=np.intp),
                min_cols=np.array(sorted(cols[MIN]), dtype=np.intp),
                top_sets=top,
            ),
            messages,
        )


def _min_nonzero(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise smallest non-zero value of a and b (0 when both are 0)."""
    take_b = (a == 0) | ((b != 0) & (b < a))
    return np.where(take_b, b, a)


def combine_top(
    rows: np.ndarray, values: np.ndarray, counts: np.ndarray, n_rows: int, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k most common values per row from (row, value, count) entries: counts of equal values add up,
    then the k largest counts stay, largest first (ties: the smaller value first); empty slots are 0/0."""
    out_v = np.zeros((n_rows, k), dtype=U64)
    out_c = np.zeros((n_rows, k), dtype=U64)
    keep = counts != 0
    rows, values, counts = rows[keep], values[keep], counts[keep]
    if rows.size == 0 or k == 0:
        return out_v, out_c
    order = np.lexsort((values, rows))
    r, v, c = rows[order], values[order], counts[order]
    brk = np.empty(r.size, dtype=bool)
    brk[0] = True
    np.logical_or(r[1:] != r[:-1], v[1:] != v[:-1], out=brk[1:])
    starts = np.flatnonzero(brk)
    r, v, c = r[starts], v[starts], np.add.reduceat(c, starts)
    # Count descending is value ascending of (max - count): no signed overflow.
    order = np.lexsort((v, _U64_MAX - c, r))
    r, v, c = r[order], v[order], c[order]
    first = np.flatnonzero(np.concatenate(([True], r[1:] != r[:-1])))
    lengths = np.diff(np.concatenate((first, [r.size])))
    pos = np.arange(r.size) - np.repeat(first, lengths)
    sel = pos < k
    out_v[r[sel], pos[sel]] = v[sel]
    out_c[r[sel], pos[sel]] = c[sel]
    return out_v, out_c


class Accumulator:
    """Rows of merged counters, fed a block of rows at a time (a chunk of records, a process's files).

    A row's first contribution is copied; later ones combine column by column. Only the (row, value,
    count) entries of the top sets are kept aside, to be combined once at the end, so the memory is the
    output matrix plus one block.
    """

    def __init__(self, plan: MergePlan, n_rows: int) -> None:
        self.plan = plan
        self.out = np.zeros((n_rows, plan.n), dtype=U64)
        # How many blocks contributed to each row (a process's file: its threads; a job's path: processes).
        self.contributions = np.zeros(n_rows, dtype=np.uint32)
        self._top: list[list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = [[] for _ in plan.top_sets]

    def add(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Merge values[i] into row rows[i]; values has the plan's columns, in order."""
        rows = np.asarray(rows, dtype=np.intp)
        while rows.size:
            _, first = np.unique(rows, return_index=True)
            if first.size == rows.size:
                self._add_unique(rows, values)
                return
            # The same row twice in one block: merge the first occurrences, then go on with the rest.
            rest = np.ones(rows.size, dtype=bool)
            rest[first] = False
            self._add_unique(rows[first], values[first])
            rows, values = rows[rest], values[rest]

    def _add_unique(self, rows: np.ndarray, values: np.ndarray) -> None:
        self._keep_top(rows, values)
        new = self.contributions[rows] == 0
        self.contributions[rows] += 1
        if new.all():
            self.out[rows] = values
            return
        if new.any():
            self.out[rows[new]] = values[new]
            rows, values = rows[~new], values[~new]
        cur = self.out[rows]
        p = self.plan
        if p.sum_cols.size:
            cur[:, p.sum_cols] += values[:, p.sum_cols]
        if p.max_cols.size:
            cur[:, p.max_cols] = np.maximum(cur[:, p.max_cols], values[:, p.max_cols])
        if p.min_cols.size:
            cur[:, p.min_cols] = _min_nonzero(cur[:, p.min_cols], values[:, p.min_cols])
        self.out[rows] = cur

    def _keep_top(self, rows: np.ndarray, values: np.ndarray) -> None:
        for store, ts in zip(self._top, self.plan.top_sets, strict=True):
            counts = values[:, list(ts.counts)]
            mask = counts != 0
            if not mask.any():
                continue
            r = np.broadcast_to(rows[:, None], counts.shape)[mask]
            store.append((r, values[:, list(ts.values)][mask], counts[mask]))

    def finish(self) -> np.ndarray:
        """The merged matrix (the top sets combined now)."""
        n_rows = self.out.shape[0]
        for store, ts in zip(self._top, self.plan.top_sets, strict=True):
            if store:
                rows = np.concatenate([s[0] for s in store])
                vals = np.concatenate([s[1] for s in store])
                cnts = np.concatenate([s[2] for s in store])
            else:
                rows = np.zeros(0, dtype=np.intp)
                vals = cnts = np.zeros(0, dtype=U64)
            v, c = combine_top(rows, vals, cnts, n_rows, len(ts.values))
            self.out[:, list(ts.values)] = v
            self.out[:, list(ts.counts)] = c
        self._top = [[] for _ in self.plan.top_sets]
        return self.out


def merge_rows(plan: MergePlan, rows: np.ndarray, values: np.ndarray, n_rows: int) -> np.ndarray:
    """values[i] merged into row rows[i] of an n_rows matrix, in one call."""
    acc = Accumulator(plan, n_rows)
    acc.add(rows, values)
    return acc.finish()


def sort_top(values: np.ndarray, plan: MergePlan) -> None:
    """Put each row's top-set slots in the merged order (count descending, then value), in place; for
    rows that needed no merging."""
    for ts in plan.top_sets:
        vcols, ccols = list(ts.values), list(ts.counts)
        c = values[:, ccols]
        # Only the rows with counts are written: a table of files mostly never read or written keeps its
        # untouched (never resident) zero pages.
        rows = np.flatnonzero(c.any(axis=1))
        if rows.size == 0:
            continue
        c = c[rows]
        v = np.where(c == 0, np.uint64(0), values[np.ix_(rows, vcols)])
        order = np.lexsort((v, _U64_MAX - c), axis=-1)
        values[np.ix_(rows, vcols)] = np.take_along_axis(v, order, axis=1)
        values[np.ix_(rows, ccols)] = np.take_along_axis(c, order, axis=1)
