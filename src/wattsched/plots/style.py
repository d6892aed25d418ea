"""The figures' shared style: colours per power source and per check (Okabe–Ito, readable by colour-blind readers
and in grey print), facet grids, symmetric-log axes where one series dwarfs the others, and saving as PNG + SVG.

Figures are drawn on bare :class:`matplotlib.figure.Figure` objects (no pyplot), so that making them changes no
global state and needs no display.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from wattsched.core.store import atomic_file

#: Colour per power source (Okabe–Ito, readable by colour-blind readers and in grey print).
SOURCE_COLOURS = {"naive": "#7f7f7f", "predicted": "#E69F00", "real": "#0072B2"}
OTHER_COLOUR = "#009E73"
#: Above this many rectangles the Gantt's jobs are rasterised inside the SVG (a vector file stays small).
RASTERISE_ABOVE = 3000


def source_colour(source: str) -> str:
    """One colour per power source, the same in every figure and in the dashboard."""
    return SOURCE_COLOURS.get(source, OTHER_COLOUR)


def hours_label(seconds: float) -> str:
    h = seconds / 3600.0
    return f"{h:g} h" if abs(h - round(h, 2)) < 1e-9 else f"{seconds:g} s"


#: Colour per power check, the same in every panel and figure (Okabe–Ito): conservative checks cool, aggressive
#: ones warm. The source is drawn as a hatch (predicted) or a plain box (real).
CHECK_COLOURS = {
    "naive": "#7f7f7f",
    "max": "#0072B2",
    "gaussian99": "#56B4E9",
    "gaussian95": "#009E73",
    "gaussian68": "#E69F00",
    "mean": "#D55E00",
}
PREDICTED_HATCH = "////"
#: One estimator's values above this many times the others' make the axis symmetric-log (naive dwarfs the rest).
DWARF_RATIO = 5.0


def check_colour(check: str) -> str:
    """One colour per power check (other checks: a neutral green)."""
    return CHECK_COLOURS.get(check, OTHER_COLOUR)


def grid_shape(panels: int, ncols: int = 2) -> tuple[int, int]:
    cols = min(panels, ncols)
    return -(-panels // cols), cols


def dwarf_ratio(values: dict[str, np.ndarray]) -> float | None:
    """The linear threshold of a symlog axis when one series' extent dwarfs every other's, else None."""
    extents = {k: float(np.nanmax(np.abs(v))) for k, v in values.items() if v.size and np.isfinite(v).any()}
    if len(extents) < 2:
        return None
    top = max(extents, key=lambda k: extents[k])
    rest = max(v for k, v in extents.items() if k != top)
    if rest > 0 and extents[top] > DWARF_RATIO * rest:
        return float(10 ** np.ceil(np.log10(rest)))
    return None


def symlog(ax: Any, linthresh: float) -> None:
    ax.set_yscale("symlog", linthresh=linthresh, linscale=2.0)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:.3g}%"))


def save_figure(fig: Figure, out_dir: str | Path, stem: str, dpi: int = 130) -> list[Path]:
    """``stem.png`` and ``stem.svg`` in ``out_dir``, each drawn into a new temporary and renamed over its name
    (``core.store.atomic_file``): a reader never sees half a figure, and a root-run writer (the advisor's reports)
    never writes through a symlink planted at a name in a shared folder."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    with atomic_file(paths[0], binary=True) as f:
        fig.savefig(f, format="png", dpi=dpi)
    with atomic_file(paths[1], binary=True) as f:
        fig.savefig(f, format="svg")
    return paths
