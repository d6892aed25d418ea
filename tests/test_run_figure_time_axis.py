"""The run figure's time axis (issue 30, item 11): a trace with a real start time is drawn against dates, not
"456000 h" since 1970, and the figure zooms to a time window (``report --from/--to``, ``run.plot(window=...)``)."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from wattsched import run_policy, write_run
from wattsched.plots.run import parse_instant
from wattsched.report.run_report import write_run_report
from wattsched.workload.generate import generate_lublin

START = datetime(2022, 1, 3, tzinfo=UTC).timestamp()


def _time_axis(fig):
    (ax,) = [a for a in fig.axes if a.get_xlabel().startswith("time")]
    fig.canvas.draw()
    return ax


def test_a_trace_with_a_start_time_reads_dates() -> None:
    read = generate_lublin(300, 64, seed=2)
    dated = read._replace(provenance=dataclasses.replace(read.provenance, unix_start_time=START))
    run = run_policy(dated, "easy")
    assert run.summary["workload"]["clock_origin"] == START
    ax = _time_axis(run.plot())
    assert ax.get_xlabel() == "time (UTC)"
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels and all(label.startswith("2022-01") for label in labels)

    plain = _time_axis(run_policy(read, "easy").plot())
    assert plain.get_xlabel() == "time (h)"


def test_epoch_submit_times_without_an_origin_read_dates() -> None:
    read = generate_lublin(300, 64, seed=2)
    jobs = read.jobs.with_columns(read.jobs["submit_time"] + START)
    epoch = read._replace(jobs=jobs, provenance=dataclasses.replace(read.provenance, unix_start_time=None))
    run = run_policy(epoch, "easy")
    assert run.summary["workload"]["clock_origin"] is None
    labels = [t.get_text() for t in _time_axis(run.plot()).get_xticklabels() if t.get_text()]
    assert labels and all(label.startswith("2022-") for label in labels)


def test_the_figure_zooms_to_a_window(tmp_path) -> None:
    read = generate_lublin(300, 64, seed=2)
    # a source name that is markup: the page escapes it (the templates autoescape)
    dated = read._replace(
        provenance=dataclasses.replace(read.provenance, unix_start_time=START, source="<b>trace</b>.swf")
    )
    run = run_policy(dated, "easy")
    ax = _time_axis(run.plot(window=(3600.0, 7200.0)))
    assert ax.get_xlim() == pytest.approx((1.0, 2.0))
    with pytest.raises(ValueError, match="is not after its start"):
        run.plot(window=(7200.0, 3600.0))

    write_run(run, tmp_path / "run")
    page = write_run_report(tmp_path / "run", time_from="2022-01-03T01:00", time_to="7200").read_text()
    assert "The figure shows 3,600 s to 7,200 s of the run&#39;s clock." in page
    assert "&lt;b&gt;trace&lt;/b&gt;.swf" in page and "<b>trace</b>" not in page
    assert (tmp_path / "run" / "run.png").exists()


def test_instants_are_seconds_or_dates_against_the_origin() -> None:
    assert parse_instant("90", None) == 90.0
    assert parse_instant("2022-01-03T00:10", START) == 600.0
    assert parse_instant("2022-01-03T00:10+01:00", START) == -3000.0
    with pytest.raises(ValueError, match="has no date"):
        parse_instant("2022-01-03", None)
    with pytest.raises(ValueError, match="neither seconds nor an ISO date"):
        parse_instant("noon", START)
