"""Campaigns: spec validation, the run grid, resume after ``kill -9``, and local ≡ Dask results."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.campaign.runner import TIMING_FIELDS, load_results, run_experiment, status
from wattsched.campaign.spec import expand_runs, load_spec, parse_spec
from wattsched.cli import app
from wattsched.core.store import CampaignError, done_ids, run_id

SMALL = """
name = "small"
platform = "marconi100"

[[workloads]]
name = "m100"
generate = { model = "m100", jobs = 5000, seed = 3, target_load = 1.0 }
windows = { count = 2, hours = 12, seed = 1 }

[grid]
policies = ["easy-pc"]
checks = ["naive", "mean", "gaussian99"]
sources = ["real", "predicted"]
caps = [0.5, 0.7]
"""


def _spec_file(tmp_path: Path, text: str = SMALL, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_paper_grid_has_1350_runs() -> None:
    spec = parse_spec(
        {
            "workloads": [{"name": "m100", "generate": {"jobs": 10}, "windows": {"count": 30}}],
            "grid": {
                "checks": ["naive", "mean", "max", "gaussian68", "gaussian95", "gaussian99"],
                "sources": ["real", "predicted"],
                "caps": [0.4, 0.5, 0.6, 0.7],
            },
        }
    )
    runs = expand_runs(spec, {"m100": [f"m100-w{k:02d}" for k in range(30)]})
    assert len(runs) == 1350
    assert sum(r["kind"] == "baseline" for r in runs) == 30
    assert len({r["id"] for r in runs}) == 1350
    again = expand_runs(spec, {"m100": [f"m100-w{k:02d}" for k in range(30)]})
    assert [r["id"] for r in again] == [r["id"] for r in runs]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[workloads]]\nname = "a"\npath = "x"\n[grid]\npolicies = ["nope"]', "grid.policies: .*unknown policies"),
        ('[[workloads]]\nname = "a"\npath = "x"\n[grid]\nchecks = ["gaussian12"]', "grid.checks: .*unknown power"),
        ('[[workloads]]\nname = "a"\npath = "x"\ngenerate = { jobs = 5 }', "exactly one of 'path' or 'generate'"),
        ('[[workloads]]\nname = "a"\npath = "x"\nbogus = 1', "workloads.0.bogus: Extra inputs"),
        ("workloads = []", "workloads: List should have at least 1 item"),
        ('[[workloads]\nname = "a"', "not valid TOML"),
    ],
)
def test_bad_campaign_files_say_where(tmp_path, text, message) -> None:
    path = _spec_file(tmp_path, text)
    with pytest.raises(CampaignError, match=message) as info:
        load_spec(path)
    assert str(path) in str(info.value)


def test_yaml_and_toml_give_the_same_spec(tmp_path) -> None:
    import yaml

    toml = load_spec(_spec_file(tmp_path))
    import tomllib

    yml = tmp_path / "c.yaml"
    yml.write_text(yaml.safe_dump(tomllib.loads(SMALL)))
    assert load_spec(yml) == toml


def _results(directory: Path) -> pl.DataFrame:
    return load_results(directory).drop(TIMING_FIELDS).sort("id")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The small campaign, uninterrupted, on local processes."""
    root = tmp_path_factory.mktemp("campaign")
    out = root / "ref"
    run = run_experiment(load_spec(_spec_file(root)), out, workers=2)
    assert run.executed == run.total == 22
    return out


@pytest.mark.slow
def test_killed_and_resumed_campaign_gives_the_same_result_set(tmp_path, reference) -> None:
    spec = _spec_file(tmp_path)
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "wattsched.cli", "campaign", "run", str(spec), "--output", str(out), "--workers", "2"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and len(done_ids(out)) < 6 and proc.poll() is None:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = len(done_ids(out))
    assert 6 <= partial < 22, f"the kill came too late or too early ({partial} runs done)"
    resumed = run_experiment(load_spec(spec), out, workers=2)
    assert resumed.already_done == partial and resumed.executed == 22 - partial
    assert _results(out).equals(_results(reference))
    assert not list((out / "results").glob("*.tmp"))


@pytest.mark.slow
def test_dask_local_cluster_gives_identical_results(tmp_path, reference) -> None:
    """Another executor and another number of workers (the reference ran on 2 local processes)."""
    out = tmp_path / "dask"
    run_experiment(load_spec(_spec_file(tmp_path)), out, executor="dask", workers=1)
    assert _results(out).equals(_results(reference))


def test_a_directory_holds_one_campaign(tmp_path, reference) -> None:
    other = SMALL.replace("caps = [0.5, 0.7]", "caps = [0.6]")
    with pytest.raises(CampaignError, match="holds another campaign"):
        run_experiment(load_spec(_spec_file(tmp_path, other)), reference, workers=1)


def test_status_and_results_from_the_cli(tmp_path, reference) -> None:
    st = status(reference)
    assert st["done"] == st["runs"] == 22
    runner = CliRunner()
    result = runner.invoke(app, ["campaign", "status", str(reference)])
    assert result.exit_code == 0 and "22 of 22 runs done" in result.output
    table = tmp_path / "all.parquet"
    result = runner.invoke(app, ["campaign", "results", str(reference), "--output", str(table)])
    assert result.exit_code == 0, result.output
    frame = pl.read_parquet(table)
    assert frame.height == 22 and {"p_power_utilisation", "p_turnaround_increase", "elapsed_s"} <= set(frame.columns)
    runs = frame.filter(pl.col("kind") == "run")
    assert runs["p_power_utilisation"].null_count() == 0
    result = runner.invoke(app, ["campaign", "status", str(tmp_path)])
    assert result.exit_code == 2 and "no manifest.json" in result.output


def test_seeds_replicate_the_workloads_on_other_samples(tmp_path) -> None:
    spec = parse_spec(
        {
            "workloads": [{"name": "m", "generate": {"jobs": 10}, "windows": {"count": 2}}],
            "grid": {"checks": ["mean"], "caps": [0.5], "seeds": [0, 1]},
        }
    )
    runs = expand_runs(spec, {"m-s0": ["m-s0-w00", "m-s0-w01"], "m-s1": ["m-s1-w00", "m-s1-w01"]})
    assert len(runs) == 8 and {(r["workload"][:4], r["seed"]) for r in runs} == {("m-s0", 0), ("m-s1", 1)}


def test_report_from_the_cli(tmp_path, reference) -> None:
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["campaign", "report", str(reference), "--output", str(out), "--html"])
    assert result.exit_code == 0, result.output
    assert "campaign summary per cap: means over workload windows" in result.output and "caps pooled" in result.output
    for stem in (
        "power_utilisation",
        "turnaround_increase",
        "time_above_cap",
        "share_started_in_window",
        "max_turnaround_increase",
    ):
        assert (out / f"{stem}.png").stat().st_size > 10_000 and (out / f"{stem}.svg").stat().st_size > 10_000
    assert list(out.glob("gantt_*.png")) and list(out.glob("prediction_mae_*.png"))
    html = (out / "dashboard.html").read_text()
    assert "<script" in html and 'src="http' not in html


def _windows_spec(windows: dict, grid: dict | None = None):
    return parse_spec({"workloads": [{"name": "m", "generate": {"jobs": 10}, "windows": windows}],
                       "grid": grid or {"checks": ["mean"], "caps": [0.5]}})  # fmt: skip


def test_prestate_in_campaign_files_and_the_old_booleans() -> None:
    assert _windows_spec({"count": 2}).workloads[0].windows.prestate == "requeue"
    for value in ("requeue", "prestart", "drop"):
        assert _windows_spec({"prestate": value}).workloads[0].windows.prestate == value
    with pytest.warns(FutureWarning, match='prestate = true is deprecated; write prestate = "prestart"'):
        assert _windows_spec({"prestate": True}).workloads[0].windows.prestate == "prestart"
    with pytest.warns(FutureWarning, match='prestate = false is deprecated; write prestate = "drop"'):
        assert _windows_spec({"prestate": False}).workloads[0].windows.prestate == "drop"
    with pytest.raises(CampaignError, match=r"workloads\.0\.windows\.prestate"):
        _windows_spec({"prestate": "restart"})


def test_post_window_cap_values_sweep_and_run_ids() -> None:
    windows = {"m": ["m-w00"]}
    default = expand_runs(_windows_spec({"count": 1}), windows)
    assert all(r["post_window_cap"] == "none" for r in default if r["kind"] == "run")
    legacy = expand_runs(_windows_spec({"count": 1}, {"checks": ["mean"], "caps": [0.5],
                                                      "post_window_cap": "dynamic_range"}), windows)  # fmt: skip
    run = next(r for r in legacy if r["kind"] == "run")
    # the artifact's cap after the window is what campaigns ran before the option: those runs keep their ids
    assert "post_window_cap" not in run
    assert run["id"] == run_id({k: v for k, v in run.items() if k != "id"})
    assert run["id"] == "035c60a091dd2034"  # its id on main before the option
    sweep = _windows_spec({"count": 1}, {"checks": ["mean"], "caps": [0.5, 0.6],
                                         "post_window_cap": ["dynamic_range", "none", 0.8, "350000W"]})  # fmt: skip
    runs = [r for r in expand_runs(sweep, windows) if r["kind"] == "run"]
    assert len(runs) == 8 and len({r["id"] for r in runs}) == 8
    assert {r.get("post_window_cap", "dynamic_range") for r in runs} == {"dynamic_range", "none", 0.8, "350000W"}
    for bad, message in ((1.5, "fraction in \\(0, 1\\]"), ("lots", "post_window_cap must be"), ([], "at least one")):
        with pytest.raises(CampaignError, match=message):
            _windows_spec({"count": 1}, {"post_window_cap": bad})


def test_prestart_and_requeue_campaigns_report_the_pre_state_apart(tmp_path) -> None:
    spec = parse_spec({
        "workloads": [
            {"name": name, "generate": {"model": "m100", "jobs": 4000, "seed": 1},
             "windows": {"count": 1, "hours": 12, "seed": 0, "prestate": name}}
            for name in ("requeue", "prestart")
        ],
        "grid": {"checks": ["max", "mean"], "caps": [0.2], "post_window_cap": ["none", "dynamic_range"]},
        "baselines": False,
    })  # fmt: skip
    run_experiment(spec, tmp_path, workers=1)
    runs = load_results(tmp_path)
    assert runs.height == 8 and set(runs["post_window_cap"]) == {"none", "dynamic_range"}
    pre = runs.filter(pl.col("prestate") == "prestart")
    req = runs.filter(pl.col("prestate") == "requeue")
    assert (pre["prestarted"] > 0).all() and (pre["requeued"] == 0).all()
    assert (req["requeued"] > 0).all() and (req["prestarted"] == 0).all()
    assert (req["p_prestate_max_dynamic"] == 0).all() and (pre["p_prestate_max_dynamic"] > 0).all()
    # real max never breaks the cap itself; under prestart only the pre-state can put the machine above it
    assert not runs.filter(pl.col("check") == "max")["p_trespass"].any()
    assert not req.filter(pl.col("check") == "max")["p_machine_trespass"].any()
    over = pre.filter(pl.col("p_machine_trespass") & ~pl.col("p_trespass"))
    # this window's pre-state alone breaks a 0.2 cap (calibrated pre-states draw about a third of the range)
    assert over.height > 0 and over["p_prestate_over_cap"].all()


def test_the_campaign_files_printed_in_the_docs_validate(tmp_path) -> None:
    import re

    text = (Path(__file__).parent.parent / "docs" / "campaigns.md").read_text()
    # the power campaign's files (the other kinds' are checked in test_campaign_kinds.py)
    blocks = [b for b in re.findall(r"```toml\n(.*?)```", text, re.S) if 'kind = "power"' in b]
    assert len(blocks) >= 2
    for k, block in enumerate(blocks):
        spec = load_spec(_spec_file(tmp_path, block, f"doc{k}.toml"))
        assert spec.workloads[0].windows.prestate in ("requeue", "prestart")
    assert load_spec(_spec_file(tmp_path, blocks[0], "p0.toml")).baselines is True
