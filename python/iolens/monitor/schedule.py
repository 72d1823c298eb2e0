"""How often `--monitor` samples: a fixed interval, or fine sampling while a run may still be short and one
sample a second after that. Kept apart (no rich, no collectors) so the per-node wrapper imports little."""

from __future__ import annotations

from dataclasses import dataclass

# Without an interval: fine sampling while a run may still be short, then one per second.
FINE_S, FINE_FOR_S, COARSE_S = 0.1, 10.0, 1.0


@dataclass(frozen=True)
class MonitorRequest:
    interval_s: float | None = None  # None: FINE_S for the first FINE_FOR_S seconds, then COARSE_S

    def schedule(self, elapsed: float) -> float:
        if self.interval_s is not None:
            return self.interval_s
        return FINE_S if elapsed < FINE_FOR_S else COARSE_S

    def describe(self) -> str:
        if self.interval_s is not None:
            return f"{self.interval_s:g} s"
        return f"{FINE_S:g} s for the first {FINE_FOR_S:g} s, then {COARSE_S:g} s"
