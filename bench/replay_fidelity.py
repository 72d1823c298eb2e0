"""Replay fidelity at full size: every case of the advice-quality suite (tests/data/advice_suite/) profiled as
the suite runs it, then `iolens replay check LOGS --dir WORK --json` (kernel made, run under the profiler in
the case's directory, compared), at scale 1. Writes bench/results/replay_fidelity.txt.

    python3 bench/replay_fidelity.py [--cases a,b] [--out bench/results/replay_fidelity.txt]

Uses the installed `iolens` of .venv and the runtime from build/native (or IOLENS_PROFILE_LIB).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.advice_suite import MPI_ENV, CaseSkipped, load_cases, run_case  # noqa: E402


def check(iolens: list[str], logs: Path, work: Path, ranks: int, scale: float) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOLENS_") and k != "LD_PRELOAD"}
    env.update(MPI_ENV if ranks > 1 else {})
    r = subprocess.run(
        [*iolens, "replay", "check", str(logs), "--dir", str(work), "--scale", str(scale), "--json"],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    if r.returncode not in (0, 1) or not r.stdout.strip():
        raise RuntimeError(f"replay check exited {r.returncode}: {r.stderr[-1500:]}")
    return json.loads(r.stdout)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "replay_fidelity.txt"))
    a = ap.parse_args()
    iolens = [str(REPO / ".venv" / "bin" / "iolens")]
    lib = Path(os.environ.get("IOLENS_PROFILE_LIB", REPO / "build" / "native" / "libiolens-profile.so"))
    wanted = {c for c in a.cases.split(",") if c}
    cases = [c for c in load_cases() if not wanted or c.name in wanted]
    lines = []
    load0 = os.getloadavg()[0]
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    per_quantity: dict[str, list[bool]] = {}
    time_errors: list[float] = []
    with tempfile.TemporaryDirectory(prefix="iolens-replay-fidelity-", dir="/tmp") as tmp:
        root, bin_dir = Path(tmp) / "work", Path(tmp) / "bin"
        root.mkdir()
        bin_dir.mkdir()
        for case in cases:
            try:
                out = run_case(case, root, bin_dir, iolens, lib)
            except CaseSkipped as exc:
                lines.append(f"{case.name:34s} skipped: {exc}")
                continue
            logs = root / case.name / "iolens-logs"
            doc = check(iolens, logs, root / case.name, case.ranks, a.scale)
            rows = doc["rows"]
            fails = [
                f"{r['group']}:{r['quantity']} {r['original']:.4g}->{r['replayed']:.4g}"
                for r in rows
                if not r["pass"]
            ]
            t = next(r for r in rows if r["group"] == "time")
            if t["original"] > 0:
                time_errors.append(abs(t["replayed"] / t["original"] - 1))
            for r in rows:
                key = (
                    r["group"]
                    if r["group"] in ("read sizes", "write sizes")
                    else f"{r['group']}: {r['quantity']}"
                )
                per_quantity.setdefault(key, []).append(r["pass"])
            lines.append(
                f"{case.name:34s} {doc['summary']['passed']:3d}/{doc['summary']['rows']:<3d} "
                f"io time {t['original']:.4f} s -> {t['replayed']:.4f} s  "
                + ("all within tolerance" if not fails else "; ".join(fails))
            )
            print(lines[-1], flush=True)
            del out
    load1 = os.getloadavg()[0]
    head = [
        "replay fidelity: advice-suite cases, `iolens replay check LOGS --dir WORK --json` at scale "
        f"{a.scale:g}, on /tmp (disk), {start}; 1-minute load average {load0:.2f} at the start, "
        f"{load1:.2f} at the end",
        "case                               pass/rows  original -> replayed I/O time, "
        "then the rows out of tolerance",
    ]
    tail = ["", "per quantity: cases within tolerance / cases with the row"]
    if time_errors:
        errs = sorted(time_errors)
        tail.insert(
            0,
            f"I/O time error |replayed/original - 1| over {len(errs)} cases: "
            f"median {100 * statistics.median(errs):.0f}%, "
            f"quartiles {100 * errs[len(errs) // 4]:.0f}%-{100 * errs[3 * len(errs) // 4]:.0f}%",
        )
    for key, vals in sorted(per_quantity.items()):
        tail.append(f"  {key:40s} {sum(vals)}/{len(vals)}")
    text = "\n".join(head + lines + tail) + "\n"
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
