"""The names, defaults and help texts the command line shows before it runs anything: the registries' lists
(formats, power checks, predictors, policies) and the defaults that options print.

They come from the registries themselves (one definition per idea); this module only gathers them so that the CLI
reads them through the API like everything else. It stays cheap to import (``wattsched --help`` imports it): the
policy registry, which loads numba's compiled policies, is reached through :func:`policy_names` when asked.
"""

from __future__ import annotations

from wattsched.policies.powercheck import check_help, check_names
from wattsched.power.defaults import DEFAULT_POST_WINDOW_CAP, DEFAULT_PREDICTION_PLATFORM
from wattsched.predict.registry import POWER_PREDICTORS, PREDICTORS, RUNTIME_PREDICTORS
from wattsched.workload.formats import format_help, reads_timezone

__all__ = [
    "DEFAULT_POST_WINDOW_CAP",
    "DEFAULT_PREDICTION_PLATFORM",
    "POWER_PREDICTORS",
    "PREDICTORS",
    "RUNTIME_PREDICTORS",
    "check_help",
    "check_names",
    "format_help",
    "policy_descriptions",
    "policy_names",
    "reads_timezone",
]


def policy_names() -> list[str]:
    """The registered policies' names (lower case), in the registry's order; loads the compiled policies."""
    from wattsched.policies.registry import POLICIES

    return list(POLICIES)


def policy_descriptions() -> list[tuple[str, str]]:
    """Each registered policy's name and the semantics it implements (``wattsched policies``)."""
    from wattsched.policies.registry import POLICIES

    return [(p.name, p.description) for p in POLICIES.values()]
