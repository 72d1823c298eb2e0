"""docs/schema.md describes every member a real ior document has: a key the engine writes and the page does
not name is a figure users cannot look up."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .ior_helpers import run_engine

SCHEMA = Path(__file__).resolve().parents[1] / "docs" / "schema.md"


def key_paths(value: Any, prefix: str = "") -> list[str]:
    """Every key path of a JSON value ("phases[].latency_ns.p50"); arrays of non-objects end a path."""
    paths: list[str] = []
    if isinstance(value, dict):
        for key, sub in value.items():
            path = f"{prefix}.{key}" if prefix else key
            paths += [path, *key_paths(sub, path)]
    elif isinstance(value, list):
        for sub in value:
            paths += key_paths(sub, f"{prefix}[]")
    return sorted(set(paths))


def ior_section() -> str:
    """The part of schema.md about ior documents and the envelope: up to the mdtest section."""
    text = SCHEMA.read_text(encoding="utf-8")
    return text[: text.index("## mdtest documents")]


def named(key: str, text: str) -> bool:
    """The page names the key as code (`key`, or "key" inside an object written out)."""
    return re.search(rf'`{re.escape(key)}`|"{re.escape(key)}"|`{re.escape(key)}\.', text) is not None


def test_every_key_of_a_real_ior_document_is_in_the_schema_page(engine: Path, tmpfs_dir: Path) -> None:
    # A run that fills every optional member: stonewall, verification, a read with a cache policy, -C.
    args = ["-F", "-C", "-t", "16k", "-b", "256k", "-w", "-r", "-W", "-R", "-e", "-D", "30",
            "-O", "stoneWallingWearOut=1", "-o", str(tmpfs_dir / "s")]  # fmt: skip
    res = run_engine(engine, args, np=2)
    assert res.returncode == 0, res.stderr
    doc = res.doc
    assert doc["phases"][0]["stonewall"] and doc["phases"][1]["verify"]
    page = ior_section()
    # `config` echoes every option by its long name: that list is `--help`'s, not the page's.
    paths = [p for p in key_paths(doc) if not p.startswith("config.")]
    missing = [p for p in paths if not named(p.rsplit(".", 1)[-1].removesuffix("[]"), page)]
    assert missing == [], f"key paths docs/schema.md does not name: {missing}"
