"""The run store every campaign kind shares: a directory with a manifest and one result file per run.

Layout of a campaign directory ``DIR`` (see docs/campaigns.md):

- ``manifest.json``: the kind, the name, the spec, its hash and every run (its id and parameters), written once,
  atomically, before the first run starts;
- ``results/<run id>.json``: one file per finished run, written atomically and *last* by the run (a run may
  write other files first, e.g. ``results/<run id>.jobs.parquet``); its existence marks the run done;
- whatever else a kind prepares once (workload windows, fitted models) in folders of its own.

A run is done exactly when its result file exists, so a campaign interrupted at any instant, even by ``kill -9``,
resumes by running only the runs without one: none is lost or done twice. Writes go to a temporary file next to
the target and are renamed over it (``os.replace`` is atomic on one file system).

Also here, because every kind needs it: the stable run id. The spec helpers are in :mod:`wattsched.core.spec`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.errors import CampaignError as CampaignError  # defined there, named here too
from wattsched.core.stopping import is_temporary

MANIFEST = "manifest.json"
RESULTS = "results"


def run_id(params: dict[str, Any]) -> str:
    """A stable id for a run: the hash of its parameters (sorted JSON), the same on every machine and executor."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ atomic writes


@contextlib.contextmanager
def atomic_path(path: Path, *, keep_suffix: bool = False) -> Iterator[Path]:
    """A temporary path next to ``path``, renamed to ``path`` when the block ends without error and removed
    otherwise. Its name is ``.NAME.PID.tmp`` (the campaign runner, holding the folder's lock, removes the leftovers
    of killed writers: :func:`wattsched.core.stopping.clean_temporaries`);
    ``keep_suffix`` ends it with ``path``'s suffix, for writers that choose a format by suffix."""
    tail = path.suffix if keep_suffix else ""
    tmp = path.with_name(f".{path.stem if keep_suffix else path.name}.{os.getpid()}.tmp{tail}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` either holds all of it or does not exist (crash-safe, synced to disk)."""
    with atomic_path(path) as tmp, open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def atomic_parquet(frame: pl.DataFrame, path: Path) -> None:
    """Write ``frame`` as Parquet so that ``path`` either holds all of it or does not exist."""
    with atomic_path(path, keep_suffix=True) as tmp:
        frame.write_parquet(tmp)


# ------------------------------------------------------------------------------------------------ the store


def result_path(out: Path, rid: str) -> Path:
    """The file whose existence marks run ``rid`` done."""
    return out / RESULTS / f"{rid}.json"


def write_result(out: Path, row: dict[str, Any]) -> None:
    """Write a run's result row (it has an ``id``) as its done marker, atomically."""
    atomic_write(result_path(out, row["id"]), json.dumps(row, indent=1, default=float))


def done_ids(out: Path, *, clean: bool = False) -> set[str]:
    """Ids of the runs whose result file exists (and parses). With ``clean`` (the runner, before it starts runs),
    the temporary files of killed runs are removed; without it nothing is touched, so that a status query while a
    campaign runs cannot remove a file a worker is writing."""
    results = Path(out) / RESULTS
    ids: set[str] = set()
    if not results.exists():
        return ids
    for path in results.iterdir():
        if is_temporary(path):
            if clean:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            continue
        if path.suffix == ".json":
            try:
                json.loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                if clean:  # cannot happen with atomic writes; a hand-damaged file is redone
                    path.unlink()
                continue
            except FileNotFoundError:
                continue
            ids.add(path.stem)
    return ids


def read_manifest(out: str | Path) -> dict[str, Any]:
    """The manifest of the campaign directory ``out``; a :class:`CampaignError` when it is not one."""
    path = Path(out) / MANIFEST
    if not path.exists():
        raise CampaignError(f"{out} is not a campaign directory (no {MANIFEST})")
    return json.loads(path.read_text())


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically (the directory and its ``results`` folder are created)."""
    (out / RESULTS).mkdir(parents=True, exist_ok=True)
    atomic_write(out / MANIFEST, json.dumps(manifest, indent=1))


def read_results(out: Path, runs: list[dict[str, Any]]) -> pl.DataFrame:
    """The result rows of the finished runs among ``runs``, in their order, as one table (empty when none).
    Each result file is read once: a missing or unparsable one is a run not done (as in :func:`done_ids`)."""
    rows = []
    for run in runs:
        try:
            rows.append(json.loads(result_path(out, run["id"]).read_text()))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            continue
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
