"""Size bounds: a job count whose estimated memory does not fit is refused in one line naming the option or key
and the estimate, before anything is allocated (a campaign typo once asked for 745 GiB)."""

from __future__ import annotations

import resource
import time

import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.core.bounds import available_bytes, check_fits, total_bytes
from wattsched.core.store import CampaignError
from wattsched.workload.generate import generate_lublin, generate_m100like
from wattsched.workload.generate.footprint import BYTES_PER_JOB

HUGE = 300_000_000_000  # 750 TB of m100 jobs: above any machine this runs on


def test_check_fits_names_the_option_and_the_estimate() -> None:
    assert check_fits("--jobs", 1000, 2500, "x", limit=10**7) == 2_500_000
    with pytest.raises(ValueError) as info:
        check_fits("--jobs", 300_000_000, 2500, "the m100 generator", limit=24 << 30)
    message = str(info.value)
    assert message.startswith("--jobs = 300,000,000: the m100 generator needs about 698.5 GiB (300,000,000 × 2.4 KiB")
    assert "24.0 GiB of memory available" in message and "\n" not in message


def test_the_references_are_the_machine() -> None:
    assert 0 < available_bytes() <= total_bytes()


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: generate_m100like(HUGE), "n_jobs"),
        (lambda: generate_lublin(HUGE, 256), "n_jobs"),
    ],
)
def test_generators_refuse_before_allocating(call, name) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ValueError, match=rf"^{name} = 300,000,000,000: the .* generator needs about"):
        call()
    assert time.perf_counter() - start < 1.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB: nothing big was allocated


@pytest.mark.parametrize("command", [["lublin"], ["m100"], ["telemetry"]])
def test_generate_cli_refuses_in_one_line(tmp_path, command) -> None:
    out = tmp_path / ("t" if command == ["telemetry"] else "w.parquet")
    result = CliRunner().invoke(app, ["generate", *command, "--output", str(out), "--jobs", str(HUGE)])
    assert result.exit_code != 0
    assert "--jobs = 300,000,000,000:" in result.output and "needs about" in result.output
    assert "Traceback" not in result.output
    assert not out.exists()


def _spec(jobs: int, model: str = "m100") -> dict:
    generate = {"model": model, "jobs": jobs} | ({"machine_size": 256} if model == "lublin" else {})
    return {"name": "c", "workloads": [{"name": "w", "generate": generate}]}


@pytest.mark.parametrize("model", ["m100", "lublin"])
def test_a_campaign_job_count_typo_is_refused_at_validation(model) -> None:
    from wattsched.campaign.spec import parse_spec

    with pytest.raises(CampaignError, match=r"workloads\.0\.generate.*jobs = 300,000,000,000: the .* needs about"):
        parse_spec(_spec(HUGE, model), "c.toml")
    assert parse_spec(_spec(1000, model), "c.toml").workloads[0].generate.jobs == 1000


def test_the_footprints_are_measured_per_model() -> None:
    assert set(BYTES_PER_JOB) == {"m100", "lublin"}
    assert BYTES_PER_JOB["m100"] > BYTES_PER_JOB["lublin"]  # the power profiles


def test_generate_telemetry_refuses_days_that_do_not_fit_on_the_disk(tmp_path) -> None:
    out = tmp_path / "t"
    result = CliRunner().invoke(app, ["generate", "telemetry", "--output", str(out), "--days", "1e7"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "--days = 10,000,000.0: the telemetry of 980 nodes over 1e+07 days needs about" in result.output
    assert "of disk free under" in result.output and not out.exists()
