"""Shared fixtures. Tests that need ../shared/data fail under CI=true when it is missing, and skip elsewhere."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings

from wattsched.core.data_folder import shared_data_dir

# CI explores a fixed set of examples (no flaky runs); local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
    settings.load_profile("ci")

# The live local Slurm cluster (``slurm_cluster``) of the tests marked slurm: tests/slurm_fixtures.py.
pytest_plugins = ["slurm_fixtures"]

REPO_ROOT = Path(__file__).resolve().parents[1]
# $WATTSCHED_DATA (or its old name), else ../shared/data: the lookup every command makes (core/data_folder.py)
SHARED_DATA = shared_data_dir(REPO_ROOT) or REPO_ROOT.parent / "shared" / "data"


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


# --------------------------------------------------------------------- the checkout stays clean
# A test writes under tmp_path, never into the repository: a relative --output, or a path through a symlinked
# folder's "..", once left run folders and lock files in the checkout (and a `git add -A` committed them).
_REPO = Path(__file__).resolve().parents[1]


def _untracked() -> set[str] | None:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(_REPO), "ls-files", "--others", "--exclude-standard"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None  # not a git checkout (an sdist): nothing to compare
    return set(done.stdout.splitlines())


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _is_xdist_worker(session.config):  # the controller sees the whole run; a worker only its half
        session.config.stash[_UNTRACKED] = _untracked()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _is_xdist_worker(session.config):
        return
    before = session.config.stash.get(_UNTRACKED, None)
    after = _untracked()
    if before is None or after is None:
        return
    new = sorted(after - before)
    if new:
        shown = ", ".join(new[:10]) + (f" and {len(new) - 10} more" if len(new) > 10 else "")
        print(f"\nerror: the tests left files in the checkout: {shown}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_UNTRACKED = pytest.StashKey[set[str] | None]()


# --------------------------------------------------------------------- groups for pytest-xdist
# `make test` runs the suite on two workers with --dist loadgroup (issue 32, item 5). A group runs whole on one
# worker, in order: a file's tests share its module fixtures (a reproduction computed once, not once per worker);
# the tests marked slurm run one after another, so the session's testbed is one cluster and no two emulated power
# meters compete for the cores while a test measures power against a cap; each docs page runs its blocks in order
# (tests/test_docs_commands.py marks those itself).
#
# The groups with the most long tests (marked slow, or a docs block with a quick variant: tests/test_docs_commands.py)
# are collected first, so that xdist, which hands out groups in collection order, starts the long ones first and
# ends on short ones (longest first): in order of the files, the testbed group and a paper-000 reproduction were
# among the last groups, and one worker ran on alone for three minutes. A group's own tests keep their order.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups: dict[pytest.Item, str] = {}
    for item in items:
        marker = item.get_closest_marker("xdist_group")
        if marker is None:
            group = "slurm" if item.get_closest_marker("slurm") is not None else f"file:{item.path.name}"
            item.add_marker(pytest.mark.xdist_group(group))
        else:
            group = str(marker.args[0])
        groups[item] = group
        if getattr(config.option, "loadgroup", False):
            _suffix_group(item, group)
    long = Counter(groups[item] for item in items if _long(item))
    items.sort(key=lambda item: -long[groups[item]])  # stable: a group's tests stay in order


def _long(item: pytest.Item) -> bool:
    from test_docs_commands import LONG_MARKERS  # a docs block's markers say it is long

    if item.get_closest_marker("slow") is not None:
        return True
    block = getattr(item, "callspec", None) and item.callspec.params.get("block")  # type: ignore[attr-defined]
    return bool(LONG_MARKERS & set(getattr(block, "markers", {})))


def _suffix_group(item: pytest.Item, group: str) -> None:
    """Name the item ``NODEID@GROUP`` in an xdist worker, the form by which the controller keeps a group on one
    worker. pytest-xdist 3.8 does this itself by setting ``item._nodeid``, which pytest 9.2 no longer reads (the
    id is ``item._id``, a NodeId): without this every test was scheduled apart, so a file's module fixtures ran on
    both workers and each worker started its own session testbed. On an older pytest xdist's own suffix works."""
    try:
        from _pytest.nodeid import coerce_node_id  # pytest >= 9.2
    except ImportError:
        return
    if "@" not in item.nodeid:
        item._id = coerce_node_id(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]
