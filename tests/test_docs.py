"""The documentation site builds with ``mkdocs build --strict`` (no broken link or anchor, no docstring warning),
and its generated API reference has a page for every package of ``src/wattsched``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_docs_site_builds_strict_with_an_api_page_per_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    src = REPO / "src"
    packages = {".".join(init.parent.relative_to(src).parts) for init in (src / "wattsched").rglob("__init__.py")}
    pages = {page.name for page in (site / "api").iterdir()}
    assert packages <= pages, sorted(packages - pages)
    assert (site / "semantics" / "index.html").exists()
