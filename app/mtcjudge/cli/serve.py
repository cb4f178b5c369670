"""``mtcjudge serve`` (the web application) and ``mtcjudge demo`` (a demo campaign, served).

The listening socket is bound before any work, so a port in use fails at once (exit status
2); uvicorn then serves on that very socket and nothing can take the port in between.
"""

from __future__ import annotations

import argparse
import errno
import os
import socket
from pathlib import Path
from typing import TextIO

from mtcjudge.cli.common import SubParsers, UsageError, add_parser, integer, port
from mtcjudge.cli.database import (
    add_database_option,
    check_database_url,
    database_errors,
    url_source,
)
from mtcjudge.config import Settings

__all__ = ["register"]

DEFAULT_DEMO_DIR = Path("mtcjudge-demo")


def register(sub: SubParsers) -> None:
    demo = add_parser(
        sub,
        "demo",
        "set up a demo campaign with synthetic clips and serve it",
        description="Create (or reuse) the campaign 'demo': 6 systems from 3 teams, 10 "
        "queries, top 5, with synthesised clips in DATA_DIR/audio and two invited "
        "volunteers, in the SQLite database DATA_DIR/mtcjudge.sqlite3 (or $DATABASE_URL). "
        "Print the organizer information and the assessor links, then serve the app. "
        "Running it again reuses everything.",
    )
    demo.add_argument(
        "--data-dir",
        type=Path,
        default=DEFAULT_DEMO_DIR,
        metavar="DIR",
        help="database and audio directory",
    )
    _add_listen_options(demo)
    demo.add_argument(
        "--no-serve", action="store_true", help="set up and print the links, then exit"
    )
    demo.set_defaults(run=run_demo)

    serve = add_parser(
        sub,
        "serve",
        "run the web application",
        description="Apply the database migrations, then serve the app with uvicorn. Other "
        "settings come from the environment: MTCJUDGE_BASE_URL (links; default "
        "http://HOST:PORT), MTCJUDGE_ORGANIZER_TOKEN, MTCJUDGE_MAX_IMPORT_BYTES.",
    )
    _add_listen_options(serve)
    add_database_option(serve)
    serve.add_argument(
        "--workers",
        type=integer("workers", 1),
        default=os.environ.get("MTCJUDGE_WORKERS") or "1",  # a string: argparse checks it
        metavar="N",
        help="worker processes sharing the listening socket (they share nothing else: state "
        "lives in the database); MTCJUDGE_WORKERS sets the default",
    )
    serve.set_defaults(run=run_serve)


def _add_listen_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=port, default=8000, help="port to listen on")


def server_settings(host: str, port_number: int, database_url: str | None, source: str) -> Settings:
    """The settings of a server on ``host:port_number``: its links point at it by default.

    ``source`` names where ``database_url`` came from, for the message if it is unusable.
    """
    overrides: dict[str, object] = {"database_url": database_url} if database_url else {}
    if not os.environ.get("MTCJUDGE_BASE_URL"):
        # links must reach this server; a wildcard address is not one to click on
        shown = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
        shown = f"[{shown}]" if ":" in shown else shown
        overrides["base_url"] = f"http://{shown}:{port_number}"
    settings = Settings.from_env(**overrides)
    check_database_url(settings.database_url, source)
    return settings


def _listen(host: str, port_number: int) -> socket.socket:
    """Bind the server's socket now, so a taken port fails before any work (exit status 2)."""
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port_number, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise UsageError(f"--host: cannot listen on {host!r}: {exc.strerror}") from None
    sock = socket.socket(family, kind, proto)
    # as uvicorn does: a port left in TIME_WAIT by a previous run is free
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port_number} on {host} is already in use (is mtcjudge already "
                "running?); stop that program or choose another port with --port"
            ) from None
        raise UsageError(f"cannot listen on {host}:{port_number}: {exc.strerror or exc}") from None
    return sock


def _serve(settings: Settings, sock: socket.socket) -> None:
    import uvicorn

    from mtcjudge.main import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="info"))
    server.run(sockets=[sock])


def _serve_workers(settings: Settings, sock: socket.socket, workers: int) -> None:
    """``workers`` uvicorn processes accepting on one socket; uvicorn replaces any that dies.

    Workers are spawned fresh and build their app with ``create_app()`` from the environment,
    so the settings this process resolved from its options are exported first.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    os.environ["DATABASE_URL"] = settings.database_url
    os.environ["MTCJUDGE_BASE_URL"] = settings.base_url
    config = uvicorn.Config(
        "mtcjudge.main:create_app",
        factory=True,
        workers=workers,
        log_level="info",
        # a worker answers the supervisor's pings only once it has imported the app (numpy,
        # scipy: seconds on a busy machine); uvicorn's 5 s would kill and respawn it in a loop
        timeout_worker_healthcheck=60,
    )
    Multiprocess(config, sockets=[sock]).run()


def run_demo(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from mtcjudge.demo.setup import ensure_demo
    from mtcjudge.errors import DomainError

    data_dir = args.data_dir.expanduser().resolve()
    database_url = os.environ.get("DATABASE_URL") or f"sqlite:///{data_dir / 'mtcjudge.sqlite3'}"
    source = "DATABASE_URL" if os.environ.get("DATABASE_URL") else "--data-dir"
    settings = server_settings(args.host, args.port, database_url, source)
    sock = None if args.no_serve else _listen(args.host, args.port)
    try:
        try:
            with database_errors(database_url):
                info = ensure_demo(database_url, data_dir, settings=settings)
        except DomainError as exc:
            err.write(f"mtcjudge: error: {exc.message}\n")
            return 2
        action = "created" if info.created else "reused"
        clips = f"{info.audio_written} clips written" if info.audio_written else "clips in place"
        out.write(
            f"mtcjudge demo: {action} campaign {info.campaign_slug!r} in {data_dir} "
            f"({clips} in {data_dir / 'audio'})\n\nOrganizer\n"
        )
        out.write("".join(f"  {line}\n" for line in info.organizer_hint.splitlines()))
        out.write("\nAssessor links (one per volunteer, each a personal login):\n")
        width = max((len(name) for name in info.assessor_names), default=0)
        for name, link in zip(info.assessor_names, info.assessor_links, strict=True):
            out.write(f"  {name:<{width}}  {link}\n")
        if sock is None:
            # 'mtcjudge demo' again would make new links and a new password: serve this database
            out.write(
                "\nstart the server with: mtcjudge serve --database-url "
                f"{database_url} --host {args.host} --port {args.port}\n"
            )
            return 0
        out.write(f"\nserving on {settings.base_url} (Ctrl+C to stop)\n")
        out.flush()
        _serve(settings, sock)
        return 0
    finally:
        if sock is not None:
            sock.close()


def run_serve(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:  # noqa: ARG001
    from mtcjudge.db import upgrade_database

    source = url_source(args.database_url)
    settings = server_settings(args.host, args.port, args.database_url, source)
    sock = _listen(args.host, args.port)
    try:
        with database_errors(settings.database_url):
            upgrade_database(settings.database_url)
        shown = f", {args.workers} workers" if args.workers > 1 else ""
        out.write(f"mtcjudge serve: {settings.base_url}{shown} (Ctrl+C to stop)\n")
        out.flush()
        if args.workers > 1:
            _serve_workers(settings, sock, args.workers)
        else:
            _serve(settings, sock)
        return 0
    finally:
        sock.close()
