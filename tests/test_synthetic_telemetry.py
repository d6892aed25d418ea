"""The synthetic telemetry generator feeds the PM100 method: exclusive jobs get their generated power back."""

from __future__ import annotations

from wattsched.dataset.build import build_dataset, read_telemetry
from wattsched.dataset.synthetic import generate_telemetry, write_exadata


def test_generated_machine_through_the_pipeline(tmp_path) -> None:
    synth = generate_telemetry(300, n_nodes=40, hours=6.0, shared_share=0.1, missing_share=0.0005, seed=3)
    write_exadata(synth.telemetry, tmp_path / "exadata", rows_per_file=20_000)
    assert len(list((tmp_path / "exadata" / "ps0_input_power").glob("*.parquet"))) > 1
    dataset, rejects = build_dataset(synth.jobs, read_telemetry(tmp_path / "exadata"))
    assert sorted(dataset["job_id"].to_list() + rejects["job_id"].to_list()) == synth.jobs["job_id"].to_list()
    stages = set(rejects["stage"].to_list())
    assert "exclusivity" in stages and dataset.height > 100
    # the same result straight from the in-memory telemetry (PSUs already paired)
    direct, _ = build_dataset(synth.jobs, synth.telemetry)
    assert direct["job_id"].to_list() == dataset["job_id"].to_list()
    a = dataset.select("job_id", "power_mean").sort("job_id")
    b = direct.select("job_id", "power_mean").sort("job_id")
    assert (a["power_mean"] - b["power_mean"]).abs().max() < 1e-3
    # busy nodes draw more than idle ones: per-node means sit above the idle power
    assert dataset["power_mean"].min() > 240.0 and dataset["power_std"].null_count() == 0
    assert (dataset["samples"] >= 1).all() and (dataset["missing_samples"] == 0).all()
