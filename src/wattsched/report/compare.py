"""``wattsched compare``: the metrics of two or more ``simulate`` runs side by side, with differences.

The metrics come from each run's ``summary.json`` (``metrics`` and, for power runs, ``power``), so they are the
numbers ``simulate`` printed. Runs over different job sets are not comparable metric by metric; by default
they are refused with the counts (named option ``compare_job_sets = "refuse"``, docs/decisions.md). With
``common=True`` the job metrics are recomputed from each run's jobs table restricted to the jobs every run
has, and the table says how many jobs that is.

A job is the same job in two runs when its id, submit time, size and walltime agree (what a policy is given;
the id alone matched job 1 of HPC2N with job 1 of Theta). Each run's policy and workload are in the notes, and
every difference is given in units and in percent of the first run's value.
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


#: The columns that make a job the same job in two runs: what the policy was given, not what it did.
JOB_IDENTITY = ("job_id", "submit_time", "size", "walltime")


def job_keys(run: RunData) -> pl.Series:
    """One text key per job of ``run`` from :data:`JOB_IDENTITY` (floats at full precision)."""
    jobs = run.jobs
    missing = [c for c in JOB_IDENTITY if c not in jobs.columns]
    if missing:  # a jobs table written before walltime was kept: the id alone
        return jobs["job_id"].cast(pl.Utf8)
    parts = [
        pl.col("job_id").cast(pl.Utf8),
        pl.col("submit_time").cast(pl.Float64).cast(pl.Utf8),  # one spelling whatever the file's number type
        pl.col("size").cast(pl.Int64).cast(pl.Utf8),
        pl.col("walltime").cast(pl.Float64).cast(pl.Utf8),
    ]
    return jobs.select(pl.concat_str(parts, separator="|"))[:, 0]


def compare_runs(run_dirs: Sequence[str | Path], *, common: bool = False) -> tuple[pl.DataFrame, dict[str, Any]]:
    """A table ``metric, <run A>, <run B>, ..., <run B> − <run A>, <run B> vs <run A> (%), ...`` (differences
    against the first run, in units and in percent of its value) and notes (``jobs_compared``, ``jobs_per_run``,
    ``policies``, ``workloads``). Raises CompareError on fewer than two runs, or runs over different job sets
    (jobs told apart by :data:`JOB_IDENTITY`) unless ``common``."""
    if len(run_dirs) < 2:
        raise CompareError("compare needs at least two run folders")
    runs = [read_run(d) for d in run_dirs]
    labels = _run_label(runs)
    keys = [job_keys(r) for r in runs]
    ids = [set(k.to_list()) for k in keys]
    shared = set.intersection(*ids)
    notes: dict[str, Any] = {
        "jobs_per_run": dict(zip(labels, [len(i) for i in ids], strict=True)),
        "policies": {lab: r.summary["run"].get("policy") for lab, r in zip(labels, runs, strict=True)},
        "workloads": {lab: r.summary.get("workload", {}).get("source") for lab, r in zip(labels, runs, strict=True)},
    }
    same = all(i == ids[0] for i in ids)
    if not same and not common:
        counts = ", ".join(f"{lab}: {len(i):,}" for lab, i in zip(labels, ids, strict=True))
        raise CompareError(
            f"the runs are over different job sets ({counts}; {len(shared):,} in common): their metrics are not "
            "comparable; pass --common-jobs to compare the common jobs"
        )
    if not shared:
        raise CompareError("the runs have no job in common (a job is its id, submit time, size and walltime)")
    if same:
        values = [{**_numbers(r.summary.get("metrics")), **_numbers(r.summary.get("power"), "power.")} for r in runs]
        notes["jobs_compared"] = len(shared)
    else:
        values = [
            _numbers(summarise(r.jobs.filter(k.is_in(list(shared))), r.machine_size))
            for r, k in zip(runs, keys, strict=True)
        ]
        notes["jobs_compared"] = len(shared)
        notes["recomputed"] = "job metrics recomputed over the common jobs (power metrics left out)"
    metrics = [m for m in values[0] if all(m in v for v in values[1:])]
    table = pl.DataFrame(
        {"metric": metrics, **{lab: [v[m] for m in metrics] for lab, v in zip(labels, values, strict=True)}}
    )
    first = labels[0]
    table = table.with_columns((pl.col(lab) - pl.col(first)).alias(f"{lab} − {first}") for lab in labels[1:])
    relative = (
        pl.when(pl.col(first) != 0).then(100.0 * (pl.col(lab) - pl.col(first)) / pl.col(first).abs()).otherwise(None)
        for lab in labels[1:]
    )
    table = table.with_columns(r.alias(f"{lab} vs {first} (%)") for r, lab in zip(relative, labels[1:], strict=True))
    return table, notes
