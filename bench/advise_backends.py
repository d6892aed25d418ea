"""Benchmark: the latency of every Slurm call the advisor's backends make, on a local testbed (needs root and the
Slurm packages, `make testbed-deps`; not part of `make bench`). Starts a 4-node testbed with slurmrestd, runs each
backend operation ``--repeat`` times with a few jobs queued, prints the median and maximum per call; then a 2-node
testbed with a remote license measures how long a budget change takes to reach slurmctld. About 40 s.

    PYTHONPATH=src .venv/bin/python bench/advise_backends.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from wattsched.advise.backends import make_backend
from wattsched.advise.records import Action
from wattsched.testbed.cluster import down, up
from wattsched.testbed.config import TestbedOptions


def _testbed(**options: object) -> tuple[Path, object]:
    base = Path(tempfile.mkdtemp(prefix="wattsched-bench-", dir="/tmp"))
    base.chmod(0o755)
    return base, up(TestbedOptions(base=base, **options)).state  # type: ignore[arg-type]


def _sbatch(env: dict[str, str], cwd: Path, *args: str) -> int:
    out = subprocess.run(
        ["sbatch", "--parsable", "-o", "/dev/null", *args], env=env, cwd=cwd, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip().split(";")[0])


def _report(title: str, latencies: dict[str, list[float]]) -> None:
    print(f"{title}: call, n, median ms, max ms")
    for call, values in sorted(latencies.items()):
        print(f"  {call:<32} {len(values):>3} {1000 * statistics.median(values):>8.1f} {1000 * max(values):>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=10)
    n = parser.parse_args().repeat
    base, state = _testbed(nodes=4, license_total=2000, rest=True)
    try:
        env = state.env()  # type: ignore[attr-defined]
        work = base / "work"
        _sbatch(env, work, "-N1", "-L", "power:500", "--wrap", "srun sleep 120")
        pending = _sbatch(env, work, "-N1", "-L", "power:1900", "--wrap", "srun sleep 10")
        for kind, settings in (("cli", {}), ("rest", {"url": state.rest_url, "user": "root"})):  # type: ignore[attr-defined]
            backend = make_backend({"kind": kind, **settings}, env)
            backend.probe()
            for k in range(n):
                backend.observe(None)
                backend.apply(Action("set_license", pending, 1900 - k, "bench"))
                backend.apply(Action("hold", pending, None, "bench"))
                backend.apply(Action("release", pending, None, "bench"))
                backend.apply(Action("set_budget", None, 1500 if k % 2 else 2000, "bench"))
            now = time.time()
            backend.schedule_budget([(now + 3600, 1000), (now + 7200, 2000)])
            backend.schedule_budget([])
            lat = backend.latencies if kind == "cli" else {**backend.latencies, **backend.cli.latencies}  # type: ignore[attr-defined]
            _report(f"{kind} backend", lat)
    finally:
        down(base)
        shutil.rmtree(base, ignore_errors=True)
    base, state = _testbed(nodes=2, remote_license=True, license_total=1500)
    try:
        backend = make_backend({}, state.env())  # type: ignore[attr-defined]
        backend.probe()
        delays = []
        for k in range(3):
            watts = 1200 - 100 * k
            began = time.monotonic()
            backend.apply(Action("set_budget", None, watts, "bench"))
            while backend.licenses()[backend.license_name].total != watts:  # type: ignore[attr-defined]
                time.sleep(0.05)
            delays.append(time.monotonic() - began)
        print("remote license: set count -> slurmctld sees it, s:", ", ".join(f"{d:.2f}" for d in delays))
    finally:
        down(base)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
