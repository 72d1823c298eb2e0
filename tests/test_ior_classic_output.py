"""`iolens ior` writes IOR 4's own output: the classic text (default when standard output is not a terminal),
IOR's JSON and CSV (`-O summaryFormat=`), to `-O summaryFile=` too; `-v` and `-A` as IOR means them.

The references in tests/data/ior4/output/ are the official IOR 4.0.0's output of the same runs (README.md
there has the commands). Figures differ from run to run; labels, lines, columns, key sets and orders may not.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from iolens.report import ior_classic, ior_formats, ior_output

from .ior_helpers import assert_only_canary_left, place_canary

REF = Path(__file__).parent / "data" / "ior4" / "output"
# The official IOR 4.0.0 when bench/build_ior.sh built it here (never in CI): an extra, live comparison.
OFFICIAL_IOR = Path(os.environ.get("IOLENS_PEERS", "/var/tmp/iolens-peers")) / "ior-4.0.0" / "bin" / "ior"
# What the references ran: 2 ranks, 64 KiB transfers, 256 KiB blocks, 2 iterations, refnum 7.
SAME = ["--np", "2", "-t", "64k", "-b", "256k", "-i", "2", "-A", "7"]
DATE = re.compile(r"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}")
NUMBER = re.compile(r"0x[0-9a-f]+|-?\d+(\.\d+)?(e[-+]?\d+)?")
# Lines whose value is this machine's or this run's (a path, a command line): only their label must match.
MACHINE_KEYS = {"Began", "StartTime", "Finished", "Command line", "Machine", "Path", "FS", "test filename"}


def run_ior(iolens_bin: list[str], args: list[str], path: Path, extra: list[str] | None = None) -> Any:
    """`iolens ior ARGS -o PATH` with standard output a pipe (so: the classic layout unless told)."""
    cmd = [*iolens_bin, "ior", "--no-live", *(extra or []), *args, "-o", str(path)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def normalized(text: str) -> list[str]:
    """The lines with figures, dates and machine-specific values taken out: what must be the same."""
    out = []
    for line in text.splitlines():
        key, sep, _value = line.partition(": ")
        if sep and key.rstrip() in MACHINE_KEYS and len(key) == 20:
            out.append(key.rstrip() + ":")
            continue
        # Column widths follow the figures' widths: where fields start is checked on its own.
        out.append(" ".join(NUMBER.sub("N", DATE.sub("DATE", line)).split()))
    return out


def field_starts(line: str) -> list[int]:
    return [m.start() for m in re.finditer(r"\S+", line)]


def field_ends(line: str) -> list[int]:
    return [m.end() for m in re.finditer(r"\S+", line)]


def rows(text: str, first: tuple[str, ...]) -> list[str]:
    return [line for line in text.splitlines() if line.split()[:1] and line.split()[0] in first]


def summary_columns(text: str) -> list[dict[str, str]]:
    """The summary rows as a parser reads them: each field by the header's name at its position."""
    lines = text.split("Summary of all tests:\n", 1)[1].splitlines()
    names = lines[0].split()
    return [
        dict(zip(names, line.split(), strict=True)) for line in lines[1:] if not line.startswith("Finished")
    ]


def run_like_reference(iolens_bin: list[str], args: list[str], path: Path, reference: str) -> Any:
    """`iolens ior ARGS` (it must succeed) and its text checked against the official IOR's: `reference` is
    a file of tests/data/ior4/output, or (several lines) the output itself."""
    proc = run_ior(iolens_bin, args, path)
    assert proc.returncode == 0, proc.stderr
    check_like_reference(proc.stdout, reference if "\n" in reference else (REF / reference).read_text())
    return proc


def check_like_reference(ours: str, ref: str) -> None:
    """Line for line the same labels and structure; the Results rows start their fields at IOR's columns,
    the summary rows end theirs at IOR's (right-aligned), and both have IOR's number of fields."""
    assert normalized(ours) == normalized(ref)
    for name in ("write", "read", "remove"):
        for a, b in zip(rows(ours, (name,)), rows(ref, (name,)), strict=True):
            if "Max(MiB)" in a or len(a.split()) > 11:
                continue  # summary rows, below
            assert len(a.split()) == len(b.split()) == 11, (a, b)
            assert field_starts(a) == field_starts(b), (a, b)
    summary_ours = ours.split("Summary of all tests:\n", 1)[1].splitlines()
    summary_ref = ref.split("Summary of all tests:\n", 1)[1].splitlines()
    assert summary_ours[0] == summary_ref[0]  # the header, byte for byte
    for a, b in zip(summary_ours[1:-1], summary_ref[1:-1], strict=True):
        assert len(a.split()) == len(b.split()) == len(summary_ref[0].split()) == 27, (a, b)
        assert field_ends(a) == field_ends(b), (a, b)


@pytest.mark.parametrize(("flags", "reference"), [([], "text_v0.txt"), (["-v"], "text_v1.txt")])
def test_classic_text_has_iors_lines_labels_and_columns(
    iolens_bin: list[str], tmpfs_dir: Path, flags: list[str], reference: str
) -> None:
    canary = place_canary(tmpfs_dir)
    run_like_reference(iolens_bin, [*flags, *SAME], tmpfs_dir / "f", reference)
    assert_only_canary_left(tmpfs_dir, canary)


def test_classic_text_at_verbosity_2_adds_iors_time_stamp_and_uname(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    proc = run_like_reference(iolens_bin, ["-v", "-v", *SAME], tmpfs_dir / "f", "text_v2.txt")
    machine = next(line for line in proc.stdout.splitlines() if line.startswith("Machine "))
    assert len(machine.split(": ", 1)[1].split()) > 2  # sysname, node, release, version, hardware
    assert proc.stdout.count("Using Time Stamp 0 (0x0) for Data Signature") == 2  # one per iteration (-G 0)


def test_stonewall_with_wear_out_prints_iors_lines_and_columns(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    args = ["--np", "2", "-v", "-t", "64k", "-b", "64k", "-s", "40", "-D", "1", "-O", "stoneWallingWearOut=1"]
    proc = run_like_reference(iolens_bin, args, tmpfs_dir / "f", "text_stonewall_v1.txt")
    for cols in summary_columns(proc.stdout):
        assert cols["Stonewall(s)"] != "NA" and float(cols["Stonewall(MiB)"]) > 0
    assert "Pairs deadlineForStonewallingaccessed: 40" in proc.stdout
    for rank in (0, 1):  # each rank's count at the deadline, as IOR's ranks say it (-v)
        assert proc.stdout.count(f"\n{rank}: stonewalling pairs accessed: 40\n") == 2


def test_file_per_process_write_check_prints_iors_verify_lines(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    args = ["--np", "2", "-F", "-w", "-r", "-W", "-G", "5", "-t", "64k", "-b", "256k", "-v"]
    proc = run_like_reference(iolens_bin, args, tmpfs_dir / "f", "text_fpp_check_v1.txt")
    assert f"Path                : {tmpfs_dir / 'f'}.00000000" in proc.stdout


def test_awk_fields_of_results_and_summary_mean_what_iors_do(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    # What a script does with IOR's output: split on whitespace, take fields by position.
    doc_path = tmpfs_dir / "doc.json"
    proc = run_ior(iolens_bin, [*SAME, "--json", str(doc_path)], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(doc_path.read_text())
    lines = proc.stdout.splitlines()
    header = lines[lines.index(ior_classic.TABLE_HEADER)].split()
    assert header[:3] == ["access", "bw(MiB/s)", "IOPS"] and len(header) == 11
    results = [line.split() for line in lines if line.split()[:1] in (["write"], ["read"])]
    table = [r for r in results if len(r) == 11]
    assert [(r[0], int(r[10])) for r in table] == [(p["name"], p["iteration"]) for p in doc["phases"]]
    for r, p in zip(table, doc["phases"], strict=True):
        assert float(r[1]) == pytest.approx(p["bw_bytes_per_s"] / 2**20, rel=0.01, abs=0.01)
        assert (r[4], r[5]) == ("256.00", "64.00")
        assert float(r[9]) == pytest.approx(p["times"]["total_s"], abs=1e-6)
    cols = summary_columns(proc.stdout)
    assert [c["Operation"] for c in cols] == ["write", "read"]
    for c in cols:
        assert (c["#Tasks"], c["tPN"], c["reps"], c["fPP"], c["segcnt"]) == ("2", "2", "2", "0", "1")
        assert (c["blksiz"], c["xsize"], c["aggs(MiB)"], c["API"], c["RefNum"]) == (
            "262144",
            "65536",
            "0.5",
            "POSIX",
            "7",
        )
        assert (c["Test#"], c["Stonewall(s)"], c["Stonewall(MiB)"]) == ("0", "NA", "NA")
    bws = [p["bw_bytes_per_s"] / 2**20 for p in doc["phases"] if p["name"] == "write"]
    assert float(cols[0]["Max(MiB)"]) == pytest.approx(max(bws), abs=0.01)
    assert float(cols[0]["Min(MiB)"]) == pytest.approx(min(bws), abs=0.01)
    assert lines[-1].startswith("Finished            : ")


def _key_order(value: Any) -> Any:
    """The shape of a JSON value: the keys, in order, of every object; the types of the leaves."""
    if isinstance(value, dict):
        return [(k, _key_order(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_key_order(v) for v in value]
    return "number" if isinstance(value, (int, float)) else type(value).__name__


def test_summary_format_json_is_iors_json_alone_on_standard_output(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    proc = run_ior(iolens_bin, [*SAME, "-O", "summaryFormat=JSON"], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    ours = json.loads(proc.stdout)  # nothing else on standard output
    ref = json.loads((REF / "summary.json").read_text())
    assert _key_order(ours) == _key_order(ref)
    assert ours["tests"][0]["Options"] == {
        **ref["tests"][0]["Options"],
        "test filename": str(tmpfs_dir / "f"),
    }
    skip = {"platform", "testFileName", "setTimeStampSignature/incompressibleSeed"}
    params = {k: v for k, v in ours["tests"][0]["Parameters"].items() if k not in skip}
    assert params == {k: v for k, v in ref["tests"][0]["Parameters"].items() if k not in skip}
    assert [r["access"] for r in ours["tests"][0]["Results"]] == ["write", "read", "write", "read"]
    figures = {
        "bwMaxMIB",
        "bwMinMIB",
        "bwMeanMIB",
        "bwStdMIB",
        "OPsMax",
        "OPsMin",
        "OPsMean",
        "OPsSD",
        "MeanTime",
    }
    for a, b in zip(ours["summary"], ref["summary"], strict=True):
        assert {k: v for k, v in a.items() if k not in figures} == {
            k: v for k, v in b.items() if k not in figures
        }
    assert ours["summary"][0]["ReferenceNumber"] == 7


def test_json_with_v_keeps_stdout_pure_and_logs_on_stderr(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    proc = run_ior(iolens_bin, ["-v", *SAME, "-O", "summaryFormat=JSON"], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    test = doc["tests"][0]
    # -v adds IOR's removal entries and its "max" object (IOR 4.0.0 itself writes broken JSON here).
    assert [r["access"] for r in test["Results"]] == ["write", "read", "remove"] * 2
    assert list(test)[-1] == "max" and list(test["max"]) == ["writeMiB", "writeMB", "readMiB", "readMB"]
    assert "Participating tasks : 2" in proc.stderr
    assert proc.stderr.count("Commencing write performance test: ") == 2


def test_summary_format_csv_is_iors_csv(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    proc = run_ior(iolens_bin, [*SAME, "-O", "summaryFormat=CSV"], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    ref = (REF / "summary.csv").read_text().splitlines()
    ours = proc.stdout.splitlines()
    assert ours[0] == ref[0] == ior_formats.CSV_HEADER
    assert len(ours) == len(ref) == 5
    for a, b in zip(ours[1:], ref[1:], strict=True):
        fa, fb = a.split(","), b.split(",")
        assert len(fa) == len(fb) == 12
        assert (fa[0], fa[10], fa[11]) == (fb[0], fb[10], fb[11])  # access, numTasks, iter
        assert all(re.fullmatch(r"\d+\.\d{4}", x) for x in fa[1:10])
    # -v: IOR mixes its log lines in; iolens keeps them out of the CSV, on standard error.
    proc = run_ior(iolens_bin, ["-v", *SAME, "-O", "summaryFormat=CSV"], tmpfs_dir / "f")
    ref_v = (REF / "summary_v1.csv").read_text().splitlines()
    assert proc.stdout.splitlines()[0] == ior_formats.CSV_HEADER and len(proc.stdout.splitlines()) == 5
    log_ref = [line for line in ref_v if "," not in line]
    assert normalized(proc.stderr) == normalized("\n".join(log_ref) + "\n")


def test_summary_file_gets_iors_output_and_stdout_says_so(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    out = tmpfs_dir / "summary.txt"
    proc = run_ior(iolens_bin, [*SAME, "-O", f"summaryFile={out}"], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"Writing output to {out}\n"
    check_like_reference(out.read_text(), (REF / "text_v0.txt").read_text())
    js = tmpfs_dir / "summary.json"
    proc = run_ior(iolens_bin, [*SAME, "-O", f"summaryFormat=JSON,summaryFile={js}", "-v"], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(js.read_text())["summary"][1]["operation"] == "read"
    assert proc.stdout.startswith(f"Writing output to {js}\nParticipating tasks : 2\n")


def test_summary_file_in_a_missing_directory_is_refused_before_any_io(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    canary = place_canary(tmpfs_dir)
    proc = run_ior(iolens_bin, [*SAME, "-O", f"summaryFile={tmpfs_dir}/no/such"], tmpfs_dir / "f")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("iolens: error: -O summaryFile: ")
    assert_only_canary_left(tmpfs_dir, canary)
    bad = run_ior(iolens_bin, ["-O", "summaryFormat=XML"], tmpfs_dir / "f")
    assert bad.returncode == 2 and "summaryFormat: 'XML' is not one of default, JSON, CSV" in bad.stderr


def test_reference_number_is_in_the_document_and_every_layout(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    doc_path = tmpfs_dir / "doc.json"
    proc = run_ior(iolens_bin, ["-O", "refNum=123", "--json", str(doc_path)], tmpfs_dir / "f")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(doc_path.read_text())
    assert doc["config"]["reference-number"] == 123 and doc["config"]["verbose"] == 0
    assert [c["RefNum"] for c in summary_columns(proc.stdout)] == ["123", "123"]
    js = ior_formats.ior_json_object([doc], 0, lambda _line: None)
    assert js["tests"][0]["Parameters"]["refnum"] == 123
    assert {s["ReferenceNumber"] for s in js["summary"]} == {123}


def test_text_format_switch_chooses_the_view(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    rich = run_ior(iolens_bin, ["-t", "64k", "-b", "64k"], tmpfs_dir / "f", ["--text-format=rich"])
    assert rich.returncode == 0 and "lat p99" in rich.stdout and "IOR-4.0.0" not in rich.stdout
    classic = run_ior(iolens_bin, ["-t", "64k", "-b", "64k"], tmpfs_dir / "f", ["--text-format", "classic"])
    assert classic.stdout.startswith("IOR-4.0.0: MPI Coordinated Test of Parallel I/O\n")
    bad = run_ior(iolens_bin, ["-t", "64k"], tmpfs_dir / "f", ["--text-format=awk"])
    assert bad.returncode == 2 and "--text-format: expected one of auto, classic, rich" in bad.stderr
    fio = subprocess.run(
        [*iolens_bin, "fio", "--text-format=classic", "--name=x"], capture_output=True, text=True
    )
    assert fio.returncode == 2 and "--text-format: fio has one text layout" in fio.stderr


def _on_a_terminal(cmd: list[str], env: dict[str, str] | None = None) -> str:
    """What cmd prints with its standard output on a pseudo-terminal, as a person's would be."""
    main, sub = pty.openpty()
    try:
        p = subprocess.run(cmd, stdout=sub, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
        os.close(sub)
        sub = -1
        chunks = []
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not data:
                break
            chunks.append(data)
        assert p.returncode == 0, p.stderr
        return b"".join(chunks).decode(errors="replace")
    finally:
        os.close(main)
        if sub >= 0:
            os.close(sub)


def test_auto_is_the_rich_view_on_a_terminal_and_classic_in_an_mpi_job(
    iolens_bin: list[str], tmpfs_dir: Path
) -> None:
    cmd = [*iolens_bin, "ior", "--no-live", "-t", "64k", "-b", "64k", "-o", str(tmpfs_dir / "f")]
    shown = _on_a_terminal(cmd)
    assert "lat p99" in shown and "IOR-4.0.0" not in shown
    # A rank of an MPI job: mpirun gives it a pseudo-terminal even when the job's output goes to a file.
    env = {**os.environ, "OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "1"}
    shown = _on_a_terminal(cmd, env)
    assert "IOR-4.0.0: MPI Coordinated Test of Parallel I/O" in shown and "lat p99" not in shown


def test_several_tests_are_numbered_and_summarized_together(iolens_bin: list[str], tmpfs_dir: Path) -> None:
    # An IOR -f script runs several tests: one banner, a block per test, one summary with Test# 0, 1.
    docs = []
    for i, t in enumerate(("64k", "128k")):
        doc_path = tmpfs_dir / f"doc{i}.json"
        proc = run_ior(iolens_bin, ["-t", t, "-b", "256k", "--json", str(doc_path)], tmpfs_dir / "f")
        assert proc.returncode == 0, proc.stderr
        docs.append(json.loads(doc_path.read_text()))
    out = tmpfs_dir / "two.txt"
    with out.open("w") as fp:
        ior_classic.render_ior_classic(docs, 0, fp)
    text = out.read_text()
    assert text.count("IOR-4.0.0: MPI") == 1 and text.count("\nOptions: \n") == 2
    assert [line.split(": ")[1] for line in text.splitlines() if line.startswith("TestID ")] == ["0", "1"]
    summary = text.split("Summary of all tests:\n", 1)[1].splitlines()[1:-1]
    assert [(s.split()[0], s.split()[12], s.split()[23]) for s in summary] == [
        ("write", "0", "65536"), ("read", "0", "65536"), ("write", "1", "131072"), ("read", "1", "131072"),
    ]  # fmt: skip


def test_a_failed_run_without_figures_still_renders_in_every_layout() -> None:
    failed = {"schema_version": 1, "workload": "ior", "status": "failed", "error": {"message": "x"}}
    for fmt, render in ior_output.RENDERERS.items():
        out, log = io.StringIO(), io.StringIO()
        render([failed], 1, out, log)
        if fmt == "json":
            assert json.loads(out.getvalue())["summary"] == []
        elif fmt == "default":
            assert (
                out.getvalue().startswith("IOR-4.0.0: MPI Coordinated Test") and "Finished" in out.getvalue()
            )


def test_a_cut_short_phase_has_its_row_but_stays_out_of_the_summary(sample_doc: dict[str, Any]) -> None:
    sample_doc["phases"][1]["cut_short"] = True  # the read, stopped by a signal
    out = io.StringIO()
    ior_classic.render_ior_classic([sample_doc], 0, out)
    text = out.getvalue()
    assert len(rows(text.split("Summary of all tests:")[0], ("read",))) == 1
    assert [c["Operation"] for c in summary_columns(text)] == ["write"]


@pytest.mark.skipif(not OFFICIAL_IOR.exists(), reason="the official IOR 4.0.0 is not built here")
@pytest.mark.parametrize(
    "flags", [["-v"], ["-v", "-v", "-F", "-z", "-C"], ["-v", "-e", "-g", "-m", "-F", "-u", "-k"]]
)
def test_live_against_the_official_ior_when_it_is_here(
    iolens_bin: list[str], mpi_env: dict[str, str], tmpfs_dir: Path, flags: list[str]
) -> None:
    args = [*flags, "-t", "64k", "-b", "256k", "-s", "2", "-i", "2", "-A", "3"]
    ref = subprocess.run(
        ["mpirun", "-np", "2", str(OFFICIAL_IOR), *args, "-o", str(tmpfs_dir / "official")],
        capture_output=True, text=True, timeout=120, env=mpi_env,
    )  # fmt: skip
    assert ref.returncode == 0, ref.stdout + ref.stderr
    run_like_reference(iolens_bin, ["--np", "2", *args], tmpfs_dir / "ours", ref.stdout)
