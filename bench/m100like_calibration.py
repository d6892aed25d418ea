"""Calibration of the Marconi100-like generator against the platform (docs/m100like.md): per seed and window,
the offered load, the backlog at t = 0 and the uncapped dynamic power as a fraction of M100's dynamic range.

Prints markdown: a summary per seed, then (``--windows-table``) one row per (seed, window). Windows are those a
campaign builds (``WindowSpec(count, 24 h, seed)``, default pre-state), each run under EASY without a cap.

    PYTHONPATH=src .venv/bin/python bench/m100like_calibration.py --jobs 20000 --seeds 0-5 --windows 10
    PYTHONPATH=src .venv/bin/python bench/m100like_calibration.py --uncalibrated --seeds 0-5  # as before
"""

from __future__ import annotations

import argparse
import time


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _fmt(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _markdown(rows: list[dict[str, object]]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in head) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--seeds", default="0-5", help="seeds: '0-5', '1,4,9' or a mix")
    parser.add_argument("--windows", type=int, default=10, help="24-h windows per seed")
    parser.add_argument("--windows-table", action="store_true", help="also print one row per window")
    parser.add_argument("--load", type=float, default=None, help="target offered load (default: the generator's)")
    parser.add_argument(
        "--uncalibrated",
        action="store_true",
        help="the generator before calibration: PM100's arrival rate and no platform bound",
    )
    args = parser.parse_args()

    import polars as pl

    from wattsched.engine.windows import WindowSpec
    from wattsched.power.window_calibration import window_calibration
    from wattsched.workload.generate import M100LikeParams, generate_m100like
    from wattsched.workload.generate.lublin import offered_load

    summary, windows = [], []
    for seed in _seeds(args.seeds):
        t = time.perf_counter()
        params = (
            M100LikeParams(default_target_load=None, platform_node_dynamic_watts=None) if args.uncalibrated else None
        )
        read = generate_m100like(args.jobs, seed=seed, params=params, target_load=args.load)
        gen_s = time.perf_counter() - t
        tab = window_calibration(read, WindowSpec(count=args.windows, seed=seed))
        summary.append(
            {
                "seed": seed,
                "gen s": round(gen_s, 1),
                "span d": read.provenance.header["span"] / 86400.0,
                "trace load": offered_load(read.jobs, 980),
                "window load mean": tab["offered_load"].mean(),
                "min": tab["offered_load"].min(),
                "max": tab["offered_load"].max(),
                "backlog share": float((tab["queued_t0"] > 0).mean()),
                "peak max": tab["peak_dynamic"].max(),
                "peak median": tab["peak_dynamic"].median(),
                "3-h mean median": tab["mean_dynamic_cap"].median(),
                "24-h mean median": tab["mean_dynamic"].median(),
            }
        )
        windows.extend(
            {"seed": seed, **{k: v for k, v in r.items() if k != "start_h"}}
            for r in tab.with_columns(pl.col("backlog_machine_hours").round(1)).iter_rows(named=True)
        )
    what = "uncalibrated (PM100 rate, no platform bound)" if args.uncalibrated else "calibrated defaults"
    what += f", target load {args.load}" if args.load is not None else ""
    print(f"{what}: {args.jobs} jobs per seed, {args.windows} windows of 24 h per seed; power / 719,880 W\n")
    print(_markdown(summary))
    allw = pl.DataFrame(windows)
    print(
        f"\nall {allw.height} windows: peak max {allw['peak_dynamic'].max():.3f}, offered load "
        f"{allw['offered_load'].quantile(0.1):.2f}–{allw['offered_load'].quantile(0.9):.2f} (10–90 %), "
        f"backlog at t = 0 in {(allw['queued_t0'] > 0).mean():.0%} of windows"
    )
    if args.windows_table:
        print()
        print(_markdown(windows))


if __name__ == "__main__":
    main()
