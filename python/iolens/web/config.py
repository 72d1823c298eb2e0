"""The portal's settings: one frozen object, passed to every uvicorn worker through the environment."""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import asdict, dataclass

ENV = "IOLENS_WEB_CONFIG"
AUTH_MODES = ("token", "proxy")
DEFAULT_USER_HEADER = "X-Forwarded-User"


class ConfigError(ValueError):
    """A bad `iolens web` option; the message names it."""


@dataclass(frozen=True)
class WebConfig:
    db_url: str
    auth: str = "token"
    # proxy mode: the header carrying the user name, accepted only from these addresses (networks allowed)
    user_header: str = DEFAULT_USER_HEADER
    groups_header: str | None = None
    trusted_proxies: tuple[str, ...] = ()
    # who is staff: these users, members of these Unix groups (or groups the proxy names), token holders
    # made with --staff
    staff_users: tuple[str, ...] = ()
    staff_groups: tuple[str, ...] = ()
    # the session cookie is marked Secure (a center serves the portal over HTTPS behind its proxy)
    secure_cookies: bool = False
    session_hours: float = 12.0
    pool_size: int = 8

    def __post_init__(self) -> None:
        if self.auth not in AUTH_MODES:
            raise ConfigError(f"--auth: expected one of {', '.join(AUTH_MODES)}, got {self.auth!r}")
        if self.auth == "proxy" and not self.trusted_proxies:
            raise ConfigError("--auth proxy needs --trusted-proxy ADDR (the reverse proxy's address)")
        for addr in self.trusted_proxies:
            try:
                ipaddress.ip_network(addr, strict=False)
            except ValueError:
                raise ConfigError(f"--trusted-proxy: {addr!r} is not an IP address or network") from None
        for name, value in (("--user-header", self.user_header), ("--groups-header", self.groups_header)):
            if value is not None and (not value or any(not (c.isalnum() or c in "-_") for c in value)):
                raise ConfigError(f"{name}: {value!r} is not a header name")
        if not 0 < self.session_hours <= 24 * 30:
            raise ConfigError(f"--session-hours: expected 0 < hours <= 720, got {self.session_hours}")
        if not 1 <= self.pool_size <= 64:
            raise ConfigError(f"--pool-size: expected 1..64, got {self.pool_size}")

    def to_env(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_env(cls) -> WebConfig:
        text = os.environ.get(ENV)
        if not text:
            raise ConfigError(f"${ENV} is not set (start the portal with `iolens web`)")
        data = json.loads(text)
        for key in ("trusted_proxies", "staff_users", "staff_groups"):
            data[key] = tuple(data.get(key) or ())
        return cls(**data)

    def proxy_networks(self) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
        return [ipaddress.ip_network(a, strict=False) for a in self.trusted_proxies]
