"""The one Jinja2Templates instance, and helpers shared by HTML routes."""

from __future__ import annotations

from fastapi.templating import Jinja2Templates

from app._resources import resource_dir

templates = Jinja2Templates(directory=resource_dir("templates"))

#: headers of the organizer pages: what they show changes with every judgment and is not
#: for shared caches
NO_STORE = {"Cache-Control": "no-store"}
