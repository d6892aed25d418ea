"""Per-job and system metrics of simulated schedules (reference spec §0, ecosystem §5.1)."""

from wattsched.metrics.jobs import add_job_metrics
from wattsched.metrics.power import (
    cap_metrics,
    max_turnaround_increase,
    policy_cap_metrics,
    power_summary,
    share_started_in_window,
    turnaround_increase,
)
from wattsched.metrics.summary import summarise
from wattsched.metrics.system import (
    default_window,
    makespan,
    queue_length_timeline,
    running_timeline,
    system_timeline,
    time_average,
    time_max,
    utilisation,
)

__all__ = [
    "add_job_metrics",
    "cap_metrics",
    "default_window",
    "makespan",
    "max_turnaround_increase",
    "policy_cap_metrics",
    "power_summary",
    "queue_length_timeline",
    "running_timeline",
    "share_started_in_window",
    "summarise",
    "system_timeline",
    "time_average",
    "time_max",
    "turnaround_increase",
    "utilisation",
]
