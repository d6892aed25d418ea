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
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import polars as pl

from wattsched.core.errors import CampaignError as CampaignError  # defined there, named here too
from wattsched.core.output_folders import is_temporary

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


# ------------------------------------------------------------------------------------------------ atomic writes
#
# A writer may run as root in a folder others can write to (the advisor's status file in /tmp, a report folder):
# every temporary is a new file with an unpredictable name, created by ``mkstemp`` (O_CREAT|O_EXCL|O_NOFOLLOW), so
# a file or symlink planted at a name it could guess is never opened; the rename then replaces whatever is at the
# target, a planted symlink included, and never writes through it.


def _file_mode() -> int:
    """The mode a plain ``open`` would give a new file (0o666 less the umask; ``mkstemp`` makes 0600). The umask is
    read from /proc where it can be: setting it to read it would change it for every thread meanwhile."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _temporary(path: Path, keep_suffix: bool) -> tuple[int, Path]:
    """A new temporary file beside ``path`` and its open descriptor: ``.NAME.RANDOM.PID.tmp`` (``.STEM.RANDOM.PID
    .tmp.SUFFIX`` with ``keep_suffix``). The pid lets the lock holder tell a killed writer's leftovers
    (:func:`wattsched.core.output_folders.clean_temporaries`); the random part makes the name impossible to plant."""
    stem, tail = (path.stem, path.suffix) if keep_suffix else (path.name, "")
    fd, name = tempfile.mkstemp(prefix=f".{stem}.", suffix=f".{os.getpid()}.tmp{tail}", dir=path.parent)
    return fd, Path(name)


def _sync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (some file systems cannot sync a folder: nothing more to do there)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_path(path: Path, *, keep_suffix: bool = False) -> Iterator[Path]:
    """A new temporary file next to ``path`` (see :func:`_temporary`), renamed to ``path`` when the block ends
    without error and removed otherwise; for writers that open a path themselves (Parquet, a dataset build).
    ``keep_suffix`` ends its name with ``path``'s suffix, for writers that choose a format by suffix. Writers that
    can write to an open file should use :func:`atomic_file`, which never opens a name at all."""
    path = Path(path)
    fd, tmp = _temporary(path, keep_suffix)
    os.close(fd)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)  # the writer's file, not a planted link
        try:
            os.fchmod(fd, _file_mode())
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


@contextlib.contextmanager
def atomic_file(path: Path, *, binary: bool = False) -> Iterator[IO[Any]]:
    """``path`` written through an open file: a new temporary (:func:`_temporary`) written, given the usual mode,
    synced and renamed over ``path`` when the block ends without error (removed otherwise), so ``path`` holds
    either all of the new content or its former state."""
    path = Path(path)
    fd, tmp = _temporary(path, keep_suffix=False)
    try:
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as f:
            yield f
            f.flush()
            os.fchmod(f.fileno(), _file_mode())
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _sync_folder(path.parent)


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` so that ``path`` either holds all of it or does not exist (crash-safe, synced to disk)."""
    with atomic_file(path) as f:
        f.write(text)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` so that ``path`` either holds all of it or its former content (crash-safe, synced)."""
    with atomic_file(path, binary=True) as f:
        f.write(data)


def atomic_table(frame: pl.DataFrame, path: Path) -> Path:
    """``frame`` as CSV (``.csv``) or Parquet (any other name) at ``path``, through a renamed temporary; makes
    the parent folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.lower().endswith(".csv"):
        with atomic_file(path, binary=True) as f:
            frame.write_csv(f)
    else:
        atomic_parquet(frame, path)
    return path


def atomic_parquet(frame: pl.DataFrame, path: Path) -> None:
    """Write ``frame`` as Parquet so that ``path`` either holds all of it or does not exist."""
    with atomic_path(path, keep_suffix=True) as tmp:
        frame.write_parquet(tmp)


# ------------------------------------------------------------------------------------------------ the store


def result_path(out: Path, rid: str) -> Path:
    """The file whose existence marks run ``rid`` done."""
    return CampaignLayout(out).result(rid)


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
