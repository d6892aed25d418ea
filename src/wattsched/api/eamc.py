"""Paper 002's DVFS machine (EAMC) as functions: the partition-efficiency table, one run of a policy, and its
files; what ``wattsched eamc table`` and ``wattsched eamc run`` do, with their option names and defaults."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import polars as pl

from wattsched.core.store import atomic_parquet, atomic_table, atomic_write
from wattsched.studies.eamc.dvfs import DVFSConfigError
from wattsched.studies.eamc.policies import EAMC_POLICIES

if TYPE_CHECKING:  # the study loads its data tables and the engine: imported by the calls that use it
    from wattsched.studies.eamc.epm import ScoreForm, WeightPlacement
    from wattsched.studies.eamc.experiment import EAMCRun

__all__ = [
    "EAMC_PLATFORM",
    "EAMC_POLICIES",
    "DVFSConfigError",
    "ScoreForm",
    "WeightPlacement",
    "eamc_run",
    "eamc_table",
    "write_eamc_run",
    "write_table",
]

#: The partitions of paper 002's machine: the p1/p2 preset (docs/platforms.md).
EAMC_PLATFORM = "eamc-p1p2"


def eamc_table(
    data_dir: str | Path | None = None,
    *,
    t_weight: float = 1.0,
    weight_placement: Literal["paper", "code"] = "paper",
    score: Literal["euclidean", "code_linear"] = "euclidean",
    platform: str | Path = EAMC_PLATFORM,
) -> pl.DataFrame:
    """Per app and partition: the optimal frequency (Eq. 4), time, energy and partition efficiency (Eq. 5), from
    the EAR data in ``data_dir`` (the ``en_conf`` directory or a directory above it)."""
    from wattsched.studies.eamc.dvfs import load_dvfs_platform
    from wattsched.studies.eamc.energy_model import eamc_appdb
    from wattsched.studies.eamc.epm import epm_table

    machine = load_dvfs_platform(platform, data_dir)
    return epm_table(
        machine, eamc_appdb(data_dir, machine), t_weight=t_weight, weight_placement=weight_placement, score=score
    )


def eamc_run(
    policy: str = "eamc-priorityinc",
    *,
    workload: str | Path | pl.DataFrame | None = None,
    mix: str = "W13",
    jobs: int = 5000,
    seed: int = 0,
    t_weight: float = 1.0,
    threshold_mode: Literal["relative", "absolute"] = "relative",
    data_dir: str | Path | None = None,
    platform: str | Path = EAMC_PLATFORM,
) -> EAMCRun:
    """Simulate one workload on the DVFS machine under one of paper 002's policies: ``workload`` (a table, or a
    ``.parquet``/``.csv`` file read by :func:`~wattsched.studies.eamc.workloads.read_eamc_workload`), else a
    generated one of ``jobs`` jobs in app mix ``mix`` with ``seed``."""
    from wattsched.studies.eamc.dvfs import load_dvfs_platform
    from wattsched.studies.eamc.energy_model import eamc_appdb
    from wattsched.studies.eamc.experiment import run_eamc
    from wattsched.studies.eamc.policies import EAMCOptions
    from wattsched.studies.eamc.workloads import generate_eamc_workload, read_eamc_workload

    machine = load_dvfs_platform(platform, data_dir)
    if workload is None:
        table = generate_eamc_workload(mix, jobs, seed=seed)
    elif isinstance(workload, pl.DataFrame):
        table = workload
    else:
        table = read_eamc_workload(workload)
    options = EAMCOptions(t_weight=t_weight, threshold_mode=threshold_mode)
    return run_eamc(table, machine, eamc_appdb(data_dir, machine), policy.lower(), options)


def write_eamc_run(run: EAMCRun, output: str | Path) -> dict[str, Path]:
    """``jobs.parquet`` and ``summary.json`` (the run's metrics) in ``output``, each through a renamed temporary."""
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"jobs": out / "jobs.parquet", "summary": out / "summary.json"}
    atomic_parquet(run.jobs, paths["jobs"])
    atomic_write(paths["summary"], json.dumps(run.metrics, indent=1) + "\n")
    return paths


def write_table(frame: pl.DataFrame, path: str | Path) -> Path:
    """``frame`` as CSV or Parquet by ``path``'s suffix, through a renamed temporary; a ValueError for another
    suffix."""
    path = Path(path)
    if not path.name.lower().endswith((".csv", ".parquet")):
        raise ValueError(f"{path}: a table is written as .csv or .parquet, got {path.name!r}")
    return atomic_table(frame, path)
