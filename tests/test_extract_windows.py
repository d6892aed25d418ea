"""The out-of-core extraction agrees with the brute-force join on random telemetry, however it is windowed or
fanned out, and reads every layout the same way."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_extract import reference_extract
from wattsched.dataset.extract import ExtractionStats, extract_series

T0 = 1_600_000_000.0
NODES = list("abcde")


def _random_case(seed: int, n_jobs: int, hole_share: float, dup_share: float, off_grid: int):
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(60):
        for n in NODES:
            r = rng.random()
            if r < hole_share:
                continue
            ps0, ps1 = float(rng.uniform(50, 400)), float(rng.uniform(50, 400))
            if r > 1 - dup_share:  # a duplicated reading of the cell
                rows.append((n, T0 + 20.0 * k, float(rng.uniform(50, 400)), float(rng.uniform(50, 400))))
            elif r > 1 - 2 * dup_share:  # PSU 1 missing: the cell is missing
                ps1 = None
            rows.append((n, T0 + 20.0 * k, ps0, ps1))
    for _ in range(off_grid):
        rows.append((str(rng.choice(NODES)), T0 + 20.0 * int(rng.integers(0, 60)) + 7.0, 1e6, 1e6))
    tel = pl.DataFrame(
        rows, schema={"node": pl.Utf8, "timestamp": pl.Float64, "ps0": pl.Float64, "ps1": pl.Float64}, orient="row"
    )
    first = rng.integers(0, 55, n_jobs)
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(n_jobs) + 100,
            "grid_start": T0 + 20.0 * first,
            "grid_end": T0 + 20.0 * np.minimum(first + rng.integers(0, 20, n_jobs), 62),
            "nodes": [list(rng.choice(NODES, int(rng.integers(1, 4)), replace=False)) for _ in range(n_jobs)],
        }
    )
    return jobs, tel


def _same(a: pl.DataFrame, b: pl.DataFrame) -> None:
    assert a["job_id"].to_list() == b["job_id"].to_list()
    assert a["samples"].to_list() == b["samples"].to_list()
    assert a["missing_samples"].to_list() == b["missing_samples"].to_list()
    for x, y in zip(a["power_consumption"].to_list(), b["power_consumption"].to_list(), strict=True):
        assert x == pytest.approx(y, rel=1e-9)
    for c in ("power_mean", "power_max", "power_std", "energy"):
        assert a[c].to_numpy() == pytest.approx(b[c].to_numpy(), rel=1e-9, abs=1e-6), c


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(0, 10_000),
    st.integers(1, 25),
    st.sampled_from([0.0, 0.02, 0.2]),
    st.sampled_from([0.0, 0.05]),
    st.integers(0, 5),
    st.sampled_from([1e-6, 3e-6, 1.0]),
    st.sampled_from([0.0, 0.3, 1.0]),
)
def test_windowed_extraction_matches_the_brute_force_join(
    seed, n_jobs, holes, dups, off_grid, memory_gb, max_missing
) -> None:
    jobs, tel = _random_case(seed, n_jobs, holes, dups, off_grid)
    expected, expected_rejects = reference_extract(jobs, tel, max_missing=max_missing)
    stats = ExtractionStats()
    series, rejects = extract_series(jobs, tel, max_missing=max_missing, memory_gb=memory_gb, stats=stats)
    _same(series, expected)
    assert rejects.sort("job_id").to_dicts() == expected_rejects.sort("job_id").to_dicts()
    assert stats.windows >= 1 and stats.off_grid_rows <= off_grid  # only rows in the span, on used nodes
    assert sorted(series["job_id"].to_list() + rejects["job_id"].to_list()) == jobs["job_id"].to_list()


def test_tiny_windows_cut_the_span_into_many_tasks_and_skip_gaps() -> None:
    jobs, tel = _random_case(1, 10, 0.0, 0.0, 0)
    late = jobs.head(1).with_columns(
        pl.lit(999, pl.Int64).alias("job_id"),
        (pl.col("grid_start") + 20.0 * 10_000).alias("grid_start"),
        (pl.col("grid_start") + 20.0 * 10_002).alias("grid_end"),
    )
    stats = ExtractionStats()
    series, rejects = extract_series(pl.concat([jobs, late]), tel, memory_gb=5 * 20 * 10 * 3 / 2**30, stats=stats)
    assert stats.windows < 40  # 3-instant windows over ~60 instants, then one jump over the 10,000-instant gap
    expected, expected_rejects = reference_extract(jobs, tel)
    assert rejects["job_id"].to_list() == [*expected_rejects["job_id"].sort().to_list(), 999]  # none there
    _same(series, expected)


def test_snap_moves_jittered_rows_to_the_nearest_instant() -> None:
    tel = pl.DataFrame({"node": ["a"] * 3, "timestamp": [T0 + 19.0, T0 + 41.5, T0 + 60.0], "watts": [1.0, 2.0, 3.0]})
    jobs = pl.DataFrame({"job_id": [1], "grid_start": [T0 + 20.0], "grid_end": [T0 + 60.0], "nodes": [["a"]]})
    stats = ExtractionStats()
    series, rejects = extract_series(jobs, tel, stats=stats)
    assert series.height == 0 and rejects.height == 1 and stats.off_grid_rows == 2
    assert "off the 20-s grid" in stats.notes[0]
    series, _ = extract_series(jobs, tel, snap=2.0)
    assert series["power_consumption"][0].to_list() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="snap must be"):
        extract_series(jobs, tel, snap=10.0)


def test_file_layouts_and_datetime_timestamps_read_alike(tmp_path) -> None:
    jobs, tel = _random_case(7, 12, 0.05, 0.0, 0)
    expected, _ = extract_series(jobs, tel)
    parts = tmp_path / "parts"
    parts.mkdir()
    dated = tel.with_columns(pl.from_epoch(pl.col("timestamp").cast(pl.Int64), time_unit="s").dt.cast_time_unit("ms"))
    for i, frame in enumerate(dated.partition_by("node")):
        frame.write_parquet(parts / f"p{i}.parquet", row_group_size=17)
    _same(extract_series(jobs, parts)[0], expected)
    tel.write_csv(tmp_path / "tel.csv")
    _same(extract_series(jobs, tmp_path / "tel.csv")[0], expected)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        extract_series(jobs, tmp_path / "nowhere")
    tel.drop("ps1").write_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"bad\.parquet: telemetry needs columns"):
        extract_series(jobs, tmp_path / "bad.parquet")


@pytest.mark.parametrize("executor", ["local", "dask"])
def test_windows_fanned_out_give_the_same_result(executor, tmp_path) -> None:
    jobs, tel = _random_case(11, 20, 0.02, 0.05, 2)
    tel.write_parquet(tmp_path / "tel.parquet")
    one, one_rejects = extract_series(jobs, tmp_path / "tel.parquet", memory_gb=2e-6)
    many, many_rejects = extract_series(jobs, tmp_path / "tel.parquet", memory_gb=4e-6, executor=executor, workers=2)
    assert one.equals(many) and one_rejects.equals(many_rejects)
