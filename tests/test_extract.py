"""Per-job power series from node telemetry (PM100 method, step 4)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from wattsched.dataset.exclusive import EXCLUSIVE, classify_exclusive
from wattsched.dataset.extract import extract_series

T0 = 1_600_000_000.0


def _telemetry(nodes, t0, t1, f, period=20.0, skip=()) -> pl.DataFrame:
    rows = []
    t = t0
    while t <= t1:
        for n in nodes:
            if (n, t) not in skip:
                rows.append((n, t, f(n, t), 2.0 * f(n, t)))
        t += period
    return pl.DataFrame(rows, schema=["node", "timestamp", "ps0", "ps1"], orient="row")


def _job(job_id, start, end, nodes) -> pl.DataFrame:
    jobs = pl.DataFrame({"job_id": [job_id], "start_time": [start], "end_time": [end], "nodes": [nodes]})
    status = classify_exclusive(jobs)
    assert status["status"][0] == EXCLUSIVE
    return status.join(jobs.select("job_id", "nodes"), on="job_id")


def power(node: str, t: float) -> float:
    return 100.0 * (1 + int(node[1:])) + (t - T0) / 20.0


def test_a_multi_node_series_is_the_per_timestamp_sum_of_both_psus() -> None:
    job = _job(1, T0 + 5, T0 + 65, ["n1", "n2"])  # grid [T0+20, T0+60]: 3 samples
    series, rejects = extract_series(job, _telemetry(["n1", "n2", "n3"], T0, T0 + 100, power))
    assert rejects.height == 0
    row = series.row(0, named=True)
    expected = [3 * (power("n1", t) + power("n2", t)) for t in (T0 + 20, T0 + 40, T0 + 60)]
    assert row["power_consumption"] == pytest.approx(expected)
    values = [3 * power(n, t) for n in ("n1", "n2") for t in (T0 + 20, T0 + 40, T0 + 60)]
    assert row["power_mean"] == pytest.approx(np.mean(values))
    assert row["power_max"] == pytest.approx(max(values))
    assert row["power_std"] == pytest.approx(np.std(values))
    assert row["energy"] == pytest.approx(sum(expected) * 20.0)
    assert (row["samples"], row["missing_samples"]) == (3, 0)


def test_the_watts_layout_gives_the_same_series() -> None:
    job = _job(1, T0 + 5, T0 + 65, ["n1", "n2"])
    tel = _telemetry(["n1", "n2"], T0, T0 + 100, power)
    watts = tel.select("node", "timestamp", (pl.col("ps0") + pl.col("ps1")).alias("watts"))
    assert extract_series(job, tel)[0].equals(extract_series(job, watts)[0])


def test_a_missing_node_sample_rejects_the_job_unless_tolerated() -> None:
    job = _job(1, T0, T0 + 60, ["n1", "n2"])  # 4 samples
    tel = _telemetry(["n1", "n2"], T0, T0 + 100, power, skip={("n2", T0 + 40)})
    series, rejects = extract_series(job, tel)
    assert series.height == 0
    assert rejects.row(0) == (1, "1 of 4 samples missing (some instants have 1 of 2 nodes reporting)")
    series, rejects = extract_series(job, tel, max_missing=0.25)
    assert rejects.height == 0 and series["samples"][0] == 4 and series["missing_samples"][0] == 1
    assert len(series["power_consumption"][0]) == 3


def test_a_job_without_any_telemetry_is_rejected() -> None:
    job = _job(7, T0, T0 + 60, ["n9"])
    series, rejects = extract_series(job, _telemetry(["n1"], T0, T0 + 100, power))
    assert series.height == 0 and rejects["job_id"].to_list() == [7] and "4 of 4" in rejects["reason"][0]
