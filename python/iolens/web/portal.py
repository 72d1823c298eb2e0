"""What every page function gets: the request, who is asking, a store connection, and rendering.

A page is a plain function `(ctx: Ctx) -> Response` wrapped by @page: the wrapper reads a POST's form, then in
a worker thread borrows a store connection, decides the viewer (auth.identify), refuses what the viewer may
not see, checks CSRF on POST, and turns NotFound into the one 404 page that says nothing about what exists.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from iolens import __version__
from iolens.store.queries import NotFound
from iolens.store.store import Store
from iolens.web import auth
from iolens.web.config import WebConfig
from iolens.web.pool import StorePool

log = logging.getLogger("iolens.web")


def figure_json(fig: Any) -> Markup:
    """A plotly figure as JSON safe inside <script type="application/json">: no NaN, and no '<', '>' or
    '&' that could end the element or start markup (escaped as \\u003c etc., which JSON.parse reads back)."""
    text = json.dumps(fig, separators=(",", ":"), allow_nan=False, default=str)
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("iolens.web", "templates"),
        autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["figure_json"] = figure_json
    return env


@dataclass
class Portal:
    """The application's state: settings, the signing secret, the store pool, the templates."""

    config: WebConfig
    secret: bytes
    pool: StorePool
    templates: Environment = field(default_factory=_environment)


@dataclass
class Ctx:
    request: Request
    portal: Portal
    store: Store
    viewer: auth.Viewer | None
    form: FormData | None = None
    login_nonce: str | None = None

    @property
    def query(self) -> Any:
        return self.request.query_params

    @property
    def user(self) -> str:
        assert self.viewer is not None
        return self.viewer.user

    @property
    def staff(self) -> bool:
        return self.viewer is not None and self.viewer.staff

    def csrf(self) -> str:
        nonce = (
            self.viewer.nonce
            if self.viewer
            else (self.login_nonce or self.request.cookies.get(auth.LOGIN_COOKIE, ""))
        )
        return auth.csrf_token(self.portal.secret, nonce) if nonce else ""

    def render(
        self,
        template: str,
        status: int = 200,
        figures: list[tuple[str, dict[str, Any]]] | None = None,
        **values: Any,
    ) -> HTMLResponse:
        """A page from a template; `figures` are (element id, plotly figure) pairs the page's script draws."""
        body = self.portal.templates.get_template(template).render(
            viewer=self.viewer,
            csrf=self.csrf(),
            version=__version__,
            figures=figures or [],
            path=self.request.url.path,
            auth_mode=self.portal.config.auth,
            **values,
        )
        return HTMLResponse(body, status_code=status)


Handler = Callable[[Ctx], Response]


def error_page(portal: Portal, request: Request, status: int, message: str) -> HTMLResponse:
    """The error page. It never shows who is signed in: every 404 is the same page byte for byte, whether
    the path is no route, an id that does not exist, or another user's job."""
    body = portal.templates.get_template("error.html").render(
        viewer=None, csrf="", version=__version__, figures=[], path=request.url.path,
        auth_mode=portal.config.auth, status=status, message=message,
    )  # fmt: skip
    return HTMLResponse(body, status_code=status)


NOT_FOUND = "No such page, or not one you may see."


Endpoint = Callable[[Request], Awaitable[Response]]


def page(staff: bool = False, public: bool = False) -> Callable[[Handler], Endpoint]:
    """Wrap a page function: `public` pages need nobody signed in, `staff` pages need staff; any other page
    needs a signed-in user. A user who asks for a staff page gets the same 404 as for a missing one."""

    def wrap(fn: Handler) -> Endpoint:
        async def endpoint(request: Request) -> Response:
            portal: Portal = request.app.state.portal
            form = await request.form(max_files=0, max_fields=50) if request.method == "POST" else None
            try:
                return await run_in_threadpool(_serve, portal, request, form, fn, staff, public)
            finally:
                if form is not None:
                    await form.close()

        endpoint.__name__ = fn.__name__
        endpoint.__doc__ = fn.__doc__
        return endpoint

    return wrap


def _serve(
    portal: Portal, request: Request, form: FormData | None, fn: Handler, staff: bool, public: bool
) -> Response:
    try:
        with portal.pool.store() as store:
            viewer = auth.identify(portal.config, portal.secret, store, request)
            if viewer is None and not public:
                if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
                    return RedirectResponse("/login", status_code=303)
                return error_page(portal, request, 401, "Sign in first.")
            if staff and not (viewer and viewer.staff):
                return error_page(portal, request, 404, NOT_FOUND)
            if request.method == "POST":
                field = form.get("csrf") if form is not None else None
                auth.check_csrf(portal.secret, request, viewer, field if isinstance(field, str) else None)
            return fn(Ctx(request, portal, store, viewer, form))
    except auth.Refused as exc:
        return error_page(portal, request, exc.status, exc.message)
    except NotFound:
        return error_page(portal, request, 404, NOT_FOUND)


__all__ = ["Ctx", "Portal", "page", "error_page", "NOT_FOUND", "figure_json"]
