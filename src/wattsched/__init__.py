"""wattsched: power- and energy-aware HPC batch scheduling."""

from wattsched.core import numba_cache as _numba_cache

_numba_cache.configure()

__version__ = "0.1.0"
