"""The shadow report: what the advisor would have done, read back from its store (``cycles`` and ``audit``).

Tables: the power over time (one row per cycle: the cap, the budget, the predicted running power and the
measured power, both on the cap's basis), the jobs (what it would have done to each, and why: ``delay`` — Slurm
started it although its prediction did not fit; ``advance`` — a license larger than its prediction needs held it
while its prediction fitted; ``hold`` — it needs more than the whole budget; ``suspend`` / ``requeue`` — the
overshoot response; ``over_license`` — it ran drawing more than its license), and the actions it would have
applied. The summary says how often measured and predicted power were above the cap, how far the prediction
was from the measurement, and how many over-cap cycles name a job that explains them (``over_cap_explained``):
a cycle over the cap with no job named is a gap the report says it has, not one it hides. Written as CSV +
``summary.json``; the figure is drawn by ``report/advisor.py`` (the report layer sits above ``advise``: the
compute packages draw no plots).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.advise.store import AdvisorStore
from wattsched.core.store import atomic_file, atomic_write

__all__ = ["ShadowReport", "shadow_report", "write_shadow_report"]


@dataclass
class ShadowReport:
    """The shadow report's tables and summary (module docstring)."""

    power: pl.DataFrame  # time, cap, budget, predicted_power, measured_power, predicted_running, fresh
    jobs: pl.DataFrame  # job_id, would (delay | advance), time (first cycle that saw it)
    actions: pl.DataFrame  # the audit rows: time, cycle, mode, kind, job_id, value, previous, reason, prediction…
    summary: dict[str, Any]


def _ids(frame: pl.DataFrame, column: str, would: str) -> pl.DataFrame:
    rows = [
        {"job_id": int(j), "would": would, "time": float(t)}
        for t, text in frame.select("time", column).iter_rows()
        for j in json.loads(text or "[]")
    ]
    out = pl.DataFrame(rows, schema={"job_id": pl.Int64, "would": pl.Utf8, "time": pl.Float64})
    return out.group_by("job_id", "would").agg(pl.col("time").min()).sort("time", "job_id")


def _explained(cycles: pl.DataFrame, audit: pl.DataFrame) -> int:
    """Over-cap cycles (measured above the cap) that name at least one job: started though it did not fit,
    drawing above its license, or acted on by the overshoot response."""
    acted = (
        set(audit.filter(pl.col("kind").is_in(["suspend", "requeue"]))["cycle"].to_list()) if audit.height else set()
    )
    count = 0
    for row in cycles.iter_rows(named=True):
        if row["cap"] is None or row["measured_power"] is None or row["measured_power"] <= row["cap"]:
            continue
        names = json.loads(row.get("delayed") or "[]") + json.loads(row.get("over_license") or "[]")
        count += bool(names) or row["id"] in acted
    return count


def shadow_report(store: AdvisorStore | str | Path, *, mode: str | None = "shadow") -> ShadowReport:
    """Read the report from ``store`` (an open store or its path); ``mode`` keeps that mode's cycles only
    (None: every cycle)."""
    own = not isinstance(store, AdvisorStore)
    db = AdvisorStore(store) if not isinstance(store, AdvisorStore) else store
    try:
        cycles = db.frame("cycles")
        audit = db.frame("audit")
    finally:
        if own:
            db.close()
    if cycles.height and mode is not None:
        cycles = cycles.filter(pl.col("mode") == mode)
    if audit.height and mode is not None:
        audit = audit.filter(pl.col("mode") == mode)
    if cycles.is_empty():
        where = f" in {mode} mode" if mode else ""
        raise ValueError(f"{getattr(store, 'path', store)}: no advisor cycle recorded{where}: nothing to report")
    power = cycles.select(
        pl.col("time").cast(pl.Float64),
        pl.col("cap").cast(pl.Float64),
        pl.col("budget").cast(pl.Float64),
        pl.col("predicted_power").cast(pl.Float64),
        pl.col("measured_power").cast(pl.Float64),
        pl.col("predicted_running").cast(pl.Float64),
        pl.col("fresh").cast(pl.Boolean),
    ).sort("time")
    named = [_ids(cycles, "delayed", "delay"), _ids(cycles, "advanced", "advance")]
    if "over_license" in cycles.columns:
        named.append(_ids(cycles, "over_license", "over_license"))
    if audit.height:
        acted = audit.filter(pl.col("kind").is_in(["hold", "suspend", "requeue"]) & pl.col("job_id").is_not_null())
        named.append(
            acted.group_by("job_id", "kind")
            .agg(pl.col("time").cast(pl.Float64).min())
            .select(pl.col("job_id").cast(pl.Int64), pl.col("kind").alias("would"), "time")
        )
    jobs = pl.concat(named).sort("time", "job_id")
    capped = power.filter(pl.col("cap").is_not_null())
    error = power.select((pl.col("predicted_power") - pl.col("measured_power")).alias("e")).drop_nulls()["e"]
    measured = power.filter(pl.col("measured_power").is_not_null())
    summary: dict[str, Any] = {
        "cycles": power.height,
        "from": float(power["time"].min()),  # type: ignore[arg-type]
        "to": float(power["time"].max()),  # type: ignore[arg-type]
        "stale_cycles": int((~power["fresh"].fill_null(True)).sum()),
        "max_measured_watts": None if measured.is_empty() else float(measured["measured_power"].max()),  # type: ignore[arg-type]
        "max_predicted_watts": float(power["predicted_power"].max() or 0.0),  # type: ignore[arg-type]
        "cycles_measured_over_cap": int(capped.filter(pl.col("measured_power") > pl.col("cap")).height),
        "cycles_predicted_over_cap": int(capped.filter(pl.col("predicted_power") > pl.col("cap")).height),
        "prediction_error_watts": {
            "mean": float(error.mean()) if error.len() else None,  # type: ignore[arg-type]
            "mean_abs": float(error.abs().mean()) if error.len() else None,  # type: ignore[arg-type]
        },
        "would_delay": int((jobs["would"] == "delay").sum()),
        "would_advance": int((jobs["would"] == "advance").sum()),
        "would_hold": int((jobs["would"] == "hold").sum()),
        "would_suspend": int(jobs["would"].is_in(["suspend", "requeue"]).sum()),
        "over_license": int((jobs["would"] == "over_license").sum()),
        "over_cap_explained": _explained(cycles, audit),
        "actions": audit.height,
    }
    actions = audit if audit.height else pl.DataFrame()
    return ShadowReport(power, jobs, actions, summary)


def write_shadow_report(report: ShadowReport, out_dir: str | Path) -> dict[str, Path]:
    """``power.csv``, ``jobs.csv``, ``actions.csv`` and ``summary.json`` in ``out_dir``, each written to a new
    temporary and renamed over its name (``core.store.atomic_file``: the advisor runs as root, and a symlink
    planted at a name in a shared folder is replaced, never written through)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / f"{name}.csv" for name in ("power", "jobs", "actions")}
    for name, frame in (("power", report.power), ("jobs", report.jobs), ("actions", report.actions)):
        with atomic_file(paths[name], binary=True) as f:
            frame.write_csv(f)
    paths["summary"] = out / "summary.json"
    atomic_write(paths["summary"], json.dumps(report.summary, indent=2) + "\n")
    return paths
