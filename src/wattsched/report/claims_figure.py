"""``paper_vs_ours``: every number a paper states beside ours, in one figure.

One row per number (a ``number`` claim's value, or the numbers part of an order claim; a claim with labels gives
one row per label). Numbers differ in unit and size, so the x axis is the distance from the paper's value in units
of the claim's own tolerance band: ``(ours − paper) / band``. The band is the shaded strip [−1, 1]; the paper's
value is the line at 0; each seed's value is a small dot, the pooled value a diamond (green inside the band,
orange outside); the claim's verdict (seed rule included) is in brackets after its name. Values past ±``CLIP``
bands sit on the edge as triangles, with their value written beside them. Numbers computed on stand-in data
(``not checkable``) and bounds ("more than 30%", a zero band) have no band to scale by: a second panel shows their
relative difference from the paper's value (stand-ins grey and not judged, bounds black).

The figure reads only the ``claims.json`` payload (plain dicts), so this module does not import the reproduce
layer above it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from wattsched.plots.style import save_figure

CLIP = 4.0
INSIDE, OUTSIDE = "#009E73", "#D55E00"


def _numbers(value: Any, n: int) -> list[float | None]:
    if isinstance(value, bool) or value is None:
        return [None] * n
    if isinstance(value, int | float):
        return [float(value)] + [None] * (n - 1)
    vals = [float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None for v in value]
    return (vals + [None] * n)[:n]


def _unit(unit: str) -> str:
    return unit if unit in ("%", "") else f" {unit}"


def figure_rows(payload: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(judged rows, stand-in rows): one per stated number, with paper value, band, pooled and per-seed values."""
    judged, stand_ins = [], []
    for r in payload["claims"]:
        if r["kind"] == "setup" or not r["target"]:
            continue
        n = len(r["target"])
        labels = r["labels"] or ([""] * n)
        pooled = _numbers(r["ours"]["value"], n)
        seeds = [_numbers(s["value"], n) for s in r["per_seed"]]
        for k, target in enumerate(r["target"]):
            if pooled[k] is None:
                continue
            row = {
                "id": r["id"],
                "label": labels[k] if n > 1 else "",
                "claim": r["claim"],
                "paper": target,
                "pooled": pooled[k],
                "seeds": [s[k] for s in seeds if s[k] is not None],
                "verdict": r["verdict"],
                "unit": r["unit"],
            }
            tol = r["tolerance"]
            absolute = (tol["abs"][k] if isinstance(tol["abs"], list) else tol["abs"]) if tol else 0.0
            band = max(absolute, tol["rel"] * abs(target)) if tol else 0.0
            row["stand_in"] = r["verdict"] == "not checkable" or not tol
            if row["stand_in"] or band <= 0:  # a stand-in, or a bound ("more than 30%"): no band to scale by
                stand_ins.append(row)
            else:
                row["band"] = band
                judged.append(row)
    return judged, stand_ins


def _name(row: dict[str, Any]) -> str:
    label = f" {row['label']}" if row["label"] else ""
    u = _unit(row["unit"])
    return f"{row['id']}{label}: paper {row['paper']:g}{u}, ours {row['pooled']:.3g}{u} [{row['verdict']}]"


def plot_paper_vs_ours(payload: dict[str, Any], out_dir: Path, stem: str = "paper_vs_ours") -> list[Path]:
    """Draw the figure into ``out_dir`` (PNG and SVG) and return both paths, PNG first."""
    judged, stand_ins = figure_rows(payload)
    panels = [p for p in (judged, stand_ins) if p] or [[]]
    heights = [max(1.2, 0.34 * len(p) + 0.9) for p in panels]
    fig = Figure(figsize=(10, sum(heights) + 0.9), layout="constrained")
    axes = fig.subplots(len(panels), 1, height_ratios=heights, squeeze=False)[:, 0]
    for ax, rows in zip(axes, panels, strict=True):
        if not rows:
            ax.text(0.5, 0.5, "no number among this paper's claims", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
        elif rows is judged:
            _judged_panel(ax, rows)
        else:
            _stand_in_panel(ax, rows)
    seeds = ", ".join(str(s) for s in payload["seeds"])
    fig.suptitle(
        f"Paper {payload['paper']}: the paper's numbers and ours ({'quick' if payload['quick'] else 'full'}, seeds "
        f"{seeds})",
        fontsize=11,
    )
    paths = save_figure(fig, out_dir, stem)
    return sorted(paths, key=lambda p: p.suffix != ".png")


def _clip(x: float) -> float:
    return max(-CLIP, min(CLIP, x))


def _judged_panel(ax: Any, rows: list[dict[str, Any]]) -> None:
    ys = list(range(len(rows)))[::-1]
    ax.axvspan(-1, 1, color="#e8e8e8", zorder=0, label="tolerance band")
    ax.axvline(0, color="#444", lw=1, zorder=1, label="paper")
    for y, row in zip(ys, rows, strict=True):
        band = row["band"]
        xs = [(v - row["paper"]) / band for v in row["seeds"]]
        ax.scatter([_clip(x) for x in xs], [y] * len(xs), s=14, color="#555", alpha=0.6, zorder=2)
        x = (row["pooled"] - row["paper"]) / band
        colour = INSIDE if abs(x) <= 1 + 1e-9 else OUTSIDE
        marker = "D" if abs(x) <= CLIP else (">" if x > 0 else "<")
        ax.scatter([_clip(x)], [y], s=48, marker=marker, color=colour, edgecolor="k", lw=0.5, zorder=3)
        if abs(x) > CLIP:
            ax.annotate(
                f"{x:+.1f}",
                (_clip(x), y),
                textcoords="offset points",
                xytext=(-8 if x > 0 else 8, 6),
                ha="right" if x > 0 else "left",
                fontsize=7,
            )
    ax.set_yticks(ys, [_name(r) for r in rows], fontsize=8)
    ax.set_xlim(-CLIP - 0.4, CLIP + 0.4)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("(ours − paper) / tolerance band: inside [−1, 1] holds; dots: seeds; diamond: pooled")
    ax.scatter([], [], marker="D", color=INSIDE, edgecolor="k", lw=0.5, label="pooled, inside the band")
    ax.scatter([], [], marker="D", color=OUTSIDE, edgecolor="k", lw=0.5, label="pooled, outside the band")
    ax.scatter([], [], s=14, color="#555", label="one seed")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.09), ncol=5, fontsize=7, frameon=False)
    ax.grid(axis="x", color="#ddd", lw=0.5)


def _stand_in_panel(ax: Any, rows: list[dict[str, Any]]) -> None:
    ys = list(range(len(rows)))[::-1]
    ax.axvline(0, color="#444", lw=1)
    for y, row in zip(ys, rows, strict=True):
        scale = abs(row["paper"]) or 1.0
        xs = [100 * (v - row["paper"]) / scale for v in row["seeds"]]
        colour = "#999" if row["stand_in"] else "#333"
        ax.scatter(xs, [y] * len(xs), s=14, color=colour, alpha=0.6)
        ax.scatter(
            [100 * (row["pooled"] - row["paper"]) / scale], [y], s=40, marker="o", facecolor="none", edgecolor=colour
        )
    ax.set_yticks(ys, [_name(r) for r in rows], fontsize=8)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel("no band: stand-in data (grey, not judged) and bounds (black): (ours − paper) / paper, %")
    ax.grid(axis="x", color="#ddd", lw=0.5)
