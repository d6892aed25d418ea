"""What the advisor sees of a Slurm cluster and what it asks of it: the contract between backends and decisions.

Backends (Slurm command-line tools, slurmrestd) turn their answers into these records; the decision logic reads
only these records, so it is tested on recorded answers without a cluster. Times are epoch seconds (float),
power in watts, energy in joules. A record never carries the job's comment: the testbed's true power lives
there, and the advisor must not see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: Job states of squeue that hold or will hold nodes.
PENDING = "PENDING"
RUNNING = "RUNNING"
#: A job the overshoot response (or an operator) suspended: it holds its nodes, draws idle power.
SUSPENDED = "SUSPENDED"


class SlurmUnavailable(RuntimeError):
    """slurmctld or slurmdbd did not answer (timeout, connection refused, command failed): back off, act on nothing."""


class SlurmAnswerError(ValueError):
    """An answer that cannot be trusted: one line naming the source (command or endpoint), the record, the field
    and why. The cycle that met it takes no action."""

    def __init__(self, source: str, record: str | None, field_name: str | None, why: str) -> None:
        where = ", ".join(part for part in (record, f"field {field_name}" if field_name else None) if part)
        super().__init__(f"{source}: {where + ': ' if where else ''}{why}")
        self.source, self.record, self.field_name, self.why = source, record, field_name, why


@dataclass(frozen=True)
class QueuedJob:
    """A job squeue lists as pending, running or suspended (other states are dropped by the backend)."""

    job_id: int
    state: str  # PENDING, RUNNING or SUSPENDED
    user: str
    account: str
    name: str
    partition: str
    nodes: int  # requested (pending) or allocated (running) node count
    submit_time: float
    start_time: float | None  # None while pending (Slurm's expected start is not a start)
    time_limit: float | None  # seconds; None = no limit
    license_watts: int | None  # the job's power license now (None = it asks for none)
    held: bool  # priority 0 (user or admin hold)
    reason: str  # Slurm's state reason (e.g. "Licenses", "Resources", "JobHeldAdmin")
    node_names: tuple[str, ...] = ()  # allocated nodes (running jobs)
    admin_comment: str = (
        ""  # AdminComment: the advisor's job_submit.lua markers ("wattsched:gate", "wattsched:default")
    )
    excluded_nodes: tuple[str, ...] = ()  # ExcNodeList (the user's, or the advisor's domain restriction)
    required_nodes: tuple[str, ...] = ()  # ReqNodeList (--nodelist)


@dataclass(frozen=True)
class FinishedJob:
    """A job sacct reports as ended, with what it consumed (the learning signal)."""

    job_id: int
    state: str  # COMPLETED, FAILED, TIMEOUT, CANCELLED, ...
    user: str
    account: str
    name: str
    nodes: int
    submit_time: float
    start_time: float | None
    end_time: float
    energy_joules: float | None  # job-level ConsumedEnergy (srun steps summed by Slurm); None = not accounted
    license_watts: int | None


@dataclass(frozen=True)
class NodePower:
    """One node's power as Slurm reports it (``scontrol show node`` CurrentWatts)."""

    name: str
    state: str
    current_watts: float | None  # None = no energy plugin answer


@dataclass(frozen=True)
class LicenseState:
    """The power license: Slurm's total and use, and whether it is a remote (sacctmgr resource) license."""

    name: str  # e.g. "power" or "power@site"
    total: int
    used: int
    remote: bool
    reserved_by_cap: int = 0  # the part of a local license the advisor's active cap reservations hold

    @property
    def budget(self) -> int:
        """The power jobs may hold now: the total less what the advisor's cap reservations keep unusable."""
        return self.total - self.reserved_by_cap


@dataclass(frozen=True)
class Observation:
    """One consistent look at the cluster, taken at ``time``."""

    time: float
    queue: tuple[QueuedJob, ...]
    finished: tuple[FinishedJob, ...]  # jobs ended since the store's cursor (may repeat: the store dedups)
    nodes: tuple[NodePower, ...]
    license: LicenseState | None
    slurm_version: str = ""


ActionKind = Literal[
    "set_license", "hold", "release", "set_budget", "suspend", "resume", "requeue", "set_comment", "set_nodes"
]


@dataclass(frozen=True)
class Action:
    """One change the advisor makes (or, in shadow mode, would make), with why and which prediction."""

    kind: ActionKind
    job_id: int | None  # None for set_budget
    value: int | None  # watts for set_license / set_budget
    reason: str
    prediction_watts: float | None = None
    previous: int | None = None  # the value it replaces (license or budget), for the audit log
    details: dict[str, object] = field(default_factory=dict)
    text: str | None = None  # set_comment: the job's whole new AdminComment; set_nodes: its new ExcNodeList
