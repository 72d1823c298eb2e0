"""Names, tags, hosts, commands and paths stored in the database reach the terminal escaped: an ESC, OSC or
CSI sequence, a newline, a C1 control or a bidirectional override in them is shown as \\x1b, \\n, \\x9b,
\\u202e, never sent raw; rich markup in them is shown as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .db_helpers import iolens, iolens_env, ior_document

# An OSC that retitles the window, a CSI that clears the screen, a newline that would forge a row, a C1
# CSI, a bidirectional override, and rich markup (which would also raise on a stray closing tag).
HOSTILE_SYSTEM = "evil\x1b]0;pwned\x07\x1b[2J\nfake-row\x9b31m\u202eoops[/][red]x"
HOSTILE_HOST = "node\x1b[31m01\r"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\r")


def _no_raw(text: str) -> None:
    for c in RAW:
        assert c not in text, f"{c!r} reached the terminal: {text!r}"


@pytest.fixture
def hostile_db(tmp_path: Path) -> tuple[str, dict[str, str], Path]:
    env = iolens_env(home=tmp_path)
    url = str(tmp_path / "iolens.db")
    docs = tmp_path / "in\x1b[2Jdocs"
    docs.mkdir()
    for i in range(4):
        doc = ior_document(1e9 * (4 - i), started=f"2026-05-0{i + 1}T10:00:00Z", hostname=HOSTILE_HOST)
        doc["command"] = ["ior", "-o", "/scratch/\x1b]8;;http://x\x07link"]
        (docs / f"run{i}\x1b[1m.json").write_text(json.dumps(doc))
    r = iolens("db", "import", str(docs), "--db", url, "--system", HOSTILE_SYSTEM, env=env)
    assert r.returncode == 0, r.stderr
    _no_raw(r.stdout)
    assert "in\\x1b[2Jdocs" in r.stdout  # the source paths, escaped
    r = iolens("db", "system", HOSTILE_SYSTEM, "--description", "desc\x1b[8mhidden", "--db", url, env=env)
    assert r.returncode == 0
    _no_raw(r.stdout)
    return url, env, docs


@pytest.mark.parametrize(
    "args",
    [["db", "runs"], ["db", "systems"], ["db", "show", "1"], ["compare", "1", "2"],
     ["db", "regressions", "--all"], ["db", "trend", "--phase", "write", "--system", HOSTILE_SYSTEM],
     ["db", "info"]],
    ids=lambda a: " ".join(a[:2]),
)  # fmt: skip
def test_control_characters_in_stored_text_are_shown_escaped(
    hostile_db: tuple[str, dict[str, str], Path], args: list[str]
) -> None:
    url, env, _ = hostile_db
    r = iolens(*args, "--db", url, env=env)
    assert r.returncode == 0, r.stderr
    _no_raw(r.stdout + r.stderr)
    if args[1] in ("runs", "systems", "show", "regressions", "trend"):
        assert "evil\\x1b]0;pwned\\x07\\x1b[2J\\nfake-row\\x9b31m\\u202eoops[/][red]x" in r.stdout, r.stdout
        # The newline is escaped, so no line of output starts with the forged row.
        assert not any(line.lstrip().startswith("fake-row") for line in r.stdout.splitlines())
    if args[1] in ("runs", "show"):
        assert "node\\x1b[31m01\\r" in r.stdout
    if args[1] == "systems":
        assert "desc\\x1b[8mhidden" in r.stdout
    if args[1] == "show":
        assert "\\x1b]8;;http://x\\x07link" in r.stdout


def test_json_output_keeps_the_stored_text_exactly(hostile_db: tuple[str, dict[str, str], Path]) -> None:
    url, env, _ = hostile_db
    r = iolens("db", "runs", "--json", "--db", url, env=env)
    assert r.returncode == 0
    _no_raw(r.stdout)  # JSON writes control characters as \\u escapes
    runs = json.loads(r.stdout)
    assert {run["system"] for run in runs} == {HOSTILE_SYSTEM}
    assert {run["hostname"] for run in runs} == {HOSTILE_HOST}


def test_error_messages_naming_hostile_paths_are_escaped_and_one_line(tmp_path: Path) -> None:
    env = iolens_env(home=tmp_path)
    bad = tmp_path / "bad\x1b]0;x\x07\nname.json"
    bad.write_text("{ not json")
    r = iolens("db", "import", str(bad), "--db", str(tmp_path / "x.db"), env=env)
    assert r.returncode == 1
    _no_raw(r.stderr)
    assert r.stderr.count("\n") == 1 and "bad\\x1b]0;x\\x07\\nname.json" in r.stderr, r.stderr
    r = iolens("db", "runs", "--db", str(tmp_path / "no\x1b[2Jdb"), env=env)
    assert r.returncode == 1 and "no\\x1b[2Jdb" in r.stderr
    _no_raw(r.stderr)
