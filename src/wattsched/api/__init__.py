"""The verbs of the CLI as Python functions, with the CLI's option names and defaults: the command line parses
its options, calls these and prints (docs/api.md is a tour).

:mod:`.runs`: one simulation (read, simulate, summarise, write); :mod:`.power`: the power setup of a run;
:mod:`.predict`: online power and runtime prediction over a workload; :mod:`.workloads`: format conversion;
:mod:`.eamc`: paper 002's DVFS machine.
The names most users need are also in the top-level namespace (``from wattsched import run_policy``).
"""

from __future__ import annotations

from wattsched.api.eamc import eamc_run, eamc_table, write_eamc_run
from wattsched.api.power import DEFAULT_POST_WINDOW_CAP, IgnoredOptionWarning, policy_power_notes, power_setup
from wattsched.api.predict import predict_power, predict_runtime, write_prediction_report, write_predictions
from wattsched.api.runs import (
    OUTPUT_FORMATS,
    RUN_FILES,
    Metrics,
    RunOutput,
    machine_size_of,
    resolve_machine_size,
    run_policy,
    workload_window,
    write_run,
)
from wattsched.api.workloads import Conversion, EmptyWorkloadError, convert_workload

__all__ = [
    "DEFAULT_POST_WINDOW_CAP",
    "OUTPUT_FORMATS",
    "RUN_FILES",
    "Conversion",
    "EmptyWorkloadError",
    "IgnoredOptionWarning",
    "Metrics",
    "RunOutput",
    "convert_workload",
    "eamc_run",
    "eamc_table",
    "machine_size_of",
    "policy_power_notes",
    "power_setup",
    "predict_power",
    "predict_runtime",
    "resolve_machine_size",
    "run_policy",
    "workload_window",
    "write_eamc_run",
    "write_prediction_report",
    "write_predictions",
    "write_run",
]
