"""`--policy module:Class` and `--policy file.py:Class`: Python policies from the command line."""

from __future__ import annotations

import textwrap

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.policies.loader import PolicyLoadError, load_policy

runner = CliRunner()

POLICY_SOURCE = textwrap.dedent(
    """
    class StrictFcfs:
        name = "my-fcfs"

        def schedule(self, view):
            free, chosen = view.free, []
            for pos in view.queue:
                if view.jobs.size[pos] > free:
                    break
                chosen.append(int(pos))
                free -= view.jobs.size[pos]
            return chosen


    class NeedsArgs:
        name = "needs-args"

        def __init__(self, depth):
            self.depth = depth

        def schedule(self, view):
            return []


    class NoSchedule:
        name = "no-schedule"


    NOT_CALLABLE = 42
    """
)


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("w") / "lublin.parquet"
    args = ["generate", "lublin", "--jobs", "300", "--machine-size", "32", "--seed", "5", "--output", str(path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def policy_file(tmp_path):
    path = tmp_path / "my_policies.py"
    path.write_text(POLICY_SOURCE)
    return path


def simulate(workload, policy: str, out) -> tuple[int, str]:
    result = runner.invoke(
        app, ["simulate", "--workload", str(workload), "--policy", policy, "--output", str(out), "--no-baseline"]
    )
    return result.exit_code, result.output


def test_file_policy_reproduces_the_builtin_fcfs(workload, policy_file, tmp_path) -> None:
    code, output = simulate(workload, f"{policy_file}:StrictFcfs", tmp_path / "py")
    assert code == 0, output
    code, output = simulate(workload, "fcfs", tmp_path / "builtin")
    assert code == 0, output
    mine = pl.read_parquet(tmp_path / "py" / "jobs.parquet").sort("job_id")
    builtin = pl.read_parquet(tmp_path / "builtin" / "jobs.parquet").sort("job_id")
    assert mine["start_time"].to_list() == builtin["start_time"].to_list()
    summary = (tmp_path / "py" / "summary.json").read_text()
    assert '"policy": "my-fcfs"' in summary


def test_module_policy_from_sys_path(workload, policy_file, tmp_path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(policy_file.parent))
    code, output = simulate(workload, "my_policies:StrictFcfs", tmp_path / "mod")
    assert code == 0, output
    assert pl.read_parquet(tmp_path / "mod" / "jobs.parquet").height == 300


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("no_such_module_xyz:Policy", "no module named 'no_such_module_xyz'"),
        ("{file}:Missing", "has no attribute 'Missing'"),
        ("{file}:NeedsArgs", "cannot be made without arguments"),
        ("{file}:NoSchedule", "is not a policy"),
        ("{file}:NOT_CALLABLE", "is a int, not a policy"),
        ("{dir}/absent.py:X", "no such file"),
        ("json:", "expected MODULE:CLASS"),
    ],
)
def test_clear_errors(workload, policy_file, tmp_path, reference: str, message: str) -> None:
    ref = reference.format(file=policy_file, dir=tmp_path)
    with pytest.raises(PolicyLoadError, match=message):
        load_policy(ref)
    code, output = simulate(workload, ref, tmp_path / "out")
    assert code == 2
    assert message in output and "Traceback" not in output
    assert len(output.strip().splitlines()) == 1, output


def test_a_module_that_fails_to_import_names_the_file(tmp_path) -> None:
    bad = tmp_path / "broken.py"
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(PolicyLoadError, match=r"importing .*broken.py failed: RuntimeError: boom"):
        load_policy(f"{bad}:X")


def test_an_instance_is_taken_as_is(policy_file) -> None:
    policy_file.write_text(POLICY_SOURCE + "\nINSTANCE = StrictFcfs()\n")
    policy = load_policy(f"{policy_file}:INSTANCE")
    assert policy.name == "my-fcfs"


def test_the_documented_example_policy_is_the_builtin_fcfs(workload) -> None:
    from pathlib import Path

    from wattsched.engine.simulate import simulate as run

    example = Path(__file__).resolve().parents[1] / "examples" / "strict_fcfs.py"
    policy = load_policy(f"{example}:StrictFcfs")
    jobs = pl.read_parquet(workload)
    mine = run(jobs, policy, 32).schedule.sort("job_id")
    builtin = run(jobs, "fcfs", 32).schedule.sort("job_id")
    assert mine["start_time"].to_list() == builtin["start_time"].to_list()
