"""The one Jinja2Templates instance, and helpers shared by HTML routes."""

from __future__ import annotations

from fastapi.templating import Jinja2Templates

from mtcjudge._resources import resource_dir
from mtcjudge.mtc.measures import MEASURE_TITLES

templates = Jinja2Templates(directory=resource_dir("templates"))
#: ``{{ campaign.measure|measure_title }}``: "MIREX nDCG", never a bare "DCG" or "NDCG"
templates.env.filters["measure_title"] = MEASURE_TITLES.__getitem__

#: headers of the organizer pages: what they show changes with every judgment and is not
#: for shared caches
NO_STORE = {"Cache-Control": "no-store"}
