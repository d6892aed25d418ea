"""The testbed's synthetic power: what each node draws, written where Slurm's ``acct_gather_energy/pm_counters``
reads it, so that Slurm itself accounts the power (``scontrol show node`` CurrentWatts, ``sstat``, ``sacct``
ConsumedEnergy).

The test convention for a job's true power is its comment: ``testpower=<watts per node>`` (e.g.
``sbatch --comment testpower=250``), the power a node draws above idle while the job runs on it. A job without it
draws :data:`DEFAULT_TEST_POWER` above idle. A node's power is ``idle + test power``, capped at the testbed's
``--max-watts``; a node without a job draws idle. Every second the daemon reads the running jobs (``squeue
--json``), writes each node's power and the energy integrated since ``up`` (integer joules), and appends one line
to ``power.jsonl`` in the base folder: ``{"t": epoch, "total_w": cluster watts, "nodes": {node: watts}, "jobs":
{job id: [nodes]}}``. The advisor must never read the comment: it is the hidden truth the tests check against.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import hostlist

from wattsched.core.structured_input import load_json
from wattsched.testbed.config import TestbedState

#: Watts above idle per node for a job whose comment has no ``testpower=``.
DEFAULT_TEST_POWER = 100

#: The sampling period in seconds (Slurm reads the counters every AcctGatherNodeFreq=1 s).
#: Seconds between two looks at the running jobs. A quarter second: a job's first and last instants are then at
#: most 0.25 s at the wrong power, so its energy in sacct is within ~3 % of its test power for jobs of 8 s and
#: more (at 1 s, a 6-s job's mean power read 10-15 % low, and predictions learned from it were that far under the
#: truth). One `squeue --json` takes ~6 ms.
PERIOD_S = 0.25

_TESTPOWER = re.compile(r"(?:^|[\s,;])testpower=(\d+(?:\.\d+)?)")


def job_test_power(comment: str | None) -> float:
    """A job's per-node power above idle from its comment (the test convention), or the default."""
    match = _TESTPOWER.search(comment or "")
    return float(match.group(1)) if match else float(DEFAULT_TEST_POWER)


def running_jobs(answer: dict[str, Any]) -> dict[int, tuple[list[str], float]]:
    """Running jobs of an ``squeue --json`` answer: job id -> (its nodes, its per-node test power)."""
    jobs: dict[int, tuple[list[str], float]] = {}
    for job in answer.get("jobs", []):
        if job.get("job_state") != "RUNNING" or not job.get("nodes"):
            continue
        jobs[int(job["job_id"])] = (hostlist.expand_hostlist(job["nodes"]), job_test_power(job.get("comment")))
    return jobs


def start_times(answer: dict[str, Any]) -> dict[int, float]:
    """Running jobs' start times (epoch seconds) of an ``squeue --json`` answer."""
    out: dict[int, float] = {}
    for job in answer.get("jobs", []):
        start = job.get("start_time")
        if job.get("job_state") == "RUNNING" and isinstance(start, int | float) and start > 0:
            out[int(job["job_id"])] = float(start)
    return out


def node_watts(state: TestbedState, jobs: dict[int, tuple[list[str], float]]) -> dict[str, float]:
    """Each node's power: idle, plus the test power of the job on it (nodes are exclusive), at most max."""
    watts = {node: float(state.idle_watts) for node in state.nodes}
    for nodes, power in jobs.values():
        for node in nodes:
            if node in watts:
                watts[node] = min(float(state.max_watts), watts[node] + power)
    return watts


def run(base: Path) -> None:
    """The daemon's loop: sample, write the counters, log; until killed. A failed squeue keeps the last jobs (the
    nodes keep drawing what they drew) and is logged on stderr."""
    from wattsched.testbed.services import read_energy, write_counters  # the one place of the file format

    state = TestbedState.load(base)
    if state is None:
        sys.exit(f"power daemon: no {base}/testbed.json")
    env = state.env()
    counters = Path(state.counters)
    energy = {node: float(read_energy(counters, node)) for node in state.nodes}  # a restart continues
    jobs: dict[int, tuple[list[str], float]] = {}
    drawn = node_watts(state, jobs)  # what each node drew since ``last``
    starts: dict[int, float] = {}
    seen: set[int] = set()  # the jobs running at the previous look
    last = time.time()
    with open(state.power_log, "a", buffering=1) as log:
        while True:
            try:
                done = subprocess.run(["squeue", "--json"], capture_output=True, text=True, env=env, timeout=10)
                if done.returncode == 0:
                    answer = load_json(done.stdout, "squeue --json")  # too deep: a ValueError
                    jobs, starts = running_jobs(answer), start_times(answer)
                else:
                    print(f"squeue --json failed: {done.stderr.strip()}", file=sys.stderr, flush=True)
            except (subprocess.TimeoutExpired, ValueError) as exc:
                print(f"squeue --json: {exc}", file=sys.stderr, flush=True)
            now = time.time()
            for node, w in drawn.items():  # the interval just ended, at the power drawn during it
                energy[node] += w * (now - last)
            watts = node_watts(state, jobs)
            # A job seen for the first time has drawn its power since it started, not since now: slurmd read the
            # energy counter at its start, so the job's energy in sacct is exact only if the counter catches up.
            # Without this, the daemon's lag (a quarter second, several under load) was missing from every job:
            # a 10-s job of 350 W read 290 W on a loaded 2-core machine.
            for job in set(jobs) - seen:
                if job not in starts:
                    continue
                since = min(max(now - starts[job] - 0.5, 0.0), 30.0)  # squeue's whole seconds: the midpoint
                for node in jobs[job][0]:
                    if node in watts:
                        energy[node] += since * (watts[node] - drawn.get(node, watts[node]))
            seen = set(jobs)
            for node, w in watts.items():
                write_counters(counters, node, round(w), int(energy[node]))
            drawn, last = watts, now
            line = {"t": round(now, 3), "total_w": round(sum(watts.values()), 1), "nodes": watts,
                    "jobs": {str(j): nodes for j, (nodes, _) in jobs.items()}}  # fmt: skip
            log.write(json.dumps(line) + "\n")
            time.sleep(max(0.0, PERIOD_S - (time.time() - now)))


def read_power_log(path: Path) -> list[dict[str, Any]]:
    """The lines of a power log (a last line cut by a crash is left out)."""
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(load_json(line, path))  # too deep: a ValueError, left out as a cut line
        except ValueError:
            continue
    return rows


if __name__ == "__main__":
    run(Path(sys.argv[1]))
