"""Conservative backfilling (Mu'alem & Feitelson 2001) over a persistent availability profile.

Every queued job holds a reservation in an availability profile; reservations are never moved later (early
completions compress them), new jobs are placed after all earlier reservations. Moved out of
``queue_policies`` (issue 18) so the profile structure can evolve on its own; ``conservative_pass`` keeps the
signature the kernel calls.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from wattsched.policies.profile import (
    first_at_least_units,
    first_short,
    gallop_back,
    gallop_forward,
    insert_at,
    last_short,
    lower_bound_near,
    profile_breakpoint,
    slot_end,
)
from wattsched.policies.queue_policies import _collect_side, _next_end
from wattsched.policies.sorted_pairs import insert_pair, insertion_sort_pairs

# ``pol`` layout: the profile's breakpoint count and the reservation count kept between passes, then operation
# counters (always on: a few integer increments per search; bench/conservative.py reports them).
POL_PN = 0
POL_RN = 1
CNT_SEARCHES = 2  # earliest-fit searches (placements and compression attempts that reach a search)
CNT_EMPTY = 3  # compression searches that found no earlier start
CNT_SCANNED = 4  # breakpoints visited by searches
CNT_MOVED = 5  # array elements shifted by profile and reservation-list edits
CNT_COMPRESSIONS = 6  # compression sweeps
CNT_SWEPT = 7  # reservations visited by compression sweeps
CNT_CANDIDATES = 8  # reservations that passed the sweep's size filter
CNT_MOVES = 9  # reservations moved earlier
POL_SIZE = 10
COUNTER_NAMES = (
    "fit_searches",
    "empty_searches",
    "breakpoints_scanned",
    "elements_moved",
    "compressions",
    "swept",
    "candidates",
    "moves",
)


# ``_add`` and ``_add_near`` are not inlined by numba (``inline="always"``): inlining their nested profile edits at
# six call sites cost 34 s of compilation at set-up (the warm-up's queue step 76.7 -> 42.2 s) for about 4% of
# conservative's run time on RICC (150,000 jobs, best of 5: 4.93 -> 5.14 CPU s; issue 32).
@njit(cache=True)
def _add(pt, pa, pn, t0, t1, delta, cnt):
    """``profile.profile_add`` that also counts the elements it shifts and updates into ``cnt``."""
    if t1 <= t0:
        return pn
    a, n1 = profile_breakpoint(pt, pa, pn, t0)
    b, n2 = profile_breakpoint(pt, pa, n1, t1)
    for x in range(a, b):
        pa[x] += delta
    cnt[CNT_MOVED] += (n1 - pn) * (pn - a) + (n2 - n1) * (n1 - b) + (b - a)
    return n2


@njit(cache=True, inline="always")
def _earliest_fit(pt, pa, pn, need, dur, cnt):
    """``profile.earliest_fit`` by ``_earlier_fit``'s backward window checks (a new job's fit is usually past
    every reservation, so a forward search alternated through the whole profile); counts into ``cnt``."""
    k, scanned = _earlier_fit(pt, pa, pn, 0, pn, need, dur, np.inf, True)
    cnt[CNT_SEARCHES] += 1
    cnt[CNT_SCANNED] += scanned
    return k


@njit(cache=True)
def _rebase(pt, pa, pn, now):
    """Drop the profile before ``now`` and merge breakpoints that no longer change the availability."""
    k = 0
    while k + 1 < pn and pt[k + 1] <= now:
        k += 1
    w = 0
    for r in range(k, pn):
        if w > 0 and pa[r] == pa[w - 1]:
            continue
        pt[w] = pt[r]
        pa[w] = pa[r]
        w += 1
    pt[0] = now
    return w


@njit(cache=True)
def _place(pt, pa, pn, j, size, estimate, reservation, first_reservation, cnt):
    """Reserve job j at its earliest fit; returns the new breakpoint count."""
    k = _earliest_fit(pt, pa, pn, size[j], estimate[j], cnt)
    t = pt[k]
    reservation[j] = t
    if math.isnan(first_reservation[j]):
        first_reservation[j] = t
    return _add_near(pt, pa, pn, k, t, slot_end(t, estimate[j]), -size[j], cnt)


@njit(cache=True)
def _profile_from_running(now, free, run_end, run_job, rc, job_start, walltime, size, side_end, side_job, pt, pa):
    """Availability profile of the running jobs alone (overdue ones re-dated to their walltime end)."""
    first, sc = _collect_side(now, run_end, run_job, rc, job_start, walltime, side_end, side_job, 0)
    insertion_sort_pairs(side_end, side_job, sc)
    pt[0] = now
    pa[0] = free
    pn = 1
    a = first
    b = 0
    while a < rc or b < sc:
        e, j, a, b = _next_end(run_end, run_job, rc, a, side_end, side_job, sc, b)
        s = size[j]
        if e == pt[pn - 1]:
            pa[pn - 1] += s
        else:
            pt[pn] = e
            pa[pn] = pa[pn - 1] + s
            pn += 1
    return pn


@njit(cache=True)
def _add_near(pt, pa, pn, hint, t0, t1, delta, cnt):
    """``_add`` with the breakpoints looked up from index ``hint`` (near t0) instead of by binary search."""
    if t1 <= t0:
        return pn
    a = lower_bound_near(pt, pn, hint, t0)
    n1 = insert_at(pt, pa, pn, a, t0)
    b = gallop_forward(pt, a, n1, t1)
    n2 = insert_at(pt, pa, n1, b, t1)
    for x in range(a, b):
        pa[x] += delta
    cnt[CNT_MOVED] += (n1 - pn) * (pn - a) + (n2 - n1) * (n1 - b) + (b - a)
    return n2


@njit(cache=True, inline="always")
def _earlier_fit(pt, pa, pn, k0, kl, need, dur, own_end, nonnegative):
    """First breakpoint index k in [k0, kl) at which ``need`` units stay free for ``dur`` seconds, counting the
    job's own slot as vacated (it starts at breakpoint ``kl`` and ends at ``own_end``), -1 if there is none; and
    the breakpoints visited (an operation counter, returned rather than stored so the sweep's loop keeps it in
    a register).

    Any breakpoint m of a start k's window with too few units fails k and every start up to m (their windows
    hold m too), so the next start tried is after m; the window is checked for the latest such m.

    * Inside the own slot a breakpoint has too few units only below 0 (``need`` more are vacated). When the
      caller knows the profile has nothing below 0 (``nonnegative``) the slot is not checked; otherwise it is
      checked once per search, forwards, as far as windows reach.
    * Before the own slot the window is checked backwards from its end.
    * A window that starts before the own slot ends by ``own_end``, so no later breakpoint can block it."""
    checked = pn if nonnegative else kl  # [kl, checked) holds no breakpoint below 0
    negative = pn  # the first breakpoint below 0 in the own slot, once found
    scanned = 0
    k = k0
    while True:
        k1 = k
        k = first_at_least_units(pa, k, kl, need)
        if k >= kl:
            return -1, scanned + kl - k1
        me = gallop_forward(pt, k + 1, pn, pt[k] + dur)
        scanned += k - k1
        m = -1
        if me > kl:
            if negative < me:
                m = negative
            elif checked < me:
                x = first_short(pt, pa, checked, me, 0, np.inf)
                scanned += x - checked
                if x < me:
                    negative = x
                    m = x
                else:
                    checked = me
        if m < 0:
            hi = me if me < kl else kl
            m = last_short(pa, k + 1, hi, need)
            scanned += hi - (m if m >= 0 else k + 1)
        if m < 0:
            return k, scanned
        k = m + 1


_CACHE = 8


@njit(cache=True)
def _compress(pt, pa, pn, res_t, res_j, rn, size, estimate, reservation, cnt):
    """Classic compression: each reservation, in start order, is removed and placed again at its earliest fit.

    Equivalent to removing and re-inserting every job, but cheaper: a job whose earliest fit is not before its
    current start stays where it is without touching the profile, and failed searches are remembered: when a
    job of at least q units and d seconds found no start before time X, neither will any job needing at least
    as much. A move frees room only from the moved job's old start s on, so a failure of a d-second job then
    still holds for the starts t with t + d <= s: its blocking point lies before s and no availability there
    grew (the failing point is also before the start of any later job's own slot, so vacating that slot cannot
    help). Keeping failures across moves halved the breakpoints scanned on RICC (issue 18). Returns the new
    breakpoint count.
    """
    fail_q = np.empty(_CACHE, dtype=np.int64)
    fail_d = np.empty(_CACHE, dtype=np.float64)
    fail_x = np.empty(_CACHE, dtype=np.float64)
    # A move takes units only where its window had them, so a profile with nothing below 0 keeps it so through
    # the sweep, and the searches need not check the own slots (``_earlier_fit``).
    nonnegative = True
    for x in range(pn):
        nonnegative &= pa[x] >= 0
    nf = 0
    slot = 0
    best = -1
    kp = 0
    candidates = 0  # the counters stay local until the end (a store to ``cnt`` may alias the profile's arrays)
    searches = 0
    empty = 0
    scanned = 0
    moved = 0
    cnt[CNT_COMPRESSIONS] += 1
    cnt[CNT_SWEPT] += rn
    for idx in range(rn):
        s = res_t[idx]
        j = res_j[idx]
        while kp < pn and pt[kp] < s:
            v = pa[kp]
            best = v if v > best else best
            kp += 1
        need = size[j]
        if need > best:
            continue
        candidates += 1
        d = estimate[j]
        own_end = slot_end(s, d)
        # skip the candidate starts a remembered failure rules out
        skip_to = pt[0]
        c = slot
        for _ in range(nf):  # the latest failure first: it rules out most, and the check stops there
            c = c - 1 if c > 0 else _CACHE - 1
            if need >= fail_q[c] and d >= fail_d[c] and fail_x[c] > skip_to:
                skip_to = fail_x[c]
                if skip_to >= s:
                    break
        if skip_to >= s:
            continue
        k0 = gallop_back(pt, kp, skip_to) if skip_to > pt[0] else 0
        searches += 1
        k, visited = _earlier_fit(pt, pa, pn, k0, kp, need, d, own_end, nonnegative)
        scanned += visited
        if k < 0:
            empty += 1
            fail_q[slot] = need
            fail_d[slot] = d
            fail_x[slot] = s
            slot = (slot + 1) % _CACHE
            if nf < _CACHE:
                nf += 1
            continue
        t = pt[k]
        new_end = slot_end(t, d)
        if new_end > s:  # the slots overlap: only [t, s) and [new_end, own_end) change (same breakpoints)
            pn = _add_near(pt, pa, pn, k, t, s, -need, cnt)
            pn = _add_near(pt, pa, pn, kp, new_end, own_end, need, cnt)
        else:
            pn = _add_near(pt, pa, pn, kp, s, own_end, need, cnt)
            pn = _add_near(pt, pa, pn, k, t, new_end, -need, cnt)
        # The move freed room only in [s, own_end) (and took room elsewhere): a remembered failure of a job of
        # d' seconds stays true for every start t with t + d' <= s, as its blocking point lies before s.
        for c in range(nf):
            lim = s - fail_d[c]
            while lim + fail_d[c] > s:  # rounding: keep t + d' <= s exact
                lim = np.nextafter(lim, -np.inf)
            if fail_x[c] > lim:
                fail_x[c] = lim
        reservation[j] = t
        cnt[CNT_MOVES] += 1
        # move the entry from idx to its new sorted place before idx
        p = idx
        while p > 0 and (res_t[p - 1] > t or (res_t[p - 1] == t and res_j[p - 1] > j)):
            res_t[p] = res_t[p - 1]
            res_j[p] = res_j[p - 1]
            p -= 1
        moved += idx - p
        res_t[p] = t
        res_j[p] = j
        kp = lower_bound_near(pt, pn, kp, s)  # breakpoints may have been inserted before the walk position
    cnt[CNT_CANDIDATES] += candidates
    cnt[CNT_SEARCHES] += searches
    cnt[CNT_EMPTY] += empty
    cnt[CNT_SCANNED] += scanned
    cnt[CNT_MOVED] += moved
    return pn


@njit(cache=True)
def conservative_pass(
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
    first_reservation,
    side_end,
    side_job,
    out,
    pt,
    pa,
    pol,
    res_t,
    res_j,
    fin,
    fc,
    assumed_end,
):
    """Conservative backfilling with a persistent availability profile (Mu'alem & Feitelson 2001).

    * A new job is placed at its earliest fit in the profile of the running jobs (by expected end) and of every
      reservation already made; simultaneous arrivals in queue order.
    * When a job ends before the end the profile assumed for it (``fin`` lists the jobs ended since the last
      pass; ``assumed_end`` holds those ends), its remaining slot is freed and the schedule is compressed:
      reservations never move later.
    * A running job that outlives its estimate (possible only with estimates below the walltime) is re-dated to
      its walltime end and every reservation is re-made, in reservation order, from the running jobs.
    * Jobs whose reservation is now start now.

    ``pol`` holds (breakpoint count, reservation count) between passes, then the operation counters.
    """
    pn = pol[POL_PN]
    rn = pol[POL_RN]
    overdue = rc > 0 and run_end[0] <= now
    stale = rn > 0 and res_t[0] < now  # a due job could not start (its units held past their estimate)
    if rn == 0 or overdue or stale:
        pn = _profile_from_running(
            now, free, run_end, run_job, rc, job_start, walltime, size, side_end, side_job, pt, pa
        )
        for a in range(rc):
            j = run_job[a]
            assumed_end[j] = run_end[a] if run_end[a] > now else job_start[j] + walltime[j]
        old = rn
        rn = 0
        for idx in range(old):
            j = res_j[idx]  # res list is read in order; entries before idx are already re-placed
            side_end[idx] = res_t[idx]
            side_job[idx] = j
        for idx in range(old):
            j = side_job[idx]
            pn = _place(pt, pa, pn, j, size, estimate, reservation, first_reservation, pol)
            rn = insert_pair(res_t, res_j, rn, reservation[j], j)
    else:
        pn = _rebase(pt, pa, pn, now)
        freed = False
        for x in range(fc):
            f = fin[x]
            e = assumed_end[f]
            if e > now:
                pn = _add(pt, pa, pn, now, e, size[f], pol)
                freed = True
        if freed:
            pn = _compress(pt, pa, pn, res_t, res_j, rn, size, estimate, reservation, pol)
    # Every queued job with a reservation is in the reservation list, so qlen - rn jobs await one: found from
    # the queue's end (new arrivals join there), then placed in queue order. Walking the whole queue at every
    # pass cost about 0.7 CPU s on RICC.
    first = qlen
    unplaced = qlen - rn
    while unplaced > 0 and first > 0:
        first -= 1
        if math.isnan(reservation[queue[first]]):
            unplaced -= 1
    for i in range(first, qlen):
        j = queue[i]
        if math.isnan(reservation[j]):
            pn = _place(pt, pa, pn, j, size, estimate, reservation, first_reservation, pol)
            rn = insert_pair(res_t, res_j, rn, reservation[j], j)
    # Start the jobs reserved now: the profile guarantees they fit together. Then the jobs placed right after
    # a zero-length slot at now (reserved at nextafter(now)) start now too, in reservation order, while units
    # are left, their slots moving to now; the others start in the next pass at this instant, after the
    # zero-length jobs complete.
    due = np.nextafter(now, np.inf)
    ns = 0
    avail = free
    for x in range(rn):
        t = res_t[x]
        if t > due:
            break
        j = res_j[x]
        if size[j] > avail:
            continue
        if t != now:
            pn = _add(pt, pa, pn, t, slot_end(t, estimate[j]), size[j], pol)
            pn = _add(pt, pa, pn, now, slot_end(now, estimate[j]), -size[j], pol)
            reservation[j] = now
        out[ns] = j
        ns += 1
        avail -= size[j]
        assumed_end[j] = slot_end(now, estimate[j])
        res_t[x] = -math.inf  # started: dropped below
    if ns > 0:
        w = 0
        for x in range(rn):
            if res_t[x] != -math.inf:
                res_t[w] = res_t[x]
                res_j[w] = res_j[x]
                w += 1
        rn = w
    pol[POL_PN] = pn
    pol[POL_RN] = rn
    return ns
