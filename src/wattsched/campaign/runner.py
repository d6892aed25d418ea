"""The one campaign runner: every kind of experiment (:mod:`wattsched.campaign.kinds`) runs, resumes, reports its
status, its results table and its report the same way.

:func:`run_experiment` creates the campaign directory (or reopens it when it holds this very campaign), lets the
experiment plan its runs once (the manifest records them), then executes every run without a result file, in this
process, on local processes or on a Dask cluster (:mod:`wattsched.core.executors`), in bounded batches. A run is
done exactly when its result file exists (:mod:`wattsched.core.store`), so a campaign killed at any instant, even
by ``kill -9``, resumes with the runs it had not finished: none is lost or done twice. Ctrl-C or SIGTERM stops it
cleanly: the finished runs stay, no worker is left behind, and :class:`CampaignInterrupted` says how many of the
runs are done. Results do not depend on the executor or the number of workers (runs are deterministic and
independent); only the recorded timings differ.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel

from wattsched.campaign.kinds import experiment_for, open_experiment
from wattsched.core.executors import check_executor, default_workers, map_tasks
from wattsched.core.experiment import Experiment, no_log
from wattsched.core.output_folders import FolderLock, clean_temporaries
from wattsched.core.stopping import interruptions, sigterm_as_interrupt
from wattsched.core.store import (
    MANIFEST,
    CampaignError,
    done_ids,
    read_manifest,
    write_manifest,
)

#: Result fields of the power and queue kinds that depend on the machine, not on the run (left out when comparing
#: result sets); every kind declares its own (:attr:`Experiment.timing_fields`).
TIMING_FIELDS = Experiment.timing_fields
#: Runs submitted per worker at a time: enough to keep every worker busy, few enough that an interruption drops
#: little queued work.
IN_FLIGHT_PER_WORKER = 2


@dataclass
class CampaignRun:
    """What :func:`run_experiment` did: the campaign's runs, those already done before, those run now."""

    total: int
    already_done: int
    executed: int
    seconds: float


class CampaignInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM stopped a campaign; the finished runs are kept (run it again to resume)."""

    def __init__(self, done: int, total: int, out: Path, *, preparing: bool = False) -> None:
        if preparing:
            text = f"interrupted while preparing {out}: no run started; run the same command again to start"
        else:
            text = f"interrupted: {done} of {total} runs done in {out}; run the same command again to resume"
        super().__init__(text)
        self.done, self.total, self.out = done, total, out


def _matches(manifest: dict[str, Any], experiment: Experiment) -> bool:
    """Whether a directory's manifest is this campaign's. Manifests written before the kind field are power
    campaigns; dispatch manifests of that time have no hash and compare their spec."""
    if manifest.get("kind", "power") != experiment.kind:
        return False
    if "spec_hash" in manifest:
        return bool(manifest["spec_hash"] == experiment.spec_hash())
    return bool(manifest.get("spec") == experiment.spec_data())


def prepare(experiment: Experiment, out: Path, *, log: Callable[[str], None] = no_log) -> dict[str, Any]:
    """Create the campaign directory (or reuse it when it holds this very campaign) and return the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    if (out / MANIFEST).exists():
        manifest = read_manifest(out)
        if not _matches(manifest, experiment):
            spec = manifest.get("spec") or {}
            raise CampaignError(
                f"{out} holds another campaign ({manifest.get('kind', 'power')} {spec.get('name')!r}); "
                "use a new directory"
            )
        return manifest
    runs = experiment.plan(out, log)
    manifest = {
        "kind": experiment.kind,
        "name": experiment.name,
        "spec": experiment.spec_data(),
        "spec_hash": experiment.spec_hash(),
        **experiment.manifest_extra(out),
        "runs": runs,
    }
    write_manifest(out, manifest)
    return manifest


def run_experiment(
    experiment: Experiment | BaseModel,
    out: str | Path,
    *,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = no_log,
    max_runs: int | None = None,
) -> CampaignRun:
    """Prepare (once) and execute every run of ``experiment`` (an :class:`Experiment`, or a spec of any kind)
    not done yet in ``out``. ``executor``: ``"local"`` (``workers`` processes; 1 runs in this process; default:
    the CPU count) or ``"dask"`` (a local cluster of ``workers``, or the scheduler at ``address``). ``limit`` stops
    after that many runs; ``progress(done, total)`` is called after each run. Raises
    :class:`CampaignInterrupted` on Ctrl-C or SIGTERM, after the workers are ended.

    A new campaign whose grid expands to more than ``max_runs`` runs (default: the spec's ``max_runs``, else
    :data:`~wattsched.core.spec.DEFAULT_MAX_RUNS`) is refused with a :class:`CampaignError` before anything is
    written, ``out`` included: the count is the product of the grid's axis lengths (:meth:`Experiment.
    count_runs`), instant for any grid. A folder that holds a planned campaign is not checked again (its runs
    are in its manifest)."""
    exp = experiment if isinstance(experiment, Experiment) else experiment_for(experiment)
    check_executor(executor, CampaignError)
    out = Path(out)
    if not (out / MANIFEST).exists():
        exp.check_run_count(max_runs)
    t0 = time.perf_counter()
    with FolderLock(out, f"the campaign folder {out}"):
        try:
            with sigterm_as_interrupt():
                return _run_locked(exp, out, t0, executor, workers, address, limit, progress, log)
        except CampaignInterrupted:
            raise
        except interruptions():  # a stop after the lock was taken and before a run began: nothing ran
            clean_temporaries(out)
            raise CampaignInterrupted(0, 0, out, preparing=True) from None


def _run_locked(
    exp: Experiment,
    out: Path,
    t0: float,
    executor: str,
    workers: int | None,
    address: str | None,
    limit: int | None,
    progress: Callable[[int, int], None] | None,
    log: Callable[[str], None],
) -> CampaignRun:
    """:func:`run_experiment` once it holds the folder's lock: no other process writes here, so every temporary
    file is a killed writer's (a run, or a preparation) and is removed first."""
    stale = clean_temporaries(out)
    if stale:
        log(f"removed {stale} temporary file(s) left by an interrupted run")
    try:
        manifest = prepare(exp, out, log=log)
    except interruptions():
        clean_temporaries(out)  # the preparation's own, e.g. a workload window being written
        raise CampaignInterrupted(0, 0, out, preparing=True) from None
    runs = manifest["runs"]
    ids = {r["id"] for r in runs}
    done = done_ids(out, clean=True) & ids
    todo = [r for r in runs if r["id"] not in done]
    if limit is not None:
        todo = todo[:limit]
    workers = default_workers(workers)
    log(f"{len(runs)} runs, {len(done)} already done, {len(todo)} to run on {executor} ({workers} worker(s))")
    # Dask workers may run elsewhere: they get the absolute path
    target = out.resolve() if executor == "dask" else out
    finished = len(done)
    try:
        stream = map_tasks(
            exp.task(target),
            todo,
            executor=executor,
            workers=workers,
            address=address,
            ordered=False,
            keys=[f"{exp.kind}-{r['id']}" for r in todo],
            in_flight=IN_FLIGHT_PER_WORKER * workers,
        )
        try:
            for _ in stream:
                finished += 1
                if progress is not None:
                    progress(finished, len(runs))
        finally:
            stream.close()  # ends the workers now when the loop was interrupted
    except interruptions():
        if address is None:  # the workers are ended (a remote cluster's may still be writing: left to them)
            clean_temporaries(out)
        raise CampaignInterrupted(len(done_ids(out) & ids), len(runs), out) from None
    return CampaignRun(len(runs), len(done), len(todo), time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------------- queries


def status(out: str | Path) -> dict[str, Any]:
    """Progress of a campaign directory: its kind and name, runs done and to do, and a ``per`` table counting
    them by the kind's two ``keys`` (e.g. workload window and run kind; dispatcher and estimate)."""
    out = Path(out)
    exp = open_experiment(out)
    runs = exp.runs(out)
    done = done_ids(out)
    keys = exp.status_keys
    frame = pl.DataFrame(
        [{keys[0]: str(r.get(keys[0])), keys[1]: str(r.get(keys[1])), "done": r["id"] in done} for r in runs],
        schema={keys[0]: pl.Utf8, keys[1]: pl.Utf8, "done": pl.Boolean},
    )
    per = frame.group_by(*keys).agg(pl.len().alias("runs"), pl.col("done").sum()).sort(*keys)
    return {
        "kind": exp.kind,
        "name": exp.name,
        "runs": len(runs),
        "done": len(done & {r["id"] for r in runs}),
        "keys": keys,
        "per": per,
    }


def load_results(out: str | Path) -> pl.DataFrame:
    """Every finished run as one table, in the manifest's order (empty when none has finished)."""
    out = Path(out)
    return open_experiment(out).results(out)


def report(out: str | Path, dest: str | Path | None = None, **options: Any) -> list[Path]:
    """The experiment's figures and tables of the finished runs in ``dest`` (default ``out/report``)."""
    out = Path(out)
    exp = open_experiment(out)
    return exp.report(out, Path(dest) if dest is not None else out / "report", **options)


def summary_tables(out: str | Path, **options: Any) -> list[tuple[str, pl.DataFrame]]:
    """The tables the experiment prints after its report, each with its title."""
    out = Path(out)
    return open_experiment(out).summary(out, **options)
