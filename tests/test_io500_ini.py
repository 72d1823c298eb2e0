"""The IO500 INI reader: the official app's reference files (tests/data/io500, the app's own output) and its
parsing rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from iolens.io500.ini import IniError, default_values, load_config, parse_config, render_values
from iolens.io500.results_files import write_config_files
from iolens.io500.spec import PHASES, runnable_phases

REPO = Path(__file__).resolve().parents[1]
REF = REPO / "tests" / "data" / "io500"


@pytest.fixture(scope="module")
def ref() -> Path:
    if not (REF / "config-quick.ini").is_file():
        pytest.fail(f"IO500 reference files missing at {REF} (tests/data/io500 is part of the repository)")
    return REF


def _error(text: str | bytes, name: str = "config.ini") -> IniError:
    with pytest.raises(IniError) as info:
        parse_config(text, name)
    return info.value


def test_option_table_renders_exactly_the_apps_option_listing(ref: Path) -> None:
    listing = (ref / "ini-keys-and-defaults.ini").read_text()
    assert render_values(default_values()).rstrip("\n") == listing.rstrip("\n")


def test_every_reference_ini_file_parses_and_carries_the_run_config_hash(ref: Path) -> None:
    quick = load_config(ref / "config-quick.ini")
    filled = load_config(ref / "config.ini")
    assert quick.config_hash_text == "D9E23945"  # the config-hash line of result.txt
    assert (
        filled.config_hash_text == "D9E23945"
    )  # config.ini is the same config with the defaults written out
    assert filled.values == quick.values
    defaults = load_config(ref / "ini-keys-and-defaults.ini")
    assert defaults.values == default_values()


def test_config_ini_written_from_config_quick_equals_the_apps_config_ini(ref: Path, tmp_path: Path) -> None:
    quick = load_config(ref / "config-quick.ini")
    write_config_files(tmp_path, quick)
    # Nothing in config.ini depends on the run (no timestamps, hosts or paths the app computes): byte-equal.
    assert (tmp_path / "config.ini").read_bytes() == (ref / "config.ini").read_bytes()
    assert (tmp_path / "config-orig.ini").read_bytes() == (ref / "config-quick.ini").read_bytes()


def test_config_quick_values_and_typed_accessors(ref: Path) -> None:
    cfg = load_config(ref / "config-quick.ini")
    assert cfg.value("debug", "stonewall-time") == 5
    assert cfg.stonewall == 5 and cfg.minwrite == 300 and not cfg.scc
    assert cfg.value("global", "timestamp-datadir") is False
    assert cfg.value("ior-easy", "blockSize") == "2048m"
    assert cfg.value("IOR-HARD", "SEGMENTCOUNT") == 10000000
    assert cfg.value("mdtest-hard", "files-per-dir") is None  # unset: no default
    assert cfg.get("find", "external-mpi-args") == ""  # an empty-string default is a value (and hashed)
    assert cfg.value("mdworkbench", "waitingTime") == 0.0


def test_section_and_key_names_are_case_insensitive_and_hash_in_the_apps_spelling() -> None:
    lower = parse_config("[global]\ndatapackettype = offset\n[ior-easy]\ntransfersize = 1m\n")
    upper = parse_config("[GLOBAL]\nDATAPACKETTYPE = offset\n[IOR-Easy]\nTransferSize = 1m\n")
    assert upper.values == lower.values
    assert upper.get("global", "dataPacketType") == "offset"
    assert upper.config_hash == lower.config_hash != parse_config("").config_hash


def test_comments_whitespace_and_crlf_follow_the_app_rules() -> None:
    text = (
        "# leading comment\r\n"
        "  ; indented comment\r\n"
        "\r\n"
        "  [ debug ]   # section comment\r\n"
        "stonewall-time=7 ; trailing comment\r\n"
        "pause-dir =\t/tmp/p a u s e   \r\n"
        "[global]\n"
        "drop-caches-cmd = echo 3 > /proc/sys/vm/drop_caches # comment\n"
    )
    cfg = parse_config(text)
    assert cfg.get("debug", "stonewall-time") == "7"
    assert cfg.get("debug", "pause-dir") == "/tmp/p a u s e"
    assert cfg.get("global", "drop-caches-cmd") == "echo 3 > /proc/sys/vm/drop_caches"


def test_a_comment_glued_to_a_value_is_an_error_as_in_the_app() -> None:
    err = _error("[debug]\nstonewall-time = 300#no space\n")
    assert err.line == 2
    assert "unexpected content" in str(err) and "needs whitespace" in str(err)


def test_an_empty_value_keeps_the_default_of_a_known_key() -> None:
    cfg = parse_config("[debug]\nStonewall-Time =\n[ior-easy]\nblockSize =   # later\n", "c.ini")
    assert cfg.get("debug", "stonewall-time") == "300" and cfg.get("ior-easy", "blockSize") == "9920000m"
    assert cfg.config_hash == parse_config("").config_hash


def test_an_unknown_key_with_an_empty_value_is_the_same_error_as_with_a_value() -> None:
    # The app skips an empty value before looking the key up; iolens refuses a misspelt key either way.
    empty = _error("[debug]\nstonewall-time = 300\n[ior-easy]\nnosuchkey =   \n", "c.ini")
    valued = _error("[debug]\nstonewall-time = 300\n[ior-easy]\nnosuchkey = 1\n", "c.ini")
    assert str(empty) == str(valued) == "c.ini:4: unknown key 'nosuchkey' in section [ior-easy]"
    outside = _error("stonewall-time =\n", "c.ini")
    assert str(outside) == "c.ini:1: key 'stonewall-time' is outside of any [section]"


def test_booleans_accept_true_false_in_any_case_and_1_0() -> None:
    cfg = parse_config(
        "[global]\ndrop-caches = true\nscc = 1\ntimestamp-datadir = False\nio-buffers-on-gpu = 0\n"
    )
    assert cfg.get("global", "drop-caches") == "TRUE" and cfg.get("global", "scc") == "TRUE"
    assert (
        cfg.get("global", "timestamp-datadir") == "FALSE"
        and cfg.get("global", "io-buffers-on-gpu") == "FALSE"
    )
    assert cfg.minwrite == 30  # Student Cluster Competition rules
    # Normalized booleans hash as TRUE/FALSE, like the app.
    assert (
        cfg.config_hash
        == parse_config(
            "[global]\ndrop-caches = TRUE\nscc = TRUE\ntimestamp-datadir = FALSE\nio-buffers-on-gpu = FALSE\n"
        ).config_hash
    )


def test_a_later_assignment_wins() -> None:
    assert (
        parse_config("[debug]\nstonewall-time = 1\nstonewall-time = 2\n").get("debug", "stonewall-time")
        == "2"
    )


def test_reordering_options_does_not_change_the_config_hash_but_a_value_does() -> None:
    a = parse_config("[ior-easy]\ntransferSize = 1m\nblockSize = 4m\n[debug]\nstonewall-time = 5\n")
    b = parse_config("[debug]\nstonewall-time = 5\n[ior-easy]\nblockSize = 4m\ntransferSize = 1m\n")
    c = parse_config("[debug]\nstonewall-time = 6\n[ior-easy]\nblockSize = 4m\ntransferSize = 1m\n")
    assert a.config_hash == b.config_hash != c.config_hash


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("[global]\n\n[foo]\n", 3, "unknown section [foo]"),
        ("[ior-easy]\n" + "\n" * 10 + "foo = 1\n", 12, "unknown key 'foo' in section [ior-easy]"),
        ("datadir = /x\n", 1, "key 'datadir' is outside of any [section]"),
        ("[debug]\nstonewall-time = 5s\n", 2, "expected an integer, got '5s'"),
        ("[mdtest-easy]\nn = -1\n", 2, "expected an integer >= 0, got '-1'"),
        ("[global]\nverbosity = 4294967296\n", 2, "out of range"),
        ("[global]\ndrop-caches = yes\n", 2, "expected a boolean (TRUE or FALSE), got 'yes'"),
        ("[mdworkbench]\nwaitingTime = 1e+e\n", 2, "expected a number"),
        ("[global]\ndatadir\n", 2, "unexpected content 'datadir'"),
        ("[global]\ndatadir = ./d\n[ior-ea", 3, "unexpected content '[ior-ea'"),  # truncated file
        ("[global]\n[ior easy]\n", 2, "unexpected content"),
    ],
)
def test_bad_configs_raise_an_error_naming_file_and_line(text: str, line: int, message: str) -> None:
    err = _error(text)
    assert err.line == line
    assert str(err).startswith(f"config.ini:{line}: ")
    assert message in str(err)


def test_the_unknown_key_error_reads_as_documented() -> None:
    text = "[global]\n" + "\n" * 9 + "[ior-easy]\nfoo = 1\n"
    assert str(_error(text)) == "config.ini:12: unknown key 'foo' in section [ior-easy]"


def test_binary_garbage_is_rejected_with_the_line() -> None:
    err = _error(b"[global]\ndatadir = x\n\x7fELF\x02\x01\x01\x00\x00\x00", "a.out")
    assert (err.path, err.line) == ("a.out", 3)
    assert "binary data" in str(err)
    err = _error(b"\x89PNG\r\n\x1a\n\xff\xfe garbage")
    assert err.line == 1 and "unexpected content" in str(err)


def test_non_ascii_string_values_are_kept_and_hashed_as_the_bytes_read() -> None:
    cfg = parse_config(b"[global]\ndatadir = /scratch/\xe9t\xc3\xa9\n")
    assert cfg.get("global", "datadir").encode("utf-8", "surrogateescape") == b"/scratch/\xe9t\xc3\xa9"
    assert cfg.render().encode("utf-8", "surrogateescape").count(b"/scratch/\xe9t\xc3\xa9") == 1


def test_an_empty_file_is_all_defaults_and_a_missing_file_names_itself(tmp_path: Path) -> None:
    assert parse_config(b"").values == default_values()
    with pytest.raises(IniError, match=r"^.*missing\.ini: cannot read the config"):
        load_config(tmp_path / "missing.ini")


def test_phase_table_matches_the_apps_phase_list() -> None:
    assert len(PHASES) == 26
    assert [p.name for p in runnable_phases("standard")] == [
        "ior-easy-write", "mdtest-easy-write", "timestamp", "ior-hard-write", "mdtest-hard-write", "find",
        "ior-easy-read", "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdtest-easy-delete",
        "mdtest-hard-read", "mdtest-hard-delete", "ior-rnd4K-easy-read",
    ]  # fmt: skip
    assert [p.name for p in runnable_phases("extended")] == [
        "ior-easy-write", "mdtest-easy-write", "mdworkbench-create", "timestamp", "find-easy",
        "ior-hard-write", "mdtest-hard-write", "find", "find-hard", "mdworkbench-bench", "ior-easy-read",
        "mdtest-easy-stat", "ior-hard-read", "mdtest-hard-stat", "mdworkbench-delete", "mdtest-easy-delete",
        "mdtest-hard-read", "mdtest-hard-delete", "ior-rnd4K-easy-read",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="unknown IO500 mode"):
        runnable_phases("quick")
