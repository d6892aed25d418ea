"""Per-job power datasets from a job table and node telemetry (the PM100 method), as ``wattsched dataset build``
makes them, with its option names and defaults (docs/dataset.md).

A build keeps the jobs that ran alone on their nodes, extracts their power series and summaries from the
telemetry (read window by window, out of core) and writes the dataset and its rejects, each through a renamed
temporary: a killed build leaves the previous one whole. One build per output runs at a time (a lock file next to
it), so two builds never interleave their files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
from polars.exceptions import PolarsError

if TYPE_CHECKING:  # the builder loads numba, pyarrow and (optionally) dask: imported by the calls
    from wattsched.core.output_folders import FolderLock
    from wattsched.dataset.extract import ExtractionStats
    from wattsched.dataset.telemetry import TelemetrySource

__all__ = [
    "BUILD_ERRORS",
    "DatasetBuild",
    "build_power_dataset",
    "lock_dataset_output",
    "read_job_table",
]

#: What a build fails with on bad input or a busy output (a missing file, an unreadable table, telemetry that
#: does not fit, an output another build holds), as opposed to a fault of the toolkit: worth one line, not a trace.
BUILD_ERRORS: tuple[type[Exception], ...] = (ValueError, FileNotFoundError, PolarsError, OSError)


@dataclass(frozen=True)
class DatasetBuild:
    """A finished build: how many jobs the job table had, the dataset (PM100 schema) and its rejects (``job_id,
    stage, reason``) with the files they were written to, and what the telemetry scan saw (rows, windows,
    notes)."""

    jobs: int
    dataset: pl.DataFrame
    rejects: pl.DataFrame
    output: Path
    rejects_path: Path
    stats: ExtractionStats

    @property
    def rejected_per_stage(self) -> dict[str, int]:
        """Rejected jobs per stage (``input``, ``exclusivity``, ``extraction``), in the stages' order."""
        return dict(self.rejects.group_by("stage").len().sort("stage").iter_rows())


def read_job_table(path: str | Path) -> pl.DataFrame:
    """A job table (``job_id, start_time, end_time, nodes``) from ``.parquet``, else read as CSV."""
    path = Path(path)
    return pl.read_parquet(path) if path.suffix == ".parquet" else pl.read_csv(path)


def lock_dataset_output(output: str | Path) -> FolderLock:
    """Hold the lock of the build writing ``output``: another build of the same output is refused at once with an
    OSError naming the holder, and the temporaries a killed build of it left are removed. Release it with
    ``.release()`` (or let the process end); builds of other files in the same folder do not conflict."""
    from wattsched.dataset.build import lock_output

    return lock_output(Path(output))


def build_power_dataset(
    job_table: str | Path | pl.DataFrame,
    telemetry: str | Path | pl.DataFrame | pl.LazyFrame | TelemetrySource,
    output: str | Path,
    *,
    period: float = 20.0,
    legacy_split: bool = False,
    max_missing: float = 0.0,
    snap: float = 0.0,
    memory_gb: float = 1.0,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: Callable[[int, int, int], None] | None = None,
    lock: bool = True,
) -> DatasetBuild:
    """Build the per-job power dataset of ``job_table`` (a table or a file, :func:`read_job_table`) from
    ``telemetry`` (a Parquet file or directory with ``node, timestamp`` and ``ps0+ps1`` or ``watts``, or a table)
    and write it to ``output`` (``.parquet``), its rejects to ``STEM.rejects.parquet``.

    ``period`` is the sample period θ (s); ``legacy_split`` tests exclusivity per month and single/multi-node as
    the reference scripts do (default: globally); ``max_missing`` is the share of missing samples a job may have;
    ``snap`` takes rows up to that many seconds off the θ grid at the nearest instant; ``memory_gb`` sizes one
    window's matrices per worker; ``workers`` (default: the CPU count) windows are read in parallel on
    ``executor`` (``local`` processes or ``dask``, at ``address``). ``progress(windows_done, windows, rows)`` is
    called as windows finish. With ``lock`` (the default) the output's lock (:func:`lock_dataset_output`) is held
    for the build; pass False when the caller already holds it. Raises one of :data:`BUILD_ERRORS` on bad input."""
    from wattsched.core.executors import default_workers
    from wattsched.dataset.build import build_dataset, write_outputs
    from wattsched.dataset.extract import ExtractionStats

    out = Path(output)
    held = lock_dataset_output(out) if lock else None
    try:
        table = job_table if isinstance(job_table, pl.DataFrame) else read_job_table(job_table)
        stats = ExtractionStats()
        dataset, rejects = build_dataset(
            table,
            telemetry,
            period=period,
            legacy_split=legacy_split,
            max_missing=max_missing,
            snap=snap,
            memory_gb=memory_gb,
            executor=executor,
            workers=default_workers(workers),
            address=address,
            progress=progress,
            stats=stats,
        )
        rejects_path = write_outputs(dataset, rejects, out)  # atomic: a kill leaves the previous build whole
    finally:
        if held is not None:
            held.release()
    return DatasetBuild(table.height, dataset, rejects, out, rejects_path, stats)
