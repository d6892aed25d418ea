"""One run of a policy over a workload, the way ``wattsched simulate`` makes it: the power setup built from the
command line's options (:mod:`.power_setup`) and the read–simulate–summarise–write path (:mod:`.policy_run`).

Campaigns, the Gantt chart and the demo build their runs here, so a run inside a campaign is the run the command
line makes; :mod:`wattsched.api` re-exports these names for Python users.
"""

from __future__ import annotations

from wattsched.runs.policy_run import (
    OUTPUT_FORMATS,
    RUN_FILES,
    Metrics,
    RunOutput,
    machine_size_of,
    resolve_machine_size,
    run_policy,
    workload_window,
    write_run,
)
from wattsched.runs.power_setup import (
    DEFAULT_POST_WINDOW_CAP,
    IgnoredOptionWarning,
    policy_power_notes,
    power_setup,
)

__all__ = [
    "DEFAULT_POST_WINDOW_CAP",
    "OUTPUT_FORMATS",
    "RUN_FILES",
    "IgnoredOptionWarning",
    "Metrics",
    "RunOutput",
    "machine_size_of",
    "policy_power_notes",
    "power_setup",
    "resolve_machine_size",
    "run_policy",
    "workload_window",
    "write_run",
]
