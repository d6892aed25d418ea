"""The power options of a run, as ``wattsched simulate`` takes them: one function builds the power setup from
them for the command line, the Python API and the campaigns, so that both spellings mean the same run."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wattsched.core.errors import InputWarning
from wattsched.power.defaults import DEFAULT_POST_WINDOW_CAP

if TYPE_CHECKING:  # the power model loads pydantic and SciPy: imported by the runs that use it
    from wattsched.power.platform import CapBasis
    from wattsched.power.run import PowerSetup

__all__ = ["DEFAULT_POST_WINDOW_CAP", "IgnoredOptionWarning", "policy_power_notes", "power_setup"]


class IgnoredOptionWarning(UserWarning):
    """An option that has no effect on the run it was given to (the CLI prints it as a ``warning:`` line)."""


def power_setup(
    platform: str | Path | None,
    check: str | None = None,
    *,
    source: str = "real",
    cap: str | float | None = None,
    window: float | None = None,
    post_window_cap: str | float | None = None,
    cap_file: str | Path | None = None,
    reservation: str = "nodes",
    knapsack: str = "stop",
    cap_basis: CapBasis = "dynamic",
    subtract_idle: bool = True,
    sigma_scaling: str = "nodes",
) -> PowerSetup | None:
    """The power setup ``wattsched simulate``'s power options describe (same names, same defaults), or None
    when none is given (a power-free run).

    ``platform``: a preset name or a TOML file; ``check``: a registered power check (default ``none``: the power
    is measured, nothing is checked); ``cap``: a fraction of the platform's dynamic range (``cap_basis``) or watts
    (``"350000W"``); ``window``: the cap holds on ``[0, window)`` s, then ``post_window_cap`` (default
    :data:`~wattsched.power.defaults.DEFAULT_POST_WINDOW_CAP`: no check after it; ``"dynamic_range"`` is the
    paper-000 artifact's value); ``cap_file``: a time-varying cap instead of ``cap``. Half-given options are a
    one-line ValueError naming the missing one; a cap that is not positive or beyond any machine
    (:data:`~wattsched.power.platform.MAX_POWER_W`) too. A cap above what the platform can draw is an
    :class:`~wattsched.core.errors.InputWarning`: harmless, but most likely a typo.
    """
    if all(x is None for x in (platform, check, cap, window, cap_file)):
        return None
    # deferred: the power model loads pydantic and SciPy; power-free runs should not
    from wattsched.policies.powercheck import PowerCheck
    from wattsched.power.platform import (
        PowerCapSchedule,
        cap_beyond_platform,
        load_cap_file,
        load_platform,
        parse_cap,
    )
    from wattsched.power.run import PowerSetup, sigma_scaling_of

    if platform is None:
        raise ValueError("power options need a platform (--platform, e.g. marconi100)")
    plat = load_platform(platform)
    chosen = PowerCheck.named(check or "none", reservation=reservation, knapsack=knapsack)
    if cap is not None and cap_file is not None:
        raise ValueError("give either a cap (--cap) or a cap file (--cap-file), not both")
    schedule = None
    if cap_file is not None:
        schedule = load_cap_file(cap_file, platform=plat, cap_basis=cap_basis)
    elif cap is not None:
        if isinstance(cap, str):
            parse_cap(cap, plat, cap_basis=cap_basis)  # a clear error for a malformed cap before anything runs
        if window is not None:
            schedule = PowerCapSchedule.window(
                cap, plat, window_end=window, post_window_cap=post_window_cap, cap_basis=cap_basis
            )
        else:
            schedule = PowerCapSchedule.constant(cap, plat, cap_basis=cap_basis)
    elif window is not None:
        raise ValueError("a power window (--window) needs a cap (--cap)")
    if chosen.active and schedule is None:
        raise ValueError(f"power check {chosen.name} (--power-check) needs a cap (--cap or --cap-file)")
    beyond = cap_beyond_platform(schedule, plat) if schedule is not None else None
    if beyond is not None:  # likely a typo, but a run it does not break: said, not refused
        warnings.warn(beyond, InputWarning, stacklevel=2)
    return PowerSetup(
        plat,
        chosen,
        source,
        schedule,
        window,
        subtract_idle=subtract_idle,
        sigma_scaling=sigma_scaling_of(sigma_scaling),
        platform_source=str(platform) if isinstance(platform, str | Path) else "",  # named in messages
    )


def policy_power_notes(policy: Any, power: PowerSetup | None, online_power: str | None = None) -> list[str]:
    """What a run of ``policy`` with ``power`` would silently get wrong: a ValueError for a power-aware policy
    without a power setup (it would run as its queue policy) or an online power predictor without one; the
    returned lines name the options that have no effect (a queue policy never asks the power check)."""
    from wattsched.policies.registry import CORE_POLICIES, POLICIES

    if online_power is not None and power is None:
        raise ValueError(
            "an online power predictor (--online-power) needs a power setup: platform, check and cap "
            "(--platform, --power-check and --cap or --cap-file)"
        )
    name = policy.lower() if isinstance(policy, str) else None
    if power is None and name in POLICIES and name not in CORE_POLICIES:
        raise ValueError(
            f"policy {name} checks power: give a power setup (--platform, --power-check and --cap or --cap-file)"
        )
    if power is not None and name in CORE_POLICIES and power.check.active:
        return [
            f"the power check {power.check.name} (--power-check) is ignored: {name} does not check power (the power "
            "and the cap are still measured); use a power-aware policy such as easy-pc"
        ]
    return []
