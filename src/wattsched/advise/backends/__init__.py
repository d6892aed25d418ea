"""The advisor's hands on a Slurm cluster: a :class:`Backend` observes the queue, the ended jobs, node power and the
power license, and applies the advisor's actions.

Two backends, chosen by the configuration's ``backend`` table: :class:`~wattsched.advise.backends.cli.SlurmCLI`
(the Slurm tools with ``--json``, the default: nothing to set up beyond the client tools and ``SLURM_CONF``) and
:class:`~wattsched.advise.backends.rest.SlurmREST` (slurmrestd v0.0.38 with a JWT). Both parse answers with the same
pure functions (:mod:`wattsched.advise.backends.parse`). Only Slurm 22.05 is known: its JSON was recorded on a live
cluster (tests/data/slurm-22.05); other versions are refused at :meth:`Backend.probe` with one line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from wattsched.advise.records import Action, Observation

#: Slurm releases whose JSON layout was recorded and tested (major.minor).
SUPPORTED_SLURM = ("22.05",)
#: Seconds before a Slurm command or request counts as no answer (SlurmUnavailable).
DEFAULT_TIMEOUT = 10.0
#: How far back the first observation looks for ended jobs when the store has no cursor yet (seconds, 7 days).
DEFAULT_LOOKBACK = 7 * 86_400.0
#: Name of the reservation that holds a constant budget below a local license's total; time windows add
#: ``-<epoch start>``.
CAP_RESERVATION = "wattsched-cap"


class BackendError(RuntimeError):
    """The backend cannot work at all (tool missing, Slurm version unknown, no power license, bad setting):
    one line saying what to do; the advisor stops instead of retrying."""


@runtime_checkable
class Backend(Protocol):
    """What the advisor's loop needs from a cluster."""

    license_name: str  # the power license ("power" or "power@server"), known after probe()

    def probe(self) -> str:
        """The Slurm version (e.g. ``22.05.8``) after checking it is a known one and finding the power license;
        :class:`BackendError` otherwise, :class:`SlurmUnavailable` when Slurm does not answer."""
        ...

    def observe(self, since: float | None) -> Observation:
        """Pending and running jobs, jobs ended at or after ``since`` (epoch seconds; None = the lookback), node
        power and the power license, in one look."""
        ...

    def apply(self, action: Action) -> None:
        """Carry out one action; raises SlurmUnavailable (no answer: retry later) or SlurmAnswerError (Slurm
        refused it: the job finished, the value is invalid...)."""
        ...

    def schedule_budget(self, changes: list[tuple[float, int]]) -> None:
        """Compile future budget changes ``[(epoch start, watts), ...]`` into license reservations so the cap
        holds while the advisor is down; reconciles the ``wattsched-cap-*`` reservations."""
        ...


def parse_version(text: str) -> str:
    """``22.05.8`` out of ``slurm-wlm 22.05.8`` / ``slurm 22.05.8`` (BackendError when there is none)."""
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", text)
    if not m:
        raise BackendError(f"cannot read a Slurm version in {text.strip()[:60]!r}")
    return m.group(0)


def check_version(version: str) -> str:
    """The version itself when its major.minor is supported; one-line BackendError otherwise."""
    major_minor = ".".join(version.split(".")[:2])
    if major_minor not in SUPPORTED_SLURM:
        raise BackendError(
            f"Slurm {version}: the advisor knows the JSON of Slurm {', '.join(SUPPORTED_SLURM)} only; "
            f"{major_minor} is untested (its squeue/sacct JSON layout changed in 23.02 and 24.05)"
        )
    return version


def _setting(config: Mapping[str, Any] | object | None, key: str, default: Any = None) -> Any:
    if config is None:
        return default
    if isinstance(config, Mapping):
        return config.get(key, default)
    return getattr(config, key, default)


def make_backend(config_backend: Mapping[str, Any] | object | None, env: Mapping[str, str]) -> Backend:
    """The backend a configuration asks for: ``kind`` ``cli`` (default) or ``rest``; ``timeout`` seconds;
    ``license`` (the power license's name, found when unset); ``slurm_conf`` (else ``SLURM_CONF`` of ``env``);
    ``lookback`` seconds; for rest ``url`` (else ``SLURMRESTD_URL``), ``token`` (else ``SLURM_JWT`` of ``env``, else
    ``scontrol token``) and ``user`` (the token's user, else ``SLURM_JWT_USER``, else the current user)."""
    kind = str(_setting(config_backend, "kind", _setting(config_backend, "type", "cli")) or "cli").lower()
    timeout = float(_setting(config_backend, "timeout", DEFAULT_TIMEOUT) or DEFAULT_TIMEOUT)
    if not timeout > 0:
        raise BackendError(f"backend.timeout {timeout} is not a positive number of seconds")
    common = {
        "timeout": timeout,
        "license_name": _setting(config_backend, "license"),
        "slurm_conf": _setting(config_backend, "slurm_conf") or env.get("SLURM_CONF"),
        "lookback": float(_setting(config_backend, "lookback", DEFAULT_LOOKBACK) or DEFAULT_LOOKBACK),
        "env": env,
    }
    if kind == "cli":
        from wattsched.advise.backends.cli import SlurmCLI

        return SlurmCLI(**common)
    if kind == "rest":
        from wattsched.advise.backends.rest import SlurmREST

        url = _setting(config_backend, "url") or env.get("SLURMRESTD_URL")
        if not url:
            raise BackendError("backend kind rest needs backend.url (e.g. http://127.0.0.1:6820) or SLURMRESTD_URL")
        return SlurmREST(str(url), _setting(config_backend, "token"), user=_setting(config_backend, "user"), **common)
    raise BackendError(f"backend.kind {kind!r} is not one of: cli, rest")
