"""The experiment contract: what every kind of campaign gives the one runner (``wattsched.campaign.runner``).

A kind (the power campaign of paper 000, paper 001's dispatch campaign, paper 002's EAMC grid, paper 004's RMAP
grid, plain queue-policy comparisons) is a subclass of :class:`Experiment` that holds its validated spec and says

- :meth:`~Experiment.count_runs`: how many runs the spec expands to, multiplied from the lengths of its axes
  without preparing or expanding anything, so that a grid beyond its bound (``max_runs``,
  :data:`~wattsched.core.spec.DEFAULT_MAX_RUNS`) is refused before it prepares a single workload;
- :meth:`~Experiment.plan`: prepare what every run shares, once (workload windows, a fitted model), under the
  campaign directory, and return the runs: dicts of parameters, each with a stable ``id``
  (:func:`wattsched.core.store.run_id`);
- :meth:`~Experiment.task`: a picklable callable (a top-level function, or a ``functools.partial`` of one) that
  executes one run in any process and writes its result through the store (:func:`wattsched.core.store.
  write_result`, last, atomically), returning the result row;
- :meth:`~Experiment.report`: figures and tables from the finished runs.

The runner owns everything else: the manifest, the executors, resume, status, the results table, progress and
interruption. Optional members have defaults here, so the runner never probes for them.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
from pydantic import BaseModel

from wattsched.core.atomic import atomic_table
from wattsched.core.spec import check_run_count
from wattsched.core.store import read_manifest, read_results, run_id

#: A run: its parameters, with a stable ``id``.
Run = dict[str, Any]


def no_log(message: str) -> None:
    """The default ``log``: say nothing."""


class Experiment(ABC):
    """One kind of campaign over its validated spec (see the module docstring)."""

    #: The value of the spec's ``kind`` field that selects this experiment.
    kind: ClassVar[str]
    #: The spec's model (a :class:`wattsched.core.store.StrictModel` with a ``kind`` and a ``name`` field).
    spec_model: ClassVar[type[BaseModel]]
    #: Run parameters that ``campaign status`` counts finished runs by (two of them).
    status_keys: ClassVar[tuple[str, str]] = ("kind", "id")
    #: Result fields that depend on the machine, not on the run (wall times, the worker's pid): left out when
    #: result sets are compared, e.g. a resumed campaign's with an uninterrupted one's.
    timing_fields: ClassVar[tuple[str, ...]] = ("elapsed_s", "simulation_s", "worker")
    #: Spec fields left out of the spec's hash: where inputs are, not what the experiment is (so a campaign
    #: resumes when they move).
    hash_exclude: ClassVar[frozenset[str]] = frozenset()

    #: What the spec was read from (the file, or what built it), for the messages about the spec as a whole.
    source: str = "campaign"

    def __init__(self, spec: BaseModel, *, base: Path | None = None) -> None:
        """``base`` resolves the spec's relative paths (the spec file's directory; default: the working one)."""
        self.spec: Any = spec
        self.base = base

    @property
    def name(self) -> str:
        return str(self.spec.name)

    def spec_data(self) -> dict[str, Any]:
        """The spec as JSON data (what the manifest records)."""
        return self.spec.model_dump(mode="json")

    def spec_hash(self) -> str:
        """The hash that tells whether a directory holds this very campaign."""
        data = self.spec_data()
        return run_id({k: v for k, v in data.items() if k not in self.hash_exclude})

    @abstractmethod
    def count_runs(self) -> int:
        """How many runs :meth:`plan` will return (at most, where a workload may give fewer windows than asked),
        as the product of the grid's axis lengths: nothing is prepared or expanded, so it is instant for any grid
        (the runner refuses one above ``max_runs`` with it)."""

    def check_run_count(self, max_runs: int | None = None) -> int:
        """:meth:`count_runs`, refused in one line when above ``max_runs`` (default: the spec's ``max_runs``, else
        :data:`~wattsched.core.spec.DEFAULT_MAX_RUNS`)."""
        count = self.count_runs()
        check_run_count(count, max_runs if max_runs is not None else getattr(self.spec, "max_runs", None), self.source)
        return count

    @abstractmethod
    def plan(self, out: Path, log: Callable[[str], None] = no_log) -> list[Run]:
        """Prepare what the runs share under ``out`` (once: the runner calls this only for a new directory) and
        return every run, in a stable order."""

    @abstractmethod
    def task(self, out: Path) -> Callable[[Run], dict[str, Any]]:
        """The picklable function that executes one run into ``out`` and returns its result row."""

    def manifest_extra(self, out: Path) -> dict[str, Any]:
        """Entries the manifest records besides the spec and the runs (read after :meth:`plan`)."""
        return {}

    def runs(self, out: Path) -> list[Run]:
        """The runs the manifest of ``out`` records."""
        return list(read_manifest(out)["runs"])

    def results(self, out: Path) -> pl.DataFrame:
        """One row per finished run (its result file), in the manifest's order; empty when none has finished."""
        return read_results(out, self.runs(out))

    def report(self, out: Path, dest: Path, **options: Any) -> list[Path]:
        """Write figures and tables of the finished runs in ``dest``; returns the files. By default, the results
        table as CSV."""
        dest.mkdir(parents=True, exist_ok=True)
        path = dest / "results.csv"
        atomic_table(self.results(out), path)
        return [path]

    def summary(self, out: Path, **options: Any) -> list[tuple[str, pl.DataFrame]]:
        """Tables to print after a report, each with its title (none by default)."""
        return []
