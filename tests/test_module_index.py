"""docs/architecture.md lists every module of the package with what it is for, generated from the modules'
docstrings (``python -m wattsched.core.module_index`` rewrites the table)."""

from __future__ import annotations

from conftest import REPO_ROOT
from wattsched.core.module_index import documented_index, module_index, module_summary, undocumented_modules

PACKAGE = REPO_ROOT / "src" / "wattsched"


def test_every_module_says_what_it_is_for() -> None:
    assert undocumented_modules(PACKAGE) == []


def test_the_architecture_page_lists_every_module_as_the_code_describes_it() -> None:
    expected = module_index(PACKAGE)
    assert documented_index(REPO_ROOT / "docs" / "architecture.md") == expected, (
        "docs/architecture.md's module table is out of date: run `.venv/bin/python -m wattsched.core.module_index`"
    )


def test_the_summary_is_the_docstrings_first_sentence(tmp_path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Reads :mod:`wattsched.x` files. More text\\n\\nA second paragraph."""\n')
    assert module_summary(module) == "Reads `wattsched.x` files"
    (tmp_path / "bare.py").write_text("x = 1\n")
    assert module_summary(tmp_path / "bare.py") is None
