"""Per-job and system metrics of simulated schedules (docs/semantics.md §5)."""

from wattsched.metrics.jobs import add_job_metrics
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
    "default_window",
    "makespan",
    "queue_length_timeline",
    "running_timeline",
    "summarise",
    "system_timeline",
    "time_average",
    "time_max",
    "utilisation",
]
