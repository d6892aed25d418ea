"""``wattsched compare``: the metrics of two or more ``simulate`` runs side by side, with differences.

The metrics come from each run's ``summary.json`` (``metrics`` and, for power runs, ``power``), so they are the
numbers ``simulate`` printed. Runs over different job sets are not comparable metric by metric; by default
they are refused with the counts (named option ``compare_job_sets = "refuse"``, docs/decisions.md). With
``common=True`` the job metrics are recomputed from each run's jobs table restricted to the jobs every run
has, and the table says how many jobs that is.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.metrics import summarise
from wattsched.report.run_report import RunData, read_run

__all__ = ["CompareError", "compare_runs"]


class CompareError(ValueError):
    """Runs that cannot be compared, with the reason."""


def _numbers(section: dict[str, Any] | None, prefix: str = "") -> dict[str, float]:
    """The numeric (not boolean) entries of a summary section, flattened one level."""
    out: dict[str, float] = {}
    for k, v in (section or {}).items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            out[prefix + k] = float(v)
    return out


def _run_label(runs: Sequence[RunData]) -> list[str]:
    """Each run's folder name, or its path when names repeat."""
    names = [r.path.name or str(r.path) for r in runs]
    return names if len(set(names)) == len(names) else [str(r.path) for r in runs]


def compare_runs(run_dirs: Sequence[str | Path], *, common: bool = False) -> tuple[pl.DataFrame, dict[str, Any]]:
    """A table ``metric, <run A>, <run B>, ..., <run B> − <run A>, ...`` (differences against the first run)
    and notes (``jobs_compared``, ``jobs_per_run``). Raises CompareError on fewer than two runs, or runs over
    different job sets unless ``common``."""
    if len(run_dirs) < 2:
        raise CompareError("compare needs at least two run folders")
    runs = [read_run(d) for d in run_dirs]
    labels = _run_label(runs)
    ids = [set(r.jobs["job_id"].to_list()) for r in runs]
    shared = set.intersection(*ids)
    notes: dict[str, Any] = {"jobs_per_run": dict(zip(labels, [len(i) for i in ids], strict=True))}
    same = all(i == ids[0] for i in ids)
    if not same and not common:
        counts = ", ".join(f"{lab}: {len(i):,}" for lab, i in zip(labels, ids, strict=True))
        raise CompareError(
            f"the runs are over different job sets ({counts}; {len(shared):,} in common): their metrics are not "
            "comparable; pass --common-jobs to compare the common jobs"
        )
    if same:
        values = [{**_numbers(r.summary.get("metrics")), **_numbers(r.summary.get("power"), "power.")} for r in runs]
        notes["jobs_compared"] = len(shared)
    else:
        keep = sorted(shared)
        values = [_numbers(summarise(r.jobs.filter(pl.col("job_id").is_in(keep)), r.machine_size)) for r in runs]
        notes["jobs_compared"] = len(shared)
        notes["recomputed"] = "job metrics recomputed over the common jobs (power metrics left out)"
    if not shared:
        raise CompareError("the runs have no job in common")
    metrics = [m for m in values[0] if all(m in v for v in values[1:])]
    table = pl.DataFrame(
        {"metric": metrics, **{lab: [v[m] for m in metrics] for lab, v in zip(labels, values, strict=True)}}
    )
    first = labels[0]
    table = table.with_columns((pl.col(lab) - pl.col(first)).alias(f"{lab} − {first}") for lab in labels[1:])
    return table, notes
