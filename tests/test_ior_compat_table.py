"""Every flag of IOR 4's `ior -h` (tests/data/ior4/help.txt) and every `-O` directive IOR decodes has a row in
docs/ior.md's compatibility table, and the engine knows each flag (never "unknown option")."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HELP = ROOT / "tests" / "data" / "ior4" / "help.txt"
DOCS = ROOT / "docs" / "ior.md"

# The -O directives IOR 4.0.0's DecodeDirective knows (src/parse_options.c), besides the long names of flags.
DIRECTIVES = """
api summaryFile summaryFormat saveRankPerformanceDetailsCSV refnum debug platform testfile dualmount
allocateBufferOnGPU GPUid GPUDirect deadlineForStonewalling stoneWallingWearOut stoneWallingWearOutIterations
stoneWallingStatusFile maxTimeDuration minTimeDuration outlierThreshold numNodes numTasks numTasksOnNode0
repetitions interTestDelay interIODelay readFile writeFile filePerProc reorderTasks reorderTasksConstant
taskPerNodeOffset reorderTasksRandom reorderTasksRandomSeed checkWrite checkRead keepFile keepFileWithError
multiFile warningAsErrors segmentCount blockSize transferSize singleXferAttempt intraTestBarriers collective
setTimeStampSignature dataPacketType uniqueDir useExistingTestFile fsyncPerWrite fsync randomOffset
memoryPerTask memoryPerNode summaryalways verbose useO_DIRECT
""".split()


def _table_section() -> str:
    text = DOCS.read_text()
    start = text.index("## Compatibility with IOR 4: every flag and directive")
    return text[start:]


def _cells(line: str) -> list[str]:
    """A table row's cells (a `\\|` inside a cell is a pipe of its text, not a border)."""
    return re.split(r"(?<!\\)\|", line)


def _first_cells(section: str) -> str:
    return " ".join(_cells(ln)[1] for ln in section.splitlines() if ln.startswith("| "))


def _help_flags() -> tuple[list[str], list[str]]:
    """(flags of the main table, module options) of ior -h."""
    text = HELP.read_text()
    main, modules = text.split("Module POSIX", 1)
    flags = re.findall(r"^  (-[A-Za-z]|--[A-Za-z][\w-]*)", main, re.M)
    flags += re.findall(r"^  -[A-Za-z], (--[A-Za-z][\w-]*)", main, re.M)
    return flags, re.findall(r"^  (--[a-z0-9]+\.[\w-]+)", modules, re.M)


def test_every_ior_flag_and_directive_has_a_row() -> None:
    flags, modules = _help_flags()
    assert len(flags) > 40 and len(modules) > 15
    cells = _first_cells(_table_section())
    missing = [f for f in [*flags, *modules] if not re.search(rf"`{re.escape(f)}[`= ]", cells)]
    # A module's options may share one row (`--hdf5.*`-style rows are not used: each option is named).
    assert missing == [], missing
    directive_cells = _first_cells(_table_section().split("### `-O` directives", 1)[1])
    all_cells = cells + " " + directive_cells
    missing = [d for d in DIRECTIVES if not re.search(rf"`{re.escape(d)}[`=, ]", all_cells)]
    assert missing == [], missing


def test_every_row_has_a_known_status() -> None:
    for ln in _table_section().splitlines():
        if ln.startswith(("| `", "| text", "| JSON", "| CSV")):
            status = _cells(ln)[2].strip()
            assert status in ("supported", "supported, differs", "refused", "see above"), ln


def test_the_engine_knows_every_flag(engine: Path, tmp_path: Path) -> None:
    """Each flag is parsed (maybe refused with its reason, exit 2), never an unknown option."""
    flags, modules = _help_flags()
    needs_value = {
        "-a": "posix", "-A": "1", "-b": "1m", "-d": "0", "-D": "0", "-f": str(tmp_path / "script"), "-G": "1",
        "-i": "1", "-j": "0", "-l": "offset", "--dataPacketType": "offset", "-M": "1m", "-N": "1",
        "-o": str(tmp_path / "f"), "-O": "summaryFormat=default", "-Q": "1", "-s": "1", "-t": "256k",
        "-T": "0", "-X": "0", "--randomPrefill": "0", "--random-offset-seed": "1",
    }  # fmt: skip
    values = {
        "--dummy.delay-create": "0", "--dummy.delay-close": "0", "--dummy.delay-sync": "0",
        "--dummy.delay-xfer": "0", "--hdf5.hintsFileName": str(tmp_path / "h"),
        "--hdf5.setAlignment": "1", "--mpiio.hintsFileName": str(tmp_path / "h"),
    }  # fmt: skip
    for f in [*flags, *modules]:
        arg = [f, needs_value[f]] if f in needs_value else [f"{f}={values[f]}"] if f in values else [f]
        res = subprocess.run(
            [str(engine), "ior", *arg, "-o", str(tmp_path / "f"), "--np", "1", "--comm", "local", "--check"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert "unknown option" not in res.stderr and "unknown key" not in res.stderr, (f, res.stderr)
        assert res.returncode in (0, 2), (f, res.returncode, res.stderr)
    assert list(tmp_path.iterdir()) == []  # --check does no I/O
