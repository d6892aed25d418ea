"""Benchmark (issue 18, item 6): CPH's CP stage at wall-clock limits per solve — the share of passes where CP-SAT
improves on the greedy (PRB serial) plan, the share where its search found no solution of its own (those passes
had ended with no solution and doubled the limit before), and the share that ended with no plan (must be 0).

The passes are those of CPH on one Eurora instance (`hist_200_20140402_161826`, walltime estimates, replayed with
the reproducible budget det=0.02 to collect each pass's queue); each pass is then planned again at every limit.

    PYTHONPATH=src .venv/bin/python bench/cph_hint.py [--quick] [--passes N]
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

import targets
from wattsched.core.data_folder import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
DATA = shared_data_dir(REPO) or REPO.parent / "shared" / "data"
INSTANCE = DATA / "eurora" / "historical_traces" / "200" / "hist_200_20140402_161826.log_crypt"


def collect_passes(instance: Path = INSTANCE, estimate: str = "walltime") -> list[tuple]:
    """The arguments of every CP pass of one CPH run that calls the solver (det=0.02 budget)."""
    from wattsched.studies.multires import dispatchers
    from wattsched.studies.multires.cph import CPHOptions, cph_plan
    from wattsched.studies.multires.engine import simulate_multires
    from wattsched.studies.multires.eurora import eurora_pool
    from wattsched.studies.multires.experiment import DispatchSpec
    from wattsched.workload.eurora import read_eurora

    calls: list[tuple] = []

    def recording(*args):  # type: ignore[no-untyped-def]
        plan = cph_plan(*args)
        if plan.status not in ("skipped", "empty") and not (plan.status == "optimal" and plan.search_solution is None):
            calls.append(tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args[:-1]))
        return plan

    spec = DispatchSpec(kind="dispatch", name="bench", instances=[str(instance)])
    jobs, _, _ = read_eurora(instance)
    pool = eurora_pool(spec.config_dir, nodes=spec.nodes, ewt=spec.ewt, default_ewt=spec.default_ewt)
    dispatcher = dispatchers.make_dispatcher("cph", cph_options=CPHOptions(deterministic_time=0.02))
    original = dispatchers.cph_plan
    dispatchers.cph_plan = recording
    try:
        simulate_multires(jobs, pool, dispatcher, estimate=estimate, default_ewt=spec.default_ewt)
    finally:
        dispatchers.cph_plan = original
    return calls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10 passes at 0.1 and 0.3 s (< 1 min)")
    parser.add_argument("--passes", type=int, default=40, help="first N solver passes of the run")
    parser.add_argument("--instance", type=Path, default=INSTANCE, help="a Eurora instance file")
    parser.add_argument("--estimate", default="walltime", choices=["walltime", "runtime"])
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from wattsched.studies.multires.cph import CPHOptions, cph_plan

    passes = collect_passes(args.instance, args.estimate)[: 10 if args.quick else args.passes]
    limits = [0.1, 0.3] if args.quick else [0.1, 0.3, 1.0, 3.0]
    greedy = [cph_plan(*p, CPHOptions(deterministic_time=0.0)).objective for p in passes]
    figures: dict[str, dict] = {}
    for limit in limits:
        improved = no_search_solution = no_plan = 0
        seconds = []
        for p, g in zip(passes, greedy, strict=True):
            plan = cph_plan(*p, CPHOptions(time_limit_s=limit, max_time_s=limit))
            seconds.append(plan.solve_s)
            improved += plan.objective < g
            no_search_solution += plan.search_solution is False
            no_plan += plan.starts.size == 0 or plan.objective > g
        n = len(passes)
        figures[f"{limit:g}"] = {
            "passes": n,
            "improved_share": improved / n,
            "search_without_own_solution_share": no_search_solution / n,
            "ended_without_solution_share": no_plan / n,
            "mean_s": float(np.mean(seconds)),
            "max_s": float(np.max(seconds)),
        }
        print(f"limit {limit:g} s", json.dumps(figures[f"{limit:g}"]), flush=True)
    (REPO / "bench" / "results").mkdir(parents=True, exist_ok=True)
    (REPO / "bench" / "results" / "cph_hint.json").write_text(json.dumps(figures, indent=2) + "\n")
    rows = []
    for limit, fig in figures.items():
        note = (
            f"{fig['passes']} passes; improved on greedy {fig['improved_share']:.0%}; search found none of its own "
            f"{fig['search_without_own_solution_share']:.0%} (ended with the greedy hint); max {fig['max_s']:.2f} s"
        )
        what = f"CPH passes ending without a solution at {limit} s"
        rows.append(targets.Target(what, fig["ended_without_solution_share"], 0.0, "share", note=note))
    targets.record("cph_hint", rows)


if __name__ == "__main__":
    main()
