"""The kinds of campaign: the spec's ``kind`` field → the :class:`~wattsched.core.experiment.Experiment` that runs it.

=========== ======================================================= =========================================
kind        what it compares                                        where it lives
=========== ======================================================= =========================================
``power``   power checks × sources × caps over workload windows     :mod:`wattsched.campaign.power` (paper 000)
``queue``   queue policies over workload windows (no power)         :mod:`wattsched.campaign.queue`
``dispatch`` dispatchers × runtime estimates on Eurora instances    :mod:`wattsched.studies.multires.experiment`
``eamc``    EAMC policies × app mixes × t_weight on two partitions  :mod:`wattsched.studies.eamc.experiment`
``rmap``    RMAP policies × traces × global power bounds            :mod:`wattsched.studies.rmap.experiment`
=========== ======================================================= =========================================

A campaign file without ``kind`` (written before the field existed) is read as before: a power campaign, with a
deprecation warning asking for ``kind = "power"``.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from wattsched.core.experiment import Experiment
from wattsched.core.spec import read_spec_file, validate_spec
from wattsched.core.store import CampaignError, read_manifest

#: Every kind, by the value of its spec's ``kind`` field: ``module:class`` of its experiment. Imported when the
#: kind is used, so that running one kind does not load the others (importing them all cost `wattsched rmap
#: grid` about 1 s: the power and queue kinds load the compiled engine). The import contracts do not see these
#: edges; they point down from `campaign` to `campaign` and `studies`, and `tests/test_campaign_kinds.py`
#: resolves every entry.
KINDS: dict[str, str] = {
    "power": "wattsched.campaign.power:PowerExperiment",
    "queue": "wattsched.campaign.queue:QueueExperiment",
    "dispatch": "wattsched.studies.multires.experiment:DispatchExperiment",
    "eamc": "wattsched.studies.eamc.experiment:EAMCExperiment",
    "rmap": "wattsched.studies.rmap.experiment:RMAPExperiment",
}


def experiment_class(kind: str) -> type[Experiment]:
    """The experiment of ``kind``; a :class:`CampaignError` naming the kinds otherwise."""
    try:
        module, name = KINDS[kind].split(":")
    except KeyError:
        raise CampaignError(f"unknown campaign kind {kind!r}; choose from {', '.join(KINDS)}") from None
    cls: type[Experiment] = getattr(importlib.import_module(module), name)
    return cls


def experiment_for(spec: BaseModel, *, base: Path | None = None) -> Experiment:
    """The experiment that runs ``spec`` (a validated spec of any kind: every spec model has a ``kind`` field)."""
    return experiment_class(str(spec.model_dump(include={"kind"})["kind"]))(spec, base=base)


def kind_of(data: Any, source: str = "campaign") -> str:
    """The kind a campaign's raw data declares; files without one are power campaigns (deprecated)."""
    if isinstance(data, dict) and "kind" in data:
        return str(data["kind"])
    warnings.warn(
        f'{source}: a campaign file without kind is read as a power campaign; write kind = "power" '
        "(files without it are deprecated)",
        FutureWarning,
        stacklevel=3,
    )
    return "power"


def parse_experiment(data: Any, source: str = "campaign", *, base: Path | None = None) -> Experiment:
    """The experiment of a campaign's raw data, its spec validated (errors name ``source`` and the field)."""
    cls = experiment_class(kind_of(data, source))
    if isinstance(data, dict) and "kind" not in data:
        data = {"kind": "power", **data}
    experiment = cls(validate_spec(cls.spec_model, data, source), base=base)
    experiment.source = source
    return experiment


def load_experiment(path: str | Path) -> Experiment:
    """Read a campaign file (``.toml``, ``.yaml`` or ``.json``) of any kind; relative paths in it are relative to
    the file's directory."""
    path = Path(path)
    return parse_experiment(read_spec_file(path), str(path), base=path.parent)


def open_experiment(out: str | Path) -> Experiment:
    """The experiment of an existing campaign directory, from its manifest."""
    manifest = read_manifest(out)
    try:
        cls = experiment_class(manifest.get("kind", "power"))
    except CampaignError as exc:  # a kind of another version, or a damaged manifest: name the file
        raise CampaignError(f"{out}/manifest.json: {exc}") from None
    spec = {"kind": cls.kind, **manifest["spec"]}  # a power manifest from before the field has none
    return cls(validate_spec(cls.spec_model, spec, f"{out}/manifest.json"))
