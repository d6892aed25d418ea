"""``wattsched platforms``: the shipped presets, and a check of a platform file (docs/platforms.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from wattsched.cli.common import console, emit_json, fail

app = typer.Typer(help="Platform files: the presets and your own machines (docs/platforms.md).", no_args_is_help=True)


@app.command("list")
def list_platforms() -> None:
    """The presets shipped with wattsched, one per machine, with their kind."""
    # deferred: only this command needs the reader (pydantic)
    from wattsched.core.platform_file import PLATFORM_KINDS, preset_names, read_platform_file

    rows = [
        (name, kind, read_platform_file(name, kind).description)
        for kind in PLATFORM_KINDS
        for name in preset_names(kind)
    ]
    emit_json({"presets": [{"name": n, "kind": k, "description": d} for n, k, d in rows]})
    table = Table(title="platform presets")
    for column in ("name", "kind", "description"):
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


@app.command("check")
def check_platform(
    platform: Annotated[str, typer.Argument(help="A preset name or a platform file (.toml, .yaml).")],
    data_dir: Annotated[
        Path | None, typer.Option(help="dvfs platforms: the en_conf data directory, to check the coefficients too.")
    ] = None,
) -> None:
    """Validate a platform file (or a preset) with the loader of its kind and print what it describes."""
    # deferred: each kind's loader imports its study (numpy, pydantic)
    from wattsched.core.platform_file import PlatformFileError, platform_kind

    try:
        kind = platform_kind(platform)
        rows = _describe(kind, platform, data_dir)
    except PlatformFileError as exc:
        fail(str(exc))
    emit_json({"platform": platform, "kind": kind, "fields": dict(rows)})
    table = Table(title=f"{platform} ({kind})")
    table.add_column("field")
    table.add_column("value")
    for field, value in rows:
        table.add_row(field, value)
    console.print(table)


def _describe(kind: str, platform: str, data_dir: Path | None) -> list[tuple[str, str]]:
    """What a platform of ``kind`` describes, as (field, value) rows; loading it validates it."""
    # deferred below: each kind's loader imports its study (numpy, pydantic); `wattsched --help` should not
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
