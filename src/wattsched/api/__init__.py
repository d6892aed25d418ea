"""The verbs of the CLI as Python functions, with the CLI's option names and defaults: each command parses its
options, calls a function here and prints what it returns (docs/api.md is a tour).

This is the top of the toolkit, just under ``wattsched.cli``: the one place the command line reaches the toolkit
through (an import-linter contract in ``make test`` keeps the CLI off the modules below it). Each submodule is one
group of commands: :mod:`.workloads` (``data``), :mod:`.generate`, :mod:`.datasets` (``dataset``),
:mod:`.platforms`, :mod:`.predict`, :mod:`.reports` (``compare``, ``report``), :mod:`.campaigns` (``campaign``,
the ``rmap`` and ``eamc`` grids), :mod:`.eamc`, :mod:`.reproduce`, :mod:`.advise`, :mod:`.testbed`, and
:mod:`.vocabulary` (the names and help texts options show); one run and its power setup come from
:mod:`wattsched.runs`. The main verbs of each are re-exported here.

The names resolve on first use (PEP 562), so ``import wattsched.api`` stays cheap: ``wattsched --help`` loads
none of the toolkit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattsched.core.lazy_names import lazy_getattr

#: Public name → the module that defines it.
_EXPORTS: dict[str, str] = {
    "DEFAULT_POST_WINDOW_CAP": "wattsched.runs",
    "OUTPUT_FORMATS": "wattsched.runs",
    "RUN_FILES": "wattsched.runs",
    "IgnoredOptionWarning": "wattsched.runs",
    "Metrics": "wattsched.runs",
    "RunOutput": "wattsched.runs",
    "machine_size_of": "wattsched.runs",
    "policy_power_notes": "wattsched.runs",
    "power_setup": "wattsched.runs",
    "resolve_machine_size": "wattsched.runs",
    "run_policy": "wattsched.runs",
    "workload_window": "wattsched.runs",
    "write_run": "wattsched.runs",
    "eamc_run": "wattsched.api.eamc",
    "eamc_table": "wattsched.api.eamc",
    "write_eamc_run": "wattsched.api.eamc",
    "predict_power": "wattsched.api.predict",
    "predict_runtime": "wattsched.api.predict",
    "write_prediction_report": "wattsched.api.predict",
    "write_predictions": "wattsched.api.predict",
    "load_workload": "wattsched.workload.load",
    "resolve_policy": "wattsched.policies.loader",
    "SimulationError": "wattsched.engine.simulate",
    "CapBasis": "wattsched.power.platform",
    "PredictionRun": "wattsched.predict.run",
    "boxplot_per_user": "wattsched.predict.evaluate",
    "run_demo": "wattsched.demo",
    "run_campaign_demo": "wattsched.demo",
    "run_campaign": "wattsched.api.campaigns",
    "load_experiment": "wattsched.api.campaigns",
    "campaign_report": "wattsched.api.campaigns",
    "campaign_status": "wattsched.api.campaigns",
    "collect_results": "wattsched.api.campaigns",
    "rmap_grid_experiment": "wattsched.api.campaigns",
    "eamc_grid_experiment": "wattsched.api.campaigns",
    "reproduce_paper": "wattsched.api.reproduce",
    "generate_lublin_workload": "wattsched.api.generate",
    "generate_m100_workload": "wattsched.api.generate",
    "generate_node_telemetry": "wattsched.api.generate",
    "build_power_dataset": "wattsched.api.datasets",
    "describe_platform": "wattsched.api.platforms",
    "platform_presets": "wattsched.api.platforms",
    "compare_runs": "wattsched.api.reports",
    "write_run_report": "wattsched.api.reports",
    "fetch_dataset": "wattsched.api.workloads",
    "workload_statistics": "wattsched.api.workloads",
    "advise_config": "wattsched.api.advise",
    "advise_run": "wattsched.api.advise",
    "advise_replay": "wattsched.api.advise",
    "advise_status": "wattsched.api.advise",
    "testbed_up": "wattsched.api.testbed",
    "testbed_down": "wattsched.api.testbed",
    "testbed_status": "wattsched.api.testbed",
    "Conversion": "wattsched.api.workloads",
    "EmptyWorkloadError": "wattsched.api.workloads",
    "convert_workload": "wattsched.api.workloads",
}

__all__ = [
    "DEFAULT_POST_WINDOW_CAP",
    "OUTPUT_FORMATS",
    "RUN_FILES",
    "CapBasis",
    "Conversion",
    "EmptyWorkloadError",
    "IgnoredOptionWarning",
    "Metrics",
    "PredictionRun",
    "RunOutput",
    "SimulationError",
    "advise_config",
    "advise_replay",
    "advise_run",
    "advise_status",
    "boxplot_per_user",
    "build_power_dataset",
    "campaign_report",
    "campaign_status",
    "collect_results",
    "compare_runs",
    "convert_workload",
    "describe_platform",
    "eamc_grid_experiment",
    "eamc_run",
    "eamc_table",
    "fetch_dataset",
    "generate_lublin_workload",
    "generate_m100_workload",
    "generate_node_telemetry",
    "load_experiment",
    "load_workload",
    "machine_size_of",
    "platform_presets",
    "policy_power_notes",
    "power_setup",
    "predict_power",
    "predict_runtime",
    "reproduce_paper",
    "resolve_machine_size",
    "resolve_policy",
    "rmap_grid_experiment",
    "run_campaign",
    "run_campaign_demo",
    "run_demo",
    "run_policy",
    "testbed_down",
    "testbed_status",
    "testbed_up",
    "workload_statistics",
    "workload_window",
    "write_eamc_run",
    "write_prediction_report",
    "write_predictions",
    "write_run",
    "write_run_report",
]

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from wattsched.api.advise import advise_config, advise_replay, advise_run, advise_status
    from wattsched.api.campaigns import (
        campaign_report,
        campaign_status,
        collect_results,
        eamc_grid_experiment,
        load_experiment,
        rmap_grid_experiment,
        run_campaign,
    )
    from wattsched.api.datasets import build_power_dataset
    from wattsched.api.eamc import eamc_run, eamc_table, write_eamc_run
    from wattsched.api.generate import generate_lublin_workload, generate_m100_workload, generate_node_telemetry
    from wattsched.api.platforms import describe_platform, platform_presets
    from wattsched.api.predict import predict_power, predict_runtime, write_prediction_report, write_predictions
    from wattsched.api.reports import compare_runs, write_run_report
    from wattsched.api.reproduce import reproduce_paper
    from wattsched.api.testbed import testbed_down, testbed_status, testbed_up
    from wattsched.api.workloads import (
        Conversion,
        EmptyWorkloadError,
        convert_workload,
        fetch_dataset,
        workload_statistics,
    )
    from wattsched.demo import run_campaign_demo, run_demo
    from wattsched.engine.simulate import SimulationError
    from wattsched.policies.loader import resolve_policy
    from wattsched.power.platform import CapBasis
    from wattsched.predict.evaluate import boxplot_per_user
    from wattsched.predict.run import PredictionRun
    from wattsched.runs import (
        DEFAULT_POST_WINDOW_CAP,
        OUTPUT_FORMATS,
        RUN_FILES,
        IgnoredOptionWarning,
        Metrics,
        RunOutput,
        machine_size_of,
        policy_power_notes,
        power_setup,
        resolve_machine_size,
        run_policy,
        workload_window,
        write_run,
    )
    from wattsched.workload.load import load_workload


#: A public name, read from its module at each lookup (the module is imported once). Not kept here: the command
#: line looks its functions up at every call, so a function replaced in its module (a test's monkeypatch, a
#: plugin) is the one called, not whichever this namespace saw first.
__getattr__ = lazy_getattr("wattsched.api", _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
