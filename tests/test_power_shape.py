"""Power-capped runs on ``reproduce 000 --quick``'s construction (one window of it), and the power CLI end to end.

Paper 000's shape claims (trespass, breaks, under-utilisation, time above the cap, §6.6's orderings) are checked on
the reproduction itself, over windows and seeds, in tests/test_reproduce_000.py."""

from __future__ import annotations

import json

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.api import run_policy
from wattsched.cli import app
from wattsched.core.schema import ReadResult
from wattsched.policies.powercheck import PowerCheck
from wattsched.power.platform import PowerCapSchedule, load_platform
from wattsched.power.run import PowerSetup
from wattsched.reproduce.paper000 import QUICK, windows_of
from wattsched.workload.generate import generate_m100like

WINDOW = 10_800.0


@pytest.fixture(scope="module")
def loaded_window() -> ReadResult:
    """The busiest window (most jobs waiting at t = 0) of ``reproduce 000 --quick``'s construction for seed 3:
    the calibrated Marconi100-like generator, 24-h windows, the running jobs requeued at t = 0. The paper's shape
    claims are checked on the aggregate of that construction by tests/test_reproduce_000.py; the per-run facts
    here hold in every window."""
    windows = windows_of(QUICK, 3)
    return max(windows, key=lambda w: int((w.jobs["submit_time"] == 0).sum()))


def test_the_window_is_the_reproductions_construction(loaded_window) -> None:
    assert loaded_window.jobs.height > 500
    assert "prestarted" not in loaded_window.jobs.columns or not loaded_window.jobs["prestarted"].any()
    assert int((loaded_window.jobs["submit_time"] == 0).sum()) > 0  # the backlog is requeued at t = 0


def test_power_cli_end_to_end(tmp_path) -> None:
    runner = CliRunner()
    workload = tmp_path / "m100.parquet"
    assert (
        runner.invoke(
            app, ["generate", "m100", "--jobs", "800", "--seed", "4", "--load", "1.0", "--output", str(workload)]
        ).exit_code
        == 0
    )
    out = tmp_path / "run"
    result = runner.invoke(
        app,
        [
            "simulate",
            "--workload",
            str(workload),
            "--platform",
            "marconi100",
            "--policy",
            "easy-pc",
            "--power-check",
            "gaussian99",
            "--power-source",
            "real",
            "--cap",
            "0.5",
            "--window",
            "10800",
            "--output",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    power = pl.read_parquet(out / "power.parquet")
    assert power.columns == ["time", "total", "dynamic", "cap"]
    assert power.filter(pl.col("time") < WINDOW)["cap"].drop_nulls().unique().to_list() == [0.5 * 719_880]
    summary = json.loads((out / "summary.json").read_text())["power"]
    assert summary["power_check"] == "gaussian99" and summary["turnaround_increase"] is not None
    # a canonical table with per-node summaries only (no profiles) works too: flat profiles
    flat = tmp_path / "flat.csv"
    pl.read_parquet(workload).drop("power_profile", "state").write_csv(flat)
    result = runner.invoke(
        app,
        [
            "simulate",
            "--workload",
            str(flat),
            "--machine-size",
            "980",
            "--platform",
            "marconi100",
            "--policy",
            "easy-pc",
            "--power-check",
            "mean",
            "--cap",
            "300000W",
            "--output",
            str(tmp_path / "flat"),
        ],
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--power-check", "mean"], "--platform"),
        (["--platform", "marconi100", "--power-check", "mean"], "needs a cap (--cap or --cap-file)"),
        (["--platform", "marconi100", "--window", "100"], "power window (--window) needs a cap (--cap)"),
        (["--platform", "marconi100", "--power-check", "mean", "--cap", "12"], "add 'W' for watts"),
    ],
)
def test_power_options_errors(tmp_path, args, message) -> None:
    workload = tmp_path / "m100.parquet"
    CliRunner().invoke(app, ["generate", "m100", "--jobs", "50", "--output", str(workload)])
    result = CliRunner().invoke(
        app, ["simulate", "--workload", str(workload), "--policy", "easy-pc", "--output", str(tmp_path / "o"), *args]
    )
    assert result.exit_code == 2
    assert message in result.output


def test_jobs_that_could_never_fit_are_rejected_with_a_reason() -> None:
    r = generate_m100like(300, seed=5)
    jobs = r.jobs.with_columns(  # job 1 claims 2,000 W per node on 256 nodes: 451,840 W dynamic, above any cap
        pl.when(pl.col("job_id") == 1).then(256).otherwise(pl.col("size")).alias("size"),
        pl.when(pl.col("job_id") == 1).then(2000.0).otherwise(pl.col("power_mean")).alias("power_mean"),
    )
    plat = load_platform("marconi100")
    cap = PowerCapSchedule.window(0.5, plat, window_end=WINDOW, post_window_cap=0.6)
    run = run_policy(
        ReadResult(jobs, r.rejects, r.provenance),
        "easy-pc",
        power=PowerSetup(plat, PowerCheck.named("mean"), "real", cap),
    )
    assert run.rejects.select("job_id", "field").rows() == [(1, "power")]
    assert "could never start" in run.rejects["reason"][0]
    assert run.jobs.height == 299 and run.summary["workload"]["rejected"] == 1


@pytest.mark.parametrize("check", ["max", "naive"])
@pytest.mark.parametrize("policy", ["easy-pc", "easy-saf-pc", "knapsack-wait", "knapsack-exact-stretch"])
def test_actual_power_never_exceeds_the_cap_with_real_max_estimates(loaded_window, check, policy) -> None:
    """Every profile sample is at most nodes × per-node max (the generator's power_max is the maximum of the
    per-node samples), so with max estimates Σ dynamic ≤ Σ M ≤ cap at every instant the cap is in force (the
    cap only rises here: 0.5 for 3 h, then the dynamic range)."""
    plat = load_platform("marconi100")
    cap = PowerCapSchedule.window(0.5, plat, window_end=WINDOW, post_window_cap="dynamic_range")
    run = run_policy(
        loaded_window, policy, power=PowerSetup(plat, PowerCheck.named(check), "real", cap, WINDOW), baseline=False
    )
    power = run.power.filter(pl.col("cap").is_not_null())
    assert power.height > 0
    assert (power["dynamic"] <= power["cap"]).all()
    assert run.summary["power"]["trespass"] is False


def test_ambiguity_options_reach_the_run(tmp_path) -> None:
    """[AMBIG-0.2] cap basis, [AMBIG-0.3] idle subtraction and σ scaling are options (docs/semantics.md §3.7)."""
    runner = CliRunner()
    workload = tmp_path / "m100.parquet"
    assert (
        runner.invoke(
            app, ["generate", "m100", "--jobs", "300", "--seed", "6", "--load", "1.0", "--output", str(workload)]
        ).exit_code
        == 0
    )
    base = [
        "simulate",
        "--workload",
        str(workload),
        "--platform",
        "marconi100",
        "--policy",
        "easy-pc",
        "--power-check",
        "gaussian99",
        "--cap",
        "0.5",
        "--window",
        "10800",
    ]
    caps = {}
    for name, extra in {
        "default": [],
        "total": ["--cap-basis", "total"],
        "literal": ["--no-subtract-idle"],
        "sqrt": ["--sigma-scaling", "sqrt"],
    }.items():
        out = tmp_path / name
        result = runner.invoke(app, [*base, *extra, "--output", str(out)])
        assert result.exit_code == 0, result.output
        caps[name] = pl.read_parquet(out / "power.parquet").filter(pl.col("time") == 0)["cap"][0]
    assert caps["default"] == 0.5 * 719_880  # α × dynamic range
    assert caps["total"] == 0.5 * 955_080 - 980 * 240  # α × max platform power, on total power → dynamic
    assert caps["literal"] == caps["sqrt"] == caps["default"]
    bad = runner.invoke(app, [*base, "--sigma-scaling", "cube", "--output", str(tmp_path / "bad")])
    assert bad.exit_code == 2 and "sigma-scaling" in bad.output


def test_estimate_options() -> None:
    from wattsched.power.run import with_estimates

    jobs = generate_m100like(200, seed=7).jobs.filter(pl.col("runtime") > 0)
    plat = load_platform("marconi100")
    check = PowerCheck.named("gaussian99")
    q, mean, std = (jobs[c].to_numpy() for c in ("size", "power_mean", "power_std"))
    default = with_estimates(jobs, PowerSetup(plat, check))
    literal = with_estimates(jobs, PowerSetup(plat, check, subtract_idle=False))
    sqrt = with_estimates(jobs, PowerSetup(plat, check, sigma_scaling="sqrt"))
    naive = with_estimates(jobs, PowerSetup(plat, PowerCheck.named("naive")))
    assert default["est_dyn_mean"].to_numpy() == pytest.approx(q * (mean - 240.0))
    assert literal["est_dyn_mean"].to_numpy() == pytest.approx(q * mean)
    assert default["est_dyn_std"].to_numpy() == pytest.approx(q * std)
    assert sqrt["est_dyn_std"].to_numpy() == pytest.approx(q**0.5 * std)
    assert naive["est_dyn_max"].to_numpy() == pytest.approx(1860.0 * q)


def test_the_uncapped_baseline_is_reused_only_for_an_equal_job_table() -> None:
    """``power.run.uncapped_easy`` keeps the last baselines (a campaign runs every check and cap of a window
    against the same one): an equal table gets the kept schedule, equal to a fresh simulation; a table that
    differs in one value, or another machine size or kill grace, is simulated again."""
    from wattsched.engine.simulate import simulate
    from wattsched.power import run as power_run

    jobs = generate_m100like(300, seed=8).jobs.filter(pl.col("runtime") > 0)
    power_run._REFERENCES.clear()
    first = power_run.uncapped_easy(jobs, 980, 0.0)
    assert power_run.uncapped_easy(jobs.clone(), 980, 0.0) is first
    assert first.equals(simulate(jobs, "easy", 980).schedule)
    longer = jobs.with_columns(pl.when(pl.int_range(pl.len()) == 5).then(pl.col("runtime") * 2).otherwise("runtime"))
    changed = power_run.uncapped_easy(longer, 980, 0.0)
    assert changed is not first and changed.equals(simulate(longer, "easy", 980).schedule)
    assert power_run.uncapped_easy(jobs, 490, 0.0) is not first
    assert power_run.uncapped_easy(jobs, 980, 30.0) is not first
    assert sum(map(len, power_run._REFERENCES.values())) <= power_run._REFERENCE_CACHE
