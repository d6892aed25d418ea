"""``wattsched.api.advise`` and ``wattsched.api.testbed`` called from Python, without Slurm: what ``wattsched
advise`` and ``wattsched testbed`` do, with the same defaults and the same one-line errors (issue 29)."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import wattsched
from wattsched.advise.lock import AdvisorLock
from wattsched.api import advise as api_advise
from wattsched.api import testbed as api_testbed
from wattsched.api.advise import (
    AdviseError,
    AdvisorConfigError,
    StatusError,
    advise_config,
    advise_replay,
    advise_run,
    advise_status,
)
from wattsched.api.testbed import NoTestbedError
from wattsched.cli import advise as cli_advise
from wattsched.cli import testbed as cli_testbed


# ------------------------------------------------------------------------------------------------------- testbed
# (the api's testbed_* and Testbed* names are reached through the module: pytest would collect them as tests)
@pytest.mark.parametrize("command", ["testbed_status", "testbed_down"])
def test_no_testbed_in_an_empty_folder_is_one_line_naming_it(command: str, tmp_path: Path) -> None:
    with pytest.raises(NoTestbedError) as caught:
        getattr(api_testbed, command)(tmp_path)
    assert str(caught.value) == f"{tmp_path}: no testbed here (no testbed.json)"
    assert isinstance(caught.value, FileNotFoundError)  # what is missing is the state file
    assert not list(tmp_path.iterdir())  # nothing was written


def test_a_running_testbeds_differing_options_are_named() -> None:
    state = api_testbed.TestbedState(
        base="/x", slurm_conf="/x/slurm.conf", nodes=["n1", "n2"], idle_watts=100, max_watts=500,
        license_name="power", license_total=1000, remote_license=False, ports={},
    )  # fmt: skip
    same = api_testbed.TestbedOptions(base=Path("/x"), nodes=2, max_watts=500)
    assert api_testbed._differences(same, state) == []  # the default license is nodes x max-watts = 1000, as running
    other = api_testbed.TestbedOptions(base=Path("/x"), nodes=4, max_watts=500, rest=True)
    assert api_testbed._differences(other, state) == ["--nodes 4", "--license-total 2000", "--rest True"]


def test_the_testbed_functions_have_the_commands_defaults() -> None:
    """One source of defaults: each api function's keywords default to what its command's options do."""
    assert cli_testbed.DEFAULT_DIR == api_testbed.DEFAULT_DIR
    pairs = [
        (cli_testbed.up, api_testbed.testbed_up),
        (cli_testbed.down, api_testbed.testbed_down),
        (cli_testbed.status, api_testbed.testbed_status),
    ]
    for command, function in pairs:
        options = inspect.signature(command).parameters
        params = inspect.signature(function).parameters
        assert set(options) == set(params), function.__name__
        for name, param in params.items():
            assert param.default == options[name].default, (function.__name__, name)


def test_the_reexported_types_resolve_lazily() -> None:
    from wattsched.testbed import procs

    assert api_testbed.TestbedError is procs.TestbedError
    code = (
        "import sys, wattsched.api.testbed, wattsched.api.advise\n"
        "print('psutil' in sys.modules, 'polars' in sys.modules)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(wattsched.__file__).parent.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == ["False", "False"]
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = api_testbed.Nothing  # type: ignore[attr-defined]  # the point: a name not exported


# -------------------------------------------------------------------------------------------------------- advise
def test_advise_config_takes_the_commands_options(tmp_path: Path) -> None:
    cfg = advise_config(cap="1.5kW", mode="shadow", interval=5, state=tmp_path / "s.sqlite", backend="rest", url="u")
    assert cfg.cap.at(0.0) == 1500.0 and cfg.mode == "shadow" and cfg.interval == 5.0
    assert cfg.state == tmp_path / "s.sqlite" and cfg.backend.kind == "rest" and cfg.backend.url == "u"
    assert advise_config(cap=1000).mode == "licenses"  # options not given keep the defaults
    with pytest.raises(AdvisorConfigError, match="key 'cap': missing; give --cap WATTS"):
        advise_config()
    with pytest.raises(AdvisorConfigError, match="key 'interval'"):
        advise_config(cap=1000, interval=-1)


def test_the_advise_config_options_are_the_commands() -> None:
    options = set(inspect.signature(cli_advise.advise).parameters)
    params = set(inspect.signature(advise_config).parameters)
    assert params <= options, params - options


def test_replay_of_a_missing_history_is_refused_before_reading(tmp_path: Path) -> None:
    missing = tmp_path / "sacct.json"
    with pytest.raises(AdviseError, match=r"sacct.json: no such file \(a recorded `sacct --json`"):
        advise_replay(missing, advise_config(cap=1000))


def test_status_needs_a_file_and_reads_it(tmp_path: Path) -> None:
    with pytest.raises(AdviseError, match="give --status-file FILE"):
        advise_status()
    with pytest.raises(StatusError, match="no status file"):
        advise_status(tmp_path / "status.json")
    (tmp_path / "status.json").write_text(json.dumps({"role": "active", "cycle": 7, "pid": 1, "jobs": []}))
    config = tmp_path / "advisor.toml"
    config.write_text('status_file = "status.json"\n')  # relative to the file; no cap: not needed to find it
    current = advise_status(config=config)
    assert current.path == tmp_path / "status.json" and current.data["cycle"] == 7 and current.jobs() == []


def test_a_planted_actions_log_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("kept\n")
    log = tmp_path / "s-actions.jsonl"
    log.symlink_to(victim)  # shadow mode's default actions log, planted
    cfg = advise_config(cap=1000, mode="shadow", state=tmp_path / "s.sqlite")
    with pytest.raises(AdviseError, match=r"s-actions\.jsonl: the actions log is a symbolic link: refused"):
        advise_run(cfg, once=True, env={})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s-actions.jsonl", "victim.txt"]  # no lock, no store
    assert victim.read_text() == "kept\n"


def test_once_beside_the_active_advisor_is_refused_and_a_standby_waits(tmp_path: Path) -> None:
    state = tmp_path / "s.sqlite"
    cfg = advise_config(cap=1000, state=state)
    with AdvisorLock(state) as active:
        assert active.try_acquire()
        with pytest.raises(AdviseError, match=r"held by the active advisor, pid \d+ .*--once acts only"):
            advise_run(cfg, once=True, env={})
        lines: list[str] = []
        run = advise_run(cfg, sleep=lambda seconds: True, env={}, on_standby=lines.append)  # stops at once
    assert lines == [f"standby: {state} is held by pid {os.getpid()}; taking over when it stops"]
    assert (run.role, run.cycles, run.interrupted, run.cycle) == ("standby", 0, False, None)
    assert run.summary() == {"cycles": 0, "state": str(state), "mode": "licenses", "role": "standby"}
    assert not state.exists()  # a standby never opens the store


def test_the_lazy_names_are_the_toolkits() -> None:
    from wattsched.advise.config import AdvisorConfig
    from wattsched.advise.loop import CycleResult

    assert api_advise.AdvisorConfig is AdvisorConfig and api_advise.CycleResult is CycleResult
    assert set(api_advise.__all__) <= set(dir(api_advise)) | set(api_advise._LAZY)
