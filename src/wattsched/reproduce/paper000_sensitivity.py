"""Paper 000's sensitivity table: which part of the construction moves the claims whose numbers differ from the
paper's (naive's and mean's turnaround increase, C000-02/08; the Gaussian checks' under-utilisation, C000-12; the
breaks, C000-14), and by how much, measured.

Two kinds of rows (``runner.Sensitivity``; every text is computed from runs, none typed in):

- **re-aggregations of the run's own results** (no extra run): only the (window, cap) groups where the cap binds
  (the uncapped EASY baseline's mean power in the 3-h window is above the cap; where it is not, no check can fill
  the cap), one source instead of real and predicted pooled, and leaving out the one window whose turnaround the
  cap improves the most (the paper's Fig. 5 leaves out one workload "as powercapping greatly increases scheduling
  performance on it");
- **variant campaigns**: the same construction with one part changed (:data:`VARIANTS`: the post-window cap, the
  window length, the windows' pre-state, the generator's offered load), run on the first of the run's seeds, as
  many windows as the run, real values of naive, mean and the Gaussian checks only (the default beside it is the
  main run restricted to the very same rows). One seed's value moves with its windows (the seeds' spread is
  in each claim's row), so a row shows the direction and size of an effect, not a corrected value. The cost is
  stated in the report's notes.

:data:`SENSITIVITY` (option ``sensitivity = on | off``) turns the variant campaigns off (the re-aggregations cost
nothing); docs/decisions.md.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.campaign.power import spec_hash
from wattsched.campaign.runner import load_results, run_experiment
from wattsched.campaign.spec import expand_runs, parse_spec, workload_variants
from wattsched.core.store import MANIFEST, CampaignLayout, read_manifest, write_manifest
from wattsched.reproduce.paper000_metrics import BREAK, GAUSSIANS, SHORT, TURN, UNDER, Claims, group_mean, num
from wattsched.reproduce.runner import Sensitivity

#: Whether ``reproduce 000`` runs the variant campaigns of the sensitivity table by default (4 × 120 runs + 4 × 6
#: baselines on one seed in the quick setting; ``--set sensitivity=off`` where the CLI has ``--set``).
SENSITIVITY = True


def wanted(ctx: Any) -> bool:
    """The ``sensitivity`` option of the run (``on``/``off``), else :data:`SENSITIVITY`."""
    value = str(getattr(ctx, "options", {}).get("sensitivity", "on" if SENSITIVITY else "off")).lower()
    if value not in ("on", "off"):
        raise ValueError(f"sensitivity must be 'on' or 'off', got {value!r}")
    return value == "on"


#: The checks the variant campaigns run (real values): those whose numbers the table explains.
VARIANT_CHECKS = ("naive", "mean", *GAUSSIANS)

#: What each claim's row shows: the checks, the metric (a ``paper000_metrics`` expression) and its name.
TARGETS: dict[str, tuple[tuple[str, ...], Any, str]] = {
    "C000-02": (("naive",), TURN, "turnaround increase"),
    "C000-08": (("mean",), TURN, "turnaround increase"),
    "C000-12": (("gaussian99", "gaussian95", "gaussian68"), UNDER, "under-utilisation"),
    "C000-14": (("gaussian99", "gaussian95", "gaussian68", "mean"), BREAK, "average break"),
}


@dataclass(frozen=True)
class Variant:
    """One changed part of the construction: ``edit`` changes the campaign file's data; ``same_windows`` when
    the windows are the main run's (a grid change), so they are linked, not prepared again."""

    name: str
    change: str
    edit: Callable[[dict[str, Any]], None]
    same_windows: bool
    claims: tuple[str, ...]


def _grid(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["grid"][key] = value

    return edit


def _windows(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["workloads"][0]["windows"][key] = value

    return edit


def _generate(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["workloads"][0]["generate"][key] = value

    return edit


#: The variant campaigns: the artifact's post-window cap ([AMBIG-0.6]), 48-h windows instead of 24 h and windows
#: without their pre-state (the paper gives neither its workloads' length nor how their start was built,
#: [AMBIG-0.9]), and a lighter offered load (0.85 instead of the generator's calibrated 0.95, docs/m100like.md).
VARIANTS = (
    Variant(
        "post-window-cap",
        "post-window cap = the artifact's dynamic range (719,880 W, same check) instead of none",
        _grid("post_window_cap", "dynamic_range"),
        True,
        ("C000-02", "C000-08"),
    ),
    Variant("window-48h", "windows of 48 h instead of 24 h", _windows("hours", 48), False, tuple(TARGETS)),
    Variant(
        "prestate-drop",
        'windows without their pre-state (prestate = "drop": the machine starts empty) instead of "requeue"',
        _windows("prestate", "drop"),
        False,
        tuple(TARGETS),
    ),
    Variant(
        "load-0.85",
        "generator offered load 0.85 instead of 0.95",
        _generate("target_load", 0.85),
        False,
        tuple(TARGETS),
    ),
)


def _values(c: Claims, claim_id: str) -> list[float]:
    checks, expr, _ = TARGETS[claim_id]
    return [group_mean(c.check(k), expr).mean for k in checks]


def _text(claim_id: str, values: list[float], scope: str = "") -> str:
    checks, _, what = TARGETS[claim_id]
    label = " / ".join(SHORT[k] for k in checks)
    return f"{what} {label} " + " / ".join(f"{v:.1f}" for v in values) + "%" + (f" ({scope})" if scope else "")


def _effect(default: list[float], variant: list[float]) -> str:
    return " / ".join(f"{v - d:+.1f}" for d, v in zip(default, variant, strict=True)) + " pp"


def _row(claim_id: str, change: str, c0: Claims, c1: Claims, scope: str = "", vscope: str = "") -> Sensitivity:
    d, v = _values(c0, claim_id), _values(c1, claim_id)
    return Sensitivity(claim_id, change, _text(claim_id, d, scope), _text(claim_id, v, vscope), _effect(d, v))


def reaggregations(results: pl.DataFrame, policies: list[str]) -> list[Sensitivity]:
    """Rows computed from the run's own results: binding groups only, one source, Fig. 5's left-out window."""
    c = Claims(results, policies)
    rows: list[Sensitivity] = []
    bound = c.binding(results.filter(pl.col("kind") == "run")).filter(pl.col("binds") | pl.col("cap").is_null())
    groups = c.binding(c.est).select("seed", "workload", "cap", "binds").unique()
    share = num(groups["binds"].mean()) * 100
    cb = Claims(pl.concat([bound.drop("uncapped", "binds"), c.base], how="diagonal_relaxed"), policies)
    change = f"only the (window, cap) groups where the uncapped baseline exceeds the cap ({share:.0f}% of them)"
    rows += [_row(k, change, c, cb) for k in ("C000-12", "C000-14", "C000-08", "C000-02")]
    for source in ("real", "predicted"):
        keep = (pl.col("source") == source) | (pl.col("check") == "naive") | (pl.col("kind") != "run")
        cs = Claims(results.filter(keep), policies)
        rows += [_row(k, f"{source} values only (default: real and predicted pooled)", c, cs) for k in TARGETS]
    # Fig. 5's exclusion: per seed, the window where the cap costs naive the least turnaround (the paper leaves
    # out the one workload where the cap improves it)
    naive = c.check("naive").group_by("seed", "workload").agg(TURN.mean()).sort("v")
    left = naive.group_by("seed", maintain_order=True).first()
    out = results.join(left.select("seed", "workload"), on=["seed", "workload"], how="anti")
    names = ", ".join(f"{w} ({v:+.1f}%)" for _, w, v in left.sort("seed").rows())
    cx = Claims(out, policies)
    change = f"leaving out each seed's window with naive's lowest turnaround increase (as Fig. 5 leaves one): {names}"
    rows += [_row(k, change, c, cx) for k in ("C000-02", "C000-08")]
    return rows


def _link_windows(src: Path, dst: Path, data: dict[str, Any]) -> None:
    """Give the variant campaign ``dst`` the main campaign's prepared windows and predictions (hard links) and
    its manifest, so a grid-only change runs on the very same windows."""
    if (dst / MANIFEST).exists():
        return
    spec = parse_spec(data)
    main = read_manifest(src)
    main_names = {seed: name for _, seed, name in workload_variants(parse_spec(main["spec"]))}
    windows = {name: main["windows"][main_names[seed]] for _, seed, name in workload_variants(spec)}
    names = [main_names[seed] for _, seed, _ in workload_variants(spec)]
    CampaignLayout(dst).make()
    for sub in CampaignLayout.SHARED:
        for path in (src / sub).iterdir():
            if not any(path.name.startswith(n) for n in names) or (dst / sub / path.name).exists():
                continue
            try:
                os.link(path, dst / sub / path.name)
            except OSError:
                shutil.copy2(path, dst / sub / path.name)
    manifest = {
        "kind": "power",
        "name": spec.name,
        "spec": spec.model_dump(mode="json"),
        "spec_hash": spec_hash(spec),
        "windows": windows,
        "runs": expand_runs(spec, windows),
    }
    write_manifest(dst, manifest)


def variant_rows(
    ctx: Any,
    setting: Any,
    results: pl.DataFrame,
    policies: list[str],
    campaign_data: Callable[[Any, tuple[int, ...], str], dict[str, Any]],
) -> tuple[list[Sensitivity], str]:
    """Run each variant campaign on the run's first seed and compare it with the main run's same rows; returns
    the rows and a note stating the cost."""
    seed = ctx.seeds[0]
    keep = (pl.col("seed") == seed) & (pl.col("experiment") == "estimators")
    base = results.filter(keep & ((pl.col("kind") != "run") | pl.col("check").is_in(VARIANT_CHECKS)))
    base = base.filter((pl.col("kind") != "run") | (pl.col("source") == "real") | (pl.col("check") == "naive"))
    c0 = Claims(base, policies)
    windows = base.filter(pl.col("kind") == "baseline").height
    scope = f"seed {seed}, {windows} windows, real values"
    rows: list[Sensitivity] = []
    costs = []
    for variant in VARIANTS:
        t0 = time.perf_counter()
        data = campaign_data(setting, (seed,), "estimators")
        data["grid"].update({"checks": list(VARIANT_CHECKS), "sources": ["real"]})
        data["name"] += f"-{variant.name}"
        variant.edit(data)
        folder = ctx.out / "sensitivity" / variant.name
        if variant.same_windows:
            _link_windows(ctx.out / "campaign-estimators", folder, data)
        ctx.step(f"sensitivity: {variant.change} (seed {seed})")
        run_experiment(parse_spec(data, f"sensitivity-{variant.name}"), folder, workers=ctx.workers)
        frame = load_results(folder).with_columns(pl.lit("estimators").alias("experiment"))
        c1 = Claims(frame, policies)
        runs = int((frame["kind"] == "run").sum())
        took = time.perf_counter() - t0
        costs.append(f"{variant.name} {runs} runs + {frame.height - runs} baselines in {took:.0f} s")
        rows += [_row(k, variant.change, c0, c1, scope) for k in variant.claims]
        if took < 1:  # the folder held this variant's runs already (a rerun into the same output)
            costs[-1] += " (reused from an earlier run in this folder)"
    note = (
        f"Sensitivity table: the variant campaigns ran on seed {seed} (the run's first), real values of "
        f"{', '.join(SHORT[k] for k in VARIANT_CHECKS)}; the default beside each is the main run's same rows. "
        f"Cost on {ctx.workers} worker(s): " + "; ".join(costs) + "."
    )
    return rows, note


def sensitivity(
    ctx: Any,
    setting: Any,
    results: pl.DataFrame,
    policies: list[str],
    campaign_data: Callable[[Any, tuple[int, ...], str], dict[str, Any]],
) -> tuple[list[Sensitivity], list[str]]:
    """Every row of paper 000's sensitivity table and the notes that state how it was measured."""
    rows = reaggregations(results, policies)
    notes = [
        "Sensitivity table: the re-aggregations (binding groups, one source, Fig. 5's left-out window) are computed "
        "from this run's results on all its seeds, at no extra cost."
    ]
    if wanted(ctx):
        more, note = variant_rows(ctx, setting, results, policies, campaign_data)
        rows += more
        notes.append(note)
    return rows, notes
