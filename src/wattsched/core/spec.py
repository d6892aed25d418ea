"""What every campaign kind's spec shares: a strict base model, the bound on the runs a campaign may expand to,
and reading and validating a spec file with errors that name the file and the field (one
:class:`~wattsched.core.store.CampaignError` for every problem)."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from wattsched.core.store import CampaignError
from wattsched.core.structured_input import load_json, load_toml, load_yaml


class StrictModel(BaseModel):
    """A spec model: unknown fields are errors (a typo must not silently fall back to a default), values frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


#: Runs a campaign may expand to unless its spec's ``max_runs`` (or ``campaign run --max-runs``) says more. A
#: million runs is 740 times paper 000's grid (1,350) and a week of two cores at half a second a run, while a
#: typo'd grid (``count = 1000000`` windows, a seed list of a million) is refused before it prepares anything:
#: a grid of 10^12 runs prepared one workload per seed, 153 seeds and 880 MB in 150 s, and would never have ended.
DEFAULT_MAX_RUNS = 1_000_000


class BoundedSpec(StrictModel):
    """A campaign kind's spec: strict, with ``max_runs``, the bound on the runs its grid may expand to (default
    :data:`DEFAULT_MAX_RUNS`). The bound is a guard, not part of the experiment: it is left out of every dump
    (the manifest, the spec's hash, run ids), so raising it changes no id and a campaign resumes without it."""

    max_runs: int | None = Field(default=None, gt=0, exclude=True)


def check_run_count(count: int, limit: int | None, source: str) -> None:
    """Refuse, in one line naming ``source``, a grid of ``count`` runs above ``limit`` (default
    :data:`DEFAULT_MAX_RUNS`)."""
    limit = DEFAULT_MAX_RUNS if limit is None else limit
    if count > limit:
        raise CampaignError(
            f"{source}: the grid expands to {count:,} runs, more than the limit of {limit:,}; raise it with "
            f"max_runs = {count} (in the spec, or --max-runs on campaign run) if you mean it"
        )


M = TypeVar("M", bound=BaseModel)


def known_names(known: Collection[str], what: str, hint: str | None = None) -> Callable[[list[str]], list[str]]:
    """A field validator (``AfterValidator``) for a list of names that must all be in ``known``: the error names
    the unknown ones and lists the known ones (or says ``hint``), e.g. "unknown mix(es) ['W99']; choose from W13,
    W33, W50". One definition for every spec's lists of policies, mixes, traces, dispatchers and sources."""

    def check(values: list[str]) -> list[str]:
        bad = [v for v in values if v not in known]
        if bad:
            raise ValueError(f"unknown {what} {bad}; {hint or 'choose from ' + ', '.join(known)}")
        return values

    return check


def read_spec_file(path: str | Path) -> Any:
    """The raw data of a campaign file (``.toml``, ``.yaml``/``.yml`` or ``.json``), errors naming the file."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise CampaignError(f"{path}: cannot read the campaign file ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise CampaignError(f"{path}: not UTF-8 text (byte {exc.start}): not a campaign file") from exc
    try:
        if path.suffix == ".toml":  # each nested at most core.structured_input.MAX_DEPTH
            return load_toml(text, path, error=CampaignError)
        if path.suffix in (".yaml", ".yml"):
            return load_yaml(text, path, error=CampaignError)
        if path.suffix == ".json":
            return load_json(text, path, error=CampaignError)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        kind = "YAML" if path.suffix in (".yaml", ".yml") else path.suffix[1:].upper()
        raise CampaignError(f"{path}: not valid {kind}: {exc}") from exc
    raise CampaignError(f"{path}: campaign files are .toml, .yaml or .json")


def validate_spec(model: type[M], data: Any, source: str) -> M:
    """``data`` validated as ``model``; every problem named by its field path, in one :class:`CampaignError`."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(top)'}: {e['msg']}" for e in exc.errors())
        raise CampaignError(f"{source}: {problems}") from exc
