"""A full disk during any write leaves the previous output intact and says so in one line (issue 31, item 1).

Each writing command runs once with room, which gives the "previous output"; then the small file system it writes
to (a tmpfs of a few MB, mounted for the test: root only, so the test fails under CI=true without it) is filled
to a few KB of free space and the same command runs again, with other settings so that its output would differ.
It must exit non-zero with one line naming the file and the cause (``error: no space left on device writing …``), leave
every file of the previous output byte for byte, and leave no temporary behind.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from wattsched.cli import app

runner = CliRunner()

DISK_BYTES = 24 * 1024 * 1024
#: What is left free when the second run starts: enough to open files and start writing, not to finish.
LEAVE_BYTES = 4096


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A small tmpfs mounted on ``tmp_path/disk`` for the test."""
    folder = tmp_path / "disk"
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(folder)], capture_output=True, text=True
    )
    if done.returncode != 0:
        message = f"cannot mount a small tmpfs (root needed): {done.stderr.strip()}"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message + " (CI=true requires it)")
        pytest.skip(message)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, leave: int = LEAVE_BYTES) -> None:
    """Fill ``folder``'s file system, then free ``leave`` bytes."""
    filler = folder / "filler"
    chunk = b"\0" * (256 * 1024)
    with open(filler, "wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(chunk)
        for size in (4096, 1):  # the last pages
            with contextlib.suppress(OSError):
                while True:
                    f.write(chunk[:size])
    with pytest.raises(OSError) as full, open(folder / "probe", "wb", buffering=0) as probe:
        probe.write(b"x" * 8192)
    assert full.value.errno == errno.ENOSPC
    (folder / "probe").unlink(missing_ok=True)
    os.truncate(filler, max(filler.stat().st_size - leave, 0))


def snapshot(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` (or ``path`` itself) with its bytes."""
    if path.is_file():
        return {path.name: path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def temporaries(folder: Path) -> list[str]:
    return [str(p) for p in folder.rglob("*") if re.search(r"\.tmp(\.|$)", p.name)]


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@dataclass
class Case:
    """A writing command: ``prepare`` makes its inputs (on the normal disk) and returns the arguments of the first
    run and of the second (which would change the output), and the output to compare."""

    name: str
    prepare: Callable[[Path, Path], tuple[list[str], list[str], Path]]
    #: the one line expected: the write's failure, or a refusal before writing when the command knows its size
    error: str = r"error: no space left on device writing \S+; (the previous \S+ is unchanged|\S+ was not written)"


def _swf(tmp: Path, jobs: int = 3000) -> Path:
    path = tmp / "w.swf"
    if not path.exists():
        invoke("generate", "lublin", "--jobs", str(jobs), "--machine-size", "128", "--seed", "1", "--output", str(path))
    return path


def _simulate(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    out = disk / "run"
    base = ["simulate", "--workload", str(_swf(tmp)), "--output", str(out)]
    return [*base, "--policy", "fcfs"], [*base, "--policy", "easy"], out


def _convert(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    out = disk / "w.csv"
    first = ["data", "convert", "--workload", str(_swf(tmp, 1000)), "--output", str(out)]
    return first, ["data", "convert", "--workload", str(_swf(tmp, 1000)), "--output", str(out)], out


def _generate(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    out = disk / "g.swf"
    base = ["generate", "lublin", "--jobs", "4000", "--machine-size", "128", "--output", str(out)]
    return [*base, "--seed", "1"], [*base, "--seed", "2"], out


def _predict(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    out = disk / "pred.csv"
    base = ["predict", "runtime", "--workload", str(_swf(tmp)), "--output", str(out), "--completion", "no-wait"]
    return base, base, out


QUEUE_SPEC = """
kind = "queue"
name = "small"
policies = ["fcfs", "easy"]
seeds = [0, 1]

[[workloads]]
name = "lublin"
generate = { model = "lublin", jobs = 3000, machine_size = 128, seed = 0 }
windows = { count = 3, hours = 48, seed = 0 }
"""


def _campaign(tmp: Path) -> Path:
    out = tmp / "campaign"
    if not out.exists():
        spec = tmp / "queue.toml"
        spec.write_text(QUEUE_SPEC)
        invoke("campaign", "run", str(spec), "--output", str(out), "--workers", "1")
    return out


def _results(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    out = disk / "r.csv"
    base = ["campaign", "results", str(_campaign(tmp)), "--output", str(out)]
    return base, base, out


def _report(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    campaign = disk / "campaign"
    subprocess.run(["cp", "-a", str(_campaign(tmp)), str(campaign)], check=True)
    base = ["campaign", "report", str(campaign)]
    return base, [*base, "--html"], campaign


def _run_report(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    run = disk / "run"
    invoke("simulate", "--workload", str(_swf(tmp)), "--policy", "easy", "--output", str(run))
    return ["report", str(run)], ["report", str(run), "--from", "3600"], run


def _dataset(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    tel = tmp / "tel"
    if not tel.exists():
        invoke("generate", "telemetry", "--output", str(tel), "--jobs", "200", "--nodes", "24", "--days", "1")
    out = disk / "ds.parquet"
    base = ["dataset", "build", "--job-table", str(tel / "jobs.parquet"), "--telemetry", str(tel / "telemetry")]
    return [*base, "--output", str(out)], [*base, "--output", str(out), "--workers", "1"], out


def _telemetry(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    out = disk / "tel"
    base = ["generate", "telemetry", "--output", str(out), "--jobs", "100", "--nodes", "16", "--days", "0.5"]
    return [*base, "--seed", "1"], [*base, "--seed", "2"], out


def _eamc(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    out = disk / "eamc"
    base = ["eamc", "run", "--mix", "W33", "--output", str(out)]
    return [*base, "--policy", "eamc-priorityinc-v"], [*base, "--policy", "eamc-priorityinc-v", "--seed", "3"], out


def _rmap(tmp: Path, disk: Path) -> tuple[list[str], list[str], Path]:
    out = disk / "rmap"
    return ["rmap", "grid", "--output", str(out)], ["rmap", "grid", "--output", str(out)], out


CASES = [
    Case("simulate", _simulate),
    Case("data convert", _convert),
    Case("generate lublin", _generate),
    Case("predict runtime", _predict),
    Case("campaign results", _results),
    Case("campaign report", _report),
    Case("report", _run_report),
    Case("dataset build", _dataset),
    Case("generate telemetry", _telemetry, r"error: --days = .* needs about .* more than the .* of disk free"),
    Case("eamc run", _eamc),
    Case("rmap grid", _rmap),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_full_disk_leaves_the_previous_output_and_says_so_in_one_line(case: Case, tmp_path: Path, disk: Path):
    first, second, output = case.prepare(tmp_path, disk)
    invoke(*first)
    before = snapshot(output)
    assert before, f"{case.name}: the first run wrote nothing in {output}"
    fill(disk)
    result = runner.invoke(app, second)
    assert result.exit_code in (1, 2), result.output  # 2: a command that reports its own errors as usage
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert re.match(case.error, errors[0]), errors[0]
    assert snapshot(output) == before, f"{case.name}: the previous output changed"
    assert temporaries(disk) == [], f"{case.name}: temporaries left"


def test_a_campaign_stopped_by_a_full_disk_resumes_to_the_same_result_set(tmp_path: Path, disk: Path) -> None:
    """A campaign runs out of room while preparing or running: one line, the runs already done are complete
    files, and once there is room the same command finishes with the result set of a run that had room."""
    from wattsched.campaign.runner import TIMING_FIELDS, load_results

    reference = _campaign(tmp_path)
    spec = tmp_path / "queue.toml"
    out = disk / "campaign"
    fill(disk, leave=96 * 1024)
    result = runner.invoke(app, ["campaign", "run", str(spec), "--output", str(out), "--workers", "1"])
    assert result.exit_code != 0, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert re.match(r"error: no space left on device writing \S+", errors[0]), errors[0]
    for done in (out / "results").glob("*.json"):
        json.loads(done.read_text())  # a done marker is whole
    (disk / "filler").unlink()
    invoke("campaign", "run", str(spec), "--output", str(out), "--workers", "1")
    assert (
        load_results(out).drop(TIMING_FIELDS).sort("id").equals(load_results(reference).drop(TIMING_FIELDS).sort("id"))
    )
    assert temporaries(disk) == []
