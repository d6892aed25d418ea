"""Files the advisor ships for the Slurm side: ``job_submit.lua`` (install instructions in docs/advisor.md and at
the top of the file). They ship in the wheel as package data (hatchling packs every file under src/wattsched)."""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable


def job_submit_lua() -> Traversable:
    """The shipped ``job_submit.lua`` (read it with ``.read_text()``, copy it next to slurm.conf)."""
    return files(__name__) / "job_submit.lua"
