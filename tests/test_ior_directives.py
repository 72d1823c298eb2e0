"""IOR 4's last four output directives as `iolens ior` takes them: `-O saveRankPerformanceDetailsCSV=F` (one
CSV line per rank per phase, IOR's header), `-O summaryalways=1` (from -v, the summary table after each test),
`-O debug=S` (IOR's DEBUG MODE banner before the options) and `-O platform=S` (accepted; IOR replaces it with
host(OS)). The references in tests/data/ior4/output/ are the official IOR 4.0.0's (README.md there)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from .db_helpers import iolens, iolens_env
from .test_ior_classic_output import REF, SAME, check_like_reference, run_ior, run_like_reference

NUMBER_10E = re.compile(r"^-?\d\.\d{10}e[-+]\d\d$")


def _csv(path: Path) -> list[list[str]]:
    return [line.split(",") for line in path.read_text().splitlines()]


def test_rank_csv_has_iors_header_and_a_line_per_rank_per_phase(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    csv = tmpfs_dir / "ranks.csv"
    proc = run_ior(iolens_bin, [*SAME, "-O", f"saveRankPerformanceDetailsCSV={csv}"], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    ours, ref = _csv(csv), _csv(REF / "rank_details.csv")
    assert ours[0] == ref[0]  # the header, field for field
    assert len(ours) == len(ref) == 1 + 2 * 2 * 2  # 2 ranks x (write, read) x 2 iterations
    # IOR's order: each phase's ranks in turn (write 0, write 1, read 0, read 1, then the next iteration).
    assert [row[:2] for row in ours] == [row[:2] for row in ref]
    share = 256 * 1024  # each rank's part of the phase's bytes
    for access, _rank, *figures in ours[1:]:
        assert len(figures) == 4 and all(NUMBER_10E.match(f) for f in figures), figures
        with_open, xfer, rate_with_open, rate = map(float, figures)
        assert 0 < xfer <= with_open < 60, (access, figures)
        assert abs(rate_with_open * with_open - share) < share * 1e-6
        assert abs(rate * xfer - share) < share * 1e-6


def test_rank_csv_that_cannot_be_written_is_refused_before_any_io(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    for where, message in (
        (tmpfs_dir / "missing" / "r.csv", "does not exist"),
        (tmpfs_dir, "names a directory"),
    ):
        proc = run_ior(iolens_bin, [*SAME, "-O", f"saveRankPerformanceDetailsCSV={where}"], tmpfs_dir / "f")
        assert proc.returncode == 2, proc.stderr
        assert "-O saveRankPerformanceDetailsCSV" in proc.stderr and message in proc.stderr, proc.stderr
        assert not (tmpfs_dir / "f").exists()


def test_script_naming_an_unwritable_rank_csv_is_refused_before_its_first_test(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    # IOR opens the file when it reads the script, before any test: iolens refuses the script, naming a line.
    script = tmpfs_dir / "bad.ior"
    script.write_text(
        f"IOR START\n  testFile={tmpfs_dir}/f\n  transferSize=64k\n  blockSize=64k\nRUN\n"
        f"  saveRankPerformanceDetailsCSV={tmpfs_dir}/missing/r.csv\nRUN\nIOR STOP\n"
    )
    proc = subprocess.run(
        [*iolens_bin, "ior", "--no-live", "--np", "1", "-f", str(script)], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert f"{script.name}:6: -O saveRankPerformanceDetailsCSV" in proc.stderr, proc.stderr
    assert proc.stdout == "" and sorted(p.name for p in tmpfs_dir.iterdir()) == ["bad.ior"]


def _always_script(tmp: Path) -> Path:
    """The reference's script (summaryalways.ior) with the test file in `tmp`."""
    text = (REF / "summaryalways.ior").read_text().replace("/dev/shm/iorref/f", str(tmp / "f"))
    script = tmp / "always.ior"
    script.write_text(text)
    return script


def test_summaryalways_prints_the_summary_after_each_test_of_a_script(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    script = _always_script(tmpfs_dir)
    proc = subprocess.run(
        [*iolens_bin, "ior", "--no-live", "--np", "2", "-v", "-f", str(script)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    ref = (REF / "text_summaryalways_v1.txt").read_text()
    check_like_reference(proc.stdout, ref)
    header = next(line for line in ref.splitlines() if line.startswith("Operation"))
    blocks = proc.stdout.split(header)
    assert len(blocks) == 4 and "Max Write" not in proc.stdout  # after test 0, after test 1, of all tests
    # After each test: that test's summary rows only (Test#, the 13th field), before the next test starts.
    assert "TestID              : 1" in blocks[1] and "TestID" not in blocks[2]
    tests_shown = [[ln.split()[12] for ln in b.splitlines() if len(ln.split()) == 27] for b in blocks[1:]]
    assert tests_shown == [["0", "0"], ["1", "1"], ["0", "0", "1", "1"]]
    # Without -v IOR prints neither the per-test summary nor the Max lines: one summary table.
    quiet = subprocess.run(
        [*iolens_bin, "ior", "--no-live", "--np", "2", "-f", str(script)], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.count(header) == 1


def test_debug_is_shown_as_iors_banner_and_platform_is_replaced_by_the_host(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    args = ["--np", "2", "-t", "64k", "-b", "256k", "-O", "debug=HELLO", "-O", "platform=MYPLAT"]
    out = run_like_reference(iolens_bin, args, tmpfs_dir / "f", "text_debug_v0.txt").stdout
    assert "\n*** DEBUG MODE ***\n*** HELLO ***\n\n\nOptions: \n" in out
    assert "MYPLAT" not in out.replace(" ".join(args), "")  # only the command line repeats it
    # IOR's JSON shows the platform it found, host(OS), not -O platform.
    proc = run_ior(iolens_bin, [*args, "-O", "summaryFormat=JSON"], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    test = json.loads(proc.stdout)["tests"][0]
    assert test["Parameters"]["platform"].endswith(")") and "MYPLAT" not in test["Parameters"]["platform"]
    assert "*** HELLO ***" in proc.stderr  # IOR's log lines: beside the JSON, not inside it


def test_rich_script_output_heads_each_test(engine: Path, tmpfs_dir: Path, tmp_path: Path) -> None:
    script = tmp_path / "three.ior"
    script.write_text(
        f"IOR START\n  testFile={tmpfs_dir}/r\n  transferSize=8k, blockSize=16k\nRUN\nRUN\nRUN\nIOR STOP\n"
    )
    r = iolens(
        "ior", "--np", "2", "--no-live", "--text-format=rich", "-f", str(script),
        env=iolens_env({"IOLENS_BENCH": str(engine)}, home=tmp_path),
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert [line.split(" (")[0] for line in r.stdout.splitlines() if line.startswith("Test ")] == [
        "Test 0 of 3",
        "Test 1 of 3",
        "Test 2 of 3",
    ]
    assert "IOR-4.0.0" not in r.stdout  # the rich view, not IOR's text
