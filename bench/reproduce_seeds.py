"""How robust each verdict is: every quick reproduction on 10 seeds, and per claim the share of seeds on which it
holds (docs/reproduce.md, "Robustness"), with the seed spread of every number the paper states.

    .venv/bin/python bench/reproduce_seeds.py --set 000:sensitivity=off   # every paper, seeds 0-9, --quick
    .venv/bin/python bench/reproduce_seeds.py 002 004 --seeds 5  # these papers, seeds 0-4
    .venv/bin/python bench/reproduce_seeds.py 002 --no-run --write-tolerances  # catalogue bands from the record

One reproduction per paper with all the seeds (the claims are computed on every seed alone, so one run gives
every seed's verdict). Writes ``bench/results/reproduce_seeds.json`` (per claim: verdict, seeds held, per-seed
values; per stated number: the paper's value, our mean and standard deviation over seeds, and the band
``2σ``) and prints the markdown table of docs/reproduce.md. The per-number ``2σ`` is the evidence of the
catalogue tolerances whose basis is "seed spread" (docs/decisions.md, "claim tolerance").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

from wattsched.core.data_folder import shared_data_dir
from wattsched.reproduce import PAPERS, reproduce
from wattsched.reproduce.claims import catalogue

RESULTS = Path(__file__).resolve().parent / "results" / "reproduce_seeds.json"
CATALOGUES = Path(__file__).resolve().parents[1] / "src" / "wattsched" / "reproduce" / "claims"


def _numbers(value: Any, n: int) -> list[float | None]:
    if isinstance(value, bool) or value is None:
        return [None] * n
    if isinstance(value, int | float):
        return [float(value)] + [None] * (n - 1)
    return ([float(v) if isinstance(v, int | float) else None for v in value] + [None] * n)[:n]


def spread_rows(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Per stated number of a claim record: the paper's value, our per-seed values, their mean and σ, 2σ."""
    rows = []
    n = len(record["target"])
    labels = record["labels"] or [""] * n
    per_seed = [_numbers(s["value"], n) for s in record["per_seed"]]
    for k, target in enumerate(record["target"]):
        values = [v[k] for v in per_seed if v[k] is not None]
        if len(values) < 2:
            continue
        sd = statistics.stdev(values)
        rows.append(
            {
                "label": labels[k],
                "paper": target,
                "values": values,
                "mean": statistics.fmean(values),
                "std": sd,
                "two_sigma": 2 * sd,
            }
        )
    return rows


def summarise(paper: str, data: dict[str, Any], seconds: float) -> dict[str, Any]:
    claims = []
    for r in data["claims"]:
        held = sum(s["verdict"] == "holds" for s in r["per_seed"])
        claims.append(
            {
                "id": r["id"],
                "kind": r["kind"],
                "verdict": r["verdict"],
                "seeds": len(r["per_seed"]),
                "held": held,
                "numbers": spread_rows(r) if r["target"] else [],
                "n_targets": len(r["target"]),
            }
        )
    return {"paper": paper, "seconds": seconds, "seeds": data["seeds"], "counts": data["counts"], "claims": claims}


def rejudge(summaries: list[dict[str, Any]]) -> None:
    """Judge again, with the catalogue's current bands, every ``number`` claim of a recorded run from its per-seed
    values (the verdict of a number depends on nothing else); an order claim with numbers (``parts``) cannot be
    judged from the record alone and is marked ``stale`` when its band changed since the run."""
    from wattsched.reproduce.claims import claim, seed_rule

    for s in summaries:
        for c in s["claims"]:
            cat = claim(c["id"])
            numbers = c["numbers"]
            if not numbers or len(numbers) != len(cat.target):
                continue
            if cat.kind != "number":
                c["stale"] = True
                continue
            seeds = len(numbers[0]["values"])
            per_seed = [
                all(abs(n["values"][i] - n["paper"]) <= cat.band(n["paper"], k) for k, n in enumerate(numbers))
                for i in range(seeds)
            ]
            pooled = all(abs(n["mean"] - n["paper"]) <= cat.band(n["paper"], k) for k, n in enumerate(numbers))
            votes = ["holds" if ok else "differs" for ok in per_seed]
            c["held"], c["seeds"] = sum(per_seed), seeds
            c["verdict"] = seed_rule("holds" if pooled else "differs", votes)
        results = [c for c in s["claims"] if c["kind"] != "setup"]
        s["counts"] = {
            v: sum(c["verdict"] == v for c in results) for v in ("holds", "differs", "unstable", "not checkable")
        }


def table(summaries: list[dict[str, Any]]) -> str:
    lines = [
        "| claim | kind | verdict over the seeds | seeds holding | seed spread of our value (σ) |",
        "|---|---|---|---|---|",
    ]
    for s in summaries:
        for c in s["claims"]:
            share = f"{c['held']} / {c['seeds']}" if c["seeds"] else "not seed-judged"
            share += " (bands of the run)" if c.get("stale") else ""
            spread = "; ".join(
                f"{(n['label'] + ' ') if n['label'] else ''}{n['mean']:.3g} ± {n['std']:.2g}" for n in c["numbers"]
            )
            lines.append(f"| {c['id']} | {c['kind']} | {c['verdict']} | {share} | {spread} |")
    return "\n".join(lines)


def rounding(target: float) -> float:
    """Half a unit of the paper's last printed digit (74 → 0.5, 0.96 → 0.005): the least band a figure allows."""
    text = repr(float(target)).rstrip("0").rstrip(".")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10.0**-decimals


def seed_spread_tolerance(claim: dict[str, Any], unit: str, seeds: int) -> str | None:
    """The catalogue line of a "seed spread" tolerance: per label, ``abs = max(2σ, the paper's rounding)``."""
    numbers = claim["numbers"]
    if not numbers or len(numbers) != claim.get("n_targets", len(numbers)):
        return None
    bands = [math.ceil(max(n["two_sigma"], rounding(n["paper"])) * 100) / 100 for n in numbers]
    u = "pp" if unit == "%" else unit
    sigmas = " / ".join(f"{n['std']:.2g}" for n in numbers)
    basis = (
        f"seed spread: 2σ of our quick value over {seeds} seeds, σ = {sigmas} {u} (bench/reproduce_seeds.py, "
        f"{date.today().isoformat()})"
    )
    absolute = f"{bands[0]:g}" if len(bands) == 1 else "[" + ", ".join(f"{b:g}" for b in bands) + "]"
    return f'tolerance = {{ rel = 0.0, abs = {absolute}, basis = "{basis}" }}'


def write_tolerances(summaries: list[dict[str, Any]]) -> list[str]:
    """Replace, in the catalogues, every tolerance whose basis is PROVISIONAL or an earlier seed spread by the
    measured one; returns the claim ids changed."""
    changed = []
    for s in summaries:
        path = CATALOGUES / f"{s['paper']}.toml"
        text = path.read_text(encoding="utf-8")
        units = {c.id: c.unit for c in catalogue(s["paper"])}
        for c in s["claims"]:
            line = seed_spread_tolerance(c, units[c["id"]], len(s["seeds"]))
            start = text.find(f'id = "{c["id"]}"')
            if line is None or start < 0:
                continue
            end = text.find("[[claims]]", start)
            end = len(text) if end < 0 else end
            block = text[start:end]
            old = next((x for x in block.splitlines() if x.startswith("tolerance = ")), None)
            if old is None or not ('"PROVISIONAL"' in old or 'basis = "seed spread' in old):
                continue
            text = text[:start] + block.replace(old, line) + text[end:]
            changed.append(c["id"])
        path.write_text(text, encoding="utf-8")
    return changed


def options_for(paper: str, given: list[str]) -> dict[str, str]:
    """The ``NAME=VALUE`` options of ``given`` (``PAPER:NAME=VALUE`` each) that are for ``paper``."""
    out = {}
    for item in given:
        which, _, setting = item.partition(":")
        name, _, value = setting.partition("=")
        if which.zfill(3) == paper:
            out[name] = value
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("papers", nargs="*", default=list(PAPERS), help="papers to run (default: all)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds 0 … N−1 (default 10)")
    parser.add_argument("--data", type=Path, default=None, help="shared data folder (default: ../shared/data)")
    parser.add_argument("--output", type=Path, default=RESULTS, help=f"JSON written (default {RESULTS})")
    parser.add_argument(
        "--write-tolerances",
        action="store_true",
        help="set the catalogue tolerances whose basis is PROVISIONAL or a seed spread from the measured 2σ",
    )
    parser.add_argument("--no-run", action="store_true", help="use the recorded JSON only (with --write-tolerances)")
    parser.add_argument("--rejudge", action="store_true", help="judge the number claims again with today's bands")
    parser.add_argument(
        "--set",
        dest="options",
        action="append",
        default=[],
        metavar="PAPER:NAME=VALUE",
        help="a paper's option for its run, e.g. 000:sensitivity=off (the claims do not depend on it)",
    )
    args = parser.parse_args()
    data_dir = args.data or shared_data_dir() or Path(__file__).resolve().parents[2] / "shared" / "data"
    previous = json.loads(args.output.read_text()) if args.output.exists() else {}
    summaries = {s["paper"]: s for s in previous.get("papers", [])}
    for paper in [] if args.no_run else args.papers:
        paper = paper.zfill(3)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            result = reproduce(
                paper,
                Path(tmp) / "out",
                quick=True,
                seeds=tuple(range(args.seeds)),
                workers=os.cpu_count() or 1,
                data_dir=data_dir,
                options=options_for(paper, args.options),
            )
            wall = time.perf_counter() - t0
            payload = json.loads(result.files["claims"].read_text(encoding="utf-8"))
        summaries[paper] = summarise(paper, payload, wall)
        print(f"paper {paper}: {payload['counts']} in {wall:.0f} s", flush=True)
    ordered = [summaries[p] for p in PAPERS if p in summaries]
    if args.rejudge:
        rejudge(ordered)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = args.output.with_suffix(".tmp")
    tmp_path.write_text(json.dumps({"papers": ordered}, indent=1) + "\n")
    tmp_path.replace(args.output)
    print(table(ordered))
    if args.write_tolerances:
        wanted = [s for s in ordered if s["paper"] in {p.zfill(3) for p in args.papers}]
        print("tolerances set from the seed spread:", ", ".join(write_tolerances(wanted)) or "none")
    for s in ordered:
        missing = {c.id for c in catalogue(s["paper"])} - {c["id"] for c in s["claims"]}
        if missing:
            raise SystemExit(f"paper {s['paper']}: no result for {sorted(missing)}")


if __name__ == "__main__":
    main()
