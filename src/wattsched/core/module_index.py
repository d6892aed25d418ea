"""The index of every module of the package, generated from the modules' own docstrings into
docs/architecture.md's "Every module" table.

The table sits between the page's ``modules`` markers (:mod:`wattsched.core.generated_docs`).
One definition: what a module is for is its docstring's first sentence, so the map cannot drift from the code
(tests/test_module_index.py compares the page with this). Sources are parsed, not imported: building the index
loads neither numba nor the engine. ``python -m wattsched.core.module_index`` rewrites the block.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from wattsched.core.generated_docs import generated_block, rewrite_generated_block

__all__ = ["PAGE", "documented_index", "module_index", "module_summary", "undocumented_modules"]

#: The page that holds the index, from the repository root.
PAGE = Path("docs/architecture.md")
#: The package's sources, from the repository root.
PACKAGE = Path("src/wattsched")
_SENTENCE_END = re.compile(r"(?<=[.:;])\s")
#: Sphinx roles (``:mod:`x```, ``:func:`~a.b```) shown as code in Markdown.
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")


def module_summary(path: Path) -> str | None:
    """The first sentence of the module's docstring (its first paragraph up to the first '.', ':' or ';'
    followed by a space), on one line; None without a docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        return None
    paragraph = " ".join(doc.strip().split("\n\n", 1)[0].split())
    first = _SENTENCE_END.split(paragraph, maxsplit=1)[0]
    text = _ROLE.sub(r"`\1`", first.rstrip(".:;")).replace("``", "`").replace("|", "\\|")
    return text.replace("<!--", "<!−−")  # a docs marker quoted in a docstring must not end the table early


def _modules(package: Path) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)


def undocumented_modules(package: Path = PACKAGE) -> list[str]:
    """The modules without a docstring (each must say what it is for)."""
    return [str(p.relative_to(package)) for p in _modules(package) if module_summary(p) is None]


def module_index(package: Path = PACKAGE) -> str:
    """The index: one table row per module, grouped by package in path order."""
    rows = ["| module | what it is for |", "|---|---|"]
    for path in _modules(package):
        rel = path.relative_to(package)
        rows.append(f"| `{rel}` | {module_summary(path) or '(no docstring)'} |")
    return "\n".join(rows)


def documented_index(page: Path = PAGE) -> str:
    """The index as the page holds it now."""
    return generated_block(page, "modules")


if __name__ == "__main__":  # pragma: no cover - a maintenance command
    changed = rewrite_generated_block(PAGE, "modules", module_index())
    print(f"{PAGE}: {'rewritten' if changed else 'up to date'}")
