"""The predictor registry: every name builds an online predictor of its kind, the callers read their choices from
it, the docs list it, and predictors keep learned state in trailing-underscore attributes set by ``bind``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import wattsched
from wattsched.cli.root_app import app
from wattsched.core.predictor import OnlinePredictor
from wattsched.predict.online import completion_times, predict_online
from wattsched.predict.power_ml import METHODS, ML_MODELS
from wattsched.predict.registry import (
    POWER_PREDICTORS,
    PREDICTORS,
    RUNTIME_PREDICTORS,
    make_power_predictor,
    make_predictor,
    make_runtime_predictor,
    predictor_entry,
)
from wattsched.workload.generate import generate_m100like

DOCS = Path(__file__).parent.parent / "docs" / "prediction.md"


@pytest.fixture(scope="module")
def jobs():
    read = generate_m100like(300, seed=3, span_days=10.0)
    jobs = read.jobs.sort(["submit_time", "job_id"], maintain_order=True)
    completion, _ = completion_times(jobs, "no-wait")
    return jobs, completion


def test_kinds_and_names() -> None:
    assert set(POWER_PREDICTORS) | set(RUNTIME_PREDICTORS) == set(PREDICTORS)
    assert {"global-mean", "history", *ML_MODELS} == set(POWER_PREDICTORS) == set(METHODS)
    assert {"walltime", "oracle", "last2", "rules"} == set(RUNTIME_PREDICTORS)
    assert {n for n, e in PREDICTORS.items() if e.needs_sklearn} == set(ML_MODELS)
    assert all(e.description and e.name == n for n, e in PREDICTORS.items())


@pytest.mark.parametrize("name", list(PREDICTORS))
def test_every_name_builds_an_online_predictor_with_state_after_bind(name: str, jobs) -> None:
    table, completion = jobs
    p = make_predictor(name)
    assert isinstance(p, OnlinePredictor) and p.name == name
    output = "pred_power_mean" if PREDICTORS[name].kind == "power" else "pred_runtime"
    assert output in p.outputs
    assert not [a for a in vars(p) if a.endswith("_") and not a.startswith("_")], "learned state before bind"
    p.bind(table)
    assert [a for a in vars(p) if a.endswith("_") and not a.startswith("_")], "no learned state after bind"
    if not PREDICTORS[name].needs_sklearn:  # the ML models' weekly fits are tested in test_predict_power_ml
        out = predict_online(make_predictor(name), table, completion, use_sweep=False)
        assert out.columns == list(p.outputs) and out.height == table.height
        assert np.isfinite(out[output].to_numpy()).all()


def test_kind_specific_factories_and_errors() -> None:
    assert make_power_predictor("global-mean").name == "global-mean"
    assert make_runtime_predictor("rules", min_prefix=2).min_prefix == 2
    with pytest.raises(ValueError, match="unknown power prediction method 'rules'"):
        make_power_predictor("rules")
    with pytest.raises(ValueError, match="unknown runtime predictor 'history'; choose from walltime"):
        make_runtime_predictor("history")
    with pytest.raises(ValueError, match="unknown predictor 'nope'"):
        predictor_entry("nope")
    with pytest.raises(ValueError, match="takes no options"):
        make_power_predictor("history", cv=3)


def test_registry_loads_no_predictor_and_baselines_no_sklearn() -> None:
    code = (
        "import sys\n"
        "from wattsched.predict.registry import make_predictor\n"
        "heavy = ('sklearn', 'wattsched.predict.power_history', 'wattsched.predict.runtime', 'wattsched.engine')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
        "for name in ('history', 'global-mean', 'walltime', 'oracle', 'last2', 'rules'):\n"
        "    make_predictor(name)\n"
        "print('sklearn' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(wattsched.__file__).parent.parent)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "False"]


def test_docs_and_cli_list_the_registry() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for e in PREDICTORS.values():
        row = f"| `{e.name}` | {e.kind} | {'yes' if e.needs_sklearn else 'no'} | {e.description} |"
        assert row in text, row
    result = CliRunner().invoke(app, ["predict", "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert all(name in result.output for name in PREDICTORS)
