"""The workloads of the campaigns that run over windows of a trace or a generated workload (the ``power`` and
``queue`` kinds): each workload loaded or generated once per seed, cut into windows, every window stored as a
Parquet job table under ``DIR/workloads/`` (its provenance and window header kept) for the runs to read."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path

from wattsched.campaign.spec import WorkloadSpec
from wattsched.core.experiment import no_log
from wattsched.core.file_memo import Recent
from wattsched.core.rejects import record_unit, rejects_summary, write_rejects
from wattsched.core.schema import ReadResult
from wattsched.core.store import WORKLOADS, CampaignError, CampaignLayout
from wattsched.engine.windows import WindowSpec, cut_windows
from wattsched.workload.generate import generate_lublin, generate_m100like
from wattsched.workload.load import load_workload
from wattsched.workload.tableio import write_table

#: Window provenance header key: the records of the workload's source rejected on reading (a window stored as a
#: job table keeps no rejects, so its runs would otherwise report 0).
SOURCE_REJECTED = "source_rejected"


#: The generated workloads this process made last, by generator arguments, and the most it keeps (count and
#: estimated bytes each). A reproduction generates the same trace several times on the same worker (paper 000's
#: quick setting: a seed's 40,000 jobs for its campaign, again for the ML predictor claims and for two sensitivity
#: variants that change only the windows: 4.8 s each); a lone task goes to the shared pool's first worker.
_GENERATED_KEEP = 2
_GENERATED: Recent[ReadResult] = Recent(_GENERATED_KEEP)
_GENERATED_MAX_BYTES = 256 << 20


def load_workload_spec(wl: WorkloadSpec, seed: int) -> ReadResult:
    """The workload of ``wl`` for grid seed ``seed``: read from its file, or generated with its seed offset by
    ``seed`` (before windows are cut). A generated workload is kept for the next call with the same arguments
    (:data:`_GENERATED`; the same tables, a fresh provenance)."""
    if wl.path is not None:
        return load_workload(wl.path, machine_size=wl.machine_size, columns=wl.columns)
    g = wl.generate
    assert g is not None  # the spec has exactly one of path and generate
    if g.model != "m100" and g.machine_size is None:
        raise CampaignError(f"workload {wl.name!r}: the lublin generator needs machine_size")
    key = (g.model, g.jobs, g.seed + seed, g.target_load, None if g.model == "m100" else g.machine_size)
    read = _GENERATED.get(key)
    if read is None:
        if g.model == "m100":
            read = generate_m100like(g.jobs, seed=g.seed + seed, target_load=g.target_load)
        else:
            assert g.machine_size is not None
            read = generate_lublin(g.jobs, g.machine_size, seed=g.seed + seed, target_load=g.target_load)
        if read.jobs.estimated_size() <= _GENERATED_MAX_BYTES:
            _GENERATED.put(key, read)
    return ReadResult(read.jobs, read.rejects, copy.deepcopy(read.provenance))


def store_table(read: ReadResult, path: Path) -> None:
    """Write a job table with its provenance (``write_table`` writes through a renamed temporary itself)."""
    write_table(read.jobs, path, provenance=read.provenance)


def store_windows(
    read: ReadResult, wl: WorkloadSpec, seed: int, name: str, out: Path, log: Callable[[str], None] = no_log
) -> list[str]:
    """Cut ``read`` into the windows of ``wl`` (the whole workload when it has none), store each under
    ``out/workloads/`` and return their ids (``<name>-wNN``, or ``name``). The rejects of the source are stored
    as ``out/workloads/<name>.rejects.parquet`` and logged by reason."""
    layout = CampaignLayout(out)
    layout.make((WORKLOADS,))
    if read.rejects.height:
        kept = write_rejects(read.rejects, layout.workloads / f"{name}.rejects.parquet")
        log(f"workload {name}: {rejects_summary(read.rejects, record_unit(read.provenance.format))} (in {kept})")
    header = {**read.provenance.header, SOURCE_REJECTED: read.rejects.height}
    read = read._replace(provenance=dataclasses.replace(read.provenance, header=header))
    if wl.windows is None:
        store_table(read, layout.workload(name))
        return [name]
    w = wl.windows
    size = wl.machine_size or read.provenance.machine_size
    ids = []
    for k, (_, window) in enumerate(
        cut_windows(read, WindowSpec(w.count, w.hours, w.seed + seed, w.prestate), machine_size=size)
    ):
        wid = f"{name}-w{k:02d}"
        store_table(window, layout.workload(wid))
        ids.append(wid)
    return ids


def window_path(out: Path, window: str) -> Path:
    """Where a run finds its workload window."""
    return CampaignLayout(out).workload(window)


def rejected_count(read: ReadResult, run_rejects: int) -> int:
    """A run's true ``rejected``: the records of its workload's source rejected on reading (the same for each
    window of it; listed in ``workloads/<name>.rejects.parquet``) plus the jobs the run itself rejected."""
    return int(read.provenance.header.get(SOURCE_REJECTED, 0) or 0) + run_rejects
