"""The Prometheus side of many nodes (docs/monitor.md "Many nodes: Prometheus"): the recording and alerting
rules in deploy/prometheus are checked and unit-tested by Debian's promtool, the Grafana dashboard's every
query is evaluated by promtool's engine on the same synthetic series, and a real Prometheus server scrapes two
real `iolens monitor --prometheus` processes with the rules loaded while the test writes to a disk."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import REPO

RULES = REPO / "deploy" / "prometheus" / "iolens-rules.yml"
RULES_TEST = REPO / "tests" / "data" / "prometheus" / "iolens-rules-test.yml"
DASHBOARD = REPO / "deploy" / "grafana" / "iolens-node.json"
UNIT = REPO / "deploy" / "systemd" / "iolens-monitor.service"
DOCS = REPO / "docs" / "monitor.md"
GRAFANA_UNITS = {"Bps", "iops", "percentunit", "bytes", "s", "short"}
PROMQL_WORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
}


def _tool(name: str) -> str:
    """A Prometheus binary from Debian's `prometheus` package: fails under CI (IOLENS_REQUIRE_MPI=1 marks the
    CI run, which installs every package), skips elsewhere."""
    path = shutil.which(name)
    if path is None:
        if os.environ.get("IOLENS_REQUIRE_MPI") == "1":
            pytest.fail(f"{name} not found: CI installs Debian's prometheus package (.ci/run)")
        pytest.skip(f"{name} not installed: apt-get install prometheus")
    return path


def _promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_tool("promtool"), *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


def _rules() -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


# ---------------------------------------------------------------- the rules


def test_the_rules_pass_promtool_check_and_follow_the_naming_convention() -> None:
    r = _promtool("check", "rules", str(RULES))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(_rules())} rules found" in r.stdout
    for rule in _rules():
        if "record" in rule:
            # level:metric:operations, the metric without _total (https://prometheus.io/docs/practices/rules/)
            assert re.fullmatch(r"[a-z_]+:[A-Za-z0-9_]+:[a-z0-9_]+", rule["record"]), rule["record"]
            assert not rule["record"].split(":")[1].endswith("_total"), rule["record"]
        else:
            assert rule["alert"].startswith("Iolens") and rule.get("for"), rule
            assert {"summary", "description"} <= set(rule["annotations"]), rule


def test_the_rules_pass_their_unit_tests() -> None:
    r = _promtool("test", "rules", RULES_TEST.name, cwd=RULES_TEST.parent)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout


def test_every_rule_has_a_unit_test() -> None:
    tests = yaml.safe_load(RULES_TEST.read_text())["tests"]
    exprs = " ".join(t["expr"] for g in tests for t in g.get("promql_expr_test", []))
    tested_records = set(re.findall(r"[a-z_]+:[A-Za-z0-9_]+:[a-z0-9_]+", exprs))
    firing = {t["alertname"] for g in tests for t in g.get("alert_rule_test", []) if t["exp_alerts"]}
    quiet = {t["alertname"] for g in tests for t in g.get("alert_rule_test", []) if not t["exp_alerts"]}
    for rule in _rules():
        if "record" in rule:
            assert rule["record"] in tested_records, f"{rule['record']} has no promql_expr_test"
        else:
            # each alert both held back by `for:` (or its condition) and firing
            assert rule["alert"] in firing and rule["alert"] in quiet, rule["alert"]


# A rule made wrong in one place: the unit tests must catch each.
MUTATIONS = {
    "partitions-counted": ("|(sd|vd|hd|xvd)[a-z]+[0-9]+|", "|"),
    "stacked-devices-in-node-sum": (
        '(instance_device:node_disk_read_bytes:rate1m{device!~"dm-.+|md.+"})',
        "(instance_device:node_disk_read_bytes:rate1m)",
    ),
    "cluster-mean-of-nodes": (
        "sum without (instance) (instance:node_disk_read_bytes:rate1m)",
        "avg without (instance) (instance:node_disk_read_bytes:rate1m)",
    ),
    "mean-size-of-means": (
        "cluster:node_disk_read_bytes:rate1m / (cluster:node_disk_reads_completed:rate1m > 0)",
        "avg without (instance) (instance:node_disk_read_bytes_per_reads_completed:ratio_rate1m)",
    ),
    "wrong-quantile": (
        "histogram_quantile(0.99, sum without (instance) (rate(lustre_brw_disk_io_size_bytes",
        "histogram_quantile(0.9, sum without (instance) (rate(lustre_brw_disk_io_size_bytes",
    ),
    "osc-suffix-kept": (
        'rate1m, "target", "$1", "target", "(.+)-(?:osc|mdc)-[0-9a-f]+"))',
        'rate1m, "target", "$1", "target", "(.+)-(?:osc|mdc)"))',
    ),
    "fs-from-whole-target": (
        '"fs", "$1", "target", "([A-Za-z0-9_]+)-.+"))\n      - record: fs:lustre_write',
        '"fs", "$1", "target", "(.+)"))\n      - record: fs:lustre_write',
    ),
    "jobless-in-jobid": (
        'rate1m{jobid!=""})\n      - record: jobid:iolens_command_written',
        "rate1m)\n      - record: jobid:iolens_command_written",
    ),
    "source-never-up-alerts": (" and max_over_time(iolens_monitor_source_up[6h]) == 1", ""),
    "saturation-without-for": ("        for: 10m\n", "        for: 1m\n"),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_wrong_rule_fails_the_unit_tests(mutation: str, tmp_path: Path) -> None:
    old, new = MUTATIONS[mutation]
    text = RULES.read_text()
    assert old in text, f"mutation {mutation} no longer applies"
    (tmp_path / "rules.yml").write_text(text.replace(old, new, 1))
    test = RULES_TEST.read_text().replace("../../../deploy/prometheus/iolens-rules.yml", "rules.yml")
    (tmp_path / "test.yml").write_text(test)
    assert _promtool("check", "rules", "rules.yml", cwd=tmp_path).returncode == 0, "the mutation is valid"
    r = _promtool("test", "rules", "test.yml", cwd=tmp_path)
    assert r.returncode != 0, f"{mutation}: the unit tests still pass\n{r.stdout}"


# ---------------------------------------------------------------- the dashboard


def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def _panels() -> list[dict[str, Any]]:
    return [p for p in _dashboard()["panels"] if p["type"] != "row"]


def _variable_queries() -> list[str]:
    return [v["query"]["query"] for v in _dashboard()["templating"]["list"] if v["type"] == "query"]


def _as_promql(text: str) -> str:
    """A panel's or variable's query as plain PromQL: every template variable matches anything (its `All`),
    and `label_values(SELECTOR, LABEL)` becomes the series of SELECTOR that have LABEL."""
    text = re.sub(r"\$\{?(instance|device|fs|target)\}?", ".*", text)
    m = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", text)
    if m:
        return f"count by ({m.group(2)}) ({m.group(1)})"
    assert "$" not in text, f"unknown template variable in {text}"
    return text


def _metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (not functions, keywords, labels or strings)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    names = re.findall(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*(\(?)", expr)
    return {n for n, paren in names if not paren and n not in PROMQL_WORDS}


def test_the_dashboard_has_grafanas_dashboard_essentials() -> None:
    dash = _dashboard()
    assert isinstance(dash["schemaVersion"], int) and dash["schemaVersion"] >= 36
    assert dash["title"] and dash["uid"] and dash["time"]["from"]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert (
        variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    )
    assert {"instance", "device", "target"} <= set(variables)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for p in _panels():
        assert p["type"] == "timeseries", p["title"]
        assert set(p["gridPos"]) == {"h", "w", "x", "y"} and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert p["targets"] and all(t["expr"] and t["refId"] for t in p["targets"])
        unit = p["fieldConfig"]["defaults"]["unit"]
        assert unit in GRAFANA_UNITS, (p["title"], unit)
        # gaps drawn as gaps: never joined over missing points, never null-as-zero
        assert p["fieldConfig"]["defaults"]["custom"]["spanNulls"] is False, p["title"]
        assert "nullPointMode" not in json.dumps(p)
        # one unit per panel, and a rate (a rule's rate/ratio) never beside a level (a gauge) on one panel
        kinds = {"rate" if re.search(r":(\w*rate\w*)\b", t["expr"]) else "level" for t in p["targets"]}
        assert len(kinds) == 1, p["title"]
    # panels do not overlap
    cells = set()
    for p in dash["panels"]:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, p["title"]
                cells.add((x, y))


def test_every_metric_in_the_dashboard_is_recorded_or_served() -> None:
    recorded = {r["record"] for r in _rules() if "record" in r}
    served = set(re.findall(r"`([a-z][A-Za-z0-9_]*)`", DOCS.read_text()))
    exprs = [t["expr"] for p in _panels() for t in p["targets"]] + _variable_queries()
    used = set().union(*(_metric_names(_as_promql(e)) for e in exprs))
    assert used, "no metric found in the dashboard"
    assert used <= recorded | served, sorted(used - recorded - served)
    # built on the rules: every panel reads at least one recorded series, or a gauge iolens serves
    assert used & recorded


def test_every_dashboard_query_is_evaluated_by_promtool_on_the_rules(tmp_path: Path) -> None:
    """Each panel query and variable query, as `count(...) > bool 0` at 10m on the rules' test series: a
    typo in a query (a syntax error, a metric or label name that does not exist) fails."""
    base = yaml.safe_load(RULES_TEST.read_text())["tests"][0]
    queries = [t["expr"] for p in _panels() for t in p["targets"]] + _variable_queries()
    cases = [
        {
            "expr": f"count({_as_promql(q)}) > bool 0",
            "eval_time": "10m",
            "exp_samples": [{"labels": "{}", "value": 1}],
        }
        for q in queries
    ]
    test = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {"interval": base["interval"], "input_series": base["input_series"], "promql_expr_test": cases}
        ],
    }
    (tmp_path / "dashboard-test.yml").write_text(json.dumps(test))  # JSON is YAML
    r = _promtool("test", "rules", "dashboard-test.yml", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # and the check can fail: a misspelt metric gives no sample
    cases[0]["expr"] = cases[0]["expr"].replace(":rate1m", ":rate1mm", 1)
    (tmp_path / "dashboard-test.yml").write_text(json.dumps(test))
    assert _promtool("test", "rules", "dashboard-test.yml", cwd=tmp_path).returncode != 0


# ---------------------------------------------------------------- the systemd unit


def test_the_systemd_unit_is_accepted(tmp_path: Path, iolens_bin: list[str]) -> None:
    text = UNIT.read_text()
    assert "ExecStart=/usr/local/bin/iolens monitor --no-live --prometheus ${IOLENS_MONITOR_LISTEN}" in text
    sections = re.findall(r"^\[(\w+)\]$", text, re.M)
    assert sections == ["Unit", "Service", "Install"]
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        return  # parsed above; nothing more to ask without systemd
    # systemd checks that ExecStart's program exists: point it at the installed iolens.
    unit = tmp_path / "iolens-monitor.service"
    unit.write_text(text.replace("/usr/local/bin/iolens", iolens_bin[0]))
    r = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    complaints = [line for line in (r.stdout + r.stderr).splitlines() if unit.name in line]
    assert r.returncode == 0 and not complaints, r.stdout + r.stderr
    # and verify does complain about a key systemd does not know (the check above can fail)
    unit.write_text(unit.read_text().replace("Nice=10", "Nicety=10"))
    r = subprocess.run(
        [analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    assert "Nicety" in r.stdout + r.stderr
