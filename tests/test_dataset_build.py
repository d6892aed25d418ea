"""The PM100 method end to end on a small synthetic machine: every job is in the dataset or in the rejects."""

from __future__ import annotations

from datetime import UTC

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.dataset.build import build_dataset, node_lists

T0 = 1_600_000_000.0


def _telemetry(nodes, t1, skip=()):
    rows = [
        (n, T0 + 20.0 * k, 100.0 + k, 50.0)
        for k in range(int(t1 // 20) + 2)
        for n in nodes
        if (n, T0 + 20.0 * k) not in skip
    ]
    return pl.DataFrame(rows, schema=["node", "timestamp", "ps0", "ps1"], orient="row")


def test_node_lists_from_strings() -> None:
    jobs = pl.DataFrame({"nodes": ["['r1n1', 'r1n2']", "r2n1", "", None, "r3n[01-02],r4n1"]})
    assert node_lists(jobs)["nodes"].to_list() == [["r1n1", "r1n2"], ["r2n1"], [], None, ["r3n01", "r3n02", "r4n1"]]


def test_build_small_machine() -> None:
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4, 5, 6],
            "start_time": [T0, T0 + 30, T0 + 10, T0 + 301, T0 + 5, T0 + 400],
            "end_time": [T0 + 100, T0 + 90, T0 + 200, T0 + 309, T0 + 200, T0 + 500],
            "nodes": [["a"], ["a"], ["b", "c"], ["d"], [], ["e"]],
            "tres_alloc_str": ["cpu=4,node=1"] * 6,
        }
    )
    dataset, rejects = build_dataset(jobs, _telemetry(["a", "b", "c", "d"], 600))
    assert dataset["job_id"].to_list() == [3]
    assert dataset["num_cores_alloc"].to_list() == [4]
    assert dataset["power_consumption"][0][0] == 2 * (100.0 + 1 + 50.0)  # nodes b and c at T0 + 20
    why = dict(rejects.select("job_id", "stage").iter_rows())
    assert why == {1: "exclusivity", 2: "exclusivity", 4: "exclusivity", 5: "input", 6: "extraction"}
    assert sorted(dataset["job_id"].to_list() + rejects["job_id"].to_list()) == jobs["job_id"].to_list()


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 400), st.integers(0, 150), st.lists(st.sampled_from("abcd"), min_size=0, max_size=3)),
        min_size=1,
        max_size=20,
    ),
    st.sets(st.tuples(st.sampled_from("abcd"), st.integers(0, 30)), max_size=5),
)
def test_every_job_is_accounted_for(specs, holes) -> None:
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(len(specs)),
            "start_time": [T0 + s for s, _, _ in specs],
            "end_time": [T0 + s + d for s, d, _ in specs],
            "nodes": [nodes for _, _, nodes in specs],
        },
        schema_overrides={"nodes": pl.List(pl.Utf8)},
    )
    skip = {(n, T0 + 20.0 * k) for n, k in holes}
    dataset, rejects = build_dataset(jobs, _telemetry(list("abcd"), 600, skip))
    ids = dataset["job_id"].to_list() + rejects["job_id"].to_list()
    assert sorted(ids) == list(range(len(specs)))
    assert rejects["reason"].null_count() == 0
    for row in dataset.iter_rows(named=True):
        assert len(row["power_consumption"]) == row["samples"] - row["missing_samples"] > 0


def test_dataset_build_cli_with_partitioned_telemetry(tmp_path) -> None:
    from typer.testing import CliRunner

    from wattsched.cli import app

    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3],
            "start_time": [T0, T0 + 30, T0 + 10],
            "end_time": [T0 + 100, T0 + 90, T0 + 200],
            "nodes": ["a", "a", "['b', 'c']"],
        }
    )
    jobs_path = tmp_path / "jobs.parquet"
    jobs.write_parquet(jobs_path)
    tel_dir = tmp_path / "telemetry"
    tel_dir.mkdir()
    tel = _telemetry(list("abc"), 600)
    for node in "abc":
        tel.filter(pl.col("node") == node).write_parquet(tel_dir / f"node={node}.parquet")
    out = tmp_path / "dataset.parquet"
    result = CliRunner().invoke(
        app, ["dataset", "build", "--job-table", str(jobs_path), "--telemetry", str(tel_dir), "--output", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert pl.read_parquet(out)["job_id"].to_list() == [3]
    assert pl.read_parquet(tmp_path / "dataset.rejects.parquet")["job_id"].to_list() == [1, 2]


def test_datetime_job_times_become_epoch_seconds() -> None:
    from datetime import datetime

    from wattsched.dataset.build import epoch_seconds

    t = datetime(2020, 9, 13, 12, 26, 40, tzinfo=UTC)
    frame = epoch_seconds(pl.DataFrame({"start_time": [t], "end_time": [t.replace(tzinfo=None)]}))
    assert frame.row(0) == (T0, T0)


def test_exadata_layout_joins_the_two_psus(tmp_path) -> None:
    from datetime import datetime

    tel = _telemetry(["a", "b"], 100)
    for metric, col in (("ps0_input_power", "ps0"), ("ps1_input_power", "ps1")):
        part = tmp_path / metric / "year_month=20-09"
        part.mkdir(parents=True)
        frame = tel.select(
            pl.col("timestamp").map_elements(
                lambda t: datetime.fromtimestamp(t, UTC), return_dtype=pl.Datetime("us", "UTC")
            ),
            pl.col(col).alias("value"),
            "node",
        )
        if col == "ps1":  # node b's PSU 1 misses the instant T0 + 20
            frame = frame.filter(~((pl.col("node") == "b") & (pl.col("timestamp").dt.epoch("s") == T0 + 20)))
        frame.write_parquet(part / "part-0.parquet")
    jobs = pl.DataFrame(
        {"job_id": [1, 2], "start_time": [T0, T0 + 10], "end_time": [T0 + 60, T0 + 70], "nodes": [["a"], ["b"]]}
    )
    dataset, rejects = build_dataset(jobs, tmp_path)
    assert dataset["job_id"].to_list() == [1]
    assert dataset["power_consumption"][0].to_list() == [100.0 + k + 50.0 for k in range(4)]
    assert rejects["reason"].to_list() == ["1 of 3 samples missing (some instants have 0 of 1 nodes reporting)"]
    tolerant, _ = build_dataset(jobs, tmp_path, max_missing=0.5)
    assert tolerant.filter(pl.col("job_id") == 2)["power_consumption"][0].to_list() == [152.0, 153.0]


def test_generate_telemetry_then_build_on_the_command_line(tmp_path) -> None:
    from typer.testing import CliRunner

    from wattsched.cli import app

    runner = CliRunner()
    made = runner.invoke(
        app,
        [
            "generate",
            "telemetry",
            "--output",
            str(tmp_path),
            "--jobs",
            "200",
            "--nodes",
            "24",
            "--days",
            "1.5",
            "--outages",
            "2",
            "--seed",
            "4",
        ],
    )
    assert made.exit_code == 0, made.output
    out = tmp_path / "ds.parquet"
    built = runner.invoke(
        app,
        [
            "dataset",
            "build",
            "--job-table",
            str(tmp_path / "jobs.parquet"),
            "--telemetry",
            str(tmp_path / "telemetry"),
            "--output",
            str(out),
            "--memory-gb",
            "0.0005",
        ],
    )
    assert built.exit_code == 0, built.output
    assert "window(s)" in built.output and "200 jobs" in built.output
    dataset, rejects = pl.read_parquet(out), pl.read_parquet(tmp_path / "ds.rejects.parquet")
    assert dataset.height + rejects.height == 200 and dataset.height > 50
    bad = runner.invoke(
        app,
        [
            "dataset",
            "build",
            "--job-table",
            str(tmp_path / "jobs.parquet"),
            "--telemetry",
            str(tmp_path / "telemetry"),
            "--output",
            str(out),
            "--executor",
            "spark",
        ],
    )
    assert bad.exit_code != 0 and "--executor" in bad.output and "spark" in bad.output
