"""Hypothesis against what reads the monitor's JSON-lines streams back: the per-node streams of an MPI run
with `--monitor` (nodes.py, through stream.read), which become `monitor.nodes` of the run's document.

A node's stream may be cut short (the node's disk filled, its wrapper was killed), and a file in a shared
directory may be damaged in any way. Reading must never raise nor hang: a line that is not a record is
skipped, a record that is not a usable sample is left out, and what goes into the document is JSON (no NaN
or infinity) that the document reader (results.py) reads back. The seed is the stream of a real
`iolens monitor` run (Linux sources and Lustre samples); it is cut, spliced, its lines doubled and dropped,
its values replaced by values of every other JSON type, by NaN and by deep nesting.

Inputs once found failing are kept in tests/data/fuzz/monitor-stream and replayed by
test_kept_streams."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolens.monitor.nodes import sections
from iolens.results import MonitorNode, _Reader

from ..monitor_helpers import fuzz_cases, run_iolens, sample_text, time_limit

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def seed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The JSON-lines stream of a real monitor run, with Lustre statistics (a job id with a newline)."""
    d = tmp_path_factory.mktemp("seed")
    ost = d / "lustre" / "obdfilter" / "lfs-OST0000"
    ost.mkdir(parents=True)
    jobs = sample_text("ost-job_stats-2.12.txt").replace("cluster-testjob1", '"job\\x0a1"')
    (ost / "job_stats").write_text(jobs)
    (ost / "stats").write_text(sample_text("obdfilter-export-stats-2.12.txt"))
    out = d / "stream.jsonl"
    r = run_iolens(["monitor", "--interval", "0.1", "--duration", "0.3", "--out", str(out), "--lustre-root",
                    str(d / "lustre"), "--pid", "1", "--sources", "all"])  # fmt: skip
    assert r.returncode == 0, r.stderr
    text = out.read_text("utf-8")
    assert text.count('"type":"sample"') == 4
    return text


HOSTILE_VALUES = [None, True, 0, -1, 2**64, 10**400, 1.5, "x", "", [], [1, "a"], {}, {"a": {"b": []}},
                  float("nan"), float("inf")]  # fmt: skip
BAD_LINES = ["", "{", "}", "[]", "null", '"text"', "NaN", '{"type": "sample", "time": NaN, "data": {}}',
             '{"type": "sample", "time": Infinity}', "[" * 100000, '{"a":' * 50000, "\x00\xff", '{"type":1}',
             '{"type": "header"}', '{"type": "end"}',
             '{"type": "sample", "time": 1.0, "data": []}']  # fmt: skip


def _paths(obj: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.extend(_paths(v, (*path, k)))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.extend(_paths(v, (*path, i)))
    return out


@st.composite
def damaged(draw: st.DrawFn, text: str) -> str:
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["value", "value", "value", "drop", "double", "insert", "cut", "swap"]))
        i = draw(st.integers(0, len(lines) - 1)) if lines else 0
        if op == "value" and lines:
            try:
                rec = json.loads(lines[i])
            except (ValueError, RecursionError):
                continue
            path = draw(st.sampled_from(_paths(rec)))
            new = draw(st.sampled_from(HOSTILE_VALUES))
            if not path:
                rec = new
            else:
                parent = rec
                for k in path[:-1]:
                    parent = parent[k]
                parent[path[-1]] = new
            lines[i] = json.dumps(rec)  # NaN and Infinity written as such: json.loads takes them
        elif op == "drop" and lines:
            del lines[i]
        elif op == "double" and lines:
            lines.insert(draw(st.integers(0, len(lines))), lines[i])
        elif op == "insert":
            lines.insert(i, draw(st.sampled_from(BAD_LINES) | st.text(max_size=20)))
        elif op == "cut" and lines:
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
            del lines[i + 1 :]
        elif op == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + ("\n" if draw(st.booleans()) else "")


def _windows(seed_text: str) -> list[dict[str, Any]]:
    times = [json.loads(x)["time"] for x in seed_text.splitlines() if '"type":"sample"' in x]
    mid = (times[0] + times[-1]) / 2
    return [
        {"name": "write", "iteration": 0, "start": times[0], "end": mid, "placed": "progress"},
        {"name": "read", "iteration": 0, "start": mid, "end": times[-1] + 0.05, "placed": "estimate"},
    ]


def check_streams(directory: Path, windows: list[dict[str, Any]]) -> dict[str, Any]:
    with time_limit(10, "reading the node streams back"):
        nodes = sections(directory, windows)
    text = json.dumps(nodes, allow_nan=False)  # into the run's document, as JSON
    for host, node in json.loads(text).items():
        parsed = MonitorNode.parse(_Reader(node, f"monitor.nodes.{host}"))
        assert all(math.isfinite(s["time"]) for s in parsed.samples)
        assert len(parsed.windows) == len(windows)
    return nodes


def test_the_seed_stream_is_read_whole(seed: str, tmp_path: Path) -> None:
    (tmp_path / "monitor-node01.jsonl").write_text(seed)
    nodes = check_streams(tmp_path, _windows(seed))
    (node,) = nodes.values()
    assert node["complete"] is True and len(node["samples"]) == 4
    assert any(w["figures"] for w in node["windows"])


@FUZZ
@given(data=st.data())
def test_damaged_node_streams_are_read_never_a_crash(seed: str, tmp_path_factory: pytest.TempPathFactory,
                                                     data: st.DataObject) -> None:  # fmt: skip
    d = tmp_path_factory.mktemp("streams")
    (d / "monitor-node01.jsonl").write_text(
        data.draw(damaged(seed)), encoding="utf-8", errors="surrogateescape"
    )
    if data.draw(st.booleans()):  # a second file of the same node (io500: one per phase), or of another
        other = data.draw(damaged(seed))
        (d / f"monitor-{data.draw(st.sampled_from(['node01-phase', 'node02']))}.jsonl").write_text(other)
    nodes = check_streams(d, _windows(seed))
    for node in nodes.values():
        assert all(r.get("type") == "sample" for r in node["samples"])


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in fuzz_cases("monitor-stream")])
def test_kept_streams(path: Path, tmp_path: Path) -> None:
    (tmp_path / "monitor-node01.jsonl").write_bytes(path.read_bytes())
    check_streams(tmp_path, [{"name": "w", "iteration": 0, "start": 1.0, "end": 2e9, "placed": "estimate"}])
