"""Benchmark: the cost of handing every pass to a Python policy (EASY written in Python, tests/test_python_policy)
against the compiled EASY, on the full RICC trace, one core.

    .venv/bin/python bench/python_policy.py
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
RICC = Path(os.environ.get("WATTSCHED_SHARED_DATA", REPO.parent / "shared" / "data")) / "swf" / "RICC-2010-2.swf.gz"


def main() -> None:
    os.sched_setaffinity(0, {0})
    from test_python_policy import PyEasy
    from wattsched.sim.engine import simulate
    from wattsched.workload.load import load_workload

    read = load_workload(RICC)
    results = {}
    for label, policy in (("compiled easy", "easy"), ("Python EASY", PyEasy())):
        t = time.perf_counter()
        res = simulate(read.jobs, policy, read.provenance.machine_size)
        dt = time.perf_counter() - t
        results[label] = {"seconds": dt, "passes": res.passes, "us_per_pass": dt / res.passes * 1e6,
                          "mean_wait": float(res.schedule["wait"].mean())}
        print(f"{label:14s} {dt:8.2f} s  {res.passes:,} passes  {dt / res.passes * 1e6:7.1f} µs/pass  "
              f"mean wait {results[label]['mean_wait']:,.0f} s", flush=True)
    out = REPO / "bench" / "results" / "python_policy.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
