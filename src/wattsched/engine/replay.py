"""A stand-in schedule for tables that carry none (generated workloads): an EASY replay (FCFS order, walltime
estimates) on the machine. Predictors take their completion times from it, windows their pre-state."""

from __future__ import annotations

import numpy as np
import polars as pl

from wattsched.engine.simulate import simulate


def easy_replay(jobs: pl.DataFrame, machine_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``(start, end)`` of every job of ``jobs`` under EASY, aligned with the rows of ``jobs``."""
    schedule = simulate(jobs, "easy", machine_size).schedule.select("job_id", "start_time", "end_time")
    aligned = jobs.select("job_id").join(schedule, on="job_id", how="left", maintain_order="left")
    return aligned["start_time"].to_numpy().astype(np.float64), aligned["end_time"].to_numpy().astype(np.float64)
