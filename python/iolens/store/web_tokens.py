"""The web portal's sign-in tokens and its signing secret (docs/web.md "Who sees what").

A token is `iol_` and 43 characters of 256 random bits, shown once when made; the database keeps only its
SHA-256 (a digest of 256 random bits cannot be searched backwards, so no slow key derivation is needed).
A revoked token stays in the table with the time it was revoked.

The secret that signs the portal's session cookies lives in iolens_meta ('web_secret'): every worker of the
portal, and every portal started on the same database, signs and checks with the same one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any

from iolens.store.db import Database, StoreError

PREFIX = "iol_"
# A user name as the portal shows and matches it: a login name, e-mail-like or domain-qualified (DOMAIN\\user
# is refused: the backslash has no meaning across a reverse proxy).
MAX_USER = 128


class TokenError(StoreError):
    """A bad user name or token; the message is for the user."""


@dataclass(frozen=True)
class TokenInfo:
    id: int
    user: str
    staff: bool
    label: str | None
    created_at: float
    last_used_at: float | None
    revoked_at: float | None


def check_user(name: str) -> str:
    """A user name the portal accepts: 1..128 printable characters without blanks, quotes or slashes."""
    if not name or len(name) > MAX_USER:
        raise TokenError(f"user name must have 1 to {MAX_USER} characters, got {len(name)}")
    bad = [c for c in name if not c.isprintable() or c.isspace() or c in "\"'\\/<>&"]
    if bad:
        raise TokenError(f"user name {name!r}: character {bad[0]!r} is not allowed")
    return name


def digest(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def add(db: Database, user: str, staff: bool = False, label: str | None = None) -> tuple[int, str]:
    """A new token for `user`: (its id, the token itself, which is not kept)."""
    check_user(user)
    token = PREFIX + secrets.token_urlsafe(32)
    with db.transaction():
        token_id = db.insert_id(
            "INSERT INTO web_tokens (user_name, token_hash, staff, label, created_at) VALUES (?, ?, ?, ?, ?)",
            (user, digest(token), bool(staff), label, time.time()),
        )
    return token_id, token


def _info(row: tuple[Any, ...]) -> TokenInfo:
    return TokenInfo(int(row[0]), row[1], bool(row[2]), row[3], row[4], row[5], row[6])


_COLUMNS = "id, user_name, staff, label, created_at, last_used_at, revoked_at"


def find(db: Database, token: str) -> TokenInfo | None:
    """The live token `token` is, or None (unknown, revoked, or not shaped like a token)."""
    if not token.startswith(PREFIX) or len(token) > 100:
        return None
    row = db.query_one(
        f"SELECT {_COLUMNS} FROM web_tokens WHERE token_hash = ? AND revoked_at IS NULL", (digest(token),)
    )
    return _info(row) if row else None


def live(db: Database, token_id: int) -> TokenInfo | None:
    """Token `token_id` when it is not revoked (a session stays valid only as long as its token)."""
    row = db.query_one(f"SELECT {_COLUMNS} FROM web_tokens WHERE id = ? AND revoked_at IS NULL", (token_id,))
    return _info(row) if row else None


def touch(db: Database, token_id: int) -> None:
    with db.transaction():
        db.execute("UPDATE web_tokens SET last_used_at = ? WHERE id = ?", (time.time(), token_id))


def listing(db: Database, user: str | None = None) -> list[TokenInfo]:
    where, params = ("WHERE user_name = ?", [user]) if user else ("", [])
    rows = db.query(f"SELECT {_COLUMNS} FROM web_tokens {where} ORDER BY id", params)
    return [_info(r) for r in rows]


def revoke(db: Database, token_id: int | None = None, user: str | None = None) -> int:
    """Revoke one token (by id) or all of a user's; the number revoked."""
    if (token_id is None) == (user is None):
        raise TokenError("revoke: name a token id or a user")
    now = time.time()
    with db.transaction():
        if token_id is not None:
            cur = db.execute(
                "UPDATE web_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, token_id)
            )
        else:
            cur = db.execute(
                "UPDATE web_tokens SET revoked_at = ? WHERE user_name = ? AND revoked_at IS NULL", (now, user)
            )
        return int(cur.rowcount or 0)


def secret(db: Database) -> bytes:
    """The portal's signing secret, made on first use (32 random bytes, hex in iolens_meta)."""
    row = db.query_one("SELECT value FROM iolens_meta WHERE key = 'web_secret'")
    if row is None:
        with db.transaction():
            db.execute(
                "INSERT INTO iolens_meta (key, value) VALUES ('web_secret', ?) ON CONFLICT (key) DO NOTHING",
                (secrets.token_hex(32),),
            )
        row = db.query_one("SELECT value FROM iolens_meta WHERE key = 'web_secret'")
    assert row is not None
    return bytes.fromhex(row[0])


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))
