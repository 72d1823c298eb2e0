"""The store records each run's page-cache mode, and `iolens compare` refuses runs of different modes.

A read with the page cache evicted measures the storage; with it kept (iolens --keep-cache, IOR, the IO500
app) it may measure memory. Runs of tiny real `iolens io500` runs (db_helpers.TINY_IO500) and the app's own
reference result directory are stored and compared, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from iolens.io500 import cache
from iolens.store import Store, queries
from iolens.store.schema import SCHEMA_VERSION

from .conftest import sample_document
from .db_helpers import IO500_REFERENCE, TINY_IO500, as_older_version, iolens, iolens_env

RED = re.compile(r"\x1b\[(?:\d+;)*31m")  # an SGR sequence that sets the foreground red (bold or not)


def red(text: str, line: str) -> bool:
    """`text` is shown in red in `line` (the colour set before it and not reset in between)."""
    return re.search(RED.pattern + r"[^\x1b]*" + re.escape(text), line) is not None


@pytest.fixture(scope="module")
def io500_runs(engine: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Result directories of three tiny runs: two evicting (the default), one with --keep-cache."""
    out = {}
    for name, args in (("evict", []), ("evict-again", []), ("keep", ["--keep-cache"])):
        root = tmp_path_factory.mktemp(name)
        cfg = root / "io500.ini"
        cfg.write_text(TINY_IO500.format(root=root))
        r = iolens(
            "io500", str(cfg), "--np", "2", "--no-live", *args, env=iolens_env({"IOLENS_BENCH": str(engine)})
        )
        assert r.returncode == 0, r.stderr[-2000:]
        out[name] = root / "results"
    return out


def stored(db_url: str, tmp_path: Path, *sources: Path) -> dict[str, str]:
    """Import the sources in order (runs 1, 2, ...); the environment for the next commands."""
    env = iolens_env(home=tmp_path)
    r = iolens("db", "import", *map(str, sources), "--db", db_url, env=env)
    assert r.returncode == 0, r.stderr
    return env


def modes(db_url: str) -> dict[int, str | None]:
    with Store.open(db_url, create=False) as store:
        return {int(r["id"]): r["cache_mode"] for r in queries.list_runs(store.db)}


def test_compare_refuses_runs_of_different_cache_modes(db_url: str, tmp_path: Path, io500_runs) -> None:
    env = stored(db_url, tmp_path, io500_runs["evict"], io500_runs["keep"])
    assert modes(db_url) == {1: "evict", 2: "keep"}
    for extra in ([], ["--json"]):
        r = iolens("compare", "1", "2", "--db", db_url, *extra, env=env)
        assert (r.returncode, r.stdout) == (2, ""), r.stderr
        assert r.stderr.splitlines() == [
            "iolens: error: compare: runs made in different page-cache modes (run 1 evict, run 2 keep): a "
            "read with the cache evicted measures the storage, with it kept it may measure memory; "
            "--allow-mixed-cache compares them anyway"
        ]


def test_allow_mixed_cache_compares_and_marks_the_differing_run(db_url: str, tmp_path: Path, io500_runs):
    env = stored(db_url, tmp_path, io500_runs["evict"], io500_runs["evict-again"], io500_runs["keep"])
    # Not a terminal: the mark is plain text, on the run's column and its ratio column, and said below.
    r = iolens("compare", "1", "2", "3", "--allow-mixed-cache", "--db", db_url, env=env)
    assert r.returncode == 0, r.stderr
    header = r.stdout.splitlines()[0].split()
    assert header == ["phase", "run", "1", "run", "2", "2/1", "run", "3", "*", "3/1", "*"]
    assert not RED.search(r.stdout)
    assert (
        "* run 3 keep: not the page-cache mode of the others (evict): compared anyway (--allow-mixed-cache): "
        "read figures of different cache modes are not like-for-like"
    ) in r.stdout
    differs = next(line.split() for line in r.stdout.splitlines() if line.startswith("cache_mode"))
    assert differs == ["cache_mode", "evict", "evict", "keep"]
    # On a terminal (rich is told so by FORCE_COLOR) the marked columns are red, the others not.
    colour = iolens(
        "compare", "1", "3", "--allow-mixed-cache", "--db", db_url, env={**env, "FORCE_COLOR": "1"}
    )
    assert colour.returncode == 0, colour.stderr
    head = colour.stdout.splitlines()[0]
    assert red("run 3 *", head) and red("3/1 *", head) and not red("run 1", head)
    read = next(line for line in colour.stdout.splitlines() if line.startswith("ior-easy-read"))
    # Run 1's figure before any colour; run 3's figure and its ratio in red.
    assert "GiB/s" in read.split("\x1b")[0] and red("GiB/s", read) and red("×", read)
    # JSON: each run's mode, and which ones were compared although their mode differs.
    out = json.loads(
        iolens("compare", "1", "2", "3", "--allow-mixed-cache", "--json", "--db", db_url, env=env).stdout
    )
    assert [(r["id"], r["cache_mode"], r["mixed_cache"]) for r in out["runs"]] == [
        (1, "evict", False), (2, "evict", False), (3, "keep", True),
    ]  # fmt: skip
    assert out["run_differences"]["cache_mode"] == ["evict", "evict", "keep"]


def test_compare_of_runs_in_one_cache_mode_is_unchanged(db_url: str, tmp_path: Path, io500_runs) -> None:
    env = stored(db_url, tmp_path, io500_runs["evict"], io500_runs["evict-again"])
    plain = iolens("compare", "1", "2", "--db", db_url, env=env)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.splitlines()[0].split() == ["phase", "run", "1", "run", "2", "2/1"]
    assert "*" not in plain.stdout and "cache" not in plain.stdout
    # The override changes nothing where nothing is mixed.
    assert iolens("compare", "1", "2", "--allow-mixed-cache", "--db", db_url, env=env).stdout == plain.stdout
    out = json.loads(iolens("compare", "1", "2", "--json", "--db", db_url, env=env).stdout)
    assert [(r["cache_mode"], r["mixed_cache"]) for r in out["runs"]] == [("evict", False), ("evict", False)]


def test_the_io500_apps_runs_keep_the_cache(db_url: str, tmp_path: Path, io500_runs) -> None:
    # The app's IOR never evicts: its results compare with iolens io500 --keep-cache, not with the default.
    env = stored(db_url, tmp_path, IO500_REFERENCE, io500_runs["evict"], io500_runs["keep"])
    assert modes(db_url) == {1: "keep", 2: "evict", 3: "keep"}
    assert iolens("compare", "1", "2", "--db", db_url, env=env).returncode == 2
    same = iolens("compare", "1", "3", "--db", db_url, env=env)
    assert same.returncode == 0, same.stderr
    assert "ior-easy-read" in same.stdout


def test_the_python_api_refuses_mixed_modes_unless_allowed(db_url: str, tmp_path: Path, io500_runs) -> None:
    from iolens.store import api

    stored(db_url, tmp_path, io500_runs["evict"], io500_runs["keep"])
    store = api.open_store(db_url)
    try:
        with pytest.raises(queries.MixedCacheModes, match=r"run 1 evict, run 2 keep"):
            api.compare(store, [1, 2])
        with pytest.raises(queries.MixedCacheModes):
            api.compare_differences(store, [1, 2])
        df = api.compare(store, [1, 2], allow_mixed_cache=True)
        reads = df[df["phase"] == "ior-easy-read"]
        assert reads[["run_id", "cache_mode", "mixed_cache"]].values.tolist() == [
            [1, "evict", False],
            [2, "keep", True],
        ]
        diff = api.compare_differences(store, [1, 2], allow_mixed_cache=True)
        assert diff.loc[("run", "cache_mode")].tolist() == ["evict", "keep"]
    finally:
        store.close()


def test_reports_say_the_cache_mode(db_url: str, tmp_path: Path, io500_runs) -> None:
    env = stored(db_url, tmp_path, io500_runs["keep"])
    show = iolens("db", "show", "1", "--db", db_url, env=env)
    assert show.returncode == 0, show.stderr
    assert "cache mode   keep (the page cache was kept before reads" in show.stdout
    r = iolens("report", "1", "--html", str(tmp_path / "r.html"), "--db", db_url, env=env)
    assert r.returncode == 0, r.stderr
    assert "<tr><td>cache mode</td><td>keep (the page cache was kept" in (tmp_path / "r.html").read_text()


def _ior(keep: bool | None, read: bool = True) -> dict[str, Any]:
    """The sample ior document (write + read) with keep-cache in its config echo (None: not echoed)."""
    doc = copy.deepcopy(sample_document())
    if keep is not None:
        doc["config"]["keep-cache"] = keep
        doc["phases"][1]["cache"]["policy"] = "keep" if keep else "evict"
    if not read:
        doc["phases"], doc["summary"] = doc["phases"][:1], doc["summary"][:1]
    return doc


def test_runs_stored_before_the_mode_was_recorded_get_the_mode_they_ran_in(
    db_url: str, tmp_path: Path, io500_runs
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    docs = {"ior-evict.json": _ior(False), "ior-keep.json": _ior(True), "ior-plain.json": _ior(None),
            "ior-write.json": _ior(False, read=False)}  # fmt: skip
    for name, doc in docs.items():
        doc["started_at"] = f"2026-05-0{len(list(src.iterdir())) + 1}T10:00:00Z"
        (src / name).write_text(json.dumps(doc))
    # An IO500 result directory iolens wrote, without its document: the app's files only, with the mode's
    # comment (a run of this iolens) and without it (one of an iolens before it, which always evicted).
    dirs = []
    for name, run, comment in (("with-comment", "keep", True), ("without", "evict", False)):
        d = tmp_path / name
        d.mkdir()
        for f in ("result.txt", "result_summary.txt", "config.ini"):
            text = (io500_runs[run] / f).read_text()
            if not comment:
                text = "".join(ln for ln in text.splitlines(keepends=True) if cache.COMMENT_PREFIX not in ln)
            (d / f).write_text(text)
        dirs.append(d)
    sources = [*(src / n for n in docs), io500_runs["keep"], IO500_REFERENCE, *dirs]
    stored(db_url, tmp_path, *sources)
    now = modes(db_url)
    assert now == {1: "evict", 2: "keep", 3: "evict", 4: None, 5: "keep", 6: "keep", 7: "keep", 8: "evict"}

    # The database as an iolens before this one left it: nothing a later migration made (no
    # run_cache_modes table), schema version 1.
    with Store.open(db_url, create=False) as store:
        as_older_version(store.db, 1)
    # Any command opens it at the current version: the table comes back with the same modes.
    assert modes(db_url) == now
    with Store.open(db_url, create=False) as store:
        row = store.db.query_one("SELECT value FROM iolens_meta WHERE key = 'schema_version'")
    assert row is not None and int(row[0]) == SCHEMA_VERSION
    env = iolens_env(home=tmp_path)
    assert iolens("compare", "5", "8", "--db", db_url, env=env).returncode == 2
    assert iolens("compare", "1", "3", "4", "--db", db_url, env=env).returncode == 0  # no read: any mode


def test_regressions_keep_each_cache_mode_a_history_of_its_own(db_url: str, tmp_path: Path) -> None:
    # One config hash: 4 evicting runs at 1 GiB/s, one keeping the cache at 5 GiB/s, then one evicting at
    # 0.5 GiB/s. The last is held against the 4 evicting runs only (a regression); the kept one has no past.
    src = tmp_path / "docs"
    src.mkdir()
    for i, (keep, gib) in enumerate([(False, 1.0)] * 4 + [(True, 5.0), (False, 0.5)]):
        doc = _ior(keep)
        doc["config"].pop("keep-cache")  # one config hash for all: only the mode tells them apart
        doc["phases"][1]["cache"]["policy"] = "keep" if keep else "evict"
        doc["phases"][1]["bw_bytes_per_s"] = gib * 2**30
        doc["started_at"] = f"2026-05-0{i + 1}T10:00:00Z"
        (src / f"{i}.json").write_text(json.dumps(doc))
    stored(db_url, tmp_path, *sorted(src.iterdir()))
    with Store.open(db_url, create=False) as store:
        checks = [c for c in queries.regressions(store.db) if c.phase == "read"]
    by_mode = {c.cache_mode: c for c in checks}
    assert set(by_mode) == {"evict", "keep"}
    assert by_mode["evict"].run_id == 6 and by_mode["evict"].history == 4 and by_mode["evict"].regression
    assert by_mode["keep"].history == 0 and not by_mode["keep"].regression
    # The trend of the phase mixes them (one config hash): it says so, and shows each run's mode.
    t = iolens("db", "trend", "--phase", "read", "--db", db_url, env=iolens_env(home=tmp_path))
    assert t.returncode == 0, t.stderr
    assert "runs of 2 page-cache modes (evict, keep): their read figures are not like-for-like" in t.stdout
    rows = {
        line.split()[0]: line.split() for line in t.stdout.splitlines() if line.split()[:1] in (["5"], ["6"])
    }
    assert rows["5"][-2:] == ["keep", "yes"] and rows["6"][-2:] == ["evict", "yes"]


def test_a_cache_mode_iolens_never_stores_is_met_as_damage(sqlite_url: str, tmp_path: Path, io500_runs):
    env = stored(sqlite_url, tmp_path, io500_runs["evict"], io500_runs["keep"])
    with Store.open(sqlite_url, create=False) as store:
        store.db.execute("UPDATE run_cache_modes SET cache_mode = ? WHERE run_id = 2", ("kee\x00",))
    r = iolens("compare", "1", "2", "--allow-mixed-cache", "--db", sqlite_url, env=env)
    assert r.returncode == 1 and r.stdout == "" and len(r.stderr.splitlines()) == 1
    assert "run 2's cache mode 'kee\\x00' is not one iolens stores: the database is damaged" in r.stderr
    check = iolens("db", "check", "--db", sqlite_url, env=env)
    assert (
        check.returncode == 1
        and "damage: run 2: its cache mode 'kee\\x00' is not one iolens stores" in check.stdout
    )


def test_fio_runs_have_the_mode_of_their_buffered_reads(sqlite_url: str, tmp_path: Path, engine: Path):
    # cache=cold (fio's invalidate=1, the default) drops the pages before a buffered read: evict; asis keeps
    # whatever is cached: keep; an O_DIRECT job does not read through the cache: no mode.
    env = iolens_env({"IOLENS_BENCH": str(engine)}, home=tmp_path)
    job = ["--name=r", "--rw=randread", "--bs=4k", "--size=1m", f"--directory={tmp_path}"]
    for extra in (["--cache=cold"], ["--cache=asis"], ["--direct=1"]):
        r = iolens("fio", *job, *extra, "--no-live", "--db", sqlite_url, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
    assert modes(sqlite_url) == {1: "evict", 2: "keep", 3: None}
    r = iolens("compare", "1", "2", "--db", sqlite_url, env=env)
    assert (r.returncode, r.stdout) == (2, "") and "run 1 evict, run 2 keep" in r.stderr
    assert iolens("compare", "1", "3", "--db", sqlite_url, env=env).returncode == 0
