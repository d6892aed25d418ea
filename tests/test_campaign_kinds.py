"""Every kind of campaign through the one runner: a tiny campaign of each kind (power, queue, dispatch, EAMC, RMAP)
killed with ``kill -9`` in the middle and resumed gives the result set of an uninterrupted run; SIGTERM stops a
campaign cleanly; the kind registry reads old files and refuses unknown kinds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import SHARED_DATA, require_data
from wattsched.campaign.kinds import KINDS, experiment_class, load_experiment, open_experiment, parse_experiment
from wattsched.campaign.runner import load_results, run_experiment, status
from wattsched.cli import app
from wattsched.core.store import CampaignError, done_ids

REPO = Path(__file__).resolve().parents[1]

POWER = """
kind = "power"
name = "tiny-power"
platform = "marconi100"
[[workloads]]
name = "m100"
generate = { model = "m100", jobs = 3000, seed = 2, target_load = 1.0 }
windows = { count = 3, hours = 12, seed = 1 }
[grid]
policies = ["easy-pc"]
checks = ["mean", "max"]
sources = ["real"]
caps = [0.5]
"""

QUEUE = """
kind = "queue"
name = "tiny-queue"
policies = ["fcfs", "easy", "conservative"]
[[workloads]]
name = "lublin"
generate = { model = "lublin", jobs = 4000, machine_size = 128, seed = 5 }
windows = { count = 3, hours = 48, seed = 0 }
"""

RMAP = """
kind = "rmap"
name = "tiny-rmap"
traces = ["small", "large", "random1", "random2"]
bounds = [6500, 10000, 14000]
policies = ["rmap-traditional", "rmap-naive", "rmap-adaptive-0"]
"""


def _eamc() -> str:
    data = require_data("eamc/en_conf/2hw.conf").parent
    return f"""
kind = "eamc"
name = "tiny-eamc"
data_dir = "{data}"
mixes = ["W13", "W50"]
policies = ["base-slurm", "min-energy", "eamc-priorityinc"]
t_weights = [1.0]
jobs = 300
"""


def _dispatch() -> str:
    files = sorted(require_data("eurora/historical_traces/50").glob("*.log_crypt"))[:2]
    return f"""
kind = "dispatch"
name = "tiny-dispatch"
instances = {json.dumps([str(f) for f in files])}
dispatchers = ["sjf", "ebf", "prb"]
estimates = ["walltime", "real"]
"""


SPECS = {"power": lambda: POWER, "queue": lambda: QUEUE, "rmap": lambda: RMAP, "eamc": _eamc, "dispatch": _dispatch}


def _spec_file(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / f"{kind}.toml"
    path.write_text(SPECS[kind]())
    return path


def _comparable(out: Path) -> pl.DataFrame:
    """The results without the machine-dependent timings, by run id."""
    results = load_results(out)
    timings = open_experiment(out).timing_fields
    return results.drop([c for c in timings if c in results.columns]).sort("id")


def _start(spec: Path, out: Path, workers: int = 1) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "wattsched.cli", "campaign", "run", str(spec), "--output", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return subprocess.Popen(
        [*cmd, "--workers", str(workers)],
        start_new_session=True,  # its own process group: the kill reaches every worker
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _wait_for_results(proc: subprocess.Popen, out: Path, count: int, timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and len(done_ids(out)) < count and proc.poll() is None:
        time.sleep(0.02)


def _group_gone(pgid: int, timeout: float = 10.0) -> bool:
    """Whether no process of the group is left (the campaign left no worker behind)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("kind", list(SPECS))
def test_kill_9_and_resume_gives_the_uninterrupted_results(tmp_path: Path, kind: str) -> None:
    spec = _spec_file(tmp_path, kind)
    reference = tmp_path / "reference"
    ref = run_experiment(load_experiment(spec), reference, workers=1)
    assert ref.executed == ref.total >= 6
    killed = tmp_path / "killed"
    proc = _start(spec, killed)
    _wait_for_results(proc, killed, 1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = len(done_ids(killed))
    assert 1 <= partial < ref.total, f"the kill came too late or too early ({partial} of {ref.total} runs done)"
    resumed = run_experiment(load_experiment(spec), killed, workers=1)
    assert resumed.already_done == partial and resumed.executed == ref.total - partial
    assert load_experiment(spec).count_runs() == ref.total  # the product of the axes is the planned count
    assert _comparable(killed).equals(_comparable(reference))
    assert not [p for p in (killed / "results").iterdir() if ".tmp" in p.name]
    st = status(killed)
    assert st["kind"] == kind and st["done"] == st["runs"] == ref.total
    runner = CliRunner()
    result = runner.invoke(app, ["campaign", "status", str(killed)])
    assert result.exit_code == 0 and f"{ref.total} of {ref.total} runs done" in " ".join(result.output.split())
    table = tmp_path / "all.csv"
    result = runner.invoke(app, ["campaign", "results", str(killed), "--output", str(table)])
    assert result.exit_code == 0 and pl.read_csv(table).height == ref.total
    result = runner.invoke(app, ["campaign", "report", str(killed)])
    assert result.exit_code == 0, result.output
    assert any((killed / "report").iterdir())


def test_sigterm_stops_a_campaign_cleanly_and_it_resumes(tmp_path: Path) -> None:
    """SIGTERM to the runner alone: it says how far it got, exits with 130, and ends its worker processes."""
    spec = _spec_file(tmp_path, "queue")
    out = tmp_path / "c"
    proc = _start(spec, out, workers=2)
    _wait_for_results(proc, out, 1)
    assert proc.poll() is None, "the campaign finished before it could be stopped"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    done = len(done_ids(out))
    assert f"interrupted: {done} of 9 runs done in {out}; run the same command again to resume" in stderr
    assert "Traceback" not in stderr
    assert _group_gone(proc.pid), "a worker process outlived the interrupted campaign"
    resumed = run_experiment(load_experiment(spec), out, workers=1)
    assert resumed.already_done == done and resumed.executed == 9 - done


def test_queue_policies_compare_on_job_and_system_metrics(tmp_path: Path) -> None:
    out = tmp_path / "q"
    run_experiment(load_experiment(_spec_file(tmp_path, "queue")), out, workers=1)
    results = load_results(out)
    assert results.height == 9 and set(results["policy"]) == {"fcfs", "easy", "conservative"}
    assert {"m_wait_mean", "m_bounded_slowdown_mean", "m_utilisation"} <= set(results.columns)
    means = results.group_by("policy").agg(pl.col("m_wait_mean").mean()).rows_by_key("policy")
    assert means["easy"][0] <= means["fcfs"][0]  # backfilling only ever helps the mean wait on these windows
    summary = pl.read_csv(open_experiment(out).report(out, tmp_path / "report")[1])
    assert summary["policy"].to_list() == ["fcfs", "easy", "conservative"] and (summary["windows"] == 3).all()
    # stopped early: one window lacks a policy, so every policy is averaged over the two complete windows
    missing = results.filter(pl.col("policy") == "easy").row(0, named=True)
    (out / "results" / f"{missing['id']}.json").unlink()
    from typer.testing import CliRunner

    from wattsched.cli import app

    cli = CliRunner().invoke(app, ["campaign", "report", str(out), "--output", str(tmp_path / "r2"), "--html"])
    assert cli.exit_code == 0, cli.output
    assert "--html is ignored" not in cli.output and "partial campaign: 8 of 9 runs done" in cli.output
    assert (pl.read_csv(tmp_path / "r2" / "summary.csv")["windows"] == 2).all()
    assert "partial campaign: 8 of 9 runs done" in (tmp_path / "r2" / "report.html").read_text()


#: The runs of each kind's tiny spec: power 3 windows × (baseline + 2 checks); queue 3 windows × 3 policies; rmap 4
#: traces × 3 bounds; eamc 2 mixes × 3 policies; dispatch 2 instances × 3 dispatchers × 2 estimates.
TINY_RUNS = {"power": 9, "queue": 9, "rmap": 12, "eamc": 6, "dispatch": 12}


@pytest.mark.parametrize("kind", list(SPECS))
def test_a_grid_beyond_max_runs_is_refused_before_anything_is_written(tmp_path: Path, kind: str) -> None:
    """Issue 31, item 3: every kind counts its runs from its axes (nothing prepared) and refuses a grid above the
    spec's ``max_runs`` in one line, before the folder exists; at the bound it is accepted."""
    runs = TINY_RUNS[kind]
    spec = tmp_path / f"{kind}.toml"
    spec.write_text(f"max_runs = {runs - 1}\n" + SPECS[kind]())  # top-level key: before any [table]
    out = tmp_path / "out"
    experiment = load_experiment(spec)  # the kind's modules imported (once a process): not the refusal's time
    started = time.perf_counter()
    with pytest.raises(CampaignError) as refused:
        run_experiment(experiment, out, workers=1)
    assert time.perf_counter() - started < 1.0
    assert str(refused.value) == (
        f"{spec}: the grid expands to {runs} runs, more than the limit of {runs - 1}; raise it with "
        f"max_runs = {runs} (in the spec, or --max-runs on campaign run) if you mean it"
    )
    assert not out.exists()
    assert experiment.count_runs() == runs
    assert experiment.check_run_count(runs) == runs  # a larger bound given by the caller wins over the spec's
    spec.write_text(f"max_runs = {runs}\n" + SPECS[kind]())
    assert load_experiment(spec).check_run_count() == runs
    assert "max_runs" not in load_experiment(spec).spec_data()  # a guard, not the experiment: ids unchanged


def _trillion_runs(tmp_path: Path) -> Path:
    """A power grid of 10^12 runs: a million windows a workload × 1,000 seeds × 1,000 caps (issue 31: such a grid
    was accepted and prepared one workload per seed, 153 seeds and 880 MB after 150 s)."""
    caps = ", ".join(f"{(k + 1) / 1000:g}" for k in range(1000))
    spec = tmp_path / "c.toml"
    spec.write_text(
        'kind = "power"\nname = "bomb"\nbaselines = false\n'
        '[[workloads]]\nname = "m100"\ngenerate = { model = "m100", jobs = 2000, seed = 0 }\n'
        "windows = { count = 1000000, hours = 24 }\n"
        f'[grid]\nchecks = ["mean"]\nsources = ["real"]\ncaps = [{caps}]\nseeds = {list(range(1000))}\n'
    )
    return spec


def test_a_trillion_run_grid_is_refused_at_once_and_writes_nothing(tmp_path: Path) -> None:
    spec = _trillion_runs(tmp_path)
    out = tmp_path / "out"
    # the command, in a process of its own: before the bound it prepared workloads for minutes
    cmd = [sys.executable, "-m", "wattsched.cli", "campaign", "run", str(spec), "--output", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "300"}
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the grid of 10^12 runs was not refused within 60 s")
    message = (
        f"{spec}: the grid expands to 1,000,000,000,000 runs, more than the limit of 1,000,000; raise it with "
        "max_runs = 1000000000000 (in the spec, or --max-runs on campaign run) if you mean it"
    )
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [f"error: {message}"], done.stderr
    assert not out.exists()
    experiment = load_experiment(spec)  # the power kind's modules imported (once a process)
    started = time.perf_counter()
    with pytest.raises(CampaignError, match="the grid expands to 1,000,000,000,000 runs"):
        run_experiment(load_experiment(spec), out, workers=1)
    assert time.perf_counter() - started < 1.0  # reading and validating the spec included
    assert not out.exists()
    # --max-runs raises (or lowers) the bound of the spec; refused runs write nothing either
    assert experiment.check_run_count(10**12) == 10**12
    queue = _spec_file(tmp_path, "queue")
    refused = CliRunner().invoke(app, ["campaign", "run", str(queue), "--output", str(out), "--max-runs", "8"])
    assert refused.exit_code == 2 and "the grid expands to 9 runs, more than the limit of 8" in refused.stderr
    assert not out.exists()


def _clocked() -> dict[str, str]:
    """Each kind's smallest grid that still reaches every timed code path (CPH's solver passes for dispatch, with
    CP-SAT's deterministic time so that its schedule is reproducible)."""
    eurora = sorted(require_data("eurora/historical_traces/50").glob("*.log_crypt"))[0]
    eamc = require_data("eamc/en_conf/2hw.conf").parent
    return {
        "power": POWER.replace("count = 3, hours = 12", "count = 1, hours = 12").replace('["mean", "max"]', '["max"]'),
        "queue": QUEUE.replace("count = 3", "count = 1").replace('["fcfs", "easy", "conservative"]', '["easy"]'),
        "rmap": 'kind = "rmap"\nname = "clock"\ntraces = ["small"]\nbounds = [8000]\npolicies = ["rmap-adaptive-0"]\n',
        "eamc": f'kind = "eamc"\ndata_dir = "{eamc}"\nmixes = ["W13"]\npolicies = ["eamc-priorityinc"]\n'
        "t_weights = [1.0]\njobs = 200\n",
        "dispatch": f'kind = "dispatch"\nname = "clock"\ninstances = ["{eurora}"]\ndispatchers = ["cph", "ebf"]\n'
        'estimates = ["walltime"]\n[cph]\ndeterministic_time = 0.2\n',
    }


@pytest.mark.parametrize("kind", list(SPECS))
def test_every_wall_clock_result_field_is_a_timing_field(tmp_path: Path, kind: str, monkeypatch) -> None:
    """Issue 31, item 11: results compared between runs leave out the kind's ``timing_fields``, so every field
    measured by a clock must be one (the dispatch kind's ``cp_mean_s`` was not: 87 of 435 runs "differed" between
    two identical campaigns). The campaign runs twice in this process, the second time under clocks that run
    1,000 times faster and a year ahead (``time.perf_counter``, ``monotonic`` and ``time``): a field that differs
    comes from a clock, whatever its name, and must be a timing field; every other field is identical."""
    spec = tmp_path / f"{kind}.toml"
    spec.write_text(_clocked()[kind])
    run_experiment(load_experiment(spec), tmp_path / "real", workers=1)
    for name in ("perf_counter", "monotonic", "time"):
        real = getattr(time, name)
        start = real()
        shift = 365 * 86400.0
        monkeypatch.setattr(
            time, name, lambda real=real, start=start, shift=shift: start + shift + (real() - start) * 1e3
        )
    run_experiment(load_experiment(spec), tmp_path / "fast", workers=1)
    monkeypatch.undo()
    a, b = (load_results(tmp_path / d).sort("id") for d in ("real", "fast"))
    assert a.columns == b.columns and a.height == b.height >= 1
    timings = set(open_experiment(tmp_path / "real").timing_fields)
    clocked = {c for c in a.columns if a[c].to_list() != b[c].to_list()}
    assert clocked - timings == set(), f"{kind}: fields measured by a clock but not timing fields"
    # and the other way: a timing field is a measure (or the worker's pid), never a result hidden from comparisons
    measured = {c for c in timings & set(a.columns) if c != "worker" and any(a[c].to_list())}
    assert measured <= clocked, f"{kind}: timing fields that no clock moved: {sorted(measured - clocked)}"


def test_every_kind_is_registered_and_files_without_kind_are_power_campaigns(tmp_path: Path) -> None:
    assert set(KINDS) == {"power", "queue", "dispatch", "eamc", "rmap"}
    old = tmp_path / "old.toml"
    old.write_text(POWER.replace('kind = "power"\n', ""))
    with pytest.warns(FutureWarning, match='write kind = "power"'):
        assert load_experiment(old).kind == "power"
    with pytest.raises(CampaignError, match="unknown campaign kind 'nope'"):
        parse_experiment({"kind": "nope"})
    with pytest.raises(CampaignError, match=r"policies: .*need a power check"):
        parse_experiment({"kind": "queue", "workloads": [{"name": "a", "path": "x"}], "policies": ["easy-pc"]})
    with pytest.raises(CampaignError, match=r"cab_data: .*unknown cab_data"):
        parse_experiment({"kind": "rmap", "cab_data": "measured"})


def test_every_registered_kind_resolves_to_its_experiment() -> None:
    for kind in KINDS:
        assert experiment_class(kind).kind == kind


def test_a_directory_holds_one_kind(tmp_path: Path) -> None:
    out = tmp_path / "c"
    run_experiment(parse_experiment({"kind": "rmap", "traces": ["small"], "bounds": [14000]}), out, workers=1)
    with pytest.raises(CampaignError, match="holds another campaign"):
        run_experiment(parse_experiment({"kind": "rmap", "traces": ["large"], "bounds": [14000]}), out)


def test_the_campaign_files_of_each_kind_in_the_docs_validate(tmp_path: Path) -> None:
    import re

    text = (REPO / "docs" / "campaigns.md").read_text()
    kinds = set()
    for k, block in enumerate(re.findall(r"```toml\n(.*?)```", text, re.S)):
        path = tmp_path / f"doc{k}.toml"
        path.write_text(block.replace("../shared/data", str(SHARED_DATA)))
        kinds.add(load_experiment(path).kind)
    assert kinds == set(KINDS)


def test_executor_options_that_mean_nothing_are_ignored_with_a_warning(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from wattsched.cli import app

    spec = _spec_file(tmp_path, "queue")
    args = ["campaign", "run", str(spec), "--output", str(tmp_path / "q"), "--workers", "1"]
    result = CliRunner().invoke(app, [*args, "--address", "tcp://127.0.0.1:1"])
    assert result.exit_code == 0, result.output
    assert "warning: --address is ignored: it names a Dask scheduler and the executor is local" in result.stderr
