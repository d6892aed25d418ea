"""Benchmark (issue 18, item 3): CPU seconds to read a 1 M-job SWF written by `wattsched generate lublin`, and
the same jobs with full-precision '%.17g' submit times (the old generator's style), in a fresh single-threaded
child process each (numba cache warm: one warm-up read first).

    PYTHONPATH=src .venv/bin/python bench/swf_read.py [--quick]

The SWFs are cached under bench/results/ (not committed). Target: ≤ 1.5 CPU s for 1 M jobs, both files.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import targets

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
ENV = {"POLARS_MAX_THREADS": "1", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}

_CHILD = """
import resource, sys, time
from wattsched.workload.swf import read_swf
from wattsched.workload.swf.tokenizer import IS_INT, LINE_OK, POW10, scan
import numpy as np
read_swf(sys.argv[2])  # warm: compiled cache loaded, first-touch costs paid
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t = cpu()
jobs, rejects, _ = read_swf(sys.argv[1])
read_s = cpu() - t
data = open(sys.argv[1], "rb").read()
status = scan(np.frombuffer(data, np.uint8), POW10, IS_INT, False)[4]
print(read_s, jobs.height, rejects.height, int((status != LINE_OK).sum()), int(status.size))
"""


def _make(n: int, path: Path, long_times: bool) -> None:
    """Write the generator's SWF (``wattsched generate lublin`` writes it the same way), or its '%.17g' twin."""
    from wattsched.workload.generate import LublinParams, generate_lublin
    from wattsched.workload.save import save_workload

    if not long_times:
        save_workload(generate_lublin(n, 1024, seed=18, target_load=0.9), path, format="swf")
        return
    res = generate_lublin(n, 1024, seed=18, target_load=0.9, params=LublinParams(submit_resolution=0.0))
    save_workload(res, path, format="swf")
    out = []
    for line in path.read_bytes().split(b"\n"):
        if line and not line.startswith(b";"):
            tok = line.split(b" ")
            tok[1] = b"%.17g" % float(tok[1])
            line = b" ".join(tok)
        out.append(line)
    path.write_bytes(b"\n".join(out))


def _read_cpu(path: Path, warm: Path) -> dict:
    env = {**os.environ, **ENV, "PYTHONPATH": str(REPO / "src")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), str(warm)], env=env, check=True, capture_output=True, text=True
    ).stdout.split()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    read_s, jobs, rejects, python_lines, lines = out
    return {
        "read_cpu_s": float(read_s),
        "process_cpu_s": total,
        "jobs": int(jobs),
        "rejects": int(rejects),
        "lines_python_path_without_strtod": int(python_lines),
        "data_lines": int(lines),
        "bytes": path.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="100k jobs (< 1 min)")
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000
    RESULTS.mkdir(parents=True, exist_ok=True)
    files = {"generate": RESULTS / f"swf_read_lublin_{n}.swf", "17 digits": RESULTS / f"swf_read_lublin_{n}_17g.swf"}
    warm = RESULTS / "swf_read_warm.swf"
    if not warm.exists():
        _make(200, warm, long_times=True)
    for kind, path in files.items():
        if not path.exists():
            _make(n, path, long_times=kind != "generate")
    figures = {kind: _read_cpu(path, warm) for kind, path in files.items()}
    for kind, fig in figures.items():
        print(kind, json.dumps(fig), flush=True)
    (RESULTS / "swf_read.json").write_text(json.dumps({"jobs": n, **figures}, indent=2) + "\n")
    scale = 1_000_000 / n
    rows = []
    for kind, fig in figures.items():
        note = (
            f"{fig['data_lines']:,} lines, {fig['bytes'] / 1e6:.0f} MB; "
            f"{fig['lines_python_path_without_strtod']:,} lines would need Python without strtod"
        )
        if args.quick:
            note += f"; --quick: {n:,} jobs, scaled ×{scale:g}"
        what = f"read a 1 M-job Lublin SWF ({kind} times)"
        rows.append(targets.Target(what, fig["read_cpu_s"] * scale, 1.5, "CPU s", note=note))
    targets.record("swf_read", rows)


if __name__ == "__main__":
    main()
