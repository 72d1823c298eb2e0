"""What `iolens db import` stores for a Darshan log, pinned: the profile_files rows and the profile's columns
and document of real Darshan logs (the darshan package's examples and tests/data/darshan), as digests. The
pins were taken before the import was made faster (issue 17, section 5) and prove it stores the same rows
and values; a change that means to change what is stored updates them (run with IOLENS_PRINT_DIGESTS=1 to
print the new ones; the profile digests were re-pinned once since, when the document gained the fields
`layers.pnetcdf`, `layers.posix_files`, `reduced_files` and the top files' `reduced_over_ranks`, with every
other value unchanged; and once more for layers-np2.darshan when the layers' key for a file of several
ranks became `multi_rank`). The files are also stored in batches of a few rows, so that a log of a few
files crosses batch boundaries as a 100k-file log does."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from iolens.store import Store, darshan_logs, profiles
from iolens.store import store as store_module

from .test_darshan_logs import EXAMPLES, LAYERS_LOG, log_path

# log → (files stored, digest of the profile_files rows, digest of the profile's columns and document)
PINS: dict[str, tuple[int, str, str]] = {
    "layers-np2.darshan": (19, "0a0475273be76a66", "4aea4bfb570869be"),
    "dxt.darshan": (215, "191af974a8b2ba1b", "9204aa1cbc6eaa58"),
    "example.darshan": (3, "c15e1d4d250885f9", "88cc3fa953a9a75b"),
    "ior_hdf5_example.darshan": (2, "031a3ac9f41a50e0", "60ae3eb6b43b8b26"),
    "noposix.darshan": (2, "fd582f7b6439c6fb", "361dd022def5e702"),
    "sample-badost.darshan": (2051, "4bdc3de1ae008148", "5bae6dcc9eea19e1"),
    "shane_macsio_id29959_5-22-32552-7035573431850780836_1590156158.darshan": (
        3,
        "98a29f7d88617d05",
        "2c4577f8f6b76e97",
    ),
}


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def stored(url: str) -> tuple[int, str, str, list[Any]]:
    """Files, the digests of the rows and of the profile, and the rows themselves."""
    with Store.open(url, create=False) as s:
        cur = s.db.execute("SELECT * FROM profile_files WHERE profile_id = 1 ORDER BY file_no")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
        cur = s.db.execute("SELECT * FROM profiles WHERE id = 1")
        names = [d[0] for d in cur.description]
        (profile,) = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    for r in rows:
        del r["profile_id"]
    for volatile in ("id", "system_id", "imported_at"):
        del profile[volatile]
    profile["source_path"] = Path(profile["source_path"]).name  # where the darshan package is installed
    doc = profile.pop("document")
    doc = json.loads(doc) if isinstance(doc, str) else doc
    # The backends' own types (PostgreSQL: booleans, numerics) as one.
    profile = {k: float(v) if isinstance(v, (int, float)) else v for k, v in profile.items()}
    # The advice is left out: its rules change on their own (issue 17, section 4); its figures are the
    # document's, pinned here.
    doc.pop("advice", None)
    return len(rows), digest(rows), digest([profile, doc]), rows


@pytest.mark.parametrize("batch", [None, 7], ids=["batch-default", "batch-7"])
@pytest.mark.parametrize("name", [*EXAMPLES, str(LAYERS_LOG)], ids=lambda n: Path(n).name[:20])
def test_import_stores_the_pinned_rows(
    name: str, batch: int | None, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = log_path(name)
    name = log.name
    if batch is not None:
        for module in (profiles, store_module):
            if hasattr(module, "FILE_BATCH"):
                monkeypatch.setattr(module, "FILE_BATCH", batch)
    with Store.open(db_url, create=True) as s:
        got = s.put_profile(darshan_logs.profile_record(log), None)
    assert got.new and got.id == 1
    files, rows_digest, profile_digest, rows = stored(db_url)
    if os.environ.get("IOLENS_PRINT_DIGESTS"):
        print(f"\n    {name!r}: ({files}, {rows_digest!r}, {profile_digest!r}),")
    # The figures a reader checks first: one row a file, numbered from 0, each with its path.
    assert [r["file_no"] for r in rows] == list(range(files))
    assert all(r["path"] for r in rows)
    assert (files, rows_digest, profile_digest) == PINS[name]


def test_counters_json_is_each_rows_non_zero_counters() -> None:
    """The batch formatting (rows grouped by their non-zero counters, the counters the same in a whole group
    written into its format string) gives, row for row, the JSON object of the row's non-zero counters."""
    import numpy as np

    names = [f"C{i}" for i in range(70)]
    rng = np.random.default_rng(17)
    values = np.zeros((300, 70), dtype=np.uint64)
    values[:40, :5] = 7  # a group whose counters are all the same in every row
    values[40:100, 3:9] = rng.integers(1, 2**63, size=(60, 6), dtype=np.uint64)  # a group of varying ones
    values[40:100, 4] = 12  # ... one of them the same throughout
    values[100:110, 60:70] = 5  # a small group (formatted as it is)
    values[110:200] = rng.integers(0, 3, size=(90, 70), dtype=np.uint64)  # rows of their own patterns
    values[250, 69] = np.iinfo(np.uint64).max  # the largest counter; rows 200..249, 251.. have none
    got = profiles._counters_json(values, names, {})
    want = [
        json.dumps({names[c]: int(v) for c, v in enumerate(row) if v}, separators=(",", ":"))
        if row.any()
        else None
        for row in values
    ]
    assert got == want
