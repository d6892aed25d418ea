"""Benchmark: start-up and many small simulations (issue 18, item 4).

Wall times of whole commands as a user starts them (interpreter start to exit, numba cache warm): `wattsched
--help`, a subcommand's `--help`, `wattsched simulate` on a 100-job workload; the import cost of the pieces
(`python -X importtime`); and runs per second for 1,000 100-job Lublin workloads three ways: one `wattsched
simulate` process per workload, one `wattsched simulate` with 1,000 `--workload` options, and the Python API in a
loop (`wattsched.simulate`, `wattsched.run_policy`). One core, single-threaded libraries.

    .venv/bin/python bench/startup.py [--quick]    # about 2 minutes; --quick: 100 workloads, 3 repeats
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import targets

HERE = Path(__file__).resolve().parent
WATTSCHED = Path(sys.executable).with_name("wattsched")
ONE_CORE = {**os.environ, "POLARS_MAX_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
PIN = ["taskset", "-c", "0"] if shutil.which("taskset") else []


def wall(args: list[str], repeat: int) -> list[float]:
    """Wall seconds of ``repeat`` runs of a command (stdout and stderr discarded; it must succeed)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([*PIN, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ONE_CORE)
        times.append(time.perf_counter() - t0)
    return times


def import_ms(module: str) -> float:
    """Cumulative import time of ``module`` in a fresh interpreter (ms), from ``-X importtime``."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True, text=True, env=ONE_CORE
    )
    for line in out.stderr.splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1000
    raise RuntimeError(f"no import time for {module}")


def api_runs_per_s(folder: Path, n: int) -> dict[str, float]:
    """Runs per second of the Python API in a loop, in a pinned child (numba cache warm)."""
    code = f"""
import json, time
from pathlib import Path
from wattsched import load_workload, run_policy, simulate
reads = [load_workload(p) for p in sorted(Path({str(folder)!r}).glob('*.swf'))[:{n}]]
simulate(reads[0], 'easy'); run_policy(reads[0], 'easy')
t = time.process_time()
for r in reads: simulate(r, 'easy')
sim = len(reads) / (time.process_time() - t)
t = time.process_time()
for r in reads: run_policy(r, 'easy')
print(json.dumps({{'simulate_runs_per_s': sim, 'run_policy_runs_per_s': len(reads) / (time.process_time() - t)}}))
"""
    out = subprocess.run([*PIN, sys.executable, "-c", code], capture_output=True, text=True, env=ONE_CORE, check=True)
    return json.loads(out.stdout)


def phases(one: str) -> dict[str, float]:
    """Where a 100-job run's time goes, in a fresh pinned child (wall s): Python and wattsched's command line,
    numba's import, the first compiled call (numba's target set-up and cache loads; here the SWF reader's), and the
    simulation itself."""
    code = f"""
import json, time
t0 = time.perf_counter()
import wattsched.cli.root_app
t1 = time.perf_counter()
import numba, polars
from wattsched import load_workload, simulate
t2 = time.perf_counter()
read = load_workload({one!r})
t3 = time.perf_counter()
simulate(read, 'easy')
t4 = time.perf_counter()
print(json.dumps({{'cli_import_s': t1 - t0, 'numba_polars_import_s': t2 - t1, 'first_compiled_call_s': t3 - t2,
                  'simulate_s': t4 - t3}}))
"""
    out = subprocess.run([*PIN, sys.executable, "-c", code], capture_output=True, text=True, env=ONE_CORE, check=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="100 workloads, 3 repeats")
    args = parser.parse_args()
    repeat, n = (3, 100) if args.quick else (11, 1000)
    work = Path(tempfile.mkdtemp(prefix="wattsched-startup-"))
    try:
        folder = work / "workloads"
        folder.mkdir()
        subprocess.run(
            [sys.executable, "-c", (
                "from wattsched import save_workload\n"
                "from wattsched.workload.generate.lublin import generate_lublin\n"
                f"for s in range({n}): save_workload(generate_lublin(100, 128, seed=s), '{folder}/w%04d.swf' % s)\n"
            )],
            check=True, env=ONE_CORE,
        )  # fmt: skip
        one = str(folder / "w0000.swf")
        simulate_one = [str(WATTSCHED), "simulate", "--workload", one, "--policy", "easy", "--output"]
        wall([*simulate_one, str(work / "warm")], 1)  # compiles once if the cache is cold
        help_s = wall([str(WATTSCHED), "--help"], repeat)
        sub_help_s = wall([str(WATTSCHED), "simulate", "--help"], repeat)
        sim_s = wall([*simulate_one, str(work / "one")], repeat)
        per_process = min(n, 50)  # one process per workload: 50 are enough for a rate
        t0 = time.perf_counter()
        for i, path in enumerate(sorted(folder.glob("*.swf"))[:per_process]):
            wall([*simulate_one[:3], str(path), *simulate_one[4:], str(work / "sep" / str(i))], 1)
        separate_rate = per_process / (time.perf_counter() - t0)
        batch = [str(WATTSCHED), "--quiet", "simulate", "--policy", "easy", "--output", str(work / "batch")]
        for path in sorted(folder.glob("*.swf")):
            batch += ["--workload", str(path)]
        batch_rate = n / wall(batch, 1)[0]
        api = api_runs_per_s(folder, n)
        phase = phases(one)
        imports = {m: import_ms(m) for m in ("typer", "wattsched", "wattsched.cli.root_app", "numba", "polars")}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "help_s_median": statistics.median(help_s),
        "help_s": help_s,
        "simulate_help_s_median": statistics.median(sub_help_s),
        "simulate_100_jobs_s_median": statistics.median(sim_s),
        "simulate_100_jobs_s": sim_s,
        "separate_processes_runs_per_s": separate_rate,
        "batch_cli_runs_per_s": batch_rate,
        **api,
        "import_ms": imports,
        "workloads": n,
        "phases_s": phase,
    }
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "startup.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))
    floor = (
        f"command line {phase['cli_import_s']:.2f} s, numba + polars import {phase['numba_polars_import_s']:.2f} s, "
        f"first compiled call (numba's target set-up) {phase['first_compiled_call_s']:.2f} s, "
        f"the run {phase['simulate_s']:.2f} s"
    )
    targets.record(
        "startup",
        [
            targets.Target("`wattsched --help` (wall, median)", result["help_s_median"], 0.2, "s"),
            targets.Target(
                "`wattsched simulate` on 100 jobs (wall, median, warm cache)",
                result["simulate_100_jobs_s_median"],
                0.6,
                "s",
                note=floor,
            ),
            targets.Target(
                "`wattsched simulate` with 1,000 `--workload` options: runs per second",
                batch_rate,
                10 * separate_rate,
                "runs/s",
                lower_is_better=False,
                note=f"target: 10× one process per workload ({separate_rate:.2f} runs/s)",
            ),
            targets.Target(
                "Python API `run_policy` in a loop (100-job workloads): runs per CPU second",
                api["run_policy_runs_per_s"],
                10 * separate_rate,
                "runs/s",
                lower_is_better=False,
                note=f"`simulate` alone: {api['simulate_runs_per_s']:,.0f} runs/s",
            ),
        ],
    )


if __name__ == "__main__":
    main()
