"""The advisor's state: one SQLite file in WAL mode (stdlib ``sqlite3``: no server, one writer, readers such as
``wattsched advise --report`` never block it), schema-versioned.

Tables: ``meta`` (the sacct cursor, the schema version, the measured idle watts per node), ``history`` (one row per
finished job, ``job_id`` PRIMARY KEY: a job sacct repeats is counted once), ``predictions``, ``applied`` (the
license the advisor last set per job), ``audit`` (every action, applied or not, with why and which prediction) and
``cycles`` (one row per reconcile cycle: cap, budget, predicted and measured power), ``running`` (each running
job's per-node power read from its exclusive nodes' CurrentWatts, gross) and ``overshoots`` (each spell of
measured power above the cap).

Restart safety. Each method is one transaction: a process killed mid-call leaves the file as before the call
(SQLite's journal), and a job recorded twice is ignored. The cursor advances in the same transaction as the jobs
it covers, so after a ``kill -9`` the next cycle re-asks sacct from the last cursor and the repeats are dropped.
What was recorded but not yet applied is re-derived: the decisions compare the target with the license Slurm
reports, never with what the store believes was applied. The learning key is not stored: the learner composes it
from the stored user, account, name and nodes, so changing ``learning.key`` needs no migration.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from wattsched.advise.records import Action, FinishedJob
from wattsched.core.safe_files import UnsafeFileError, prepare_sqlite

__all__ = ["SCHEMA_VERSION", "AdvisorStore", "StoreError", "job_watts"]

#: 2 added ``running`` (node power measured while jobs run) and ``overshoots``; a version-1 file is upgraded in
#: place (the tables are created), a newer one is refused.
SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS history (
    job_id INTEGER PRIMARY KEY, user TEXT, account TEXT, name TEXT, nodes INTEGER, submit REAL, start REAL,
    "end" REAL, energy REAL, watts_gross REAL, watts_net REAL, state TEXT, license INTEGER, usable INTEGER,
    recorded REAL);
CREATE INDEX IF NOT EXISTS history_end ON history ("end");
CREATE TABLE IF NOT EXISTS predictions (
    job_id INTEGER, time REAL, watts_per_node REAL, license INTEGER, source TEXT, has_history INTEGER,
    PRIMARY KEY (job_id, time));
CREATE TABLE IF NOT EXISTS applied (job_id INTEGER PRIMARY KEY, value INTEGER, time REAL, data_time REAL);
CREATE TABLE IF NOT EXISTS audit (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL, cycle INTEGER, mode TEXT, kind TEXT, job_id INTEGER,
    value INTEGER, previous INTEGER, reason TEXT, prediction REAL, applied INTEGER, error TEXT, details TEXT);
CREATE TABLE IF NOT EXISTS cycles (
    id INTEGER PRIMARY KEY AUTOINCREMENT, time REAL, mode TEXT, cap REAL, budget INTEGER,
    predicted_running REAL, predicted_power REAL, measured_power REAL, n_pending INTEGER, n_running INTEGER,
    fresh INTEGER, delayed TEXT, advanced TEXT, over_license TEXT);
CREATE TABLE IF NOT EXISTS running (
    job_id INTEGER PRIMARY KEY, user TEXT, account TEXT, name TEXT, nodes INTEGER, first REAL, last REAL,
    samples INTEGER, watts_sum REAL, watts_last REAL, watts_max REAL);
CREATE TABLE IF NOT EXISTS overshoots (
    id INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT, start REAL, "end" REAL, cap REAL, peak REAL, seconds REAL,
    cycles INTEGER, acted TEXT);
"""


class StoreError(RuntimeError):
    """The state file cannot be used (written by a newer wattsched, not SQLite, unreadable): one line naming it."""


def job_watts(job: FinishedJob, idle_watts: float | None) -> tuple[float | None, float | None]:
    """A finished job's per-node power (gross, net of ``idle_watts``) from its energy: ``energy / (elapsed ·
    nodes)``; (None, None) when it cannot be learned from (no energy, no start, zero elapsed, no nodes)."""
    if job.energy_joules is None or job.start_time is None or job.nodes <= 0:
        return None, None
    elapsed = job.end_time - job.start_time
    if not elapsed > 0:
        return None, None
    gross = job.energy_joules / elapsed / job.nodes
    return gross, (None if idle_watts is None else gross - idle_watts)


class AdvisorStore:
    """The SQLite state of one advisor (module docstring). ``path`` is created with its folder if missing."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._last_prediction: dict[int, tuple[Any, Any, Any]] | None = None  # per pending job, as last recorded
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            prepare_sqlite(self.path, "advisor state")  # no symlink, ours, one link (core/safe_files.py)
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            with self._tx():
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    self.db.execute(statement)
                found = self._meta("schema_version")
                if found is None or int(found) < SCHEMA_VERSION:  # created now, or upgraded: tables are additive
                    columns = {row[1] for row in self.db.execute("PRAGMA table_info(cycles)")}
                    if "over_license" not in columns:  # a version-1 file
                        self.db.execute("ALTER TABLE cycles ADD COLUMN over_license TEXT")
                    self._set_meta("schema_version", str(SCHEMA_VERSION))
                elif int(found) > SCHEMA_VERSION:
                    raise StoreError(
                        f"{self.path}: state schema version {found} is newer than this wattsched's "
                        f"({SCHEMA_VERSION}); upgrade wattsched or use another --state"
                    )
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: not a usable advisor state file: {exc}") from None
        except UnsafeFileError as exc:
            raise StoreError(str(exc)) from None

    # ------------------------------------------------------------------------------------------------ basics
    def _tx(self) -> _Transaction:
        return _Transaction(self.db)

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> AdvisorStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------------ meta
    def cursor(self) -> float | None:
        """The latest end time of the jobs fully recorded (ask sacct for jobs ended at or after it)."""
        value = self._meta("cursor")
        return None if value is None else float(value)

    def idle_watts(self) -> float | None:
        """The measured idle power of one node (lowest CurrentWatts of idle nodes), None before any measurement."""
        value = self._meta("idle_watts")
        return None if value is None else float(value)

    def set_idle_watts(self, watts: float) -> None:
        with self._tx():
            self._set_meta("idle_watts", repr(float(watts)))

    def worst_watts(self) -> float | None:
        """The highest CurrentWatts seen on one node (gross), None before any reading: the observed worst case."""
        value = self._meta("worst_watts")
        return None if value is None else float(value)

    def raise_worst_watts(self, watts: float) -> float:
        """Keep ``watts`` as the observed worst case when it is higher than the one kept; returns the kept one."""
        with self._tx():
            kept = self.worst_watts()
            if kept is None or watts > kept:
                self._set_meta("worst_watts", repr(float(watts)))
                return float(watts)
            return kept

    # ------------------------------------------------------------------------------------------------ running
    def record_running(self, samples: Sequence[tuple[Any, float]], t: float) -> None:
        """One reading per running job measured this cycle: ``(job, gross watts per node)`` where ``job`` has
        ``job_id, user, account, name, nodes``. Kept as count, sum, last and max per job."""
        with self._tx():
            for job, watts in samples:
                self.db.execute(
                    "INSERT INTO running (job_id, user, account, name, nodes, first, last, samples, watts_sum,"
                    " watts_last, watts_max) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?) ON CONFLICT(job_id) DO UPDATE"
                    " SET last = excluded.last, samples = samples + 1, watts_sum = watts_sum + excluded.watts_sum,"
                    " watts_last = excluded.watts_last, watts_max = MAX(watts_max, excluded.watts_max)",
                    (job.job_id, job.user, job.account, job.name, job.nodes, t, t, watts, watts, watts),
                )

    def running_frame(self) -> pl.DataFrame:
        """Every job measured while running: job_id, user, account, name, nodes, first, last, samples, mean
        (gross W per node), last_watts, max_watts."""
        rows = self.db.execute(
            "SELECT job_id, user, account, name, nodes, first, last, samples, watts_sum / samples, watts_last,"
            " watts_max FROM running ORDER BY last, job_id"
        ).fetchall()
        schema = {
            "job_id": pl.Int64, "user": pl.Utf8, "account": pl.Utf8, "name": pl.Utf8, "nodes": pl.Int64,
            "first": pl.Float64, "last": pl.Float64, "samples": pl.Int64, "mean": pl.Float64,
            "last_watts": pl.Float64, "max_watts": pl.Float64,
        }  # fmt: skip
        return pl.DataFrame(rows, schema=schema, orient="row")

    def sacct_correction(self, min_samples: int = 3, last: int = 50) -> tuple[float, int]:
        """How far sacct's energy under-reads a job's power: the median, over the ``last`` completed jobs also
        measured while running (at least ``min_samples`` readings), of running mean / sacct's per-node power,
        clamped to [1, 1.5] (it only ever raises: a reading above the truth is already conservative). Returns the
        factor and how many jobs it rests on (1.0 and 0 without any)."""
        rows = self.db.execute(
            "SELECT r.watts_sum / r.samples, h.watts_gross FROM running r JOIN history h USING (job_id) WHERE"
            ' r.samples >= ? AND h.usable = 1 AND h.watts_gross > 0 ORDER BY h."end" DESC LIMIT ?',
            (min_samples, last),
        ).fetchall()
        if not rows:
            return 1.0, 0
        ratios = sorted(float(a) / float(b) for a, b in rows)
        mid = len(ratios) // 2
        median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
        return min(max(median, 1.0), 1.5), len(ratios)

    # ------------------------------------------------------------------------------------------------ overshoots
    def record_overshoot(
        self,
        start: float,
        end: float | None,
        cap: float,
        peak: float,
        seconds: float,
        cycles: int,
        acted: list[int],
        *,
        scope: str = "cluster",
    ) -> None:
        """Open (``end`` None) or update the spell of measured power above the cap of ``scope`` (the cluster or a
        power domain) that began at ``start``."""
        with self._tx():
            row = self.db.execute("SELECT id FROM overshoots WHERE start = ? AND scope = ?", (start, scope)).fetchone()
            values = (end, cap, peak, seconds, cycles, json.dumps(sorted({int(j) for j in acted})))
            if row is None:
                self.db.execute(
                    'INSERT INTO overshoots (scope, start, "end", cap, peak, seconds, cycles, acted)'
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (scope, start, *values),
                )
            else:
                self.db.execute(
                    'UPDATE overshoots SET "end" = ?, cap = ?, peak = ?, seconds = ?, cycles = ?, acted = ?'
                    " WHERE id = ?",
                    (*values, row[0]),
                )

    def suspended_jobs(self) -> dict[int, float]:
        """The jobs the advisor suspended and has not resumed: job → what it drew (W, the cap's basis)."""
        value = self._meta("suspended")
        return {int(k): float(v) for k, v in json.loads(value).items()} if value else {}

    def set_suspended_jobs(self, jobs: dict[int, float]) -> None:
        with self._tx():
            self._set_meta("suspended", json.dumps({str(k): v for k, v in sorted(jobs.items())}))

    def over_cap_seconds(self) -> float:
        """Seconds the cluster spent above its cap over the whole state's life."""
        row = self.db.execute("SELECT COALESCE(SUM(seconds), 0) FROM overshoots WHERE scope = 'cluster'").fetchone()
        return float(row[0])

    # ------------------------------------------------------------------------------------------------ history
    def record_finished(
        self, jobs: Sequence[FinishedJob], idle_watts: float | None, *, now: float | None = None
    ) -> int:
        """Record the jobs not seen before and advance the cursor to the latest end time, in one transaction.
        Jobs without energy or with zero elapsed time are kept (counted once) but flagged unusable for learning.
        Returns how many jobs were new."""
        new = 0
        now = time.time() if now is None else now
        with self._tx():
            for job in jobs:
                gross, net = job_watts(job, idle_watts)
                cur = self.db.execute(
                    'INSERT OR IGNORE INTO history (job_id, user, account, name, nodes, submit, start, "end", energy,'
                    " watts_gross, watts_net, state, license, usable, recorded)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        job.job_id,
                        job.user,
                        job.account,
                        job.name,
                        job.nodes,
                        job.submit_time,
                        job.start_time,
                        job.end_time,
                        job.energy_joules,
                        gross,
                        net,
                        job.state,
                        job.license_watts,
                        int(gross is not None),
                        now,
                    ),
                )
                new += cur.rowcount
            if jobs:
                latest = max(j.end_time for j in jobs)
                current = self.cursor()
                if current is None or latest > current:
                    self._set_meta("cursor", repr(float(latest)))
        return new

    def history_frame(self) -> pl.DataFrame:
        """Every recorded finished job, ordered by end time: job_id, user, account, name, nodes, submit, start,
        end, energy, watts_gross, watts_net (net of the idle power known when recorded, else of the measured idle
        power now), state, license, usable."""
        rows = self.db.execute(
            'SELECT job_id, user, account, name, nodes, submit, start, "end", energy, watts_gross, watts_net, state,'
            ' license, usable FROM history ORDER BY "end", job_id'
        ).fetchall()
        schema = {
            "job_id": pl.Int64,
            "user": pl.Utf8,
            "account": pl.Utf8,
            "name": pl.Utf8,
            "nodes": pl.Int64,
            "submit": pl.Float64,
            "start": pl.Float64,
            "end": pl.Float64,
            "energy": pl.Float64,
            "watts_gross": pl.Float64,
            "watts_net": pl.Float64,
            "state": pl.Utf8,
            "license": pl.Int64,
            "usable": pl.Boolean,
        }
        frame = pl.DataFrame(rows, schema=schema, orient="row")
        idle = self.idle_watts()
        if idle is not None:
            frame = frame.with_columns(pl.col("watts_net").fill_null(pl.col("watts_gross") - idle))
        return frame

    # ------------------------------------------------------------------------------------------------ licenses
    def applied_licenses(self) -> dict[int, int]:
        """job_id → the license value the advisor last set."""
        return {int(j): int(v) for j, v in self.db.execute("SELECT job_id, value FROM applied")}

    def set_applied(self, job_id: int, value: int, t: float, data_time: float | None = None) -> None:
        with self._tx():
            self.db.execute(
                "INSERT OR REPLACE INTO applied (job_id, value, time, data_time) VALUES (?, ?, ?, ?)",
                (job_id, value, t, t if data_time is None else data_time),
            )

    def forget(self, job_ids: Iterable[int]) -> None:
        """Drop the applied licenses of jobs no longer pending (started, ended or gone)."""
        with self._tx():
            self.db.executemany("DELETE FROM applied WHERE job_id = ?", [(int(j),) for j in job_ids])

    def record_predictions(self, rows: Iterable[dict[str, Any]], t: float) -> None:
        """The decision plan's rows (job_id, watts_per_node, license, source, has_history) whose prediction or
        license changed since the job's last recorded row: a job pending for a day at a 15-s interval is one
        row per change, not 5,760 rows."""
        if self._last_prediction is None:  # a new process: the latest row of every job recorded before
            self._last_prediction = {
                int(job): (watts, lic, source)
                for job, watts, lic, source in self.db.execute(
                    "SELECT p.job_id, p.watts_per_node, p.license, p.source FROM predictions p JOIN"
                    " (SELECT job_id, MAX(time) AS t FROM predictions GROUP BY job_id) m"
                    " ON p.job_id = m.job_id AND p.time = m.t"
                )
            }
        rows = list(rows)
        current = {int(r["job_id"]): (r.get("watts_per_node"), r.get("license"), r.get("source")) for r in rows}
        changed = [r for r in rows if self._last_prediction.get(int(r["job_id"])) != current[int(r["job_id"])]]
        with self._tx():
            self.db.executemany(
                "INSERT OR REPLACE INTO predictions (job_id, time, watts_per_node, license, source, has_history)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (r["job_id"], t, r.get("watts_per_node"), r.get("license"), r.get("source"), r.get("has_history"))
                    for r in changed
                ],
            )
        self._last_prediction = current  # the jobs pending now: the others have left the queue

    # ------------------------------------------------------------------------------------------------ log
    def audit(
        self,
        actions: Sequence[Action],
        *,
        cycle: int | None,
        mode: str,
        applied: bool | Sequence[bool],
        error: str | Sequence[str | None] | None = None,
        t: float | None = None,
    ) -> None:
        """Log ``actions`` (``applied`` and ``error`` for all of them, or one per action) at ``t`` (default now)."""
        t = time.time() if t is None else t
        flags = [applied] * len(actions) if isinstance(applied, bool) else list(applied)
        errors = [error] * len(actions) if error is None or isinstance(error, str) else list(error)
        with self._tx():
            self.db.executemany(
                "INSERT INTO audit (time, cycle, mode, kind, job_id, value, previous, reason, prediction, applied,"
                " error, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        t,
                        cycle,
                        mode,
                        a.kind,
                        a.job_id,
                        a.value,
                        a.previous,
                        a.reason,
                        a.prediction_watts,
                        int(f),
                        e,
                        json.dumps(a.details, default=str) if a.details else None,
                    )
                    for a, f, e in zip(actions, flags, errors, strict=True)
                ],
            )

    def record_failure(self, t: float, *, mode: str, error: str) -> None:
        """A cycle that acted on nothing because Slurm did not answer or answered something untrusted: one audit
        row of kind ``no_action`` with the error, so the log explains every gap in the cycles."""
        with self._tx():
            self.db.execute(
                "INSERT INTO audit (time, cycle, mode, kind, applied, error) VALUES (?, NULL, ?, 'no_action', 0, ?)",
                (t, mode, error),
            )

    def record_cycle(
        self,
        t: float,
        *,
        mode: str,
        cap: float | None,
        budget: int | None,
        predicted_running: float,
        measured_power: float | None,
        n_pending: int,
        n_running: int,
        fresh: bool = True,
        delayed: Sequence[int] = (),
        advanced: Sequence[int] = (),
        predicted_power: float | None = None,
        over_license: Sequence[int] = (),
    ) -> int:
        """One reconcile cycle; returns its id (the ``cycle`` of its audit rows). ``predicted_running`` is on the
        budget's basis, ``predicted_power`` and ``measured_power`` on the cap's (``decide.Plan``)."""
        with self._tx():
            cur = self.db.execute(
                "INSERT INTO cycles (time, mode, cap, budget, predicted_running, predicted_power, measured_power,"
                " n_pending, n_running, fresh, delayed, advanced, over_license)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    t,
                    mode,
                    cap,
                    budget,
                    predicted_running,
                    predicted_power,
                    measured_power,
                    n_pending,
                    n_running,
                    int(fresh),
                    json.dumps([int(j) for j in delayed]),
                    json.dumps([int(j) for j in advanced]),
                    json.dumps([int(j) for j in over_license]),
                ),
            )
            return int(cur.lastrowid or 0)

    def frame(self, table: str) -> pl.DataFrame:
        """A whole table (``cycles``, ``audit``, ``predictions``, ``applied``, ``history``) as a frame."""
        if table not in ("cycles", "audit", "predictions", "applied", "history", "meta", "running", "overshoots"):
            raise ValueError(f"no table {table!r} in the advisor state")
        cur = self.db.execute(f"SELECT * FROM {table}")  # the name is checked above
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
        if not rows:
            return pl.DataFrame(schema=dict.fromkeys(names, pl.Float64))
        return pl.DataFrame(rows, schema=names, orient="row", infer_schema_length=None)


class _Transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` (ROLLBACK on error); nested uses join the outer transaction."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.outer = False

    def __enter__(self) -> None:
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            self.outer = True

    def __exit__(self, kind: object, *rest: object) -> None:
        if not self.outer:
            return
        self.db.execute("ROLLBACK" if kind is not None else "COMMIT")
