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
    from wattsched.api.platforms import platform_presets

    rows = platform_presets()
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
    from wattsched.api.platforms import PlatformFileError, describe_platform

    try:
        described = describe_platform(platform, data_dir)
    except PlatformFileError as exc:
        fail(str(exc))
    emit_json({"platform": platform, "kind": described.kind, "fields": described.fields})
    table = Table(title=f"{platform} ({described.kind})")
    table.add_column("field")
    table.add_column("value")
    for field, value in described.rows:
        table.add_row(field, value)
    console.print(table)
