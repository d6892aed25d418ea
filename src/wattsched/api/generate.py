"""Synthetic workloads and node telemetry, as ``wattsched generate lublin``, ``generate m100`` and
``generate telemetry`` make them, with their option names and defaults.

Each function checks what it is asked for before drawing anything (the output's name, the memory the jobs will
take, the disk the telemetry will fill), so that a request too large for the machine is a one-line ValueError
rather than a process killed half way; and writes through renamed temporaries, so an interrupted call never
leaves a partial file under the final name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wattsched.core.bounds import check_fits, free_disk_bytes

if TYPE_CHECKING:  # polars and numpy: loaded by the calls
    from wattsched.core.schema import ReadResult

__all__ = [
    "GeneratedTelemetry",
    "generate_lublin_workload",
    "generate_m100_workload",
    "generate_node_telemetry",
    "psu_samples",
]


def generate_lublin_workload(
    output: str | Path,
    *,
    jobs: int = 10_000,
    machine_size: int = 256,
    seed: int = 0,
    load: float | None = None,
    users: int = 100,
) -> ReadResult:
    """Draw a Lublin–Feitelson (2003) workload of ``jobs`` rigid parallel jobs for a machine of ``machine_size``
    processors (``load``: the target offered load, which scales the inter-arrival times) and write it to
    ``output`` (.parquet, .csv, .csv.gz, .swf or .swf.gz); returns the workload written.

    The output's name is checked before the jobs are drawn, and the memory they need against what is available: a
    ValueError (a ``WorkloadError`` for the name) either way."""
    # the generators and writers load numba and pyarrow: imported by the call
    from wattsched.workload.generate import generate_lublin
    from wattsched.workload.generate.footprint import LUBLIN_BYTES_PER_JOB
    from wattsched.workload.save import save_workload, workload_format

    workload_format(output)  # a wrong file name fails before the jobs are drawn
    check_fits("--jobs", jobs, LUBLIN_BYTES_PER_JOB, "the lublin generator")
    result = generate_lublin(jobs, machine_size, seed=seed, target_load=load, n_users=users)
    save_workload(result, output)
    return result


def generate_m100_workload(
    output: str | Path,
    *,
    jobs: int = 20_000,
    seed: int = 0,
    load: float | None = None,
    users: int = 480,
    span_days: float | None = None,
) -> ReadResult:
    """Draw a Marconi100-like workload of ``jobs`` jobs with per-job power profiles (20 s samples) on its 980
    nodes (``load``: the target offered load, default 0.95, docs/m100like.md; ``span_days``: spread the submissions
    over this many days instead of the load's span) and write it to ``output``; returns the workload written.

    The power profiles are a list column, which only Parquet holds: another ending is a ValueError before anything
    is drawn, as is a ``jobs`` whose memory is more than what is available."""
    from wattsched.workload.generate import generate_m100like
    from wattsched.workload.generate.footprint import M100_BYTES_PER_JOB
    from wattsched.workload.save import save_workload

    if not Path(output).name.endswith(".parquet"):
        raise ValueError("power profiles are a list column: write the m100 workload as .parquet")
    check_fits("--jobs", jobs, M100_BYTES_PER_JOB, "the m100 generator")
    result = generate_m100like(jobs, seed=seed, target_load=load, n_users=users, span_days=span_days)
    save_workload(result, output, "parquet")
    return result


@dataclass(frozen=True)
class GeneratedTelemetry:
    """What :func:`generate_node_telemetry` wrote: the job table (``jobs.parquet``, with its number of jobs) and
    the ExaData-layout telemetry folder (with its number of PSU samples, two per node and instant)."""

    jobs: Path
    telemetry: Path
    n_jobs: int
    psu_samples: int


def psu_samples(nodes: int, days: float, period: float) -> int:
    """The PSU samples the telemetry of ``nodes`` nodes over ``days`` days at one sample per ``period`` seconds
    holds at most (two PSUs a node, both ends of the span included): what its disk footprint is sized from."""
    return int(2 * nodes * (days * 86_400.0 / period + 1))


def generate_node_telemetry(
    output: str | Path,
    *,
    jobs: int = 2_000,
    nodes: int = 980,
    days: float = 1.0,
    period: float = 20.0,
    shared_share: float = 0.05,
    missing_share: float = 0.0005,
    outages: int = 0,
    median_minutes: float = 30.0,
    seed: int = 0,
) -> GeneratedTelemetry:
    """A job table and per-PSU node telemetry in the M100 ExaData layout, in the folder ``output``: the input of
    the PM100 method (``wattsched dataset build``) with a known answer. ``jobs`` jobs of median duration
    ``median_minutes`` are placed on ``nodes`` nodes over ``days`` days, ``shared_share`` of them also on a busy
    node; the telemetry has one sample per ``period`` seconds, ``missing_share`` of them missing, and ``outages``
    node outages of 1–6 h without any.

    The telemetry is streamed to disk day by day; the memory the placement needs and the disk the telemetry fills
    are checked first (a ValueError naming ``--jobs`` or ``--days``), as is every option (a ValueError)."""
    # the telemetry generator loads numba and pyarrow: imported by the call
    from wattsched.core.atomic import atomic_folder, atomic_parquet
    from wattsched.dataset.synthetic import (
        BYTES_PER_JOB,
        DISK_BYTES_PER_SAMPLE,
        place_jobs,
        write_synthetic_exadata,
    )

    out = Path(output)
    check_fits("--jobs", jobs, BYTES_PER_JOB, "job placement")
    if days > 0 and period > 0:  # the generator refuses the others with its own message
        check_fits(
            "--days",
            psu_samples(nodes, days, period),
            DISK_BYTES_PER_SAMPLE,
            f"the telemetry of {nodes:,} nodes over {days:g} days",
            limit=free_disk_bytes(out),
            limit_name=f"free under {out}",
            unit="PSU sample",
            resource="disk",
            value=days,
        )
    machine = place_jobs(
        jobs,
        n_nodes=nodes,
        hours=days * 24.0,
        period=period,
        shared_share=shared_share,
        missing_share=missing_share,
        outages=outages,
        median_seconds=median_minutes * 60.0,
        seed=seed,
    )
    out.mkdir(parents=True, exist_ok=True)
    with atomic_folder(out / "telemetry") as staging:  # never the days of two runs in one folder
        rows = write_synthetic_exadata(machine, staging)
        atomic_parquet(machine.jobs, out / "jobs.parquet")
    return GeneratedTelemetry(out / "jobs.parquet", out / "telemetry", machine.jobs.height, 2 * rows)
