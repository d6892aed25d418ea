"""Benchmark: the cost of handing every pass to a Python policy, one core.

The overhead of the hand-off itself: strict FCFS written in Python (it looks at one or two jobs per pass) against
the compiled `fcfs` on the full RICC trace. A full policy in Python: EASY written in Python
(tests/test_python_policy.py) against the compiled `easy` on KTH-SP2 (28,489 jobs).

    .venv/bin/python bench/python_policy.py
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from wattsched.core.data_folder import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
DATA = (shared_data_dir(REPO) or REPO.parent / "shared" / "data") / "swf"


def main() -> None:
    os.sched_setaffinity(0, {0})
    from test_python_policy import PyEasy, PyFcfs
    from wattsched.engine.simulate import simulate
    from wattsched.workload.load import load_workload

    results = {}
    cases = [
        ("RICC-2010-2.swf.gz", "compiled fcfs", "fcfs"),
        ("RICC-2010-2.swf.gz", "Python FCFS", PyFcfs()),
        ("KTH-SP2/log.swf", "compiled easy", "easy"),
        ("KTH-SP2/log.swf", "Python EASY", PyEasy()),
    ]
    for trace, label, policy in cases:
        read = load_workload(DATA / trace)
        t = time.perf_counter()
        res = simulate(read.jobs, policy, read.provenance.machine_size)
        dt = time.perf_counter() - t
        key = f"{label} on {trace}"
        results[key] = {
            "seconds": dt,
            "passes": res.passes,
            "us_per_pass": dt / res.passes * 1e6,
            "jobs_per_s": read.jobs.height / dt,
            "mean_wait": float(res.schedule["wait"].mean()),
        }
        print(
            f"{key:38s} {dt:8.2f} s  {res.passes:>9,} passes  {dt / res.passes * 1e6:7.1f} µs/pass  "
            f"mean wait {results[key]['mean_wait']:,.0f} s",
            flush=True,
        )
    out = REPO / "bench" / "results" / "python_policy.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
