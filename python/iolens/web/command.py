"""`iolens web`: start the portal, or manage its sign-in tokens (docs/web.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from iolens.messages import PROG, error
from iolens.store import web_tokens
from iolens.store.db import StoreError
from iolens.store.settings import StoreOptions, resolve
from iolens.store.store import Store
from iolens.web.config import AUTH_MODES, DEFAULT_USER_HEADER, ConfigError, WebConfig

USAGE = f"""usage: {PROG} web [--db PATH_OR_URL] [--host 127.0.0.1] [--port 8050] [--workers N]
                  [--auth token|proxy] [--trusted-proxy ADDR]... [--user-header NAME] [--groups-header NAME]
                  [--staff-user USER]... [--staff-group GROUP]... [--secure-cookies] [--session-hours H]
       {PROG} web token add USER [--staff] [--label TEXT] [--db ...]
       {PROG} web token list [USER] [--db ...]
       {PROG} web token revoke ID | --user USER [--db ...]

The center's I/O portal on the statistics database: users see their own jobs (profiles), staff see
everything (benchmarks, monitoring, top jobs, the job survey). Binds to 127.0.0.1 unless --host says
otherwise.

sign-in (docs/web.md "Who sees what"):
  --auth token           (default) each user signs in with a token from `{PROG} web token add USER`
  --auth proxy           the center's reverse proxy authenticates and names the user in --user-header
                         (default {DEFAULT_USER_HEADER}); accepted only from --trusted-proxy addresses
  --trusted-proxy ADDR   the proxy's address or network (repeat for several)
  --groups-header NAME   a header in which the proxy lists the user's groups (for --staff-group)
  --staff-user USER      this user is staff (repeat); token holders made with --staff are staff too
  --staff-group GROUP    members of this Unix group (or of a group the proxy names) are staff
  --secure-cookies       mark the session cookie Secure (the portal is served over HTTPS by the proxy)
  --session-hours H      a sign-in lasts H hours (default 12)

serving:
  --host ADDR            the address to listen on (default 127.0.0.1)
  --port N               the port (default 8050)
  --workers N            uvicorn worker processes (default 1; a center's portal: one per core)
  --pool-size N          database connections per worker (default 8)
  --no-access-log        do not log each request
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"{PROG} web", add_help=False, usage=argparse.SUPPRESS)
    p.add_argument("--db")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8050)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--pool-size", type=int, default=8)
    p.add_argument("--auth", choices=AUTH_MODES, default="token")
    p.add_argument("--trusted-proxy", action="append", default=[])
    p.add_argument("--user-header", default=DEFAULT_USER_HEADER)
    p.add_argument("--groups-header")
    p.add_argument("--staff-user", action="append", default=[])
    p.add_argument("--staff-group", action="append", default=[])
    p.add_argument("--secure-cookies", action="store_true")
    p.add_argument("--session-hours", type=float, default=12.0)
    p.add_argument("--no-access-log", action="store_true")
    return p


class _Usage(Exception):
    pass


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    def fail(message: str) -> None:
        raise _Usage(message)

    parser.error = fail  # type: ignore[method-assign]
    return parser.parse_args(list(argv))


def _db_url(db: str | None) -> str:
    resolved = resolve(StoreOptions(db=db), fallback_to_default=True)
    assert resolved.url is not None
    return resolved.url


def main(argv: Sequence[str]) -> int:
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    if argv[:1] == ["token"]:
        return _token(argv[1:])
    try:
        args = _parse(_parser(), argv)
        if not 1 <= args.port <= 65535:
            raise _Usage(f"--port: expected 1..65535, got {args.port}")
        if not 1 <= args.workers <= 64:
            raise _Usage(f"--workers: expected 1..64, got {args.workers}")
        config = WebConfig(
            db_url=_db_url(args.db),
            auth=args.auth,
            user_header=args.user_header,
            groups_header=args.groups_header,
            trusted_proxies=tuple(args.trusted_proxy),
            staff_users=tuple(args.staff_user),
            staff_groups=tuple(args.staff_group),
            secure_cookies=args.secure_cookies,
            session_hours=args.session_hours,
            pool_size=args.pool_size,
        )
    except (_Usage, ConfigError) as exc:
        return error(f"web: {exc}")
    from iolens.web import server  # uvicorn and Starlette load only when the portal starts

    try:
        server.serve(config, args.host, args.port, args.workers, access_log=not args.no_access_log)
    except StoreError as exc:
        return error(f"web: {exc}")
    except OSError as exc:
        return error(f"web: {exc}", 1)
    return 0


def _token(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog=f"{PROG} web token", add_help=False, usage=argparse.SUPPRESS)
    p.add_argument("action", choices=("add", "list", "revoke"))
    p.add_argument("subject", nargs="?")
    p.add_argument("--staff", action="store_true")
    p.add_argument("--label")
    p.add_argument("--user")
    p.add_argument("--db")
    try:
        args = _parse(p, argv)
        if args.action == "add" and not args.subject:
            raise _Usage("token add: name the USER")
        if args.action == "revoke" and (args.subject is None) == (args.user is None):
            raise _Usage("token revoke: give a token ID or --user USER")
        if args.action == "revoke" and args.subject is not None and not args.subject.isdigit():
            raise _Usage(f"token revoke: {args.subject!r} is not a token id (see `{PROG} web token list`)")
        if args.action == "add":
            web_tokens.check_user(args.subject)
    except (_Usage, web_tokens.TokenError) as exc:
        return error(f"web: {exc}")
    try:
        with Store.open(_db_url(args.db), create=args.action == "add") as store:
            if args.action == "add":
                token_id, token = web_tokens.add(store.db, args.subject, args.staff, args.label)
                print(token)
                role = "staff" if args.staff else "user"
                print(f"{PROG}: token {token_id} for {args.subject} ({role}); it is shown only now",
                      file=sys.stderr)  # fmt: skip
            elif args.action == "list":
                for t in web_tokens.listing(store.db, args.subject):
                    state = "revoked" if t.revoked_at else "live"
                    role = "staff" if t.staff else "user"
                    print(f"{t.id}\t{t.user}\t{role}\t{state}\t{t.label or ''}")
            else:
                n = web_tokens.revoke(store.db, int(args.subject) if args.subject else None, args.user)
                print(f"revoked {n} token{'s' if n != 1 else ''}")
                if n == 0:
                    return 1
    except StoreError as exc:
        return error(f"web: {exc}")
    return 0
