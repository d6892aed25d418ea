"""MkDocs hook: one API reference page per package of ``src/wattsched``, generated at build time.

The pages are not stored in the repository, so a module added, moved or renamed appears in the reference (and in
its navigation) without anyone editing a page. Each page holds a mkdocstrings ``:::`` block per public module
(names without a leading underscore); mkdocstrings reads the docstrings statically (griffe), without importing
the package, so building the docs needs neither numba nor a compiled cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "wattsched"
API_DIR = "api"


def _packages() -> dict[str, list[str]]:
    """``{package: [its public modules]}`` for every package under ``src/wattsched``, in dotted order."""
    out: dict[str, list[str]] = {}
    for init in sorted((ROOT / PACKAGE).rglob("__init__.py")):
        pkg_dir = init.parent
        parts = pkg_dir.relative_to(ROOT).parts
        if any(p.startswith("_") for p in parts):
            continue
        dotted = ".".join(parts)
        modules = [f"{dotted}.{m.stem}" for m in sorted(pkg_dir.glob("*.py")) if not m.stem.startswith("_")]
        out[dotted] = modules
    return out


def _page(package: str, modules: list[str]) -> str:
    lines = [f"# `{package}`", "", f"::: {package}", "    options:", "      members: false", ""]
    for module in modules:
        lines += [f"## `{module}`", "", f"::: {module}", "    options:", "      show_root_heading: false", ""]
    return "\n".join(lines)


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Append an "API reference" section with one entry per package to the navigation."""
    entries: list[Any] = [{package: f"{API_DIR}/{package}.md"} for package in _packages()]
    config.nav = [*(config.nav or []), {"API reference": entries}]
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated pages to the site's files."""
    for package, modules in _packages().items():
        files.append(File.generated(config, f"{API_DIR}/{package}.md", content=_page(package, modules)))
    return files
