"""``status`` of a testbed: its daemons (alive or not), its nodes (state, CurrentWatts) and the power license."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wattsched.testbed.config import TestbedState
from wattsched.testbed.procs import owned, run


@dataclass
class TestbedStatus:
    """What ``wattsched testbed status`` shows (and prints as JSON)."""

    base: str
    slurm_conf: str | None
    daemons: list[dict[str, Any]] = field(default_factory=list)  # name, pid, alive
    nodes: list[dict[str, Any]] = field(default_factory=list)  # name, state, current_watts
    license: dict[str, Any] | None = None  # name, total, used
    rest_url: str | None = None

    @property
    def running(self) -> bool:
        """Every daemon of the state file alive."""
        return bool(self.daemons) and all(d["alive"] for d in self.daemons)


def status(base: Path) -> TestbedStatus | None:
    """The status of the testbed under ``base``, or None when there is no testbed.json there."""
    base = base.resolve()
    state = TestbedState.load(base)
    if state is None:
        return None
    out = TestbedStatus(base=str(base), slurm_conf=state.slurm_conf, rest_url=state.rest_url)
    out.daemons = [{"name": n, "pid": p, "alive": owned(p, base)} for n, p in state.pids.items()]
    if not owned(state.pids.get("slurmctld"), base):
        return out
    env = state.env()
    nodes = run(["scontrol", "show", "node", "-o"], env=env)  # 22.05's scontrol has no --json
    if nodes.returncode == 0:
        out.nodes = [parse_node_line(line) for line in nodes.stdout.splitlines() if line.startswith("NodeName=")]
    lic = run(["scontrol", "show", "license", state.license_name, "-o"], env=env)
    fields = dict(part.split("=", 1) for part in lic.stdout.split() if "=" in part)
    if lic.returncode == 0 and "Total" in fields:
        out.license = {"name": fields.get("LicenseName", state.license_name), "total": int(fields["Total"]),
                       "used": int(fields.get("Used", 0))}  # fmt: skip
    return out


def parse_node_line(line: str) -> dict[str, Any]:
    """Name, state and CurrentWatts (None for n/s: no energy reading yet) of one ``scontrol show node -o`` line."""
    fields = {k: m.group(1) for k in ("NodeName", "State", "CurrentWatts") if (m := re.search(rf"\b{k}=(\S+)", line))}
    watts = fields.get("CurrentWatts", "")
    return {
        "name": fields.get("NodeName"),
        "state": fields.get("State"),
        "current_watts": float(watts) if watts.isdigit() else None,
    }
