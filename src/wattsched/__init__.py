"""wattsched: power- and energy-aware HPC batch scheduling.

The names most programs need, importable from the package itself (``from wattsched import simulate``):

Workloads
    :func:`load_workload` reads any supported file (SWF, Parquet/CSV tables, PM100, sacct, Eurora) into a
    :class:`ReadResult` (canonical jobs, rejects with reasons, provenance); :func:`save_workload` writes Parquet,
    CSV or SWF, each read back by ``load_workload``. :class:`WorkloadError`: input that cannot be read.
Simulation
    :func:`simulate` runs a policy (a registered name or your own :class:`Policy`, which sees a read-only
    :class:`View`; :class:`PolicyBase` gives its optional members their defaults; a :class:`CompiledPolicyBase`
    with a static ``schedule_into(view, out)`` is compiled and called from the loop) on the compiled event loop and
    returns a :class:`SimulationResult`; :class:`SimulationError` reports an invalid workload or decision.
Runs (what ``wattsched simulate`` does, with its option names and defaults; docs/api.md)
    :func:`run_policy` reads, simulates, adds the job and system metrics and, with a :class:`PowerSetup` (built by
    :func:`power_setup` from ``simulate``'s power options), the power timeline and metrics, into a
    :class:`RunOutput` (``run.metrics`` / ``run.power_metrics``: :class:`Metrics` as attributes; ``run.plot()``);
    :func:`write_run` writes it; :func:`workload_window` cuts one window of a trace;
    :class:`IgnoredOptionWarning`: an option that has no effect on the run.
Power
    :class:`Platform` (node idle/max power) and :func:`load_platform` (a preset name or a TOML file);
    :class:`PowerCapSchedule` (a constant or time-varying cap); :class:`PowerSetup` (platform, power check, estimate
    source and cap of a power-aware run); :class:`PowerCheck` (``PowerCheck.named("gaussian95")``, with the
    reservation options); :class:`CheckRule` and :func:`register_check` declare a new check.
Predictors (online: each learns only from the jobs finished before a submission)
    power: :class:`HistoryPowerPredictor` (:class:`HistoryConfig`), :class:`WeeklyMLPowerPredictor`
    (:class:`MLPowerConfig`), :class:`GlobalMeanPowerPredictor`; runtime: :class:`WalltimePredictor`,
    :class:`LastTwoPredictor`, :class:`RuleCascadePredictor`, :class:`OraclePredictor`; by name:
    :func:`make_power_predictor`, :func:`make_runtime_predictor` (the registry: ``wattsched predict list``);
    evaluated over a workload: :func:`run_power_prediction`, :func:`run_runtime_prediction`.
    :class:`OnlinePredictor` is the protocol, :class:`PredictorBase` a base class with the optional members'
    defaults.
Campaigns (grids of runs of any kind, resumable, here, on local processes or on Dask)
    :func:`load_experiment` reads a campaign file of any kind (power, queue, dispatch, eamc, rmap) and
    :func:`parse_experiment` its data, into an :class:`Experiment`; :func:`run_experiment` runs what is not done yet
    and returns a :class:`CampaignRun`; :func:`load_results` collects the finished runs into one table;
    :class:`CampaignError`: a campaign that cannot run. Status and reports: ``wattsched.campaign.runner``.

The names resolve on first use (PEP 562), so ``import wattsched`` stays cheap and loads neither numba's compiled
policies nor scikit-learn until they are needed. Everything else lives in the subpackages (``wattsched.workload``,
``wattsched.engine``, ``wattsched.power``, ``wattsched.studies``, ...; see docs/architecture.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wattsched.core import numba_cache as _numba_cache
from wattsched.core.lazy_names import lazy_getattr as _lazy_getattr

_numba_cache.configure()
_numba_cache.defer_blas_check()

__version__ = "0.1.0"

#: Public name → the module that defines it.
_EXPORTS: dict[str, str] = {
    "load_workload": "wattsched.workload.load",
    "save_workload": "wattsched.workload.save",
    "ReadResult": "wattsched.core.schema",
    "WorkloadError": "wattsched.core.schema",
    "simulate": "wattsched.engine.simulate",
    "SimulationResult": "wattsched.engine.simulate",
    "SimulationError": "wattsched.engine.simulate",
    "Policy": "wattsched.core.policy",
    "View": "wattsched.core.policy",
    "PolicyBase": "wattsched.core.policy",
    "CompiledPolicyBase": "wattsched.core.policy",
    "run_policy": "wattsched.runs",
    "write_run": "wattsched.runs",
    "workload_window": "wattsched.runs",
    "RunOutput": "wattsched.runs",
    "Metrics": "wattsched.runs",
    "power_setup": "wattsched.runs",
    "IgnoredOptionWarning": "wattsched.runs",
    "Platform": "wattsched.power.platform",
    "PowerCapSchedule": "wattsched.power.platform",
    "load_platform": "wattsched.power.platform",
    "PowerSetup": "wattsched.power.run",
    "PowerCheck": "wattsched.policies.powercheck",
    "CheckRule": "wattsched.policies.powercheck",
    "register_check": "wattsched.policies.powercheck",
    "OnlinePredictor": "wattsched.core.predictor",
    "PredictorBase": "wattsched.core.predictor",
    "HistoryConfig": "wattsched.predict.power_history",
    "HistoryPowerPredictor": "wattsched.predict.power_history",
    "MLPowerConfig": "wattsched.predict.power_ml",
    "WeeklyMLPowerPredictor": "wattsched.predict.power_ml",
    "GlobalMeanPowerPredictor": "wattsched.predict.power_history",
    "WalltimePredictor": "wattsched.predict.runtime",
    "LastTwoPredictor": "wattsched.predict.runtime",
    "RuleCascadePredictor": "wattsched.predict.runtime",
    "OraclePredictor": "wattsched.predict.runtime",
    "make_power_predictor": "wattsched.predict.registry",
    "make_runtime_predictor": "wattsched.predict.registry",
    "run_power_prediction": "wattsched.predict.run",
    "run_runtime_prediction": "wattsched.predict.run",
    "Experiment": "wattsched.core.experiment",
    "CampaignError": "wattsched.core.store",
    "load_experiment": "wattsched.campaign.kinds",
    "parse_experiment": "wattsched.campaign.kinds",
    "run_experiment": "wattsched.campaign.runner",
    "load_results": "wattsched.campaign.runner",
    "CampaignRun": "wattsched.campaign.runner",
}

__all__ = [
    "CampaignError",
    "CampaignRun",
    "CheckRule",
    "CompiledPolicyBase",
    "Experiment",
    "GlobalMeanPowerPredictor",
    "HistoryConfig",
    "HistoryPowerPredictor",
    "IgnoredOptionWarning",
    "LastTwoPredictor",
    "MLPowerConfig",
    "Metrics",
    "OnlinePredictor",
    "OraclePredictor",
    "Platform",
    "Policy",
    "PolicyBase",
    "PowerCapSchedule",
    "PowerCheck",
    "PowerSetup",
    "PredictorBase",
    "ReadResult",
    "RuleCascadePredictor",
    "RunOutput",
    "SimulationError",
    "SimulationResult",
    "View",
    "WalltimePredictor",
    "WeeklyMLPowerPredictor",
    "WorkloadError",
    "__version__",
    "load_experiment",
    "load_platform",
    "load_results",
    "load_workload",
    "make_power_predictor",
    "make_runtime_predictor",
    "parse_experiment",
    "power_setup",
    "register_check",
    "run_experiment",
    "run_policy",
    "run_power_prediction",
    "run_runtime_prediction",
    "save_workload",
    "simulate",
    "workload_window",
    "write_run",
]

if TYPE_CHECKING:  # the same names, for type checkers and editors
    from wattsched.campaign.kinds import load_experiment, parse_experiment
    from wattsched.campaign.runner import CampaignRun, load_results, run_experiment
    from wattsched.core.experiment import Experiment
    from wattsched.core.policy import CompiledPolicyBase, Policy, PolicyBase, View
    from wattsched.core.predictor import OnlinePredictor, PredictorBase
    from wattsched.core.schema import ReadResult, WorkloadError
    from wattsched.core.store import CampaignError
    from wattsched.engine.simulate import SimulationError, SimulationResult, simulate
    from wattsched.policies.powercheck import CheckRule, PowerCheck, register_check
    from wattsched.power.platform import Platform, PowerCapSchedule, load_platform
    from wattsched.power.run import PowerSetup
    from wattsched.predict.power_history import GlobalMeanPowerPredictor, HistoryConfig, HistoryPowerPredictor
    from wattsched.predict.power_ml import MLPowerConfig, WeeklyMLPowerPredictor
    from wattsched.predict.registry import make_power_predictor, make_runtime_predictor
    from wattsched.predict.run import run_power_prediction, run_runtime_prediction
    from wattsched.predict.runtime import LastTwoPredictor, OraclePredictor, RuleCascadePredictor, WalltimePredictor
    from wattsched.runs import (
        IgnoredOptionWarning,
        Metrics,
        RunOutput,
        power_setup,
        run_policy,
        workload_window,
        write_run,
    )
    from wattsched.workload.load import load_workload
    from wattsched.workload.save import save_workload


#: Import a public name's module on first use and keep the name here (PEP 562).
__getattr__ = _lazy_getattr("wattsched", _EXPORTS, keep=globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
