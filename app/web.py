"""The one Jinja2Templates instance, and helpers shared by HTML routes."""

from __future__ import annotations

from fastapi.templating import Jinja2Templates

from app.config import REPO_ROOT

templates = Jinja2Templates(directory=str(REPO_ROOT / "templates"))
