"""``wattsched advise status``: what the running advisor last saw and why each pending job waits, read from its
status file (written atomically every cycle, ``status_file``), so it answers without asking Slurm or locking the
state. The same figures a user sees in Slurm (``squeue -O JobID,UserName,Reason,AdminComment``), in one place.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattsched.core.structured_input import load_json

__all__ = ["AdvisorStatus", "StatusError", "read_status"]


class StatusError(ValueError):
    """No usable status file: one line naming it and why."""


@dataclass
class AdvisorStatus:
    """The status file's contents, with how old it is."""

    path: Path
    data: dict[str, Any]
    age_s: float

    @property
    def role(self) -> str:
        return str(self.data.get("role", "active"))

    def summary(self) -> list[tuple[str, str]]:
        """(what, value) rows: the role, the cycle and its age, the cap, the budget, the measured and predicted
        power, overshoots, and each power domain."""
        d = self.data
        rows = [("advisor", f"{self.role} (pid {d.get('pid', '?')})")]
        if self.role == "standby":
            rows.append(("waits for", f"pid {d.get('holder_pid') or '?'} on {d.get('state', '?')}"))
            return rows
        age = f"{self.age_s:,.0f} s ago"
        rows += [
            ("last cycle", f"{d.get('cycle', '?')}, {age}" + (f": no action: {d['error']}" if d.get("error") else "")),
            ("mode", str(d.get("mode", "?"))),
            ("cap", _watts(d.get("cap_watts"))),
            ("budget for jobs", _watts(d.get("budget"))),
            ("measured power", _watts(d.get("measured_watts"))),
            ("predicted power", _watts(d.get("predicted_running_watts"))),
            (
                "jobs",
                f"{d.get('running', 0)} running, {d.get('pending', 0)} pending, {d.get('suspended', 0)} suspended",
            ),
        ]
        if d.get("over_cap"):
            since = d.get("over_cap_since")
            began = f" since {time.strftime('%H:%M:%S', time.localtime(since))}" if since else ""
            rows.append(("OVER THE CAP", f"by {_watts(d.get('over_cap_watts'))}{began}"))
        rows.append(("time over the cap", f"{float(d.get('over_cap_seconds_total') or 0.0):,.0f} s in all"))
        for name, dom in sorted((d.get("domains") or {}).items()):
            over = "  OVER ITS CAP" if dom.get("over_cap") else ""
            rows.append(
                (
                    f"domain {name}",
                    f"measured {_watts(dom.get('measured_watts'))} of {_watts(dom.get('cap_watts'))}, "
                    f"{_watts(dom.get('room_watts'))} free for jobs{over}",
                )
            )
        for row in d.get("over_license") or []:
            rows.append((f"job {row['job_id']}", f"draws {row['draws']:,} W, above its {row['license']:,} W license"))
        return rows

    def jobs(self) -> list[dict[str, Any]]:
        """Each pending job the advisor sized: id, user, nodes, license, and why it waits (empty: it does not wait
        for power)."""
        return list(self.data.get("jobs") or [])


def _watts(value: object) -> str:
    return "n/a" if value is None else f"{float(value):,.0f} W"  # type: ignore[arg-type]


def read_status(path: Path, *, now: float | None = None) -> AdvisorStatus:
    """The status file at ``path``; :class:`StatusError` (one line) when it is missing or not the advisor's."""
    try:
        text = path.read_text(encoding="utf-8")
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        raise StatusError(
            f"{path}: no status file (start the advisor with --status-file {path}, or give status_file in its "
            "configuration)"
        ) from None
    except OSError as exc:
        raise StatusError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        data = load_json(text, path)  # nested at most MAX_DEPTH (deeper: the C parser could crash the process)
    except ValueError:
        raise StatusError(f"{path}: not an advisor status file (not JSON)") from None
    if not isinstance(data, dict) or not ({"cycle", "role"} & set(data)):
        raise StatusError(f"{path}: not an advisor status file (no cycle or role)")
    return AdvisorStatus(path, data, max((time.time() if now is None else now) - mtime, 0.0))
