"""The power campaign's spec: a validated grid of power-capped simulation runs (paper 000 ran 1,320 plus 30
baselines), from TOML, YAML or JSON. Its experiment is :class:`wattsched.campaign.power.PowerExperiment`.

```toml
kind = "power"
name = "p0"
platform = "marconi100"

[[workloads]]
name = "m100"
generate = { model = "m100", jobs = 231000, seed = 0 }   # or: path = "job_table.parquet"
windows = { count = 30, hours = 24, seed = 0, prestate = "requeue" }

[grid]
policies = ["easy-pc"]
checks = ["naive", "mean", "max", "gaussian68", "gaussian95", "gaussian99"]
sources = ["real", "predicted"]
caps = [0.4, 0.5, 0.6, 0.7]
power_window = 10800
post_window_cap = "none"   # or "dynamic_range", a fraction, "350000W", or a list of them to sweep
```

Runs are the product workload window × policy × check × source × cap, except that the ``naive`` check has its
own source (max − idle per node of the platform; 1,860 W on M100), so it runs once per (window, policy, cap):
11 estimators × 4 caps × 30 windows = 1,320 runs. Each grid seed replicates the workloads on other samples (the seed
offsets the generator's and the windows' seeds), so ``seeds = [0, 1, 2]`` triples the campaign with independent
windows. Each window also gets a baseline run (EASY without a cap) unless ``baselines = false``. Every run has a
stable id, a hash of its parameters, so a campaign can resume and two executors agree.

``prestate`` (``"requeue"``, ``"prestart"`` or ``"drop"``; see ``engine/windows.py``) says what a window does
with the jobs queued or running at its start; the Booleans of older files still work (``true`` = ``"prestart"``,
``false`` = ``"drop"``) with a deprecation warning. ``post_window_cap`` is the cap after the power window
(paper 000's [AMBIG-0.6]; default ``"none"``, no power check after the window, which reproduces the paper's
turnaround costs: see docs/decisions.md); a list sweeps it like the caps.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from wattsched.core.bounds import check_fits, total_bytes
from wattsched.core.spec import BoundedSpec, StrictModel, known_names, read_spec_file, validate_spec
from wattsched.core.store import run_id
from wattsched.engine.windows import DEFAULT_PRESTATE, Prestate, prestate_mode
from wattsched.policies.powercheck import PowerCheck
from wattsched.policies.registry import POLICIES
from wattsched.power.defaults import DEFAULT_POST_WINDOW_CAP
from wattsched.power.run import POWER_SOURCES
from wattsched.predict.registry import POWER_PREDICTORS
from wattsched.workload.columns import parse_columns
from wattsched.workload.generate.footprint import BYTES_PER_JOB


class GenerateSpec(StrictModel):
    """A generated workload: the model and its arguments."""

    model: Literal["m100", "lublin"] = "m100"
    jobs: int = Field(gt=0)
    seed: int = 0
    target_load: float | None = Field(default=None, gt=0)
    machine_size: int | None = Field(default=None, gt=0)  # lublin only

    @model_validator(mode="after")
    def _fits(self) -> GenerateSpec:
        # against the machine's memory, not what is free now: status and report read the spec too
        check_fits(
            "jobs",
            self.jobs,
            BYTES_PER_JOB[self.model],
            f"the {self.model} generator",
            limit=total_bytes(),
            limit_name="in this machine",
        )
        return self


class WindowsSpec(StrictModel):
    count: int = Field(default=30, ge=1)
    hours: float = Field(default=24.0, gt=0)
    seed: int = 0
    prestate: Prestate = DEFAULT_PRESTATE

    @field_validator("prestate", mode="before")
    @classmethod
    def _prestate(cls, v: Any) -> Any:
        return prestate_mode(v) if isinstance(v, bool) else v


#: The cap after the power window in the first campaigns (the platform's dynamic range, the artifact's value):
#: runs with it keep the ids they had before ``post_window_cap`` existed.
LEGACY_POST_WINDOW_CAP = "dynamic_range"
_WATTS = re.compile(r"^\s*[0-9]+(\.[0-9]*)?\s*[Ww]\s*$")


def check_post_window_cap(v: str | float) -> str | float:
    """A post-window cap as a campaign writes it: ``"dynamic_range"``, ``"none"``, a fraction in (0, 1] of the
    dynamic range, or watts (``"350000W"``)."""
    if isinstance(v, bool):
        raise ValueError(f"post_window_cap must be 'dynamic_range', 'none', a fraction or watts, got {v!r}")
    if isinstance(v, int | float):
        if not 0 < v <= 1:
            raise ValueError(
                f"a numeric post_window_cap is a fraction in (0, 1] of the dynamic range, got {v}; "
                'write watts as a string, e.g. "350000W"'
            )
        return float(v)
    if isinstance(v, str) and (v in ("dynamic_range", "none") or _WATTS.match(v)):
        return v
    raise ValueError(f"post_window_cap must be 'dynamic_range', 'none', a fraction or watts like '350000W', got {v!r}")


class WorkloadSpec(StrictModel):
    """One workload: a file or a generator, optionally cut into windows (each window is a workload of its own)."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    path: str | None = None
    generate: GenerateSpec | None = None
    windows: WindowsSpec | None = None
    machine_size: int | None = Field(default=None, gt=0)
    # a job table's column mapping (workload/columns.py); left out of the dump when unset, so specs written
    # before the field keep their hash and resume
    columns: dict[str, str] | None = Field(default=None, exclude_if=lambda v: v is None)

    @field_validator("columns")
    @classmethod
    def _columns(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        return parse_columns(v, option="columns")

    @model_validator(mode="after")
    def _one_source(self) -> WorkloadSpec:
        if (self.path is None) == (self.generate is None):
            raise ValueError(f"workload {self.name!r} needs exactly one of 'path' or 'generate'")
        if self.columns is not None and self.path is None:
            raise ValueError(f"workload {self.name!r}: 'columns' maps a job table's columns; it needs 'path'")
        return self


class GridSpec(StrictModel):
    policies: Annotated[list[str], AfterValidator(known_names(POLICIES, "policies", "see `wattsched policies`"))] = (
        Field(default_factory=lambda: ["easy-pc"], min_length=1)
    )
    checks: list[str] = Field(default_factory=lambda: ["gaussian99"], min_length=1)
    sources: Annotated[list[str], AfterValidator(known_names(POWER_SOURCES, "power sources"))] = Field(
        default_factory=lambda: ["real"], min_length=1
    )
    caps: list[float] = Field(default_factory=lambda: [0.5], min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    power_window: float = Field(default=10_800.0, gt=0)  # seconds the cap holds (then the dynamic range)
    reservation: Literal["nodes", "nodes+power"] = "nodes"
    # the cap after the power window ([AMBIG-0.6]); a list sweeps it
    post_window_cap: str | float | list[str | float] = DEFAULT_POST_WINDOW_CAP

    @field_validator("post_window_cap")
    @classmethod
    def _post_window_cap(cls, v: str | float | list[str | float]) -> str | float | list[str | float]:
        if isinstance(v, list):
            if not v:
                raise ValueError("post_window_cap: give at least one value")
            return [check_post_window_cap(x) for x in v]
        return check_post_window_cap(v)

    def post_window_caps(self) -> list[str | float]:
        """The post-window caps to sweep (one value when a scalar was given)."""
        return list(self.post_window_cap) if isinstance(self.post_window_cap, list) else [self.post_window_cap]

    @field_validator("checks")
    @classmethod
    def _checks(cls, v: list[str]) -> list[str]:
        for name in v:
            PowerCheck.named(name)  # raises with the valid names
        return v

    @field_validator("caps")
    @classmethod
    def _caps(cls, v: list[float]) -> list[float]:
        bad = [c for c in v if not c > 0]
        if bad:
            raise ValueError(f"caps are positive fractions of the dynamic range, got {bad}")
        return v


class PredictionSpec(StrictModel):
    """How the ``predicted`` source is made: a power predictor over the whole trace (trace protocol)."""

    method: str = "history"
    completion: Literal["auto", "trace", "replay", "no-wait"] = "auto"

    @field_validator("method")
    @classmethod
    def _method(cls, v: str) -> str:
        if v not in POWER_PREDICTORS:
            raise ValueError(f"unknown power prediction method {v!r}; choose from {POWER_PREDICTORS}")
        return v


class CampaignSpec(BoundedSpec):
    """A power campaign (see the module docstring)."""

    kind: Literal["power"] = "power"
    name: str = Field(default="campaign", min_length=1)
    platform: str = "marconi100"
    workloads: list[WorkloadSpec] = Field(min_length=1)
    grid: GridSpec = Field(default_factory=GridSpec)
    prediction: PredictionSpec = Field(default_factory=PredictionSpec)
    baselines: bool = True

    @model_validator(mode="after")
    def _unique_names(self) -> CampaignSpec:
        names = [w.name for w in self.workloads]
        if len(set(names)) != len(names):
            raise ValueError(f"workload names must be unique, got {names}")
        return self


def load_spec(path: str | Path) -> CampaignSpec:
    """Read and validate a power campaign file (``.toml``, ``.yaml``/``.yml`` or ``.json``)."""
    return parse_spec(read_spec_file(path), str(path))


def parse_spec(data: Any, source: str = "campaign") -> CampaignSpec:
    """``data`` validated as a power campaign (``kind`` may be left out here: this function chose the kind)."""
    return validate_spec(CampaignSpec, data, source)


def workload_variants(spec: CampaignSpec) -> list[tuple[WorkloadSpec, int, str]]:
    """Each workload once per grid seed: ``(workload, seed, name)`` (see :func:`variants`)."""
    return variants(spec.workloads, spec.grid.seeds)


def variants(workloads: list[WorkloadSpec], seeds: list[int]) -> list[tuple[WorkloadSpec, int, str]]:
    """Each workload once per seed: ``(workload, seed, name)``. A seed offsets the generator's seed and the
    windows' seed, so seeds replicate the experiment on other samples; with the single default seed 0 the name is
    the workload's own."""
    return [(wl, seed, wl.name if seeds == [0] else f"{wl.name}-s{seed}") for wl in workloads for seed in seeds]


def count_runs(spec: CampaignSpec) -> int:
    """How many runs :func:`expand_runs` gives at most (a workload may yield fewer windows than its ``count``),
    from the axis lengths alone: per window, a baseline and policies × post-window caps × caps × the checks'
    sources (one, ``naive``, for the naive check); windows: each workload's count (one without windows) × seeds."""
    g = spec.grid
    sources = sum(1 if check == "naive" else len(g.sources) for check in g.checks)
    per_window = int(spec.baselines) + len(g.post_window_caps()) * len(g.policies) * len(g.caps) * sources
    windows = sum(w.windows.count if w.windows is not None else 1 for w in spec.workloads) * len(g.seeds)
    return windows * per_window


def expand_runs(spec: CampaignSpec, windows: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Every run of the campaign, in a stable order. ``windows`` maps each workload variant's name (see
    :func:`workload_variants`) to its window ids. A capped run has a ``post_window_cap`` key only when it is not
    the dynamic range, so that the runs of campaigns written before the option keep their ids."""
    g = spec.grid
    runs: list[dict[str, Any]] = []
    for _, seed, name in workload_variants(spec):
        for wid in windows[name]:
            if spec.baselines:
                runs.append(
                    {
                        "kind": "baseline",
                        "workload": wid,
                        "policy": "easy",
                        "check": "none",
                        "source": "none",
                        "cap": None,
                        "seed": seed,
                    }
                )
            for post in g.post_window_caps():
                for policy in g.policies:
                    for cap in g.caps:
                        for check in g.checks:
                            sources = ["naive"] if check == "naive" else g.sources
                            for source in sources:
                                run = {
                                    "kind": "run",
                                    "workload": wid,
                                    "policy": policy,
                                    "check": check,
                                    "source": source,
                                    "cap": cap,
                                    "seed": seed,
                                }
                                if post != LEGACY_POST_WINDOW_CAP:  # old runs keep their ids
                                    run["post_window_cap"] = post
                                runs.append(run)
    for r in runs:
        r["power_window"] = g.power_window
        r["reservation"] = g.reservation
        r["platform"] = spec.platform
        r["id"] = run_id({k: v for k, v in r.items() if k != "id"})
    return runs
