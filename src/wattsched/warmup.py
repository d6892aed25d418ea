"""Compile and cache every numba kernel once, so that a user's first real run does not pay for compilation.

`make` runs it right after installing; it takes ~10 s once per source version (the cache is keyed on the
sources, see ``wattsched.core.numba_cache``). ``python -m wattsched.warmup``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from wattsched.engine.simulate import simulate
from wattsched.policies.registry import POLICIES
from wattsched.workload.swf import read_swf


def warm_up() -> float:
    """Read a tiny SWF file and simulate it with every policy; returns the seconds spent."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warmup.swf"
        path.write_text(
            "; MaxProcs: 4\n"
            "1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n"
            "2 1 -1 5 4 -1 -1 4 10 -1 1 1 1 -1 1 -1 -1 -1\n"
            "3 2 -1 0 1 -1 -1 1 0 -1 1 2 1 -1 1 -1 -1 -1\n"
        )
        jobs = read_swf(path).jobs
    for name in POLICIES:
        simulate(jobs, name, 4)
    return time.perf_counter() - t0


if __name__ == "__main__":
    print(f"wattsched: compiled and cached the numba kernels in {warm_up():.1f} s")
