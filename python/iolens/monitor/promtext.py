"""Metric families and their two text formats: Prometheus text 0.0.4 and OpenMetrics 1.0.0.

One Exposition is built per scrape and written in the format the scraper asked for (promhttp.py negotiates).
The two differ only in how they name things: OpenMetrics names a counter family without its `_total` (the
samples keep it), ends with `# EOF`, and escapes `"` in HELP. The sample names and label values are the same
in both, so the series a Prometheus server stores do not depend on the format it negotiated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from iolens.monitor.keytext import key_text

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
Labels = tuple[tuple[str, str], ...]
# (sample name suffix, labels, value); the suffix is "" for counters and gauges, _bucket/_sum/_count for
# histograms.
Sample = tuple[str, Labels, float]


@dataclass
class Family:
    name: str
    kind: str  # "counter", "gauge" or "histogram"
    help: str
    samples: list[Sample] = field(default_factory=list)
    seen: set[Labels] = field(default_factory=set)


class Exposition:
    """Metric families in the order first seen; a label set given twice keeps its first value.

    Label values are taken as key_text gives them, the text InfluxDB lines carry too (a control character or
    an odd backslash as `\\xHH`), so that a job id is the same key in both; two values that come out the
    same are one series (a scrape with a series twice would be refused whole)."""

    def __init__(self) -> None:
        self.families: dict[str, Family] = {}

    def _family(
        self, name: str, kind: str, help_: str, labels: dict[str, str]
    ) -> tuple[Family, Labels] | None:
        fam = self.families.get(name)
        if fam is None:
            fam = self.families[name] = Family(name, kind, help_)
        key = tuple((k, key_text(v)) for k, v in labels.items())
        if key in fam.seen:
            return None
        fam.seen.add(key)
        return fam, key

    def add(self, name: str, kind: str, help_: str, labels: dict[str, str], value: float | None) -> None:
        if value is None:
            return
        got = self._family(name, kind, help_, labels)
        if got is not None:
            got[0].samples.append(("", got[1], value))

    def add_histogram(
        self,
        name: str,
        help_: str,
        labels: dict[str, str],
        buckets: list[tuple[float, int]],
        sum_: float,
    ) -> None:
        """A histogram from per-bucket counts `[(upper bound, count)]` (not cumulative, any order): written
        with cumulative `_bucket{le}` samples, the `+Inf` bucket, `_sum` and `_count`."""
        got = self._family(name, "histogram", help_, labels)
        if got is None:
            return
        fam, key = got
        cum = 0
        for le, count in sorted(buckets):
            cum += count
            if not math.isinf(le):
                fam.samples.append(("_bucket", (*key, ("le", le_text(le))), cum))
        fam.samples.append(("_bucket", (*key, ("le", "+Inf")), cum))
        fam.samples.append(("_sum", key, sum_))
        fam.samples.append(("_count", key, cum))

    def text(self) -> str:
        """Prometheus text format 0.0.4."""
        out: list[str] = []
        for fam in self.families.values():
            out.append(f"# HELP {fam.name} {_help(fam.help)}")
            out.append(f"# TYPE {fam.name} {fam.kind}")
            out.extend(_samples(fam))
        return "\n".join(out) + "\n"

    def openmetrics(self) -> str:
        """OpenMetrics text 1.0.0: a counter family is named without `_total`, its samples with it; the text
        ends with `# EOF`. A counter that cannot be named so is typed `unknown` under its full name and keeps
        its series: one whose name lacks `_total`, and one whose name without it is another family's
        (lustre_exporter has the gauge `lustre_disk_io` beside the counter `lustre_disk_io_total`)."""
        others = {f.name for f in self.families.values() if f.kind != "counter"}
        out: list[str] = []
        for fam in self.families.values():
            name, kind = fam.name, fam.kind
            if kind == "counter":
                if name.endswith("_total") and name[: -len("_total")] not in others:
                    name = name[: -len("_total")]
                else:
                    kind = "unknown"
            out.append(f"# TYPE {name} {kind}")
            out.append(f"# HELP {name} {_help(fam.help, quote=True)}")
            out.extend(_samples(fam))
        out.append("# EOF")
        return "\n".join(out) + "\n"


def _samples(fam: Family) -> list[str]:
    out = []
    for suffix, labels, value in fam.samples:
        if labels:
            inner = ",".join(f'{k}="{_label(v)}"' for k, v in labels)
            out.append(f"{fam.name}{suffix}{{{inner}}} {number(value)}")
        else:
            out.append(f"{fam.name}{suffix} {number(value)}")
    return out


def _help(text: str, quote: bool = False) -> str:
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if quote else text


def _label(text: str) -> str:
    """A label value as the exposition format writes it: backslash, double quote and newline escaped."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def le_text(value: float) -> str:
    """An `le` label value, written one way in both formats (`4096.0`, `0.001`, `+Inf`): Prometheus 2.x
    keeps le as the text it read, so `4096` from one scrape and `4096.0` from another would be two series."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))


def number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
