"""Platform files, as ``wattsched platforms list`` and ``platforms check`` show them: the presets shipped with
wattsched, and what a preset or a file of one's own describes once its kind's loader has validated it
(docs/platforms.md).

Checking a file means loading it with the loader the simulations use, so a file that passes here is one that
``simulate``, ``rmap``, ``eamc`` and the multi-resource studies accept.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from wattsched.core.platform_file import (
    PLATFORM_KINDS,
    PlatformFileError,
    platform_kind,
    preset_names,
    read_platform_file,
)

__all__ = [
    "PLATFORM_KINDS",
    "PlatformDescription",
    "PlatformFileError",
    "PlatformPreset",
    "describe_platform",
    "platform_kind",
    "platform_presets",
]


class PlatformPreset(NamedTuple):
    """One preset shipped with wattsched: its name (what ``--platform`` takes), its kind and its description."""

    name: str
    kind: str
    description: str


def platform_presets() -> list[PlatformPreset]:
    """Every preset shipped with wattsched, kind by kind (in :data:`PLATFORM_KINDS`' order), sorted by name
    within a kind."""
    return [
        PlatformPreset(name, kind, read_platform_file(name, kind).description)
        for kind in PLATFORM_KINDS
        for name in preset_names(kind)
    ]


@dataclass(frozen=True)
class PlatformDescription:
    """What a platform describes, as ``platforms check`` prints it: its kind and (field, value) rows, the values
    formatted for reading (units included)."""

    platform: str
    kind: str
    rows: list[tuple[str, str]]

    @property
    def fields(self) -> dict[str, str]:
        """The rows as a mapping, field → value."""
        return dict(self.rows)


def describe_platform(platform: str | Path, data_dir: str | Path | None = None) -> PlatformDescription:
    """Validate ``platform`` (a preset name or a ``.toml``/``.yaml`` file) with the loader of its kind and say
    what it describes. A ``dvfs`` platform's coefficients are read, and so checked, only with ``data_dir`` (the
    EAMC ``en_conf`` data directory); without it the partitions are listed from the file alone. A
    :class:`PlatformFileError` with a one-line message for a platform that cannot be used."""
    kind = platform_kind(platform)
    return PlatformDescription(str(platform), kind, _describe(kind, platform, data_dir))


def _describe(kind: str, platform: str | Path, data_dir: str | Path | None) -> list[tuple[str, str]]:
    """What a platform of ``kind`` describes, as (field, value) rows; loading it validates it."""
    # deferred below: each kind's loader imports its study (numpy, pydantic); only that kind's is needed
    if kind == "power":
        from wattsched.power.platform import load_platform

        p = load_platform(platform)
        return [
            ("name", p.name),
            ("nodes", f"{p.nodes:,}"),
            ("idle / max node power", f"{p.idle_watts:,.1f} / {p.max_node_watts:,.1f} W"),
            ("max platform power", f"{p.max_platform_watts:,.0f} W"),
            ("dynamic range (basis of caps)", f"{p.dynamic_range:,.0f} W"),
        ]
    if kind == "multires":
        from wattsched.studies.multires.nodes import load_pool_platform

        spec = load_pool_platform(platform)
        pool = spec.pool()
        return [
            ("name", spec.name),
            ("nodes", f"{pool.n_nodes:,} in {len(spec.groups)} group(s), {int(pool.reserved.sum())} reserved"),
            *((f"total {r}", f"{t:,}") for r, t in zip(pool.resources, pool.totals().tolist(), strict=True)),
            ("necessary", ", ".join(spec.necessary)),
            ("queues (max wait, s)", ", ".join(f"{q} {w:g}" for q, w in spec.queues.items()) or "none"),
            ("default expected wait", f"{spec.default_ewt:g} s"),
        ]
    if kind == "dvfs":
        from wattsched.studies.eamc.dvfs import load_dvfs_file, load_dvfs_platform

        facts, _, _ = load_dvfs_file(platform)
        rows = [("name", facts.name), ("conf", facts.conf), ("primary", facts.primary or facts.partitions[0].name)]
        if data_dir is None:
            rows += [
                (p.name, f"{p.nodes} nodes, module {p.module_id}, {p.freq_min:g}–{p.freq_nominal:g} GHz")
                for p in facts.partitions
            ]
            return [*rows, ("coefficients", "not checked (give --data-dir)")]
        machine = load_dvfs_platform(platform, data_dir)
        return rows + [
            (p.name, f"{p.nodes} nodes, module {p.module_id}, {p.n_frequencies} frequencies {p.pstates[0]:g}–"
             f"{p.f_max:g} GHz, reference {p.f_ref:g} GHz")
            for p in machine
        ]  # fmt: skip
    from wattsched.studies.rmap.hardware import load_rmap_platform

    m, socket = load_rmap_platform(platform)
    return [
        ("name", m.name),
        ("nodes", f"{m.nodes} × {m.sockets_per_node} sockets × {m.cores_per_socket} cores"),
        ("configurations", f"{m.grid_size} ({len(m.node_counts)} node counts × {len(m.core_counts)} core counts × "
                           f"{len(m.caps)} caps)"),
        ("socket caps", ", ".join(f"{c:g}" for c in m.caps) + " W"),
        ("worst case", f"{m.worst_case_watts:,.0f} W"),
        ("socket frequencies", f"{socket.f_min:g}–{socket.f_nominal:g} GHz, turbo at ≥ {socket.turbo_cap:g} W"),
    ]  # fmt: skip
