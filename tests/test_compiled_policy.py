"""Compiled Python policies (``schedule_into(view, out)``, engine/compiled_pass.py): the built-ins' schedules on
real traces and random workloads, the same view as a Python policy's (differential against the same function run
in Python), the information boundary, and every way a compiled pass can fail named in one line."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import require_data
from test_engine_properties import MACHINE, PROFILE, workloads
from test_power_engine import Cap, power_workloads
from wattsched.core.policy import CompiledPolicyBase, JobAttributes, View, is_compiled_policy
from wattsched.engine.compiled_pass import CompiledJobs, CompiledView, PolicyCompileError
from wattsched.engine.simulate import OnlineEstimates, SimulationError, simulate
from wattsched.policies.loader import load_policy
from wattsched.policies.powercheck import PowerCheck
from wattsched.workload.load import load_workload

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "examples"))
from easy_compiled import CompiledEasy  # noqa: E402


class CompiledFcfs(CompiledPolicyBase):
    name = "compiled-fcfs"

    @staticmethod
    def schedule_into(view, out):  # type: ignore[no-untyped-def]
        free, k = view.free, 0
        for pos in view.queue:
            if view.jobs.size[pos] > free:
                break
            out[k] = pos
            k += 1
            free -= view.jobs.size[pos]
        return k


class CapAware(CompiledPolicyBase):
    """Reads every field of the view: starts, in queue order, the jobs whose mean estimate fits under the cap and
    whose walltime ends before the latest expected end among the running jobs plus a margin, preferring users with
    an even id; every other field is folded into the order so that a wrong value changes the schedule."""

    name = "cap-aware"

    @staticmethod
    def schedule_into(view, out):  # type: ignore[no-untyped-def]
        jobs, free, k = view.jobs, view.free, 0
        power = view.power_sums[0] + 0.0 * view.power_sums[1] + 0.0 * view.power_sums[2]
        horizon = view.now + 50.0
        for r in range(view.running.shape[0]):
            horizon = max(horizon, view.running_expected_end[r], view.running_start[r] + jobs.walltime[view.running[r]])
        late = view.finished.shape[0] > 2 or view.machine_size < 4
        for parity in range(2):
            for pos in view.queue:
                if jobs.user_id[pos] % 2 != parity or jobs.size[pos] > free:
                    continue
                if jobs.job_id[pos] < 0 or jobs.submit_time[pos] > view.now:
                    continue
                fits = power + jobs.est_dyn_mean[pos] + 0.01 * jobs.est_dyn_std[pos] <= view.cap
                soon = view.now + jobs.estimate[pos] <= horizon or late or jobs.est_dyn_max[pos] < 50.0
                if fits and (soon or view.running.shape[0] == 0):
                    out[k] = pos
                    k += 1
                    free -= jobs.size[pos]
                    power += jobs.est_dyn_mean[pos]
        return k


def starts(jobs, policy, machine=MACHINE, **kw) -> np.ndarray:  # type: ignore[no-untyped-def]
    return simulate(jobs, policy, machine, **kw).schedule.sort("job_id")["start_time"].to_numpy()


@pytest.mark.parametrize(("trace", "limit"), [("swf/KTH-SP2/log.swf", None), ("swf/RICC-2010-2.swf.gz", 30_000)])
def test_compiled_policies_schedule_as_the_built_ins_on_real_traces(trace: str, limit: int | None) -> None:
    read = load_workload(require_data(trace))
    jobs = read.jobs if limit is None else read.jobs.sort("submit_time").head(limit)
    size = read.provenance.machine_size
    np.testing.assert_array_equal(starts(jobs, CompiledFcfs(), size), starts(jobs, "fcfs", size))
    np.testing.assert_array_equal(starts(jobs, CompiledEasy(), size), starts(jobs, "easy", size))


@PROFILE
@given(workloads(with_estimates=True))
def test_compiled_policies_reproduce_the_builtins(jobs: pl.DataFrame) -> None:
    np.testing.assert_array_equal(starts(jobs, CompiledFcfs()), starts(jobs, "fcfs"))
    np.testing.assert_array_equal(starts(jobs, CompiledEasy()), starts(jobs, "easy"))
    np.testing.assert_array_equal(
        starts(jobs, CompiledEasy(), runtime_estimate="pred"), starts(jobs, "easy", runtime_estimate="pred")
    )


@PROFILE
@given(power_workloads(max_jobs=25), st.integers(0, 3))
def test_the_compiled_view_is_the_python_view(jobs: pl.DataFrame, seed: int) -> None:
    """The same function compiled and run in Python on ``View``: every field of the view, a cap schedule and the
    power sums included, gives the same decisions."""
    rng = np.random.default_rng(seed)
    jobs = jobs.with_columns(pl.Series("user_id", rng.integers(0, 4, jobs.height)))
    cap = Cap([0.0, 10.0, 25.0], [700.0, 300.0, 1e9])
    kw = {"power_check": PowerCheck.named("mean"), "cap": cap}
    compiled = starts(jobs, CapAware(), 8, **kw)
    np.testing.assert_array_equal(compiled, starts(jobs, CapAware(), 8, compiled=False, **kw))


class _Spy:
    name = "spy"
    outputs = ("pred_runtime",)

    def bind(self, jobs: pl.DataFrame) -> None:
        self.n = jobs.height

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        pass

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        return {"pred_runtime": 1.0 + (rows % 7) * 3.0}


def test_online_estimates_reach_a_compiled_policy() -> None:
    """An online predictor writes the estimates at each submission, between the loop's calls: the compiled policy
    sees them (the estimate arrays are live, not copies)."""
    rng = np.random.default_rng(3)
    n = 400
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(n),
            "submit_time": np.sort(rng.integers(0, 3000, n)).astype(float),
            "size": rng.integers(1, 9, n),
            "walltime": np.full(n, 30.0),
            "runtime": rng.integers(1, 30, n).astype(float),
        }
    )
    for policy in (CompiledEasy(), CompiledFcfs()):
        got = starts(jobs, policy, 16, online=OnlineEstimates(_Spy(), runtime="pred_runtime"))
        want = starts(jobs, policy, 16, compiled=False, online=OnlineEstimates(_Spy(), runtime="pred_runtime"))
        np.testing.assert_array_equal(got, want)
    builtin = starts(jobs, "easy", 16, online=OnlineEstimates(_Spy(), runtime="pred_runtime"))
    compiled = starts(jobs, CompiledEasy(), 16, online=OnlineEstimates(_Spy(), runtime="pred_runtime"))
    np.testing.assert_array_equal(compiled, builtin)


def test_the_compiled_view_has_the_python_views_fields_and_no_true_runtime() -> None:
    assert CompiledJobs._fields == tuple(f.name for f in dataclasses.fields(JobAttributes))
    assert CompiledView._fields == tuple(f.name for f in dataclasses.fields(View))
    assert not any("runtime" in name for name in CompiledJobs._fields + CompiledView._fields)

    class Peek(CompiledPolicyBase):
        name = "peek"

        @staticmethod
        def schedule_into(view, out):  # type: ignore[no-untyped-def]
            return int(view.jobs.runtime[0] > 0)

    with pytest.raises(PolicyCompileError, match=r"policy 'peek': schedule_into\(view, out\) cannot be compiled"):
        simulate(_two_jobs(), Peek(), MACHINE)


def test_the_policy_writes_only_its_own_copies() -> None:
    """A policy writing into the job sizes cannot make the loop start a job that does not fit."""

    class Shrink(CompiledPolicyBase):
        name = "shrink"

        @staticmethod
        def schedule_into(view, out):  # type: ignore[no-untyped-def]
            k = 0
            for pos in view.queue:
                view.jobs.size[pos] = 1
                out[k] = pos
                k += 1
            return k

    with pytest.raises(SimulationError, match="start job 2, refused: the job does not fit"):
        simulate(_two_jobs(), Shrink(), MACHINE)


def _two_jobs() -> pl.DataFrame:
    return pl.DataFrame(
        {"job_id": [1, 2], "submit_time": [0.0, 0.0], "size": [6, 6], "walltime": [10.0, 10.0], "runtime": [3.0, 3.0]}
    )


def _policy(body):  # type: ignore[no-untyped-def]
    return type("Bad", (CompiledPolicyBase,), {"name": "bad", "schedule_into": staticmethod(body)})()


def _out_of_range(view, out):  # type: ignore[no-untyped-def]
    return view.queue[view.queue.shape[0] + 5]


def _too_many(view, out):  # type: ignore[no-untyped-def]
    return view.queue.shape[0] + 1


def _negative(view, out):  # type: ignore[no-untyped-def]
    return -3


def _not_queued(view, out):  # type: ignore[no-untyped-def]
    out[0] = 99
    return 1


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (_out_of_range, r"policy 'bad' raised an error in schedule_into at t = 0 .*compiled=False"),
        (_too_many, r"policy 'bad': schedule_into returned 3 at t = 0, not a count"),
        (_negative, r"policy 'bad': schedule_into returned -3 at t = 0"),
        (_not_queued, r"policy 'bad' tried to start job 99, refused: the job is not in the queue"),
    ],
)
def test_a_failing_compiled_pass_is_one_line_naming_the_policy(body, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SimulationError, match=message):
        simulate(_two_jobs(), _policy(body), MACHINE)


def test_a_method_taking_self_is_refused_with_the_fix() -> None:
    class Method(CompiledPolicyBase):
        name = "method"

        def schedule_into(self, view, out):  # type: ignore[no-untyped-def,override]
            return 0

    with pytest.raises(SimulationError, match=r"schedule_into must be a @staticmethod taking \(view, out\)"):
        simulate(_two_jobs(), Method(), MACHINE)


def test_the_python_fallback_and_the_loader() -> None:
    assert is_compiled_policy(CompiledEasy()) and not is_compiled_policy(CompiledPolicyBase())
    jobs = _two_jobs()
    np.testing.assert_array_equal(starts(jobs, CompiledFcfs(), compiled=False), starts(jobs, "fcfs"))
    policy = load_policy(f"{REPO / 'examples' / 'easy_compiled.py'}:CompiledEasy")
    assert is_compiled_policy(policy) and policy.name == "compiled-easy"

    class OnlyCompiled:  # no schedule(view), no base class: still a policy, compiled
        name = "only-compiled"
        schedule_into = staticmethod(CompiledFcfs.schedule_into)

    np.testing.assert_array_equal(starts(jobs, OnlyCompiled()), starts(jobs, "fcfs"))
    with pytest.raises(SimulationError, match="schedule"):
        simulate(jobs, OnlyCompiled(), MACHINE, compiled=False)


def test_a_function_numba_cannot_type_is_one_line() -> None:
    def returns_a_list(view, out):  # type: ignore[no-untyped-def]
        return [pos for pos in view.queue if view.free > 0 and object() is not None]

    with pytest.raises(PolicyCompileError) as info:
        simulate(_two_jobs(), _policy(returns_a_list), MACHINE)
    assert "\n" not in str(info.value) and "cannot be compiled" in str(info.value)


def test_a_policy_file_run_from_the_command_line_then_imported_from_python(tmp_path: Path) -> None:
    """The same file is module ``wattsched_user_policy_fcfs_c`` under ``--policy`` and ``fcfs_c`` when imported:
    a compiled policy cached on disk under one name failed to load under the other (ModuleNotFoundError)."""
    (tmp_path / "fcfs_c.py").write_text(
        "from wattsched.core.policy import CompiledPolicyBase\n\n\n"
        "class C(CompiledPolicyBase):\n"
        '    name = "c"\n\n'
        "    @staticmethod\n"
        "    def schedule_into(view, out):\n"
        "        free, k = view.free, 0\n"
        "        for pos in view.queue:\n"
        "            if view.jobs.size[pos] > free:\n"
        "                break\n"
        "            out[k] = pos\n"
        "            k += 1\n"
        "            free -= view.jobs.size[pos]\n"
        "        return k\n"
    )
    _two_jobs().write_csv(tmp_path / "w.csv")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(tmp_path)])}
    cli = [sys.executable, "-m", "wattsched", "simulate", "--workload", "w.csv", "--machine-size", "8"]
    cli += ["--policy", "fcfs_c.py:C", "--output", "out"]
    done = subprocess.run(cli, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    script = (
        "import polars as pl, fcfs_c; from wattsched import simulate; simulate(pl.read_csv('w.csv'), fcfs_c.C(), 8)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
