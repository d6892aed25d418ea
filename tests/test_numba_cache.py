"""The numba cache key: a hash of every jitted module of the package (an edit anywhere starts a fresh cache)."""

import os
from pathlib import Path

import wattsched
from wattsched.core.numba_cache import numba_sources, sources_key


def test_the_numba_cache_key_covers_every_jitted_module_of_the_package() -> None:
    package = Path(wattsched.__file__).resolve().parent
    hashed = {path.relative_to(package).as_posix() for path in numba_sources(package)}
    assert {"engine/kernel.py", "policies/queue_policies.py", "power/actual_power.py"} <= hashed


def test_the_key_is_remembered_by_stamps_and_follows_every_edit(tmp_path: Path) -> None:
    """The key comes from the memo while no module's path, size or time changed, and changes with a numba module's
    content; an edit of a module without numba keeps the key (it only rewrites the memo)."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    jitted = package / "sub" / "kernel.py"
    jitted.write_text("from numba import njit\n")
    plain = package / "plain.py"
    plain.write_text("x = 1\n")
    root = tmp_path / "cache"
    first = sources_key(package, root)
    memos = list(root.glob("sources-*.key"))
    assert len(memos) == 1 and memos[0].read_text().split()[1] == first
    memos[0].write_text(memos[0].read_text().split()[0] + " remembered\n")
    assert sources_key(package, root) == "remembered"  # stamps unchanged: the memo is read, nothing hashed
    jitted.write_text("from numba import njit\nfrom numba import jit\n")
    changed = sources_key(package, root)
    assert changed not in (first, "remembered")
    plain.write_text("x = 2\n")
    assert sources_key(package, root) == changed  # not a numba module: same key
    os.utime(jitted, ns=(0, 0))  # a checkout that keeps the size but moves the time: hashed again, same content
    assert sources_key(package, root) == changed
    (root / memos[0].name).write_text("garbage")  # a damaged memo is recomputed
    assert sources_key(package, root) == changed
