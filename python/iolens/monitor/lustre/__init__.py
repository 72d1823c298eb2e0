"""Lustre statistics: the parsers of each file format (stats, jobstats, histogram), where the files are
(params), and the collector that reads them each interval (collector)."""

from __future__ import annotations

from iolens.monitor.common import Tree
from iolens.monitor.lustre import histogram, jobstats, stats

PARSERS = {
    "stats": stats.parse,
    "job_stats": jobstats.parse,
    "rpc_stats": histogram.parse,
    "brw_stats": histogram.parse,
}


def parse(kind: str, text: str) -> tuple[Tree, int]:
    """The reading of one parameter's text by the parser of its kind."""
    return PARSERS[kind](text)
