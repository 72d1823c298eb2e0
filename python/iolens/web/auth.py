"""Who is asking, and may they: the portal's two sign-in modes, sessions and CSRF (docs/web.md).

- proxy: the center's reverse proxy has authenticated the user and names them in a header
  (X-Forwarded-User by default, --user-header). The header is believed only when the connection comes from
  a --trusted-proxy address; the same header from anywhere else is refused (403), never ignored, so a
  misrouted request shows up instead of being served anonymously.
- token: `iolens web token add USER` makes a token; the browser signs in with it once (POST /login) and gets
  a session cookie; scripts send it as `Authorization: Bearer TOKEN`.

A session cookie is `payload.signature`: the payload (user, staff flag, token id, expiry, a random nonce) as
base64url JSON, signed with HMAC-SHA256 under the database's web secret. It is HttpOnly and SameSite=Strict.
A session ends at its expiry or when its token is revoked (checked on every request).

CSRF: every state-changing request (POST) must carry a form field `csrf` equal to an HMAC of the session's
nonce (or, before signing in, of a nonce cookie set with the login form), and an Origin header, when the
browser sends one, naming this server. Bearer-token requests carry no cookie, so they need neither.
"""

from __future__ import annotations

import base64
import grp
import hashlib
import hmac
import ipaddress
import json
import pwd
import secrets
import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from iolens.store import web_tokens
from iolens.store.store import Store
from iolens.web.config import WebConfig

SESSION_COOKIE = "iolens_session"
LOGIN_COOKIE = "iolens_login"


@dataclass(frozen=True)
class Viewer:
    user: str
    staff: bool
    via: str  # "proxy", "session" or "bearer"
    nonce: str  # what this viewer's CSRF token is derived from


class Refused(Exception):
    """A request that must not be served: status and a message that says nothing about the data."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _sign(secret: bytes, text: str) -> str:
    return _b64(hmac.new(secret, text.encode("utf-8"), hashlib.sha256).digest())


def make_session(secret: bytes, info: web_tokens.TokenInfo, hours: float) -> str:
    payload = {"u": info.user, "s": info.staff, "t": info.id, "e": time.time() + hours * 3600,
               "n": secrets.token_urlsafe(16)}  # fmt: skip
    body = _b64(json.dumps(payload, separators=(",", ":")).encode("utf-8"))
    return f"{body}.{_sign(secret, 'session|' + body)}"


def read_session(secret: bytes, cookie: str) -> dict[str, Any] | None:
    """The session's payload when the cookie is one this portal signed and it has not expired."""
    body, _, sig = cookie.partition(".")
    if not body or not sig or len(cookie) > 4096:
        return None
    if not hmac.compare_digest(sig, _sign(secret, "session|" + body)):
        return None
    try:
        payload = json.loads(_unb64(body))
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("e"), int | float):
        return None
    if payload["e"] < time.time():
        return None
    return payload


def csrf_token(secret: bytes, nonce: str) -> str:
    return _sign(secret, "csrf|" + nonce)


def is_staff(config: WebConfig, user: str, groups: tuple[str, ...] = ()) -> bool:
    if user in config.staff_users:
        return True
    wanted = set(config.staff_groups)
    if not wanted:
        return False
    if wanted & set(groups):
        return True
    for name in wanted:
        try:
            group = grp.getgrnam(name)
        except KeyError:
            continue
        if user in group.gr_mem:
            return True
        try:
            if pwd.getpwnam(user).pw_gid == group.gr_gid:
                return True
        except KeyError:
            pass
    return False


def peer_is_trusted(config: WebConfig, request: Request) -> bool:
    host = request.client.host if request.client else None
    if not host:
        return False
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(addr in net for net in config.proxy_networks())


def identify(config: WebConfig, secret: bytes, store: Store, request: Request) -> Viewer | None:
    """The viewer of a request, None when nobody is signed in; Refused for a request that must not go on."""
    if config.auth == "proxy":
        return _from_proxy(config, secret, request)
    auth = request.headers.get("authorization")
    if auth is not None:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Refused(401, "Authorization: expected 'Bearer TOKEN'")
        info = web_tokens.find(store.db, token.strip())
        if info is None:
            raise Refused(401, "unknown or revoked token")
        return Viewer(info.user, info.staff, "bearer", "bearer")
    cookie = request.cookies.get(SESSION_COOKIE)
    if not cookie:
        return None
    payload = read_session(secret, cookie)
    if payload is None:
        return None
    try:
        info = web_tokens.live(store.db, int(payload["t"]))
    except (KeyError, TypeError, ValueError):
        return None
    if info is None or info.user != payload.get("u"):
        return None
    return Viewer(info.user, info.staff, "session", str(payload.get("n", "")))


def _from_proxy(config: WebConfig, secret: bytes, request: Request) -> Viewer | None:
    user = request.headers.get(config.user_header)
    if not peer_is_trusted(config, request):
        if user is not None:
            raise Refused(403, f"{config.user_header} is accepted only from the configured proxy")
        raise Refused(403, "this portal is reached through the center's proxy")
    if not user:
        raise Refused(401, f"the proxy sent no {config.user_header}")
    try:
        web_tokens.check_user(user)
    except web_tokens.TokenError:
        raise Refused(400, f"{config.user_header}: not a user name") from None
    groups: tuple[str, ...] = ()
    if config.groups_header:
        raw = request.headers.get(config.groups_header) or ""
        groups = tuple(g.strip() for g in raw.replace(";", ",").split(",") if g.strip())
    # The proxy's user is the session: the CSRF token is bound to the user (and the secret).
    return Viewer(user, is_staff(config, user, groups), "proxy", "proxy|" + user)


def check_csrf(secret: bytes, request: Request, viewer: Viewer | None, field: str | None) -> None:
    """Refuse a POST that did not come from one of the portal's own forms."""
    origin = request.headers.get("origin")
    if origin is not None and origin != "null":
        expected = f"{request.url.scheme}://{request.url.netloc}"
        if origin != expected:
            raise Refused(403, "cross-site request refused")
    elif origin == "null":
        raise Refused(403, "cross-site request refused")
    if viewer is not None and viewer.via == "bearer":
        return
    nonce = viewer.nonce if viewer is not None else request.cookies.get(LOGIN_COOKIE, "")
    if not nonce or not field or not hmac.compare_digest(field, csrf_token(secret, nonce)):
        raise Refused(403, "missing or wrong form token (reload the page and try again)")
