"""mdtest 4's data packets (--dataPacketType, -G) in `iolens mdtest`: the files iolens writes are byte
for byte the official mdtest 4.0.0's (tests/data/mdtest4/packets, made by the commands in its README.md),
iolens's read check (-X) accepts the official files and rejects a damaged byte, and, when the official
binary is installed, both write the same bytes for sizes with a partial last word and several 4 KiB
stamps."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .test_mdtest import md, ok, phase

DATA = Path(__file__).parent / "data" / "mdtest4" / "packets"
OFFICIAL = Path("/var/tmp/iolens-peers/ior-4.0.0/bin/mdtest")
TYPES = ["offset", "incompressible", "timestamp", "random"]
# (reference directory, ranks, flags after `-C -F -n 2`) as in the README's commands
CASES = [(f"np{n}-{t}", n, ["-G", "123", "-w", "64", f"--dataPacketType={t}"]) for n in (1, 2) for t in TYPES]
CASES.append(("np2-offset-4100", 2, ["-G", "123", "-w", "4100", "--dataPacketType=offset"]))
# a negative -G reaches the rank half of the words; IO500's driver passes it as the unsigned 32-bit value
CASES.append(("np2-timestamp-G-5", 2, ["-G", "-5", "-w", "64", "--dataPacketType=timestamp"]))
CASES.append(("np2-timestamp-G-5", 2, ["-G", "4294967291", "-w", "64", "--dataPacketType=timestamp"]))
IDS = [f"{c[0]}{'-unsigned' if c[2][1] == '4294967291' else ''}" for c in CASES]


def files(d: Path) -> dict[str, bytes]:
    """Every regular file under d by relative path (without iolens's ledger and the test's canary)."""
    out = {}
    for root, _, names in os.walk(d):
        for name in names:
            if name not in (".iolens-owned", "canary.txt"):
                p = Path(root) / name
                out[str(p.relative_to(d))] = p.read_bytes()
    return out


@pytest.mark.parametrize(("ref", "np_", "flags"), CASES, ids=IDS)
def test_iolens_writes_the_official_files_byte_for_byte(
    engine: Path, tmp_path: Path, ref: str, np_: int, flags: list[str]
) -> None:
    d = tmp_path / "md"
    ok(md(engine, ["-C", "-F", "-n", "2", *flags, "-d", str(d)], np=np_))
    want = files(DATA / ref)
    assert len(want) == 2 * np_
    assert files(d) == want


def test_default_packet_is_mdtests_timestamp(engine: Path, tmp_path: Path) -> None:
    # mdtest 4 without --dataPacketType writes timestamp packets; so does iolens.
    d = tmp_path / "md"
    ok(md(engine, ["-C", "-F", "-n", "2", "-G", "123", "-w", "64", "-d", str(d)], np=2))
    assert files(d) == files(DATA / "np2-timestamp")
    # Another -G is another signature: the bytes change.
    d2 = tmp_path / "md2"
    ok(md(engine, ["-C", "-F", "-n", "2", "-G", "124", "-w", "64", "-d", str(d2)], np=2))
    assert files(d2).keys() == files(d).keys() and files(d2) != files(d)


@pytest.mark.parametrize(("ref", "np_", "flags"), CASES, ids=IDS)
def test_read_check_accepts_the_official_files_and_rejects_a_damaged_byte(
    engine: Path, tmp_path: Path, ref: str, np_: int, flags: list[str]
) -> None:
    d = tmp_path / "md"
    shutil.copytree(DATA / ref, d)
    size = int(flags[3])
    args = ["-E", "-X", "-F", "-n", "2", *flags[:2], "-e", str(size), flags[4], "-d", str(d)]
    v = phase(ok(md(engine, args, np=np_)), "file-read")["verify"]
    n = 2 * np_
    assert v == {"files_checked": n, "bytes_checked": n * size, "errors": 0, "first_bad_path": None}

    victim = d / "test-dir.0-0" / "mdtest_tree.0" / f"file.mdtest.{np_ - 1}.1"
    data = bytearray(victim.read_bytes())
    data[size - 3] ^= 0x10  # a byte of the last word (the partial one for 4100)
    victim.write_bytes(bytes(data))
    res = md(engine, args, np=np_)
    assert res.returncode == 1, res.stderr
    assert res.doc is not None and res.doc["status"] == "failed"
    v = phase(res.doc, "file-read")["verify"]
    assert v["errors"] == 1 and v["first_bad_path"] == str(victim)


def test_another_signature_or_packet_type_fails_the_check(engine: Path, tmp_path: Path) -> None:
    d = tmp_path / "md"
    shutil.copytree(DATA / "np1-offset", d)
    base = ["-E", "-X", "-F", "-n", "2", "-e", "64", "-d", str(d)]
    for wrong in (["-G", "124", "--dataPacketType=offset"], ["-G", "123", "--dataPacketType=timestamp"]):
        res = md(engine, [*base, *wrong])
        assert res.returncode == 1 and res.doc is not None, res.stderr
        assert phase(res.doc, "file-read")["verify"]["errors"] > 0


@pytest.mark.parametrize("ptype", TYPES)
def test_verify_write_passes_with_every_packet(engine: Path, tmp_path: Path, ptype: str) -> None:
    d = tmp_path / "md"
    args = ["-F", "-n", "3", "-w", "4100", "-e", "4100", "-X", "--verify-write", f"--dataPacketType={ptype}"]
    doc = ok(md(engine, [*args, "-G", "7", "-d", str(d)], np=2))
    assert phase(doc, "file-read")["verify"]["errors"] == 0


@pytest.mark.skipif(not OFFICIAL.exists(), reason="the official mdtest 4.0.0 is not installed")
@pytest.mark.parametrize("ptype", TYPES)
def test_live_against_the_official_mdtest(
    engine: Path, tmp_path: Path, mpi_env: dict[str, str], ptype: str
) -> None:
    # Sizes with a partial last word and three 4 KiB stamps, 2 ranks, 3 files each.
    args = ["-C", "-F", "-n", "3", "-w", "9003", "-G", "98765", f"--dataPacketType={ptype}"]
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    cmd = ["mpirun", "--oversubscribe", "-np", "2", str(OFFICIAL), *args, "-d", str(theirs)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_env)
    assert res.returncode == 0, res.stderr
    ok(md(engine, [*args, "-d", str(ours)], np=2))
    want = files(theirs)
    assert len(want) == 6 and files(ours) == want
    # and the official -X accepts iolens's files (it reports "ERROR: verifying the data on read" otherwise)
    check = ["-E", "-X", "-F", "-n", "3", "-e", "9003", *args[6:], "-d", str(ours)]
    cmd = ["mpirun", "--oversubscribe", "-np", "2", str(OFFICIAL), *check]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_env)
    assert res.returncode == 0 and "File read" in res.stdout, res.stderr
    assert "ERROR" not in res.stdout + res.stderr


def test_shared_files_hold_rank_0s_packet(engine: Path, tmp_path: Path) -> None:
    # -S: every rank writes (and -X checks) rank 0's packet: the shared files are what rank 0 alone writes.
    d = tmp_path / "md"
    args = ["-S", "-F", "-n", "2", "-G", "123", "-w", "64", "-e", "64", "-X", "-d", str(d)]
    ok(md(engine, [*args, "-C"], np=2))
    want = files(DATA / "np1-timestamp")["test-dir.0-0/mdtest_tree.0/file.mdtest.0.0"]
    assert files(d) == {f"test-dir.0-0/mdtest_tree.0/file.mdtest.shared.{i}": want for i in range(2)}
    assert phase(ok(md(engine, [*args, "-E"], np=2)), "file-read")["verify"]["errors"] == 0


def test_iterations_rewrite_the_packets_after_reading(engine: Path, tmp_path: Path) -> None:
    # The read phase reads into its own buffer: the second iteration's creates still write the packets.
    d = tmp_path / "md"
    args = ["-F", "-n", "3", "-i", "2", "-N", "1", "-w", "100", "-e", "100", "-X", "--dataPacketType=o"]
    doc = ok(md(engine, [*args, "-G", "9", "-d", str(d)], np=2))
    reads = [p for p in doc["phases"] if p["name"] == "file-read"]
    assert len(reads) == 2 and all(p["verify"]["errors"] == 0 and p["verify"]["files_checked"] for p in reads)
