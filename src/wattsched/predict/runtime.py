"""Online job-runtime predictors: the requested walltime, the truth (oracle), Tsafrir's last-two average and the
rule cascade of paper 001 (§3; docs/prediction.md §4).

Every predictor follows :class:`~wattsched.core.predictor.OnlinePredictor` and outputs ``pred_runtime``
(seconds, capped by the job's walltime); the cascade also outputs ``pred_runtime_rule`` (1..7, the rule that
fired). ``last2`` and ``rules`` also have a ``sweep`` doing the whole trace protocol in one pass, with exactly
the output of the generic driver of :func:`~wattsched.predict.online.predict_online`.

**Rule cascade.** A job's *profile* is (name, queue, walltime, resource counts); resources are those of
:data:`RESOURCE_FIELDS` present in the table, a null equals a null. The name is the ``name`` column, else
``app_id``, else none: a null or missing name is the empty name, equal to other empty names but with prefix
similarity 0 (so it never partially matches). Per user, the store maps each exact profile to its most recent
*completed* job (overwritten on completion). ``sim(a, b)`` is the length of the longest common leading prefix;
``Pfx`` holds the stored jobs with ``sim ≥ min_prefix`` ([AMBIG-1.1]: default 1). With ``E`` the stored jobs with
exactly the same name, the first rule that yields a job gives its runtime, capped by the walltime:

1. the exact profile; 2. in ``Pfx`` by (sim, recency), the first with equal queue, walltime and resources;
3. in ``E`` with equal queue and walltime, by (recency, count of equal resource fields) ([AMBIG-1.2]);
4. in ``Pfx`` with equal queue and walltime, by (sim, count of equal resource fields), then recency (unspecified
   by the paper; our choice); 5. the most recent of ``E``; 6. the first of ``Pfx`` (sim, then recency);
7. the walltime.

"Recency" is the end time; equal end times are ordered by observation (the later observation is more recent).
A job with a null ``user_id`` has no history and gets the walltime (rule 7); its completion is not stored.

**Indexes** (§8 item 6). Strings and profiles are encoded to dense ints with Polars; each distinct name prefix
gets an int id (a trie flattened into a dict), so a prefix bucket key is one int ``group·n_prefixes + prefix``.
Hash maps hold the latest job per full profile (rule 1), per (user, queue, walltime, resources, prefix) (rule 2),
per (user, name) (rule 5) and per (user, prefix) (rule 6); rules 3 and 4 keep, per (user, name, queue, walltime)
and per (user, queue, walltime, prefix), the current entries in recency order (an insertion-ordered dict,
re-inserted on overwrite). A prediction walks the name's prefixes from the longest down: O(name length + the
entries examined at the deciding prefix), never a scan of the user's history. Rules 3 and 4 stop at the first
entry matching all resources but one: none can match all of them, or rule 1 (resp. 2) would have fired.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from wattsched.predict.online import completion_times, predict_online
from wattsched.predict.registry import make_runtime_predictor

RUNTIME_OUTPUT = "pred_runtime"
RULE_OUTPUT = "pred_runtime_rule"
#: Resource-count columns that belong to the cascade's profile, when present in the table.
RESOURCE_FIELDS = ("size", "cores", "gpus", "mics", "nodes")
#: Rule number of the walltime fallback.
FALLBACK_RULE = 7


def _walltime(jobs: pl.DataFrame) -> np.ndarray:
    return jobs["walltime"].cast(pl.Float64).to_numpy().astype(np.float64, copy=True)


def _user_codes(jobs: pl.DataFrame) -> np.ndarray:
    """Dense user codes from 0; −1 for a null (or absent) user."""
    if "user_id" not in jobs.columns:
        return np.full(jobs.height, -1, dtype=np.int64)
    return jobs["user_id"].rank("dense").fill_null(0).to_numpy().astype(np.int64) - 1


class WalltimePredictor:
    """The requested walltime: what a plain backfilling scheduler assumes, and the baseline to beat."""

    name = "walltime"
    outputs: tuple[str, ...] = (RUNTIME_OUTPUT,)

    def bind(self, jobs: pl.DataFrame) -> None:
        self.walltime_ = _walltime(jobs)

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        """Nothing to learn."""

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        return {RUNTIME_OUTPUT: self.walltime_[np.asarray(rows, dtype=np.int64)]}

    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame:
        return pl.DataFrame([pl.Series(RUNTIME_OUTPUT, _walltime(jobs), nan_to_null=True)])


class OraclePredictor:
    """The true runtime. A named baseline that deliberately reads the truth at submission (it breaks the online
    rule on purpose): the bound on what any runtime predictor can achieve."""

    name = "oracle"
    outputs: tuple[str, ...] = (RUNTIME_OUTPUT,)

    def bind(self, jobs: pl.DataFrame) -> None:
        self.runtime_ = jobs["runtime"].cast(pl.Float64).to_numpy().astype(np.float64, copy=True)

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        """Nothing to learn: it already knows."""

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        return {RUNTIME_OUTPUT: self.runtime_[np.asarray(rows, dtype=np.int64)]}

    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame:
        return pl.DataFrame([pl.Series(RUNTIME_OUTPUT, jobs["runtime"].cast(pl.Float64).to_numpy(), nan_to_null=True)])


def _completion_order(submit: np.ndarray, completion: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Rows with a finite completion time (and ``mask``), in the generic driver's observation order:
    (completion, row). Within one instant, a job submitted earlier comes first, so the jobs completing at their
    own submit instant (seen only after that instant's predictions) come last."""
    known = np.isfinite(completion)
    if mask is not None:
        known &= mask
    done = np.flatnonzero(known)
    return done[np.argsort(completion[done], kind="stable")]


class LastTwoPredictor:
    """Tsafrir et al.'s predictor: the mean runtime of the user's last two completed jobs (completion order),
    the one runtime after a single completion, the walltime before any; always capped by the walltime.

    A job with a null ``user_id`` gets its walltime: an unknown user is not pooled into one anonymous user,
    whose "last two jobs" would belong to unrelated people.
    """

    name = "last2"
    outputs: tuple[str, ...] = (RUNTIME_OUTPUT,)

    def bind(self, jobs: pl.DataFrame) -> None:
        self.users_ = _user_codes(jobs)
        self.walltime_ = _walltime(jobs)
        self.runtime_ = jobs["runtime"].cast(pl.Float64).to_numpy()
        n_users = int(self.users_.max()) + 1 if jobs.height else 0
        self.last_ = np.full(max(n_users, 1), np.nan)  # runtime of the last completion per user
        self.prev_ = np.full(max(n_users, 1), np.nan)  # ... and of the one before

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        users, run, last, prev = self.users_, self.runtime_, self.last_, self.prev_
        for j in np.asarray(rows, dtype=np.int64).tolist():
            u = users[j]
            if u >= 0:
                prev[u] = last[u]
                last[u] = run[j]

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        rows = np.asarray(rows, dtype=np.int64)
        u = self.users_[rows]
        known = u >= 0
        a = np.where(known, self.last_[np.where(known, u, 0)], np.nan)
        b = np.where(known, self.prev_[np.where(known, u, 0)], np.nan)
        return {RUNTIME_OUTPUT: _last_two_value(a, b, self.walltime_[rows])}

    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame:
        """Vectorised trace protocol: per user, count the completions visible at each submission with one
        ``searchsorted`` over (user, time key) and read the last two of them."""
        n = jobs.height
        users = _user_codes(jobs)
        wall = _walltime(jobs)
        run = jobs["runtime"].cast(pl.Float64).to_numpy()
        submit = jobs["submit_time"].cast(pl.Float64).to_numpy()
        completion = np.asarray(completion, dtype=np.float64)
        done = _completion_order(submit, completion, users >= 0)
        seq = done[np.argsort(users[done], kind="stable")]  # grouped by user, observation order within
        # time keys: 2·rank(t), +1 for a completion at its own submit instant (seen after that instant's
        # predictions); a completion is visible to a submission at r iff its key ≤ 2·rank(r)
        instants = np.unique(np.concatenate((completion[seq], submit)))
        kc = 2 * np.searchsorted(instants, completion[seq]) + (submit[seq] == completion[seq])
        kr = 2 * np.searchsorted(instants, submit)
        span = 2 * instants.size + 2
        keyed = users[seq] * span + kc  # ascending: by user, then observation order
        ucode = np.maximum(users, 0)
        upto = np.searchsorted(keyed, ucode * span + kr, side="right")
        count = np.where(users >= 0, upto - np.searchsorted(keyed, ucode * span, side="left"), 0)
        a = np.full(n, np.nan)
        b = np.full(n, np.nan)
        has1 = count >= 1
        has2 = count >= 2
        a[has1] = run[seq[upto[has1] - 1]]
        b[has2] = run[seq[upto[has2] - 2]]
        return pl.DataFrame([pl.Series(RUNTIME_OUTPUT, _last_two_value(a, b, wall), nan_to_null=True)])


def _last_two_value(last: np.ndarray, prev: np.ndarray, wall: np.ndarray) -> np.ndarray:
    value = np.where(np.isnan(prev), last, (last + prev) / 2.0)
    value = np.where(np.isnan(last), wall, value)
    return np.minimum(value, wall)


class _Codes:
    """The job table encoded for the cascade: per row ints (lists, for fast scalar access in Python)."""

    def __init__(self, jobs: pl.DataFrame, min_prefix: int) -> None:
        cols = jobs.columns
        self.resources = [c for c in RESOURCE_FIELDS if c in cols]
        name_col = "name" if "name" in cols else "app_id" if "app_id" in cols else None
        name = (pl.col(name_col).cast(pl.Utf8).fill_null("") if name_col else pl.lit("", dtype=pl.Utf8)).alias("n")
        user = (pl.col("user_id") if "user_id" in cols else pl.lit(None, dtype=pl.Int64)).alias("u")
        queue = (pl.col("queue").cast(pl.Utf8) if "queue" in cols else pl.lit(None, dtype=pl.Utf8)).alias("q")
        wall = pl.col("walltime").cast(pl.Float64).alias("w")
        res = [pl.col(c).alias(f"r{k}") for k, c in enumerate(self.resources)]

        def code(*exprs: pl.Expr) -> pl.Expr:
            # dense ints from 1; a null is a value of its own (null equals null)
            return pl.struct(*exprs).rank("dense").cast(pl.Int64)

        frame = jobs.select(
            name.alias("name"),
            code(user, name, queue, wall, *res).alias("full"),
            code(user, queue, wall, *res).alias("uqwr"),
            code(user, name, queue, wall).alias("unqw"),
            code(user, queue, wall).alias("uqw"),
            code(user, name).alias("un"),
            *[code(r).alias(f"r{k}") for k, r in enumerate(res)],
        )
        self.user: list[int] = _user_codes(jobs).tolist()
        self.full: list[int] = frame["full"].to_list()
        self.uqwr: list[int] = frame["uqwr"].to_list()
        self.unqw: list[int] = frame["unqw"].to_list()
        self.uqw: list[int] = frame["uqw"].to_list()
        self.un: list[int] = frame["un"].to_list()
        res_codes = frame.select(f"r{k}" for k in range(len(res))).rows()
        self.res: list[tuple[int, ...]] = res_codes
        # prefix ids of each distinct name, lengths min_prefix..len(name) (a flattened trie)
        prefix_id: dict[str, int] = {}
        per_name: dict[str, tuple[int, ...]] = {}
        names = frame["name"].to_list()
        for s in dict.fromkeys(names):  # first-occurrence order: deterministic ids
            per_name[s] = tuple(prefix_id.setdefault(s[:k], len(prefix_id)) for k in range(min_prefix, len(s) + 1))
        self.n_prefixes = max(len(prefix_id), 1)
        self.prefixes: list[tuple[int, ...]] = [per_name[s] for s in names]
        self.walltime: list[float] = jobs["walltime"].cast(pl.Float64).to_list()
        self.runtime: list[float] = jobs["runtime"].cast(pl.Float64).to_list()


class _Cascade:
    """The cascade's store and indexes; ``insert`` a completed job, ``predict`` one submitted job."""

    def __init__(self, codes: _Codes) -> None:
        self.c = codes
        self.n_res = len(codes.resources)
        self.end: dict[int, float] = {}
        self.active: set[int] = set()  # users with at least one stored job
        self.full: dict[int, int] = {}  # profile → row (rule 1)
        self.qwr_pfx: dict[int, int] = {}  # (user, queue, walltime, resources, prefix) → latest row (rule 2)
        self.nqw: dict[int, dict[int, int]] = {}  # (user, name, queue, walltime) → {profile: row}, oldest first
        self.qw_pfx: dict[int, dict[int, int]] = {}  # (user, queue, walltime, prefix) → {profile: row} (rule 4)
        self.name: dict[int, int] = {}  # (user, name) → latest row (rule 5)
        self.pfx: dict[int, int] = {}  # (user, prefix) → latest row (rule 6)

    def insert(self, j: int, end: float) -> None:
        c = self.c
        u = c.user[j]
        if u < 0:
            return
        self.active.add(u)
        self.end[j] = end
        p = c.full[j]
        self.full[p] = j
        pf = c.prefixes[j]
        npf = c.n_prefixes
        if pf:
            g = c.uqwr[j] * npf
            d = self.qwr_pfx
            for q in pf:
                d[g + q] = j
            g = c.uqw[j] * npf
            dd = self.qw_pfx
            for q in pf:
                b = dd.get(g + q)
                if b is None:
                    dd[g + q] = {p: j}
                else:
                    b.pop(p, None)
                    b[p] = j
            g = u * npf
            d = self.pfx
            for q in pf:
                d[g + q] = j
        b = self.nqw.get(c.unqw[j])
        if b is None:
            self.nqw[c.unqw[j]] = {p: j}
        else:
            b.pop(p, None)
            b[p] = j
        self.name[c.un[j]] = j

    def _best_resources(self, rows: Any, ri: tuple[int, ...], same_end: bool) -> int:
        """Among ``rows`` (most recent first), the first with the most resource fields equal to ``ri``;
        ``same_end`` limits the search to the rows ending with the first one (rule 3's recency tie)."""
        target = self.n_res - 1  # the most possible once rules 1/2 found nothing
        res = self.c.res
        end = self.end
        best = -1
        best_count = -1
        first_end = math.nan
        for j in rows:
            if best < 0:
                first_end = end[j]
            elif same_end and end[j] != first_end:
                break
            count = sum(1 for a, b in zip(res[j], ri, strict=True) if a == b) if target else 0
            if count > best_count:
                best, best_count = j, count
                if count >= target:
                    break
        return best

    def predict(self, i: int) -> tuple[float, int]:
        c = self.c
        w = c.walltime[i]
        u = c.user[i]
        if u < 0 or u not in self.active:
            return w, FALLBACK_RULE
        j = self.full.get(c.full[i])
        rule = 1
        if j is None:
            pf = c.prefixes[i]
            npf = c.n_prefixes
            j = self._rule2(c.uqwr[i] * npf, pf) if pf else None
            rule = 2
            if j is None:
                b = self.nqw.get(c.unqw[i])
                rule = 3
                if b:
                    j = self._best_resources(reversed(b.values()), c.res[i], True)
                elif pf:
                    rule = 4
                    g = c.uqw[i] * npf
                    dd = self.qw_pfx
                    for q in reversed(pf):
                        b = dd.get(g + q)
                        if b:
                            j = self._best_resources(reversed(b.values()), c.res[i], False)
                            break
                if j is None:
                    j = self.name.get(c.un[i])
                    rule = 5
                    if j is None and pf:
                        rule = 6
                        g = u * npf
                        d = self.pfx
                        for q in reversed(pf):
                            j = d.get(g + q)
                            if j is not None:
                                break
                    if j is None:
                        return w, FALLBACK_RULE
        v = c.runtime[j]
        return (v if v < w else w), rule

    def _rule2(self, g: int, pf: tuple[int, ...]) -> int | None:
        d = self.qwr_pfx
        for q in reversed(pf):
            j = d.get(g + q)
            if j is not None:
                return j
        return None


class RuleCascadePredictor:
    """The rule-cascade duration predictor of paper 001 (§3; docs/prediction.md §4; see the module docstring).

    ``min_prefix`` is the shortest common name prefix that counts as a partial match ([AMBIG-1.1]; the code's
    behaviour, any common first character, is the default 1).
    """

    name = "rules"
    outputs: tuple[str, ...] = (RUNTIME_OUTPUT, RULE_OUTPUT)

    def __init__(self, min_prefix: int = 1) -> None:
        if int(min_prefix) != min_prefix or min_prefix < 1:
            raise ValueError(f"min_prefix must be an integer ≥ 1, got {min_prefix!r}")
        self.min_prefix = min_prefix

    def bind(self, jobs: pl.DataFrame) -> None:
        self.state_ = _Cascade(_Codes(jobs, int(self.min_prefix)))
        self.last_end_ = -math.inf

    def observe(self, rows: np.ndarray, end_times: np.ndarray) -> None:
        rows_l = np.asarray(rows, dtype=np.int64).tolist()
        e = np.asarray(end_times, dtype=np.float64)
        if e.size and (e[0] < self.last_end_ or np.any(np.diff(e) < 0)):
            raise ValueError("the rule cascade must observe completions in time order")
        ends = e.tolist()
        insert = self.state_.insert
        for j, e in zip(rows_l, ends, strict=True):
            insert(j, e)
        if ends:
            self.last_end_ = ends[-1]

    def predict(self, rows: np.ndarray, now: float) -> dict[str, np.ndarray]:
        rows_l = np.asarray(rows, dtype=np.int64).tolist()
        predict = self.state_.predict
        pairs = [predict(i) for i in rows_l]
        value = np.fromiter((p[0] for p in pairs), dtype=np.float64, count=len(pairs))
        rule = np.fromiter((p[1] for p in pairs), dtype=np.int64, count=len(pairs))
        return {RUNTIME_OUTPUT: value, RULE_OUTPUT: rule}

    def sweep(self, jobs: pl.DataFrame, completion: np.ndarray) -> pl.DataFrame:
        """The trace protocol in one pass over the merged completions and submissions."""
        n = jobs.height
        state = _Cascade(_Codes(jobs, int(self.min_prefix)))
        submit = jobs["submit_time"].cast(pl.Float64).to_numpy()
        completion = np.asarray(completion, dtype=np.float64)
        done = _completion_order(submit, completion).tolist()
        sub = submit.tolist()
        comp = completion.tolist()
        insert, predict = state.insert, state.predict
        values = [0.0] * n
        rules = [0] * n
        k = 0
        nd = len(done)
        for i in range(n):
            r = sub[i]
            # completions seen before the submission at r: earlier instants, and this instant's unless the job
            # was itself submitted at r
            while k < nd:
                j = done[k]
                e = comp[j]
                if e < r or (e == r and sub[j] < r):
                    insert(j, e)
                    k += 1
                else:
                    break
            values[i], rules[i] = predict(i)
        return pl.DataFrame(
            [
                pl.Series(RUNTIME_OUTPUT, values, dtype=pl.Float64, nan_to_null=True),
                pl.Series(RULE_OUTPUT, rules, dtype=pl.Int64),
            ]
        )


def predict_runtime(
    jobs: pl.DataFrame,
    method: str,
    completion: np.ndarray | str = "auto",
    *,
    machine_size: int | None = None,
    use_sweep: bool = True,
    **options: Any,
) -> pl.DataFrame:
    """Runtime predictions of every job of ``jobs`` (queue order) under the trace protocol: the predictor's
    output columns, aligned with ``jobs``.

    ``completion`` is an array of completion times aligned with ``jobs``, or a source for
    :func:`~wattsched.predict.online.completion_times` (``machine_size`` is then needed by ``replay``).
    """
    predictor = make_runtime_predictor(method, **options)  # by name, from the registry
    if isinstance(completion, str):
        completion, _ = completion_times(jobs, completion, machine_size=machine_size)
    return predict_online(predictor, jobs, completion, use_sweep=use_sweep)
