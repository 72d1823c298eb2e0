"""The two integrity hashes of an IO500 result, computed as the IO500 app (io500 at commit 02091cf) does.

Both are built from one 32-bit string hash: start at 0, and for every byte of the text rotate the value left
by two bits and add the byte read as a *signed* char (the app's `char` on x86 and most HPC targets), modulo
2**32. A key/value pair hashes the concatenation key + value from 0, and pairs are combined with XOR, so the
order of the pairs does not matter and a pair that occurs twice cancels out.

- config hash: XOR of pair(option name as the app spells it, value) over every option of every section that
  has a value after parsing (its default or the INI's value; booleans as TRUE/FALSE). Options without a
  value are left out; an empty-string default is a value. The section name is not part of it.
- score hash: XOR of pair("version", app version), pair(phase name, score) for every scored phase that is
  not extended-only, pair("MD", md), pair("BW", bw), pair("SCORE", score) and, for an invalid run,
  pair("valid", "NO"). Numbers enter as the text C's "%f" prints (six decimals), which is also how
  result.txt shows them.
- the extended score hash (mode=extended, [SCOREX]) is the same without "version", over the extended-only
  scored phases instead.

Hashes are printed as C's "%X": upper-case hex without leading zeros.
"""

from __future__ import annotations

from collections.abc import Iterable

_MASK = 0xFFFFFFFF


def hash_update(value: int, text: str) -> int:
    """Fold `text` (its UTF-8 bytes; undecodable bytes kept as read) into the 32-bit hash `value`."""
    for byte in text.encode("utf-8", "surrogateescape"):
        signed = byte - 256 if byte > 127 else byte
        value = ((((value << 2) | (value >> 30)) & _MASK) + signed) & _MASK
    return value


def pair_hash(key: str, value: str) -> int:
    """Hash of one key/value pair, the unit that is XOR-ed into both hashes."""
    return hash_update(hash_update(0, key), value)


def format_number(value: float) -> str:
    """A number as C's printf("%f") writes it, the form in which scores are hashed and stored."""
    return f"{value:f}"


def format_hash(value: int) -> str:
    """A hash as the app prints it (printf "%X")."""
    return f"{value & _MASK:X}"


def _text(value: str | float) -> str:
    return value if isinstance(value, str) else format_number(value)


def config_hash(options: Iterable[tuple[str, str | None]]) -> int:
    """Config hash of (option name, value) pairs over all sections; a None value (unset) is left out."""
    result = 0
    for name, value in options:
        if value is not None:
            result ^= pair_hash(name, value)
    return result


def score_hash(
    version: str | None,
    phase_scores: Iterable[tuple[str, str | float]],
    md: str | float,
    bw: str | float,
    score: str | float,
    valid: bool,
) -> int:
    """Score hash; pass version=None for the extended hash. Floats are formatted with "%f" first.

    `phase_scores` are the phases that enter this hash (see the module doc); strings are used as given, so the
    values read from a result.txt reproduce the app's hash exactly.
    """
    result = pair_hash("version", version) if version is not None else 0
    for name, value in phase_scores:
        result ^= pair_hash(name, _text(value))
    result ^= pair_hash("MD", _text(md))
    result ^= pair_hash("BW", _text(bw))
    result ^= pair_hash("SCORE", _text(score))
    if not valid:
        result ^= pair_hash("valid", "NO")
    return result
