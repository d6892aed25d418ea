"""Tables in the docs generated from a registry, between ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``.

One definition for every registry that writes its own table (power checks, workload formats): read the block a
test compares with the registry, and rewrite it (a new temporary file renamed over the page, so an interrupted
rewrite leaves the page whole). No imports beyond the standard library: registries stay light.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["generated_block", "rewrite_generated_block"]


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def generated_block(page: Path, name: str) -> str:
    """The text now between the ``name`` markers of ``page``, stripped."""
    begin, end = _markers(name)
    return page.read_text(encoding="utf-8").split(begin, 1)[1].split(end, 1)[0].strip()


def rewrite_generated_block(page: Path, name: str, content: str) -> bool:
    """Put ``content`` between the ``name`` markers of ``page``; whether the page changed."""
    begin, end = _markers(name)
    text = page.read_text(encoding="utf-8")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{begin}\n{content}\n{end}{tail}"
    if new == text:
        return False
    fd, tmp = tempfile.mkstemp(dir=page.parent, prefix=f".{page.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(tmp, page)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
