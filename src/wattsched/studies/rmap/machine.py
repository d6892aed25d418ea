"""Paper 004 (RMAP; docs/rmap.md): the Cab machine, its configuration data and the configuration model.

RMAP's policies pick a *configuration* (n × c, p) — n nodes, c cores per node, a package power cap p per socket — for
each job from a pre-computed table of (time, total package power) per configuration and application (the paper's
``job_details_table``). This module is the one import point of that API; the parts live in

- :mod:`~wattsched.studies.rmap.hardware`: the machine (:data:`RMAP_CAB`, the preset ``rmap-cab`` read from its
  platform file by :func:`load_rmap_platform`) and the physical socket/app formulas;
- :mod:`~wattsched.studies.rmap.data`: the stand-in for the unpublished Cab measurements — option ``cab_data``
  (``calibrated``, the default, fitted to every number the paper publishes about its data; or ``synthetic-v1``) —
  and the generator with the paper's 2,840 points;
- :mod:`~wattsched.studies.rmap.calibration`: the paper's published data points beside the data's;
- :mod:`~wattsched.studies.rmap.configurations`: :class:`ConfigTable` / :class:`JobDetails` with O(log K) "fastest
  configuration under a power bound" queries;
- :mod:`~wattsched.studies.rmap.model`: the degree-2 log-polynomial configuration model ([AMBIG-4.1]) and its
  accuracy report; :mod:`~wattsched.studies.rmap.model_figures`: its Figs. 6–7 (the only part needing matplotlib,
  loaded on first use of :func:`write_model_figures`).

The schedulers live elsewhere and only use this API.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wattsched.studies.rmap.configurations import ConfigTable, JobDetails
from wattsched.studies.rmap.data import (
    CAB_DATA,
    CAB_SOCKET,
    DEFAULT_CAB_DATA,
    PAPER_FIG2,
    PAPER_TABLE2,
    RMAP_CAB_APPS,
    RMAP_CAB_APPS_V1,
    SP_MZ_CLASS_C,
    cab_data_set,
    fig2_targets,
    rmap_cab_details,
    rmap_cab_frame,
    rmap_cab_platform,
)
from wattsched.studies.rmap.hardware import (
    RMAP_CAB,
    SANDY_BRIDGE,
    AppModel,
    RmapConfigError,
    RmapMachine,
    SocketModel,
    load_machine,
    load_rmap_platform,
    normalised_bounds,
)
from wattsched.studies.rmap.model import CONFIG_MODEL_TERMS, config_features, fit_config_model, model_error_summary

if TYPE_CHECKING:
    from wattsched.studies.rmap.model_figures import write_model_figures

__all__ = [
    "CAB_DATA",
    "CAB_SOCKET",
    "CONFIG_MODEL_TERMS",
    "DEFAULT_CAB_DATA",
    "PAPER_FIG2",
    "PAPER_TABLE2",
    "RMAP_CAB",
    "RMAP_CAB_APPS",
    "RMAP_CAB_APPS_V1",
    "SANDY_BRIDGE",
    "SP_MZ_CLASS_C",
    "AppModel",
    "ConfigTable",
    "JobDetails",
    "RmapConfigError",
    "RmapMachine",
    "SocketModel",
    "cab_data_set",
    "config_features",
    "fig2_targets",
    "fit_config_model",
    "load_machine",
    "load_rmap_platform",
    "model_error_summary",
    "normalised_bounds",
    "rmap_cab_details",
    "rmap_cab_frame",
    "rmap_cab_platform",
    "write_model_figures",
]


def __getattr__(name: str) -> Any:
    """Load the matplotlib-based figures only when asked for (PEP 562)."""
    if name == "write_model_figures":
        from wattsched.studies.rmap.model_figures import write_model_figures  # matplotlib: only when drawing

        return write_model_figures
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
