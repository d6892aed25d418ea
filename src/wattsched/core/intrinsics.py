"""The LLVM intrinsics of the package, in one place: code numba compiles from LLVM IR we emit ourselves, which
a numba or llvmlite upgrade may break (hence the pinned minor versions in pyproject.toml and the smoke test,
tests/test_intrinsics.py, which compiles and runs each one).

Both are linked by name, not by address, so the functions that call them stay in numba's on-disk cache.

``shift_up``: move a stretch of a 1-d array one slot up with LLVM's ``memmove``, from compiled code.

Sorted arrays that take an insertion (the flat availability profile of conservative backfilling) shift their
tail by one slot. numba compiles the obvious backward loop to one element per iteration: 0.9 ns per element for
a time and an availability array on this machine, 31 of the 104 CPU seconds of conservative backfilling on
RICC (issue 18). ``memmove`` moves the same bytes with vector loads and stores. The intrinsic emits the LLVM
call directly, so it caches like any other compiled function (a ``ctypes`` memmove would pin an address and
defeat numba's on-disk cache).

``strtod``: libc's correctly rounded ``strtod`` for the SWF tokenizer's long numbers
(``workload/swf/tokenizer.py``; ~80 ns a token against 11 µs a line for Python's path).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from llvmlite import ir  # llvmlite ships no types: ignored in pyproject.toml ([[tool.mypy.overrides]])
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def _shift_up(typingctx, arr, lo, hi):
    """``arr[lo + 1 : hi + 1] = arr[lo:hi]`` (``lo <= hi``, ``hi < len(arr)``; not checked)."""
    if not isinstance(arr, types.Array) or arr.ndim != 1 or arr.layout != "C":
        return None
    sig = types.void(arr, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        lo_v = context.cast(builder, args[1], signature.args[1], types.intp)
        hi_v = context.cast(builder, args[2], signature.args[2], types.intp)
        src = builder.gep(ary.data, [lo_v])
        dst = builder.gep(ary.data, [builder.add(lo_v, lo_v.type(1))])
        itemsize = context.get_abi_sizeof(context.get_data_type(signature.args[0].dtype))
        cgutils.raw_memmove(builder, dst, src, builder.sub(hi_v, lo_v), itemsize)
        return context.get_dummy_value()

    return sig, codegen


#: The intrinsic as compiled code calls it (numba supplies the typing context); typed for that call.
shift_up: Callable[[np.ndarray, int, int], None] = _shift_up  # type: ignore[assignment]


#: Longest token handed to strtod (copied into a NUL-terminated scratch buffer); longer ones take Python's path.
STRTOD_MAX = 255


@intrinsic
def _strtod(typingctx, ptr):  # pragma: no cover - compiled
    """``strtod(ptr, NULL)`` from libc, linked by symbol name so the compiled function stays cacheable
    (a ctypes function pointer would embed an address and disable numba's cache)."""
    sig = types.float64(types.voidptr)

    def codegen(context, builder, signature, args):
        char_p = ir.IntType(8).as_pointer()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.DoubleType(), [char_p, char_p.as_pointer()]), "strtod"
        )
        return builder.call(fn, [builder.bitcast(args[0], char_p), ir.Constant(char_p.as_pointer(), None)])

    return sig, codegen


#: The intrinsic as compiled code calls it: ``strtod(array.ctypes)`` on a NUL-terminated uint8 buffer.
strtod: Callable[[object], float] = _strtod  # type: ignore[assignment]
