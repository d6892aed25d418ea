"""The Slurm power advisor as functions: its configuration, the live loop (or one cycle), the offline what-if on a
recorded sacct history, and what the running advisor last saw; what ``wattsched advise`` and ``wattsched advise
status`` do, with their option names and defaults (docs/advisor.md).

Nothing here prints: a long-running advisor tells its caller what happens through the callbacks of
:func:`advise_run`, and every other function returns its result. Errors a user can fix (a bad option, a refused
file, another advisor on the state) are :class:`AdviseError`, :class:`AdvisorConfigError` or
:class:`StatusError`, one line each.

Importing this module stays cheap (``advise status`` and ``--print-job-submit-lua`` need no engine): the
advisor's loop, configuration and replay, which load polars, pydantic and numba, are imported by the functions
that use them, and their types resolve on first use (PEP 562).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from wattsched.advise.status import AdvisorStatus, StatusError, read_status
from wattsched.core.lazy_names import lazy_getattr
from wattsched.core.stopping import interruptions

if TYPE_CHECKING:  # heavy (polars, pydantic, numba): resolved on first use by __getattr__ below
    from importlib.resources.abc import Traversable

    from wattsched.advise.backends import Backend
    from wattsched.advise.config import AdvisorConfig, AdvisorConfigError
    from wattsched.advise.loop import CycleResult, Sleeper
    from wattsched.advise.replay import ReplayError, ReplayResult
    from wattsched.advise.store import AdvisorStore

__all__ = [
    "AdviseError",
    "AdviseRun",
    "AdvisorConfig",
    "AdvisorConfigError",
    "AdvisorStatus",
    "CycleResult",
    "ReplayError",
    "ReplayResult",
    "StatusError",
    "advise_config",
    "advise_replay",
    "advise_run",
    "advise_status",
    "job_submit_lua",
    "write_advise_replay",
]

#: The toolkit types re-exported here without importing their (heavy) modules with this one.
_LAZY = {
    "AdvisorConfig": "wattsched.advise.config",
    "AdvisorConfigError": "wattsched.advise.config",
    "CycleResult": "wattsched.advise.loop",
    "ReplayError": "wattsched.advise.replay",
    "ReplayResult": "wattsched.advise.replay",
}


#: A re-exported toolkit type, its module imported on first use (PEP 562).
__getattr__ = lazy_getattr(__name__, _LAZY, keep=globals())


class AdviseError(ValueError):
    """The advisor cannot start, or the replay cannot run, and nothing was sent to Slurm: its backend, state,
    lock or actions log was refused, another advisor holds the state (``--once``), the replay has no cap or no
    history, or ``advise status`` has no status file to read. One line saying why and what to give."""


@dataclass(frozen=True)
class AdviseRun:
    """What one ``advise`` run did, for its caller to report: how many cycles, on which state, in which mode;
    whether it stopped on Ctrl-C or SIGTERM (``interrupted``) and in which role (``standby``: it never took over
    from the advisor holding the state); ``--once``'s cycle; the files of shadow mode's report, written on stop."""

    state: Path
    mode: str
    cycles: int
    role: Literal["active", "standby"] = "active"
    interrupted: bool = False
    cycle: CycleResult | None = None
    report_files: list[Path] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """The command's JSON summary: ``--once``'s cycle, else the cycle count, the state file and the mode, and
        the role of a standby stopped before it took over."""
        if self.cycle is not None:
            return self.cycle.as_json()
        out: dict[str, Any] = {"cycles": self.cycles, "state": str(self.state), "mode": self.mode}
        return out | {"role": "standby"} if self.role == "standby" else out


def advise_config(
    config: Path | None = None,
    *,
    cap: str | float | None = None,
    mode: str | None = None,
    interval: float | None = None,
    state: Path | None = None,
    backend: str | None = None,
    url: str | None = None,
    status_file: Path | None = None,
    metrics_port: int | None = None,
    report_dir: Path | None = None,
    on_overshoot: str | None = None,
) -> AdvisorConfig:
    """The advisor's configuration: the TOML file ``config`` (None: defaults only) with the options given on top
    (None: not given, the file's value or the default holds), so that the command line and a Python caller build
    the same one. ``backend`` and ``url`` set ``[backend] kind`` and ``url``. Raises :class:`AdvisorConfigError`
    (one line naming the file, the key and why), e.g. when no cap is given at all."""
    from wattsched.advise.config import load_config

    options = {
        "cap": cap, "mode": mode, "interval": interval, "state": state, "backend__kind": backend,
        "backend__url": url, "status_file": status_file, "metrics_port": metrics_port, "report_dir": report_dir,
        "on_overshoot": on_overshoot,
    }  # fmt: skip
    return load_config(config, **{key: value for key, value in options.items() if value is not None})


def job_submit_lua() -> Traversable:
    """The ``job_submit.lua`` shipped with the toolkit (``.read_text()`` it, or copy it next to slurm.conf): it
    gives each job its default power license at submit, which the advisor then corrects (docs/advisor.md)."""
    from wattsched.advise.slurm import job_submit_lua as shipped

    return shipped()


def advise_replay(dump: Path, cfg: AdvisorConfig) -> ReplayResult:
    """The offline what-if: the advisor's decisions under ``cfg``'s cap on the recorded sacct history ``dump``
    (``sacct --json`` or ``-P``), simulated with and without the cap; nothing is sent to Slurm. Checked first, so
    that a mistake costs no parse: :class:`AdviseError` without a cap or without the file."""
    if cfg.cap.at(0.0) is None and not cfg.cap.windows:
        raise AdviseError("--replay needs a cap: give --cap WATTS or a [cap] table in --config")
    if not dump.exists():
        raise AdviseError(f"{dump}: no such file (a recorded `sacct --json` or `sacct -P` history)")
    from wattsched.advise.replay import replay

    return replay(dump, cfg)


def write_advise_replay(result: ReplayResult, report_dir: Path) -> list[Path]:
    """The replay's tables and its figure in ``report_dir``: the paths written (separate from
    :func:`advise_replay` so that its figures can be shown before anything is written)."""
    from wattsched.report.advisor import write_replay_figure

    return [*result.write(report_dir).values(), *write_replay_figure(result, report_dir)]


def advise_run(
    cfg: AdvisorConfig,
    *,
    once: bool = False,
    actions: Path | None = None,
    sleep: Sleeper | None = None,
    env: Mapping[str, str] | None = None,
    on_cycle: Callable[[CycleResult], None] | None = None,
    on_note: Callable[[str], None] | None = None,
    on_standby: Callable[[str], None] | None = None,
    on_active: Callable[[], None] | None = None,
) -> AdviseRun:
    """The live advisor: build the backend, take the state's lock (or wait as a standby while another advisor
    holds it; ``once`` refuses instead), open the store and run one cycle (``once``) or the loop until ``sleep``
    says stop or Ctrl-C or SIGTERM (caught: the run's result says ``interrupted``). Shadow mode writes its report
    to ``cfg.report_dir`` when the loop stops. ``actions``: append every action as a JSON line there (default in
    shadow mode: ``<state>-actions.jsonl`` beside the state).

    A caller shows progress through the callbacks: ``on_cycle`` after each cycle, ``on_note`` with the advisor's
    warnings, ``on_standby`` with each standby line, ``on_active`` once the lock is held and the store open, just
    before the first cycle. ``sleep`` waits between cycles and returns True to stop (default: ``time.sleep``,
    never stops); ``env`` is where the backend finds ``SLURM_CONF``, tokens... (default: this process's).

    Raises :class:`AdviseError` when it cannot start: before it sends anything to Slurm or opens the store."""
    from wattsched.advise.backends import BackendError, make_backend
    from wattsched.advise.lock import AdvisorLock, stand_by
    from wattsched.advise.records import SlurmAnswerError, SlurmUnavailable
    from wattsched.core.safe_files import UnsafeFileError, check_existing

    env = os.environ if env is None else env
    sleep = sleep if sleep is not None else _sleep
    try:  # the top-level `license` key names the power license (else "power" or "power@<server>" is found)
        settings = cfg.backend.model_dump() | {"license": cfg.license}
        if settings["token"] is None and settings["token_env"]:
            settings["token"] = env.get(settings["token_env"])
        slurm = make_backend(settings, env)
    except (BackendError, SlurmUnavailable, SlurmAnswerError, ValueError) as exc:
        raise AdviseError(str(exc)) from exc
    state = Path(cfg.state)
    if actions is None and cfg.mode == "shadow":
        actions = state.with_name(state.stem + "-actions.jsonl")
    lock = AdvisorLock(state)
    try:  # before anything is written: a state, lock or actions log planted by someone else is refused
        if actions is not None:
            check_existing(actions, "actions log")
        acquired = lock.try_acquire()
    except UnsafeFileError as exc:
        raise AdviseError(str(exc)) from exc
    if not acquired and once:
        holder = lock.holder()
        raise AdviseError(
            f"{state} is held by the active advisor, {f'pid {holder}' if holder else 'another process'} "
            f"(lock {lock.path}): --once acts only when no other advisor runs on this state"
        )
    if not acquired:
        standby = AdviseRun(state=state, mode=cfg.mode, cycles=0, role="standby")
        try:
            if not stand_by(lock, sleep, status_file=cfg.status_file, mode=cfg.mode, on_line=on_standby):
                return standby  # `sleep` said stop before the lock came free
        except interruptions():
            return AdviseRun(state=state, mode=cfg.mode, cycles=0, role="standby", interrupted=True)
    with lock:
        return _active(
            cfg, slurm, state, once=once, actions=actions, sleep=sleep, on_cycle=on_cycle, on_note=on_note,
            on_active=on_active,
        )  # fmt: skip


def _sleep(seconds: float) -> bool:
    """The command line's pause between cycles: it never asks to stop (Ctrl-C and SIGTERM do)."""
    time.sleep(seconds)
    return False


def _active(
    cfg: AdvisorConfig,
    slurm: Backend,
    state: Path,
    *,
    once: bool,
    actions: Path | None,
    sleep: Sleeper,
    on_cycle: Callable[[CycleResult], None] | None,
    on_note: Callable[[str], None] | None,
    on_active: Callable[[], None] | None,
) -> AdviseRun:
    """The active advisor, the lock held: the store, the metrics server (bound only now: a standby given the same
    port would fail to bind it), one cycle or the loop, and shadow mode's report when the loop stops."""
    from wattsched.advise.loop import Advisor, Metrics
    from wattsched.advise.store import AdvisorStore, StoreError

    metrics = Metrics() if cfg.metrics_port else None
    if metrics is not None:
        metrics.serve(int(cfg.metrics_port or 0))

    def cycled(result: CycleResult) -> None:
        if metrics is not None:
            metrics.update(result)
        if on_cycle is not None:
            on_cycle(result)

    try:
        store = AdvisorStore(state)
    except StoreError as exc:
        raise AdviseError(str(exc)) from exc
    report_files: list[Path] = []
    interrupted = False
    cycle: CycleResult | None = None
    with store:
        advisor = Advisor(cfg, slurm, store, actions_log=actions, on_cycle=cycled, on_note=on_note)
        try:
            if on_active is not None:
                on_active()
            if once:
                cycle = advisor.cycle()
            else:
                advisor.run(sleep)
        except interruptions():
            interrupted = True
        finally:
            advisor.close()  # alert commands still running are stopped: nothing is left behind
            if cfg.mode == "shadow" and cfg.report_dir is not None and not once:
                report_files = _write_shadow_report(store, Path(cfg.report_dir))
        return AdviseRun(
            state=state, mode=cfg.mode, cycles=advisor.cycles, interrupted=interrupted, cycle=cycle,
            report_files=report_files,
        )  # fmt: skip


def _write_shadow_report(store: AdvisorStore, folder: Path) -> list[Path]:
    """Shadow mode's report in ``folder`` (predicted power against the cap, the jobs it would have delayed or
    advanced): the paths written."""
    from wattsched.advise.shadow_report import shadow_report, write_shadow_report
    from wattsched.report.advisor import write_shadow_figure

    report = shadow_report(store)
    return [*write_shadow_report(report, folder).values(), *write_shadow_figure(report, folder)]


def advise_status(status_file: Path | None = None, *, config: Path | None = None) -> AdvisorStatus:
    """What the running advisor last saw, from its status file (written atomically each cycle): it answers
    without asking Slurm or locking the state. ``status_file``, else the ``status_file`` key of the configuration
    ``config``. Raises :class:`AdviseError` when neither names one, :class:`AdvisorConfigError` for a bad
    configuration, :class:`StatusError` when the file is missing or not the advisor's."""
    path = status_file
    if path is None and config is not None:
        path = advise_config(config, cap=0).status_file  # the cap is not needed to find the file
    if path is None:
        raise AdviseError(
            "give --status-file FILE (the advisor's --status-file) or --config FILE with a status_file key"
        )
    return read_status(Path(path))
