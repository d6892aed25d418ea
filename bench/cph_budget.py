"""Benchmark (issue 27): which CP-SAT deterministic budget per solve matches paper 001's 1 s of wall clock on this
machine, for CPH's CP stage in ``wattsched reproduce 001``.

The passes are those of CPH-W on a few Eurora instances (per-queue expected waits, the reproduction's default),
collected with det=0.02 (``cph_hint.collect_passes``'s recording, here with the ``ewt`` of the reproduction); a
sample of the passes that call the solver is then planned again at the paper's ``wall=1`` and at several
deterministic budgets. Per budget: the deterministic time CP-SAT used, its wall and CPU time, the statuses, and the
plan's objective against the one of ``wall=1`` (equal, better, worse). Two readings of "matches 1 s":

- **time**: the deterministic time CP-SAT reaches when the 1 s wall limit stops it (passes not proved optimal);
- **plans**: the smallest budget whose objectives equal or beat ``wall=1``'s in as many passes as ``wall=1`` itself
  (its objective is not reproducible, so ``wall=1`` run twice gives the noise floor).

    PYTHONPATH=src .venv/bin/python bench/cph_budget.py [--passes 40] [--budgets 0.02,0.1,0.5,1]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from wattsched.core.data_folder import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
DATA = shared_data_dir(REPO) or REPO.parent / "shared" / "data"
INSTANCES = (
    "200/hist_200_20140402_161826",
    "400/hist_400_20140403_114848",
    "1000/hist_1000_20140403_145208",
    "600/hist_600_20140331_112452",
    "800/hist_800_20140331_101001",
    "1000/hist_1000_20140402_154719",
)


def collect(instance: Path, ewt: str) -> list[tuple]:
    """The arguments of every CP pass of CPH-W on ``instance`` that calls the solver (det=0.02)."""
    from wattsched.studies.multires import dispatchers
    from wattsched.studies.multires.cph import CPHOptions, cph_plan
    from wattsched.studies.multires.engine import simulate_multires
    from wattsched.studies.multires.eurora import eurora_pool
    from wattsched.workload.eurora import read_eurora

    calls: list[tuple] = []

    def recording(*args):  # type: ignore[no-untyped-def]
        plan = cph_plan(*args)
        if plan.search_solution is not None:  # the solver was called
            calls.append(tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args[:-1]))
        return plan

    jobs, _, _ = read_eurora(instance)
    pool = eurora_pool(None, ewt=ewt)  # type: ignore[arg-type]
    dispatcher = dispatchers.make_dispatcher("cph", cph_options=CPHOptions(deterministic_time=0.02))
    original = dispatchers.cph_plan
    dispatchers.cph_plan = recording
    try:
        simulate_multires(jobs, pool, dispatcher, estimate="walltime")
    finally:
        dispatchers.cph_plan = original
    return calls


class _Stats:
    """The last main solve's CP-SAT times (the hint check, solved with fixed variables, is not counted)."""

    det = wall = user = 0.0


def _patch_solver() -> None:
    from ortools.sat.python import cp_model

    base = cp_model.CpSolver

    class Recording(base):  # type: ignore[misc, valid-type]
        def solve(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            status = super().solve(*args, **kwargs)
            if not self.parameters.fix_variables_to_their_hinted_value:
                _Stats.det, _Stats.wall, _Stats.user = self.deterministic_time, self.wall_time, self.user_time
            return status

    cp_model.CpSolver = Recording


def solve_all(passes: list[tuple], budget: str) -> list[dict]:
    from wattsched.studies.multires.cph import CPHOptions, cph_plan

    kind, _, value = budget.partition("=")
    x = float(value)
    options = CPHOptions(deterministic_time=x) if kind == "det" else CPHOptions(time_limit_s=x)
    rows = []
    for p in passes:
        plan = cph_plan(*p, options)
        rows.append(
            {
                "objective": plan.objective,
                "status": plan.status,
                "solve_s": plan.solve_s,
                "det": _Stats.det,
                "wall": _Stats.wall,
                "user": _Stats.user,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passes", type=int, default=40, help="passes sampled (evenly) per instance")
    parser.add_argument("--budgets", default="0.02,0.05,0.1,0.2,0.5,1", help="deterministic budgets to compare")
    parser.add_argument("--instances", type=int, default=len(INSTANCES), help="how many of INSTANCES")
    parser.add_argument("--ewt", default="queues-file", choices=["queues-file", "constant"])
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "cph_budget.json")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _patch_solver()
    passes: list[tuple] = []
    for name in INSTANCES[: args.instances]:
        got = collect(DATA / "eurora" / "historical_traces" / f"{name}.log_crypt", args.ewt)
        idx = np.unique(np.linspace(0, len(got) - 1, min(args.passes, len(got))).astype(int)) if got else []
        passes += [got[i] for i in idx]
        print(f"{name}: {len(got)} solver passes, {len(idx)} sampled", flush=True)
    budgets = ["wall=1", "wall=1 (again)"] + [f"det={b}" for b in args.budgets.split(",")]
    table: dict[str, list[dict]] = {}
    for b in budgets:
        t0 = time.perf_counter()
        table[b] = solve_all(passes, b.split(" ")[0])
        print(f"{b}: {time.perf_counter() - t0:.1f} s", flush=True)
    ref = np.array([r["objective"] for r in table["wall=1"]])
    ref_status = [r["status"] for r in table["wall=1"]]
    limited = np.array([s != "optimal" for s in ref_status])
    summary = {}
    for b, rows in table.items():
        obj = np.array([r["objective"] for r in rows])
        rel = (obj - ref) / np.maximum(np.abs(ref), 1.0)
        summary[b] = {
            "passes": len(rows),
            "optimal": sum(r["status"] == "optimal" for r in rows),
            "feasible": sum(r["status"] == "feasible" for r in rows),
            "greedy": sum(r["status"] == "greedy" for r in rows),
            "equal_to_wall1": int((np.abs(rel) <= 1e-12).sum()),
            "better_than_wall1": int((rel < -1e-12).sum()),
            "worse_than_wall1": int((rel > 1e-12).sum()),
            "mean_rel_gap_to_wall1": float(rel.mean()),
            "max_rel_gap_to_wall1": float(rel.max()),
            "det_used_mean": float(np.mean([r["det"] for r in rows])),
            "det_used_on_limited_median": float(np.median([r["det"] for r, m in zip(rows, limited, strict=True) if m]))
            if limited.any()
            else 0.0,
            "wall_s_sum": float(np.sum([r["solve_s"] for r in rows])),
            "cp_wall_s_on_limited_mean": float(np.mean([r["wall"] for r, m in zip(rows, limited, strict=True) if m]))
            if limited.any()
            else 0.0,
            "cp_user_s_sum": float(np.sum([r["user"] for r in rows])),
        }
        print(b, json.dumps(summary[b]), flush=True)
    result = {
        "instances": list(INSTANCES[: args.instances]),
        "ewt": args.ewt,
        "passes": len(passes),
        "wall1_limited_passes": int(limited.sum()),
        "load_average": os.getloadavg(),
        "summary": summary,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
