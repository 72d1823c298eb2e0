"""The page-cache mode of an IO500 run, and the comment lines that carry it in result.txt and
result_summary.txt.

iolens's ior drops the pages of the file it is about to read from the page cache before every buffered read
("evict", the default); with `--keep-cache` it leaves them ("keep"), as the IO500 app's IOR always does. On
one node that decides whether an ior read phase measures the storage or memory, so a run says which it was.

The mode is a comment line (`; iolens cache mode: evict (…)`): the app's verifier and INI reader skip
comments, so both files stay in the app's format and keep their hashes (docs/io500.md, "Page cache").
"""

from __future__ import annotations

from collections.abc import Iterable

EVICT = "evict"
KEEP = "keep"
MODES = (EVICT, KEEP)

# The phases whose figures the mode changes: the ior reads (iolens's mdtest and find never evict).
IOR_READ_PHASES = ("ior-easy-read", "ior-hard-read", "ior-rnd4K-easy-read")

COMMENT_PREFIX = "iolens cache mode: "
_WHY = {
    EVICT: "before each ior read phase every process dropped the files it reads from the page cache, so the "
    "read figures are the storage's; the IO500 app keeps the cache, as iolens io500 --keep-cache does",
    KEEP: "--keep-cache: the page cache was kept before the ior read phases, as the IO500 app does, so the "
    "read figures may come from memory",
}


def mode_for(keep_cache: bool) -> str:
    return KEEP if keep_cache else EVICT


def comment(mode: str) -> str:
    """The comment's text (after "; "): the mode, then why it matters, in one line."""
    return f"{COMMENT_PREFIX}{mode} ({_WHY[mode]})"


def mode_in(comments: Iterable[str]) -> str | None:
    """The mode a file's comment lines (their text after "; ") state, None when none does."""
    for text in comments:
        if text.startswith(COMMENT_PREFIX):
            word = text[len(COMMENT_PREFIX) :].split(" ", 1)[0]
            if word in MODES:
                return word
    return None


_HEADLINE = {
    EVICT: "page cache: evicted before each ior read phase (iolens's default; --keep-cache keeps it)",
    KEEP: "page cache: kept before the ior read phases (--keep-cache, as the IO500 app): reads may be memory",
}


def headline(mode: str) -> str:
    """The mode in a few words, for the run's output."""
    return _HEADLINE[mode]
