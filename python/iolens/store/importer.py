"""`iolens db import PATH`: what a path holds, read and checked completely before anything is written.

- a JSON file: an iolens result document (docs/schema.md);
- a directory with result.txt: an IO500 result directory (iolens-io500.json in it, when iolens io500 wrote
  it, is taken instead of the app's text files, and the per-phase documents beside it are part of that run);
- an iolens profile log (*.iolp, *.iolpz, a job log *.iolj) or a directory of them: one profile per job;
- a Darshan log (*.darshan): one profile;
- a JSON-lines file (*.jsonl, *.ndjson, or any file of one JSON object per line): monitoring samples;
- any other directory: everything importable under it.

A source that cannot be read completely is refused with a message and nothing of it is stored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from iolens import results
from iolens.store import documents, io500_dir
from iolens.store.db import StoreError
from iolens.store.store import Store, Stored

DOCUMENT_SUFFIXES = (".json",)
SAMPLE_SUFFIXES = (".jsonl", ".ndjson")
PROFILE_SUFFIXES = (".iolp", ".iolpz", ".iolj")  # .iolj: one MPI job's log (profile/joblog.py)
DARSHAN_SUFFIXES = (".darshan",)
IOLENS_IO500_DOCUMENT = "iolens-io500.json"


class ImportRefused(ValueError):
    """The source is damaged, truncated or not something iolens imports; nothing of it was stored."""


@dataclass(frozen=True)
class Outcome:
    path: str
    stored: Stored | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def import_paths(store: Store, paths: list[str], system: str | None = None) -> list[Outcome]:
    """Import every path (each source in its own transaction); one outcome per source found."""
    outcomes: list[Outcome] = []
    for p in paths:
        path = Path(p)
        if not path.exists():
            outcomes.append(Outcome(p, error=f"{p}: no such file or directory"))
            continue
        for source in sources(path):
            try:
                stored = import_one(store, source, system)
            except ImportRefused as exc:
                outcomes.append(Outcome(str(source), error=str(exc)))
            except StoreError as exc:
                # The database failed (a full disk, damage met, a lost server): the source's transaction
                # was rolled back, and the sources after it are not tried.
                outcomes.append(Outcome(str(source), error=f"{source}: {exc}"))
                return outcomes
            else:
                outcomes += [Outcome(str(source), s) for s in stored]
    return outcomes


def sources(path: Path) -> Iterator[Path]:
    """The importable sources at path: the path itself, or (for a plain directory) those under it."""
    if not path.is_dir() or io500_dir.is_result_dir(path) or _profile_logs(path):
        yield path
        return
    for root, dirs, files in os.walk(path):
        here = Path(root)
        if here != path and (io500_dir.is_result_dir(here) or _profile_logs(here)):
            dirs[:] = []
            yield here
            continue
        dirs.sort()
        for name in sorted(files):
            if name.endswith(DOCUMENT_SUFFIXES + SAMPLE_SUFFIXES + DARSHAN_SUFFIXES):
                yield here / name


def _profile_logs(path: Path) -> list[Path]:
    if not path.is_dir():
        return []
    return sorted(p for p in path.iterdir() if p.name.endswith(PROFILE_SUFFIXES) and p.is_file())


def import_one(store: Store, path: Path, system: str | None = None) -> list[Stored]:
    """Store what one source holds (a directory of profile logs may hold several jobs). A source that
    cannot be stored as it is (bytes that are not text, a number JSON cannot hold) is ImportRefused; its
    transaction is rolled back, so nothing of it is kept."""
    try:
        return _import_one(store, path, system)
    except ImportRefused:
        raise
    except (ValueError, UnicodeError) as exc:
        text = str(exc)
        raise ImportRefused(text if text.startswith(str(path)) else f"{path}: {text}") from None


def _import_one(store: Store, path: Path, system: str | None) -> list[Stored]:
    name = path.name
    if path.is_dir():
        if io500_dir.is_result_dir(path):
            doc_path = path / IOLENS_IO500_DOCUMENT
            if doc_path.is_file():
                return [store.put_run(_document(doc_path), system)]
            try:
                return [store.put_run(io500_dir.run_record(path), system)]
            except io500_dir.Io500DirError as exc:
                raise ImportRefused(str(exc)) from None
        if _profile_logs(path):
            return _profiles(store, path, system)
        raise ImportRefused(f"{path}: not an IO500 result directory nor a directory of profile logs")
    if name.endswith(PROFILE_SUFFIXES):
        return _profiles(store, path, system)
    if name.endswith(DARSHAN_SUFFIXES):
        from iolens.store import darshan_logs

        try:
            return [store.put_profile(darshan_logs.profile_record(path), system)]
        except darshan_logs.DarshanImportError as exc:
            raise ImportRefused(str(exc)) from None
    if name.endswith(SAMPLE_SUFFIXES):
        return [_samples(store, path)]
    if name.endswith(DOCUMENT_SUFFIXES):
        return [store.put_run(_document(path), system)]
    # Unknown suffix: a whole JSON document, else JSON lines.
    if _looks_like_document(path):
        return [store.put_run(_document(path), system)]
    return [_samples(store, path)]


def _profiles(store: Store, path: Path, system: str | None) -> list[Stored]:
    from iolens.store import profiles

    try:
        records = profiles.iolens_jobs(path)
    except profiles.ProfileImportError as exc:
        raise ImportRefused(str(exc)) from None
    return [store.put_profile(r, system) for r in records]


def _document(path: Path):  # type: ignore[no-untyped-def]
    try:
        doc = results.load(path)
    except results.ResultError as exc:
        raise ImportRefused(str(exc)) from None
    return documents.run_record(doc, str(path))


def _looks_like_document(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 16)
    except OSError as exc:
        raise ImportRefused(f"{path}: cannot read: {exc.strerror}") from None
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    first = text.lstrip().split("\n", 1)[0]
    try:
        obj = json.loads(first)
    except json.JSONDecodeError:
        return True  # a document spread over lines (or damaged: results.load says how)
    return isinstance(obj, dict) and "schema_version" in obj


def _samples(store: Store, path: Path) -> Stored:
    from iolens.store import samples

    try:
        batch = samples.read_samples(path)
        # The file is read while it is stored: a bad line rolls the whole file back.
        return store.put_samples(batch.samples, batch.uid, str(path))
    except samples.SampleError as exc:
        raise ImportRefused(str(exc)) from None
