"""The synthetic telemetry generator feeds the PM100 method: exclusive jobs get their generated power back."""

from __future__ import annotations

from wattsched.dataset.build import build_dataset
from wattsched.dataset.synthetic import generate_telemetry, write_exadata


def test_generated_machine_through_the_pipeline(tmp_path) -> None:
    synth = generate_telemetry(300, n_nodes=40, hours=6.0, shared_share=0.1, missing_share=0.0005, seed=3)
    write_exadata(synth.telemetry, tmp_path / "exadata", rows_per_file=20_000)
    assert len(list((tmp_path / "exadata" / "ps0_input_power").glob("*.parquet"))) > 1
    dataset, rejects = build_dataset(synth.jobs, tmp_path / "exadata")
    assert sorted(dataset["job_id"].to_list() + rejects["job_id"].to_list()) == synth.jobs["job_id"].to_list()
    stages = set(rejects["stage"].to_list())
    assert "exclusivity" in stages and dataset.height > 50
    # the same result straight from the in-memory telemetry (PSUs already paired)
    direct, _ = build_dataset(synth.jobs, synth.telemetry)
    assert direct["job_id"].to_list() == dataset["job_id"].to_list()
    a = dataset.select("job_id", "power_mean").sort("job_id")
    b = direct.select("job_id", "power_mean").sort("job_id")
    assert (a["power_mean"] - b["power_mean"]).abs().max() < 1e-3
    # busy nodes draw more than idle ones: per-node means sit above the idle power
    assert dataset["power_mean"].min() > 240.0 and dataset["power_std"].null_count() == 0
    assert (dataset["samples"] >= 1).all() and (dataset["missing_samples"] == 0).all()


def test_streamed_exadata_holds_the_in_memory_samples_and_the_jobs_get_their_power_back(tmp_path) -> None:
    import numpy as np
    import polars as pl

    from wattsched.dataset.synthetic import place_jobs, power_chunks, write_synthetic_exadata

    options = dict(n_nodes=30, hours=30.0, shared_share=0.1, missing_share=0.001, outages=3, seed=5)
    machine = place_jobs(120, **options)
    rows = write_synthetic_exadata(machine, tmp_path)
    assert len(list((tmp_path / "ps1_input_power").glob("*.parquet"))) == 2  # 30 h: two one-day chunks
    memory = generate_telemetry(120, **options)
    assert rows == memory.telemetry.height and memory.jobs.equals(machine.jobs)
    dataset, rejects = build_dataset(machine.jobs, tmp_path, memory_gb=1e-4)  # many windows
    assert set(rejects["stage"]) >= {"exclusivity", "extraction"}  # outages and gaps reject some jobs
    truth = np.concatenate([p for _, p, _ in power_chunks(machine)], axis=1)
    names = {n: i for i, n in enumerate(machine.names)}
    for row in dataset.head(20).iter_rows(named=True):
        k0 = int(np.ceil(row["start_time"] / 20)) - round(machine.t0 / 20)
        k1 = int(np.floor(row["end_time"] / 20)) - round(machine.t0 / 20)
        expected = truth[[names[n] for n in row["nodes"]], k0 : k1 + 1].sum(axis=0)
        assert np.allclose(row["power_consumption"], expected, rtol=1e-6)
    direct, _ = build_dataset(memory.jobs, memory.telemetry)
    assert direct["job_id"].equals(dataset["job_id"])  # windows merge the statistics to rounding error
    assert np.allclose(direct["power_mean"], dataset["power_mean"], rtol=1e-12)
    assert np.allclose(direct["power_std"], dataset["power_std"], rtol=1e-9)
    assert pl.read_parquet(tmp_path / "ps0_input_power" / "part-00000.parquet").columns == [
        "timestamp",
        "value",
        "node",
    ]
