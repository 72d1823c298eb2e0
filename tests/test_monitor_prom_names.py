"""`--prometheus-names lustre_exporter`: the Lustre metrics in lustre_exporter's names, types, labels and
label values. A golden exposition of the tests/data samples, and every name, label and label value checked
against the list read from that exporter's source (tests/data/lustre_exporter/metrics.txt, its commit noted
there)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from iolens.monitor import prometheus
from iolens.monitor.lustre.collector import LustreCollector

from .monitor_helpers import REPO, run_iolens
from .prom_lustre_tree import lustre_tree

DATA = REPO / "tests" / "data" / "lustre_exporter"


def _exporter_list() -> tuple[dict[str, tuple[str, set[str]]], dict[str, set[str]]]:
    """({metric: (type, labels)}, {label: allowed values}) from metrics.txt."""
    metrics: dict[str, tuple[str, set[str]]] = {}
    values: dict[str, set[str]] = {}
    for line in (DATA / "metrics.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) == 4:
            metrics[parts[0]] = (parts[1], set(parts[2].split(",")))
        else:
            values[parts[0]] = set(parts[1].split(","))
    return metrics, values


def _exposition(tmp_path: Path, jobs: bool = True) -> str:
    data = LustreCollector(mode="files", roots=(str(lustre_tree(tmp_path / "lustre")),)).read()
    return prometheus.exposition({"time": 1.0, "data": {"lustre": data}}, {}, jobs, 1, "lustre_exporter")


def test_every_lustre_name_label_and_value_is_one_the_exporter_defines(tmp_path: Path) -> None:
    metrics, values = _exporter_list()
    text = _exposition(tmp_path)
    fams = list(text_string_to_metric_families(text))
    lustre = [f for f in fams if f.name.startswith("lustre")]
    seen = set()
    for fam in lustre:
        for s in fam.samples:
            assert s.name in metrics, s.name
            kind, labels = metrics[s.name]
            assert fam.type == kind, s.name
            assert set(s.labels) == labels, (s.name, s.labels)
            for label, allowed in values.items():
                if label in s.labels:
                    assert s.labels[label] in allowed, (s.name, label, s.labels[label])
            seen.add(s.name)
    # What the samples can give, all of it given.
    assert seen == set(metrics)


def test_golden_exposition_of_the_samples(tmp_path: Path) -> None:
    """The whole Lustre part, compared with tests/data/lustre_exporter/golden.prom (regenerate it with
    IOLENS_UPDATE_GOLDEN=1 and read the difference before committing)."""
    text = _exposition(tmp_path)
    golden = DATA / "golden.prom"
    if os.environ.get("IOLENS_UPDATE_GOLDEN") == "1":
        golden.write_text(text)
    assert text == golden.read_text()


def test_values_and_labels_as_the_exporter_gives_them(tmp_path: Path) -> None:
    text = _exposition(tmp_path)
    lines = set(text.splitlines())
    # size: the printed bucket in bytes; component: ost for the OST's osd, client for llite/osc/mdc.
    assert (
        'lustre_disk_io_total{component="ost",target="lfs-OST0000",operation="write",size="4194304"} 1'
        in lines
    )
    assert (
        'lustre_pages_per_bulk_rw_total{component="ost",target="lfs-OST0000",operation="write",size="1024"} 1'
        in lines
    )
    assert (
        'lustre_io_time_milliseconds_total{component="ost",target="lfs-OST0000",operation="read",size="1"}'
        " 800" in lines
    )
    assert 'lustre_disk_io{component="ost",target="lfs-OST0000",operation="write",size="5"} 106' in lines
    osc = 'component="client",target="lfs-OST0000-osc-ffff88"'
    assert f'lustre_pages_per_rpc_total{{{osc},operation="write",size="256"}} 1200' in lines
    assert f'lustre_rpcs_in_flight{{{osc},operation="write",size="8",type="osc"}} 402' in lines
    assert f'lustre_rpcs_offset{{{osc},operation="read",size="256"}} 230' in lines
    # mdc: the first `rpcs in flight` table, the modify RPCs, read as its read column.
    mdc = 'component="client",target="lfs-MDT0000-mdc-ffff88"'
    assert f'lustre_rpcs_in_flight{{{mdc},operation="read",size="1",type="mdc"}} 52861' in lines
    assert 'lustre_read_bytes_total{component="ost",target="lfs-OST0000"} 78026117632000' in lines
    assert 'lustre_stats_total{component="mdt",target="lfs-MDT0000",operation="getxattr"} 6145349681' in lines
    assert 'lustre_stats_total{component="client",target="lfs-ffff88",operation="open"} 35955554' in lines
    # Job counters that are zero are left out, as the exporter does.
    assert not any(ln.startswith("lustre_job_") and ln.endswith(" 0") for ln in lines)
    # iolens's own Lustre names are not in this mode.
    assert "lustre_rpc_pages_per_rpc" not in text and "lustre_jobs" not in text
    assert "lustre_job_" not in _exposition(tmp_path / "nojobs", jobs=False)


def test_an_unknown_names_value_is_a_usage_error() -> None:
    r = run_iolens(["monitor", "--prometheus", "0", "--prometheus-names", "hpe"])
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "iolens: error: --prometheus-names: expected iolens or lustre_exporter, got 'hpe'"
    ]


@pytest.mark.parametrize("names", ["iolens", "lustre_exporter"])
def test_node_metrics_do_not_depend_on_the_names_mode(names: str) -> None:
    record = {"time": 1.0, "data": {"loadavg": {"load1": 0.5, "load5": 0.25, "load15": 0.125}}}
    assert "node_load1 0.5" in prometheus.exposition(record, names=names)


def test_the_monitor_serves_the_exporter_names_over_http(tmp_path: Path) -> None:
    from .test_monitor_outputs import Monitor

    root = lustre_tree(tmp_path / "lustre")
    mon = Monitor(
        ["--prometheus", "0", "--prometheus-names", "lustre_exporter", "--lustre-root", str(root)]
        + ["--sources", "lustre", "--interval", "0.2"]
    )
    try:
        text, ctype = mon.scrape()
        assert ctype.startswith("text/plain; version=0.0.4")
        assert (
            'lustre_disk_io_total{component="ost",target="lfs-OST0000",operation="write",size="1048576"} 2000'
            in text
        )
        assert "lustre_brw_" not in text and "lustre_rpc_" not in text
        assert mon.stop() == 0
    finally:
        if mon.proc.poll() is None:
            mon.proc.kill()
            mon.proc.wait()


def test_what_the_exporters_dashboards_query_is_served(tmp_path: Path) -> None:
    text = _exposition(tmp_path)
    served = {f.name for f in text_string_to_metric_families(text)}
    served |= {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    for line in (DATA / "dashboards.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, state = line.split()
            assert (name in served) == (state == "served"), name
