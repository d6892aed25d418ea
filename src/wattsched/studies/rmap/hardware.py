"""The Cab machine and the physical socket/application model behind paper 004's (RMAP) configuration data.

RMAP's policies pick a *configuration* (n × c, p) — n nodes, c cores per node, a package power cap p per socket —
for each job. This module holds the machine (:data:`RMAP_CAB`) and the vectorised time/power formulas of one
application on it (:class:`SocketModel`, :class:`AppModel`); the parameter sets (``synthetic-v1`` and
``calibrated``) and the data generator are in :mod:`wattsched.studies.rmap.data`.

The machine and its socket are a platform file of kind ``rmap`` (docs/platforms.md): the preset ships as
``platforms/rmap-cab.toml`` and :func:`load_machine` reads it, or a user's file, the same way.

Machine (:data:`RMAP_CAB`, preset ``rmap-cab``)
    N = 64 nodes of 2 Sandy Bridge sockets × 8 cores (Cab, LLNL). Grid: n ∈ {8, 12, …, 64} (15), c ∈ {8, 10, …, 16}
    (5), p ∈ {51, 65, 80, 95, 115} W (5): 375 configurations per application. Turbo Boost only at 115 W.
    Worst case 64·2·115 = 14,720 W; global bounds {6500, 8000, 10000, 12000, 14000} W, normalised by the worst
    case to 0.44 / 0.54 / 0.68 / 0.82 / 0.95 (:func:`normalised_bounds`).

Formulas (per socket, a = c/2 active cores: OpenMP *scatter* placement, as in the paper)
    :class:`SocketModel` parameters: floor F (idle + uncore of a busy socket), static L per active core, dynamic D
    per fully active core at the nominal f₀ = 2.6 GHz, scaling as (f/f₀)^α (f·V², V rising with f), memory-traffic
    power M for a fully memory-bound phase, core activity u_low in serial and communication phases, f_min = 1.2 GHz,
    turbo bins 3.3/3.3/3.2/3.2/3.1/3.1/3.0/3.0 GHz for 1…8 active cores (3.3 GHz max turbo, 3.0 GHz all-core)
    enabled only at p = 115 W, otherwise f ≤ 2.6 GHz (the highest non-turbo frequency).

    An application (:class:`AppModel`) has a base time T (s at 8 × 16 and 2.6 GHz), an Amdahl serial fraction s, a
    communication coefficient κ (MPI_Alltoall cost, linear in the node count — the paper's knob for making its
    synthetic codes non-scalable), a memory-bound share m of the parallel work, a core activity u (switching
    activity of the parallel phase: high for spin loops, low for memory streams) and, optionally, its own memory
    saturation a_s and frequency exponent β (else the socket's).

    - Parallel-phase demand: P_par(f) = F + a·L + a·u·D·(f/f₀)^α + m·M.
    - Frequency under the cap: the highest f whose P_par ≤ p, i.e. f = f₀·((p − F − a·L − m·M)/(a·u·D))^(1/α), clipped
      to [f_min, f_top] with f_top = turbo(a) at 115 W, else 2.6 GHz. Should even f_min exceed the cap, RAPL
      duty-cycles the clock: the effective frequency is f_min·δ with δ = (p − static)/(dynamic at f_min) (≥ 0.05).
    - Memory bandwidth per socket saturates with cores: B(a) = a_s·(1 − e^(−a/a_s)), so memory-bound work gains
      little from more cores per node; its time depends on frequency as (f₀/f)^β.
    - Time (n_ref = 8 nodes, a_ref = 8 cores per socket):
      t = T·s·(f₀/f) + T·(1−s)·(n_ref/n)·[(1−m)·(a_ref/a)·(f₀/f) + m·(B(a_ref)/B(a))·(f₀/f)^β]
      + T·κ·max(0, n − n_ref)/n_ref.
      Scalable apps (small s, κ) fall with n·c in Amdahl fashion; non-scalable ones flatten (or rise) with n.
    - Power: per socket the phase-weighted mean of P_par (parallel phase) and P_low = F + a·L + a·u_low·D·(f/f₀)^α
      (serial and communication phases), never above the cap; the job's total package power is n·2·P_socket.
      (The frequency is set by the parallel phase, RAPL's binding one.)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import numpy as np
from pydantic import ConfigDict, Field

from wattsched.core.platform_file import PlatformFileError, read_platform_file, validate_platform

__all__ = [
    "RMAP_CAB",
    "SANDY_BRIDGE",
    "AppModel",
    "RmapConfigError",
    "RmapMachine",
    "SocketModel",
    "load_machine",
    "load_rmap_platform",
    "normalised_bounds",
]

_Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
_NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Count = Annotated[int, Field(gt=0)]
#: Platform files are strict: an unknown field is an error, not silently ignored.
_FILE_CONFIG = ConfigDict(extra="forbid")

# ------------------------------------------------------------------------------------------------------ machine


@dataclass(frozen=True)
class RmapMachine:
    """Facts of the RMAP evaluation machine (paper 004 §2, §6): sizes, the configuration grid and the power bounds.

    The values are a platform file's (:func:`load_machine`; Cab's are ``platforms/rmap-cab.toml``)."""

    __pydantic_config__ = _FILE_CONFIG

    name: str
    nodes: _Count
    sockets_per_node: _Count
    cores_per_socket: _Count
    node_counts: tuple[_Count, ...]
    core_counts: tuple[_Count, ...]
    caps: tuple[_Positive, ...]
    global_bounds: tuple[_Positive, ...]
    nominal_ghz: _Positive
    max_turbo_ghz: _Positive
    all_core_turbo_ghz: _Positive
    node_memory_gb: _Positive
    os_memory_gb: _NonNegative

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


# ------------------------------------------------------------------------------------------------ socket and apps


@dataclass(frozen=True)
class SocketModel:
    """Power and frequency behaviour of one package (Sandy Bridge E5-2670-like on Cab); see the module docstring.

    The values are the ``[socket]`` table of an ``rmap`` platform file (:func:`load_rmap_platform`)."""

    __pydantic_config__ = _FILE_CONFIG

    floor_w: _NonNegative
    static_w_per_core: _NonNegative
    dynamic_w_per_core: _Positive
    alpha: _Positive
    memory_w: _NonNegative
    low_activity: _NonNegative
    f_min: _Positive
    f_nominal: _Positive
    turbo_bins: tuple[_Positive, ...]
    turbo_cap: _Positive
    bandwidth_cores: _Positive
    memory_freq_exponent: _NonNegative
    min_duty: _Positive

    def top_frequency(self, active: np.ndarray, cap: np.ndarray) -> np.ndarray:
        """Highest frequency allowed by the settings: the turbo bin of the active cores at the turbo cap, else f₀."""
        bins = np.asarray(self.turbo_bins)
        turbo = bins[np.clip(np.ceil(active).astype(np.int64), 1, len(bins)) - 1]
        return np.where(cap >= self.turbo_cap, turbo, self.f_nominal)

    def bandwidth(self, active: np.ndarray | float, cores: float | None = None) -> np.ndarray:
        """Relative memory bandwidth of a socket with ``active`` cores: saturating, so more cores help little.

        ``cores`` is the saturation scale a_s (default: the socket's)."""
        scale = self.bandwidth_cores if cores is None else cores
        return scale * (1.0 - np.exp(-np.asarray(active, dtype=np.float64) / scale))


class RmapConfigError(PlatformFileError):
    """An ``rmap`` platform file that cannot be used; the message names the file, the field and why."""


def load_rmap_platform(name_or_path: str | Path) -> tuple[RmapMachine, SocketModel]:
    """The machine and socket of an ``rmap`` platform file: a preset (``rmap-cab``) or a user's TOML/YAML file."""
    file = read_platform_file(name_or_path, "rmap", error=RmapConfigError)
    data = dict(file.data)
    socket_data = data.pop("socket", None)
    if not isinstance(socket_data, dict):
        raise RmapConfigError(f"{file.source}: invalid platform: field 'socket': a [socket] table is required")
    machine = validate_platform(RmapMachine, data, file.source, error=RmapConfigError)
    socket = validate_platform(SocketModel, socket_data, file.source, prefix="socket.", error=RmapConfigError)
    for field in ("node_counts", "core_counts", "caps"):
        values = getattr(machine, field)
        if not values or any(b <= a for a, b in itertools.pairwise(values)):
            raise RmapConfigError(f"{file.source}: invalid platform: field {field!r}: must be non-empty and ascending")
    if machine.node_counts[-1] > machine.nodes:
        raise RmapConfigError(
            f"{file.source}: invalid platform: field 'node_counts': {machine.node_counts[-1]} exceeds the "
            f"{machine.nodes} nodes"
        )
    if machine.core_counts[-1] > machine.cores_per_node:
        raise RmapConfigError(
            f"{file.source}: invalid platform: field 'core_counts': {machine.core_counts[-1]} exceeds the "
            f"{machine.cores_per_node} cores of a node"
        )
    return machine, socket


def load_machine(name_or_path: str | Path) -> RmapMachine:
    """The :class:`RmapMachine` of an ``rmap`` platform file (preset ``rmap-cab`` or a path)."""
    return load_rmap_platform(name_or_path)[0]


#: The Cab machine as used by RMAP, and the socket model of the ``synthetic-v1`` Cab data (the ``calibrated``
#: one is in :mod:`~wattsched.studies.rmap.data`): the preset ``rmap-cab``.
RMAP_CAB, SANDY_BRIDGE = load_rmap_platform("rmap-cab")


def normalised_bounds(machine: RmapMachine = RMAP_CAB, bounds: Iterable[float] | None = None) -> np.ndarray:
    """Global power bounds over the worst case (0.44 … 0.95 on Cab): the x axis of the paper's result figures."""
    values = np.asarray(tuple(machine.global_bounds if bounds is None else bounds), dtype=np.float64)
    return values / machine.worst_case_watts


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
    bandwidth_cores: float | None = None
    memory_freq_exponent: float | None = None

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
        a_s = self.bandwidth_cores
        beta = socket.memory_freq_exponent if self.memory_freq_exponent is None else self.memory_freq_exponent
        per_node = (1.0 - m) * (a_ref / a) * ratio + m * (socket.bandwidth(a_ref, a_s) / socket.bandwidth(a, a_s)) * (
            ratio**beta
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
