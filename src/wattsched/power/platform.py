"""Platform power model, power-cap schedules and job dynamic-power estimates (docs/semantics.md §3.7).

Every cap in wattsched is a cap on **dynamic** power, ``total − nodes·idle`` (the easypower convention:
``powercap_dynamic_watts``), so a cap and a job estimate are always compared on the same basis. A cap stated
on total power ([AMBIG-0.2], ``cap_basis="total"``) is converted once, when it is built:
``cap_dyn = cap_total − nodes·idle``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from wattsched.core.platform_file import PlatformFileError, preset_names, read_platform_file, validate_platform
from wattsched.core.schema import MAX_JOB_SIZE, MAX_NODE_POWER_W
from wattsched.power.defaults import DEFAULT_POST_WINDOW_CAP, no_post_window_cap

CapBasis = Literal["dynamic", "total"]
#: How a job's σ grows with its nodes ([AMBIG-0.3]): ``nodes`` (correlated nodes, default) or ``sqrt``.
SigmaScaling = Literal["nodes", "sqrt"]


#: The most power wattsched takes for a cap or a platform, in watts: a machine at the readers' bounds (MAX_JOB_SIZE
#: nodes drawing MAX_NODE_POWER_W each, docs/decisions.md) draws 1e12 W, some 50,000 times Frontier's 21 MW. A
#: larger value is a typo or a unit error (``--cap 1e308W``), not a machine, and is refused; a cap that is only above
#: what its platform can draw is warned about (:func:`cap_beyond_platform`).
MAX_POWER_W: float = MAX_JOB_SIZE * MAX_NODE_POWER_W


class PowerConfigError(PlatformFileError):
    """A platform or power-cap input that cannot be used; the message names the file, line or field and why."""


class Platform(BaseModel):
    """A homogeneous machine's power envelope.

    ``max_platform_watts`` is a field of its own because the highest platform power ever observed is far below
    ``nodes × max_node_watts`` (M100: 955,080 W = 980 × 974.57 W, not 980 × 2,100 W); it defaults to the
    latter when a machine has no measured figure.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    # At most MAX_JOB_SIZE nodes (docs/decisions.md, reader bounds): a 20-digit count is a typo, not a machine.
    nodes: int = Field(gt=0, le=MAX_JOB_SIZE)
    # Node powers at most MAX_NODE_POWER_W (100 kW, the readers' bound), the platform's at most MAX_POWER_W: larger
    # values are unit errors (mW for W), and every cap and estimate is derived from them.
    idle_watts: float = Field(ge=0, le=MAX_NODE_POWER_W, allow_inf_nan=False, description="idle power of one node")
    max_node_watts: float = Field(
        gt=0, le=MAX_NODE_POWER_W, allow_inf_nan=False, description="highest power of one node"
    )
    max_platform_watts: float = Field(
        default=0.0, le=MAX_POWER_W, allow_inf_nan=False, description="highest platform power"
    )

    @model_validator(mode="before")
    @classmethod
    def _default_max_platform(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("nodes"), bool):
            raise ValueError(f"nodes must be a number of nodes, got {data['nodes']!r}")
        if isinstance(data, dict) and data.get("max_platform_watts") is None:
            data = dict(data)
            try:
                data["max_platform_watts"] = float(data["nodes"]) * float(data["max_node_watts"])
            except (KeyError, TypeError, ValueError):
                data.pop("max_platform_watts", None)  # the field errors will say what is wrong
        return data

    @model_validator(mode="after")
    def _check_ranges(self) -> Platform:
        if self.max_node_watts <= self.idle_watts:
            raise ValueError(f"max_node_watts ({self.max_node_watts}) must exceed idle_watts ({self.idle_watts})")
        if self.max_platform_watts <= self.idle_platform_watts:
            raise ValueError(
                f"max_platform_watts ({self.max_platform_watts}) must exceed nodes·idle_watts "
                f"({self.idle_platform_watts}): the dynamic range would be empty"
            )
        return self

    def naive_node_watts(self, subtract_idle: bool = True) -> float:
        """The naive estimator's power of one node: its highest power, less idle on the dynamic basis
        ([AMBIG-0.3]; docs/platforms.md)."""
        return self.max_node_watts - (self.idle_watts if subtract_idle else 0.0)

    @property
    def idle_platform_watts(self) -> float:
        """Power of the whole machine with every node idle: the floor under every timeline's total."""
        return self.nodes * self.idle_watts

    @property
    def dynamic_range(self) -> float:
        """``P_dyn_max = max_platform_watts − nodes·idle``: the basis of α caps (719,880 W on M100)."""
        return self.max_platform_watts - self.idle_platform_watts

    @property
    def peak_dynamic_watts(self) -> float:
        """The most dynamic power the machine can draw: every node at ``max_node_watts`` (or the measured platform
        maximum when it is higher), less idle (1,822,800 W on M100). A cap above it can bind no real power, only
        estimates above the nodes' own maximum."""
        return max(self.nodes * self.max_node_watts, self.max_platform_watts) - self.idle_platform_watts


def platform_from_dict(data: dict[str, Any], source: str = "<dict>") -> Platform:
    """Validate a mapping into a ``Platform``; errors name ``source`` and each bad field."""
    return validate_platform(Platform, data, source, error=PowerConfigError)


def platform_presets() -> list[str]:
    """Names of the power platforms shipped as package data (``power/platforms/*.toml``): ``marconi100``."""
    return preset_names("power")


@cache
def _preset(name: str) -> Platform:
    file = read_platform_file(name, "power", error=PowerConfigError)
    return platform_from_dict(file.data, file.source)


def load_platform(name_or_path: str | Path | Platform) -> Platform:
    """A preset by name (``marconi100``) or a TOML/YAML platform file of kind ``power``, validated (docs/platforms.md).

    A preset is a file shipped in ``wattsched/power/platforms/`` and goes through the same reader and validation
    as a user's file; it is read once per process. The file holds the fields at top level or under a
    ``[platform]`` table.
    """
    if isinstance(name_or_path, Platform):
        return name_or_path
    if isinstance(name_or_path, str) and name_or_path in platform_presets():
        return _preset(name_or_path)
    file = read_platform_file(name_or_path, "power", error=PowerConfigError)
    return platform_from_dict(file.data, file.source)


# --------------------------------------------------------------------------------------------------- caps


def _to_dynamic(watts: float, platform: Platform | None, cap_basis: CapBasis, what: str) -> float:
    if cap_basis == "dynamic":
        return watts
    if cap_basis != "total":
        raise PowerConfigError(f"cap_basis must be 'dynamic' or 'total', got {cap_basis!r}")
    if platform is None:
        raise PowerConfigError(f"{what}: a total-power cap needs the platform to subtract its idle power")
    dynamic = watts - platform.idle_platform_watts
    if dynamic <= 0:
        raise PowerConfigError(
            f"{what}: total cap {watts} W {'is below' if dynamic < 0 else 'equals'} the idle power of {platform.name} "
            f"({platform.idle_platform_watts} W): no job could ever run"
        )
    return dynamic


def _basis_watts(platform: Platform | None, cap_basis: CapBasis, what: str) -> float:
    if platform is None:
        raise PowerConfigError(f"{what}: a fractional cap needs a platform")
    return platform.max_platform_watts if cap_basis == "total" else platform.dynamic_range


def parse_cap(text: str, platform: Platform | None, *, cap_basis: CapBasis = "dynamic") -> float | None:
    """The CLI cap syntax, as a dynamic cap in watts: ``"0.5"`` is α = 0.5 of the basis (the dynamic range, or
    ``max_platform_watts`` with ``cap_basis="total"``), ``"350000W"`` is watts, ``"none"``/``"inf"`` no cap.

    A bare number above 1 is refused rather than guessed: it is almost always watts missing their ``W``. A cap
    must be positive (a zero cap lets no job start: say ``none`` for no cap) and at most :data:`MAX_POWER_W`.
    """
    raw = text.strip()
    what = f"cap {text!r}"
    if raw.lower() in {"none", "inf", "infinity", "off"}:
        return None
    if raw[-1:] in {"W", "w"}:
        try:
            watts = float(raw[:-1].strip())
        except ValueError:
            raise PowerConfigError(f"{what}: not a number of watts") from None
        return _to_dynamic(_checked_watts(watts, what), platform, cap_basis, what)
    try:
        alpha = float(raw)
    except ValueError:
        expected = "expected a fraction like '0.5', watts like '350000W', or 'none'"
        raise PowerConfigError(f"{what}: {expected}") from None
    if alpha == 0:
        _checked_watts(0.0, what)  # the zero cap's own message
    if not 0.0 < alpha <= 1.0:
        raise PowerConfigError(f"{what}: a bare number is a fraction in (0, 1]; add 'W' for watts")
    return _to_dynamic(alpha * _basis_watts(platform, cap_basis, what), platform, cap_basis, what)


def _checked_watts(watts: float, what: str) -> float:
    """``watts`` when it can be a cap: finite, positive (a zero cap lets no job start, and the P0 metrics divide by
    it) and at most :data:`MAX_POWER_W`; else a one-line :class:`PowerConfigError` naming ``what``."""
    if not math.isfinite(watts) or watts < 0:
        raise PowerConfigError(f"{what}: watts must be finite and non-negative")
    if watts == 0:
        raise PowerConfigError(f"{what}: a zero cap lets no job start; give a positive cap, or 'none' for no cap")
    if watts > MAX_POWER_W:
        raise PowerConfigError(
            f"{what}: {watts:g} W is more than any machine draws (at most {MAX_POWER_W:g} W: {MAX_JOB_SIZE:,} nodes"
            f" of {MAX_NODE_POWER_W:,.0f} W); a typo or a unit error?"
        )
    return watts


def cap_beyond_platform(schedule: PowerCapSchedule, platform: Platform) -> str | None:
    """A one-line warning when a cap of ``schedule`` is above the most ``platform`` can draw
    (:attr:`Platform.peak_dynamic_watts`), else None. Such a cap binds no real power (only estimates above the
    nodes' own maximum), so the run is in effect uncapped: harmless, but most likely a typo (``35000000W`` for
    ``350000W``). Warned rather than refused: a user may mean "no cap" on purpose, and ``none`` says so better."""
    peak = platform.peak_dynamic_watts
    above = [c for c in schedule.caps if c is not None and c > peak]
    if not above:
        return None
    return (
        f"cap {max(above):,.0f} W (dynamic) is above the most {platform.name} can draw ({peak:,.0f} W dynamic:"
        f" {platform.nodes:,} nodes at {platform.max_node_watts:,.0f} W, less idle): it binds no real power;"
        " a typo? ('none' for no cap)"
    )


def resolve_cap(
    value: float | str | None, platform: Platform | None, *, cap_basis: CapBasis = "dynamic"
) -> float | None:
    """A cap given as a number (≤ 1: fraction α; > 1: watts), a ``parse_cap`` string or ``None``, as dynamic W."""
    if value is None:
        return None
    if isinstance(value, str):
        return parse_cap(value, platform, cap_basis=cap_basis)
    v = float(value)
    if math.isinf(v) and v > 0:
        return None
    what = f"cap {value!r}"
    _checked_watts(v, what)  # finite, positive, not absurd
    if v <= 1.0:
        return _to_dynamic(v * _basis_watts(platform, cap_basis, what), platform, cap_basis, what)
    return _to_dynamic(v, platform, cap_basis, what)


@dataclass(frozen=True)
class PowerCapSchedule:
    """A piecewise-constant cap on dynamic power: ``caps[i]`` (W, ``None`` = no cap) holds on
    ``[times[i], times[i+1])``; the last one holds forever, the first one also before 0.

    ``times`` start at 0 and strictly increase, so a schedule is total over the simulation clock.
    """

    times: tuple[float, ...]
    caps: tuple[float | None, ...]

    def __post_init__(self) -> None:
        times = tuple(float(t) for t in self.times)
        caps = tuple(None if c is None or (math.isinf(float(c)) and float(c) > 0) else float(c) for c in self.caps)
        if not times or len(times) != len(caps):
            raise PowerConfigError(f"a cap schedule needs as many times as caps (≥ 1), got {len(times)}/{len(caps)}")
        if times[0] != 0.0:
            raise PowerConfigError(f"a cap schedule starts at time 0, got {times[0]}")
        if not all(math.isfinite(t) for t in times) or any(b <= a for a, b in itertools.pairwise(times)):
            raise PowerConfigError(f"cap schedule times must be finite and strictly increasing: {times}")
        bad = [c for c in caps if c is not None and not (math.isfinite(c) and 0 <= c <= MAX_POWER_W)]
        if bad:
            raise PowerConfigError(f"caps must be non-negative watts up to {MAX_POWER_W:g} or None, got {bad}")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "caps", caps)

    # ---------------------------------------------------------------- constructors
    @classmethod
    def constant(
        cls, cap: float | str | None, platform: Platform | None = None, *, cap_basis: CapBasis = "dynamic"
    ) -> PowerCapSchedule:
        """One cap for the whole run (``None``: uncapped)."""
        return cls((0.0,), (resolve_cap(cap, platform, cap_basis=cap_basis),))

    @classmethod
    def window(
        cls,
        alpha_or_watts: float | str,
        platform: Platform,
        window_end: float = 10_800.0,
        post_window_cap: float | str | None = DEFAULT_POST_WINDOW_CAP,
        *,
        cap_basis: CapBasis = "dynamic",
    ) -> PowerCapSchedule:
        """P0's power window (docs/semantics.md §3.7): the cap on ``[0, window_end)``, then ``post_window_cap``.

        [AMBIG-0.6] The default after the window, ``"none"`` (or None), lifts every power check after it, as the
        command line and campaigns do; ``"dynamic_range"`` is the artifact's value (easypower's
        ``normal_dynamic_watts``; 719,880 W on M100): still a cap, which binds pessimistic estimators.
        """
        if not (math.isfinite(window_end) and window_end > 0):
            raise PowerConfigError(f"window_end must be a positive number of seconds, got {window_end}")
        inside = resolve_cap(alpha_or_watts, platform, cap_basis=cap_basis)
        after = (
            None
            if no_post_window_cap(post_window_cap)
            else platform.dynamic_range
            if post_window_cap == "dynamic_range"
            else resolve_cap(post_window_cap, platform, cap_basis=cap_basis)
        )
        return cls((0.0, float(window_end)), (inside, after))

    # ---------------------------------------------------------------- queries
    def _levels(self) -> np.ndarray:
        return np.array([math.inf if c is None else c for c in self.caps], dtype=np.float64)

    def cap_at(self, t: float) -> float | None:
        """Cap in force at ``t`` (a change at ``t`` applies at ``t``); ``None`` when uncapped."""
        i = max(int(np.searchsorted(self.times, t, side="right")) - 1, 0)
        return self.caps[i]

    def cap_at_many(self, times: np.ndarray | Sequence[float]) -> np.ndarray:
        """Vectorised ``cap_at``: float64 watts with ``inf`` where uncapped (so comparisons need no masks)."""
        idx = np.searchsorted(np.asarray(self.times), np.asarray(times, dtype=np.float64), side="right") - 1
        return self._levels()[np.clip(idx, 0, None)]

    def change_times(self) -> tuple[float, ...]:
        """Instants > 0 at which the cap actually changes: the timer events a simulator must schedule."""
        return tuple(t for t, a, b in zip(self.times[1:], self.caps[:-1], self.caps[1:], strict=True) if a != b)


def _cap_file_text(path: Path) -> str:
    """A cap file's text: UTF-8 (a BOM allowed), else Latin-1, which decodes any byte. Its values are ASCII in
    every 8-bit encoding a user's editor may save in (Latin-1, Windows-1252), so only a comment can hold another
    byte, and a comment is not read: a file with "# été" saved as Latin-1 works, as its author expects, while a
    stray byte in a value is still refused with its line (non-numeric field). A NUL byte means UTF-16 or a binary
    file, which no fallback reads right: one line naming the file and the offset."""
    data = path.read_bytes()
    nul = data.find(b"\x00")
    if nul >= 0:
        raise PowerConfigError(
            f"{path}: not a text cap file (a NUL byte at byte {nul}: UTF-16 or binary?); save it as UTF-8 text, one"
            " 'time_offset_s;power_cap_W' a line"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def load_cap_file(
    path: str | Path,
    *,
    platform: Platform | None = None,
    cap_basis: CapBasis = "dynamic",
    before_first: float | None = None,
) -> PowerCapSchedule:
    """A ``time_offset_s;power_cap_W`` file (Eurora's ``variable_power_caps`` format), one change per line.

    Offsets count from the simulation origin and must strictly increase. Before the first offset the cap is
    ``before_first`` (default: none; the Eurora files start at 100 s). Blank lines and ``#`` comments are skipped.
    The text is UTF-8, else read as Latin-1 (:func:`_cap_file_text`).
    """
    path = Path(path)
    try:
        lines = _cap_file_text(path).splitlines()
    except OSError as error:
        raise PowerConfigError(f"{path}: cannot read cap file: {error}") from None
    times: list[float] = []
    caps: list[float | None] = []
    for lineno, line in enumerate(lines, start=1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        fields = body.split(";")
        if len(fields) != 2:
            raise PowerConfigError(f"{path}:{lineno}: expected 'time_offset_s;power_cap_W', got {line!r}")
        try:
            t, w = float(fields[0]), float(fields[1])
        except ValueError:
            raise PowerConfigError(f"{path}:{lineno}: non-numeric field in {line!r}") from None
        if not (math.isfinite(t) and t >= 0):
            raise PowerConfigError(f"{path}:{lineno}: time offset must be a non-negative number, got {fields[0]!r}")
        if not (math.isfinite(w) and w >= 0):
            raise PowerConfigError(f"{path}:{lineno}: power cap must be non-negative watts, got {fields[1]!r}")
        if w > MAX_POWER_W:  # a zero stays allowed here: a period in which no job may start
            raise PowerConfigError(
                f"{path}:{lineno}: power cap {w:g} W is more than any machine draws (at most {MAX_POWER_W:g} W)"
            )
        if times and t <= times[-1]:
            raise PowerConfigError(f"{path}:{lineno}: time offset {t} does not increase (previous {times[-1]})")
        times.append(t)
        caps.append(_to_dynamic(w, platform, cap_basis, f"{path}:{lineno}"))
    if not times:
        raise PowerConfigError(f"{path}: no cap lines")
    if times[0] > 0:
        times.insert(0, 0.0)
        caps.insert(0, before_first)
    return PowerCapSchedule(tuple(times), tuple(caps))


# --------------------------------------------------------------------------------------------------- estimates


def job_dynamic_estimates(
    nodes: np.ndarray | Sequence[int],
    per_node_mean: np.ndarray | Sequence[float],
    per_node_max: np.ndarray | Sequence[float],
    per_node_std: np.ndarray | Sequence[float],
    idle: float,
    *,
    subtract_idle: bool = True,
    sigma_scaling: SigmaScaling = "nodes",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Job-level dynamic ``(mean m, max M, sigma s)`` from per-node total-power statistics (docs/semantics.md
    §3.7, [AMBIG-0.3]).

    ``m = q·(mean − idle)``, ``M = q·(max − idle)``: the statistics are per node and the caps are dynamic.
    ``subtract_idle=False`` gives the paper's literal ``q·x̂``. σ scales by ``q`` by default (the nodes of a job
    move together: the conservative choice); ``"sqrt"`` assumes independent nodes.
    """
    q = np.asarray(nodes, dtype=np.float64)
    arrays = [np.asarray(a, dtype=np.float64) for a in (per_node_mean, per_node_max, per_node_std)]
    if any(a.shape != q.shape for a in arrays):
        shapes = [q.shape, *(a.shape for a in arrays)]
        raise ValueError(f"nodes and the per-node statistics must have one shape, got {shapes}")
    if np.any(q < 0):
        raise ValueError("node counts must be non-negative")
    mean, mx, std = arrays
    offset = float(idle) if subtract_idle else 0.0
    if sigma_scaling == "nodes":
        s = q * std
    elif sigma_scaling == "sqrt":
        s = np.sqrt(q) * std
    else:
        raise ValueError(f"sigma_scaling must be 'nodes' or 'sqrt', got {sigma_scaling!r}")
    return q * (mean - offset), q * (mx - offset), s


def naive_estimates(nodes: np.ndarray | Sequence[int], naive_watts: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P0's naive estimator: every node at its highest observed dynamic power, ``m = M = naive_watts·q``, ``s = 0``.

    ``naive_watts`` is the platform's (:meth:`Platform.naive_node_watts`): on Marconi100 1,860 W = 2,100 W (its
    max node power) − 240 W idle, or 2,100 W for the paper's literal "2100 W · q_j" (``subtract_idle=False``).
    No default: a figure of one machine applied to another was a bug (a 2-node job of a 100/500 W platform
    estimated at 3,720 W instead of 800 W).
    """
    q = np.asarray(nodes, dtype=np.float64)
    m = q * float(naive_watts)
    return m, m.copy(), np.zeros_like(m)
