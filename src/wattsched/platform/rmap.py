"""The Cab machine, its job details table and the configuration model of paper 004 (RMAP, reference spec §5).

RMAP's policies pick a *configuration* (n × c, p) — n nodes, c cores per node, a package power cap p per socket — for
each job from a pre-computed table of (time, total package power) per configuration and application (the paper's
``job_details_table``). This module provides the machine preset, a synthetic stand-in for the unpublished Cab
measurements, the table with O(log K) "fastest configuration under a power bound" queries, and the paper's
configuration model with its accuracy report (Figs. 6–7). The schedulers live elsewhere and only use this API.

Machine (:data:`RMAP_CAB`, preset ``rmap-cab``)
    N = 64 nodes of 2 Sandy Bridge sockets × 8 cores (Cab, LLNL). Grid: n ∈ {8, 12, …, 64} (15), c ∈ {8, 10, …, 16}
    (5), p ∈ {51, 65, 80, 95, 115} W (5): 375 configurations per application. Turbo Boost only at 115 W.
    Worst case 64·2·115 = 14,720 W; global bounds {6500, 8000, 10000, 12000, 14000} W, normalised by the worst
    case to 0.44 / 0.54 / 0.68 / 0.82 / 0.95 (:func:`normalised_bounds`).

Synthetic application model (no Cab data is public, so this is a documented physical model, not a reproduction)
    Per socket, a = c/2 active cores (OpenMP *scatter* placement, as in the paper). :class:`SocketModel` parameters:
    floor F = 20 W (idle + uncore of a busy socket), static L = 1.5 W per active core, dynamic D = 5.5 W per fully
    active core at the nominal f₀ = 2.6 GHz, scaling as (f/f₀)^α with α = 2.6 (f·V², V rising with f), memory-traffic
    power M = 10 W for a fully memory-bound phase, core activity u_low = 0.2 in serial and communication phases,
    f_min = 1.2 GHz, turbo bins 3.3/3.3/3.2/3.2/3.1/3.1/3.0/3.0 GHz for 1…8 active cores (3.3 GHz max turbo, 3.0 GHz
    all-core) enabled only at p = 115 W, otherwise f ≤ 2.6 GHz (the highest non-turbo frequency).

    An application (:class:`AppModel`) has a base time T (s at 8 × 16 and 2.6 GHz), an Amdahl serial fraction s, a
    communication coefficient κ (MPI_Alltoall cost, linear in the node count — the paper's knob for making its
    synthetic codes non-scalable), a memory-bound share m of the parallel work and a core activity u (switching
    activity of the parallel phase: high for spin loops, low for memory streams).

    - Parallel-phase demand: P_par(f) = F + a·L + a·u·D·(f/f₀)^α + m·M.
    - Frequency under the cap: the highest f whose P_par ≤ p, i.e. f = f₀·((p − F − a·L − m·M)/(a·u·D))^(1/α), clipped
      to [f_min, f_top] with f_top = turbo(a) at 115 W, else 2.6 GHz. Should even f_min exceed the cap, RAPL
      duty-cycles the clock: the effective frequency is f_min·δ with δ = (p − static)/(dynamic at f_min) (≥ 0.05;
      never reached on the Cab grid).
    - Memory bandwidth per socket saturates with cores: B(a) = a_s·(1 − e^(−a/a_s)), a_s = 3 cores, so memory-bound
      work gains little from more cores per node; its time depends weakly on frequency, as (f₀/f)^β with β = 0.25.
    - Time (n_ref = 8 nodes, a_ref = 8 cores per socket):
      t = T·s·(f₀/f) + T·(1−s)·(n_ref/n)·[(1−m)·(a_ref/a)·(f₀/f) + m·(B(a_ref)/B(a))·(f₀/f)^β]
      + T·κ·max(0, n − n_ref)/n_ref.
      Scalable apps (small s, κ) fall with n·c in Amdahl fashion; non-scalable ones flatten (or rise) with n.
    - Power: per socket the phase-weighted mean of P_par (parallel phase) and P_low = F + a·L + a·u_low·D·(f/f₀)^α
      (serial and communication phases), never above the cap; the job's total package power is n·2·P_socket.
      (The frequency is set by the parallel phase, RAPL's binding one.)

    Measurement noise (seeded, per application from ``(seed, crc32(app))``): time × exp(0.02·z), socket power
    × exp(0.015·z), then re-capped at p (RAPL enforces the cap).

    Applications (the paper's eight: four real codes, four synthetic extremes)::

        app     scalable  memory-bound   T (s)   s      κ      m     u     footprint   per core
        sphot   yes       no             1200    0.004  0      0.05  0.95   20 GB      0.10 GB
        bt-mz   yes       no              900    0.015  0.003  0.30  0.85  100 GB      0.30 GB
        sp-mz   yes       no              800    0.02   0.004  0.45  0.90   90 GB      0.30 GB
        lu-mz   no        no              700    0.08   0.020  0.35  0.85   60 GB      0.30 GB
        sc      yes       no              600    0.001  0      0     1.00    4 GB      0.05 GB
        nsc     no        no              500    0.10   0.050  0     1.00    4 GB      0.05 GB
        sm      yes       yes             600    0.002  0      0.90  0.40  200 GB      0.50 GB
        nsm     no        yes             500    0.10   0.050  0.90  0.40  220 GB      0.50 GB

    LU-MZ counts as non-scalable because class D has only 16 zones, which bounds its MPI parallelism: its time
    flattens beyond ~32 nodes.

Missing points (the paper has 2,840 of 3,000, without saying which are missing)
    A configuration is dropped, in this order, when (1) the job does not fit in memory: footprint/n + c·per-core
    > 30 GB (32 GB nodes less the OS) — SM at n = 8 with c ≥ 12 and NSM at n = 8; (2) its measured time exceeds the
    campaign's 1,800-s run limit ("time-out"); (3) it is among the runs drawn uniformly at random (seeded) as
    "failed" to bring the dataset to ``target_points`` (2,840, the paper's size; ``None`` keeps every remaining point).
    Packed configurations (n × 16, 115 W) are never drawn as failed: Traditional and the users' requested times
    (t_req, [AMBIG-4.2]) need them for every node count that fits in memory.
    :func:`rmap_cab_frame` keeps every grid point with its ``status``; :func:`rmap_cab_details` keeps the measured
    ones.

Job details table (:class:`ConfigTable`, :class:`JobDetails`)
    Columns ``app, nodes, cores, cap, time, power``; the paper's Table 3 names ``job_id, pkg_cap_0, exec_time,
    tot_pkg`` are accepted on input. :meth:`ConfigTable.fastest` is the Naive/Adaptive query: argmin time over the
    configurations with power ≤ bound (and nodes ≤ a node bound), ties by fewer nodes, then less power, then table
    order. Per distinct node count (≤ 15 on Cab) the eligible configurations are sorted by power with a prefix-argmin
    of (time, nodes, power), so a query is two binary searches: O(log K). Nothing in the table assumes the Cab grid.

Configuration model ([AMBIG-4.1])
    Per application and per target y ∈ {ln t, ln P}: OLS on the full degree-2 polynomial of (ln n, ln c, ln p), 10
    terms (:data:`CONFIG_MODEL_TERMS`), trained on a seeded random ``sample_share`` (10%) of that application's
    points. :func:`fit_config_model` gives the predicted table and per-point errors; :func:`model_error_summary`
    the paper's accuracy statistics (§5.4: time mean < 10%, max < 33%, Q3 < 13.2%, median < 7.7%; power
    under-prediction ≤ 10% for 96% of points, worst < 15%); :func:`write_model_figures` Figs. 6–7.
    On the synthetic data (seed 0, all 2,840 points): |time error| median 3.1%, Q3 5.5%, mean 3.8%, max 21.7%;
    power under-predicted by at most 10% for 95.8% of points, worst 25.7% — the caps' kinks in power are what a
    smooth log-polynomial misses, so the worst power error exceeds the paper's 15%.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from wattsched.platform.power import Platform

__all__ = [
    "CONFIG_MODEL_TERMS",
    "RMAP_CAB",
    "RMAP_CAB_APPS",
    "SANDY_BRIDGE",
    "AppModel",
    "ConfigTable",
    "JobDetails",
    "RmapMachine",
    "SocketModel",
    "config_features",
    "fit_config_model",
    "model_error_summary",
    "normalised_bounds",
    "rmap_cab_details",
    "rmap_cab_frame",
    "rmap_cab_platform",
    "write_model_figures",
]

# ------------------------------------------------------------------------------------------------------ machine


@dataclass(frozen=True)
class RmapMachine:
    """Facts of the RMAP evaluation machine (paper 004 §2, §6): sizes, the configuration grid and the power bounds."""

    name: str = "rmap-cab"
    nodes: int = 64
    sockets_per_node: int = 2
    cores_per_socket: int = 8
    node_counts: tuple[int, ...] = tuple(range(8, 65, 4))
    core_counts: tuple[int, ...] = (8, 10, 12, 14, 16)
    caps: tuple[float, ...] = (51.0, 65.0, 80.0, 95.0, 115.0)
    global_bounds: tuple[float, ...] = (6500.0, 8000.0, 10000.0, 12000.0, 14000.0)
    nominal_ghz: float = 2.6
    max_turbo_ghz: float = 3.3
    all_core_turbo_ghz: float = 3.0
    node_memory_gb: float = 32.0
    os_memory_gb: float = 2.0

    @property
    def cores_per_node(self) -> int:
        """Cores of one node (16 on Cab): the packed configuration uses them all."""
        return self.sockets_per_node * self.cores_per_socket

    @property
    def max_cap(self) -> float:
        """The highest socket cap (115 W), the packed configuration's and the only one with turbo."""
        return max(self.caps)

    @property
    def worst_case_watts(self) -> float:
        """Every socket at its highest cap (14,720 W): the worst-case provisioned power bounds are normalised by."""
        return self.nodes * self.sockets_per_node * self.max_cap

    @property
    def grid_size(self) -> int:
        """Configurations per application (375)."""
        return len(self.node_counts) * len(self.core_counts) * len(self.caps)

    def grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(nodes, cores, cap) of every configuration, nodes-major then cores then cap: the table's canonical order."""
        n, c, p = np.meshgrid(
            np.asarray(self.node_counts, dtype=np.int64),
            np.asarray(self.core_counts, dtype=np.int64),
            np.asarray(self.caps, dtype=np.float64),
            indexing="ij",
        )
        return n.ravel(), c.ravel(), p.ravel()


#: The Cab machine as used by RMAP (reference spec §5.2).
RMAP_CAB = RmapMachine()


def normalised_bounds(machine: RmapMachine = RMAP_CAB, bounds: Iterable[float] | None = None) -> np.ndarray:
    """Global power bounds over the worst case (0.44 … 0.95 on Cab): the x axis of the paper's result figures."""
    values = np.asarray(tuple(machine.global_bounds if bounds is None else bounds), dtype=np.float64)
    return values / machine.worst_case_watts


# ------------------------------------------------------------------------------------------------ socket and apps


@dataclass(frozen=True)
class SocketModel:
    """Power and frequency behaviour of one Sandy Bridge package (E5-2670-like); see the module docstring."""

    floor_w: float = 20.0
    static_w_per_core: float = 1.5
    dynamic_w_per_core: float = 5.5
    alpha: float = 2.6
    memory_w: float = 10.0
    low_activity: float = 0.2
    f_min: float = 1.2
    f_nominal: float = 2.6
    turbo_bins: tuple[float, ...] = (3.3, 3.3, 3.2, 3.2, 3.1, 3.1, 3.0, 3.0)
    turbo_cap: float = 115.0
    bandwidth_cores: float = 3.0
    memory_freq_exponent: float = 0.25
    min_duty: float = 0.05

    def top_frequency(self, active: np.ndarray, cap: np.ndarray) -> np.ndarray:
        """Highest frequency allowed by the settings: the turbo bin of the active cores at the turbo cap, else f₀."""
        bins = np.asarray(self.turbo_bins)
        turbo = bins[np.clip(np.ceil(active).astype(np.int64), 1, len(bins)) - 1]
        return np.where(cap >= self.turbo_cap, turbo, self.f_nominal)

    def bandwidth(self, active: np.ndarray | float) -> np.ndarray:
        """Relative memory bandwidth of a socket with ``active`` cores: saturating, so more cores help little."""
        return self.bandwidth_cores * (1.0 - np.exp(-np.asarray(active, dtype=np.float64) / self.bandwidth_cores))


#: The socket model used for the synthetic Cab data.
SANDY_BRIDGE = SocketModel()


@dataclass(frozen=True)
class AppModel:
    """One synthetic application: the parameters of the time and power formulas in the module docstring."""

    name: str
    scalable: bool
    memory_bound: bool
    base_time: float
    serial: float
    comm: float
    memory_share: float
    activity: float
    footprint_gb: float
    per_core_gb: float

    def evaluate(
        self,
        nodes: np.ndarray,
        cores: np.ndarray,
        cap: np.ndarray,
        *,
        machine: RmapMachine = RMAP_CAB,
        socket: SocketModel = SANDY_BRIDGE,
    ) -> dict[str, np.ndarray]:
        """Noise-free time (s), total package power (W), effective frequency (GHz) and socket power per config.

        Vectorised over configurations, so a whole grid costs one pass and the formulas stay testable on their own.
        """
        n = np.asarray(nodes, dtype=np.float64)
        a = np.asarray(cores, dtype=np.float64) / machine.sockets_per_node
        p = np.asarray(cap, dtype=np.float64)
        s, m, u = self.serial, self.memory_share, self.activity
        static = socket.floor_w + a * socket.static_w_per_core + m * socket.memory_w
        dyn_nominal = a * u * socket.dynamic_w_per_core
        headroom = np.maximum(p - static, 0.0)
        with np.errstate(divide="ignore"):
            f_cap = socket.f_nominal * (headroom / dyn_nominal) ** (1.0 / socket.alpha)
        freq = np.clip(f_cap, socket.f_min, socket.top_frequency(a, p))
        dyn_min = dyn_nominal * (socket.f_min / socket.f_nominal) ** socket.alpha
        duty = np.where(f_cap < socket.f_min, np.clip(headroom / dyn_min, socket.min_duty, 1.0), 1.0)
        f_eff = freq * duty
        ratio = socket.f_nominal / f_eff
        n_ref = float(machine.node_counts[0])
        a_ref = float(machine.cores_per_socket)
        t_serial = self.base_time * s * ratio
        per_node = (1.0 - m) * (a_ref / a) * ratio + m * (socket.bandwidth(a_ref) / socket.bandwidth(a)) * (
            ratio**socket.memory_freq_exponent
        )
        t_parallel = self.base_time * (1.0 - s) * (n_ref / n) * per_node
        t_comm = self.base_time * self.comm * np.maximum(n - n_ref, 0.0) / n_ref
        time = t_serial + t_parallel + t_comm
        scale = (freq / socket.f_nominal) ** socket.alpha * duty
        p_par = static + dyn_nominal * scale
        p_low = (
            socket.floor_w + a * socket.static_w_per_core + a * socket.low_activity * socket.dynamic_w_per_core * scale
        )
        p_socket = np.minimum((t_parallel * p_par + (t_serial + t_comm) * p_low) / time, p)
        return {
            "time": time,
            "power": n * machine.sockets_per_node * p_socket,
            "freq_ghz": f_eff,
            "socket_power": p_socket,
        }

    def fits(self, nodes: np.ndarray, cores: np.ndarray, machine: RmapMachine = RMAP_CAB) -> np.ndarray:
        """Whether the job fits in node memory (footprint shared over nodes, plus per-core buffers)."""
        need = self.footprint_gb / np.asarray(nodes, dtype=np.float64) + self.per_core_gb * np.asarray(cores)
        return need <= machine.node_memory_gb - machine.os_memory_gb


#: The paper's eight applications (§2.1): SPhot, the NAS multi-zone BT/SP/LU (class D) and the four synthetic
#: extremes (scalable or not × CPU- or memory-bound). Parameters are this module's, not measured.
RMAP_CAB_APPS: tuple[AppModel, ...] = (
    AppModel("sphot", True, False, 1200.0, 0.004, 0.0, 0.05, 0.95, 20.0, 0.10),
    AppModel("bt-mz", True, False, 900.0, 0.015, 0.003, 0.30, 0.85, 100.0, 0.30),
    AppModel("sp-mz", True, False, 800.0, 0.02, 0.004, 0.45, 0.90, 90.0, 0.30),
    AppModel("lu-mz", False, False, 700.0, 0.08, 0.020, 0.35, 0.85, 60.0, 0.30),
    AppModel("sc", True, False, 600.0, 0.001, 0.0, 0.0, 1.00, 4.0, 0.05),
    AppModel("nsc", False, False, 500.0, 0.10, 0.050, 0.0, 1.00, 4.0, 0.05),
    AppModel("sm", True, True, 600.0, 0.002, 0.0, 0.90, 0.40, 200.0, 0.50),
    AppModel("nsm", False, True, 500.0, 0.10, 0.050, 0.90, 0.40, 220.0, 0.50),
)

_TIME_NOISE = 0.02
_POWER_NOISE = 0.015
_TIME_LIMIT_S = 1800.0
_PAPER_POINTS = 2840


def _app_rng(seed: int, app: str) -> np.random.Generator:
    """A generator per (seed, app), so adding or reordering apps does not change another app's draws."""
    return np.random.default_rng([int(seed), zlib.crc32(app.encode("utf-8"))])


def rmap_cab_frame(
    seed: int = 0,
    *,
    apps: Iterable[AppModel] = RMAP_CAB_APPS,
    machine: RmapMachine = RMAP_CAB,
    socket: SocketModel = SANDY_BRIDGE,
    time_noise: float = _TIME_NOISE,
    power_noise: float = _POWER_NOISE,
    time_limit_s: float = _TIME_LIMIT_S,
    target_points: int | None = _PAPER_POINTS,
) -> pl.DataFrame:
    """Every grid point of every app with its synthetic measurement and a ``status`` (ok/memory/timeout/failed).

    Kept complete (with the reason a point is missing) so tests and figures can see the whole grid; the measured
    dataset is the ``ok`` rows. Deterministic for a given seed.
    """
    nodes, cores, cap = machine.grid()
    frames = []
    for app in apps:
        out = app.evaluate(nodes, cores, cap, machine=machine, socket=socket)
        rng = _app_rng(seed, app.name)
        z_time, z_power = rng.standard_normal(len(nodes)), rng.standard_normal(len(nodes))
        time = out["time"] * np.exp(time_noise * z_time)
        p_socket = np.minimum(out["socket_power"] * np.exp(power_noise * z_power), cap)
        fits = app.fits(nodes, cores, machine)
        status = np.where(~fits, "memory", np.where(time > time_limit_s, "timeout", "ok"))
        frames.append(
            pl.DataFrame(
                {
                    "app": [app.name] * len(nodes),
                    "nodes": nodes,
                    "cores": cores,
                    "cap": cap,
                    "time": time,
                    "power": nodes * machine.sockets_per_node * p_socket,
                    "freq_ghz": out["freq_ghz"],
                    "status": status,
                }
            )
        )
    frame = pl.concat(frames)
    if target_points is not None:
        packed = (frame["cores"].to_numpy() == machine.cores_per_node) & (frame["cap"].to_numpy() == machine.max_cap)
        ok = frame["status"].to_numpy() == "ok"
        candidates = np.flatnonzero(ok & ~packed)
        excess = min(int(ok.sum()) - int(target_points), len(candidates))
        if excess > 0:
            failed = np.random.default_rng([int(seed), 0x52_4D_41_50]).choice(candidates, size=excess, replace=False)
            status = frame["status"].to_numpy().copy()
            status[failed] = "failed"
            frame = frame.with_columns(pl.Series("status", status))
    return frame


def rmap_cab_details(
    seed: int = 0,
    *,
    noise: bool = True,
    complete: bool = False,
    target_points: int | None = _PAPER_POINTS,
) -> JobDetails:
    """The synthetic "measured" (oracle) job details table of the Cab runs.

    ``noise=False`` gives the model's exact values; ``complete=True`` keeps all 375 configurations per app (no
    memory, time-out or failed-run drops), which a simulator that needs every configuration may prefer.
    """
    scale = 1.0 if noise else 0.0
    frame = rmap_cab_frame(
        seed,
        time_noise=_TIME_NOISE * scale,
        power_noise=_POWER_NOISE * scale,
        target_points=None if complete else target_points,
    )
    if not complete:
        frame = frame.filter(pl.col("status") == "ok")
    return JobDetails.from_frame(frame)


def rmap_cab_platform() -> Platform:
    """Cab as a :class:`Platform` in package power (2 sockets at the floor idle, at 115 W peak), for generic tools."""
    return Platform(
        name=RMAP_CAB.name,
        nodes=RMAP_CAB.nodes,
        idle_watts=RMAP_CAB.sockets_per_node * SANDY_BRIDGE.floor_w,
        max_node_watts=RMAP_CAB.sockets_per_node * RMAP_CAB.max_cap,
    )


# ----------------------------------------------------------------------------------------------- job details table

_COLUMNS = ("app", "nodes", "cores", "cap", "time", "power")
_PAPER_NAMES = {"job_id": "app", "pkg_cap_0": "cap", "exec_time": "time", "tot_pkg": "power"}


def _cap_key(cap: float) -> float:
    return round(float(cap), 6)


def _readonly(values: Any, dtype: type) -> np.ndarray:
    array = np.array(values, dtype=dtype, copy=True).reshape(-1)
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class ConfigTable:
    """The configurations of one application and their time (s) and total package power (W).

    Arrays are copied and made read-only. Equality is identity (arrays have no single truth value).
    """

    app: str
    nodes: np.ndarray
    cores: np.ndarray
    cap: np.ndarray
    time: np.ndarray
    power: np.ndarray
    _levels: np.ndarray = field(init=False, repr=False)
    _sorted_power: tuple[np.ndarray, ...] = field(init=False, repr=False)
    _best: tuple[np.ndarray, ...] = field(init=False, repr=False)
    _lookup: dict[tuple[int, int, float], int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        arrays = {
            "nodes": _readonly(self.nodes, np.int64),
            "cores": _readonly(self.cores, np.int64),
            "cap": _readonly(self.cap, np.float64),
            "time": _readonly(self.time, np.float64),
            "power": _readonly(self.power, np.float64),
        }
        k = len(arrays["nodes"])
        if k == 0:
            raise ValueError(f"{self.app}: a configuration table needs at least one configuration")
        if any(len(v) != k for v in arrays.values()):
            lengths = {name: len(value) for name, value in arrays.items()}
            raise ValueError(f"{self.app}: columns differ in length: {lengths}")
        if (arrays["nodes"] < 1).any() or (arrays["cores"] < 1).any():
            raise ValueError(f"{self.app}: nodes and cores must be ≥ 1")
        for name in ("cap", "time", "power"):
            if not np.isfinite(arrays[name]).all() or (arrays[name] < 0).any():
                raise ValueError(f"{self.app}: {name} must be finite and ≥ 0")
        for name, value in arrays.items():
            object.__setattr__(self, name, value)
        lookup: dict[tuple[int, int, float], int] = {}
        for i, key in enumerate(
            zip(arrays["nodes"].tolist(), arrays["cores"].tolist(), arrays["cap"].tolist(), strict=True)
        ):
            full = (key[0], key[1], _cap_key(key[2]))
            if full in lookup:
                raise ValueError(f"{self.app}: configuration {full} appears twice (rows {lookup[full]} and {i})")
            lookup[full] = i
        object.__setattr__(self, "_lookup", lookup)
        # rank of every config in the tie-broken order (time, nodes, power, row); prefix minima of ranks are argmins
        order = np.lexsort((np.arange(k), self.power, self.nodes, self.time))
        rank = np.empty(k, dtype=np.int64)
        rank[order] = np.arange(k)
        levels = np.unique(self.nodes)
        sorted_power, best = [], []
        for level in levels:
            members = np.flatnonzero(self.nodes <= level)
            members = members[np.argsort(self.power[members], kind="stable")]
            sorted_power.append(_readonly(self.power[members], np.float64))
            best.append(_readonly(order[np.minimum.accumulate(rank[members])], np.int64))
        object.__setattr__(self, "_levels", _readonly(levels, np.int64))
        object.__setattr__(self, "_sorted_power", tuple(sorted_power))
        object.__setattr__(self, "_best", tuple(best))

    def __len__(self) -> int:
        return len(self.nodes)

    def fastest(self, power_bound: float, node_bound: int | None = None) -> int | None:
        """Index of the fastest config with power ≤ ``power_bound`` (and nodes ≤ ``node_bound``), or None.

        Ties go to fewer nodes, then less power, then the earlier row — the spec's rule for Naive — so that every
        policy using the table decides the same way. Two binary searches over pre-computed prefix argmins: O(log K).
        """
        if math.isnan(power_bound):
            raise ValueError("power_bound is NaN")
        if node_bound is None:
            level = len(self._levels) - 1
        else:
            level = int(np.searchsorted(self._levels, node_bound, side="right")) - 1
            if level < 0:
                return None
        position = int(np.searchsorted(self._sorted_power[level], power_bound, side="right")) - 1
        if position < 0:
            return None
        return int(self._best[level][position])

    def index(self, n: int, c: int, p: float) -> int | None:
        """Row of configuration (n × c, p), or None when the table lacks it (e.g. a dropped measurement)."""
        return self._lookup.get((int(n), int(c), _cap_key(p)))

    def packed(self, n: int, cores: int | None = None, cap: float | None = None) -> int | None:
        """Row of the packed config (n × all cores, highest cap) — Traditional's; defaults are the table's maxima."""
        return self.index(n, int(self.cores.max()) if cores is None else cores, self.cap.max() if cap is None else cap)

    def label(self, i: int) -> str:
        """``(n×c, p)`` as the paper writes configurations, for logs and figures."""
        return f"({self.nodes[i]}×{self.cores[i]}, {self.cap[i]:g})"

    def to_frame(self) -> pl.DataFrame:
        """The table as rows (app, nodes, cores, cap, time, power) in row order."""
        return pl.DataFrame(
            {
                "app": [self.app] * len(self),
                "nodes": self.nodes,
                "cores": self.cores,
                "cap": self.cap,
                "time": self.time,
                "power": self.power,
            }
        )


class JobDetails(Mapping[str, ConfigTable]):
    """The paper's ``job_details_table``: app → :class:`ConfigTable`, measured (oracle) or predicted."""

    def __init__(self, tables: Mapping[str, ConfigTable] | Iterable[ConfigTable]) -> None:
        items = tables.values() if isinstance(tables, Mapping) else tables
        self._tables: dict[str, ConfigTable] = {}
        for table in items:
            if table.app in self._tables:
                raise ValueError(f"application {table.app!r} appears twice")
            self._tables[table.app] = table

    def __getitem__(self, app: str) -> ConfigTable:
        return self._tables[app]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def __repr__(self) -> str:
        return f"JobDetails({', '.join(f'{a}: {len(t)}' for a, t in self._tables.items())})"

    @property
    def apps(self) -> tuple[str, ...]:
        """Application names in table order."""
        return tuple(self._tables)

    @classmethod
    def from_frame(cls, frame: pl.DataFrame) -> JobDetails:
        """Tables from rows (app, nodes, cores, cap, time, power); Table 3's column names are accepted too.

        Apps keep their first-appearance order and configs their row order, so indices are reproducible.
        """
        frame = frame.rename({k: v for k, v in _PAPER_NAMES.items() if k in frame.columns and v not in frame.columns})
        missing = [c for c in _COLUMNS if c not in frame.columns]
        if missing:
            raise ValueError(f"job details frame lacks column(s) {missing}; has {frame.columns}")
        tables = []
        for part in frame.select(_COLUMNS).partition_by("app", maintain_order=True):
            tables.append(
                ConfigTable(
                    app=str(part["app"][0]),
                    nodes=part["nodes"].to_numpy(),
                    cores=part["cores"].to_numpy(),
                    cap=part["cap"].to_numpy(),
                    time=part["time"].to_numpy(),
                    power=part["power"].to_numpy(),
                )
            )
        return cls(tables)

    def to_frame(self) -> pl.DataFrame:
        """All tables as rows (app, nodes, cores, cap, time, power)."""
        schema = {"app": pl.String, "nodes": pl.Int64, "cores": pl.Int64, "cap": pl.Float64, "time": pl.Float64,
                  "power": pl.Float64}  # fmt: skip
        if not self._tables:
            return pl.DataFrame(schema=schema)
        return pl.concat([t.to_frame() for t in self._tables.values()]).cast(schema)

    @classmethod
    def read(cls, path: str | Path) -> JobDetails:
        """Read a ``.parquet`` or ``.csv`` job details table."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            return cls.from_frame(pl.read_parquet(path))
        if suffix == ".csv":
            return cls.from_frame(pl.read_csv(path))
        raise ValueError(f"{path}: unknown table type {suffix!r} (expected .parquet or .csv)")

    def write(self, path: str | Path) -> Path:
        """Write the table as ``.parquet`` or ``.csv`` (by suffix); returns the path."""
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in {".parquet", ".csv"}:
            raise ValueError(f"{path}: unknown table type {suffix!r} (expected .parquet or .csv)")
        path.parent.mkdir(parents=True, exist_ok=True)
        frame = self.to_frame()
        if suffix == ".parquet":
            frame.write_parquet(path)
        else:
            frame.write_csv(path)
        return path


# ---------------------------------------------------------------------------------------------- configuration model

#: The 10 regressors of the degree-2 log-polynomial configuration model ([AMBIG-4.1]).
CONFIG_MODEL_TERMS: tuple[str, ...] = (
    "1", "ln n", "ln c", "ln p", "ln n²", "ln c²", "ln p²", "ln n·ln c", "ln n·ln p", "ln c·ln p",
)  # fmt: skip


def config_features(nodes: np.ndarray, cores: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Design matrix (K × 10) of :data:`CONFIG_MODEL_TERMS` for the given configurations."""
    ln = np.log(np.asarray(nodes, dtype=np.float64))
    lc = np.log(np.asarray(cores, dtype=np.float64))
    lp = np.log(np.asarray(cap, dtype=np.float64))
    return np.column_stack([np.ones_like(ln), ln, lc, lp, ln * ln, lc * lc, lp * lp, ln * lc, ln * lp, lc * lp])


def fit_config_model(details: JobDetails, sample_share: float = 0.1, seed: int = 0) -> tuple[JobDetails, pl.DataFrame]:
    """Fit the configuration model per app and predict every config: (predicted table, per-point errors).

    Each app trains on ``ceil(sample_share · K)`` random points (at least 10, the number of terms, when it has
    them; OLS via least squares, so a degenerate sample still predicts). Errors are signed relative errors
    (predicted − true)/true, positive = over-prediction; ``train`` marks the training points.
    """
    if not 0.0 < sample_share <= 1.0:
        raise ValueError(f"sample_share must be in (0, 1], got {sample_share}")
    tables, frames = [], []
    for app, table in details.items():
        k = len(table)
        size = min(k, max(math.ceil(sample_share * k), len(CONFIG_MODEL_TERMS)))
        train = np.zeros(k, dtype=bool)
        train[_app_rng(seed, app).choice(k, size=size, replace=False)] = True
        x = config_features(table.nodes, table.cores, table.cap)
        predicted = {}
        for target in ("time", "power"):
            y = np.log(np.maximum(getattr(table, target), 1e-12))
            coef, *_ = np.linalg.lstsq(x[train], y[train], rcond=None)
            predicted[target] = np.exp(x @ coef)
        tables.append(ConfigTable(app, table.nodes, table.cores, table.cap, predicted["time"], predicted["power"]))
        frames.append(
            pl.DataFrame(
                {
                    "app": [app] * k,
                    "config": np.arange(k, dtype=np.int64),
                    "nodes": table.nodes,
                    "cores": table.cores,
                    "cap": table.cap,
                    "train": train,
                    "time_true": table.time,
                    "time_pred": predicted["time"],
                    "power_true": table.power,
                    "power_pred": predicted["power"],
                }
            )
        )
    errors = pl.concat(frames).with_columns(
        ((pl.col("time_pred") - pl.col("time_true")) / pl.col("time_true")).alias("time_rel_err"),
        ((pl.col("power_pred") - pl.col("power_true")) / pl.col("power_true")).alias("power_rel_err"),
        (pl.col("time_pred") - pl.col("time_true")).alias("time_abs_err"),
    )
    return JobDetails(tables), errors


def model_error_summary(errors: pl.DataFrame, *, include_training: bool = True) -> pl.DataFrame:
    """Per app (and ``all``) and target: quartiles, mean and max of |relative error| and under-prediction stats.

    ``share_under_within_10`` is the share of points whose under-prediction is at most 10% (over-predictions
    count as within), the paper's "96%" figure; ``worst_under`` the largest under-prediction (0 if none). The paper
    reports on the whole dataset, training points included — hence the default.
    """
    data = errors if include_training else errors.filter(~pl.col("train"))
    rows = []
    groups = [(app, data.filter(pl.col("app") == app)) for app in data["app"].unique(maintain_order=True)]
    for app, part in [*groups, ("all", data)]:
        for target in ("time", "power"):
            rel = part[f"{target}_rel_err"].to_numpy()
            if len(rel) == 0:
                continue
            magnitude = np.abs(rel)
            q1, median, q3 = np.quantile(magnitude, [0.25, 0.5, 0.75])
            rows.append(
                {
                    "app": app,
                    "target": target,
                    "points": len(rel),
                    "q1": float(q1),
                    "median": float(median),
                    "q3": float(q3),
                    "mean": float(magnitude.mean()),
                    "max": float(magnitude.max()),
                    "mean_signed": float(rel.mean()),
                    "share_under_within_10": float((rel >= -0.10).mean()),
                    "worst_under": float(max(0.0, -rel.min())),
                }
            )
    return pl.DataFrame(rows)


def _save(fig: Figure, out_dir: Path, stem: str) -> list[Path]:
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=130)
    fig.savefig(paths[1])
    return paths


def write_model_figures(errors: pl.DataFrame, out_dir: str | Path) -> list[Path]:
    """Figs. 6–7 equivalents (PNG + SVG): error boxes per app, and over/under-prediction histograms.

    Drawn on bare :class:`Figure` objects (no pyplot) so plotting changes no global state and needs no display.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    apps = errors["app"].unique(maintain_order=True).to_list()
    per_app = {app: errors.filter(pl.col("app") == app) for app in apps}

    fig = Figure(figsize=(min(18.0, max(9.0, 0.7 * len(apps) * 3)), 4.4), layout="constrained")
    axes = fig.subplots(1, 3)
    panels = (
        ("time_abs_err", 1.0, "|time error| (s)", ()),
        ("time_rel_err", 100.0, "|time error| (%)", ((7.7, "paper median < 7.7%"), (13.2, "paper Q3 < 13.2%"))),
        ("power_rel_err", 100.0, "|power error| (%)", ((10.0, "10%"),)),
    )
    for ax, (column, scale, title, refs) in zip(axes, panels, strict=True):
        data = [np.abs(per_app[a][column].to_numpy()) * scale for a in apps]
        ax.boxplot(data, tick_labels=apps, whis=(0, 100), widths=0.6)
        for value, text in refs:
            ax.axhline(value, color="tab:red", linestyle="--", linewidth=0.9)
            ax.annotate(text, (0.01, value), xycoords=("axes fraction", "data"), fontsize=7, color="tab:red",
                        va="bottom")  # fmt: skip
        ax.set_title(title)
        ax.tick_params(axis="x", labelrotation=45)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"Configuration model errors per application ({errors.height} points; whiskers = min/max) — paper "
                 "004 Fig. 6")  # fmt: skip
    paths = _save(fig, out, "rmap_model_error_quartiles")

    fig = Figure(figsize=(11, 4.2), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, target in zip(axes, ("time", "power"), strict=True):
        rel = errors[f"{target}_rel_err"].to_numpy() * 100.0
        lo, hi = min(-20.0, float(np.floor(rel.min()))), max(20.0, float(np.ceil(rel.max())))
        bins = np.arange(2.0 * math.floor(lo / 2.0), 2.0 * math.ceil(hi / 2.0) + 2.0, 2.0)
        ax.axvspan(bins[0], 0.0, color="tab:orange", alpha=0.12)
        ax.axvspan(0.0, bins[-1], color="tab:blue", alpha=0.10)
        ax.hist(rel, bins=bins, color="0.35", edgecolor="white")
        if target == "power":
            ax.axvline(-10.0, color="tab:red", linestyle="--", linewidth=0.9)
        under10 = float((rel >= -10.0).mean()) * 100.0
        ax.set_title(
            f"{target}: under-prediction ≤ 10% for {under10:.1f}% of points\nworst under-prediction "
            f"{max(0.0, -rel.min()):.1f}%, worst over-prediction {max(0.0, rel.max()):.1f}%",
            fontsize=10,
        )
        ax.set_xlabel("relative error (predicted − true)/true (%)")
        ax.set_ylabel("points")
        ax.legend(handles=[Patch(color="tab:orange", alpha=0.3, label="under-predicted"),
                           Patch(color="tab:blue", alpha=0.3, label="over-predicted")], fontsize=8)  # fmt: skip
    fig.suptitle(f"Range of prediction errors ({errors.height} points) — paper 004 Fig. 7")
    return paths + _save(fig, out, "rmap_model_error_histograms")
