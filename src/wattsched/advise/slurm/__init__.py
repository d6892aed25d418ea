"""Files the advisor ships for the Slurm side: ``job_submit.lua`` (install instructions in docs/advisor.md and at
the top of the file). They ship in the wheel as package data (hatchling packs every file under src/wattsched).

The AdminComment markers the Lua sets (a user's own "wattsched:..." words are removed at submit, so only the Lua
and the administrators write them):
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable

__all__ = ["DEFAULT_MARKER", "GATE_MARKER", "OVERSIZE_MARKER", "job_submit_lua"]

#: The job's power license is the Lua's conservative default (the most nodes it can get x the worst case per node).
DEFAULT_MARKER = "wattsched:default"
#: Gate mode: the job was held at submit (priority 0); the advisor releases it when its predicted power fits.
GATE_MARKER = "wattsched:gate"
#: The job's default was above the budget (BUDGET_WATTS): it was held at submit with a license of the whole budget;
#: the advisor (or an administrator) may release it once its learned power fits the budget.
OVERSIZE_MARKER = "wattsched:oversize"


def job_submit_lua() -> Traversable:
    """The shipped ``job_submit.lua`` (read it with ``.read_text()``, copy it next to slurm.conf)."""
    return files(__name__) / "job_submit.lua"
