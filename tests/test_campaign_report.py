"""Campaign report: the summary table, every static figure (PNG and SVG), and the dashboard rendered for real in
headless Chromium (plotly drew each figure; the screenshot is not blank)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from wattsched.campaign.runner import load_results, run_experiment
from wattsched.campaign.spec import parse_spec
from wattsched.campaign.summary import (
    campaign_summary,
    cost_summary,
    estimator_label,
    incomplete_group_count,
    paper_summary,
)
from wattsched.plots.steps import resample_step
from wattsched.report.dashboard import write_dashboard
from wattsched.report.figures import write_figures
from wattsched.report.gantt import default_gantt_run, gantt_data
from wattsched.report.metric_figures import METRICS

CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
ESTIMATORS = [
    "naive",
    "predicted max",
    "real max",
    "predicted gaussian99",
    "real gaussian99",
    "predicted mean",
    "real mean",
]


def chromium_path() -> str | None:
    """The Chromium binary: ``$WATTSCHED_CHROMIUM``, else Debian's ``/usr/bin/chromium``, else on the PATH."""
    env = os.environ.get("WATTSCHED_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> Path:
    spec = parse_spec(
        {
            "name": "report-test",
            "workloads": [
                {
                    "name": "m100",
                    "generate": {"model": "m100", "jobs": 6000, "seed": 2, "target_load": 1.0},
                    "windows": {"count": 2, "hours": 12, "seed": 0},
                }
            ],
            "grid": {"checks": ["naive", "mean", "gaussian99"], "sources": ["real", "predicted"], "caps": [0.5, 0.7]},
        }
    )
    out = tmp_path_factory.mktemp("campaign")
    run = run_experiment(spec, out, workers=1)
    assert run.executed == run.total == 22  # 2 windows × (1 baseline + 2 caps × (naive + 2 checks × 2 sources))
    return out


def test_summary_has_one_row_per_cap_and_estimator_in_order(campaign) -> None:
    results = load_results(campaign)
    table = campaign_summary(results)
    assert table.height == 2 * 5
    assert table["runs"].to_list() == [2] * 10
    order = [e for e in ESTIMATORS if e in set(table["estimator"])]
    assert table.filter(pl.col("cap") == 0.5)["estimator"].to_list() == order
    assert table["trespass"].is_between(0, 1).all()
    means = campaign_summary(results, stat="mean")
    assert means.columns == table.columns
    assert estimator_label("naive", "naive") == "naive" and estimator_label("max", "real") == "real max"
    costs = cost_summary(results)
    assert dict(costs.select("kind", "runs").rows()) == {"baseline": 2, "run": 20}


def test_every_figure_is_written_as_png_and_svg(campaign, tmp_path) -> None:
    paths = write_figures(campaign, tmp_path / "figs")
    run = default_gantt_run(campaign)
    stems = {*METRICS, f"gantt_{run}", "prediction_mae_m100", "prediction_scatter_m100"}
    expected = {f"{s}.{ext}" for s in stems for ext in ("png", "svg")}
    assert {p.name for p in paths} == expected
    for path in paths:
        data = path.read_bytes()
        assert len(data) > 5000, path
        if path.suffix == ".png":
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
        else:
            assert b"<svg" in data[:2000]
    # drawn on two worker processes: the same files, in the same order, byte for byte (the PNGs; an SVG holds
    # its drawing time and ids that differ from process to process)
    again = write_figures(campaign, tmp_path / "figs2", workers=2)
    assert [p.name for p in again] == [p.name for p in paths]
    for one, two in zip(paths, again, strict=True):
        if one.suffix == ".png":
            assert one.read_bytes() == two.read_bytes(), one.name


def test_gantt_rectangles_never_share_a_node(campaign) -> None:
    data = gantt_data(campaign, default_gantt_run(campaign))
    rect = data.rectangles
    nodes = rect.group_by("job_id").agg((pl.col("node_hi") - pl.col("node_lo")).sum().alias("n"))
    sizes = data.jobs.filter(pl.col("end_time") > pl.col("start_time")).join(nodes, on="job_id")
    assert (sizes["size"] == sizes["n"]).all()
    assert sizes.height == data.jobs.filter(pl.col("end_time") > pl.col("start_time")).height
    assert rect["node_hi"].max() <= data.machine_size
    # at any start instant, the rectangles alive cover each node at most once
    s, e = rect["start"].to_numpy(), rect["end"].to_numpy()
    lo, hi = rect["node_lo"].to_numpy(), rect["node_hi"].to_numpy()
    for t in np.unique(s)[:: max(1, np.unique(s).size // 200)]:
        alive = (s <= t) & (e > t)
        cover = np.zeros(data.machine_size + 1, dtype=np.int64)
        np.add.at(cover, lo[alive], 1)
        np.add.at(cover, hi[alive], -1)
        assert np.cumsum(cover).max() <= 1, t


def test_resample_step_keeps_the_extremes() -> None:
    t = np.array([0.0, 1.0, 1.5, 4.0, 10.0])
    v = np.array([2.0, 9.0, 1.0, 3.0, 0.0])
    left, mean, vmin, vmax = resample_step(t, v, 2)
    assert left.tolist() == [0.0, 5.0]
    assert vmax.tolist() == [9.0, 3.0] and vmin.tolist() == [1.0, 3.0]
    assert mean[0] == pytest.approx((2 * 1 + 9 * 0.5 + 1 * 2.5 + 3 * 1) / 5)
    assert mean[1] == pytest.approx(3.0)


def _chromium(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        "--mute-audio",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=10000",
    ]
    return subprocess.run([binary, *flags, *args], capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.slow
def test_dashboard_renders_in_headless_chromium(campaign, tmp_path) -> None:
    html_path = write_dashboard(campaign, tmp_path / "dashboard.html")
    page = html_path.read_text()
    assert not re.search(r"<(script|link)[^>]+(src|href)=", page)  # self-contained: opens offline
    assert html_path.stat().st_size < 15e6
    figures = re.findall(r'<div id="(fig-[^"]+)" class="plotly-graph-div"', page)
    assert {f"fig-{k}" for k in METRICS} | {"fig-gantt", "fig-pred-mae-m100", "fig-pred-density-m100"} == set(figures)
    binary = chromium_path()
    if binary is None:
        message = "Chromium not found (set WATTSCHED_CHROMIUM or apt-get install chromium)"
        if CI:
            pytest.fail(message + "; CI=true requires it")
        pytest.skip(message)
    url = html_path.resolve().as_uri()
    dom = _chromium(binary, tmp_path / "profile", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.sub(r"<script\b.*?</script>", "", dom.stdout, flags=re.S)  # plotly.js itself names its classes
    rendered = dict(re.findall(r'<div id="(fig-[^"]+)" class="([^"]*)"', body))
    assert set(rendered) == set(figures)
    assert all("js-plotly-plot" in classes for classes in rendered.values()), rendered
    assert body.count('class="main-svg"') >= 2 * len(figures)
    assert "Campaign report-test" in body

    shot = html_path.with_name("dashboard.png")  # kept next to the dashboard, to look at
    run = _chromium(binary, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1400,2000", url)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (2000, 1400)
    assert pixels.std() > 0.05  # not a blank page
    assert np.unique((pixels.reshape(-1, 3) * 255).astype(np.uint8), axis=0).shape[0] > 50  # tables and plots


def test_a_campaign_without_predictions_still_reports(tmp_path) -> None:
    spec = parse_spec(
        {
            "name": "real-only",
            "workloads": [
                {
                    "name": "m100",
                    "generate": {"model": "m100", "jobs": 2000, "seed": 4, "target_load": 1.0},
                    "windows": {"count": 1, "hours": 6, "seed": 0},
                }
            ],
            "grid": {"checks": ["mean"], "sources": ["real"], "caps": [0.6]},
        }
    )
    run_experiment(spec, tmp_path / "c", workers=1)
    paths = write_figures(tmp_path / "c", tmp_path / "figs")
    assert not any(p.name.startswith("prediction_") for p in paths)
    assert len(paths) == 2 * (len(METRICS) + 1)
    page = write_dashboard(tmp_path / "c", tmp_path / "d.html").read_text()
    assert "fig-gantt" in page and "fig-pred-" not in page


def _hand_results() -> pl.DataFrame:
    # real mean at cap 0.5 on three windows; window w1 ran twice (two post-window caps would be two groups, so
    # here a duplicate of the same group): the per-group mean comes first, then the mean or median over groups
    rows = [
        ("w0", 0.5, 0.10, True),
        ("w1", 0.5, 0.20, True),
        ("w1", 0.5, 0.40, False),
        ("w2", 0.5, 0.90, False),
        ("w0", 0.7, 0.00, False),
        ("w1", 0.7, 0.30, True),
        ("w2", 0.7, 0.60, True),
    ]
    return pl.DataFrame(
        {"kind": "run", "workload": [r[0] for r in rows], "cap": [r[1] for r in rows], "policy": "easy-pc",
         "check": "mean", "source": "real", "p_turnaround_increase": [r[2] for r in rows],
         "p_trespass": [r[3] for r in rows]}
    )  # fmt: skip


def test_summary_aggregates_per_window_and_cap_group_then_over_groups() -> None:
    results = _hand_results()
    mean = campaign_summary(results)  # the paper's mean is the default
    half = mean.filter(pl.col("cap") == 0.5).row(0, named=True)
    # groups at 0.5: w0 0.10, w1 (0.20 + 0.40)/2 = 0.30, w2 0.90 → mean 1.3/3, median 0.30
    assert half["turnaround_inc"] == pytest.approx(1.3 / 3) and half["runs"] == 4
    assert half["trespass"] == pytest.approx((1 + 0.5 + 0) / 3)
    median = campaign_summary(results, stat="median").filter(pl.col("cap") == 0.5).row(0, named=True)
    assert median["turnaround_inc"] == pytest.approx(0.30)
    assert median["trespass"] == pytest.approx(half["trespass"])  # always a share
    pooled = paper_summary(results).row(0, named=True)
    # six (window, cap) groups: 0.10, 0.30, 0.90, 0.00, 0.30, 0.60
    assert pooled["groups"] == 6 and pooled["turnaround_inc"] == pytest.approx(2.2 / 6)
    assert pooled["trespass"] == pytest.approx((1 + 0.5 + 0 + 0 + 1 + 1) / 6)
    assert paper_summary(results, stat="median").row(0, named=True)["turnaround_inc"] == pytest.approx(0.30)
    with pytest.raises(ValueError, match="stat must be one of"):
        campaign_summary(results, stat="mode")
    # a swept post-window cap is a key of its own, never pooled
    swept = pl.concat([results.with_columns(pl.lit("none").alias("post_window_cap")),
                       results.with_columns(pl.lit("dynamic_range").alias("post_window_cap"))])  # fmt: skip
    assert campaign_summary(swept)["post_window_cap"].to_list() == ["dynamic_range"] * 2 + ["none"] * 2
    assert paper_summary(swept).height == 2


def test_report_aggregate_option_from_the_cli(campaign, tmp_path) -> None:
    from typer.testing import CliRunner

    from wattsched.cli import app

    runner = CliRunner()
    for aggregate, word in (("median", "medians"),):  # the mean (default) is test_campaign's report test
        result = runner.invoke(app, ["campaign", "report", str(campaign), "--output", str(tmp_path / aggregate),
                                     "--aggregate", aggregate])  # fmt: skip
        assert result.exit_code == 0, result.output
        assert f"{word} over workload windows" in result.output and "caps pooled" in result.output
    result = runner.invoke(app, ["campaign", "report", str(campaign), "--aggregate", "mode"])
    assert result.exit_code == 2 and "'mode' is not one of 'mean', 'median'" in result.output


def test_a_partial_campaign_compares_only_the_groups_every_estimator_finished() -> None:
    # two estimators over windows w0..w2 at one cap; "real max" has not run w2 yet (a stopped campaign)
    def rows(check: str, values: dict[str, float]) -> pl.DataFrame:
        return pl.DataFrame(
            {"kind": "run", "workload": list(values), "cap": 0.5, "policy": "easy-pc", "check": check,
             "source": "real", "p_turnaround_increase": list(values.values())}
        )  # fmt: skip

    results = pl.concat([rows("mean", {"w0": 0.1, "w1": 0.2, "w2": 0.9}), rows("max", {"w0": 0.3, "w1": 0.5})])
    table = campaign_summary(results)
    by = {r["estimator"]: r for r in table.iter_rows(named=True)}
    # w2 is left out for both, so that each mean is over the same two windows
    assert by["real mean"]["runs"] == 2 and by["real mean"]["turnaround_inc"] == pytest.approx(0.15)
    assert by["real max"]["runs"] == 2 and by["real max"]["turnaround_inc"] == pytest.approx(0.4)
    assert incomplete_group_count(results) == (1, 3)
    assert incomplete_group_count(_hand_results()) == (0, 6)


def test_report_on_a_partial_campaign_warns_how_much_it_left_out(campaign, tmp_path) -> None:
    import shutil

    from typer.testing import CliRunner

    from wattsched.cli import app

    partial = tmp_path / "partial"
    shutil.copytree(campaign, partial)
    results = sorted((partial / "results").glob("*.json"))
    for path in results[: len(results) // 3]:
        path.unlink()
    done = len(results) - len(results) // 3
    result = CliRunner().invoke(app, ["campaign", "report", str(partial), "--output", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert f"partial campaign: {done:,} of {len(results):,} runs done" in result.output
    assert "(window, cap) groups left out" in result.output
