"""The tables of an EAMC grid (paper 002): its finished runs and each policy's improvement over a baseline. Shared
by the experiment (its summary), the figures and the reproduction, below all three.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from wattsched.core.store import CampaignLayout, read_result

#: The paper's metrics of a run (smaller is better).
METRICS = ("makespan", "mean_response", "sum_energy", "sum_runtime")


def load_eamc_results(out: str | Path) -> pl.DataFrame:
    """One row per finished run; a damaged result file is a run not done, as for the runner."""
    found = (read_result(f) for f in sorted(CampaignLayout(Path(out)).results.glob("*.json")))
    rows = [row for row in found if row is not None]
    if not rows:
        raise ValueError(f"{out}: no finished EAMC runs")
    return pl.DataFrame(rows, infer_schema_length=None)


def improvement(results: pl.DataFrame, baseline: str, metrics: tuple[str, ...] = METRICS) -> pl.DataFrame:
    """Per run: the improvement (%) of each metric over ``baseline`` on the same (mix, t_weight, seed):
    positive is better (shorter, or less energy)."""
    key = ["mix", "t_weight", "seed"]
    base = results.filter(pl.col("policy") == baseline).select(*key, *(pl.col(m).alias(f"{m}_base") for m in metrics))
    joined = results.join(base, on=key, how="inner")
    return joined.select(*key, "policy", *((100.0 * (1 - pl.col(m) / pl.col(f"{m}_base"))).alias(m) for m in metrics))
