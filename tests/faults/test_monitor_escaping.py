"""Hostile names in the monitor's line-based outputs: Lustre job ids (and a counter's unit) with newlines,
carriage returns, spaces, commas, equals signs, quotes, backslashes (trailing ones too), control characters
and any Unicode, through InfluxDB line protocol and the Prometheus exposition.

Each InfluxDB line is read back by a parser written here from the protocol's grammar and its table of
special characters, three times, once as each kind of reader takes a backslash: the protocol reference
(`\\\\` is one backslash), InfluxDB 1.x (a backslash keeps the next character from ending the element, and
only `\\,` `\\=` `\\ ` are unescaped) and the Go line-protocol library of InfluxDB 2.x and Telegraf (a
backslash escapes only the element's special characters). All three must read the same point from every
line, one line per sample; the Prometheus text is read by prometheus_client's own parser; and the job id
recovered from either format must be the same text, equal to the original wherever the original can be
carried (docs/monitor.md "Names and values in InfluxDB and Prometheus")."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from iolens.monitor import influx, prometheus
from iolens.monitor.keytext import key_text

from ..monitor_helpers import run_iolens, sample_text
from ..test_monitor_outputs import Monitor

# --- an InfluxDB line-protocol reader from the spec --------------------------------------------------------

READINGS = ("reference", "v1", "v2")
MEASUREMENT_SPECIAL = ", "
KEY_SPECIAL = ",= "


class LineError(ValueError):
    pass


def _element(line: str, i: int, stops: str, special: str, reading: str) -> tuple[str, int]:
    """One measurement, tag key, tag value or field key from line[i:], up to an unescaped stop character."""
    out: list[str] = []
    raw_start = i
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line):
            n = line[i + 1]
            if reading == "v1":
                # 1.x: a backslash shields the next character from the scanner; unescaped afterwards.
                out.append(c + n)
                i += 2
                continue
            if n in special or (reading == "reference" and n == "\\"):
                out.append(n)
                i += 2
                continue
            out.append(c)
            i += 1
            continue
        if c in stops:
            break
        if ord(c) < 0x20 or c == "\x7f":
            raise LineError(f"control character {c!r} in an element at {i}")
        out.append(c)
        i += 1
    if i == raw_start:
        raise LineError(f"empty element at {i}")
    text = "".join(out)
    if reading == "v1":
        for ch in special:
            text = text.replace("\\" + ch, ch)
    return text, i


def _string_field(line: str, i: int, reading: str) -> tuple[str, int]:
    assert line[i] == '"'
    i += 1
    out: list[str] = []
    while i < len(line):
        c = line[i]
        if c == '"':
            return "".join(out), i + 1
        if c == "\\" and i + 1 < len(line):
            n = line[i + 1]
            known = {"reference": {"\\": "\\", '"': '"'}, "v1": {"\\": "\\", '"': '"'},
                     "v2": {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t"}}[reading]  # fmt: skip
            if n in known:
                out.append(known[n])
            else:
                out.append(c + n)
            i += 2
            continue
        out.append(c)
        i += 1
    raise LineError("string field without its closing quote")


_NUMBER = re.compile(r"-?(?:\d+i|\d+u|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)")


def _field_value(line: str, i: int, reading: str) -> tuple[Any, int]:
    if line[i] == '"':
        return _string_field(line, i, reading)
    m = _NUMBER.match(line, i)
    if m is not None and (m.end() == len(line) or line[m.end()] in ", "):
        tok = m.group()
        if tok.endswith("i"):
            value = int(tok[:-1])
            if not -(2**63) <= value < 2**63:
                raise LineError(f"integer {tok} out of range")
            return value, m.end()
        if tok.endswith("u"):
            return int(tok[:-1]), m.end()
        return float(tok), m.end()
    for word, value in (("true", True), ("false", False), ("TRUE", True), ("FALSE", False)):
        if line.startswith(word, i):
            return value, i + len(word)
    raise LineError(f"bad field value at {i}: {line[i : i + 20]!r}")


def parse_line(line: str, reading: str) -> tuple[str, dict[str, str], dict[str, Any], int]:
    """(measurement, tags, fields, timestamp) of one line, as the given kind of reader reads it."""
    measurement, i = _element(line, 0, ", ", MEASUREMENT_SPECIAL, reading)
    if measurement.startswith("#"):
        raise LineError("a measurement may not start with '#' (a comment)")
    tags: dict[str, str] = {}
    while i < len(line) and line[i] == ",":
        key, i = _element(line, i + 1, "=, ", KEY_SPECIAL, reading)
        if i >= len(line) or line[i] != "=":
            raise LineError(f"tag {key!r} without '='")
        value, i = _element(line, i + 1, ", ", KEY_SPECIAL, reading)
        tags[key] = value
    if i >= len(line) or line[i] != " ":
        raise LineError(f"no space before the fields at {i}")
    fields: dict[str, Any] = {}
    i += 1
    while True:
        key, i = _element(line, i, "=, ", KEY_SPECIAL, reading)
        if i >= len(line) or line[i] != "=":
            raise LineError(f"field {key!r} without '='")
        fields[key], i = _field_value(line, i + 1, reading)
        if i < len(line) and line[i] == ",":
            i += 1
            continue
        break
    if i >= len(line) or line[i] != " " or not line[i + 1 :].isdigit():
        raise LineError(f"no timestamp after the fields: {line[i:]!r}")
    return measurement, tags, fields, int(line[i + 1 :])


def read_points(text: str) -> list[tuple[str, dict[str, str], dict[str, Any], int]]:
    """Every line of an InfluxDB text, read alike by the three kinds of reader (else the test fails)."""
    assert text.endswith("\n")
    points = []
    for line in text[:-1].split("\n"):
        readings = {r: parse_line(line, r) for r in READINGS}
        assert readings["v1"] == readings["reference"] == readings["v2"], (line, readings)
        points.append(readings["reference"])
    return points


def test_the_reader_knows_the_protocol() -> None:
    """The test's reader, on the protocol reference's own examples and on the cases the readers dispute."""
    pt = parse_line('my\\ Measurement,tag\\ Key1=tag\\ Value1 fieldKey="\\"string\\" within" 1', "reference")
    assert pt == ("my Measurement", {"tag Key1": "tag Value1"}, {"fieldKey": '"string" within'}, 1)
    assert parse_line("m,t=🍭 f=1i,g=2.5,h=true 7", "v2") == (
        "m",
        {"t": "🍭"},
        {"f": 1, "g": 2.5, "h": True},
        7,
    )
    # What the readers dispute: a doubled backslash in a tag.
    assert parse_line("m,t=a\\\\b f=1i 1", "reference")[1] == {"t": "a\\b"}
    assert parse_line("m,t=a\\\\b f=1i 1", "v1")[1] == {"t": "a\\\\b"}
    assert parse_line("m,t=a\\\\b f=1i 1", "v2")[1] == {"t": "a\\\\b"}
    with pytest.raises(LineError):
        parse_line("m,t=a\nb f=1i 1", "reference")
    with pytest.raises(LineError):
        parse_line("m f=9223372036854775808i 1", "reference")


# --- the job ids ------------------------------------------------------------------------------------------

HOSTILE = ["\n", "\r", "\r\n", " ", ",", "=", '"', "'", "\\", "\t", "\x00", "\x1b[31m", "\x7f", "#", "_",
           "é", "日本", "🚀", "\u2028", "\x85", "\\x0a", "\\n", "{", "}", ":"]  # fmt: skip
job_ids = (
    st.lists(
        st.sampled_from(HOSTILE) | st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=4),
        min_size=1,
        max_size=6,
    )
    .map("".join)
    .filter(bool)
)

_ESCAPE = re.compile(r"\\x([0-9a-f]{2})")


def unescape(text: str) -> str:
    """What a consumer who knows the `\\xHH` convention makes of a recovered text (and of an original that
    already spells one)."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def carried_as_is(job_id: str) -> bool:
    """A job id with none of what the outputs replace: no control character, no backslash at the end or
    before a backslash, comma, equals sign or space."""
    return not re.search(r"[\x00-\x1f\x7f]|\\(?=[\\,= ]|$)", job_id)


def _record(ids: list[str], unit: str) -> dict[str, Any]:
    jobs = {
        job_id: {"snapshot_time": 1.0, "counters": {"write_bytes": {
            "samples": n + 1, "unit": unit, "min": 1, "max": 2, "sum": 3, "sumsq": 2**64 - 1}}}
        for n, job_id in enumerate(ids)
    }  # fmt: skip
    entry = {
        "kind": "job_stats",
        "component": "ost",
        "target": "lfs-OST0000",
        "file": "job_stats",
        "jobs": jobs,
    }
    return {
        "type": "sample",
        "time": 1700000000.25,
        "data": {"lustre": {"obdfilter.lfs-OST0000.job_stats": entry}},
    }


def _prometheus_jobs(text: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == "lustre_job_write_samples_total":
                out[s.labels["jobid"]] = s.value
    return out


def check_one_key_in_both(ids: list[str], unit: str, host: str) -> None:
    record = _record(ids, unit)
    text = "".join(ln + "\n" for ln in influx.lines(record, host))
    assert text.count("\n") == len(ids), "one line per job and sample"
    points = read_points(text)
    from_influx: dict[str, int] = {}
    for (measurement, tags, fields, ts), job_id in zip(points, ids, strict=True):
        assert measurement == "lustre_job_stats" and ts == 1700000000250000000
        assert set(tags) == {"host", "param", "component", "target", "job_id", "counter"}
        assert tags["counter"] == "write_bytes" and tags["target"] == "lfs-OST0000"
        # The one value InfluxDB cannot store (sumsq at 2**64 - 1) is left out; the point is kept.
        assert set(fields) == {"samples", "unit", "min", "max", "sum"}
        for got, original in ((tags["job_id"], job_id), (tags["host"], host), (fields["unit"], unit)):
            assert unescape(got) == unescape(original)
            if carried_as_is(original):
                assert got == original
        from_influx[tags["job_id"]] = fields["samples"]
    expo = prometheus.exposition(record, jobs=True)
    assert _prometheus_jobs(expo) == from_influx


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ids=st.lists(job_ids, min_size=1, max_size=5), unit=job_ids, host=job_ids)
@example(ids=["a\nb", "trailing\\", "a\\,b", "sp ace", "k=v", 'q"uo"te', "\\\\", "\\xe9", "DOMAIN\\user"],
         unit='by"tes\\', host="node 1,rack=2")  # fmt: skip
@example(ids=["job\r\n555", "\x1b]0;title\x07", "tab\there", "\\"], unit="\n", host="\\")
def test_a_job_id_is_one_line_and_the_same_key_in_influx_and_prometheus(
    ids: list[str], unit: str, host: str
) -> None:
    assume(len({unescape(key_text(i)) for i in ids}) == len(ids))  # distinct once escaped
    check_one_key_in_both(ids, unit, host)


@pytest.mark.parametrize(
    "value, shown",
    [
        ("a\nb", "a\\x0ab"),
        ("cr\r", "cr\\x0d"),
        ("esc\x1b[0m", "esc\\x1b[0m"),
        ("trailing\\", "trailing\\x5c"),
        ("two\\\\", "two\\x5c\\x5c"),
        ("a\\,b", "a\\x5c,b"),
        ("a\\ b", "a\\x5c b"),
        ("a\\=b", "a\\x5c=b"),
        ("a\\\nb", "a\\x5c\\x0ab"),
        ("DOMAIN\\user", "DOMAIN\\user"),
        ("caf\\xe9", "caf\\xe9"),
        ("caf\udce9", "caf\\xe9"),  # a byte kept by surrogateescape
        ('q"uote, sp=ace é', 'q"uote, sp=ace é'),
    ],
)
def test_what_the_outputs_replace(value: str, shown: str) -> None:
    assert key_text(value) == shown
    line = influx.line("m", {"job_id": value}, {"f": 1}, 1)
    assert line is not None and "\n" not in line
    assert {r: parse_line(line, r)[1]["job_id"] for r in READINGS} == dict.fromkeys(READINGS, shown)


def test_values_the_protocol_cannot_store_are_left_out() -> None:
    assert (
        influx.line("m", {}, {"a": 2**63, "b": -(2**63) - 1, "c": float("nan"), "d": float("inf")}, 1) is None
    )
    ln = influx.line("m", {}, {"big": 2**63, "ok": 2**63 - 1, "neg": -(2**63), "x": float("-inf")}, 1)
    assert ln == "m ok=9223372036854775807i,neg=-9223372036854775808i 1"


# --- from the files to both outputs, in a real process ---------------------------------------------------

# Lustre 2.16 quotes a job id with unusual characters and escapes its bytes as \xHH (jobstats.py reads it).
ODD_IDS = {
    '"job\\x0a555"': "job\n555",
    '"cr\\x0d\\x0aid"': "cr\r\nid",
    '"sp ace,comma=eq"': "sp ace,comma=eq",
    '"back\\\\slash\\\\"': "back\\slash\\",
    '"q\\"uote"': 'q"uote',
    '"esc\\x1b[31mred"': "esc\x1b[31mred",
    '"caf\\xc3\\xa9"': "café",
}


def _odd_root(root: Path) -> Path:
    base = sample_text("ost-job_stats-2.12.txt").split("- job_id:")[1]
    rest = base.split("\n", 1)[1]
    body = "".join(f"- job_id:          {quoted}\n{rest}" for quoted in ODD_IDS)
    d = root / "obdfilter" / "lfs-OST0000"
    d.mkdir(parents=True)
    (d / "job_stats").write_text("job_stats:\n" + body)
    return root


def test_odd_lustre_job_ids_from_a_real_monitor_reach_influx_and_prometheus_as_one_key(
    tmp_path: Path,
) -> None:
    root = _odd_root(tmp_path / "lustre")
    out, lines = tmp_path / "mon.jsonl", tmp_path / "mon.influx"
    r = run_iolens(["monitor", "--lustre-root", str(root), "--sources", "lustre", "--interval", "0.1",
                    "--duration", "0.1", "--out", str(out), "--influx", str(lines)])  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    sample = next(json.loads(x) for x in out.read_text("utf-8").splitlines() if '"sample"' in x)
    jobs = sample["data"]["lustre"]["obdfilter.lfs-OST0000.job_stats"]["jobs"]
    assert set(jobs) == set(ODD_IDS.values())  # the stream keeps the ids as Lustre meant them

    text = lines.read_text("utf-8")
    points = read_points(text)
    ops = len(jobs["job\n555"]["counters"])
    assert len(points) == 2 * len(ODD_IDS) * ops  # two samples, one line per job and operation
    from_influx = {p[1]["job_id"] for p in points}
    assert {unescape(j) for j in from_influx} == set(ODD_IDS.values())
    assert "sp ace,comma=eq" in from_influx and 'q"uote' in from_influx and "café" in from_influx
    assert "job\\x0a555" in from_influx and "back\\slash\\x5c" in from_influx

    mon = Monitor(["--prometheus", "127.0.0.1:0", "--prometheus-jobs", "--lustre-root", str(root),
                   "--sources", "lustre", "--interval", "0.1"])  # fmt: skip
    try:
        expo, _ = mon.scrape()
        assert set(_prometheus_jobs(expo)) == from_influx
    finally:
        assert mon.stop() == 0
