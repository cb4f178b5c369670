"""The app factory: ``create_app(settings)`` owns the database engine; no import connects."""

from __future__ import annotations

import base64
import hashlib
import logging
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio.to_thread
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy import Engine
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, sessionmaker
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from mtcjudge._resources import resource_dir
from mtcjudge.campaigns.manage import router as campaign_manage_router
from mtcjudge.campaigns.routes import router as campaigns_router
from mtcjudge.campaigns.upload_routes import router as audio_uploads_router
from mtcjudge.config import MAX_BODY_BYTES, Settings
from mtcjudge.db import make_database_engine, make_sessionmaker
from mtcjudge.deps import require_organizer
from mtcjudge.errors import DomainError, OrganizerOnly
from mtcjudge.exports.reuse import router as reuse_router
from mtcjudge.exports.routes import router as exports_router
from mtcjudge.health import RETRY_AFTER_SECONDS, DatabaseProbe, database_unavailable
from mtcjudge.judging.clip_pages import clips_router
from mtcjudge.judging.pages import pages_router
from mtcjudge.judging.routes import router as judging_router
from mtcjudge.middleware import BodySizeLimit, SecurityHeaders, install_access_log_redaction
from mtcjudge.organizers.routes import login_page
from mtcjudge.organizers.routes import router as organizers_router
from mtcjudge.organizers.service import ensure_first_organizer
from mtcjudge.organizers.throttle import LoginThrottle
from mtcjudge.planner.service import Planner
from mtcjudge.planner.warmer import RenditionWarmer
from mtcjudge.reports.routes import router as reports_router
from mtcjudge.results.pages import router as dashboard_router
from mtcjudge.results.routes import router as results_router
from mtcjudge.web import templates

__all__ = ["create_app"]

logger = logging.getLogger(__name__)


#: every router of the app, in the order their routes are matched
_ROUTERS = (
    campaigns_router,
    audio_uploads_router,
    results_router,
    judging_router,
    pages_router,
    clips_router,
    organizers_router,
    dashboard_router,
    campaign_manage_router,
    exports_router,
    reuse_router,
    reports_router,
)
#: the requests that upload a collection, allowed ``Settings.max_import_bytes``
_IMPORTS = (
    "/api/campaigns",
    "/api/campaigns/preview",
    "/api/campaigns/import",
    "/api/campaigns/import-bundle",
    "/api/campaigns/{slug}/runs",
)
#: the requests that send audio from the browser: counted by the routes themselves (a file
#: past its limit is reported), within ``Settings.max_audio_upload_bytes``
_AUDIO_UPLOADS = ("/api/audio-uploads/{token}/files/{name}", "/api/audio-uploads/{token}/zip")


def create_app(
    settings: Settings | None = None, *, session_factory: sessionmaker[Session] | None = None
) -> FastAPI:
    """Build the application.

    Parameters
    ----------
    settings : Settings, optional
        Defaults to :meth:`Settings.from_env`.
    session_factory : sessionmaker, optional
        Sessions to use instead of a new engine on ``settings.database_url`` (tests bind one
        to a connection whose transaction is rolled back after each test).
    """
    settings = settings or Settings.from_env()
    engine = None
    run_planner = settings.run_planner and session_factory is None
    if session_factory is None:
        engine = make_database_engine(settings.database_url)
        session_factory = make_sessionmaker(engine)
    # every process runs a planner; the database decides which one plans each campaign
    planner = Planner(session_factory, interval=settings.planner_interval)
    lifespan = _lifespan(settings, session_factory, planner if run_planner else None, engine)
    # the API's documentation is the organizer's: served by guarded routes below
    app = FastAPI(
        title="mtcjudge",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.settings = settings
    app.state.session_factory = session_factory
    app.state.planner = planner
    app.state.login_throttle = LoginThrottle()
    app.mount("/static", StaticFiles(directory=resource_dir("static")), name="static")
    # The routers' routes are complete when their modules are imported (prefix, tags and
    # router dependencies applied), so every app of the process shares them. With
    # include_router, FastAPI (0.165) would rebuild every route's dependencies and
    # validators for each app on its first request: some 60 ms for each new app, which each
    # server process pays once but the test suite pays for every test. What this gives up:
    # app.dependency_overrides does not reach these routes (tests build an app on their own
    # session_factory instead).
    for router in _ROUTERS:
        app.router.routes.extend(router.routes)

    _register_error_handlers(app)
    _add_probes(app, session_factory)
    _add_organizer_docs(app)
    # added last = outermost: the 413 of the body limit gets the security headers too
    audio_bytes = max(settings.max_audio_file_bytes, settings.max_audio_upload_bytes)
    app.add_middleware(
        BodySizeLimit,
        default_limit=MAX_BODY_BYTES,
        limits={
            **{("POST", path): settings.max_import_bytes for path in _IMPORTS},
            **{("PUT", path): audio_bytes for path in _AUDIO_UPLOADS},
        },
    )
    app.add_middleware(SecurityHeaders)
    install_access_log_redaction()
    return app


def _lifespan(
    settings: Settings,
    session_factory: sessionmaker[Session],
    planner: Planner | None,
    engine: Engine | None,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """What the app does when it starts and stops: the worker threads, the first organizer,
    the ``planner`` (None: this app runs none), and the database ``engine`` it made."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # Requests run their transactions on worker threads. Few threads, many requests
        # waiting for one: a waiting request holds no connection and no row lock, whereas
        # 40 threads contending for the GIL stretch every open transaction (and the row
        # locks it holds) by the time the others take between two of its statements.
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.threads
        # MTCJUDGE_ADMIN_USERNAME/_PASSWORD: the first organizer of a container
        await anyio.to_thread.run_sync(ensure_first_organizer, session_factory, settings)
        # every process that plans also makes the clips of the plans ahead of the volunteers
        warmer = None if planner is None else RenditionWarmer(session_factory)
        if planner is not None:
            planner.start()
        if warmer is not None:
            warmer.start()
        try:
            yield
        finally:
            if warmer is not None:
                warmer.stop()
            if planner is not None:
                planner.stop()
            if engine is not None:
                engine.dispose()

    return lifespan


def _wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api/") or path in ("/openapi.json", "/healthz", "/readyz")


def _error_response(
    request: Request,
    status: int,
    code: str,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The error envelope for the JSON API, a friendly page for the HTML routes."""
    if _wants_json(request):
        return JSONResponse({"error": code, "detail": message}, status_code=status, headers=headers)
    return templates.TemplateResponse(
        request,
        "error.html",
        {"status": status, "message": message},
        status_code=status,
        headers=headers,
    )


# a path parameter that cannot be valid (an id past the database's range, a token with a
# character no token has) names nothing: 404, as an unknown one would
_NOT_FOUND_BY_PATH_PARAMETER = {
    "token": ("not_found", "this invitation link is not valid (unknown token)"),
    "slug": ("campaign_not_found", "no such campaign"),
    "judgment_id": ("not_found", "no such judgment of yours"),
    "lease_id": ("not_found", "this clip is not part of your pairs"),
}
_HTTP_ERROR_CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
}


def _register_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def domain_error(request: Request, exc: DomainError) -> Response:
        return _error_response(request, exc.status, exc.code, exc.message)

    @app.exception_handler(OrganizerOnly)
    async def organizer_only(request: Request, exc: OrganizerOnly) -> Response:
        # an organizer page opened without signing in: the sign-in form, still a 401
        if request.method in ("GET", "HEAD") and not _wants_json(request):
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            notice = "Sign in to see this page."
            return login_page(request, target, status=401, notice=notice)
        return _error_response(request, exc.status, exc.code, exc.message)

    @app.exception_handler(ClientDisconnect)
    async def body_cut_short(request: Request, _exc: ClientDisconnect) -> Response:
        # the client closed the connection before its whole body came (a closed page, a cut
        # network): nothing of the body was kept, and no one reads this answer; a 400, not
        # an error of the server's
        message = "the request's body ended before its declared length: nothing of it is kept"
        return _error_response(request, 400, "bad_request", message)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        for err in errors:
            location = err.get("loc", ())
            if len(location) == 2 and location[0] == "path":
                code, message = _NOT_FOUND_BY_PATH_PARAMETER.get(
                    str(location[1]), ("not_found", "not found")
                )
                return _error_response(request, 404, code, message)
        problems = [
            f"{'.'.join(str(p) for p in err.get('loc', ()) if p != 'body')}: {err.get('msg')}"
            for err in errors
        ]
        return JSONResponse(
            {"error": "malformed_request", "detail": "; ".join(problems)}, status_code=422
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        # no route, wrong method, an unparsable body: the same envelope as every other error
        message = str(exc.detail)
        if exc.status_code == 404 and not _wants_json(request):
            message = "There is no page at this address."
        code = _HTTP_ERROR_CODES.get(exc.status_code, "http_error")
        return _error_response(request, exc.status_code, code, message, exc.headers)

    @app.exception_handler(sa_exc.DBAPIError)
    @app.exception_handler(sa_exc.TimeoutError)
    async def database_error(request: Request, exc: Exception) -> Response:
        if not database_unavailable(exc):
            raise exc
        # the driver's message only: the statement's parameters may hold a token
        logger.warning("database unavailable: %s", getattr(exc, "orig", None) or exc)
        return _error_response(
            request,
            503,
            "database_unavailable",
            "The database cannot be reached right now; please try again in a moment.",
            {"Retry-After": str(RETRY_AFTER_SECONDS)},
        )

    @app.exception_handler(Exception)
    async def server_error(request: Request, _exc: Exception) -> Response:
        # the exception is logged (and re-raised) by Starlette's ServerErrorMiddleware
        return _error_response(
            request, 500, "internal_error", "Something went wrong on the server."
        )


def _add_probes(app: FastAPI, session_factory: sessionmaker[Session]) -> None:
    probe = DatabaseProbe(session_factory)

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict[str, str]:
        """Liveness: the process answers (the database is /readyz's business)."""
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    async def ready() -> Response:
        """Readiness: the database answers ``SELECT 1`` within a short deadline."""
        if await probe.ready():
            return JSONResponse({"status": "ready"})
        return JSONResponse(
            {"status": "not ready"},
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )


# Swagger UI and ReDoc come from a CDN and Swagger UI starts with an inline script (allowed
# by its hash, not by 'unsafe-inline'); their styles are injected at run time.
_DOCS_CSP = (
    "default-src 'self'; script-src 'self' https://cdn.jsdelivr.net {script_hashes}; "
    "style-src 'self' 'unsafe-inline' https://cdn.jsdelivr.net https://fonts.googleapis.com; "
    "font-src 'self' data: https://fonts.gstatic.com; "
    "img-src 'self' data: https://fastapi.tiangolo.com https://cdn.redoc.ly; "
    "worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
_INLINE_SCRIPT = re.compile(rb"<script>(.*?)</script>", re.DOTALL)


def _docs_page(page: HTMLResponse) -> HTMLResponse:
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(script).digest()).decode()}'"
        for script in _INLINE_SCRIPT.findall(bytes(page.body))
    )
    page.headers["Content-Security-Policy"] = _DOCS_CSP.format(script_hashes=hashes)
    return page


def _add_organizer_docs(app: FastAPI) -> None:
    """/openapi.json, /docs and /redoc, for organizers only (the rule of the organizer API)."""
    organizer_only = [Depends(require_organizer)]
    title = f"{app.title} API"

    @app.get("/openapi.json", include_in_schema=False, dependencies=organizer_only)
    def openapi_schema() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", include_in_schema=False, dependencies=organizer_only)
    def swagger_ui() -> HTMLResponse:
        return _docs_page(get_swagger_ui_html(openapi_url="/openapi.json", title=title))

    @app.get("/redoc", include_in_schema=False, dependencies=organizer_only)
    def redoc() -> HTMLResponse:
        return _docs_page(get_redoc_html(openapi_url="/openapi.json", title=title))
