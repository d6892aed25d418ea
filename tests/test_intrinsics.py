"""Smoke test of the package's LLVM intrinsics (``core/intrinsics.py``): each one compiles and computes what its
pure-Python meaning says, so that a numba or llvmlite upgrade that breaks the IR we emit fails here, by name,
rather than deep inside a simulation or a trace read."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from wattsched.core.intrinsics import STRTOD_MAX, shift_up, strtod


@njit(cache=False)
def _shift(arr: np.ndarray, lo: int, hi: int) -> None:
    shift_up(arr, lo, hi)


@njit(cache=False)
def _parse(buf: np.ndarray) -> float:
    return strtod(buf.ctypes)


@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32, np.uint8])
@pytest.mark.parametrize(("lo", "hi"), [(0, 0), (0, 5), (2, 7), (7, 8)])
def test_shift_up_moves_a_stretch_one_slot_up(dtype: type, lo: int, hi: int) -> None:
    arr = np.arange(10, dtype=dtype)
    expected = arr.copy()
    expected[lo + 1 : hi + 1] = arr[lo:hi].copy()
    _shift(arr, lo, hi)
    assert arr.tolist() == expected.tolist()


@pytest.mark.parametrize(
    "text", ["0", "1.5e3", "0.1", "-2.5", "123456.78901234567", "1e-300", "9007199254740993", "3.141592653589793238"]
)
def test_strtod_reads_as_python_float(text: str) -> None:
    buf = np.zeros(STRTOD_MAX + 1, dtype=np.uint8)
    raw = text.encode()
    buf[: len(raw)] = np.frombuffer(raw, dtype=np.uint8)
    assert _parse(buf) == float(text)
