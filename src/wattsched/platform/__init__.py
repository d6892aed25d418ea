"""Platforms (node counts, idle and peak power) and power-cap schedules (reference spec §1.3, §1.7)."""

from wattsched.platform.power import (
    PLATFORMS,
    CapBasis,
    Platform,
    PowerCapSchedule,
    PowerConfigError,
    job_dynamic_estimates,
    load_cap_file,
    load_platform,
    naive_estimates,
    parse_cap,
    platform_from_dict,
    resolve_cap,
)

__all__ = [
    "PLATFORMS",
    "CapBasis",
    "Platform",
    "PowerCapSchedule",
    "PowerConfigError",
    "job_dynamic_estimates",
    "load_cap_file",
    "load_platform",
    "naive_estimates",
    "parse_cap",
    "platform_from_dict",
    "resolve_cap",
]
