"""The numba cache key: a hash of every jitted module of the package (an edit anywhere starts a fresh cache)."""

from pathlib import Path

import wattsched
from wattsched.core.numba_cache import numba_sources


def test_the_numba_cache_key_covers_every_jitted_module_of_the_package() -> None:
    package = Path(wattsched.__file__).resolve().parent
    hashed = {path.relative_to(package).as_posix() for path in numba_sources(package)}
    assert {"engine/kernel.py", "policies/queue_policies.py", "power/timeline.py"} <= hashed
