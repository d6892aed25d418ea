"""Workload files: converting one format into another (``data convert``), downloading a public dataset
(``data fetch``) and describing a workload (``data stats``), as the ``wattsched data`` commands do it."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wattsched.core.schema import ReadResult, WorkloadError
from wattsched.workload.fetch import (
    DEADLINE_S,
    MIN_RATE,
    PM100_RECORD,
    STALL_WINDOW_S,
    ZENODO,
    FetchError,
    check_limits,
    fetch_record,
)
from wattsched.workload.load import load_workload

__all__ = [
    "CONVERT_ENDINGS",
    "DEFAULT_FETCH_FILES",
    "PM100_RECORD",
    "PUBLIC_DATASETS",
    "Conversion",
    "EmptyWorkloadError",
    "FetchError",
    "check_fetch_request",
    "conversion_rejects_path",
    "convert_workload",
    "fetch_dataset",
    "load_workload",
    "workload_statistics",
    "write_stats_figure",
]

#: The endings ``data convert`` writes: the workload formats of ``save_workload``, and Batsim's JSON.
CONVERT_ENDINGS = (".parquet", ".csv", ".csv.gz", ".swf", ".swf.gz", ".json")

#: The public datasets ``data fetch`` downloads, and the archive record of each.
PUBLIC_DATASETS: dict[str, str] = {"pm100": PM100_RECORD}

#: The files ``data fetch`` takes from a record when none are named: PM100's job table (its telemetry is far larger).
DEFAULT_FETCH_FILES = ("job_table.parquet",)

#: The largest ``--max-size`` accepted, in GiB (1 PiB): a bound on a typing slip, not on any real record.
_MAX_FETCH_GIB = 1 << 20


class EmptyWorkloadError(WorkloadError):
    """A workload with no job record at all: nothing to write (a command that wrote nothing fails)."""


@dataclass
class Conversion:
    """What a conversion read and wrote: the workload (its rejects included) and the list columns a CSV could
    not hold and so left out."""

    read: ReadResult
    output: Path
    left_out: list[str]


def conversion_rejects_path(output: str | Path) -> Path:
    """Where the input's rejects go: OUTPUT's stem + ``.rejects.parquet`` (``.rejects.csv`` for a CSV output)."""
    from wattsched.core.rejects import rejects_path

    out = Path(output)
    return rejects_path(out, "csv" if ".csv" in out.name.lower() else "parquet")


def convert_workload(
    workload: str | Path,
    output: str | Path,
    *,
    machine_size: int | None = None,
    **read_options: Any,
) -> Conversion:
    """Read ``workload`` (any supported format) and write it to ``output`` in the format its name asks for
    (:data:`CONVERT_ENDINGS`; ``.json`` is Batsim's workload), through a renamed temporary. ``machine_size``
    overrides the declared size (Batsim needs one). A ValueError for an output name of no format, an
    :class:`EmptyWorkloadError` for a workload without jobs, and ``AllRejectedError`` (with the rejects) when every
    record was rejected. ``read_options`` go to ``load_workload`` (``strict``, ``timezone``, ``columns``)."""
    from wattsched.workload.batsim import write_batsim
    from wattsched.workload.save import save_workload

    out = Path(output)
    if not out.name.lower().endswith(CONVERT_ENDINGS):
        raise ValueError(f"--output must end in {', '.join(CONVERT_ENDINGS)}, got {out.name}")
    read = load_workload(workload, machine_size=machine_size, **read_options)
    if machine_size is not None:
        read = read._replace(provenance=dataclasses.replace(read.provenance, machine_size=machine_size))
    if read.jobs.is_empty():
        raise EmptyWorkloadError(f"{workload}: no job to write (the workload has no job records)")
    left_out: list[str] = []
    if out.name.lower().endswith(".json"):
        out.parent.mkdir(parents=True, exist_ok=True)
        write_batsim(read.jobs, out, provenance=read.provenance)
    else:
        left_out = save_workload(read, out)
    return Conversion(read, out, left_out)


def check_fetch_request(
    dataset: str,
    max_size: float = 64.0,
    *,
    deadline: float = DEADLINE_S,
    min_rate: float = MIN_RATE,
    stall_window: float = STALL_WINDOW_S,
) -> None:
    """A ValueError for a dataset that is not one of :data:`PUBLIC_DATASETS`, a ``max_size`` (GiB) out of range,
    or a deadline, minimum rate or stall window that is no duration or rate (``check_limits``): what
    :func:`fetch_dataset` refuses before it asks the archive anything, for a caller that wants the refusal before
    it sets up a download (a progress display)."""
    if not 0 < max_size <= _MAX_FETCH_GIB:
        raise ValueError(f"--max-size must be a size in GiB between 0 and {_MAX_FETCH_GIB}, got {max_size:g}")
    check_limits(deadline, min_rate, stall_window)
    if dataset not in PUBLIC_DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; available: {', '.join(PUBLIC_DATASETS)}")


def fetch_dataset(
    dataset: str,
    to: str | Path,
    *,
    file: Sequence[str] | None = None,
    record: str | None = None,
    base_url: str = ZENODO,
    max_size: float = 64.0,
    deadline: float = DEADLINE_S,
    min_rate: float = MIN_RATE,
    stall_window: float = STALL_WINDOW_S,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> list[Path]:
    """Download the files ``file`` (default :data:`DEFAULT_FETCH_FILES`) of a public dataset's archive record
    (``record`` overrides the dataset's own, :data:`PUBLIC_DATASETS`) into ``to``, and return their paths.

    The files are checked against the record's checksums and a fetch that was interrupted resumes where it stopped:
    a multi-GB record over a flaky link is fetched by running the same call again. Only the archive's own https
    links are followed, and a file larger than ``max_size`` GiB is refused before anything is downloaded.
    ``progress(name, bytes_done, bytes_total)`` is called as each file arrives.

    Nothing hangs: the whole fetch ends within ``deadline`` seconds (default a day), and a download is stopped when
    fewer than ``min_rate`` bytes per second (default 1 KiB/s; 0: no minimum) arrived over its last ``stall_window``
    seconds (default 60), a per-read timeout being no bound on a server that trickles; a stopped download keeps its
    partial file for the next call to resume. A ValueError for an unknown dataset, a size, deadline, rate or window
    out of range (:func:`check_fetch_request`); a :class:`FetchError` for whatever the archive or the network
    refused, or a fetch past its deadline or stalled."""
    check_fetch_request(dataset, max_size, deadline=deadline, min_rate=min_rate, stall_window=stall_window)
    return fetch_record(
        record or PUBLIC_DATASETS[dataset],
        to,
        files=list(file or DEFAULT_FETCH_FILES),
        base_url=base_url,
        max_size=int(max_size * (1 << 30)),
        deadline=deadline,
        min_rate=min_rate,
        stall_window=stall_window,
        progress=progress,
    )


def workload_statistics(
    workload: str | Path | ReadResult,
    *,
    machine_size: int | None = None,
    figure: str | Path | None = None,
    source: str | Path | None = None,
    **read_options: Any,
) -> dict[str, Any]:
    """The statistics the Parallel Workloads Archive shows for a workload (jobs, users, offered load, size and
    runtime quantiles and log2 histograms, inter-arrival times, walltime accuracy), as ``data stats`` prints them;
    with ``figure``, also the figure of :func:`write_stats_figure` there.

    ``workload`` is a file (read with ``read_options``: ``strict``, ``timezone``, ``columns``) or a workload
    already read; ``machine_size`` overrides the declared size for the offered load. A workload without a job is
    an :class:`EmptyWorkloadError` naming ``source`` (default: the file, or the workload's own source): its
    statistics would be all undefined."""
    from wattsched.workload.stats import workload_stats

    if isinstance(workload, ReadResult):
        read, name = workload, workload.provenance.source
    else:
        read, name = load_workload(workload, machine_size=machine_size, **read_options), str(workload)
    if read.jobs.height == 0:
        raise EmptyWorkloadError(
            f"{source if source is not None else name}: no job to describe "
            f"({read.rejects.height:,} input lines rejected)"
        )
    stats = workload_stats(read, machine_size)
    if figure is not None:
        write_stats_figure(stats, read, figure)
    return stats


def write_stats_figure(stats: dict[str, Any], workload: ReadResult, path: str | Path) -> Path:
    """Draw ``stats`` (from :func:`workload_statistics`) of ``workload``: size and runtime log2 histograms, walltime
    accuracy and submissions per day, to ``path`` (its suffix picks the format: .png, .svg, .pdf). The submissions
    come from the job table itself, which the statistics only summarise."""
    from wattsched.report.workload_figure import plot_workload_stats  # matplotlib: only a figure needs it

    return plot_workload_stats(stats, workload.jobs, path)
