"""The EAR "basic" energy model and the application database (paper 002 §3.1–§3.3; docs/eamc.md, Model).

From an application's reference signature on a partition — time T, power P (W per node), CPI and TPI (memory
transactions per instruction), all measured at the partition's reference frequency f_ref — and the partition's
coefficients from f_ref to a target frequency f (see :mod:`wattsched.studies.eamc.dvfs`)::

    P(f)   = A·P + B·TPI + C
    CPI(f) = D·CPI + E·TPI + F
    T(f)   = T · (CPI(f) / CPI) · (f_ref / f)
    E(f)   = P(f) · T(f)                      (per node; a job's energy is nodes × this)

**Time coefficient** (paper §3.3): a job's requested time is given for its *primary* partition. On partition p
at frequency f the job is predicted to take ``treq · T_p(f) / T_primary(f_ref)`` — the model's time ratio, so the
benchmark's absolute seconds never leak into a job's duration. :func:`time_factor` is that ratio; the engine
applies the same ratio to the job's actual runtime (spec: ``time_diff = duration/time_limit``).

**What is known before a job runs.** The :class:`AppDB` is the scheduler's only source: a policy reads it
through :meth:`AppDB.view` (no writes), and the engine calls :meth:`AppDB.observe` when a job completes, with the
signature it measured. In the paper's simulation the AppDB is static and complete from the start (loaded from the
``apps`` file with :func:`read_apps`), so knowledge and truth coincide; an online run starts from an empty or
partial AppDB and learns. An (app, partition) pair with no entry is *unknown*: nothing can be predicted for it.

App ids are strings (the canonical job table's ``app_id`` is Utf8); integers are accepted and converted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple, cast

import numpy as np
import polars as pl

from wattsched.studies.eamc.dvfs import DVFSPlatform, Partition
from wattsched.studies.eamc.en_conf import DVFSConfigError, find_en_conf

__all__ = [
    "EAMC_APP_NAMES",
    "AppDB",
    "AppDBView",
    "Prediction",
    "Projection",
    "Signature",
    "eamc_appdb",
    "predict_job",
    "project",
    "project_signature",
    "read_apps",
    "reference_signature",
    "time_factor",
]

#: Table 1 of the paper: the eight applications of the public ``apps`` file, by app id.
EAMC_APP_NAMES: dict[str, str] = {
    "1": "lu.C", "2": "ep.D", "3": "bt-mz.C", "4": "sp-mz.C", "5": "lu-mz.C", "6": "ua.C", "7": "DGEMM",
    "8": "STREAM",
}  # fmt: skip

UpdateRule = Literal["mean", "last"]


@dataclass(frozen=True)
class Signature:
    """An application's measured behaviour on one partition at one frequency (normally the reference one):
    runtime (s), average power per node (W), cycles per instruction, memory transactions per instruction."""

    time_s: float
    power_w: float
    cpi: float
    tpi: float

    def __post_init__(self) -> None:
        for name in ("time_s", "power_w", "cpi", "tpi"):
            value = float(getattr(self, name))
            if not math.isfinite(value) or value < 0 or (value == 0 and name != "tpi"):
                raise ValueError(
                    f"signature {name} must be finite and {'≥' if name == 'tpi' else '>'} 0, "
                    f"got {getattr(self, name)!r}"
                )
            object.__setattr__(self, name, value)

    def as_tuple(self) -> tuple[float, float, float, float]:
        return (self.time_s, self.power_w, self.cpi, self.tpi)


class Projection(NamedTuple):
    """Model values over frequencies: each array has the frequencies as its last axis."""

    frequencies: np.ndarray
    time: np.ndarray
    power: np.ndarray
    cpi: np.ndarray
    energy: np.ndarray


class Prediction(NamedTuple):
    """One job on one partition at one frequency. ``energy_j`` is for the whole job (nodes × power × time).
    Unknown apps give NaN values and ``known=False``."""

    time_s: float
    power_w: float
    energy_j: float
    known: bool


# --------------------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------------------


def project(
    partition: Partition,
    time_s: float | np.ndarray,
    power_w: float | np.ndarray,
    cpi: float | np.ndarray,
    tpi: float | np.ndarray,
    frequencies: float | Sequence[float] | np.ndarray | None = None,
) -> Projection:
    """Project reference signatures (scalars or arrays of shape (m,)) to frequencies of ``partition``.

    ``frequencies`` default to all available ones; the output arrays have shape (m, n_f), or (n_f,) for scalar
    signatures, or drop the frequency axis too when a single frequency is given. Vectorised because the EPM
    evaluates every job × partition × frequency at submission.
    """
    if frequencies is None:
        idx = np.arange(partition.n_frequencies)
        scalar_f = False
    else:
        scalar_f = np.ndim(frequencies) == 0
        idx = np.atleast_1d(partition.frequency_index(frequencies))
    f = partition.frequencies[idx]
    coef = partition.ref_coefficients[idx]  # (n_f, 6)
    sig = [np.asarray(x, dtype=np.float64)[..., None] for x in (time_s, power_w, cpi, tpi)]
    t0, p0, c0, m0 = sig
    a, b, c, d, e, g = (coef[:, i] for i in range(6))
    power = a * p0 + b * m0 + c
    cpi_f = d * c0 + e * m0 + g
    with np.errstate(divide="ignore", invalid="ignore"):
        time = t0 * (cpi_f / c0) * (partition.f_ref / f)
    energy = power * time
    if scalar_f:
        power, cpi_f, time, energy = (x[..., 0] for x in (power, cpi_f, time, energy))
        f = f[0]
    return Projection(frequencies=f, time=time, power=power, cpi=cpi_f, energy=energy)


def project_signature(
    partition: Partition, signature: Signature, frequencies: float | Sequence[float] | np.ndarray | None = None
) -> Projection:
    """:func:`project` for one :class:`Signature`."""
    return project(partition, *signature.as_tuple(), frequencies=frequencies)


def reference_signature(partition: Partition, measured: Signature, frequency: float) -> Signature:
    """The reference-frequency signature that the model maps to ``measured`` at ``frequency``.

    Inverts the projection equations (TPI is taken as frequency-independent, as the model does), so observing a
    run at any frequency stores what the model needs; a run at f_ref is returned unchanged.
    """
    k = partition.frequency_index(frequency)
    if k == partition.ref_index:
        return measured
    a, b, c, d, e, g = partition.ref_coefficients[k]
    f = float(partition.frequencies[k])
    p_ref = (measured.power_w - b * measured.tpi - c) / a
    cpi_ref = (measured.cpi - e * measured.tpi - g) / d
    t_ref = measured.time_s * (cpi_ref / measured.cpi) * (f / partition.f_ref)
    try:
        return Signature(time_s=t_ref, power_w=p_ref, cpi=cpi_ref, tpi=measured.tpi)
    except ValueError as exc:
        raise ValueError(
            f"partition {partition.name!r}: a run at {f:g} GHz with {measured} has no valid "
            f"reference signature under the model ({exc})"
        ) from None


# --------------------------------------------------------------------------------------------------------------
# Application database
# --------------------------------------------------------------------------------------------------------------


def _app_key(app_id: object) -> str:
    if isinstance(app_id, bool) or app_id is None:
        raise ValueError(f"app id must be a string or an integer, got {app_id!r}")
    if isinstance(app_id, float):
        if not app_id.is_integer():
            raise ValueError(f"app id must be a string or an integer, got {app_id!r}")
        app_id = int(app_id)
    return str(app_id)


@dataclass
class _Entry:
    signature: Signature
    count: int
    source: str  # "static" (loaded) or "observed" (learned from completed jobs)


class AppDBView:
    """Read-only access to an :class:`AppDB` (what a scheduling policy gets). It is live: entries the engine
    adds after a completion are visible from then on, never before."""

    def __init__(self, db: AppDB) -> None:
        self._db = db

    @property
    def partitions(self) -> tuple[str, ...]:
        return self._db.partitions

    def get(self, app_id: object, partition: str | Partition) -> Signature | None:
        """The reference signature of ``app_id`` on ``partition``, or None if unknown."""
        return self._db.get(app_id, partition)

    def known(self, app_id: object, partition: str | Partition) -> bool:
        return self._db.known(app_id, partition)

    def count(self, app_id: object, partition: str | Partition) -> int:
        return self._db.count(app_id, partition)

    def apps(self) -> list[str]:
        return self._db.apps()

    def arrays(self, app_ids: Iterable[object], partition: str | Partition) -> tuple[np.ndarray, ...]:
        return self._db.arrays(app_ids, partition)

    def table(self) -> pl.DataFrame:
        return self._db.table()

    def __len__(self) -> int:
        return len(self._db)


class AppDB:
    """Reference signatures per (app id, partition name), learnable from completed jobs.

    ``update`` says how an observation combines with an existing entry: ``"mean"`` (default) keeps the running
    mean of each field over all entries so far (a loaded signature counts as one), smoothing run-to-run noise;
    ``"last"`` replaces it, following the app's latest behaviour. Only ratios of times matter to the model
    (:func:`time_factor`), so jobs of different lengths of one app can share an entry.
    """

    def __init__(self, partitions: Sequence[str | Partition], *, update: UpdateRule = "mean") -> None:
        names = tuple(p.name if isinstance(p, Partition) else str(p) for p in partitions)
        if not names or len(set(names)) != len(names):
            raise ValueError(f"AppDB needs distinct partition names, got {names}")
        if update not in ("mean", "last"):
            raise ValueError(f"update must be 'mean' or 'last', got {update!r}")
        self.partitions = names
        self.update = update
        self._entries: dict[tuple[str, str], _Entry] = {}

    # -- reading ---------------------------------------------------------------------------------------------
    def _partition(self, partition: str | Partition) -> str:
        name = partition.name if isinstance(partition, Partition) else str(partition)
        if name not in self.partitions:
            raise KeyError(f"AppDB has no partition {name!r}; it has {self.partitions}")
        return name

    def get(self, app_id: object, partition: str | Partition) -> Signature | None:
        """The reference signature of ``app_id`` on ``partition``, or None if unknown."""
        entry = self._entries.get((_app_key(app_id), self._partition(partition)))
        return None if entry is None else entry.signature

    def known(self, app_id: object, partition: str | Partition) -> bool:
        return (_app_key(app_id), self._partition(partition)) in self._entries

    def count(self, app_id: object, partition: str | Partition) -> int:
        """How many signatures (loaded or observed) the entry summarises; 0 if unknown."""
        entry = self._entries.get((_app_key(app_id), self._partition(partition)))
        return 0 if entry is None else entry.count

    def apps(self) -> list[str]:
        """Known app ids, numeric ones in numeric order."""
        ids = {a for a, _ in self._entries}
        return sorted(ids, key=lambda a: (0, int(a), "") if a.isdigit() else (1, 0, a))

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[tuple[str, str, Signature]]:
        for (app, part), entry in self._entries.items():
            yield app, part, entry.signature

    def arrays(self, app_ids: Iterable[object], partition: str | Partition) -> tuple[np.ndarray, ...]:
        """``(time_s, power_w, cpi, tpi, known)`` arrays for many jobs on one partition; unknown rows are NaN.

        Looks up each distinct app once, so 5,000 jobs of 8 apps cost 8 lookups.
        """
        part = self._partition(partition)
        keys = [_app_key(a) for a in app_ids]
        uniq: np.ndarray | list[object]
        inverse: np.ndarray | list[int]
        uniq, inverse = np.unique(np.asarray(keys, dtype=object), return_inverse=True) if keys else ([], [])
        table = np.full((len(uniq), 4), np.nan)
        for i, app in enumerate(uniq):
            entry = self._entries.get((app, part))
            if entry is not None:
                table[i] = entry.signature.as_tuple()
        rows = table[np.asarray(inverse, dtype=np.int64)] if keys else np.empty((0, 4))
        known = ~np.isnan(rows[:, 0])
        return rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3], known

    def table(self) -> pl.DataFrame:
        """All entries as a table (app_id, partition, time_s, power_w, cpi, tpi, count, source)."""
        rows = [(app, part, *e.signature.as_tuple(), e.count, e.source) for (app, part), e in self._entries.items()]
        schema = {
            "app_id": pl.Utf8,
            "partition": pl.Utf8,
            "time_s": pl.Float64,
            "power_w": pl.Float64,
            "cpi": pl.Float64,
            "tpi": pl.Float64,
            "count": pl.Int64,
            "source": pl.Utf8,
        }
        return pl.DataFrame(rows, schema=schema, orient="row")

    def view(self) -> AppDBView:
        """Read-only access for scheduling policies."""
        return AppDBView(self)

    def copy(self) -> AppDB:
        """An independent copy (e.g. a fresh knowledge base per simulation run)."""
        other = AppDB(self.partitions, update=self.update)
        other._entries = {k: _Entry(e.signature, e.count, e.source) for k, e in self._entries.items()}
        return other

    # -- writing ---------------------------------------------------------------------------------------------
    def add(self, app_id: object, partition: str | Partition, signature: Signature, *, source: str = "static") -> None:
        """Set a reference signature (loading data); an existing entry is an error, since loading twice is a bug."""
        key = (_app_key(app_id), self._partition(partition))
        if key in self._entries:
            raise ValueError(f"AppDB already has app {key[0]!r} on partition {key[1]!r}")
        self._entries[key] = _Entry(signature, 1, source)

    def observe(
        self,
        app_id: object,
        partition: str | Partition,
        signature: Signature,
        *,
        frequency: float | None = None,
    ) -> Signature:
        """Learn from a completed job: ``signature`` measured on ``partition`` at ``frequency`` (None = the
        reference frequency). A run at another frequency is mapped back to the reference frequency with
        :func:`reference_signature`, which needs the :class:`Partition` object. Returns the stored signature.
        """
        name = self._partition(partition)
        if frequency is not None:
            if not isinstance(partition, Partition):
                raise TypeError(
                    "observe(frequency=…) needs the Partition (its coefficients map the run back to the "
                    "reference frequency), not only its name"
                )
            signature = reference_signature(partition, signature, frequency)
        key = (_app_key(app_id), name)
        entry = self._entries.get(key)
        if entry is None or self.update == "last":
            count = 1 if entry is None else entry.count + 1
            self._entries[key] = _Entry(signature, count, "observed")
        else:
            n = entry.count + 1
            old = np.asarray(entry.signature.as_tuple())
            new = old + (np.asarray(signature.as_tuple()) - old) / n
            self._entries[key] = _Entry(Signature(*(float(x) for x in new)), n, "observed")
        return self._entries[key].signature


def read_apps(path: str | Path, partitions: Sequence[str | Partition], *, update: UpdateRule = "mean") -> AppDB:
    """Read an EAMC ``apps`` file into a static :class:`AppDB`.

    Line 1 is the number of rows; each row is ``app_id partition_id nparams T P CPI TPI`` with ``nparams`` = 4
    values following and ``partition_id`` an index into ``partitions`` (0 = p1).
    """
    path = Path(path)
    names = [p.name if isinstance(p, Partition) else str(p) for p in partitions]
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DVFSConfigError(f"{path}: cannot read: {exc}") from None
    lines = [(n, line.split()) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise DVFSConfigError(f"{path}: empty (expected a row count on line 1)")
    first_no, first = lines[0]
    if len(first) != 1 or not first[0].isdigit():
        raise DVFSConfigError(f"{path}:{first_no}: expected the number of applications, got {' '.join(first)!r}")
    db = AppDB(names, update=update)
    apps_seen: set[str] = set()
    for number, fields in lines[1:]:
        where = f"{path}:{number}"
        if len(fields) < 3:
            raise DVFSConfigError(f"{where}: expected 'app_id partition_id nparams T P CPI TPI', got {fields}")
        try:
            part_id, nparams = int(fields[1]), int(fields[2])
        except ValueError:
            raise DVFSConfigError(f"{where}: partition id and nparams must be integers, got {fields[1:3]}") from None
        if nparams != 4:
            raise DVFSConfigError(f"{where}: nparams must be 4 (T P CPI TPI), got {nparams}")
        if len(fields) != 3 + nparams:
            raise DVFSConfigError(f"{where}: nparams = {nparams} but {len(fields) - 3} values follow")
        if not 0 <= part_id < len(names):
            raise DVFSConfigError(
                f"{where}: partition id {part_id} out of range (the conf has {len(names)} partitions: {names})"
            )
        try:
            values = [float(v) for v in fields[3:]]
        except ValueError:
            raise DVFSConfigError(f"{where}: T P CPI TPI must be numbers, got {fields[3:]}") from None
        try:
            sig = Signature(*values)
        except ValueError as exc:
            raise DVFSConfigError(f"{where}: {exc}") from None
        app = fields[0]
        if db.known(app, names[part_id]):
            raise DVFSConfigError(f"{where}: app {app} on partition {names[part_id]} given twice")
        db.add(app, names[part_id], sig)
        apps_seen.add(app)
    declared = int(first[0])
    if declared != len(apps_seen):
        raise DVFSConfigError(
            f"{path}:{first_no}: declares {declared} applications, but the rows name {len(apps_seen)}"
        )
    return db


def eamc_appdb(
    data_dir: str | Path | None, platform: DVFSPlatform | Sequence[str] = ("p1", "p2"), *, update: UpdateRule = "mean"
) -> AppDB:
    """The paper's static AppDB: the ``apps`` file next to the ``en_conf`` conf (``2hw/apps``)."""
    conf = find_en_conf(data_dir)
    names = platform.names if isinstance(platform, DVFSPlatform) else tuple(platform)
    for cand in (conf.parent / conf.stem / "apps", conf.parent / "apps"):
        if cand.is_file():
            return read_apps(cand, names, update=update)
    raise DVFSConfigError(f"{conf}: no apps file in {conf.parent / conf.stem} or {conf.parent}")


# --------------------------------------------------------------------------------------------------------------
# Per-job predictions
# --------------------------------------------------------------------------------------------------------------


def time_factor(
    platform: DVFSPlatform,
    appdb: AppDB | AppDBView,
    app_id: object,
    partition: str | int | Partition,
    frequency: float | None = None,
    *,
    primary: str | int | None = None,
) -> float:
    """``T_p(f) / T_primary(f_ref)``: what a job's primary-partition time (requested or actual) is multiplied by
    on ``partition`` at ``frequency`` (None = its reference frequency). NaN if the app is unknown on either."""
    part = platform[platform.index(partition)]
    prim = platform[platform.index(platform.primary if primary is None else primary)]
    sig = appdb.get(app_id, part.name)
    sig_primary = appdb.get(app_id, prim.name)
    if sig is None or sig_primary is None:
        return math.nan
    t = project_signature(part, sig, part.f_ref if frequency is None else frequency).time
    return float(t) / sig_primary.time_s


def predict_job(
    platform: DVFSPlatform,
    appdb: AppDB | AppDBView,
    app_id: object,
    partition: str | int | Partition,
    frequency: float | None = None,
    *,
    requested_time: float | None = None,
    nodes: int = 1,
    primary: str | int | None = None,
) -> Prediction:
    """Predicted time, power per node and job energy of one job on ``partition`` at ``frequency`` (None = f_ref).

    ``requested_time`` is the job's time on the primary partition (None: the app's reference time there, i.e.
    the model's own seconds). Reads only the AppDB, so it is safe for a policy to call.
    """
    part = platform[platform.index(partition)]
    sig = appdb.get(app_id, part.name)
    factor = time_factor(platform, appdb, app_id, part, frequency, primary=primary)
    if sig is None or math.isnan(factor):
        return Prediction(math.nan, math.nan, math.nan, False)
    prim = platform[platform.index(platform.primary if primary is None else primary)]
    # a finite factor means time_factor found the app on the primary partition too
    base = cast(Signature, appdb.get(app_id, prim.name)).time_s if requested_time is None else float(requested_time)
    power = float(project_signature(part, sig, part.f_ref if frequency is None else frequency).power)
    time = base * factor
    return Prediction(time, power, nodes * power * time, True)
