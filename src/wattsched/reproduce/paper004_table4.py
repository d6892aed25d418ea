"""Paper 004's Table 4 in absolute seconds: the paper's values beside ours, under each t_req reading.

Table 4 (§7.3, "Average Turnaround Times") gives the mean turnaround of the large trace at 6,500 W for every
policy but unbounded Adaptive, one run on the paper's measured data. :data:`PAPER_TABLE4` holds those values as the
paper prints them (the paper's, not ours; C004-13 checks the improvements the paper derives from them). Ours are
the mean turnaround of the same trace and bound per sample (:func:`table4`), written as a note (:func:`table4_note`)
and a figure with the paper's rows and axis (:func:`write_table4_figure`). Matplotlib loads only when drawing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import polars as pl

from wattsched.core.atomic import atomic_figure
from wattsched.reproduce.claims import Spread
from wattsched.reproduce.paper004_mechanism import A0, A10, A20, A30, N, T
from wattsched.studies.rmap.experiment import BOUNDS

#: Paper 004, Table 4 (§7.3): average turnaround time (s) of the large trace at 6,500 W, per policy.
PAPER_TABLE4: dict[str, float] = {T: 684.0, N: 990.0, A0: 636.0, A10: 613.0, A20: 536.0, A30: 536.0}
#: The table's row names, as the paper writes them.
TABLE4_ROWS: dict[str, str] = {
    T: "Traditional",
    N: "Naive",
    A0: "Adaptive, 0%",
    A10: "Adaptive, 10%",
    A20: "Adaptive, 20%",
    A30: "Adaptive, 30%",
}
TABLE4_TRACE, TABLE4_BOUND = "large", min(BOUNDS)


def table4(jobs: pl.DataFrame) -> dict[str, Spread]:
    """Policy → mean turnaround (s) of the large trace at 6,500 W per sample (default data), over the samples."""
    sub = jobs.filter((pl.col("trace") == TABLE4_TRACE) & (pl.col("bound") == TABLE4_BOUND) & pl.col("default_data"))
    out = {}
    for policy in PAPER_TABLE4:
        per = sub.filter(pl.col("policy") == policy).group_by("sample").agg(pl.col("turnaround").mean()).sort("sample")
        out[policy] = Spread.of(per["turnaround"], over="samples")
    return out


def table4_note(readings: Mapping[str, Mapping[str, Spread]]) -> str:
    """``[T4]``: the paper's Table 4 beside ours under each reading (reading → :func:`table4`)."""
    parts = []
    for policy, row in TABLE4_ROWS.items():
        ours = "; ".join(f"{name}: {values[policy].text('s', 0)}" for name, values in readings.items())
        parts.append(f"{row}: paper {PAPER_TABLE4[policy]:.0f} s, ours {ours}")
    return (
        f"[T4] Table 4 in seconds (the large trace at {TABLE4_BOUND:,.0f} W, mean turnaround; the paper's one run, "
        "ours per sample, mean (min–max)): " + " | ".join(parts) + " (figure table4_seconds)."
    )


def write_table4_figure(readings: Mapping[str, Mapping[str, Spread]], out_dir: Path) -> list[Path]:
    """Table 4 as bars, one group per row of the paper's table: the paper's value and ours under each reading
    (mean over samples, whiskers min–max). PNG and SVG."""
    from matplotlib.figure import Figure  # deferred: matplotlib only when drawing

    out_dir.mkdir(parents=True, exist_ok=True)
    rows = list(TABLE4_ROWS)
    y = np.arange(len(rows))
    series: list[tuple[str, list[float], np.ndarray | None, str]] = [
        ("paper (Table 4)", [PAPER_TABLE4[p] for p in rows], None, "black")
    ]
    colours = ("tab:red", "tab:blue", "tab:green")
    for k, (name, values) in enumerate(readings.items()):
        mean = [values[p].mean for p in rows]
        whiskers = np.array(
            [[values[p].mean - values[p].min for p in rows], [values[p].max - values[p].mean for p in rows]]
        )
        n = values[rows[0]].n
        series.append((f"ours, t_req = {name} ({n} samples, min–max)", mean, whiskers, colours[k % len(colours)]))
    height = 0.8 / len(series)
    fig = Figure(figsize=(9.0, 1.4 + 0.55 * len(rows) * len(series) / 2), layout="constrained")
    ax = fig.subplots()
    for k, (name, vals, err, colour) in enumerate(series):
        pos = y - 0.4 + height * (k + 0.5)
        ax.barh(pos, vals, height, xerr=err, color=colour, alpha=0.85 if err is not None else 0.6, label=name,
                error_kw={"elinewidth": 0.8, "capsize": 2})  # fmt: skip
    ax.set_yticks(y, [TABLE4_ROWS[p] for p in rows])
    ax.invert_yaxis()
    ax.set_xlabel("Average Turnaround Time (s)")
    ax.set_ylabel("Policy")
    ax.set_title(f"Table 4: Average Turnaround Times (large trace, {TABLE4_BOUND:,.0f} W)", fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=8, loc="outside lower center", ncols=len(series))
    paths = [out_dir / "table4_seconds.png", out_dir / "table4_seconds.svg"]
    atomic_figure(fig, paths[0], dpi=130)
    atomic_figure(fig, paths[1])
    return paths
