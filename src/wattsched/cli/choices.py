"""The closed choices of the command line as enums (help lists them, typer checks them, shells complete them),
and completion and case folding for the open ones (policy, power check and predictor names, which also accept
forms no list holds: ``module:Class``, ``quantile:P``).

Enum values are the strings the API takes: a StrEnum member *is* that string, so command bodies pass it on as is.
Every enum option is declared ``case_sensitive=False``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from enum import StrEnum

import typer

__all__ = [
    "AdviseMode",
    "Aggregate",
    "BackendKind",
    "CabData",
    "CapBasis",
    "Completion",
    "CvKind",
    "DemoKind",
    "EamcMix",
    "Executor",
    "Knapsack",
    "PowerSource",
    "Prestate",
    "PublicDataset",
    "Reservation",
    "Score",
    "SigmaScaling",
    "ThresholdMode",
    "WeightPlacement",
    "complete_check",
    "complete_eamc_policy",
    "complete_paper",
    "complete_policy",
    "complete_power_predictor",
    "complete_runtime_predictor",
    "policy_name",
    "power_check_name",
    "repeated_policy_names",
]


class PublicDataset(StrEnum):
    """The public datasets ``wattsched data fetch`` downloads."""

    pm100 = "pm100"


class Executor(StrEnum):
    """Where the runs of a campaign or the windows of a dataset build run."""

    local = "local"
    dask = "dask"


class Aggregate(StrEnum):
    """How a campaign summary aggregates its (workload window, cap) groups."""

    mean = "mean"
    median = "median"


class DemoKind(StrEnum):
    """Which demo ``wattsched demo`` runs."""

    campaign = "campaign"
    policies = "policies"


class CapBasis(StrEnum):
    """What a fractional power cap is a fraction of."""

    dynamic = "dynamic"
    total = "total"


class PowerSource(StrEnum):
    """The job power estimates a power check uses."""

    real = "real"
    predicted = "predicted"
    naive = "naive"


class Reservation(StrEnum):
    """What EASY's reservation under power reserves."""

    nodes = "nodes"
    nodes_power = "nodes+power"


class Knapsack(StrEnum):
    """What a knapsack policy does at the first job that does not fit."""

    stop = "stop"
    skip = "skip"


class SigmaScaling(StrEnum):
    """How a job's power deviation scales with its nodes."""

    nodes = "nodes"
    sqrt = "sqrt"


class Prestate(StrEnum):
    """What becomes of the jobs running or queued at a window's start."""

    requeue = "requeue"
    prestart = "prestart"
    drop = "drop"


class Completion(StrEnum):
    """Completion times an online predictor learns from."""

    auto = "auto"
    trace = "trace"
    replay = "replay"
    no_wait = "no-wait"


class CvKind(StrEnum):
    """Folds of the ML predictors' cross-validation."""

    kfold = "kfold"
    timeseries = "timeseries"


class WeightPlacement(StrEnum):
    """EAMC: where t_weight enters Eq. 5 (docs/decisions.md 2.2)."""

    paper = "paper"
    code = "code"


class Score(StrEnum):
    """EAMC: the partition score (docs/decisions.md 2.3)."""

    euclidean = "euclidean"
    code_linear = "code_linear"


class ThresholdMode(StrEnum):
    """EAMC: the part_eff threshold (docs/decisions.md 2.4)."""

    relative = "relative"
    absolute = "absolute"


class EamcMix(StrEnum):
    """EAMC: the app mixes of paper 002."""

    W13 = "W13"
    W33 = "W33"
    W50 = "W50"


class CabData(StrEnum):
    """RMAP: the parameters of the synthetic Cab model."""

    calibrated = "calibrated"
    synthetic_v1 = "synthetic-v1"


def _completer(module: str, attribute: str, what: str) -> Callable[[str], list[str]]:
    """A shell completion of ``what``: the names of the registry ``module.attribute`` that start with what is
    typed, in any case. The registry is imported when the shell asks (it may load numba's compiled code)."""

    def complete(incomplete: str) -> list[str]:
        names = getattr(importlib.import_module(module), attribute)
        names = names() if callable(names) else names  # a registry's function lists what was registered since
        return [n for n in names if str(n).lower().startswith(incomplete.lower())]

    complete.__doc__ = f"Shell completion of {what}."
    return complete


#: --policy: the registry's names (a module:Class is typed, not completed).
complete_policy = _completer("wattsched.api.vocabulary", "policy_names", "--policy")
#: --power-check: the named checks (quantile:P with P typed in).
complete_check = _completer("wattsched.api.vocabulary", "check_names", "--power-check")
complete_power_predictor = _completer("wattsched.api.vocabulary", "POWER_PREDICTORS", "a power predictor name")
complete_runtime_predictor = _completer("wattsched.api.vocabulary", "RUNTIME_PREDICTORS", "a runtime predictor")
complete_paper = _completer("wattsched.api.reproduce", "PAPERS", "reproduce PAPER")
complete_eamc_policy = _completer("wattsched.api.eamc", "EAMC_POLICIES", "eamc run --policy")


def policy_name(value: str | None) -> str | None:
    """--policy folded to the registry's (lower-case) name when it names one in any case (EASY, Easy-PC); any
    other value (a module:Class, an unknown name) passes unchanged, to be checked where it is used."""
    if value is None or ":" in value:
        return value
    from wattsched.api.vocabulary import policy_names  # deferred: loads numba's compiled policies

    return value.lower() if value.lower() in policy_names() else value


def repeated_policy_names(values: list[str] | None) -> list[str] | None:
    """A repeated --policy, each folded as :func:`policy_name` does; a policy given twice is an error (its
    runs would write the same folder)."""
    if values is None:
        return None
    folded = [policy_name(v) or v for v in values]
    repeated = sorted({p for p in folded if folded.count(p) > 1})
    if repeated:
        raise typer.BadParameter(f"{', '.join(repeated)} given more than once", param_hint="--policy")
    return folded


def power_check_name(value: str | None) -> str | None:
    """--power-check in lower case (Gaussian95, QUANTILE:0.99): check names are case-insensitive."""
    return None if value is None else value.lower()


class AdviseMode(StrEnum):
    """How the advisor acts on Slurm (docs/advisor.md, "Modes")."""

    licenses = "licenses"
    shadow = "shadow"
    gate = "gate"


class OvershootAction(StrEnum):
    """What the advisor does when the measured power is above the cap (docs/advisor-model.md, "Overshoots")."""

    none = "none"
    suspend = "suspend"
    requeue = "requeue"


class BackendKind(StrEnum):
    """How the advisor talks to Slurm."""

    cli = "cli"
    rest = "rest"
