"""Online power and runtime prediction over a workload, as ``wattsched predict power`` and ``predict runtime``
do it, with their option names and defaults; and the files they write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wattsched.core.schema import ReadResult
from wattsched.core.store import atomic_write
from wattsched.power.defaults import DEFAULT_PREDICTION_PLATFORM
from wattsched.workload.load import load_workload

if TYPE_CHECKING:  # the predictors load numba, SciPy and scikit-learn: imported by the calls that use them
    from wattsched.predict.run import PredictionRun

__all__ = [
    "DEFAULT_PREDICTION_PLATFORM",
    "PREDICTION_SUFFIXES",
    "check_prediction_output",
    "predict_power",
    "predict_runtime",
    "write_prediction_report",
    "write_predictions",
]

#: What a prediction table is written as (SWF has no column for predictions).
PREDICTION_SUFFIXES = (".parquet", ".csv", ".csv.gz")


def check_prediction_output(output: str | Path) -> Path:
    """``output`` when it names a table the predictions can go to; a one-line ValueError otherwise (checked
    before anything is computed)."""
    path = Path(output)
    if not path.name.lower().endswith(PREDICTION_SUFFIXES):
        raise ValueError(f"--output must end in .parquet, .csv or .csv.gz, got {path.name}")
    return path


def _read(workload: str | Path | ReadResult, machine_size: int | None, read_options: dict[str, Any]) -> ReadResult:
    if isinstance(workload, ReadResult):
        return workload
    return load_workload(workload, machine_size=machine_size, **read_options)


def predict_power(
    workload: str | Path | ReadResult,
    method: str = "history",
    *,
    completion: str = "auto",
    machine_size: int | None = None,
    platform: str | Path = DEFAULT_PREDICTION_PLATFORM,
    alpha: float = 2.0,
    eps: float = 1.0,
    history_window: float | None = None,
    cv_kind: str = "kfold",
    max_train_rows: int | None = None,
    t0: float | None = None,
    cv_workers: int | None = None,
    **read_options: Any,
) -> PredictionRun:
    """Predict each job's per-node power online, from the jobs finished before its submission only, and
    evaluate it against the measurements (``wattsched predict power``).

    ``platform``'s node maximum is the fallback before any job has finished; its node count sizes the EASY
    replay that gives the completion times when the workload declares no size and ``machine_size`` is not given.
    ``cv_kind``, ``max_train_rows``, ``t0`` and ``cv_workers`` apply to the ML methods (``ml-*``).
    ``read_options`` go to :func:`~wattsched.workload.load.load_workload` (``strict``, ``timezone``, ``columns``)."""
    from wattsched.power.platform import load_platform
    from wattsched.predict.power_history import HistoryConfig
    from wattsched.predict.run import run_power_prediction

    plat = load_platform(platform)
    read = _read(workload, machine_size, read_options)
    if machine_size is None and not read.provenance.machine_size:
        machine_size = plat.nodes  # a default from what is known: the platform's node count
    history = HistoryConfig(alpha=alpha, eps=eps, window=history_window, fallback_watts=plat.max_node_watts)
    ml = {"cv_kind": cv_kind, "max_train_rows": max_train_rows, "t0": t0, "n_jobs": cv_workers}
    return run_power_prediction(
        read,
        method,
        completion=completion,
        machine_size=machine_size,
        history=history,
        **(ml if method.startswith("ml-") else {}),
    )


def predict_runtime(
    workload: str | Path | ReadResult,
    method: str = "rules",
    *,
    completion: str = "auto",
    machine_size: int | None = None,
    platform: str | Path | None = None,
    min_prefix: int = 1,
    **read_options: Any,
) -> PredictionRun:
    """Predict each job's runtime online, from the jobs finished before its submission only, and evaluate it
    next to the walltime (``wattsched predict runtime``). ``min_prefix`` applies to the ``rules`` method.
    ``platform``'s node count sizes the EASY replay that gives the completion times when the workload declares no
    size and ``machine_size`` is not given."""
    from wattsched.predict.run import run_runtime_prediction

    read = _read(workload, machine_size, read_options)
    if platform is not None and machine_size is None and not read.provenance.machine_size:
        from wattsched.power.platform import load_platform

        machine_size = load_platform(platform).nodes  # a default from what is known: the platform's node count
    options = {"min_prefix": min_prefix} if method == "rules" else {}
    return run_runtime_prediction(read, method, completion=completion, machine_size=machine_size, **options)


def write_predictions(run: PredictionRun, read: ReadResult, output: str | Path) -> list[str]:
    """The workload with its prediction columns at ``output`` (Parquet or CSV by its suffix, through a renamed
    temporary); returns the list columns CSV cannot hold and so left out."""
    from wattsched.workload.save import save_workload

    return save_workload(ReadResult(run.jobs, read.rejects, read.provenance), check_prediction_output(output))


def write_prediction_report(run: PredictionRun, path: str | Path) -> Path:
    """The evaluation report (and the run's settings) as JSON at ``path``, through a renamed temporary."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({**run.report, **run.info}, indent=2, default=str) + "\n")
    return path
