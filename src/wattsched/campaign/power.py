"""Paper 000's power campaign as an experiment (kind ``power``): power checks × power sources × caps (× policies,
× post-window caps) over windows of a trace or a generated workload, each window with an uncapped EASY baseline.

It lives in ``campaign/``, not ``power/``, because a run needs both the power model (``power``) and the power
predictors (``predict``, for the ``predicted`` source), which are siblings below, and the one call that simulates
a workload under a power setup (``api.run_policy``).

Directory layout (``DIR``), besides the store's ``manifest.json`` and ``results/<run id>.json``:

- ``workloads/<window id>.parquet``: each workload window, predictions included (prepared once);
- ``predictions/<workload>.parquet`` and ``.json``: per-job true and predicted power and the prediction report,
  for the error plots.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import polars as pl

from wattsched.campaign.spec import (
    LEGACY_POST_WINDOW_CAP,
    CampaignSpec,
    WorkloadSpec,
    count_runs,
    expand_runs,
    workload_variants,
)
from wattsched.campaign.summary import campaign_summary, cost_summary, paper_summary
from wattsched.campaign.workloads import load_workload_spec, rejected_count, store_windows, window_path
from wattsched.core.atomic import atomic_table
from wattsched.core.experiment import Experiment, Run, no_log
from wattsched.core.file_memo import FileMemo
from wattsched.core.schema import ReadResult
from wattsched.core.store import (
    PREDICTIONS,
    CampaignError,
    CampaignLayout,
    atomic_parquet,
    atomic_write,
    run_id,
    write_result,
)
from wattsched.policies.powercheck import PowerCheck
from wattsched.power.platform import load_platform
from wattsched.power.run import PowerSetup
from wattsched.predict.power_history import HistoryConfig
from wattsched.predict.run import run_power_prediction
from wattsched.runs import power_setup, run_policy
from wattsched.workload.load import load_workload

#: The aggregations ``report`` accepts (paper 000 averages over (workload window, cap) groups).
AGGREGATES = ("mean", "median")


def spec_hash(spec: CampaignSpec) -> str:
    """The hash of a power campaign's spec; ``kind`` is left out, so campaigns from before the field resume."""
    return run_id(spec.model_dump(mode="json", exclude={"kind"}))


def check_power_columns(spec: CampaignSpec, wl: WorkloadSpec, columns: list[str]) -> None:
    """A workload of a power campaign has the measured power its grid reads (checked as it is prepared, before any
    run): per-node ``power_mean`` for every run (the power timeline, the naive check, the predictor's targets) and
    ``power_max`` and ``power_std`` for the ``real`` source; a CampaignError naming the workload file otherwise."""
    needed = ["power_mean"] + (["power_max", "power_std"] if "real" in spec.grid.sources else [])
    missing = [c for c in dict.fromkeys(needed) if c not in columns]
    if missing:
        where = wl.path if wl.path is not None else f"generated {wl.generate.model if wl.generate else ''}".strip()
        raise CampaignError(
            f"workload {wl.name!r} ({where}) lacks the power column(s) {', '.join(missing)} that a power campaign "
            f"reads (sources: {', '.join(spec.grid.sources)}); give a workload with per-node power (a Marconi100-like "
            'or PM100 table) or use a queue campaign (kind = "queue") for a trace without power'
        )


def prepare_workload(
    spec: CampaignSpec, wl: WorkloadSpec, seed: int, name: str, out: Path, log: Callable[[str], None] = no_log
) -> list[str]:
    """Load or generate one workload variant, add predictions if the grid uses them, cut windows; returns the
    window ids."""
    read = load_workload_spec(wl, seed)
    check_power_columns(spec, wl, read.jobs.columns)
    size = wl.machine_size or read.provenance.machine_size
    if "predicted" in spec.grid.sources:
        plat = load_platform(spec.platform)
        pred = run_power_prediction(
            read,
            spec.prediction.method,
            completion=spec.prediction.completion,
            machine_size=size,
            history=HistoryConfig(fallback_watts=plat.max_node_watts),
        )
        keep = [
            c
            for c in ("job_id", "user_id", "submit_time", "runtime", "size", "power_mean", "power_max", "power_std")
            if c in pred.jobs.columns
        ]
        layout = CampaignLayout(out)
        layout.make((PREDICTIONS,))
        atomic_parquet(pred.jobs.select(*keep, *pred.predictions.columns), layout.prediction(name))
        atomic_write(layout.prediction(name, "json"), json.dumps(pred.report, indent=2, default=str))
        read = ReadResult(pred.jobs, read.rejects, read.provenance)
    return store_windows(read, wl, seed, name, out, log)


def run_power_setup(run: Run) -> PowerSetup:
    """The power setup of one run of a manifest: what :func:`execute_power_run` simulates and the campaign's
    Gantt chart re-simulates. A baseline measures the power of uncapped EASY over the run's window; a capped
    run is what ``wattsched simulate`` builds from the same options (:func:`wattsched.api.power_setup`)."""
    if run["kind"] == "baseline":
        return PowerSetup(load_platform(run["platform"]), PowerCheck.named("none"), "real", None, run["power_window"])
    setup = power_setup(
        run["platform"],
        run["check"],
        source=run["source"],
        cap=run["cap"],
        window=run["power_window"],
        post_window_cap=run.get("post_window_cap", LEGACY_POST_WINDOW_CAP),
        reservation=run["reservation"],
    )
    if setup is None:  # a capped run always names its platform and cap: a manifest written by hand may not
        raise CampaignError(f"run {run.get('id', '?')}: a capped run without platform, check or cap")
    return setup


#: The windows this worker process read last (:class:`~wattsched.core.file_memo.FileMemo`).
_WINDOWS: FileMemo[ReadResult] = FileMemo(load_workload)


def read_window(path: Path) -> ReadResult:
    """A window's job table, read (and validated) once per worker process rather than once per run (every window
    is simulated by all its grid's runs: paper 000, 11 checks × 4 caps; :mod:`wattsched.core.file_memo`). The job
    tables are immutable polars frames; the provenance is copied, so that no run can change what the next one
    reads."""
    read = _WINDOWS(path)
    return ReadResult(read.jobs, read.rejects, copy.deepcopy(read.provenance))


def execute_power_run(run: Run, out_dir: str) -> dict[str, Any]:
    """Simulate one run of the manifest, write ``results/<id>.json`` atomically and return the result row."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    read = read_window(window_path(out, run["workload"]))
    result = run_policy(read, run["policy"], power=run_power_setup(run), baseline=run["kind"] != "baseline")
    m = result.summary["metrics"]
    row: dict[str, Any] = dict(run)
    if run["kind"] != "baseline":
        row["post_window_cap"] = str(run.get("post_window_cap", LEGACY_POST_WINDOW_CAP))
    window = read.provenance.header.get("window") or {}
    row.update(
        {
            "jobs": result.jobs.height,
            "rejected": rejected_count(read, result.rejects.height),
            "prestate": window.get("prestate", "none") if isinstance(window, dict) else "none",
            "prestarted": int(read.jobs["prestarted"].sum()) if "prestarted" in read.jobs.columns else 0,
            "requeued": int(read.jobs["requeued"].sum()) if "requeued" in read.jobs.columns else 0,
            **{f"m_{k}": v for k, v in m.items() if isinstance(v, int | float) or v is None},
            **{
                f"p_{k}": v
                for k, v in result.summary["power"].items()
                if isinstance(v, int | float | bool) or v is None
            },
            "simulation_s": result.result.elapsed_s,
            "elapsed_s": time.perf_counter() - t0,
            "worker": os.getpid(),
        }
    )
    write_result(out, row)
    return row


class PowerExperiment(Experiment):
    """Paper 000's campaign: see the module docstring and :mod:`wattsched.campaign.spec`."""

    kind: ClassVar[str] = "power"
    spec_model = CampaignSpec
    status_keys = ("workload", "kind")
    spec: CampaignSpec

    def __init__(self, spec: CampaignSpec, *, base: Path | None = None) -> None:
        super().__init__(spec, base=base)
        self._windows: dict[str, list[str]] = {}

    def spec_hash(self) -> str:
        return spec_hash(self.spec)

    def count_runs(self) -> int:
        return count_runs(self.spec)

    def plan(self, out: Path, log: Callable[[str], None] = no_log) -> list[Run]:
        """Prepare every workload variant (predictions, windows) and expand the grid over their windows."""
        CampaignLayout(out).make(CampaignLayout.SHARED)
        self._windows = {}
        for wl, seed, name in workload_variants(self.spec):
            t = time.perf_counter()
            self._windows[name] = prepare_workload(self.spec, wl, seed, name, out, log)
            log(f"prepared workload {name}: {len(self._windows[name])} window(s) in {time.perf_counter() - t:.1f} s")
        return expand_runs(self.spec, self._windows)

    def manifest_extra(self, out: Path) -> dict[str, Any]:
        return {"windows": self._windows}

    def task(self, out: Path) -> Callable[[Run], dict[str, Any]]:
        return partial(execute_power_run, out_dir=str(out))

    def report(self, out: Path, dest: Path, *, aggregate: str = "mean", **options: Any) -> list[Path]:
        """The summary tables as CSV: per cap (``summary.csv``), caps pooled (``paper_summary.csv``) and the runs'
        cost (``cost.csv``). The figures and the dashboard are drawn by :mod:`wattsched.report`."""
        dest.mkdir(parents=True, exist_ok=True)
        results = self.results(out)
        tables = {
            "summary.csv": campaign_summary(results, stat=aggregate),
            "paper_summary.csv": paper_summary(results, stat=aggregate),
            "cost.csv": cost_summary(results),
        }
        for name, table in tables.items():
            atomic_table(table, dest / name)
        return [dest / name for name in tables]

    def summary(self, out: Path, *, aggregate: str = "mean", **options: Any) -> list[tuple[str, pl.DataFrame]]:
        results = self.results(out)
        what = "means" if aggregate == "mean" else "medians"
        tables = [
            (
                f"campaign summary per cap: {what} over workload windows (trespass: share of runs that broke the cap)",
                campaign_summary(results, stat=aggregate),
            )
        ]
        if results.height and results.filter(pl.col("kind") == "run")["cap"].n_unique() > 1:
            tables.append(
                (
                    f"over every (workload window, cap) group, caps pooled ({what}; paper 000's aggregation)",
                    paper_summary(results, stat=aggregate),
                )
            )
        return tables
