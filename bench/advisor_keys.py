"""Which ``learning.key`` should the advisor use by default? Measured by replay (issue 28, item 5).

Every candidate key is replayed (``wattsched.advise.replay.replay(dump, config)``, what ``wattsched advise
--replay DUMP`` runs) on two kinds of history:

1. **the recorded dump** of ``bench/advisor_mixed.py`` (``bench/results/advisor_mixed_sacct.json``: 32 jobs of
   four users, each user with two kinds of job under two names; 8 nodes, idle 100 W, at most 500 W, cap 2,000 W);
2. **synthetic** ``sacct -P`` dumps of the same kind of mixed workload at a larger scale, one per seed (``--seeds``,
   default 0–4): 400 jobs on 16 nodes (idle 100 W, at most 500 W), 6 users in 3 accounts, each user with 2–3
   kinds of job under their own names (names drawn from a small shared vocabulary, so two users may both run
   ``run``), each kind with its own true power per node above idle (30–380 W), its own node counts (1–4) and
   runtimes (lognormal, medians 5–60 min); each job's power is its kind's ±5 % (uniform). Arrivals are Poisson at
   an offered load of 60 % of the nodes. Cap 4,400 W: a budget of 2,800 W for the jobs (45 % of the nodes' net
   worst case), under what the workload draws uncapped on every seed (the printed "without the cap" line). Two
   scenarios on the same jobs: **stable names** (a kind's jobs share its name), and **half the jobs named
   uniquely** (``sim_17``: a parameter or a date in the name, so the name says nothing about the kind).

Same settings for every key: ``power.idle_watts_per_node = 100``, ``power.max_watts_per_node = 500``, every
other key at its default. Reported per key (synthetic: mean ± standard deviation over the seeds, and the range):
instants of the capped schedule over the cap and the largest overshoot (W), the mean and p95 wait, the mean
capped cluster power over the capped makespan / the cap (the jobs' energy is the same under every key, so this is
the makespan seen from the other side), and the mean absolute error of each job's license against its true power
(the replay's: energy / elapsed, net of idle, × nodes; "learned": the jobs whose key had history), with the mean
signed error (bias) and the share of jobs licensed below their true power (the jobs that can put measured power
over the cap); and on how many seeds each key had the lowest mean wait and the lowest license MAE.

Writes ``bench/results/advisor_keys.json`` and prints the markdown tables. Nothing here is tuned to a seed and every
seed is reported. The load and the cap were set once, on seeds 0–1, so that the capped queue stays stable: at an
offered load of 90 % under a 4,000 W cap the mean capped wait was 7–11 h whatever the key; at loads of 0.5, 0.6 and
0.7 under 4,000 W, ``[user, name]`` had the lowest mean wait and ``[user]`` the highest, as here. About 10 s on the
project's 2-core machine (5 keys × (2 scenarios × 5 seeds + the recorded dump): 55 replays):

    .venv/bin/python bench/advisor_keys.py
    .venv/bin/python bench/advisor_keys.py --seeds 0-9 --jobs 800
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from wattsched.advise.config import load_config
from wattsched.advise.replay import replay

KEYS: tuple[tuple[str, ...], ...] = (
    ("user",),
    ("user", "name"),
    ("user", "name", "nodes"),
    ("user", "nodes"),
    ("account", "name"),
)
IDLE, MAX = 100.0, 500.0
RESULTS = Path(__file__).parent / "results"
RECORDED = RESULTS / "advisor_mixed_sacct.json"
RECORDED_NODES, RECORDED_CAP = 8, 2000.0  # bench/advisor_mixed.py's testbed

SYN_NODES, SYN_CAP = 16, 4400.0
USERS = ("ann", "ben", "cai", "dev", "eli", "fay")
ACCOUNTS = ("phys", "chem", "bio")  # two users each
NAMES = ("run", "sim", "post", "train", "prep", "solve", "viz", "io")
SIZE_SETS = ((1,), (2,), (4,), (1, 2), (2, 4), (1, 2, 4))
NOISE = 0.05
LOAD = 0.6
#: The synthetic scenarios: the share of jobs whose name is their own (the name then says nothing about the kind).
SCENARIOS = {"stable names": 0.0, "half the jobs named uniquely": 0.5}
HEADER = (
    "JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|ElapsedRaw|TimelimitRaw|State|NNodes|NCPUS|"
    "ConsumedEnergyRaw|NodeList"
)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def synthetic(path: Path, seed: int, jobs: int = 400, unique_share: float = 0.0) -> dict[str, Any]:
    """Write a synthetic ``sacct -P`` dump (module docstring); returns the kinds drawn (the truth). A share
    ``unique_share`` of the jobs carry their kind's name with a suffix of their own (``sim_17``), as scripts that
    put a parameter or a date in the name do. The draws of the workload do not depend on it: the same seed gives the
    same jobs, only their names differ."""
    rng = random.Random(seed)
    kinds: list[dict[str, Any]] = []
    for u, user in enumerate(USERS):
        names = rng.sample(NAMES, rng.randint(2, 3))
        for name in names:
            kinds.append(
                {
                    "user": user,
                    "account": ACCOUNTS[u // 2],
                    "name": name,
                    "net_w": round(rng.uniform(30.0, 380.0), 1),
                    "sizes": list(rng.choice(SIZE_SETS)),
                    "median_s": rng.uniform(300.0, 3600.0),
                    "weight": rng.uniform(0.5, 2.0),
                }
            )
    weights = [k["weight"] for k in kinds]
    drawn = []
    naming = random.Random(seed + 1_000_003)  # its own stream: the workload is the same whatever unique_share
    for i in range(jobs):
        kind = rng.choices(kinds, weights)[0]
        nodes = rng.choice(kind["sizes"])
        runtime = max(60, round(kind["median_s"] * math.exp(rng.gauss(0.0, 0.3))))
        name = f"{kind['name']}_{i}" if naming.random() < unique_share else kind["name"]
        drawn.append((kind, name, nodes, runtime, kind["net_w"] * rng.uniform(1 - NOISE, 1 + NOISE)))
    node_seconds = sum(n * r for _, _, n, r, _ in drawn)
    mean_gap = node_seconds / (SYN_NODES * LOAD) / jobs  # Poisson arrivals at the offered load
    t = 1_780_000_000.0
    lines = [HEADER]
    for i, (kind, name, nodes, runtime, net) in enumerate(drawn):
        t += rng.expovariate(1.0 / mean_gap)
        joules = round((IDLE + net) * nodes * runtime)
        limit = math.ceil(runtime * rng.uniform(1.2, 3.0) / 60)
        first = 1 + (i % (SYN_NODES - nodes + 1))
        nodelist = f"nid{first:03d}" if nodes == 1 else f"nid[{first:03d}-{first + nodes - 1:03d}]"
        lines.append(
            "|".join([
                str(10_000 + i), name, kind["user"], kind["account"], "batch", _iso(t), _iso(t),
                _iso(t + runtime), str(runtime), str(limit), "COMPLETED", str(nodes), str(nodes * 32), str(joules),
                nodelist,
            ])
        )  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return {"kinds": [{k: v for k, v in kind.items() if k != "weight"} for kind in kinds]}


def measure(dump: Path, key: tuple[str, ...], cap: float, nodes: int) -> dict[str, Any]:
    """One replay of ``dump`` under ``key``: the metrics of the module docstring."""
    config = load_config(
        None,
        cap=cap,
        power__idle_watts_per_node=IDLE,
        power__max_watts_per_node=MAX,
        learning__key=list(key),
    )
    began = time.perf_counter()
    result = replay(dump, config, machine_size=nodes)
    seconds = time.perf_counter() - began
    s = result.summary
    capped = result.capped
    t0, t1 = float(capped["submit_time"].min()), float(capped["end_time"].max())  # type: ignore[arg-type]
    power = result.power.filter((pl.col("time") >= t0) & (pl.col("time") <= t1)).sort("time")
    t = power["time"].to_numpy()
    w = power["capped_watts"].to_numpy()
    mean_w = float(np.sum(w[:-1] * np.diff(t)) / (t[-1] - t[0])) if t.size > 1 else float("nan")
    lic = capped.filter(pl.col("license").is_not_null() & pl.col("true_watts").is_not_null())
    err = (lic["license"] - lic["true_watts"]).to_numpy()
    learned = lic.filter(pl.col("has_history")) if "has_history" in lic.columns else lic.clear()
    err_learned = (learned["license"] - learned["true_watts"]).to_numpy()
    return {
        "jobs": s["jobs"],
        "held_above_budget": s["held_above_budget"],
        "instants_over_cap": s["instants_over_cap"],
        "max_over_cap_w": s["max_over_cap_watts"],
        "peak_capped_w": s["peak_watts"]["capped"],
        "peak_uncapped_w": s["peak_watts"]["uncapped"],
        "mean_wait_s": s["wait_s"]["capped"]["mean"],
        "p95_wait_s": s["wait_s"]["capped"]["p95"],
        "mean_wait_uncapped_s": s["wait_s"]["uncapped"]["mean"],
        "mean_power_over_cap": mean_w / cap,
        "mae_license_w": float(np.abs(err).mean()) if err.size else float("nan"),
        "mae_license_learned_w": float(np.abs(err_learned).mean()) if err_learned.size else float("nan"),
        "bias_license_w": float(err.mean()) if err.size else float("nan"),
        "under_licensed_share": float((err < 0).mean()) if err.size else float("nan"),
        "learned_jobs": s["learned_jobs"],
        "replay_s": round(seconds, 2),
    }


METRICS = (
    "instants_over_cap",
    "max_over_cap_w",
    "mean_wait_s",
    "p95_wait_s",
    "mean_power_over_cap",
    "mae_license_w",
    "mae_license_learned_w",
    "bias_license_w",
    "under_licensed_share",
    "held_above_budget",
    "peak_uncapped_w",
    "mean_wait_uncapped_s",
)


def spread(values: list[float]) -> dict[str, float]:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return {"mean": float("nan"), "sd": float("nan"), "min": float("nan"), "max": float("nan")}
    return {
        "mean": statistics.fmean(vals),
        "sd": statistics.pstdev(vals) if len(vals) > 1 else 0.0,
        "min": min(vals),
        "max": max(vals),
    }


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def _fmt(x: dict[str, float], digits: int = 0, scale: float = 1.0) -> str:
    m, sd = x["mean"] * scale, x["sd"] * scale
    return f"{m:,.{digits}f} ± {sd:,.{digits}f} ({x['min'] * scale:,.{digits}f}–{x['max'] * scale:,.{digits}f})"


def run_scenario(
    scenario: str, unique: float, seeds: list[int], jobs: int, label: dict[tuple[str, ...], str]
) -> dict[str, Any]:
    """Every key on the synthetic dump of every seed; prints the table, returns per seed and the summary."""
    per_seed: dict[str, list[dict[str, Any]]] = {label[k]: [] for k in KEYS}
    truths = {}
    with tempfile.TemporaryDirectory(prefix="wattsched-keys-") as tmp:
        for seed in seeds:
            dump = Path(tmp) / f"mixed-{seed}.sacct"
            truths[seed] = synthetic(dump, seed, jobs, unique)
            for k in KEYS:
                per_seed[label[k]].append({"seed": seed, **measure(dump, k, SYN_CAP, SYN_NODES)})
    summary = {name: {m: spread([float(r[m]) for r in rows]) for m in METRICS} for name, rows in per_seed.items()}
    # how often each key had the lowest mean wait / license MAE of the seed (ties count for each)
    for metric in ("mean_wait_s", "mae_license_w"):
        for i in range(len(seeds)):
            best = min(rows[i][metric] for rows in per_seed.values())
            for name, rows in per_seed.items():
                summary[name].setdefault(f"best_{metric}", 0)
                summary[name][f"best_{metric}"] += int(rows[i][metric] <= best + 1e-9)
    print(
        f"\nsynthetic, {scenario}: {jobs} jobs, {SYN_NODES} nodes, cap {SYN_CAP:,.0f} W, seeds "
        f"{seeds[0]}–{seeds[-1]} ({len(seeds)}): mean ± sd (min–max) over the seeds\n"
    )
    print(
        "| key | over the cap (instants) | largest overshoot | mean wait | p95 wait | mean power / cap "
        "| license MAE (all) | license MAE (learned) | bias | under-licensed | lowest wait / MAE |\n"
        + "|---" * 11
        + "|"
    )
    for name, s in summary.items():
        print(
            f"| {name} | {_fmt(s['instants_over_cap'], 1)} | {_fmt(s['max_over_cap_w'])} W "
            f"| {_fmt(s['mean_wait_s'])} s | {_fmt(s['p95_wait_s'])} s | {_fmt(s['mean_power_over_cap'], 3)} "
            f"| {_fmt(s['mae_license_w'])} W | {_fmt(s['mae_license_learned_w'])} W | {_fmt(s['bias_license_w'])} W "
            f"| {_fmt(s['under_licensed_share'], 1, 100)} % "
            f"| {s['best_mean_wait_s']}/{len(seeds)} / {s['best_mae_license_w']}/{len(seeds)} seeds |"
        )
    first = summary[label[KEYS[0]]]
    peaks, free = first["peak_uncapped_w"], first["mean_wait_uncapped_s"]
    print(
        f"\nwithout the cap (the same for every key): peak {peaks['min']:,.0f}–{peaks['max']:,.0f} W "
        f"(cap {SYN_CAP:,.0f} W), mean wait {free['min']:,.0f}–{free['max']:,.0f} s"
    )
    return {"unique_name_share": unique, "per_seed": per_seed, "summary": summary, "kinds": truths}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-4", help="synthetic dumps' seeds, e.g. 0-4 or 0,3,7")
    parser.add_argument("--jobs", type=int, default=400, help="jobs per synthetic dump")
    parser.add_argument(
        "--recorded", type=Path, nargs="+", default=[RECORDED], help="recorded sacct --json dumps (8 nodes, 2,000 W)"
    )
    args = parser.parse_args(argv)
    seeds = _seeds(args.seeds)
    began = time.monotonic()
    out: dict[str, Any] = {
        "settings": {
            "idle_w": IDLE,
            "max_w": MAX,
            "synthetic": {"nodes": SYN_NODES, "cap_w": SYN_CAP, "jobs": args.jobs, "seeds": seeds, "load": LOAD},
            "recorded": {"dumps": [str(p) for p in args.recorded], "nodes": RECORDED_NODES, "cap_w": RECORDED_CAP},
        },
        "keys": [list(k) for k in KEYS],
    }
    label = {k: "[" + ", ".join(k) + "]" for k in KEYS}

    out["recorded"] = {}
    for path in args.recorded:
        if not path.exists():
            print(f"no recorded dump at {path}: run bench/advisor_mixed.py first")
            continue
        recorded = {label[k]: measure(path, k, RECORDED_CAP, RECORDED_NODES) for k in KEYS}
        out["recorded"][str(path)] = recorded
        print(f"\nrecorded dump {path} (8 nodes, cap {RECORDED_CAP:,.0f} W)\n")
        print(
            "| key | over the cap (instants) | largest overshoot | mean wait | p95 wait | mean power / cap "
            "| license MAE (all / learned) | bias | under-licensed |\n|---|---|---|---|---|---|---|---|---|"
        )
        for name, r in recorded.items():
            print(
                f"| {name} | {r['instants_over_cap']} | {r['max_over_cap_w']:,.0f} W | {r['mean_wait_s']:.1f} s "
                f"| {r['p95_wait_s']:.1f} s | {r['mean_power_over_cap']:.3f} | {r['mae_license_w']:.0f} / "
                f"{r['mae_license_learned_w']:.0f} W | {r['bias_license_w']:+.0f} W "
                f"| {r['under_licensed_share']:.0%} |"
            )

    out["synthetic"] = {}
    for scenario, unique in SCENARIOS.items():
        out["synthetic"][scenario] = run_scenario(scenario, unique, seeds, args.jobs, label)
    out["elapsed_s"] = round(time.monotonic() - began, 1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "advisor_keys.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"\n{out['elapsed_s']} s; bench/results/advisor_keys.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
