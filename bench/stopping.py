"""Benchmark: how fast a command stops, and the node allocation behind `simulate --format evalys` (issue 16).

- Stop latency: `wattsched simulate` of conservative backfilling on the full RICC trace (about 20 s inside
  compiled calls since issue 18; minutes before), SIGTERM after `--after` seconds; the time from the signal to
  the process's exit, its exit code and its one line (before issue 16: 370 s, the kernel ran no Python handler
  until it returned).
- Node allocation: `allocate_nodes` on EASY schedules of KTH-SP2, the CEA-Curie sample and RICC.
The figures are in docs/performance.md ("The first hour of a new user").

    .venv/bin/python bench/stopping.py [--after 8]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WATTSCHED = Path(sys.executable).with_name("wattsched")
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TRACES = {
    "KTH-SP2": "swf/KTH-SP2/log.swf",
    "CEA-Curie sample": "swf/CEA-curie_sample/log.swf",
    "RICC": "swf/RICC-2010-2.swf.gz",
}


def stop_latency(after: float) -> dict[str, object]:
    """Seconds from SIGTERM to exit of a long compiled simulation, with its exit code and last line."""
    with tempfile.TemporaryDirectory(prefix="wattsched-stop-") as tmp:
        args = [str(WATTSCHED), "simulate", "--workload", str(DATA / TRACES["RICC"]), "--policy", "conservative"]
        proc = subprocess.Popen([*args, "--output", str(Path(tmp) / "run")], stderr=subprocess.PIPE, text=True)
        time.sleep(after)
        t0 = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=600)
        return {
            "stop_s": round(time.perf_counter() - t0, 3),
            "exit_code": proc.returncode,
            "line": stderr.strip().splitlines()[-1] if stderr.strip() else "",
        }


def allocation_times() -> dict[str, float]:
    """Seconds of `allocate_nodes` on each trace's EASY schedule (best of three, after a warm-up call)."""
    from wattsched.api import run_policy
    from wattsched.metrics.allocation import allocate_nodes
    from wattsched.workload.load import load_workload

    out = {}
    for name, relative in TRACES.items():
        path = DATA / relative
        if not path.exists():
            continue
        read = load_workload(path)
        run = run_policy(read, "easy")
        machine = int(run.summary["run"]["machine_size"])
        allocate_nodes(run.jobs, machine)
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            allocate_nodes(run.jobs, machine)
            best = min(best, time.perf_counter() - t0)
        out[name] = round(best, 3)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--after", type=float, default=8.0, help="Seconds before the SIGTERM.")
    after = parser.parse_args().after
    print(json.dumps({"allocate_nodes_s": allocation_times(), "compiled_stop": stop_latency(after)}, indent=1))


if __name__ == "__main__":
    main()
