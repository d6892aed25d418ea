"""The advisor's configuration: one TOML file (or none: every field has a default but the cap) validated by pydantic,
with errors on ONE line naming the file, the key and why (docs/advisor.md, "Configuration").

Why pydantic models and not the CLI's ``--config`` default map (cli/config.py): the advisor's file is nested
(``[cap]``, ``[power]``, ``[learning]``, ``[backend]``) and the loop, the replay and the tests build it without a
command line; the flags of ``wattsched advise`` arrive as ``load_config(path, **overrides)`` keyword overrides.

Choices (docs/decisions.md, "advisor"):

- **cap**: exactly one of ``watts`` (constant), ``windows`` (daily ``HH:MM`` local-time or ISO-datetime windows;
  where several windows hold, the lowest cap wins — the conservative reading; outside every window ``default``,
  else no cap) or ``file`` (the simulator's ``time_offset_s;power_cap_W`` cap file, offsets counted from
  ``origin``, which is then required: a cap schedule must not move when the advisor restarts).
- **power.definition** ``net`` (default): a job's power is its nodes' power above idle and the cap applies to the
  whole cluster's metered power, so the license budget is ``cap − Σ idle of every node``. This is the
  simulator's convention too (``power/platform.py``: every cap is on dynamic power, total − nodes·idle). ``gross``:
  a job's power is its nodes' full power and the cap applies to the sum over running jobs (idle nodes not counted).
- **learning.estimate** ``quantile`` (default, q = 0.9): the normal approximation ``mean + z_q·σ``, where mean is
  the predictor's estimate and σ the spread (ddof 0) of the key's completed jobs' per-node power, capped by the
  highest per-node power the key has shown; ``mean`` is the predictor's estimate; ``max`` the key's highest.
- **learning.default_watts_per_node** None (default): a job without evidence is sized at the worst case,
  ``power.max_watts_per_node`` (net of idle under ``net``), else the highest node power observed (once three
  jobs have completed), else the whole budget. A job whose license would exceed the whole budget is held, never
  run alone above the cap.
- **learning.floor_share** 0.1, **fall_jobs** 3, **scale_up** 2 (estimates no user can talk down,
  ``advise/learn.py``): a floor of 10 % of the worst case per node; the fall from the worst case spread over three
  jobs; a job of m nodes is evidence for jobs of up to 2m nodes.
- **on_overshoot** ``none`` (default): an overshoot of the measured power is always caught (logged, counted, in
  the status file, ``alert_command``); acting on running jobs (``suspend``, ``requeue``) is the operator's
  choice, because it interrupts users' work (``advise/overshoot.py``).
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from datetime import UTC, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Annotated, Any, Literal, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from wattsched.core.structured_input import load_toml
from wattsched.power.platform import PowerCapSchedule, PowerConfigError, load_cap_file

__all__ = [
    "AdvisorConfig",
    "AdvisorConfigError",
    "BackendConfig",
    "CapConfig",
    "CapWindow",
    "DomainConfig",
    "LearningConfig",
    "PowerConfig",
    "load_config",
    "parse_watts",
]

_UNITS = {"": 1.0, "w": 1.0, "kw": 1e3, "mw": 1e6, "gw": 1e9}
_WATTS = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?[wW]?)\s*$")


class AdvisorConfigError(ValueError):
    """A configuration that cannot be used: one line naming the file, the key and why."""


def parse_watts(value: object) -> float:
    """Watts from a number or a string with a unit: ``1500``, ``"1500W"``, ``"1.5kW"``, ``"2MW"`` (case-insensitive
    unit; a bare number is watts). Finite and non-negative, else a ValueError saying what was expected."""
    if isinstance(value, bool):
        raise ValueError(f"expected watts such as 1500, '1500W', '1.5kW' or '2MW', got {value!r}")
    if isinstance(value, int | float):
        watts = float(value)
    elif isinstance(value, str):
        match = _WATTS.match(value)
        if match is None:
            raise ValueError(f"expected watts such as 1500, '1500W', '1.5kW' or '2MW', got {value!r}")
        # 'M' alone is mega (as in MW), never milli: nobody caps a cluster in milliwatts
        unit = match.group(2).lower()
        unit = unit if unit.endswith("w") or not unit else unit + "w"
        watts = float(match.group(1)) * _UNITS[unit]
    else:
        raise ValueError(f"expected watts such as 1500, '1500W', '1.5kW' or '2MW', got {value!r}")
    if not (math.isfinite(watts) and watts >= 0):
        raise ValueError(f"watts must be finite and non-negative, got {value!r}")
    return watts


Watts = Annotated[float, BeforeValidator(parse_watts)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_HHMM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def _moment(text: str | datetime | float | int, tz: tzinfo) -> float | time:
    """A window bound: ``HH:MM`` (a daily local time) or an ISO datetime / epoch seconds (one instant)."""
    if isinstance(text, bool):
        raise ValueError(f"expected 'HH:MM' or an ISO datetime, got {text!r}")
    if isinstance(text, int | float):
        return float(text)
    if isinstance(text, datetime):
        return (text if text.tzinfo else text.replace(tzinfo=tz)).timestamp()
    m = _HHMM.match(text.strip())
    if m:
        return time(int(m.group(1)), int(m.group(2)))
    try:
        dt = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"expected 'HH:MM' (daily, local time) or an ISO datetime, got {text!r}") from None
    return (dt if dt.tzinfo else dt.replace(tzinfo=tz)).timestamp()


def _local_zone() -> tzinfo:
    """The machine's zone as an IANA zone (``TZ``, else the ``/etc/localtime`` link), so that daily windows follow
    daylight-saving changes; a fixed offset only when no name can be found."""
    names = [os.environ.get("TZ", "").lstrip(":")]
    try:
        link = os.readlink("/etc/localtime")
        names.append(link.split("zoneinfo/", 1)[1] if "zoneinfo/" in link else "")
    except OSError:
        pass
    for name in names:
        if name:
            try:
                return ZoneInfo(name)
            except (ZoneInfoNotFoundError, ValueError):
                continue
    return datetime.now().astimezone().tzinfo or UTC


class CapWindow(_Strict):
    """``[start, end)``: both ``HH:MM`` (every day, local time; end ≤ start wraps past midnight) or both instants."""

    start: str | datetime | float
    end: str | datetime | float
    watts: Watts


class CapConfig(_Strict):
    """The power cap: exactly one of ``watts``, ``windows`` or ``file`` (see the module docstring)."""

    watts: Watts | None = None
    windows: list[CapWindow] | None = None
    default: Watts | None = None  # outside every window (None = no cap there)
    file: Path | None = None
    origin: datetime | float | None = None  # the instant a cap file's offset 0 stands for
    timezone: str | None = None  # for HH:MM windows and naive datetimes; None = the machine's local zone
    _schedule: PowerCapSchedule | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _exactly_one(self) -> CapConfig:
        given = [k for k in ("watts", "windows", "file") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of watts, windows or file (got {', '.join(given) or 'none'})")
        if self.default is not None and self.windows is None:
            raise ValueError("default applies only outside cap windows: give windows, or drop default")
        if self.file is not None and self.origin is None:
            raise ValueError("a cap file needs origin (ISO datetime or epoch seconds of its offset 0)")
        tz = self.tz()
        for i, w in enumerate(self.windows or ()):
            a, b = _moment(w.start, tz), _moment(w.end, tz)
            if type(a) is not type(b):
                raise ValueError(f"window {i}: start and end must both be HH:MM or both be datetimes")
            if isinstance(a, float) and isinstance(b, float) and b <= a:
                raise ValueError(f"window {i}: end must be after start")
        if self.file is not None:
            try:
                self._schedule = load_cap_file(self.file)
            except PowerConfigError as exc:
                raise ValueError(str(exc)) from None
        return self

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ZoneInfo(value)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone {value!r} (an IANA name such as 'Europe/Rome')") from None
        return value

    def tz(self) -> tzinfo:
        """The zone of ``HH:MM`` windows: the configured one, else the machine's (DST-aware when it has a name)."""
        return ZoneInfo(self.timezone) if self.timezone is not None else _local_zone()

    def _origin(self) -> float:
        o = self.origin
        if isinstance(o, datetime):
            return (o if o.tzinfo else o.replace(tzinfo=self.tz())).timestamp()
        return float(o or 0.0)

    def _file_schedule(self) -> PowerCapSchedule:
        if self._schedule is None:
            assert self.file is not None
            self._schedule = load_cap_file(self.file)
        return self._schedule

    def _in_window(self, w: CapWindow, t: float) -> bool:
        tz = self.tz()
        a, b = _moment(w.start, tz), _moment(w.end, tz)
        if isinstance(a, float) and isinstance(b, float):
            return a <= t < b
        assert isinstance(a, time) and isinstance(b, time)
        now = datetime.fromtimestamp(t, tz).time()
        return a <= now < b if a < b else (now >= a or now < b)

    def at(self, t: float) -> float | None:
        """The cap in watts at epoch time ``t`` (None = no cap)."""
        if self.watts is not None:
            return float(self.watts)
        if self.file is not None:
            schedule = self._file_schedule()
            return schedule.cap_at(t - self._origin()) if t >= self._origin() else schedule.caps[0]
        inside = [float(w.watts) for w in self.windows or () if self._in_window(w, t)]
        return min(inside) if inside else (None if self.default is None else float(self.default))

    def _bounds(self, t0: float, t1: float) -> list[float]:
        """Every instant in (t0, t1] at which the cap may change."""
        out: list[float] = []
        if self.file is not None:
            schedule = self._file_schedule()
            out += [self._origin() + t for t in schedule.times]
        tz = self.tz()
        for w in self.windows or ():
            for bound in (_moment(w.start, tz), _moment(w.end, tz)):
                if isinstance(bound, float):
                    out.append(bound)
                    continue
                day = datetime.fromtimestamp(t0, tz).date() - timedelta(days=1)
                last = datetime.fromtimestamp(t1, tz).date() + timedelta(days=1)
                while day <= last:
                    out.append(datetime.combine(day, bound, tz).timestamp())
                    day += timedelta(days=1)
        return sorted({b for b in out if t0 < b <= t1})

    def changes(self, t0: float, t1: float) -> list[tuple[float, float | None]]:
        """The instants in (t0, t1] where the cap changes, with the new cap (None = uncapped): what a time-window
        cap compiles into (license reservations, or scheduled changes of a remote license)."""
        out: list[tuple[float, float | None]] = []
        previous = self.at(t0)
        for b in self._bounds(t0, t1):
            value = self.at(b)
            if value != previous:
                out.append((b, value))
                previous = value
        return out

    def schedule(self, t0: float, t1: float) -> PowerCapSchedule:
        """The cap over [t0, t1] as the simulator's schedule, time 0 = ``t0`` (for the replay)."""
        times, caps = [0.0], [self.at(t0)]
        for t, w in self.changes(t0, t1):
            times.append(t - t0)
            caps.append(w)
        return PowerCapSchedule(tuple(times), tuple(caps))


class PowerConfig(_Strict):
    """What a job's power means, one definition everywhere (module docstring)."""

    definition: Literal["net", "gross"] = "net"
    idle_watts_per_node: Watts | None = None  # None = measured (lowest CurrentWatts of idle nodes, in the store)
    max_watts_per_node: Watts | None = None  # a node's full worst-case power; None = unknown (the budget bounds)

    @model_validator(mode="after")
    def _ordered(self) -> PowerConfig:
        idle, peak = self.idle_watts_per_node, self.max_watts_per_node
        if idle is not None and peak is not None and peak <= idle:
            raise ValueError(f"max_watts_per_node ({peak}) must exceed idle_watts_per_node ({idle})")
        return self


class LearningConfig(_Strict):
    """How job power is learned from completed jobs (module docstring)."""

    # user and job name: chosen on replays of a recorded testbed dump and 5 synthetic seeds (bench/advisor_keys.py,
    # docs/decisions.md): no overshoot where ["user"] pooled a user's heavy and light jobs (over the cap in 3 of 5)
    key: list[Literal["user", "account", "name", "nodes"]] = Field(
        default_factory=lambda: cast("list[Literal['user', 'account', 'name', 'nodes']]", ["user", "name"]),
        min_length=1,
    )
    predictor: str = "history"
    estimate: Literal["mean", "max", "quantile"] = "quantile"
    quantile: float = Field(default=0.9, gt=0.5, lt=1.0)
    margin: float = Field(default=0.05, ge=0.0, le=10.0)
    default_watts_per_node: Watts | None = None
    min_history: int = Field(default=1, ge=1)
    # estimates no user can talk down (docs/advisor-model.md, "Floors"): a floor per node under every estimate
    # (configured, else floor_share × the worst case), a fall from the worst case spread over fall_jobs jobs of
    # evidence, and evidence only from jobs of at least nodes / scale_up nodes
    floor_watts_per_node: Watts | None = None
    floor_share: float = Field(default=0.1, ge=0.0, le=1.0)
    fall_jobs: int = Field(default=3, ge=1)
    scale_up: float = Field(default=2.0, ge=1.0)
    running: bool = True  # learn from running jobs' node power (exclusive nodes) as well as from sacct

    @field_validator("predictor")
    @classmethod
    def _known(cls, value: str) -> str:
        from wattsched.predict.registry import predictor_entry

        predictor_entry(value, "power")  # a ValueError listing the choices
        return value

    @field_validator("key")
    @classmethod
    def _unique(cls, value: list[str]) -> list[str]:
        if len(set(value)) != len(value):
            raise ValueError(f"the learning key repeats a field: {value}")
        return value


class BackendConfig(_Strict):
    """How the advisor talks to Slurm: the command-line tools (default) or slurmrestd with a JWT."""

    kind: Literal["cli", "rest"] = "cli"
    url: str | None = None  # slurmrestd base URL (rest)
    token: str | None = None
    token_env: str | None = "SLURM_JWT"  # environment variable holding the JWT (rest), read when token is None
    timeout: float = Field(default=10.0, gt=0)

    @model_validator(mode="after")
    def _rest_needs_url(self) -> BackendConfig:
        if self.kind == "rest" and not self.url:
            raise ValueError("backend kind 'rest' needs url (the slurmrestd base URL)")
        return self


class DomainConfig(_Strict):
    """A power domain (``advise/domains.py``): a named node set with its own cap, under the cluster cap."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    nodes: str  # a Slurm hostlist, e.g. "n[1-4]"
    watts: Watts

    @field_validator("nodes")
    @classmethod
    def _hostlist(cls, value: str) -> str:
        from wattsched.dataset.hostlist import expand_hostlist

        if not expand_hostlist(value):  # a ValueError naming the expression when malformed
            raise ValueError(f"no node in {value!r}")
        return value


class AdvisorConfig(_Strict):
    """Everything ``wattsched advise`` needs; the cap is the only value without a default."""

    cap: CapConfig
    power: PowerConfig = PowerConfig()
    learning: LearningConfig = LearningConfig()
    mode: Literal["licenses", "shadow", "gate"] = "licenses"
    interval: float = Field(default=15.0, gt=0)
    state: Path = Path("wattsched-advisor.sqlite")
    license: str | None = None  # None = the license named "power" or "power@<server>"
    backend: BackendConfig = BackendConfig()
    status_file: Path | None = None
    metrics_port: int | None = Field(default=None, ge=1, le=65535)
    report_dir: Path | None = None  # shadow mode's report folder
    # overshoots (measured power above the cap): always logged, counted and in the status file; on_overshoot acts
    on_overshoot: Literal["none", "suspend", "requeue"] = "none"
    alert_command: list[str] | None = None  # run (no shell) on each overshoot's start and end, details in its env
    admin_users: list[str] = Field(default_factory=lambda: ["root"])  # their jobs are never suspended or requeued
    domains: list[DomainConfig] = Field(default_factory=list)  # power domains (gate or shadow mode)

    @model_validator(mode="after")
    def _domains(self) -> AdvisorConfig:
        from wattsched.dataset.hostlist import expand_hostlist

        seen: dict[str, str] = {}
        names: set[str] = set()
        for d in self.domains:
            if d.name in names:
                raise ValueError(f"domains: the name {d.name!r} is used twice")
            names.add(d.name)
            for node in expand_hostlist(d.nodes):
                if node in seen:
                    raise ValueError(f"domains: node {node} is in both {seen[node]!r} and {d.name!r}")
                seen[node] = d.name
        if self.domains and self.mode == "licenses":
            raise ValueError(
                "domains: enforced in gate mode (a job is released only where its domain has room; a license "
                'cannot say where a job lands): set mode = "gate", or "shadow" to watch them'
            )
        return self


_PATHS = {("state",), ("status_file",), ("report_dir",), ("cap", "file")}


def _relative_to(data: dict[str, Any], base: Path) -> None:
    for path in _PATHS:
        holder: Any = data
        for key in path[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and isinstance(holder.get(path[-1]), str):
            p = Path(holder[path[-1]]).expanduser()
            holder[path[-1]] = str(p if p.is_absolute() else base / p)


def _override(data: dict[str, Any], key: str, value: Any) -> None:
    """``cap=…`` (watts or a string) sets a constant cap; ``learning__quantile=…`` a nested key; others top level."""
    if key == "cap" and not isinstance(value, dict | CapConfig):
        data["cap"] = {"watts": value}
        return
    if key == "cap_file":
        cap = cast("dict[str, Any]", data.get("cap")) if isinstance(data.get("cap"), dict) else {}
        data["cap"] = {k: v for k, v in cap.items() if k in ("origin", "timezone")} | {"file": str(value)}
        return
    *parents, last = key.split("__")
    holder = data
    for p in parents:
        holder = holder.setdefault(p, {})
    holder[last] = value


def _message(source: str, exc: ValidationError) -> str:
    parts = []
    for e in exc.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top)"
        msg = e["msg"].removeprefix("Value error, ")
        parts.append(f"key {key!r}: {msg}")
    return f"{source}: " + "; ".join(parts)


def load_config(path: Path | None, **overrides: Any) -> AdvisorConfig:
    """The configuration from ``path`` (TOML; None = defaults only) with ``overrides`` on top (None values are
    ignored: an option not given on the command line). Relative paths in the file are relative to the file.
    Raises :class:`AdvisorConfigError` with one line naming the file, the key and why."""
    data: dict[str, Any] = {}
    source = "advisor configuration (command line)"
    if path is not None:
        path = Path(path)
        source = str(path)
        try:
            data = load_toml(path.read_text(encoding="utf-8"), path, error=AdvisorConfigError)  # <= MAX_DEPTH
        except FileNotFoundError:
            raise AdvisorConfigError(f"{path}: no such configuration file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise AdvisorConfigError(f"{path}: cannot read: {str(exc)[:120]}") from None
        except tomllib.TOMLDecodeError as exc:
            raise AdvisorConfigError(f"{path}: not valid TOML: {exc}") from None
        _relative_to(data, path.parent.resolve())
    for key, value in overrides.items():
        if value is not None:
            _override(data, key, str(value) if isinstance(value, Path) else value)
    if "cap" not in data:
        raise AdvisorConfigError(f"{source}: key 'cap': missing; give --cap WATTS or a [cap] table")
    try:
        return AdvisorConfig.model_validate(data)
    except ValidationError as exc:
        raise AdvisorConfigError(_message(source, exc)) from None
