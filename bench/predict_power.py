"""Benchmark: the online power predictors (docs/prediction.md §2–§3) on a 231,000-job Marconi100-like workload
(≈ 23 weeks), two cores.

Completion times come from an EASY replay on 980 nodes (timed). Timed: the global-mean baseline, the history
predictor (also on a 1,000,000-job workload: target ≤ 3 s), and the weekly ML protocol for each of the four models
(RFECV + GridSearchCV per week and metric; target: all four together ≤ 15 min on 2 cores), with the grids and
training caps printed below. Reported: MAE in W per node of power_mean / power_max / power_std, over all jobs, over
jobs with user history, and the median over users of each user's MAE (the paper's Fig. 3 statistic).

    .venv/bin/python bench/predict_power.py [--jobs 231000] [--history-jobs 1000000] [--models ml-linear,...]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: Per-model options of the benchmark run (the rest are MLPowerConfig defaults: KFold(5), RFECV step 1, t0 = the
#: first submit). Chosen so that the four models together fit in 15 minutes on two cores.
ML_RUNS: dict[str, dict[str, Any]] = {
    "ml-linear": {"max_train_rows": None},
    "ml-sgd": {"max_train_rows": 20_000},
    "ml-svr": {"max_train_rows": 20_000},
    "ml-forest": {
        "max_train_rows": 5_000,
        "base_params": {"n_estimators": 20, "max_depth": 10},
        "grid": {"n_estimators": [50], "max_depth": [10, 20]},
    },
}


def _timed(fn, *args, **kwargs) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def _report_summary(report) -> dict[str, Any]:
    """How often RFECV kept each feature and which grid points won, per metric, over the weeks."""
    summary: dict[str, Any] = {}
    for metric in report["metric"].unique(maintain_order=True):
        rows = report.filter(report["metric"] == metric)
        kept = Counter(f for features in rows["features"].to_list() for f in features)
        summary[metric] = {
            "weeks": rows.height,
            "features_kept": dict(kept.most_common()),
            "params_chosen": dict(Counter(rows["params"].to_list()).most_common()),
            "train_rows_last_week": int(rows["n_train"][-1]),
            "cv_rmse_median": float(rows["cv_rmse"].median()),
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=231_000)
    parser.add_argument("--history-jobs", type=int, default=1_000_000, help="0 to skip the large history timing")
    parser.add_argument("--models", default=",".join(ML_RUNS))
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()

    from wattsched.predict.online import completion_times, predict_online
    from wattsched.predict.power_history import GlobalMeanPowerPredictor, HistoryPowerPredictor
    from wattsched.predict.power_ml import (
        DEFAULT_BASE_PARAMS,
        DEFAULT_GRIDS,
        MLPowerConfig,
        WeeklyMLPowerPredictor,
        mae_summary,
    )
    from wattsched.workload.generate import generate_m100like

    small = generate_m100like(300, seed=1)  # compile / load the kernels
    small_c, _ = completion_times(small.jobs, "replay", machine_size=980)
    predict_online(HistoryPowerPredictor(), small.jobs, small_c)

    read, t_gen = _timed(generate_m100like, args.jobs, seed=0)
    offset = float(read.provenance.header["clock_offset"])
    (completion, _), t_replay = _timed(completion_times, read.jobs, "replay", machine_size=980)
    jobs = read.jobs.drop("power_profile")
    del read
    span_days = float(jobs["submit_time"].max()) / 86_400.0

    predictions: dict[str, Any] = {}
    timings: dict[str, float] = {}
    predictions["global-mean"], timings["global-mean"] = _timed(
        predict_online, GlobalMeanPowerPredictor(), jobs, completion
    )
    predictions["history"], timings["history"] = _timed(predict_online, HistoryPowerPredictor(), jobs, completion)

    configs: dict[str, Any] = {}
    reports: dict[str, Any] = {}
    for model in args.models.split(","):
        options = ML_RUNS[model]
        cfg = MLPowerConfig(clock_offset=offset, n_jobs=args.n_jobs, **options)
        predictor = WeeklyMLPowerPredictor(model, cfg)
        predictions[model], timings[model] = _timed(predict_online, predictor, jobs, completion)
        report = predictor.report
        configs[model] = {
            "grid": dict(DEFAULT_GRIDS[model] if cfg.grid is None else cfg.grid),
            "base_params": dict(DEFAULT_BASE_PARAMS.get(model, {}) if cfg.base_params is None else cfg.base_params),
            "max_train_rows": cfg.max_train_rows,
            "cv": f"KFold({cfg.cv})" if cfg.cv_kind == "kfold" else cfg.cv_kind,
            "n_jobs": cfg.n_jobs,
            "fits": report.height,
        }
        reports[model] = {"summary": _report_summary(report), "weeks": report.drop("fit_s").to_dicts()}
        print(f"{model:10s} {timings[model]:8.1f} s  ({report.height} fits)", flush=True)
    ml_total = sum(timings[m] for m in configs)

    large: dict[str, Any] = {}
    if args.history_jobs:
        big, t_big_gen = _timed(generate_m100like, args.history_jobs, seed=1)
        (big_c, _), t_big_replay = _timed(completion_times, big.jobs, "replay", machine_size=980)
        big_jobs = big.jobs.drop("power_profile")
        del big
        runs = [_timed(predict_online, HistoryPowerPredictor(), big_jobs, big_c)[1] for _ in range(3)]
        large = {
            "jobs": big_jobs.height,
            "generate_s": t_big_gen,
            "replay_s": t_big_replay,
            "history_s": runs[0],
            "history_best_s": min(runs),
        }
        del big_jobs, big_c

    mae = {method: mae_summary(jobs, pred) for method, pred in predictions.items()}
    results = {
        "jobs": jobs.height,
        "span_days": span_days,
        "weeks": int(span_days // 7),
        "generate_s": t_gen,
        "replay_easy_980_s": t_replay,
        "predict_s": timings,
        "ml_all_four_s": ml_total,
        "ml_configs": configs,
        "history_large": large,
        "mae_w_per_node": mae,
        "ml_reports": reports,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }

    print(
        f"\n{jobs.height:,} jobs over {span_days:.1f} days; generate {t_gen:.1f} s (not timed); "
        f"EASY replay on 980 nodes {t_replay:.2f} s"
    )
    if large:
        print(
            f"history on {large['jobs']:,} jobs: {large['history_s']:.2f} s (best of 3: "
            f"{large['history_best_s']:.2f} s)"
        )
    print(f"ML, all four models: {ml_total:.0f} s ({ml_total / 60:.1f} min) on {args.n_jobs} cores")
    for model, c in configs.items():
        print(
            f"  {model:10s} grid={c['grid']} base={c['base_params']} max_train_rows={c['max_train_rows']} cv={c['cv']}"
        )
    header = f"{'method':12s} {'time s':>8s}" + "".join(
        f" {m.removeprefix('power_') + ' ' + k:>16s}"
        for m in ("power_mean", "power_max", "power_std")
        for k in ("all", "hist", "med-user")
    )
    print("\nMAE (W per node)\n" + header)
    for method, summary in mae.items():
        cells = "".join(
            f" {summary[m][k]:16.1f}"
            for m in ("power_mean", "power_max", "power_std")
            for k in ("all", "with_history", "median_user")
        )
        print(f"{method:12s} {timings[method]:8.2f}{cells}")
    out = REPO / "bench" / "results" / "predict_power.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str) + "\n")


if __name__ == "__main__":
    main()
