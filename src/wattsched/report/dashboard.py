"""One self-contained HTML dashboard of a campaign: plotly.js inlined (it opens offline, from a file or a mail
attachment), the summary tables, interactive versions of the static figures, a Gantt chart with the power
timeline of one run, and the prediction errors.

Big runs are reduced before they are embedded (the Gantt keeps the jobs with the most node-hours, the power
timeline becomes per-bin mean, minimum and maximum), so that the file stays a few megabytes whatever the
campaign's size.
"""

from __future__ import annotations

import html
import time
from pathlib import Path
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import polars as pl
from jinja2 import Environment, PackageLoader
from markupsafe import Markup
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from wattsched.campaign.runner import load_results
from wattsched.campaign.summary import (
    SOURCE_ORDER,
    SUMMARY_METRICS,
    campaign_summary,
    capped_runs,
    cost_summary,
    estimator_order,
)
from wattsched.core.scalars import as_float
from wattsched.core.store import CampaignError, atomic_write, done_ids, read_manifest
from wattsched.plots.steps import resample_step
from wattsched.plots.style import source_colour
from wattsched.report.gantt import GanttData, default_gantt_run, gantt_data, run_title
from wattsched.report.metric_figures import METRICS
from wattsched.report.prediction_figures import per_user_errors, predicted_metrics, prediction_files

#: Most jobs drawn in the interactive Gantt (the largest by node-hours); the static figure draws them all.
MAX_GANTT_JOBS = 4000
#: Bins of the interactive power timeline.
POWER_BINS = 3000
_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"format": "svg"}}
_VIRIDIS = ["#440154", "#46327e", "#365c8d", "#277f8e", "#1fa187", "#4ac16d", "#a0da39", "#fde725"]


def _translucent(hex_colour: str, alpha: float = 0.45) -> str:
    r, g, b = (int(hex_colour[k : k + 2], 16) for k in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _div(fig: go.Figure, name: str, height: int) -> str:
    fig.update_layout(template="plotly_white", height=height)
    fig.update_layout(margin={"l": 70, "r": 30, "t": 80, "b": fig.layout.margin.b or 60})
    return pio.to_html(
        fig, include_plotlyjs=False, full_html=False, div_id=f"fig-{name}", config=_CONFIG, default_height=f"{height}px"
    )


# ----------------------------------------------------------------------------------------------------- figures


#: Facets per row in the metric figures (they wrap below it).
FACET_COLUMNS = 2


def facet_rows(results: pl.DataFrame) -> int:
    """Rows of facets of :func:`metric_figure` (policies × wrapped caps), to size its figure."""
    runs = capped_runs(results)
    if runs.is_empty():
        return 1
    caps = runs["cap"].n_unique()
    return runs["policy"].n_unique() * -(-caps // min(caps, FACET_COLUMNS))


def metric_figure(results: pl.DataFrame, key: str) -> go.Figure:
    """Interactive box plots of one metric of :data:`~wattsched.report.metric_figures.METRICS` per estimator (all
    runs shown, hover names the workload window), one facet per cap and policy."""
    spec = METRICS[key]
    runs = capped_runs(results).with_columns(spec.value().cast(pl.Float64).alias("_y"))
    estimators = estimator_order(runs)
    caps = sorted(runs["cap"].unique().to_list())
    policies = sorted(runs["policy"].unique().to_list())
    titles = [f"cap {c:g}" + (f" · {p}" if len(policies) > 1 else "") for p in policies for c in caps]
    cols = min(len(caps), FACET_COLUMNS)  # facets wrap: at most FACET_COLUMNS to a row, never one wide strip
    nrows = len(policies) * -(-len(caps) // cols)
    fig = make_subplots(
        rows=nrows,
        cols=cols,
        shared_yaxes=True,
        subplot_titles=titles,
        horizontal_spacing=0.04,
        vertical_spacing=0.3 / nrows,
    )
    checks = list(dict.fromkeys(runs.filter(pl.col("estimator") == e)["check"][0] for e in estimators))
    present = set(runs["source"].unique().to_list())
    order = [s for s in SOURCE_ORDER if s in present] + sorted(present - set(SOURCE_ORDER))
    shown: set[str] = set()
    for p_index, policy in enumerate(policies):
        for c_index, cap in enumerate(caps):
            k = p_index * len(caps) + c_index
            i, j = k // cols + 1, k % cols + 1
            cell = runs.filter((pl.col("policy") == policy) & (pl.col("cap") == cap) & pl.col("_y").is_not_null())
            for src in order:
                sel = cell.filter(pl.col("source") == src)
                if sel.is_empty():
                    continue
                # a check's sources side by side (one offset group each); naive, alone, centred on its own
                fig.add_trace(
                    go.Box(
                        x=sel["check"].to_list(),
                        y=sel["_y"].to_list(),
                        name=src,
                        legendgroup=src,
                        offsetgroup=src,
                        alignmentgroup="naive" if src == "naive" else "sources",
                        width=0.28 if src == "naive" else None,
                        showlegend=src not in shown,
                        fillcolor=_translucent(source_colour(src)),
                        line={"color": source_colour(src), "width": 1.5},
                        marker={"color": source_colour(src), "size": 5, "line": {"color": "#333", "width": 0.6}},
                        boxpoints="all",
                        jitter=0.5,
                        pointpos=0,
                        text=sel["workload"].to_list(),
                        hovertemplate=f"%{{text}}<br>{src} %{{x}}: %{{y:.1%}}<extra></extra>",
                    ),
                    row=i,
                    col=j,
                )
                shown.add(src)
            if spec.reference == "cap":
                fig.add_hline(y=cap, line={"color": "black", "width": 2}, row=i, col=j)
            elif spec.reference is not None:
                fig.add_hline(y=spec.reference, line={"color": "grey", "width": 1, "dash": "dash"}, row=i, col=j)
    fig.update_xaxes(categoryorder="array", categoryarray=checks, tickangle=-30)
    fig.update_yaxes(tickformat=".0%", rangemode="tozero" if key != "max_instantaneous_break" else "normal")
    if spec.reference == "cap":  # the cap lines inside the frame, not on its edge
        high = max(as_float(runs["_y"].max() or 0.0), max(caps))
        fig.update_yaxes(range=[0, 1.08 * high])
    fig.update_yaxes(title_text=spec.ylabel, col=1)
    paper = f" (paper 000 {spec.paper})" if spec.paper else ""
    fig.update_layout(
        title={"text": f"{spec.title}{paper}", "x": 0.01},
        boxmode="group",
        legend={
            "title": "power source",
            "orientation": "h",
            "y": 0.01,
            "yanchor": "bottom",
            "x": 0.5,
            "xanchor": "center",
            "yref": "container",
        },
        margin={"b": 115},
    )
    return fig


def _polygons(rect: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Closed rectangles in one x/y pair of arrays, NaN between them (one trace draws them all)."""
    s, e = rect["start"].to_numpy() / 3600.0, rect["end"].to_numpy() / 3600.0
    lo, hi = rect["node_lo"].to_numpy().astype(float), rect["node_hi"].to_numpy().astype(float)
    gap = np.full(s.size, np.nan)
    x = np.column_stack([s, e, e, s, s, gap]).ravel()
    y = np.column_stack([lo, lo, hi, hi, lo, gap]).ravel()
    return np.round(x, 4), y


def gantt_figure(data: GanttData) -> go.Figure:
    """The run's Gantt chart (rectangles coloured by per-node dynamic power, hover per job) above its dynamic
    power and cap, on one zoomable time axis. Big runs keep their :data:`MAX_GANTT_JOBS` largest jobs."""
    jobs = data.jobs.filter(pl.col("end_time") > pl.col("start_time")).with_columns(
        ((pl.col("end_time") - pl.col("start_time")) * pl.col("size")).alias("_area")
    )
    kept = jobs.sort("_area", descending=True).head(MAX_GANTT_JOBS)
    rect = data.rectangles.join(kept.select("job_id", "dyn_watts_per_node"), on="job_id", how="inner")
    watts = rect["dyn_watts_per_node"].cast(pl.Float64).fill_null(np.nan).to_numpy()
    finite = watts[np.isfinite(watts)]
    top = float(np.percentile(finite, 99)) if finite.size else 1.0
    level = np.where(np.isfinite(watts), np.clip(watts / top * len(_VIRIDIS), 0, len(_VIRIDIS) - 1), -1).astype(int)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.6, 0.4], vertical_spacing=0.05)
    step = top / len(_VIRIDIS)
    for k, colour in [(-1, "#bbbbbb"), *enumerate(_VIRIDIS)]:
        part = rect.filter(pl.Series(level == k))
        if part.is_empty():
            continue
        x, y = _polygons(part)
        label = "unknown power" if k < 0 else f"{k * step:.0f}–{(k + 1) * step:.0f} W/node"
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                fill="toself",
                fillcolor=colour,
                mode="lines",
                line={"width": 0},
                name=label,
                legendgroup="jobs",
                legendgrouptitle_text="job power",
                hoverinfo="skip",
            ),
            row=1,
            col=1,
        )
    centres = kept.join(
        data.rectangles.group_by("job_id").agg(((pl.col("node_lo").min() + pl.col("node_hi").max()) / 2).alias("_mid")),
        on="job_id",
        how="left",
    )
    fig.add_trace(
        go.Scatter(
            x=(((centres["start_time"] + centres["end_time"]) / 2) / 3600.0).round(4).to_numpy(),
            y=centres["_mid"].to_numpy(),
            mode="markers",
            marker={"size": 6, "opacity": 0},
            showlegend=False,
            customdata=np.column_stack(
                [
                    centres["job_id"].to_numpy(),
                    centres["size"].to_numpy(),
                    (centres["start_time"] / 3600.0).round(3).to_numpy(),
                    (centres["end_time"] / 3600.0).round(3).to_numpy(),
                    (centres["wait"] / 60.0).round(1).to_numpy(),
                    centres["dyn_watts_per_node"].fill_null(np.nan).round(0).to_numpy(),
                ]
            ),
            hovertemplate="job %{customdata[0]}: %{customdata[1]} nodes<br>%{customdata[2]} h → %{customdata[3]} h"
            "<br>waited %{customdata[4]} min<br>%{customdata[5]} W/node dynamic<extra></extra>",
        ),
        row=1,
        col=1,
    )

    t = data.power["time"].to_numpy()
    dyn = data.power["dynamic"].to_numpy()
    if t.size > 2 * POWER_BINS:
        left, mean, vmin, vmax = resample_step(t, dyn, POWER_BINS)
        x = np.round(left / 3600.0, 4)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.round(vmin / 1e3, 2),
                mode="lines",
                line={"width": 0, "shape": "hv"},
                showlegend=False,
                hoverinfo="skip",
            ),
            row=2,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.round(vmax / 1e3, 2),
                mode="lines",
                fill="tonexty",
                fillcolor="rgba(0,114,178,0.25)",
                line={"width": 0, "shape": "hv"},
                name="dynamic power, min–max per bin",
                hoverinfo="skip",
            ),
            row=2,
            col=1,
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=np.round(mean / 1e3, 2),
                mode="lines",
                name="dynamic power, bin mean",
                line={"color": "#0072B2", "width": 1, "shape": "hv"},
                hovertemplate="%{x:.2f} h: %{y:.0f} kW<extra></extra>",
            ),
            row=2,
            col=1,
        )
    else:
        fig.add_trace(
            go.Scatter(
                x=np.round(t / 3600.0, 4),
                y=np.round(dyn / 1e3, 2),
                mode="lines",
                name="dynamic power",
                line={"color": "#0072B2", "width": 1, "shape": "hv"},
                hovertemplate="%{x:.2f} h: %{y:.0f} kW<extra></extra>",
            ),
            row=2,
            col=1,
        )
    if "cap" in data.power.columns and data.power["cap"].is_not_null().any() and t.size:
        cap = data.power["cap"].to_numpy()
        # null (no cap after the window) equals null: NaN != NaN would keep every row of the timeline
        change = np.concatenate(([True], data.power["cap"].ne_missing(data.power["cap"].shift(1)).to_numpy()[1:]))
        fig.add_trace(
            go.Scatter(
                x=np.append(t[change], t[-1]) / 3600.0,
                y=np.append(cap[change], cap[-1]) / 1e3,
                mode="lines",
                name="cap",
                line={"color": "black", "width": 2, "shape": "hv"},
                hovertemplate="cap %{y:.0f} kW<extra></extra>",
            ),
            row=2,
            col=1,
        )
    fig.add_vrect(x0=0, x1=data.window_end / 3600.0, fillcolor="#E69F00", opacity=0.1, line_width=0, row="all", col=1)
    fig.update_yaxes(title_text="nodes (assigned greedily)", range=[0, data.machine_size], row=1, col=1)
    fig.update_yaxes(title_text="dynamic power (kW)", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="time since the window start (h)", row=2, col=1)
    shown = "" if kept.height == jobs.height else f"; the {kept.height:,} largest of {jobs.height:,} jobs shown"
    fig.update_layout(
        title={"text": f"Run {data.run['id']} — {html.escape(run_title(data.run))}{shown}", "x": 0.01},
        hovermode="closest",
        legend={"groupclick": "toggleitem"},
    )
    return fig


def prediction_box_figure(predictions: pl.DataFrame, name: str, method: str = "") -> go.Figure:
    """Per-user MAE per metric: the predictor against the global-mean baseline (paper 000 Fig. 3)."""
    errors = per_user_errors(predictions)
    fig = make_subplots(rows=1, cols=len(errors), subplot_titles=[m.replace("_", " ") for m in errors])
    for j, (metric, series) in enumerate(errors.items(), start=1):
        for label, colour in (("predicted", "#E69F00"), ("global mean", "#999999")):
            fig.add_trace(
                go.Box(
                    y=np.round(series[label], 2),
                    name=label + (f" ({method})" if method and label == "predicted" else ""),
                    marker={"color": colour, "size": 3},
                    boxpoints="outliers",
                    showlegend=False,
                    hovertemplate=f"{metric}: %{{y:.0f}} W<extra></extra>",
                ),
                row=1,
                col=j,
            )
    fig.update_yaxes(title_text="per-user MAE (W per node)", col=1)
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(
        title={"text": f"Power prediction error per user, {html.escape(name)} (paper 000 Fig. 3)", "x": 0.01}
    )
    return fig


def prediction_density_figure(predictions: pl.DataFrame, name: str, bins: int = 60) -> go.Figure:
    """Predicted against true per-node power as 2-D histograms (colour = log10 of the job count)."""
    metrics = predicted_metrics(predictions)
    fig = make_subplots(
        rows=1, cols=len(metrics), subplot_titles=[m.replace("_", " ") for m in metrics], horizontal_spacing=0.08
    )
    for j, m in enumerate(metrics, start=1):
        true = predictions[m].cast(pl.Float64).fill_null(np.nan).to_numpy()
        pred = predictions[f"pred_{m}"].cast(pl.Float64).fill_null(np.nan).to_numpy()
        ok = np.isfinite(true) & np.isfinite(pred)
        both = np.concatenate([true[ok], pred[ok]])
        top = float(np.percentile(both, 99.5)) * 1.1 if both.size else 1.0
        top = max(top, float(both.max()) * 1.01) if both.size and both.max() <= 1.5 * top else top
        counts, xe, ye = np.histogram2d(true[ok], pred[ok], bins=bins, range=[[0, top], [0, top]])
        z = np.where(counts > 0, np.log10(np.maximum(counts, 1)), np.nan).T
        fig.add_trace(
            go.Heatmap(
                x=np.round((xe[:-1] + xe[1:]) / 2, 1),
                y=np.round((ye[:-1] + ye[1:]) / 2, 1),
                z=np.round(z, 3),
                customdata=counts.T.astype(int),
                colorscale="Magma",
                reversescale=True,
                showscale=j == len(metrics),
                colorbar={"title": "jobs", "tickvals": [0, 1, 2, 3, 4], "ticktext": ["1", "10", "100", "1k", "10k"]},
                hovertemplate="true %{x:.0f} W, predicted %{y:.0f} W: %{customdata} jobs<extra></extra>",
            ),
            row=1,
            col=j,
        )
        fig.add_trace(
            go.Scatter(
                x=[0, top],
                y=[0, top],
                mode="lines",
                line={"color": "#0072B2", "dash": "dash"},
                showlegend=False,
                hoverinfo="skip",
            ),
            row=1,
            col=j,
        )
        fig.update_xaxes(title_text="true (W per node)", range=[0, top], row=1, col=j)
        fig.update_yaxes(title_text="predicted (W per node)" if j == 1 else None, range=[0, top], row=1, col=j)
    fig.update_layout(title={"text": f"Predicted against true job power, {html.escape(name)}", "x": 0.01})
    return fig


# ------------------------------------------------------------------------------------------------------ tables


def _cell(value: Any, column: str) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "–"
    if isinstance(value, float):
        if column in SUMMARY_METRICS.values():
            return f"{value:.1%}" if abs(value) >= 5e-4 else "0.0%"  # no "-0.0%"
        if column.endswith("_s"):
            return f"{value:,.2f}"
        return f"{value:g}"
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(str(value))


def html_table(frame: pl.DataFrame, caption: str = "") -> str:
    """A plain HTML table (numbers right-aligned, fractions of :data:`SUMMARY_METRICS` as percents)."""
    if frame.is_empty():
        return f"<p class='note'>{html.escape(caption)}: nothing yet.</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in frame.columns)
    numeric = [frame[c].dtype.is_numeric() for c in frame.columns]
    body = "".join(
        "<tr>"
        + "".join(
            f"<td class='{'num' if n else 'txt'}'>{_cell(v, c)}</td>"
            for v, c, n in zip(row, frame.columns, numeric, strict=True)
        )
        + "</tr>"
        for row in frame.iter_rows()
    )
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _spec_rows(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    spec = manifest["spec"]
    rows = [("campaign", spec["name"]), ("platform", spec["platform"])]
    for wl in spec["workloads"]:
        if wl.get("generate"):
            g = wl["generate"]
            origin = f"generated {g['model']}, {g['jobs']:,} jobs, seed {g['seed']}" + (
                f", target load {g['target_load']:g}" if g.get("target_load") else ""
            )
        else:
            origin = f"file {wl['path']}"
        w = wl.get("windows")
        cut = (
            (
                f"; {w['count']} window(s) of {w['hours']:g} h (seed {w['seed']}, pre-state "
                f"{'on' if w['prestate'] else 'off'})"
            )
            if w
            else ""
        )
        rows.append((f"workload {wl['name']}", origin + cut))
    g = spec["grid"]
    rows += [
        ("policies", ", ".join(g["policies"])),
        ("checks", ", ".join(g["checks"])),
        ("sources", ", ".join(g["sources"])),
        ("caps", ", ".join(f"{c:g}" for c in g["caps"]) + " of the dynamic range"),
        ("seeds", ", ".join(str(s) for s in g["seeds"])),
        ("power window", f"{g['power_window']:g} s from t = 0; reservation {g['reservation']}"),
        ("prediction", f"{spec['prediction']['method']} (completion {spec['prediction']['completion']})"),
        ("baselines", "EASY without a cap, one per window" if spec["baselines"] else "none"),
        ("spec hash", manifest["spec_hash"]),
    ]
    return rows


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#1f3b57;color:#fff;padding:14px 28px}
header h1{margin:0;font-size:22px} header p{margin:4px 0 0;opacity:.85;font-size:13px}
nav{background:#fff;border-bottom:1px solid #ddd;padding:8px 28px;position:sticky;top:0;z-index:10}
nav a{margin-right:18px;color:#1f3b57;text-decoration:none;font-size:14px} nav a:hover{text-decoration:underline}
main{max-width:1500px;margin:0 auto;padding:8px 28px 40px}
section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:14px 18px;margin:18px 0}
h2{font-size:18px;margin:4px 0 10px;color:#1f3b57}
table{border-collapse:collapse;font-size:13px;margin:8px 0 14px}
caption{text-align:left;font-weight:600;padding:4px 0;color:#444}
th,td{border-bottom:1px solid #e6e6e6;padding:3px 10px} th{background:#f1f4f7;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums} tbody tr:hover{background:#f6f9fc}
.note{color:#666;font-size:13px} .grid{display:flex;flex-wrap:wrap;gap:28px;align-items:flex-start}
.plot{margin:10px 0 4px} .scroll{max-height:560px;overflow:auto;display:inline-block}
.scroll thead th{position:sticky;top:0} details summary{cursor:pointer;color:#1f3b57;margin:6px 0}
"""


# ------------------------------------------------------------------------------------------------------- page


def write_dashboard(campaign_dir: str | Path, path: str | Path, *, gantt_run: str | None = None) -> Path:
    """Write the campaign's dashboard as one HTML file (no network needed to view it) and return its path."""
    campaign_dir = Path(campaign_dir)
    manifest = read_manifest(campaign_dir)
    results = load_results(campaign_dir)
    if capped_runs(results).is_empty():
        raise CampaignError(f"{campaign_dir}: no finished capped run yet (run the campaign first)")
    done = done_ids(campaign_dir)
    runs = manifest["runs"]
    kinds = pl.DataFrame([{"workload": r["workload"], "kind": r["kind"], "done": r["id"] in done} for r in runs])
    progress = (
        kinds.group_by("kind")
        .agg(pl.len().alias("runs"), pl.col("done").sum().alias("done"))
        .with_columns((pl.col("runs") - pl.col("done")).alias("to do"))
        .sort("kind")
    )

    sections: list[tuple[str, str, str]] = []
    overview = (
        "<div class='grid'><div>"
        + html_table(pl.DataFrame(_spec_rows(manifest), schema=["field", "value"], orient="row"), "specification")
        + "</div><div>"
        + html_table(progress, "runs (from the manifest and the result files)")
        + html_table(cost_summary(results), "cost per run: wall-clock seconds (elapsed_s), all workers")
        + "</div></div>"
    )
    sections.append(("overview", "Overview", overview))
    summary = (
        "<p class='note'>Per policy × cap × estimator, over workload windows. utilisation = mean dynamic power in "
        "the window / cap; trespass = share of runs whose power went above the cap; max_break = max power / cap "
        "− 1; above_cap = share of the window above the cap; *_inc = increase against uncapped EASY; in_window = "
        "share of the workload's jobs started in the window.</p>"
        + "<div class='scroll'>"
        + html_table(
            campaign_summary(results, stat="mean"),
            "means per (window, cap) group, then over groups (paper 000; trespass: share of runs)",
        )
        + "</div>"
        + "<details><summary>medians</summary><div class='scroll'>"
        + html_table(campaign_summary(results, stat="median"), "medians")
        + "</div></details>"
    )
    sections.append(("summary", "Summary tables", summary))
    rows = facet_rows(results)
    plots = "".join(
        f"<div class='plot'>{_div(metric_figure(results, key), key, 200 + 330 * rows)}</div>" for key in METRICS
    )
    sections.append(("metrics", "Metrics per estimator and cap", plots))

    run = gantt_run or default_gantt_run(campaign_dir, results)
    gantt = _div(gantt_figure(gantt_data(campaign_dir, run)), "gantt", 820)
    note = (
        "<p class='note'>Nodes are assigned greedily for drawing (the schedule fixes how many nodes a job "
        "holds, not which). The shaded band is the power window. Drag to zoom; both panels share the time "
        "axis.</p>"
    )
    sections.append(("gantt", "One run: schedule and power", note + gantt))

    preds = prediction_files(campaign_dir)
    if preds:
        parts = []
        for name, (frame, report) in preds.items():
            method = str(report.get("method", ""))
            if not predicted_metrics(frame):
                continue
            if "user_id" in frame.columns:  # per-user errors need users
                parts.append(_div(prediction_box_figure(frame, name, method), f"pred-mae-{name}", 460))
            parts.append(_div(prediction_density_figure(frame, name), f"pred-density-{name}", 480))
        sections.append(("predictions", "Power prediction errors", "".join(parts)))

    name = manifest["spec"]["name"]
    env = Environment(loader=PackageLoader("wattsched.report", "templates"), autoescape=True)
    page = env.get_template("dashboard.html.j2").render(
        name=name,
        css=Markup(_CSS),
        plotly_js=Markup(get_plotlyjs()),
        finished=f"{len(done & {r['id'] for r in runs}):,}",
        planned=f"{len(runs):,}",
        folder=str(campaign_dir),
        stamp=time.strftime("%Y-%m-%d %H:%M", time.localtime()),
        sections=[(sid, title, Markup(content)) for sid, title, content in sections],
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, page)  # a kill leaves the former dashboard whole
    return path
