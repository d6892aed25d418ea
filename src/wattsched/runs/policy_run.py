"""One run: read a workload, simulate a policy (optionally under a power setup), summarise and write it: what
``wattsched simulate`` does, as functions."""

from __future__ import annotations

import dataclasses
import functools
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from wattsched.core.atomic import atomic_files
from wattsched.core.scalars import as_float
from wattsched.core.schema import Provenance, ReadResult, WorkloadError, sort_queue_order
from wattsched.engine.simulate import OnlineEstimates, SimulationError, SimulationResult, simulate
from wattsched.engine.windows import cut_one_window, prestate_mode
from wattsched.metrics import add_job_metrics, summarise, system_timeline
from wattsched.metrics.allocation import evalys_jobs
from wattsched.policies.loader import resolve_policy
from wattsched.predict.registry import make_power_predictor, make_runtime_predictor
from wattsched.runs.power_setup import IgnoredOptionWarning, policy_power_notes
from wattsched.workload.load import load_workload

if TYPE_CHECKING:  # the power model loads pydantic and SciPy: imported by the runs that use it
    from matplotlib.figure import Figure

    from wattsched.power.compact_timeline import PowerSteps
    from wattsched.power.run import PowerSetup

__all__ = [
    "OUTPUT_FORMATS",
    "RUN_FILES",
    "Metrics",
    "RunOutput",
    "machine_size_of",
    "resolve_machine_size",
    "run_policy",
    "workload_window",
    "write_run",
]

#: Formats :func:`write_run` writes the per-job, timeline and power tables in. ``evalys``: CSV tables, with
#: ``jobs.csv`` in Batsim's ``_jobs.csv`` layout and a concrete node allocation (``metrics.allocation``).
OUTPUT_FORMATS = ("parquet", "csv", "evalys")


@dataclass
class RunOutput:
    """Everything one simulation produced: the schedule with per-job metrics, the summary and the inputs' story."""

    result: SimulationResult
    jobs: pl.DataFrame
    rejects: pl.DataFrame
    provenance: Provenance
    summary: dict[str, Any]
    #: The power timeline in its compact form (time and dynamic; 16 B a row): what a power run holds.
    power_steps: PowerSteps | None = None

    @functools.cached_property
    def power(self) -> pl.DataFrame | None:
        """The power timeline table ``time, total, dynamic, cap`` (``power.<fmt>``), derived from
        :attr:`power_steps` on first use (twice the memory: made only when a file or a report needs it)."""
        return None if self.power_steps is None else self.power_steps.frame()

    @property
    def metrics(self) -> Metrics:
        """The schedule's metrics as attributes (``run.metrics.wait_mean``); ``summary.json``'s ``metrics``."""
        return Metrics(self.summary["metrics"], "metrics")

    @property
    def power_metrics(self) -> Metrics | None:
        """The power metrics as attributes (``run.power_metrics.trespass``); None for a run without power."""
        power = self.summary.get("power")
        return None if power is None else Metrics(power, "power metrics")

    def plot(self, window: tuple[float | None, float | None] | None = None) -> Figure:
        """The run's figure in memory (Gantt with a node allocation, utilisation, queue length and, for a power
        run, the power against the cap): the figure ``wattsched simulate --html`` writes, as a matplotlib
        ``Figure`` to show in a notebook or save with ``fig.savefig(...)``. ``window``: zoom to ``(from, to)``
        seconds of the workload's clock (``wattsched report --from/--to``)."""
        from wattsched.plots.run import RunData, run_figure  # deferred: matplotlib

        return run_figure(RunData(Path(self.provenance.source), self.summary, self.jobs, self.power), window)


class Metrics:
    """A run's metrics (a flat mapping of names to numbers) read as attributes: ``m.wait_mean``; ``dir(m)``
    lists them and :meth:`as_dict` gives the mapping. Read-only: it is a view of the run's summary."""

    __slots__ = ("_values", "_what")

    def __init__(self, values: dict[str, Any], what: str = "metrics") -> None:
        self._values = values
        self._what = what

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # copy and pickle probe private names before __init__ ran: no recursion
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(
                f"the run's {self._what} have no {name!r}; they are: {', '.join(self._values)}"
            ) from None

    def __dir__(self) -> list[str]:
        return sorted(self._values)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._values.items() if not isinstance(v, dict | list))
        return f"Metrics({shown})"

    def as_dict(self) -> dict[str, Any]:
        """A copy of the metrics as a plain dict (what ``summary.json`` holds)."""
        return dict(self._values)


def resolve_machine_size(provenance: Provenance, machine_size: int | None, power: PowerSetup | None = None) -> int:
    """The machine size: the explicit value, else the one the workload declares, else the power platform's node
    count; a clear error otherwise (see :func:`machine_size_of`)."""
    return machine_size_of(provenance, machine_size, power)[0]


def machine_size_of(
    provenance: Provenance, machine_size: int | None, power: PowerSetup | None = None
) -> tuple[int, str]:
    """The machine size and where it comes from (``"option"``, ``"workload"`` or ``"platform"``): the explicit
    value, else the workload's declared size, else the power platform's node count (a default from what is
    known); a one-line WorkloadError when none is known."""
    if machine_size is not None:
        return int(machine_size), "option"
    if provenance.machine_size:
        return int(provenance.machine_size), "workload"
    if power is not None:
        return int(power.platform.nodes), "platform"
    raise WorkloadError(
        f"{provenance.source}: the workload does not declare a machine size (no MaxProcs/MaxNodes header or "
        "metadata); pass --machine-size"
    )


def workload_window(
    workload: str | Path | ReadResult,
    start: float,
    hours: float = 24.0,
    *,
    prestate: str = "requeue",
    machine_size: int | None = None,
    strict: bool = False,
) -> ReadResult:
    """One window [start, start + hours) of a workload, times shifted to start at 0, ready for
    :func:`run_policy`. ``prestate`` (``"requeue"``, ``"prestart"`` or ``"drop"``) says what becomes of the jobs
    queued or running at ``start`` (``wattsched.engine.windows``); paper 000's experiment uses ``"requeue"``."""
    read = (
        workload
        if isinstance(workload, ReadResult)
        else load_workload(workload, machine_size=machine_size, strict=strict)
    )
    return cut_one_window(read, float(start), hours, prestate=prestate_mode(prestate), machine_size=machine_size)


def run_policy(
    workload: str | Path | ReadResult,
    policy: Any,
    *,
    machine_size: int | None = None,
    runtime_estimate: str | None = None,
    strict: bool = False,
    metrics_window: tuple[float, float] | None = None,
    progress: Callable[[int, int], None] | None = None,
    power: PowerSetup | None = None,
    baseline: bool = True,
    online_power: str | None = None,
    online_runtime: str | None = None,
    predictor_options: dict[str, Any] | None = None,
    kill_grace: float = 0.0,
) -> RunOutput:
    """Read (or take) a workload, simulate ``policy`` and summarise the schedule; with ``power``, under a power
    check and cap, adding the actual power timeline and the power metrics.

    ``policy`` is what ``wattsched simulate --policy`` takes: a built-in name in any case (``"EASY"``), a
    ``FILE.py:Class`` or ``module:Class`` reference, or a policy object.

    ``online_power`` / ``online_runtime`` name predictors (``wattsched.predict.registry``) that run inside the
    simulation: they learn from the simulated completions and estimate each job at its submission (the power
    one replaces ``power.source``; the runtime one ``runtime_estimate``). Their predictions are added to the
    per-job table. ``predictor_options`` go to the predictors' factories (``{"power": {...}, "runtime": {...}}``).
    ``kill_grace`` (``--kill-grace``): seconds a job runs past its walltime before it is killed (Slurm's
    OverTimeLimit); when more than :data:`KILLED_NOTE_SHARE` of the jobs are killed, ``summary["run"]["warnings"]``
    says so (the command line prints it as a warning).

    ``metrics_window`` (``--metrics-window``): the ``(start, end)`` the utilisation and queue-length averages
    cover; the power cap's window is the power setup's (:func:`power_setup`'s ``window``). Without
    ``machine_size`` and a declared size, the power platform's node count is the machine's.
    Options that have no effect raise :class:`IgnoredOptionWarning` (see :func:`policy_power_notes`).
    """
    read = (
        workload
        if isinstance(workload, ReadResult)
        else load_workload(workload, machine_size=machine_size, strict=strict)
    )
    size, size_from = machine_size_of(read.provenance, machine_size, power)
    for note in policy_power_notes(policy, power, online_power):
        warnings.warn(note, IgnoredOptionWarning, stacklevel=2)
    policy = resolve_policy(policy)  # the CLI's spellings: a name in any case, FILE.py:Class, module:Class
    if read.jobs.is_empty():  # said here, where the file is known (the engine's own error cannot name it)
        rejected = read.rejects.height
        why = f"all {rejected:,} of its records were rejected" if rejected else "it holds no job record"
        raise WorkloadError(f"{read.provenance.source}: no jobs to simulate: {why}")
    jobs = read.jobs
    rejects = read.rejects
    power_kw: dict[str, Any] = {}
    if power is not None:
        from wattsched.power.run import ESTIMATE_COLUMNS, reject_never_fitting, why_no_job_fits, with_estimates

        if online_power is None:
            estimated = with_estimates(jobs, power)
            jobs, rejects = reject_never_fitting(estimated, rejects, power, read.provenance.source)
            if jobs.is_empty():  # every job rejected: a run of nothing would only say "no jobs"
                raise SimulationError(why_no_job_fits(estimated, power, read.provenance.source))
        period = read.provenance.header.get("sample_period")
        if period:
            power = dataclasses.replace(power, sample_period=float(period))
        power_kw = {
            "power_check": power.check,
            "power_estimates": ESTIMATE_COLUMNS,
            "cap": power.cap,
            "knapsack_until": power.window_end,
        }
    online = _online_estimates(jobs, power, online_power, online_runtime, predictor_options or {})
    result = simulate(
        jobs,
        policy,
        size,
        runtime_estimate=runtime_estimate,
        progress=progress,
        online=online,
        kill_grace=kill_grace,
        **power_kw,
    )
    killed_note = killed_at_walltime_note(result.schedule, kill_grace)
    scheduled = add_job_metrics(result.schedule)
    if "batsim_id" in jobs.columns:  # a Batsim workload's own ids, for the evalys jobs.csv
        ids = jobs.select("job_id", "batsim_id")
        scheduled = scheduled.join(ids, on="job_id", how="left", maintain_order="left")
    if result.predictions is not None:
        scheduled = scheduled.hstack(result.predictions.select(pl.all().name.prefix("online_")))
    summary: dict[str, Any] = {
        "run": {**result.info(), "warnings": [killed_note] if killed_note else []},
        "workload": {
            "source": read.provenance.source,
            "format": read.provenance.format,
            "size_unit": read.provenance.size_unit,
            "machine_size_from": size_from,
            "clock_origin": clock_origin_of(read.provenance),
            "jobs": jobs.height,
            "rejected": rejects.height,
        },
        "metrics": summarise(result.schedule, size, window=metrics_window),
    }
    if online is not None:
        summary["online_prediction"] = {
            "power": online_power,
            "runtime": online_runtime,
            "learns_from": "the simulated completions",
        }
    timeline = None
    if power is not None:
        from wattsched.power.run import power_outputs

        timeline, summary["power"] = power_outputs(
            jobs, result.schedule, power, size, baseline=baseline, kill_grace=kill_grace
        )
        if online_power is not None:
            summary["power"]["power_source"] = f"online {online_power}"
    return RunOutput(result, scheduled, rejects, read.provenance, summary, power_steps=timeline)


def clock_origin_of(provenance: Provenance) -> float | None:
    """The Unix time (s) of the workload's t = 0, when its format says (SWF's UnixStartTime; 0 for traces in
    epoch seconds), moved to a window's start: what the run's figure reads dates against. None otherwise."""
    if provenance.unix_start_time is None:
        return None
    window = provenance.header.get("window")
    shift = float(window.get("start", 0.0) or 0.0) if isinstance(window, dict) else 0.0
    return float(provenance.unix_start_time) + shift


#: Above this share of jobs killed at their walltime, a run warns (and suggests ``kill_grace``).
KILLED_NOTE_SHARE = 0.02


def killed_at_walltime_note(schedule: pl.DataFrame, kill_grace: float = 0.0) -> str | None:
    """A note when more than :data:`KILLED_NOTE_SHARE` of the jobs were killed at their walltime: on real traces
    most of them overran by seconds (the Theta 2022 trace: 26% of jobs under EASY, 91% of them by at most 120 s),
    accounting slack that Slurm's OverTimeLimit lets finish; silently killing them changes every metric."""
    killed = int(schedule["killed"].sum())
    share = killed / max(schedule.height, 1)
    if share <= KILLED_NOTE_SHARE:
        return None
    killed_rows = schedule.filter(pl.col("killed"))
    median = as_float((killed_rows["trace_runtime"] - killed_rows["walltime"]).median())
    grace = f" (with a grace of {kill_grace:g} s)" if kill_grace else ""
    return (
        f"{killed:,} of {schedule.height:,} jobs ({share:.1%}) were killed at their walltime{grace}; their trace "
        f"runtimes exceed it by {median:,.0f} s at the median: if that is accounting slack, --kill-grace SECONDS "
        "(kill_grace) lets such jobs finish, as Slurm's OverTimeLimit does"
    )


def _online_estimates(
    jobs: pl.DataFrame,
    power: PowerSetup | None,
    online_power: str | None,
    online_runtime: str | None,
    options: dict[str, Any],
) -> OnlineEstimates | None:
    """The in-simulation predictors and how their outputs become the policy's estimates."""
    if online_power is None and online_runtime is None:
        return None
    parts = []
    convert = None
    if online_power is not None:
        if power is None:
            raise ValueError("an online power predictor needs a power setup (platform, check and cap)")
        from wattsched.power.platform import job_dynamic_estimates, naive_estimates
        from wattsched.predict.power_history import HistoryConfig

        setup = power  # bound once: the converter below keeps it
        power_options = dict(options.get("power", {}))
        history = power_options.pop("history", None) or HistoryConfig(fallback_watts=setup.platform.max_node_watts)
        parts.append(make_power_predictor(online_power, history=history, **power_options))
        size = sort_queue_order(jobs)["size"].to_numpy().astype(np.float64)

        def convert(rows: np.ndarray, out: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            if setup.check.name == "naive":
                return naive_estimates(size[rows], setup.platform.naive_node_watts(setup.subtract_idle))
            return job_dynamic_estimates(
                size[rows],
                out["pred_power_mean"],
                out["pred_power_max"],
                out["pred_power_std"],
                setup.platform.idle_watts,
                subtract_idle=setup.subtract_idle,
                sigma_scaling=setup.sigma_scaling,
            )

    if online_runtime is not None:
        parts.append(make_runtime_predictor(online_runtime, **options.get("runtime", {})))
    from wattsched.predict.online import CombinedPredictor

    predictor = parts[0] if len(parts) == 1 else CombinedPredictor(*parts)
    return OnlineEstimates(predictor, runtime="pred_runtime" if online_runtime else None, power=convert)


def write_run(run: RunOutput, output: str | Path, fmt: str = "parquet") -> dict[str, Path]:
    """Write ``jobs.<fmt>``, ``timeline.<fmt>`` (queue length, running jobs and busy units over time),
    ``rejects.<fmt>``, ``summary.json`` and ``provenance.json`` into ``output``. ``fmt="evalys"`` writes CSV
    tables with ``jobs.csv`` in the evalys / Batsim layout (``metrics.allocation.evalys_jobs``).

    The files are written as one (``core.atomic.atomic_files``: a kill or a full disk leaves the former run's
    files, never half a file nor half of each run), and then the files an earlier run left in ``output`` that
    this one does not write (its ``power`` table, the other format's tables, its report) are removed, so the
    folder never mixes two runs."""
    if fmt not in OUTPUT_FORMATS:
        raise ValueError(f"unknown output format {fmt!r}; choose one of {OUTPUT_FORMATS}")
    evalys = fmt == "evalys"
    fmt = "csv" if evalys else fmt
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "jobs": out / f"jobs.{fmt}",
        "timeline": out / f"timeline.{fmt}",
        "rejects": out / f"rejects.{fmt}",
        "summary": out / "summary.json",
        "provenance": out / "provenance.json",
    }
    tables = {"timeline": system_timeline(run.jobs), "rejects": run.rejects}
    if evalys:
        size = int(run.summary["run"]["machine_size"])
        tables["jobs"] = evalys_jobs(run.jobs, size)  # Batsim's ids and workload name (w0), to join its output
    else:
        tables["jobs"] = run.jobs
    if run.power is not None:
        paths["power"] = out / f"power.{fmt}"
        tables["power"] = run.power
    with atomic_files() as files:  # all renamed together once all are complete: a full disk leaves the former run
        for name, frame in tables.items():
            files.table(frame, paths[name])  # CSV or Parquet by the name
        files.text(paths["summary"], json.dumps(run.summary, indent=2, default=_json_default) + "\n")
        files.text(paths["provenance"], run.provenance.to_json() + "\n")
    written = set(paths.values())
    for stale in RUN_FILES:
        if out / stale not in written:
            (out / stale).unlink(missing_ok=True)
    return paths


#: Every file a run folder may hold (:func:`write_run`, and ``--html``'s report): those a new run does not write
#: are removed from the folder.
RUN_FILES = (
    *(f"{stem}.{suffix}" for stem in ("jobs", "timeline", "rejects", "power") for suffix in ("parquet", "csv")),
    "report.html",
    "run.png",
    "run.svg",
)


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    return str(value)
