"""Point numba's on-disk cache at a directory keyed by a hash of wattsched's sources.

numba invalidates a cached function only when *its own* file changes, not when a jitted function it calls in
another module does, so an edited policy could silently keep running its old compiled code. Keying the cache
directory on the sources of the package's numba modules (jitted code can only call jitted code) makes every
edit to them start from a fresh cache, while edits elsewhere keep it. A user-set ``NUMBA_CACHE_DIR``
wins. Must run before any jitted module is imported (``wattsched/__init__.py`` does it first).

numba is not imported here (it costs ~0.16 s, most of a ``--help``): the folder is handed to numba through the
``NUMBA_CACHE_DIR`` environment variable, which numba reads at its own import, and ``_KEYED_FOR`` records which
package's sources keyed it, so a child process of another checkout recomputes its own key instead of inheriting
a folder made for different sources. When numba is already imported, its setting is changed directly.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec

_STALE_AFTER_S = 7 * 24 * 3600
#: Set beside NUMBA_CACHE_DIR when wattsched chose the folder: the package folder whose sources keyed it.
_KEYED_FOR = "WATTSCHED_NUMBA_CACHE_KEYED_FOR"


def configure() -> None:
    package = Path(__file__).resolve().parent.parent
    keyed_for = os.environ.get(_KEYED_FOR)
    if os.environ.get("NUMBA_CACHE_DIR") and keyed_for in (None, str(package)):
        return  # the user's own folder, or one a parent process keyed on these very sources
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "wattsched" / "numba"
    target = root / sources_key(package, root)
    try:
        target.mkdir(parents=True, exist_ok=True)
        os.utime(target)
        _prune(root, keep=target)
    except OSError:  # unwritable home: numba falls back to __pycache__ next to the sources
        if keyed_for is not None:  # never keep a folder keyed on another checkout's sources
            os.environ.pop("NUMBA_CACHE_DIR", None)
            os.environ.pop(_KEYED_FOR, None)
        return
    os.environ["NUMBA_CACHE_DIR"] = str(target)
    os.environ[_KEYED_FOR] = str(package)
    numba = sys.modules.get("numba")
    if numba is not None:  # imported before wattsched: its configuration was read already
        # numba.config creates its settings with globals() at import, so no type checker sees CACHE_DIR
        numba.config.CACHE_DIR = str(target)


def sources_key(package: Path, root: Path) -> str:
    """The cache folder's name: a hash of the package's numba sources (:func:`numba_sources`). Reading every
    module to find them took 12 ms of each start (about a tenth of ``--help``), so the key is remembered in
    ``root`` next to a hash of every module's path, size and modification time, and recomputed when any of those
    changes (an edit that keeps the size within the file system's time resolution would be missed: nanoseconds on
    Linux file systems; delete the memo, or the cache folder, after such an edit)."""
    files = sorted(package.rglob("*.py"))
    stamps = hashlib.sha256()
    for path in files:
        st = path.stat()
        stamps.update(f"{path.relative_to(package).as_posix()}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    memo = root / f"sources-{hashlib.sha256(str(package).encode()).hexdigest()[:16]}.key"
    with contextlib.suppress(OSError, ValueError):
        recorded_stamps, recorded_key = memo.read_text().split()
        if recorded_stamps == stamps.hexdigest():
            return recorded_key
    digest = hashlib.sha256()
    for path in numba_sources(package):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    key = digest.hexdigest()[:16]
    with contextlib.suppress(OSError):  # unwritable: computed again next time
        root.mkdir(parents=True, exist_ok=True)
        partial = memo.with_name(f".{memo.name}.{os.getpid()}.tmp")
        partial.write_text(f"{stamps.hexdigest()} {key}\n")
        partial.replace(memo)  # atomic: a concurrent start reads the old memo or the new one, never half of one
    return key


def numba_sources(package: Path) -> list[Path]:
    """The package's modules that use numba, across the whole package (not this module's folder alone): the
    cache key must change when any jitted function changes."""
    return [path for path in sorted(package.rglob("*.py")) if b"numba" in path.read_bytes()]


def _prune(root: Path, keep: Path) -> None:
    """Remove caches of source versions unused for a week."""
    now = time.time()
    for entry in root.iterdir():
        if entry != keep and entry.is_dir() and now - entry.stat().st_mtime > _STALE_AFTER_S:
            shutil.rmtree(entry, ignore_errors=True)


# ------------------------------------------------------------------------------------------ numba's BLAS check

#: The numba module whose import checks for BLAS by importing ``scipy.linalg`` (numba 0.60 and later; checked on 0.68).
_BLAS_CHECKING_MODULE = "numba.np.arraymath"


class _DeferredBlasCheck:
    """While ``numba.np.arraymath`` is imported (at the first compiled function numba loads), its BLAS check
    (``numba.np.linalg.ensure_blas``, which imports ``scipy.linalg`` only to learn that it can) finds scipy's
    package without importing it. The check's answer is the same (BLAS is there when scipy is); the real check,
    and the import, still happen when a compiled function needs BLAS. Measured reason: ``scipy.linalg`` took 0.14 s
    of a 0.64 s ``wattsched simulate`` on 100 jobs, and no compiled function of wattsched uses BLAS. If numba's
    layout differs, nothing is changed. A meta path finder needs only ``find_spec`` (no ``importlib.abc`` base:
    importing it cost 7 ms of every start)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if name != _BLAS_CHECKING_MODULE:
            return None
        sys.meta_path.remove(self)  # once; the real finders locate the module
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        real_exec = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            try:
                linalg = importlib.import_module("numba.np.linalg")
                real_check = linalg.ensure_blas
            except (ImportError, AttributeError):
                real_exec(module)
                return
            setattr(linalg, "ensure_blas", _scipy_blas_present)  # noqa: B010 (a module's attribute, set and restored)
            try:
                real_exec(module)
            finally:
                setattr(linalg, "ensure_blas", real_check)  # noqa: B010
                if getattr(module, "ensure_blas", None) is _scipy_blas_present:
                    setattr(module, "ensure_blas", real_check)  # noqa: B010 (its later calls do the real check)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def _scipy_blas_present() -> None:
    """numba's ``ensure_blas`` without the import: ImportError exactly when scipy's BLAS module is missing."""
    if importlib.util.find_spec("scipy") is None:
        raise ImportError("scipy 0.16+ is required for linear algebra")


def defer_blas_check() -> None:
    """Install :class:`_DeferredBlasCheck` unless numba's BLAS-checking module is loaded already."""
    if _BLAS_CHECKING_MODULE not in sys.modules and not any(isinstance(f, _DeferredBlasCheck) for f in sys.meta_path):
        sys.meta_path.insert(0, _DeferredBlasCheck())
