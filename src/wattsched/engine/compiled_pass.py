"""Compiled Python policies: a policy's pass written against arrays, compiled once and called from the loop.

A Python policy's ``schedule(view)`` costs about 15 µs a pass in the hand-off alone (``engine/python_pass.py``),
10-20× a whole built-in pass, so no Python policy came within 10× of the built-in one on KTH-SP2 (issue 32,
item 3). A policy that also defines ``schedule_into(view, out)`` (:class:`wattsched.core.policy.CompiledPolicy`)
is compiled here instead: its function is compiled in nopython mode with bounds checks, wrapped in a C-callable
function, and the loop calls that function through its address (:func:`_call_policy`) without leaving compiled
code. The address and the job arrays' addresses travel in the state's ``ext`` array, so the loop itself is
compiled, and cached, once for every policy: nothing is recompiled for a new policy but its own function (1-3 s,
once per process and function).

The view the function gets has the attributes of :class:`~wattsched.core.policy.View` (``view.jobs.size[pos]``,
``view.queue``, ``view.running_expected_end`` …): :data:`CompiledView` and :data:`CompiledJobs` are named tuples
of the same fields, so one function body also runs in plain Python on a ``View``
(:meth:`wattsched.core.policy.CompiledPolicyBase.schedule`). There is no true runtime among them. The queue and
running snapshots are fresh arrays each pass; the job arrays are the policy's own copies (``size`` and
``walltime``), or the live estimates, which it must not write; the loop checks every decision with its own
arrays, as it does a built-in policy's.
"""

from __future__ import annotations

import threading
from collections import namedtuple
from typing import Any

import numpy as np
from llvmlite import ir
from numba import carray, cfunc, njit, types
from numba.core.errors import NumbaError
from numba.extending import intrinsic

from wattsched.core.policy import JobAttributes
from wattsched.engine.kernel_state import EXT_SLOTS
from wattsched.policies.queue_policies import SUM_M, SUM_MAX, SUM_S2, cap_at

#: The job attributes of a compiled view, by position (the fields of ``wattsched.core.policy.JobAttributes``).
CompiledJobs = namedtuple(
    "CompiledJobs",
    "job_id user_id submit_time size walltime estimate est_dyn_mean est_dyn_max est_dyn_std",
)
#: A compiled pass's view (the fields of ``wattsched.core.policy.View``).
CompiledView = namedtuple(
    "CompiledView",
    "now free machine_size jobs queue running running_expected_end running_start finished cap power_sums",
)

#: The slots of the state's ``ext`` array: the policy's address, the machine size, the job count, then the
#: addresses of the job arrays in :data:`CompiledJobs`'s order (int64 arrays first, then float64 ones).
EXT_FUNCTION = 0
EXT_MACHINE_SIZE = 1
EXT_N = 2
EXT_ARRAYS = 3
_INT_FIELDS = ("job_id", "user_id", "size")
#: The estimates stay live (an online predictor writes them at each submission); the other arrays are copies.
_LIVE_FIELDS = ("estimate", "est_dyn_mean", "est_dyn_max", "est_dyn_std")
_FLOAT_FIELDS = ("submit_time", "walltime", "estimate", "est_dyn_mean", "est_dyn_max", "est_dyn_std")
EXT_SIZE = EXT_ARRAYS + len(_INT_FIELDS) + len(_FLOAT_FIELDS)
assert EXT_SIZE == EXT_SLOTS, "engine.kernel_state.EXT_SLOTS must hold every slot"

_P_I64 = types.CPointer(types.int64)
_P_F64 = types.CPointer(types.float64)
#: The C signature of a compiled policy's wrapper: (ext, now, free, cap, Σ mean, Σ max, Σ σ², positions (queue,
#: running, finished), qlen, rc, fc, times (expected ends, starts), out) → decisions written, or -1 on an error.
C_SIGNATURE = types.int64(
    _P_I64,
    types.float64,
    types.int64,
    types.float64,
    types.float64,
    types.float64,
    types.float64,
    _P_I64,
    types.int64,
    types.int64,
    types.int64,
    _P_F64,
    _P_I64,
)


def _call_policy_typing(typingctx, ext, now, free, cap, s_m, s_max, s_s2, ints, qlen, rc, fc, times, out):
    """Call the C function whose address is ``ext[EXT_FUNCTION]`` with the arrays' data pointers (the loop's
    only way to call a function chosen at run time without being compiled again for it)."""
    sig = types.int64(ext, now, free, cap, s_m, s_max, s_s2, ints, qlen, rc, fc, times, out)

    def codegen(context, builder, signature, args):
        def data(ty: Any, value: Any) -> Any:
            return context.make_array(ty)(context, builder, value).data

        ext_v, now_v, free_v, cap_v, m_v, max_v, s2_v, ints_v, qlen_v, rc_v, fc_v, times_v, out_v = args
        ext_p = data(ext, ext_v)
        address = builder.load(builder.gep(ext_p, [ir.Constant(ir.IntType(64), EXT_FUNCTION)]))
        values = [ext_p, now_v, free_v, cap_v, m_v, max_v, s2_v, data(ints, ints_v), qlen_v, rc_v, fc_v]
        values += [data(times, times_v), data(out, out_v)]
        fn_type = ir.FunctionType(ir.IntType(64), [v.type for v in values])
        return builder.call(builder.inttoptr(address, fn_type.as_pointer()), values)

    return sig, codegen


_call_policy: Any = intrinsic(_call_policy_typing)


@njit(cache=True)
def view_snapshots(queue, qlen, running, rc, start, finished, fc):
    """A pass's view as two fresh arrays, for a Python or a compiled policy: positions (queue, running, finished)
    and times (the running jobs' expected ends, then their starts). Fresh, so that nothing the policy keeps or
    writes reaches the loop's own arrays."""
    run_end, run_job = running
    ints = np.empty(qlen + rc + fc, dtype=np.int64)
    ints[:qlen] = queue
    ints[qlen : qlen + rc] = run_job[:rc]
    ints[qlen + rc :] = finished[:fc]
    times = np.empty(2 * rc, dtype=np.float64)
    for r in range(rc):
        times[r] = run_end[r]
        times[rc + r] = start[run_job[r]]
    return ints, times


@njit(cache=True)
def compiled_pass(ext, now, free, queue, qlen, running, rc, start, finished, fc, sums, cap_t, cap_v, out):
    """A compiled policy's pass: the view's snapshots made into two fresh arrays (as for a Python policy), then
    the policy called through its address. Returns the number of decisions in ``out``, or -1 when it failed."""
    ints, times = view_snapshots(queue, qlen, running, rc, start, finished, fc)
    cap = cap_at(cap_t, cap_v, now)
    return _call_policy(ext, now, free, cap, sums[SUM_M], sums[SUM_MAX], sums[SUM_S2], ints, qlen, rc, fc, times, out)


def _pointer(pointer_type: Any) -> Any:
    """An intrinsic that takes an address (an int64) as a ``pointer_type``, for ``carray``."""

    def typing(typingctx, address):
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(pointer_type))

        return pointer_type(address), codegen

    return intrinsic(typing)


_int_pointer: Any = _pointer(_P_I64)
_float_pointer: Any = _pointer(_P_F64)


class PolicyCompileError(ValueError):
    """A policy's ``schedule_into`` that numba cannot compile, with numba's first line."""


_COMPILED: dict[Any, Any] = {}
_LOCK = threading.Lock()


def compile_policy(function: Any, name: str) -> Any:
    """The C-callable wrapper of ``function`` (a plain function, or a numba dispatcher whose Python function is
    taken), compiled once per process and function. Raises :class:`PolicyCompileError` when numba cannot type it."""
    py_func = getattr(function, "py_func", function)
    with _LOCK:
        if py_func in _COMPILED:
            return _COMPILED[py_func]
        try:
            wrapper = _wrap(_jit(py_func))
        except NumbaError as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise PolicyCompileError(
                f"policy {name!r}: schedule_into(view, out) cannot be compiled: {first} (it must be a plain "
                "function of the view's arrays and numbers returning the count of positions written to out; "
                "wattsched.core.policy.CompiledPolicy)"
            ) from exc
        _COMPILED[py_func] = wrapper
        return wrapper


def _jit(py_func: Any) -> Any:
    """The policy's function compiled lazily with bounds checks. Not cached on disk: numba's cache entry names the
    module the function was compiled in, and a file loaded by ``--policy FILE.py:CLASS`` (module
    ``wattsched_user_policy_FILE``) and imported from Python (module ``FILE``) would read each other's entries and
    fail with ``ModuleNotFoundError``."""
    return njit(boundscheck=True)(py_func)


def _wrap(user: Any) -> Any:
    """The C wrapper around the compiled ``user(view, out)``: builds the view from the addresses and catches what
    the policy raises (an index out of range, typically) as -1, which the loop reports."""

    # not cached: numba keys a closure's cache on its cells, and a dispatcher's pickle differs in every process
    @cfunc(C_SIGNATURE)
    def wrapper(ext_p, now, free, cap, s_m, s_max, s_s2, ints_p, qlen, rc, fc, times_p, out_p):  # pragma: no cover
        ext = carray(ext_p, (EXT_SIZE,))
        n = ext[EXT_N]
        a = EXT_ARRAYS
        jobs = CompiledJobs(
            carray(_int_pointer(ext[a]), (n,)),
            carray(_int_pointer(ext[a + 1]), (n,)),
            carray(_float_pointer(ext[a + 3]), (n,)),
            carray(_int_pointer(ext[a + 2]), (n,)),
            carray(_float_pointer(ext[a + 4]), (n,)),
            carray(_float_pointer(ext[a + 5]), (n,)),
            carray(_float_pointer(ext[a + 6]), (n,)),
            carray(_float_pointer(ext[a + 7]), (n,)),
            carray(_float_pointer(ext[a + 8]), (n,)),
        )
        ints = carray(ints_p, (qlen + rc + fc,))
        times = carray(times_p, (2 * rc,))
        view = CompiledView(
            now,
            free,
            ext[EXT_MACHINE_SIZE],
            jobs,
            ints[:qlen],
            ints[qlen : qlen + rc],
            times[:rc],
            times[rc:],
            ints[qlen + rc :],
            cap,
            (s_m, s_max, s_s2),
        )
        try:
            return np.int64(user(view, carray(out_p, (n,))))
        except Exception:
            return -1

    return wrapper


class CompiledPass:
    """One run's compiled policy: fills the state's ``ext`` array and keeps alive what its addresses point to.
    ``jobs`` is the run's :class:`~wattsched.core.policy.JobAttributes`, as a Python policy's view has them: copies
    of the declared attributes, and views of the engine's estimate arrays (live: an online predictor writes them)."""

    def __init__(self, function: Any, name: str, ext: np.ndarray, machine_size: int, jobs: JobAttributes) -> None:
        self.wrapper = compile_policy(function, name)
        self.keep = [np.ascontiguousarray(getattr(jobs, f), dtype=np.int64) for f in _INT_FIELDS]
        self.keep += [np.ascontiguousarray(getattr(jobs, f), dtype=np.float64) for f in _FLOAT_FIELDS]
        for f, a in zip(_INT_FIELDS + _FLOAT_FIELDS, self.keep, strict=True):
            if f in _LIVE_FIELDS and not np.shares_memory(a, getattr(jobs, f)):
                raise TypeError(f"the {f} estimates must be a contiguous float64 array the engine writes")
        ext[EXT_FUNCTION] = self.wrapper.address
        ext[EXT_MACHINE_SIZE] = machine_size
        ext[EXT_N] = self.keep[0].shape[0]
        for i, a in enumerate(self.keep):  # the addresses point into ``keep``
            ext[EXT_ARRAYS + i] = a.ctypes.data
