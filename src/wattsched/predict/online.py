"""Online prediction: what a predictor may see, and the two ways of driving one.

A prediction for a job submitted at ``r`` may use only the jobs that **completed at or before** ``r``
(completions at an instant are seen before the submissions of that instant). Two drivers keep that promise:

- **trace protocol** (:func:`predict_online`, the papers' protocol): completions come from completion times
  fixed in advance (:func:`completion_times`: the trace's own, an EASY replay, or submit + runtime);
- **in simulation** (``simulate(..., predictor=...)``): completions come from the simulator as it produces
  them, so the predictions follow the schedule being simulated.

A job that completes at its own submit instant (zero runtime, no wait) is seen only after its own prediction.

A predictor is bound to one job table (rows in queue order: (submit time, job id)) and then fed, in time
order, ``observe(rows, end_times)`` for completed jobs and ``predict(rows, now)`` for submitted ones: the protocol
:class:`~wattsched.core.predictor.OnlinePredictor`, in the core. A predictor whose ``sweep`` (an optional member,
declared on :class:`~wattsched.core.predictor.PredictorBase`) returns a frame does the whole trace protocol in one
vectorised pass; the generic driver defines what that pass must return.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from wattsched.core.predictor import OnlinePredictor, PredictorBase
from wattsched.core.protocols import optional_member
from wattsched.core.schema import WorkloadError, coerce_columns, sort_queue_order
from wattsched.engine.replay import easy_replay

#: Ways of fixing completion times for the trace protocol.
COMPLETION_SOURCES = ("auto", "trace", "replay", "no-wait")


def predict_online(
    predictor: OnlinePredictor, jobs: pl.DataFrame, completion: np.ndarray, *, use_sweep: bool = True
) -> pl.DataFrame:
    """Run the trace protocol: every job is predicted at its submit time from the jobs with ``completion ≤``
    that time. ``jobs`` must be in queue order and ``completion`` aligned with its rows. Returns the predictor's
    output columns, aligned with ``jobs``.

    ``use_sweep=False`` forces the generic instant-by-instant driver (the reference a ``sweep`` is tested
    against)."""
    n = jobs.height
    completion = np.asarray(completion, dtype=np.float64)
    if completion.shape != (n,):
        raise ValueError(f"completion times must align with the {n} jobs, got shape {completion.shape}")
    submit = jobs["submit_time"].to_numpy().astype(np.float64)
    if n and np.any(np.diff(submit) < 0):
        raise ValueError("jobs must be in queue order (ascending submit time); use sort_queue_order")
    if use_sweep:
        swept = optional_member(predictor, PredictorBase, "sweep")(jobs, completion)
        if swept is not None:
            return swept
    predictor.bind(jobs)
    known = np.isfinite(completion)
    done = np.flatnonzero(known)
    done = done[np.argsort(completion[done], kind="stable")]
    done_t = completion[done]
    out: dict[str, np.ndarray] = {}  # allocated with the dtype of each output's first values
    # one group per submit instant: [starts[g], starts[g + 1])
    starts = np.flatnonzero(np.r_[True, submit[1:] != submit[:-1]]) if n else np.zeros(0, np.int64)
    bounds = np.r_[starts, n]
    seen = 0
    deferred = np.zeros(0, dtype=np.int64)
    for g in range(starts.size):
        lo, hi = int(bounds[g]), int(bounds[g + 1])
        now = float(submit[lo])
        upto = int(np.searchsorted(done_t, now, side="right"))
        batch = done[seen:upto]
        # a job that completes at its own submit instant (zero runtime, no wait) is seen after it is predicted
        earlier = batch < lo
        ready = np.concatenate((deferred, batch[earlier])) if deferred.size else batch[earlier]
        if ready.size:
            predictor.observe(ready, completion[ready])
        deferred = batch[~earlier]
        seen = upto
        rows = np.arange(lo, hi)
        for name, values in predictor.predict(rows, now).items():
            if name not in out:
                out[name] = np.empty(n, dtype=np.asarray(values).dtype)
            out[name][lo:hi] = values
    return _output_frame(out, predictor.outputs)


def _output_frame(out: dict[str, np.ndarray], names: tuple[str, ...]) -> pl.DataFrame:
    cols = []
    for name in names:
        values = out.get(name, np.empty(0))
        dtype = pl.Boolean if values.dtype == np.bool_ else pl.Int64 if values.dtype.kind in "iu" else None
        cols.append(pl.Series(name, values, dtype=dtype, nan_to_null=dtype is None))
    return pl.DataFrame(cols)


def trace_completion_times(jobs: pl.DataFrame) -> tuple[np.ndarray | None, str]:
    """The trace's own completion times (``trace_end_time``, ``end_time``, ``start_time`` + runtime, or SWF's
    submit + wait + runtime), or None when the table carries none; with a description of the source."""
    cols = jobs.columns
    if "trace_end_time" in cols:
        return jobs["trace_end_time"].cast(pl.Float64).to_numpy(), "trace_end_time"
    if "end_time" in cols:
        return jobs["end_time"].cast(pl.Float64).to_numpy(), "end_time"
    if "start_time" in cols:
        return (jobs["start_time"] + jobs["runtime"]).cast(pl.Float64).to_numpy(), "start_time + runtime"
    if "swf_wait" in cols:
        c = jobs.select(pl.col("submit_time") + pl.col("swf_wait") + pl.col("runtime")).to_series()
        return c.cast(pl.Float64).to_numpy(), "submit_time + swf_wait + runtime"
    return None, ""


def completion_times(
    jobs: pl.DataFrame, source: str = "auto", *, machine_size: int | None = None
) -> tuple[np.ndarray, str]:
    """Completion times for the trace protocol, aligned with ``jobs`` (queue order), and a note saying where
    they came from.

    - ``trace``: the trace's own (the papers' protocol); an error when the table has none or some are unknown;
    - ``replay``: the end times of an EASY (FCFS, walltime estimates) replay on ``machine_size`` units — for
      tables without a schedule, such as generated workloads;
    - ``no-wait``: submit + runtime, as if no job ever waited (optimistic: a job is seen completed earlier than
      it could have been);
    - ``auto``: ``trace`` when every job has a trace completion time, else ``replay``.
    """
    if source not in COMPLETION_SOURCES:
        raise ValueError(f"completion source must be one of {COMPLETION_SOURCES}, got {source!r}")
    if source in ("auto", "trace"):
        c, where = trace_completion_times(jobs)
        missing = int(np.count_nonzero(~np.isfinite(c))) if c is not None else jobs.height
        if c is not None and missing == 0:
            if np.any(c < jobs["submit_time"].to_numpy()):
                bad = int(np.flatnonzero(c < jobs["submit_time"].to_numpy())[0])
                raise WorkloadError(f"job {jobs['job_id'][bad]}: trace completion ({where}) precedes its submission")
            return c, f"trace ({where})"
        if source == "trace":
            why = "has no trace completion times" if c is None else f"lacks {missing} trace completion time(s)"
            raise WorkloadError(
                f"the workload {why} ({where or 'no trace_end_time, end_time, start_time or swf_wait column'}); "
                "use completion 'replay' (an EASY replay) or 'no-wait'"
            )
    if source == "no-wait":
        return (jobs["submit_time"] + jobs["runtime"]).to_numpy().astype(np.float64), "no-wait (submit + runtime)"
    if machine_size is None:
        raise ValueError("an EASY replay needs the machine size")
    return easy_replay(jobs, machine_size)[1], f"replay (EASY on {machine_size} units)"


def prepare(jobs: pl.DataFrame) -> pl.DataFrame:
    """The canonical table in queue order, as predictors expect it."""
    return sort_queue_order(coerce_columns(jobs))


class CombinedPredictor:
    """Several predictors as one (e.g. power and runtime in the same simulation): each sees every completion
    and submission; their outputs are merged (names must not clash)."""

    def __init__(self, *parts: OnlinePredictor) -> None:
        names = [n for p in parts for n in p.outputs]
        clash = {n for n in names if names.count(n) > 1}
        if clash:
            raise ValueError(f"predictors produce the same output(s) {sorted(clash)}")
        self.parts = parts
        self.name = "+".join(p.name for p in parts)
        self.outputs = tuple(names)

    def bind(self, jobs: pl.DataFrame) -> None:
        for p in self.parts:
            p.bind(jobs)

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        for p in self.parts:
            p.observe(rows, end_times)

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for p in self.parts:
            out |= p.predict(rows, now)
        return out
