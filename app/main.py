"""The app factory: ``create_app(settings)`` owns the database engine; no import connects."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.orm import Session, sessionmaker

from app.config import REPO_ROOT, Settings
from app.db import make_engine, make_sessionmaker
from app.errors import DomainError
from app.web import templates

__all__ = ["create_app"]


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
    from app.campaigns.routes import router as campaigns_router
    from app.judging.engine_cache import EngineCache
    from app.judging.pages import pages_router
    from app.judging.routes import router as judging_router

    settings = settings or Settings.from_env()
    engine = None
    if session_factory is None:
        engine = make_engine(settings.database_url)
        session_factory = make_sessionmaker(engine)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        if engine is not None:
            engine.dispose()

    app = FastAPI(title="mtcjudge", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.state.session_factory = session_factory
    app.state.engine_cache = EngineCache()
    app.mount("/static", StaticFiles(directory=str(REPO_ROOT / "static")), name="static")
    app.include_router(campaigns_router)
    app.include_router(judging_router)
    app.include_router(pages_router)

    @app.exception_handler(DomainError)
    async def domain_error(request: Request, exc: DomainError) -> Response:
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": exc.code, "detail": exc.message}, status_code=exc.status)
        return templates.TemplateResponse(
            request,
            "error.html",
            {"status": exc.status, "message": exc.message},
            status_code=exc.status,
        )

    @app.exception_handler(RequestValidationError)
    async def malformed(_request: Request, exc: RequestValidationError) -> Response:
        problems = [
            f"{'.'.join(str(p) for p in err.get('loc', ()) if p != 'body')}: {err.get('msg')}"
            for err in exc.errors()
        ]
        return JSONResponse(
            {"error": "malformed_request", "detail": "; ".join(problems)}, status_code=422
        )

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app
