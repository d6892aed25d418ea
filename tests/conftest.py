"""Shared fixtures. Tests that need ../shared/data fail under CI=true when it is missing, and skip elsewhere."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI explores a fixed set of examples (no flaky runs); local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
    settings.load_profile("ci")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("WATTSCHED_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


def require_data(relative: str) -> Path:
    """Path of a file under ../shared/data; fail (CI) or skip (elsewhere) with a clear reason if absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        message = f"shared data file {path} is missing (tests read ../shared/data in place)"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message + "; CI=true requires it")
        pytest.skip(message)
    return path


@pytest.fixture
def shared_data() -> Path:
    """The ../shared/data directory itself (same fail/skip rule)."""
    return require_data("")
