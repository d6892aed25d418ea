"""Queue-ordering policies with optional backfilling, as numba kernels over the policy's *view*.

A pass receives only what a real resource manager knows: the queue (in policy order), each job's size, walltime
and runtime estimate, the running jobs' start times and expected ends (start + estimate), and the free units.
It never receives true runtimes: those arrays are not among its parameters (see ``wattsched.engine.kernel``).

One pass = the decisions at one instant. It writes the indices of the jobs to start now into ``out`` and returns
how many it wrote; the engine validates and applies them. Semantics (see docs/semantics.md):

* ``none`` (FCFS/SJF/LJF): start queue jobs in order while they fit; stop at the first that does not.
* ``easy``: the same, then the first job that does not fit (the priority job) gets a reservation at the shadow
  time; later jobs are backfilled if they fit now and either end (by estimate) no later than the shadow time or
  use no more than the ``extra`` units (which then shrink).
* ``conservative``: every queued job holds a reservation in an availability profile; reservations are never
  moved later (early completions compress them), new jobs are placed after all earlier reservations.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from wattsched.policies.fit_index import NO_FIT, fit_next
from wattsched.policies.sorted_pairs import insertion_sort_pairs, upper_bound

BACKFILL_NONE = 0
BACKFILL_EASY = 1
BACKFILL_CONSERVATIVE = 2
KNAPSACK_WAIT = 3  # greedy knapsack in the power window (paper 000 Algorithm 2), EASY+PC FCFS after it
KNAPSACK_STRETCH = 4
KNAPSACK_EXACT_WAIT = 5  # exact knapsack (CP-SAT, in Python) in the window: the loop hands those passes out
KNAPSACK_EXACT_STRETCH = 6

ORDER_FCFS = 0
ORDER_SJF = 1
ORDER_LJF = 2
ORDER_SAF = 3


def order_keys(order: int, estimate: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Static sort key per job; the queue is kept sorted by (key, queue rank). Ties fall back to (submit, id)."""
    if order == ORDER_FCFS:
        return np.zeros(len(estimate), dtype=np.float64)
    if order == ORDER_SJF:
        return estimate.astype(np.float64)
    if order == ORDER_LJF:
        return -estimate.astype(np.float64)
    if order == ORDER_SAF:
        return estimate.astype(np.float64) * size.astype(np.float64)
    raise ValueError(f"unknown queue order code {order}")


# Power checks (paper 000 §5.2; docs/semantics.md §3.3). A policy's platform power is the sum of the running
# jobs' estimates. Every check is one rule, a·(Σm + m_j) + b·(ΣM + M_j) + k·sqrt(Σs² + s_j²) ≤ cap (< when
# strict), its coefficients in the float parameters (PF_A, PF_B, PF_K, PF_STRICT) from the registry of
# policies/powercheck.py: a new check needs no edit here.
CHECK_NONE = 0
CHECK_RULE = 1

RESERVE_NODES = 0  # the priority job's reservation counts nodes only (faithful, [AMBIG-0.7])
RESERVE_NODES_POWER = 1  # ... nodes and estimated power, with the cap in force at the shadow time

SHADOW_NOW = 0  # a priority job blocked by power only: shadow = now, extra = free − size
SHADOW_FIRST_END = 1  # ... shadow = the first expected end (easy.cpp)

KNAPSACK_STOP = 0  # stop at the first job that does not fit (faithful)
KNAPSACK_SKIP = 1  # skip it and go on (same cost, better packing)

# Indices into the power configuration (int), power parameters (float) and running-sum arrays.
PC_CHECK = 0
PC_RESERVE = 1
PC_SHADOW = 2
PC_KNAPSACK = 3
PF_K = 0
PF_KNAPSACK_END = 1
PF_KEY_IS_ESTIMATE = 2  # 1.0 when the queue order's key is the runtime estimate itself (SJF)
PF_A = 3  # the rule's weight of the mean estimates
PF_B = 4  # ... of the max estimates
PF_STRICT = 5  # 1.0: the level must stay strictly below the cap
PF_SIZE = 6
SUM_M = 0
SUM_MAX = 1
SUM_S2 = 2


@njit(cache=True)
def power_fits(check, pf, cap, sm, smax, ss2, m, mx, sd):
    """Whether a job with estimates (m, mx, sd) fits under ``cap`` next to running sums (sm, smax, ss2), by the
    rule whose coefficients are in ``pf`` (the same arithmetic as ``powercheck.CheckRule.fits``; terms with a
    zero coefficient are skipped, so mean, max and the Gaussian checks compute exactly what they always did)."""
    if check == CHECK_NONE or cap == math.inf:
        return True
    v = 0.0
    if pf[PF_A] != 0.0:
        v += pf[PF_A] * (sm + m)
    if pf[PF_B] != 0.0:
        v += pf[PF_B] * (smax + mx)
    if pf[PF_K] != 0.0:
        v += pf[PF_K] * math.sqrt(ss2 + sd * sd)
    if pf[PF_STRICT] != 0.0:
        return v < cap
    return v <= cap


@njit(cache=True)
def cap_at(cap_t, cap_v, t):
    """The cap in force at t (breakpoints ascending, the first at or before any simulated time)."""
    i = upper_bound(cap_t, cap_t.shape[0], t)
    return cap_v[i - 1] if i > 0 else math.inf


@njit(cache=True)
def _collect_side(now, run_end, run_job, rc, job_start, walltime, side_end, side_job, sc):
    """Append overdue running jobs (re-dated to their walltime end) to the side list; return (first, sc).

    ``first`` is the index of the first non-overdue entry of the sorted running list.
    """
    first = 0
    while first < rc and run_end[first] <= now:
        j = run_job[first]
        side_end[sc] = job_start[j] + walltime[j]
        side_job[sc] = j
        sc += 1
        first += 1
    return first, sc


@njit(cache=True)
def _next_end(run_end, run_job, rc, a, side_end, side_job, sc, b):
    """Next (end, job) of the running list merged with the side list; returns (end, job, a, b)."""
    if b >= sc or (a < rc and run_end[a] <= side_end[b]):
        return run_end[a], run_job[a], a + 1, b
    return side_end[b], side_job[b], a, b + 1


@njit(cache=True)
def _reservation(
    now,
    pj,
    free,
    run_end,
    run_job,
    rc,
    first,
    side_end,
    side_job,
    sc,
    size,
    pcfg,
    pf,
    sums,
    est_m,
    est_max,
    est_s,
    cap_t,
    cap_v,
    shadow_sums,
):
    """Shadow time and extra units for the priority job pj; fills ``shadow_sums`` with the estimated power
    still running at the shadow time plus pj's (what backfilled jobs that outlast the shadow must fit next to).

    ``nodes``: the earliest expected end at which pj's units are free (all jobs ending then count towards
    ``extra``); when its units are free already (pj is blocked by power), the shadow is now (or, with
    ``SHADOW_FIRST_END``, the first expected end). ``nodes+power``: the earliest instant — an expected end or a
    cap change — at which both its units and its estimated power fit.
    """
    need = size[pj]
    reserve_power = pcfg[PC_RESERVE] == RESERVE_NODES_POWER and pcfg[PC_CHECK] != CHECK_NONE
    check = pcfg[PC_CHECK]
    sm = sums[SUM_M]
    smax = sums[SUM_MAX]
    ss2 = sums[SUM_S2]
    avail = free
    shadow = math.inf
    a = first
    b = 0
    c = upper_bound(cap_t, cap_t.shape[0], now)  # next cap change after now
    if need <= avail and not reserve_power:
        if pcfg[PC_SHADOW] == SHADOW_NOW or (a >= rc and b >= sc):
            shadow = now
        else:
            shadow = run_end[a] if b >= sc or (a < rc and run_end[a] <= side_end[b]) else side_end[b]
            # units freed at the first expected end count towards extra
            # (written out, not a helper: a call here costs EASY-SJF ~70% on RICC, measured)
            while a < rc or b < sc:
                e, j, a2, b2 = _next_end(run_end, run_job, rc, a, side_end, side_job, sc, b)
                if e > shadow:
                    break
                a = a2
                b = b2
                avail += size[j]
                sm -= est_m[j]
                smax -= est_max[j]
                ss2 -= est_s[j] * est_s[j]
    elif (
        reserve_power
        and need <= avail
        and power_fits(check, pf, cap_at(cap_t, cap_v, now), sm, smax, ss2, est_m[pj], est_max[pj], est_s[pj])
    ):
        shadow = now
    else:
        while a < rc or b < sc or (reserve_power and c < cap_t.shape[0]):
            # the next candidate instant: an expected end or (nodes+power) a cap change
            e_end = math.inf
            if a < rc or b < sc:
                e_end = run_end[a] if b >= sc or (a < rc and run_end[a] <= side_end[b]) else side_end[b]
            e_cap = cap_t[c] if reserve_power and c < cap_t.shape[0] else math.inf
            e = min(e_end, e_cap)
            if e == math.inf:
                break
            while a < rc or b < sc:
                e2, j, a2, b2 = _next_end(run_end, run_job, rc, a, side_end, side_job, sc, b)
                if e2 > e:
                    break
                a = a2
                b = b2
                avail += size[j]
                sm -= est_m[j]
                smax -= est_max[j]
                ss2 -= est_s[j] * est_s[j]
            while reserve_power and c < cap_t.shape[0] and cap_t[c] <= e:
                c += 1
            if avail >= need and (
                not reserve_power
                or power_fits(check, pf, cap_at(cap_t, cap_v, e), sm, smax, ss2, est_m[pj], est_max[pj], est_s[pj])
            ):
                shadow = e
                break
    shadow_sums[SUM_M] = sm + est_m[pj]
    shadow_sums[SUM_MAX] = smax + est_max[pj]
    shadow_sums[SUM_S2] = ss2 + est_s[pj] * est_s[pj]
    if shadow == math.inf:
        return math.inf, 0
    return shadow, avail - need


@njit(cache=True)
def _knapsack_pass(
    mode, now, queue, qlen, free, size, estimate, out, pcfg, pf, sums, est_m, est_max, est_s, cap_t, cap_v, submit
):
    """Greedy knapsack (paper 000 Algorithm 2): profit v_j = wait (``KNAPSACK_WAIT``) or stretch
    (wait + p̃)/p̃ (``KNAPSACK_STRETCH``, p̃ floored at 1 s), weight w_j = the rule's a·m + b·M (m for
    mean/gaussian, M for max/naive) floored at 1 W ([AMBIG-0.8]); jobs in descending v/w (ties: queue order)
    start while they fit in units and power; at the first that does not, stop (or skip it, ``KNAPSACK_SKIP``).
    No backfilling, no reservation."""
    check = pcfg[PC_CHECK]
    cap = cap_at(cap_t, cap_v, now)
    ratio = np.empty(qlen)
    for x in range(qlen):
        j = queue[x]
        wait = now - submit[j]
        if mode == KNAPSACK_WAIT:
            v = wait
        else:
            p = estimate[j] if estimate[j] > 1.0 else 1.0
            v = (wait + p) / p
        w = 0.0  # the rule's weight, a·m + b·M (m for mean and the Gaussian checks, M for max and naive)
        if pf[PF_A] != 0.0:
            w += pf[PF_A] * est_m[j]
        if pf[PF_B] != 0.0:
            w += pf[PF_B] * est_max[j]
        if w < 1.0:
            w = 1.0
        ratio[x] = -v / w  # ascending sort of −v/w = descending v/w; stable: ties keep queue order
    order = np.argsort(ratio, kind="mergesort")
    sm = sums[SUM_M]
    smax = sums[SUM_MAX]
    ss2 = sums[SUM_S2]
    ns = 0
    for x in range(qlen):
        j = queue[order[x]]
        if size[j] <= free and power_fits(check, pf, cap, sm, smax, ss2, est_m[j], est_max[j], est_s[j]):
            out[ns] = j
            ns += 1
            free -= size[j]
            sm += est_m[j]
            smax += est_max[j]
            ss2 += est_s[j] * est_s[j]
        elif pcfg[PC_KNAPSACK] == KNAPSACK_STOP:
            break
    return ns


@njit(cache=True)
def prefix_pass(now, queue, qlen, free, size, out, pcfg, pf, sums, est_m, est_max, est_s, cap_t, cap_v):
    """A pass without backfilling (fcfs, sjf, ljf): start the jobs in queue order while they fit (units, and the
    power check of ``pcfg``), stop at the first that does not; returns the number written to ``out``. The
    decisions of :func:`queue_pass` with ``BACKFILL_NONE``, in a small function of its own: its passes paid for
    the arguments and branches EASY's size index added to ``queue_pass`` (fcfs on 1 M jobs 0.95 → 1.24 CPU s)."""
    check = pcfg[PC_CHECK]
    cap = cap_at(cap_t, cap_v, now)
    sm = sums[SUM_M]
    smax = sums[SUM_MAX]
    ss2 = sums[SUM_S2]
    ns = 0
    for i in range(qlen):
        j = queue[i]
        if size[j] > free or not power_fits(check, pf, cap, sm, smax, ss2, est_m[j], est_max[j], est_s[j]):
            break
        out[ns] = j
        ns += 1
        free -= size[j]
        sm += est_m[j]
        smax += est_max[j]
        ss2 += est_s[j] * est_s[j]
    return ns


@njit(cache=True)
def queue_pass(
    backfill,
    now,
    queue,
    qlen,
    free,
    run_end,
    run_job,
    rc,
    job_start,
    size,
    estimate,
    walltime,
    reservation,
    side_end,
    side_job,
    out,
    pcfg,
    pf,
    sums,
    est_m,
    est_max,
    est_s,
    cap_t,
    cap_v,
    shadow_sums,
    submit,
    fit,
    fit_base,
):
    """One scheduling pass for ``none`` and ``easy`` backfilling and the greedy knapsacks, with the power check
    of ``pcfg`` on every start (docs/semantics.md §3.3); returns the number of jobs written to ``out``.

    ``reservation[j]`` receives the shadow time the first time job j becomes the EASY priority job. ``fit``, when
    not empty, is the size index of the queue (policies/fit_index.py; ``queue[x]`` at its position ``fit_base + x``):
    the backfill scan then visits only the jobs whose size fits, in the same order, so the decisions are the same;
    entries whose leaf is ``NO_FIT`` are gaps (jobs started earlier) and are skipped.
    """
    if backfill >= KNAPSACK_WAIT:
        if now < pf[PF_KNAPSACK_END] and backfill in (KNAPSACK_WAIT, KNAPSACK_STRETCH):
            return _knapsack_pass(
                backfill,
                now,
                queue,
                qlen,
                free,
                size,
                estimate,
                out,
                pcfg,
                pf,
                sums,
                est_m,
                est_max,
                est_s,
                cap_t,
                cap_v,
                submit,
            )
        backfill = BACKFILL_EASY  # outside the window: EASY+PC in FCFS order
    check = pcfg[PC_CHECK]
    cap = cap_at(cap_t, cap_v, now)
    sm = sums[SUM_M]
    smax = sums[SUM_MAX]
    ss2 = sums[SUM_S2]
    ns = 0
    sc = 0
    i = 0
    use_fit = fit.shape[0] > 0
    while i < qlen:
        j = queue[i]
        if use_fit and fit[fit_base + i] == NO_FIT:  # a job started earlier, left as a gap (engine/job_queue.py)
            i += 1
            continue
        if size[j] <= free and power_fits(check, pf, cap, sm, smax, ss2, est_m[j], est_max[j], est_s[j]):
            out[ns] = j
            ns += 1
            free -= size[j]
            sm += est_m[j]
            smax += est_max[j]
            ss2 += est_s[j] * est_s[j]
            side_end[sc] = now + estimate[j]
            side_job[sc] = j
            sc += 1
            i += 1
        else:
            break
    if i >= qlen or backfill == BACKFILL_NONE:
        return ns
    pj = queue[i]
    if free == 0 and not math.isnan(reservation[pj]):
        return ns  # nothing can be backfilled and the priority job's first reservation is known
    first, sc = _collect_side(now, run_end, run_job, rc, job_start, walltime, side_end, side_job, sc)
    insertion_sort_pairs(side_end, side_job, sc)
    sums_now = np.empty(3)
    sums_now[SUM_M] = sm
    sums_now[SUM_MAX] = smax
    sums_now[SUM_S2] = ss2
    shadow, extra = _reservation(
        now,
        pj,
        free,
        run_end,
        run_job,
        rc,
        first,
        side_end,
        side_job,
        sc,
        size,
        pcfg,
        pf,
        sums_now,
        est_m,
        est_max,
        est_s,
        cap_t,
        cap_v,
        shadow_sums,
    )
    if math.isnan(reservation[pj]):
        reservation[pj] = shadow
    reserve_power = pcfg[PC_RESERVE] == RESERVE_NODES_POWER and check != CHECK_NONE
    cap_sh = cap_at(cap_t, cap_v, shadow) if reserve_power and shadow < math.inf else math.inf
    # From ``split`` on, a job ends after the shadow time by its estimate, so it must also fit in ``extra``. Known
    # only when the order's key is the estimate (SJF): the jobs ending in time are then a prefix of the queue, and
    # the index skips the others that do not fit in ``extra`` as well (5.4 B of 5.4 B visits rejected them on time
    # and extra for easy-sjf on 5 M Lublin jobs once the size index had removed the size rejections).
    end = fit_base + qlen
    split = end
    if use_fit and pf[PF_KEY_IS_ESTIMATE] == 1.0:
        lo = fit_base + i + 1
        while lo < split:
            mid = (lo + split) // 2
            if now + estimate[queue[mid - fit_base]] <= shadow:
                lo = mid + 1
            else:
                split = mid
    x = i + 1
    while x < qlen and free > 0:
        if use_fit:  # straight to the next job of at most ``free`` units (and ``extra`` past ``split``)
            y = -1
            if fit_base + x < split:
                y = fit_next(fit, fit_base + x, split, free)
            if y < 0:
                y = fit_next(fit, max(fit_base + x, split), end, min(free, extra))
            if y < 0:
                break
            x = y - fit_base
        j = queue[x]
        q = size[j]
        x += 1
        if q > free:
            continue
        ends_in_time = now + estimate[j] <= shadow
        if not ends_in_time and q > extra:
            continue
        if not power_fits(check, pf, cap, sm, smax, ss2, est_m[j], est_max[j], est_s[j]):
            continue
        if (
            not ends_in_time
            and reserve_power
            and not power_fits(
                check,
                pf,
                cap_sh,
                shadow_sums[SUM_M],
                shadow_sums[SUM_MAX],
                shadow_sums[SUM_S2],
                est_m[j],
                est_max[j],
                est_s[j],
            )
        ):
            continue
        out[ns] = j
        ns += 1
        free -= q
        sm += est_m[j]
        smax += est_max[j]
        ss2 += est_s[j] * est_s[j]
        if not ends_in_time:
            extra -= q
            shadow_sums[SUM_M] += est_m[j]
            shadow_sums[SUM_MAX] += est_max[j]
            shadow_sums[SUM_S2] += est_s[j] * est_s[j]
    return ns
