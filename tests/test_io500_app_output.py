"""IOR's and mdtest's own text output, as the IO500 app keeps it per phase: parsed from the reference run's
two files, checked against that run's result.txt, and refused when truncated."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolens.io500.app_output import (
    AppOutputError,
    IorOutput,
    MdtestOutput,
    parse_ior,
    parse_mdtest,
    parse_output,
)
from iolens.io500.results_files import read_result

REF = Path(__file__).resolve().parent / "data" / "io500"
GIB = 2**30


@pytest.fixture(scope="module")
def ref() -> Path:
    if not (REF / "ior-easy-write.txt").is_file():
        pytest.fail(f"IO500 reference files missing at {REF} (tests/data/io500 is part of the repository)")
    return REF


def test_ior_easy_write_output_gives_the_stonewall_pairs_and_the_results_row(ref: Path) -> None:
    out = parse_output((ref / "ior-easy-write.txt").read_text())
    assert isinstance(out, IorOutput)
    assert out.version == "IOR-4.1.0+dev"
    assert out.command is not None
    assert out.command.startswith("./ior --dataPacketType=timestamp -g -G 1836504248")
    assert (out.tasks, out.transfer_size, out.wear_out) == (2, 2 * 2**20, True)
    assert out.options["api"] == "POSIX" and out.options["aggregate filesize"] == "4 GiB"
    assert out.options["stonewallingTime"] == "5" and out.options["access"] == "file-per-process"
    sw = out.stonewall
    assert sw is not None
    assert (sw.pairs_min, sw.pairs_max, sw.min_data_gib, sw.mean_data_gib) == (1024, 1024, 2.0, 2.0)
    assert sw.time_s == 2.2
    [row] = out.rows
    assert (row.access, row.bw_mib_per_s, row.iops, row.latency_s) == ("write", 1853.59, 926.81, 0.002158)
    assert (row.block_kib, row.xfer_kib, row.open_s, row.xfer_s, row.close_s, row.total_s, row.iteration) == (
        2097152, 2048.0, 0.000017, 2.21, 0.000009, 2.21, 0
    )  # fmt: skip
    # With wear-out every rank went on to the most transfers: 1024 per rank of 2 MiB, 2 ranks.
    assert out.moved() == (2048, 4 * GIB)
    # The same run as result.txt: IOR's MiB/s is the phase's GiB/s, and its write time the app's message's.
    section = read_result(ref / "result.txt").section("ior-easy-write")
    assert section is not None and section.score is not None
    assert abs(row.bw_mib_per_s / 1024 - section.score) < 0.00001
    assert 4 * GIB / GIB / section.score == pytest.approx(2.209768, abs=1e-4)


def test_mdtest_easy_write_output_gives_the_stonewall_counts_and_the_rate_table(ref: Path) -> None:
    out = parse_output((ref / "mdtest-easy-write.txt").read_text())
    assert isinstance(out, MdtestOutput)
    assert (out.version, out.tasks, out.nodes, out.files) == ("mdtest-4.1.0+dev", 2, 1, 2_000_000)
    assert out.command is not None and "'-W' '5'" in out.command
    assert (out.stonewall_min, out.stonewall_max, out.stonewall_avg) == (656316, 658332, 657324.0)
    assert [r.operation for r in out.rates] == [
        "File creation", "File stat", "File read", "File removal", "Tree creation", "Tree removal",
    ]  # fmt: skip
    create = out.rate("File creation")
    assert create is not None and (create.max, create.min, create.mean) == (262058.205,) * 3
    assert create.stddev == 0.0
    tree = out.rate("Tree creation")
    assert tree is not None and tree.max == 27776.848
    assert out.times[0].operation == "File creation" and out.times[0].max == 5.024  # seconds, despite "ms/op"
    # After the stonewall every rank went on to the most items any rank had: 658332 each.
    assert out.items() == 2 * 658332
    assert out.items() / out.times[0].max == pytest.approx(create.max, rel=1e-4)
    section = read_result(ref / "result.txt").section("mdtest-easy-write")
    assert section is not None and f"{create.max / 1000:f}" == section.get("score")


@pytest.mark.parametrize(
    ("name", "cut_before", "message"),
    [
        ("ior-easy-write.txt", "stonewalling pairs", "no results row"),
        ("ior-easy-write.txt", "write     1853", "no results row"),
        ("mdtest-easy-write.txt", "SUMMARY rate", "no SUMMARY rate table"),
        ("mdtest-easy-write.txt", "-- finished at", "no '-- finished at' line"),
    ],
)
def test_truncated_output_is_refused_with_the_line(ref: Path, name: str, cut_before: str, message: str):
    text = (ref / name).read_text()
    cut = text[: text.index(cut_before)]
    with pytest.raises(AppOutputError, match=message) as info:
        parse_output(cut)
    assert str(info.value).startswith(f"line {len(cut.split(chr(10)))}: ")


def test_garbage_and_damaged_rows_are_refused(ref: Path) -> None:
    with pytest.raises(AppOutputError, match="neither IOR nor mdtest"):
        parse_output("\x7fELF\x02\x01garbage")
    with pytest.raises(AppOutputError, match="not IOR output"):
        parse_ior("hello\n")
    with pytest.raises(AppOutputError, match="not mdtest output"):
        parse_mdtest("-- started at 11/22/2026 03:26:14 --\n")
    text = (ref / "ior-easy-write.txt").read_text().replace("926.81     0.002158", "926.81     x.002158")
    with pytest.raises(AppOutputError, match=r"line 38: malformed results row"):
        parse_ior(text)
    text = (ref / "mdtest-easy-write.txt").read_text().replace("262058.205     262058.205", "262058.205  abc")
    with pytest.raises(AppOutputError, match="malformed SUMMARY row"):
        parse_mdtest(text)
