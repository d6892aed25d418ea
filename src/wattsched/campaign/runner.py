"""Run a campaign: prepare its workloads once, then execute every run on local processes or a Dask cluster,
one result file per run, resumable after a crash or a ``kill -9``.

Directory layout (``DIR``):

- ``manifest.json``: the spec, its hash and every run (id and parameters), written once, atomically;
- ``workloads/<window id>.parquet``: each workload window, predictions included (prepared once);
- ``predictions/<workload>.parquet``: per-job true and predicted power, for the error plots;
- ``results/<run id>.json``: one file per finished run, written atomically (temporary file, then rename).

A run is done exactly when its result file exists, so a resumed campaign redoes only the runs that had not
finished: none is lost or done twice. Results do not depend on the executor or the number of workers (runs are
deterministic and independent); only the recorded timings differ.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.api import run_policy
from wattsched.campaign.spec import (
    LEGACY_POST_WINDOW_CAP,
    CampaignError,
    CampaignSpec,
    WorkloadSpec,
    expand_runs,
    run_id,
    workload_variants,
)
from wattsched.core.executors import check_executor, map_tasks
from wattsched.core.schema import ReadResult
from wattsched.engine.windows import WindowSpec, cut_windows
from wattsched.policies.powercheck import PowerCheck
from wattsched.power.platform import PowerCapSchedule, load_platform
from wattsched.power.run import PowerSetup
from wattsched.predict.power_history import HistoryConfig
from wattsched.predict.run import run_power_prediction
from wattsched.workload.generate import generate_lublin, generate_m100like
from wattsched.workload.load import load_workload
from wattsched.workload.tableio import write_table

#: Result fields that depend on the machine, not on the run (left out when comparing result sets).
TIMING_FIELDS = ("elapsed_s", "simulation_s", "worker")
MANIFEST = "manifest.json"


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` either holds all of it or does not exist (crash-safe)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _atomic_parquet(frame: pl.DataFrame, path: Path, provenance: Any = None) -> None:
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.parquet")
    write_table(frame, tmp, provenance=provenance)
    os.replace(tmp, path)


def spec_hash(spec: CampaignSpec) -> str:
    return run_id(spec.model_dump(mode="json"))


# ----------------------------------------------------------------------------------------------- preparation


def load_workload_spec(wl: WorkloadSpec, seed: int):
    """The workload of ``wl`` for grid seed ``seed``: read from its file, or generated with its seed offset by
    ``seed`` (before windows are cut)."""
    if wl.path is not None:
        return load_workload(wl.path, machine_size=wl.machine_size)
    g = wl.generate
    if g.model == "m100":
        return generate_m100like(g.jobs, seed=g.seed + seed, target_load=g.target_load)
    if g.machine_size is None:
        raise CampaignError(f"workload {wl.name!r}: the lublin generator needs machine_size")
    return generate_lublin(g.jobs, g.machine_size, seed=g.seed + seed, target_load=g.target_load)


def prepare_workload(spec: CampaignSpec, wl: WorkloadSpec, seed: int, name: str, out: Path) -> list[str]:
    """Load or generate one workload variant, add predictions if the grid uses them, cut windows; returns the
    window ids."""
    read = load_workload_spec(wl, seed)
    size = wl.machine_size or read.provenance.machine_size
    if "predicted" in spec.grid.sources:
        plat = load_platform(spec.platform)
        pred = run_power_prediction(
            read,
            spec.prediction.method,
            completion=spec.prediction.completion,
            machine_size=size,
            history=HistoryConfig(fallback_watts=plat.max_node_watts),
        )
        keep = [
            c
            for c in ("job_id", "user_id", "submit_time", "runtime", "size", "power_mean", "power_max", "power_std")
            if c in pred.jobs.columns
        ]
        _atomic_parquet(pred.jobs.select(*keep, *pred.predictions.columns), out / "predictions" / f"{name}.parquet")
        _atomic_write(out / "predictions" / f"{name}.json", json.dumps(pred.report, indent=2, default=str))
        read = ReadResult(pred.jobs, read.rejects, read.provenance)
    if wl.windows is None:
        _atomic_parquet(read.jobs, out / "workloads" / f"{name}.parquet", read.provenance)
        return [name]
    w = wl.windows
    ids = []
    for k, (_, window) in enumerate(
        cut_windows(read, WindowSpec(w.count, w.hours, w.seed + seed, w.prestate), machine_size=size)
    ):
        wid = f"{name}-w{k:02d}"
        _atomic_parquet(window.jobs, out / "workloads" / f"{wid}.parquet", window.provenance)
        ids.append(wid)
    return ids


def prepare(spec: CampaignSpec, out: Path, *, log: Callable[[str], None] = lambda s: None) -> dict[str, Any]:
    """Create the campaign directory (or reuse it when it holds this very campaign) and return the manifest."""
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST
    digest = spec_hash(spec)
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest["spec_hash"] != digest:
            raise CampaignError(
                f"{out} holds another campaign ({manifest['spec']['name']!r}, hash {manifest['spec_hash']}); "
                "use a new directory"
            )
        return manifest
    for sub in ("workloads", "predictions", "results"):
        (out / sub).mkdir(exist_ok=True)
    windows = {}
    for wl, seed, name in workload_variants(spec):
        t = time.perf_counter()
        windows[name] = prepare_workload(spec, wl, seed, name, out)
        log(f"prepared workload {name}: {len(windows[name])} window(s) in {time.perf_counter() - t:.1f} s")
    runs = expand_runs(spec, windows)
    manifest = {"spec": spec.model_dump(mode="json"), "spec_hash": digest, "windows": windows, "runs": runs}
    _atomic_write(manifest_path, json.dumps(manifest, indent=1))
    return manifest


# -------------------------------------------------------------------------------------------------- one run


def execute_run(run: dict[str, Any], out_dir: str) -> dict[str, Any]:
    """Simulate one run of the manifest, write ``results/<id>.json`` atomically and return the result row."""
    t0 = time.perf_counter()
    out = Path(out_dir)
    read = load_workload(out / "workloads" / f"{run['workload']}.parquet")
    plat = load_platform(run["platform"])
    if run["kind"] == "baseline":
        setup = PowerSetup(plat, PowerCheck.named("none"), "real", None, run["power_window"])
        result = run_policy(read, run["policy"], power=setup, baseline=False)
    else:
        post = run.get("post_window_cap", LEGACY_POST_WINDOW_CAP)
        cap = PowerCapSchedule.window(run["cap"], plat, window_end=run["power_window"], post_window_cap=post)
        check = PowerCheck.named(run["check"], reservation=run["reservation"])
        setup = PowerSetup(plat, check, run["source"], cap, run["power_window"])
        result = run_policy(read, run["policy"], power=setup, baseline=True)
    m = result.summary["metrics"]
    row: dict[str, Any] = {k: v for k, v in run.items()}
    if run["kind"] != "baseline":
        row["post_window_cap"] = str(run.get("post_window_cap", LEGACY_POST_WINDOW_CAP))
    window = read.provenance.header.get("window") or {}
    row.update(
        {
            "jobs": result.jobs.height,
            "rejected": result.rejects.height,
            "prestate": window.get("prestate", "none") if isinstance(window, dict) else "none",
            "prestarted": int(read.jobs["prestarted"].sum()) if "prestarted" in read.jobs.columns else 0,
            "requeued": int(read.jobs["requeued"].sum()) if "requeued" in read.jobs.columns else 0,
            **{f"m_{k}": v for k, v in m.items() if isinstance(v, int | float) or v is None},
            **{
                f"p_{k}": v
                for k, v in result.summary["power"].items()
                if isinstance(v, int | float | bool) or v is None
            },
            "simulation_s": result.result.elapsed_s,
            "elapsed_s": time.perf_counter() - t0,
            "worker": os.getpid(),
        }
    )
    _atomic_write(out / "results" / f"{run['id']}.json", json.dumps(row, default=float))
    return row


# ------------------------------------------------------------------------------------------------ executors


def done_ids(out: Path) -> set[str]:
    """Ids of the runs whose result file exists (and parses); stray temporary files are removed."""
    results = out / "results"
    ids = set()
    if not results.exists():
        return ids
    for path in results.iterdir():
        if path.name.endswith(".tmp"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        if path.suffix == ".json":
            try:
                json.loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                path.unlink()  # cannot happen with atomic writes; a hand-damaged file is redone
                continue
            ids.add(path.stem)
    return ids


@dataclass
class CampaignRun:
    total: int
    already_done: int
    executed: int
    seconds: float


def run_campaign(
    spec: CampaignSpec,
    out: str | Path,
    *,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    log: Callable[[str], None] = lambda s: None,
) -> CampaignRun:
    """Prepare (once) and execute every run not done yet. ``limit`` stops after that many runs (for tests)."""
    check_executor(executor, CampaignError)
    out = Path(out)
    t0 = time.perf_counter()
    manifest = prepare(spec, out, log=log)
    runs = manifest["runs"]
    done = done_ids(out)
    todo = [r for r in runs if r["id"] not in done]
    if limit is not None:
        todo = todo[:limit]
    workers = workers or max(1, os.cpu_count() or 1)
    log(f"{len(runs)} runs, {len(done)} already done, {len(todo)} to run on {executor} ({workers} worker(s))")
    out_dir = str(out.resolve()) if executor == "dask" else str(out)
    stream = map_tasks(
        partial(execute_run, out_dir=out_dir),
        todo,
        executor=executor,
        workers=workers,
        address=address,
        ordered=False,
        keys=[f"run-{r['id']}" for r in todo],
    )
    finished = len(done)
    for _ in stream:
        finished += 1
        if progress is not None:
            progress(finished, len(runs))
    return CampaignRun(len(runs), len(done), len(todo), time.perf_counter() - t0)


# --------------------------------------------------------------------------------------------------- queries


def status(out: str | Path) -> dict[str, Any]:
    """Progress of a campaign directory: runs done and to do, per workload and kind."""
    out = Path(out)
    if not (out / MANIFEST).exists():
        raise CampaignError(f"{out} is not a campaign directory (no {MANIFEST})")
    manifest = json.loads((out / MANIFEST).read_text())
    done = done_ids(out)
    frame = pl.DataFrame(
        [{"workload": r["workload"], "kind": r["kind"], "done": r["id"] in done} for r in manifest["runs"]]
    )
    per = frame.group_by("workload", "kind").agg(pl.len().alias("runs"), pl.col("done").sum()).sort("workload", "kind")
    return {
        "name": manifest["spec"]["name"],
        "runs": len(manifest["runs"]),
        "done": len(done & {r["id"] for r in manifest["runs"]}),
        "per_workload": per,
    }


def load_results(out: str | Path) -> pl.DataFrame:
    """Every finished run as one table, in the manifest's order."""
    out = Path(out)
    if not (out / MANIFEST).exists():
        raise CampaignError(f"{out} is not a campaign directory (no {MANIFEST})")
    manifest = json.loads((out / MANIFEST).read_text())
    done = done_ids(out)
    rows = [json.loads((out / "results" / f"{r['id']}.json").read_text()) for r in manifest["runs"] if r["id"] in done]
    if not rows:
        return pl.DataFrame()
    return pl.DataFrame(rows, infer_schema_length=None)
