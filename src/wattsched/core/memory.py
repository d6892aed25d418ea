"""Large uninitialised arrays whose pages are mapped in one system call.

Writing a fresh multi-GB array faults its pages in one at a time. On virtual machines that back guest memory
lazily each fault is expensive: on our 2-core benchmark VM, filling a fresh GiB costs 1.5–3.5 s page by page but
0.5 s when the pages are mapped up front with ``MAP_POPULATE``. Outputs like the 2 GB power timeline are written
in full anyway, so populating them costs nothing extra anywhere.
"""

from __future__ import annotations

import mmap

import numpy as np

#: Below this many bytes ``np.empty`` is as good (and the malloc heap is warm).
POPULATE_MIN_BYTES = 64 << 20


def populated_empty(n: int, dtype: np.dtype | type = np.float64) -> np.ndarray:
    """``np.empty(n, dtype)``, with every page mapped in one call when the array is large (Linux)."""
    dtype = np.dtype(dtype)
    nbytes = int(n) * dtype.itemsize
    flags = getattr(mmap, "MAP_POPULATE", 0)
    if nbytes < POPULATE_MIN_BYTES or not flags:
        return np.empty(n, dtype)
    try:
        buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flags)
    except OSError:  # e.g. no room for the whole mapping at once: let the page faults happen lazily
        return np.empty(n, dtype)
    return np.frombuffer(buf, dtype=dtype, count=n)
