"""The state of one run of the compiled event loop (``engine/kernel.py``): the integer state vector's layout, the
error codes of a refused decision, and :class:`KernelState`, the arrays a run is sliced and resumed with.

The constants are read by the numba kernel as compile-time constants: this module is among the sources that key
numba's cache (``core/numba_cache.py``), so changing one recompiles the kernel.
"""

from __future__ import annotations

import numpy as np

from wattsched.policies.conservative import POL_SIZE

# Indices into the integer state vector.
ST_FREE = 0
ST_NEXT_SUB = 1
ST_HEAP = 2
ST_QLEN = 3
ST_RUNNING = 4
ST_ERROR = 5
ST_ERROR_JOB = 6
ST_PASSES = 7
ST_MAX_QLEN = 8
ST_FINISHED = 9
ST_PENDING = 10
ST_DECISIONS = 11
ST_CAP_NEXT = 12
ST_PREDICT = 13  # 1: stop at every instant with submissions, after its completions, for an online predictor
ST_PRED_PENDING = 14  # set when stopped that way; the next call resumes with the instant's submissions
ST_DONE = 15  # number of completions logged in ``done_log``
ST_SIZE = 16
#: The size of the state's ``ext`` array (``engine.compiled_pass.EXT_SIZE``, checked there).
EXT_SLOTS = 12

#: ``backfill`` code meaning "the decisions come from Python": the loop calls the policy at every pass
#: (``engine/python_pass.py``).
EXTERNAL = -1
#: ``backfill`` code meaning "a compiled Python policy": the loop calls its C function through the address in the
#: state's ``ext`` array (``engine/compiled_pass.py``).
EXTERNAL_COMPILED = -2

ERR_NONE = 0
ERR_NOT_QUEUED = 1
ERR_NO_ROOM = 2
ERR_PRESTART_NO_ROOM = 3  # a job that was already running at a window's start does not fit at t = 0
ERR_POLICY_FAILED = 4  # a compiled policy raised (ST_ERROR_JOB: -1) or returned a count outside 0..n


#: The order of :meth:`KernelState.arrays`, the kernel's ``state`` bundle (``engine.kernel.run_kernel``).
STATE_ARRAYS = (
    "st",
    "start",
    "end",
    "first_reservation",
    "reservation",
    "heap_t",
    "heap_j",
    "queue",
    "queued",
    "run_end",
    "run_job",
    "side_end",
    "side_job",
    "out",
    "prof_t",
    "prof_a",
    "pol",
    "res_t",
    "res_j",
    "finished",
    "assumed_end",
    "now",
    "done_log",
    "ext",
)


class KernelState:
    """The arrays of one run; plain numpy, so the loop can stop and resume anywhere."""

    def __init__(self, n: int, machine_size: int) -> None:
        self.st = np.zeros(ST_SIZE, dtype=np.int64)
        self.st[ST_FREE] = machine_size
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.first_reservation = np.full(n, np.nan)
        self.reservation = np.full(n, np.nan)
        self.heap_t = np.empty(n, dtype=np.float64)
        self.heap_j = np.empty(n, dtype=np.int64)
        self.queue = np.empty(n, dtype=np.int64)
        self.queued = np.zeros(n, dtype=np.bool_)
        self.run_end = np.empty(n, dtype=np.float64)
        self.run_job = np.empty(n, dtype=np.int64)
        self.side_end = np.empty(n, dtype=np.float64)
        self.side_job = np.empty(n, dtype=np.int64)
        self.out = np.empty(n, dtype=np.int64)
        # conservative backfilling's persistent profile and reservation list, and the completions it has not seen
        self.prof_t = np.empty(8 * n + 8, dtype=np.float64)
        self.prof_a = np.empty(
            8 * n + 8, dtype=np.int32
        )  # units free: int32 halves what insertions move and scans read
        self.pol = np.zeros(POL_SIZE, dtype=np.int64)  # counts, then the operation counters (conservative.py)
        self.res_t = np.empty(n, dtype=np.float64)
        self.res_j = np.empty(n, dtype=np.int64)
        self.finished = np.empty(n, dtype=np.int64)
        self.done_log = np.empty(n, dtype=np.int64)  # every completion, in order (for online predictors)
        self.assumed_end = np.full(n, np.nan)
        self.now = np.zeros(1)  # the instant of a pass handed to Python
        # a compiled policy's address, the machine size and the job arrays' addresses (engine/compiled_pass.py)
        self.ext = np.zeros(EXT_SLOTS, dtype=np.int64)
        # the policy's power bookkeeping: Σ mean, Σ max and Σ σ² of the running jobs' estimates
        self.sums = np.zeros(3)
        self.shadow_sums = np.zeros(3)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The arrays the kernel reads and writes, in the order :data:`STATE_ARRAYS` names (one tuple, one
        argument: numba passes it as a struct of array views)."""
        return tuple(getattr(self, name) for name in STATE_ARRAYS)
