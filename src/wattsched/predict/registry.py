"""Every online predictor by name: the one list the verbs, the CLI, the simulator's online options and the
campaign specs read their choices from (docs/prediction.md, "Predictors").

An entry gives a predictor's kind (``power``: per-node watts, ``pred_power_*``; ``runtime``: seconds,
``pred_runtime``), a one-line description, whether it needs scikit-learn, and its factory. Importing this module
loads no predictor: the factories import their module when called, so that ``wattsched --help`` (which prints
the choices) loads neither the compiled predictors nor scikit-learn, and the history and runtime predictors
never load scikit-learn.

Factory options. Power predictors take ``history`` (a :class:`~wattsched.predict.power_history.HistoryConfig`,
or None for its defaults): the history predictor and the global mean take nothing else; the ``ml-*`` models take
:class:`~wattsched.predict.power_ml.MLPowerConfig` fields. Runtime predictors take their constructor's arguments
(``rules``: ``min_prefix``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from wattsched.core.predictor import OnlinePredictor
    from wattsched.predict.power_history import HistoryConfig

__all__ = [
    "POWER_PREDICTORS",
    "PREDICTORS",
    "RUNTIME_PREDICTORS",
    "PredictorEntry",
    "PredictorKind",
    "make_power_predictor",
    "make_predictor",
    "make_runtime_predictor",
    "predictor_entry",
    "predictor_names",
]

PredictorKind = Literal["power", "runtime"]


@dataclass(frozen=True)
class PredictorEntry:
    """One registered predictor: ``factory(**options)`` builds a fresh, unbound one."""

    name: str
    kind: PredictorKind
    description: str
    needs_sklearn: bool
    factory: Callable[..., OnlinePredictor]


def _no_options(name: str, options: dict[str, Any]) -> None:
    if options:
        raise ValueError(f"the {name} predictor takes no options {sorted(options)}")


def _history(history: HistoryConfig | None = None, **options: Any) -> OnlinePredictor:
    _no_options("history", options)
    # deferred: numba-compiled module; the registry is read by `wattsched --help`
    from wattsched.predict.power_history import HistoryPowerPredictor

    return HistoryPowerPredictor(history)


def _global_mean(history: HistoryConfig | None = None, **options: Any) -> OnlinePredictor:
    _no_options("global-mean", options)
    # deferred: numba-compiled module; the registry is read by `wattsched --help`
    from wattsched.predict.power_history import GlobalMeanPowerPredictor

    return GlobalMeanPowerPredictor(history)


def _weekly_ml(model: str) -> Callable[..., OnlinePredictor]:
    def factory(history: HistoryConfig | None = None, **options: Any) -> OnlinePredictor:
        # deferred: scikit-learn, loaded only when an ML model is asked for
        from wattsched.predict.power_history import HistoryConfig
        from wattsched.predict.power_ml import MLPowerConfig, WeeklyMLPowerPredictor

        return WeeklyMLPowerPredictor(model, MLPowerConfig(history=history or HistoryConfig(), **options))

    return factory


def _runtime(name: str) -> Callable[..., OnlinePredictor]:
    def factory(**options: Any) -> OnlinePredictor:
        # deferred: the runtime module loads the replay (numba); the registry is read by `wattsched --help`
        from wattsched.predict import runtime

        classes: dict[str, Callable[..., OnlinePredictor]] = {
            "walltime": runtime.WalltimePredictor,
            "oracle": runtime.OraclePredictor,
            "last2": runtime.LastTwoPredictor,
            "rules": runtime.RuleCascadePredictor,
        }
        return classes[name](**options)

    return factory


_ENTRIES = (
    PredictorEntry(
        "global-mean", "power", "mean of each metric over every job completed so far, all users", False, _global_mean
    ),
    PredictorEntry(
        "history", "power", "the user's completed jobs, recency-weighted (paper 000, Eq. 1–3)", False, _history
    ),
    PredictorEntry(
        "ml-linear",
        "power",
        "weekly-retrained linear regression on Table 2 features (paper 000)",
        True,
        _weekly_ml("ml-linear"),
    ),
    PredictorEntry("ml-forest", "power", "weekly-retrained random forest (paper 000)", True, _weekly_ml("ml-forest")),
    PredictorEntry(
        "ml-svr", "power", "weekly-retrained linear support vector regression (paper 000)", True, _weekly_ml("ml-svr")
    ),
    PredictorEntry("ml-sgd", "power", "weekly-retrained SGD linear regression (paper 000)", True, _weekly_ml("ml-sgd")),
    PredictorEntry("walltime", "runtime", "the requested walltime (the baseline to beat)", False, _runtime("walltime")),
    PredictorEntry(
        "oracle", "runtime", "the true runtime (reads the truth on purpose: the bound)", False, _runtime("oracle")
    ),
    PredictorEntry(
        "last2", "runtime", "mean of the user's last two completed runtimes (Tsafrir et al.)", False, _runtime("last2")
    ),
    PredictorEntry("rules", "runtime", "the rule cascade over job profiles (paper 001, §3)", False, _runtime("rules")),
)

#: Every predictor by name, power first, in the order they are listed.
PREDICTORS: dict[str, PredictorEntry] = {e.name: e for e in _ENTRIES}


def predictor_names(kind: PredictorKind | None = None) -> tuple[str, ...]:
    """The registered names (of one kind, or all), in registry order."""
    return tuple(name for name, e in PREDICTORS.items() if kind is None or e.kind == kind)


#: The power predictor names (``predict power --method``, ``--online-power``, a campaign's ``prediction.method``).
POWER_PREDICTORS = predictor_names("power")
#: The runtime predictor names (``predict runtime --method``, ``--online-runtime``).
RUNTIME_PREDICTORS = predictor_names("runtime")

_UNKNOWN = {
    "power": "unknown power prediction method",
    "runtime": "unknown runtime predictor",
    None: "unknown predictor",
}


def predictor_entry(name: str, kind: PredictorKind | None = None) -> PredictorEntry:
    """The entry of ``name`` (of ``kind`` when given); a ValueError that lists the choices otherwise."""
    entry = PREDICTORS.get(name)
    if entry is None or (kind is not None and entry.kind != kind):
        raise ValueError(f"{_UNKNOWN[kind]} {name!r}; choose from {', '.join(predictor_names(kind))}")
    return entry


def make_predictor(name: str, **options: Any) -> OnlinePredictor:
    """A fresh predictor by name, any kind (``options`` as the module docstring says)."""
    return predictor_entry(name).factory(**options)


def make_power_predictor(method: str, *, history: HistoryConfig | None = None, **options: Any) -> OnlinePredictor:
    """A power predictor by name (:data:`POWER_PREDICTORS`): ``history`` configures the history predictor, the
    global mean, and the ML models' lag features and fallbacks; ``options`` are the ML models' config fields."""
    return predictor_entry(method, "power").factory(history=history, **options)


def make_runtime_predictor(method: str, **options: Any) -> OnlinePredictor:
    """A runtime predictor by name (:data:`RUNTIME_PREDICTORS`); ``options`` go to its constructor."""
    return predictor_entry(method, "runtime").factory(**options)
