"""The run store every campaign kind shares: a directory with a manifest and one result file per run.

Layout of a campaign directory ``DIR`` (see docs/campaigns.md):

- ``manifest.json``: the kind, the name, the spec, its hash and every run (its id and parameters), written once,
  atomically, before the first run starts;
- ``results/<run id>.json``: one file per finished run, written atomically and *last* by the run (a run may
  write other files first, e.g. ``results/<run id>.jobs.parquet``); its existence marks the run done;
- whatever else a kind prepares once (workload windows, fitted models) in folders of its own.

A run is done exactly when its result file exists, so a campaign interrupted at any instant, even by ``kill -9``,
resumes by running only the runs without one: none is lost or done twice. Writes go to a new temporary file next
to the target, with a name nobody can guess, and are renamed over it (``os.replace`` is atomic on one file system).

Also here, because every kind needs it: the stable run id. The spec helpers are in :mod:`wattsched.core.spec`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.core.atomic import (  # the one safe way to write a file: defined there, named here too
    atomic_file as atomic_file,
)
from wattsched.core.atomic import (
    atomic_parquet as atomic_parquet,
)
from wattsched.core.atomic import (
    atomic_path as atomic_path,
)
from wattsched.core.atomic import (
    atomic_table as atomic_table,
)
from wattsched.core.atomic import (
    atomic_write as atomic_write,
)
from wattsched.core.atomic import (
    atomic_write_bytes as atomic_write_bytes,
)
from wattsched.core.errors import CampaignError as CampaignError  # defined there, named here too
from wattsched.core.output_folders import is_temporary
from wattsched.core.structured_input import load_json

MANIFEST = "manifest.json"
RESULTS = "results"
WORKLOADS = "workloads"
PREDICTIONS = "predictions"


@dataclass(frozen=True)
class CampaignLayout:
    """The folders of a campaign directory, named once: ``results/`` (one ``<id>.json`` done marker per run and
    the run's tables ``<id>.<table>.parquet``), ``workloads/`` (the prepared workloads and windows) and
    ``predictions/`` (a power campaign's predictions, made once per workload)."""

    root: Path

    #: The folders a power campaign prepares (``SHARED``: those that campaigns over the same workloads share).
    FOLDERS = (WORKLOADS, PREDICTIONS, RESULTS)
    SHARED = (WORKLOADS, PREDICTIONS)

    @property
    def results(self) -> Path:
        return self.root / RESULTS

    @property
    def workloads(self) -> Path:
        return self.root / WORKLOADS

    @property
    def predictions(self) -> Path:
        return self.root / PREDICTIONS

    def result(self, rid: str) -> Path:
        """The file whose existence marks run ``rid`` done."""
        return self.results / f"{rid}.json"

    def run_table(self, rid: str, table: str) -> Path:
        """A table a run writes beside its result (``jobs``, ``decisions``, ``timeline``...)."""
        return self.results / f"{rid}.{table}.parquet"

    def workload(self, name: str) -> Path:
        """A prepared workload or window."""
        return self.workloads / f"{name}.parquet"

    def prediction(self, name: str, suffix: str = "parquet") -> Path:
        """A workload's predictions (``parquet``) or their report (``json``)."""
        return self.predictions / f"{name}.{suffix}"

    def make(self, folders: tuple[str, ...] = FOLDERS) -> None:
        """Create the given folders (all three by default)."""
        for sub in folders:
            (self.root / sub).mkdir(parents=True, exist_ok=True)


def run_id(params: dict[str, Any]) -> str:
    """A stable id for a run: the hash of its parameters (sorted JSON), the same on every machine and executor."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ the store


def result_path(out: Path, rid: str) -> Path:
    """The file whose existence marks run ``rid`` done."""
    return CampaignLayout(out).result(rid)


def write_result(out: Path, row: dict[str, Any]) -> None:
    """Write a run's result row (it has an ``id``) as its done marker, atomically."""
    atomic_write(result_path(out, row["id"]), json.dumps(row, indent=1, default=float))


def done_ids(out: Path, *, clean: bool = False) -> set[str]:
    """Ids of the runs whose result file exists and is whole (:func:`read_result`). With ``clean`` (the runner,
    before it starts runs), the temporary files of killed runs and damaged result files are removed; without it
    nothing is touched, so that a status query while a campaign runs cannot remove a file a worker is writing."""
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
            if read_result(path) is not None:
                ids.add(path.stem)
            elif clean:  # cannot happen with atomic writes; a hand-damaged file is redone
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
    return ids


#: What a damaged store file means, said after why it cannot be read.
_NOT_OURS = "it is not a campaign folder of this version or it was damaged"


def read_store_json(path: Path, what: str = "") -> Any:
    """The JSON value of a file of the campaign store, or one :class:`CampaignError` line naming the file and
    why (missing, unreadable, not UTF-8, not JSON with the line and column, nested deeper than
    :data:`~wattsched.core.structured_input.MAX_DEPTH`), ending with what that means for the folder. ``what``
    names the file's role (e.g. "the campaign's manifest") in the message."""
    role = f" ({what})" if what else ""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CampaignError(f"{path}{role} does not exist; {_NOT_OURS}") from None
    except OSError as exc:
        raise CampaignError(f"{path}{role} cannot be read ({exc.strerror or exc})") from None
    try:
        return load_json(data.decode("utf-8"), path, error=lambda m: CampaignError(f"{m}; {_NOT_OURS}"))
    except UnicodeDecodeError as exc:
        raise CampaignError(f"{path}{role} is not UTF-8 text (byte {exc.start}); {_NOT_OURS}") from None
    except json.JSONDecodeError as exc:
        raise CampaignError(
            f"{path}{role} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}; {_NOT_OURS}"
        ) from None


def read_result(path: Path) -> dict[str, Any] | None:
    """A run's result row from its file ``results/<id>.json``, or None when the run is not done: the file is
    missing or damaged (not JSON, not an object, or another run's ``id``), which the runner redoes (the store's
    rule: a result file exists whole or the run did not finish). Never an exception for a damaged file: every
    reader of results (status, results, a kind's own tables) must agree on which runs are done."""
    try:
        row = read_store_json(path)
    except CampaignError:
        return None
    if not isinstance(row, dict) or row.get("id", path.stem) != path.stem:
        return None
    return row


def read_manifest(out: str | Path) -> dict[str, Any]:
    """The manifest of the campaign directory ``out``, checked: an object with a ``spec`` object and a ``runs``
    list of objects with a text ``id`` (``kind`` and ``spec_hash``, when there, text). Anything else is one
    :class:`CampaignError` line naming the file and what is wrong, not a ``KeyError`` or ``AttributeError`` in
    whichever command reads it first."""
    path = Path(out) / MANIFEST
    if not path.exists():
        raise CampaignError(f"{out} is not a campaign directory (no {MANIFEST})")
    manifest = read_store_json(path, "the campaign's manifest")
    problem = _manifest_problem(manifest)
    if problem is not None:
        raise CampaignError(f"{path}: {problem}; {_NOT_OURS}")
    return manifest


def _json_type(value: Any) -> str:
    """The JSON name of a parsed value's type (what a user sees in the file)."""
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _manifest_problem(manifest: Any) -> str | None:
    """What is wrong with a parsed manifest, or None."""
    if not isinstance(manifest, dict):
        return f"it holds {_json_type(manifest)}, not an object"
    for key, kind in (("spec", dict), ("runs", list)):
        if key not in manifest:
            return f"key {key!r} is missing"
        if not isinstance(manifest[key], kind):
            return f"key {key!r} is {_json_type(manifest[key])}, not {_json_type(kind())}"
    for key in ("kind", "spec_hash"):
        if key in manifest and not isinstance(manifest[key], str):
            return f"key {key!r} is {_json_type(manifest[key])}, not a string"
    for k, run in enumerate(manifest["runs"]):
        if not isinstance(run, dict):
            return f"runs[{k}] is {_json_type(run)}, not an object"
        if not isinstance(run.get("id"), str):
            return f"runs[{k}] has no text 'id'"
    return None


def write_manifest(out: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest atomically (the directory and its ``results`` folder are created)."""
    (out / RESULTS).mkdir(parents=True, exist_ok=True)
    atomic_write(out / MANIFEST, json.dumps(manifest, indent=1))


def read_results(out: Path, runs: list[dict[str, Any]]) -> pl.DataFrame:
    """The result rows of the finished runs among ``runs``, in their order, as one table (empty when none).
    Each result file is read once: a missing or damaged one is a run not done (:func:`read_result`)."""
    rows = []
    for run in runs:
        row = read_result(result_path(out, run["id"]))
        if row is not None:
            rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None) if rows else pl.DataFrame()
