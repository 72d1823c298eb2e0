"""The portal as an ASGI application: routes, assets, security headers, sign-in.

Each concern's pages live in a module of their own that lists its ROUTES (jobs.py for a user's jobs,
systems.py for benchmarks, runs and comparisons, dashboards.py for monitoring and top jobs, survey.py for
the job survey, live.py for the live view); this module puts them together with the pages every portal has.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from iolens.report.html import CSS as REPORT_CSS
from iolens.report.html import plotly_js_path
from iolens.store import web_tokens
from iolens.store.store import Store
from iolens.web import auth, dashboards, jobs, live, survey, systems
from iolens.web.config import WebConfig
from iolens.web.pool import StorePool
from iolens.web.portal import NOT_FOUND, Ctx, Portal, error_page, page

STATIC = Path(__file__).parent / "static"
# The assets by name, listed once: a request names one of these or gets the 404 (no path is built from it).
ASSETS = {p.name: p for p in STATIC.iterdir() if p.is_file()}

# Only this server's own scripts run; plotly sets inline styles, so styles may be inline (no script can).
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


class SecurityHeaders:
    """Adds the security headers to every response, and `Cache-Control: no-store` to all but assets (a
    page shows one user's data: no shared cache may keep it)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        asset = str(scope.get("path", "")).startswith("/static/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += SECURITY_HEADERS
                if not asset:
                    headers.append((b"cache-control", b"no-store"))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _etag(path: Path) -> str:
    st = path.stat()
    return hashlib.sha256(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:20]


async def static(request: Request) -> Response:
    """The portal's assets: plotly.min.js from the plotly package, the rest from web/static. Cached for a
    day by the browser (the page asks with ?v=VERSION, so an upgrade is fetched anew)."""
    name = request.path_params["name"]
    if name == "plotly.min.js":
        path = plotly_js_path()
    elif name == "report.css":
        return Response(REPORT_CSS, media_type="text/css", headers={"cache-control": "public, max-age=86400"})
    else:
        path = ASSETS.get(name)
        if path is None:
            return error_page(request.app.state.portal, request, 404, NOT_FOUND)
    return FileResponse(path, headers={"cache-control": "public, max-age=86400", "etag": _etag(path)})


@page(public=True)
def home(ctx: Ctx) -> Response:
    if ctx.viewer is None:
        return RedirectResponse("/login", status_code=303)
    return RedirectResponse("/systems" if ctx.staff else "/jobs", status_code=303)


@page(public=True)
def login(ctx: Ctx) -> Response:
    """GET: the sign-in form (token mode). POST: check the token, set the session cookie."""
    if ctx.portal.config.auth == "proxy":
        return RedirectResponse("/", status_code=303)
    if ctx.request.method == "GET":
        nonce = ctx.request.cookies.get(auth.LOGIN_COOKIE) or secrets.token_urlsafe(16)
        ctx.login_nonce = nonce  # the form's CSRF token derives from the cookie set with it
        resp = ctx.render("login.html", message=None)
        resp.set_cookie(auth.LOGIN_COOKIE, nonce, httponly=True, samesite="strict",
                        secure=ctx.portal.config.secure_cookies, max_age=3600)  # fmt: skip
        return resp
    assert ctx.form is not None
    token = ctx.form.get("token")
    info = web_tokens.find(ctx.store.db, token.strip()) if isinstance(token, str) else None
    if info is None:
        return ctx.render("login.html", status=401, message="Unknown or revoked token.")
    web_tokens.touch(ctx.store.db, info.id)
    resp = RedirectResponse("/", status_code=303)
    resp.set_cookie(
        auth.SESSION_COOKIE,
        auth.make_session(ctx.portal.secret, info, ctx.portal.config.session_hours),
        httponly=True, samesite="strict", secure=ctx.portal.config.secure_cookies,
        max_age=int(ctx.portal.config.session_hours * 3600),
    )  # fmt: skip
    resp.delete_cookie(auth.LOGIN_COOKIE)
    return resp


@page()
def logout(ctx: Ctx) -> Response:
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(auth.SESSION_COOKIE)
    return resp


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok\n")


async def not_found(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 404
    if status == 405:
        return error_page(request.app.state.portal, request, 405, "Method not allowed.")
    return error_page(request.app.state.portal, request, 404, NOT_FOUND)


async def server_error(request: Request, exc: Exception) -> Response:
    # The traceback goes to the server's log (uvicorn prints it); the browser learns nothing about it.
    return error_page(request.app.state.portal, request, 500, "The portal failed on this page; see its log.")


def routes() -> list[BaseRoute]:
    core: list[BaseRoute] = [
        Route("/", home),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/healthz", healthz),
        Route("/static/{name}", static),
    ]
    for module in (jobs, systems, dashboards, survey, live):
        core += module.ROUTES
    return core


def create_app(config: WebConfig) -> SecurityHeaders:
    """The application on `config.db_url`. The database must exist and hold an iolens schema (it is
    migrated when older); the signing secret is made there on first start."""
    with Store.open(config.db_url, create=False) as store:
        secret = web_tokens.secret(store.db)
    portal = Portal(config, secret, StorePool(config.db_url, config.pool_size))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        portal.pool.close()

    app = Starlette(
        routes=routes(),
        exception_handlers={404: not_found, 405: not_found, 500: server_error},
        lifespan=lifespan,
    )
    app.state.portal = portal
    # Outermost, so that error responses (Starlette's own 500 included) carry the headers too.
    return SecurityHeaders(app)


def create_app_from_env() -> ASGIApp:
    """uvicorn's factory for each worker: the settings come in $IOLENS_WEB_CONFIG (server.py sets it)."""
    return create_app(WebConfig.from_env())
