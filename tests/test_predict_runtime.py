"""Online runtime predictors: golden cascade and last-two cases, a naive reference of the cascade, and
properties (no leakage, sweep = generic driver, any batching gives the same predictions)."""

from __future__ import annotations

import math
import os

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from conftest import require_data
from wattsched.core.schema import sort_queue_order
from wattsched.predict.online import completion_times, predict_online
from wattsched.predict.registry import RUNTIME_PREDICTORS, make_runtime_predictor
from wattsched.predict.runtime import (
    RULE_OUTPUT,
    RUNTIME_OUTPUT,
    OraclePredictor,
    RuleCascadePredictor,
    WalltimePredictor,
    predict_runtime,
)

PROFILE = settings(
    max_examples=int(os.environ.get("WATTSCHED_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# --------------------------------------------------------------------------------------------- golden helpers


def assert_same(fast: pl.DataFrame, generic: pl.DataFrame) -> None:
    """Same columns and exactly the same values; dtypes aside, because the generic driver fills float64 buffers
    (its rule column comes out as Float64)."""
    assert_frame_equal(fast, generic, check_dtypes=False, check_exact=True)


DEFAULT = {"user_id": 1, "queue": "a", "walltime": 1000.0, "size": 4}


def history_table(history: list[dict], target: dict, *, cores: bool = False) -> pl.DataFrame:
    """``history`` jobs one after the other (each completes before the next starts, unless ``submit_time`` is
    given), then ``target``; defaults from ``DEFAULT``."""
    rows = []
    for k, job in enumerate([*history, target]):
        row = {"job_id": k + 1, "submit_time": 10_000.0 * k, "runtime": 100.0, "name": "job", **DEFAULT, **job}
        if cores:
            row.setdefault("cores", 16)
        rows.append(row)
    schema = {
        "job_id": pl.Int64,
        "submit_time": pl.Float64,
        "walltime": pl.Float64,
        "runtime": pl.Float64,
        "size": pl.Int64,
        "user_id": pl.Int64,
        "name": pl.Utf8,
        "queue": pl.Utf8,
    }
    if cores:
        schema["cores"] = pl.Int64
    return sort_queue_order(pl.DataFrame(rows, schema=schema))


def cascade_last(history: list[dict], target: dict, *, cores: bool = False, **options) -> tuple[float, int]:
    """(prediction, rule) of the target, completions at submit + runtime (no wait)."""
    jobs = history_table(history, target, cores=cores)
    out = predict_runtime(jobs, "rules", "no-wait", **options)
    last = jobs["job_id"].to_list().index(len(history) + 1)
    return out[RUNTIME_OUTPUT][last], out[RULE_OUTPUT][last]


# --------------------------------------------------------------------------------------------- golden cascade


def test_rule1_exact_profile_wins_over_a_more_recent_job():
    history = [{"name": "sim", "runtime": 300.0}, {"name": "sim", "size": 8, "runtime": 50.0}]
    assert cascade_last(history, {"name": "sim"}) == (300.0, 1)


def test_rule1_overwritten_by_the_latest_completion_and_capped_by_walltime():
    history = [{"name": "sim", "runtime": 300.0}, {"name": "sim", "runtime": 900.0}]
    assert cascade_last(history, {"name": "sim"}) == (900.0, 1)
    # walltime is in the profile: another walltime is not rule 1 but the most recent exact name, capped
    assert cascade_last(history, {"name": "sim", "walltime": 500.0}) == (500.0, 5)
    history = [{"name": "sim", "runtime": 900.0, "walltime": 500.0}]  # killed late: runtime above walltime
    assert cascade_last(history, {"name": "sim", "walltime": 500.0}) == (500.0, 1)


def test_rule2_longest_prefix_with_identical_other_fields():
    history = [
        {"name": "simX", "runtime": 200.0},  # sim 3, same queue/walltime/resources
        {"name": "si", "runtime": 250.0},  # sim 2, same fields, more recent
        {"name": "sim", "size": 8, "runtime": 500.0},  # exact name, other resources
    ]
    assert cascade_last(history, {"name": "simY"}) == (200.0, 2)
    # the stored name may be longer than the target's: sim = len(target name)
    assert cascade_last([{"name": "simulation", "runtime": 70.0}], {"name": "sim"}) == (70.0, 2)


def test_rule2_same_prefix_length_takes_the_most_recent():
    history = [{"name": "abX", "runtime": 10.0}, {"name": "abY", "runtime": 20.0}]
    assert cascade_last(history, {"name": "abZ"}) == (20.0, 2)


def test_rule3_wins_over_rule2_spec_example():
    # exact name with different resources, same queue and walltime; no prefix match has identical resources
    history = [
        {"name": "run_a", "size": 8, "runtime": 400.0},
        {"name": "run_b", "size": 16, "runtime": 100.0},
        {"name": "xyz", "size": 4, "runtime": 50.0},  # identical resources but no common prefix
    ]
    assert cascade_last(history, {"name": "run_a", "size": 4}) == (400.0, 3)


def test_rule3_recency_before_resource_similarity():  # [AMBIG-1.2]
    history = [
        {"name": "sim", "size": 4, "cores": 32, "runtime": 100.0},  # one equal resource field, older
        {"name": "sim", "size": 2, "cores": 32, "runtime": 200.0},  # none equal, more recent
    ]
    assert cascade_last(history, {"name": "sim", "size": 4, "cores": 16}, cores=True) == (200.0, 3)


def test_rule3_equal_end_times_broken_by_resource_similarity():
    history = [  # both complete at t = 500
        {"name": "sim", "size": 4, "cores": 32, "submit_time": 0.0, "runtime": 500.0},
        {"name": "sim", "size": 2, "cores": 32, "submit_time": 100.0, "runtime": 400.0},
    ]
    assert cascade_last(history, {"name": "sim", "size": 4, "cores": 16}, cores=True) == (500.0, 3)


def test_rule4_prefix_then_resources_then_recency():
    # the exact name is in another queue, so rule 3 finds nothing; rule 4 ranks by similarity first
    history = [
        {"name": "job1", "queue": "b", "runtime": 333.0},
        {"name": "jobA", "size": 8, "runtime": 111.0},  # sim 3
        {"name": "jo", "size": 2, "runtime": 222.0},  # sim 2, more recent
    ]
    assert cascade_last(history, {"name": "job1"}) == (111.0, 4)
    history = [
        {"name": "jobA", "size": 4, "cores": 32, "runtime": 111.0},  # sim 3, one equal field, older
        {"name": "jobB", "size": 2, "cores": 32, "runtime": 222.0},  # sim 3, none equal
        {"name": "jo", "size": 4, "cores": 8, "runtime": 333.0},  # sim 2
    ]
    assert cascade_last(history, {"name": "job1", "size": 4, "cores": 16}, cores=True) == (111.0, 4)
    history = [{"name": "jobA", "size": 8, "runtime": 111.0}, {"name": "jobB", "size": 2, "runtime": 222.0}]
    assert cascade_last(history, {"name": "job1"}) == (222.0, 4)  # tie: the most recent (our choice)


def test_rule5_most_recent_exact_name():
    history = [
        {"name": "job1", "queue": "b", "runtime": 333.0},
        {"name": "job1", "walltime": 2000.0, "runtime": 444.0},
        {"name": "jobA", "queue": "b", "runtime": 111.0},
    ]
    assert cascade_last(history, {"name": "job1"}) == (444.0, 5)


def test_rule6_longest_prefix_then_recency():
    history = [
        {"name": "jobA", "queue": "b", "runtime": 111.0},  # sim 3
        {"name": "jx", "queue": "b", "runtime": 222.0},  # sim 1, more recent
        {"name": "jobB", "walltime": 50.0, "runtime": 40.0},  # sim 3, other walltime, most recent
    ]
    assert cascade_last(history, {"name": "jobZ"}) == (40.0, 6)
    assert cascade_last(history[:2], {"name": "jobZ"}) == (111.0, 6)
    assert cascade_last(history[:2], {"name": "jobZ", "walltime": 100.0}) == (100.0, 6)  # capped


def test_rule7_fallback_other_user_no_prefix_null_user():
    assert cascade_last([{"name": "zzz"}], {"name": "job"}) == (1000.0, 7)
    assert cascade_last([{"name": "job", "user_id": 2}], {"name": "job"}) == (1000.0, 7)
    assert cascade_last([], {"name": "job"}) == (1000.0, 7)
    # a null user has no history, even among null-user jobs
    assert cascade_last([{"name": "job", "user_id": None}], {"name": "job", "user_id": None}) == (1000.0, 7)


def test_min_prefix_option():  # [AMBIG-1.1]
    history = [{"name": "jobA", "queue": "b", "runtime": 111.0}]
    assert cascade_last(history, {"name": "jobZ"}, min_prefix=3) == (111.0, 6)
    assert cascade_last(history, {"name": "jobZ"}, min_prefix=4) == (1000.0, 7)
    assert cascade_last([{"name": "jobA", "runtime": 5.0}], {"name": "jobZ"}, min_prefix=4) == (1000.0, 7)
    assert cascade_last([{"name": "jo", "runtime": 5.0}], {"name": "jo"}, min_prefix=3) == (5.0, 1)
    with pytest.raises(ValueError, match="min_prefix"):
        RuleCascadePredictor(min_prefix=0)


def test_empty_names_are_equal_but_never_prefix_matches():
    history = [{"name": None, "queue": "b", "runtime": 10.0}, {"name": "x", "queue": "b", "runtime": 20.0}]
    assert cascade_last(history, {"name": None}) == (10.0, 5)  # exact (empty) name, not the prefix rule
    assert cascade_last([{"name": "", "size": 8, "runtime": 30.0}], {"name": None}) == (30.0, 3)


def test_name_falls_back_to_app_id_then_to_no_names():
    jobs = history_table([{"name": "appX", "queue": "b", "runtime": 10.0}], {"name": "appY"})
    out = predict_runtime(jobs.rename({"name": "app_id"}), "rules", "no-wait")
    assert out.row(1) == (10.0, 6)
    out = predict_runtime(jobs.drop("name"), "rules", "no-wait")
    assert out.row(1) == (10.0, 5)  # no names: all empty, equal


# --------------------------------------------------------------------------------------------- other predictors


def last2_jobs() -> tuple[pl.DataFrame, np.ndarray]:
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4, 5, 6, 7],
            "submit_time": [0.0, 10.0, 200.0, 600.0, 700.0, 700.0, 800.0],
            "walltime": [1000.0, 1000.0, 1000.0, 1000.0, 250.0, 1000.0, 1000.0],
            "runtime": [500.0, 100.0, 40.0, 60.0, 10.0, 10.0, 10.0],
            "size": [1] * 7,
            "user_id": [1, 1, 1, 1, 1, None, 2],
        }
    )
    completion = np.array([500.0, 110.0, 5000.0, 6000.0, 7000.0, 7100.0, 7200.0])
    return jobs, completion


def test_last2_golden():
    jobs, completion = last2_jobs()
    out = predict_runtime(jobs, "last2", completion)[RUNTIME_OUTPUT].to_list()
    # none → walltime; one (job 2, completed first) → 100; two in completion order → mean; capped; null user
    assert out == [1000.0, 1000.0, 100.0, 300.0, 250.0, 1000.0, 1000.0]
    assert predict_runtime(jobs, "last2", completion, use_sweep=False)[RUNTIME_OUTPUT].to_list() == out


def test_last2_uses_the_last_two_in_completion_order():
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4],
            "submit_time": [0.0, 1.0, 2.0, 1000.0],
            "walltime": [1e4] * 4,
            "runtime": [300.0, 200.0, 10.0, 1.0],
            "size": [1] * 4,
            "user_id": [7] * 4,
        }
    )
    completion = np.array([300.0, 201.0, 12.0, 2000.0])  # order: job 3, job 2, job 1
    assert predict_runtime(jobs, "last2", completion)[RUNTIME_OUTPUT][3] == 250.0


def test_instant_rules_self_completion_seen_after_its_own_prediction():
    jobs = pl.DataFrame(
        {
            "job_id": [1, 2, 3, 4, 5],
            "submit_time": [0.0, 0.0, 5.0, 10.0, 10.0],
            "walltime": [100.0] * 5,
            "runtime": [0.0, 10.0, 3.0, 0.0, 0.0],
            "size": [1] * 5,
            "user_id": [1] * 5,
            "name": ["a"] * 5,
        }
    )
    completion = np.array([0.0, 10.0, 50.0, 10.0, 10.0])
    for method in ("last2", "rules"):
        for use_sweep in (True, False):
            out = predict_runtime(jobs, method, completion, use_sweep=use_sweep)[RUNTIME_OUTPUT].to_list()
            # job 2 (same instant as job 1) does not see job 1; jobs 4 and 5 see jobs 1 and 2 (job 2 completes at
            # their submit instant) but not themselves nor each other
            expected = [100.0, 100.0, 0.0, 5.0, 5.0] if method == "last2" else [100.0, 100.0, 0.0, 10.0, 10.0]
            assert out == expected, (method, use_sweep)


def test_walltime_and_oracle():
    jobs, completion = last2_jobs()
    assert predict_runtime(jobs, "walltime", completion)[RUNTIME_OUTPUT].to_list() == jobs["walltime"].to_list()
    assert predict_runtime(jobs, "oracle", completion)[RUNTIME_OUTPUT].to_list() == jobs["runtime"].to_list()
    for p in (WalltimePredictor(), OraclePredictor()):
        assert_same(predict_online(p, jobs, completion), predict_online(p, jobs, completion, use_sweep=False))


def test_registry_and_outputs():
    assert set(RUNTIME_PREDICTORS) == {"walltime", "oracle", "last2", "rules"}
    jobs, completion = last2_jobs()
    for method in RUNTIME_PREDICTORS:
        p = make_runtime_predictor(method)
        assert p.name == method
        out = predict_runtime(jobs, method, completion)
        assert out.columns == list(p.outputs) and out.height == jobs.height
        assert out.schema[RUNTIME_OUTPUT] == pl.Float64
    assert predict_runtime(jobs, "rules", completion).schema[RULE_OUTPUT] == pl.Int64
    with pytest.raises(ValueError, match="unknown runtime predictor"):
        make_runtime_predictor("nope")


def test_cascade_observe_rejects_time_travel():
    jobs, _ = last2_jobs()
    p = RuleCascadePredictor()
    p.bind(jobs)
    p.observe(np.array([1]), np.array([110.0]))
    with pytest.raises(ValueError, match="time order"):
        p.observe(np.array([0]), np.array([100.0]))


# --------------------------------------------------------------------------------------------- naive reference


def naive_cascade(jobs: pl.DataFrame, completion: np.ndarray, min_prefix: int = 1) -> list[tuple[float, int]]:
    """The cascade of docs/prediction.md §4 by brute force over the user's store, rebuilt for every job."""
    cols = jobs.columns
    res_cols = [c for c in ("size", "cores", "gpus", "mics", "nodes") if c in cols]
    name_col = "name" if "name" in cols else "app_id" if "app_id" in cols else None
    recs = jobs.to_dicts()
    submit = [r["submit_time"] for r in recs]

    def name(r: dict) -> str:
        return (r[name_col] or "") if name_col else ""

    def sim(a: str, b: str) -> int:
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        return k

    def prof(r: dict) -> tuple:
        return (r["user_id"], name(r), r.get("queue"), r["walltime"], *(r[c] for c in res_cols))

    out = []
    for i, ri in enumerate(recs):
        r = submit[i]
        w = ri["walltime"]
        store: dict[tuple, tuple[float, int]] = {}  # profile → (completion, row) of the most recent
        if ri["user_id"] is not None:
            for j, rj in enumerate(recs):
                c = completion[j]
                if rj["user_id"] != ri["user_id"] or not math.isfinite(c):
                    continue
                if c < r or (c == r and submit[j] < r):
                    store[prof(rj)] = max(store.get(prof(rj), (-math.inf, -1)), (c, j))
        entries = list(store.values())
        ni = name(ri)

        def same_qw(j: int, ri: dict = ri) -> bool:
            return recs[j].get("queue") == ri.get("queue") and recs[j]["walltime"] == ri["walltime"]

        def n_equal(j: int, ri: dict = ri) -> int:
            return sum(recs[j][c] == ri[c] for c in res_cols)

        def s(j: int, ni: str = ni) -> int:
            return sim(name(recs[j]), ni)

        pfx = sorted((e for e in entries if s(e[1]) >= min_prefix), key=lambda e: (-s(e[1]), -e[0], -e[1]))
        exact = sorted((e for e in entries if name(recs[e[1]]) == ni), key=lambda e: (-e[0], -e[1]))
        hit = store.get(prof(ri))
        found = None
        if hit is not None:
            found = (hit[1], 1)
        if found is None:
            for e in pfx:
                if same_qw(e[1]) and n_equal(e[1]) == len(res_cols):
                    found = (e[1], 2)
                    break
        if found is None:
            cands = [e for e in exact if same_qw(e[1])]
            if cands:
                found = (max(cands, key=lambda e: (e[0], n_equal(e[1]), e[1]))[1], 3)
        if found is None:
            cands = [e for e in pfx if same_qw(e[1])]
            if cands:
                found = (max(cands, key=lambda e: (s(e[1]), n_equal(e[1]), e[0], e[1]))[1], 4)
        if found is None and exact:
            found = (exact[0][1], 5)
        if found is None and pfx:
            found = (pfx[0][1], 6)
        out.append((min(recs[found[0]]["runtime"], w), found[1]) if found else (w, 7))
    return out


# --------------------------------------------------------------------------------------------- properties

NAMES = ["", "a", "ab", "abc", "abd", "abcd", "b", "ba", None]


@st.composite
def workloads(draw, max_jobs: int = 22, dense: bool = False):
    """Small workloads with many ties: few users, names sharing prefixes, nulls, zero runtimes, unknown ends.
    ``dense``: one user and several resource fields, so that the later rules and their tie-breaks are reached."""
    n = draw(st.integers(1, max_jobs))

    def pool(values: list, most: int = 3) -> st.SearchStrategy:  # a few values per workload: profiles collide
        return st.sampled_from(draw(st.lists(st.sampled_from(values), min_size=1, max_size=most, unique=True)))

    submit = np.cumsum(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))).astype(float)
    runtime = [float(draw(st.integers(0, 12))) for _ in range(n)]
    wait = [float(draw(st.integers(0, 3))) for _ in range(n)]
    completion = submit + np.array(runtime) + np.array(wait)
    for k in draw(st.lists(st.integers(0, n - 1), max_size=2)):
        completion[k] = np.nan  # never seen completing
    users = st.just(1) if dense else pool([1, 2, None])
    queues, walls = pool(["x", "y", None]), pool([5.0, 10.0, 20.0])
    cols: dict = {
        "job_id": list(range(1, n + 1)),
        "submit_time": submit,
        "walltime": [draw(walls) for _ in range(n)],
        "runtime": runtime,
        "size": [draw(st.integers(1, 2)) for _ in range(n)],
        "user_id": [draw(users) for _ in range(n)],
        "queue": [draw(queues) for _ in range(n)],
        "_completion": completion,
    }
    name_col = "name" if dense else draw(st.sampled_from(["name", "app_id", None]))
    if name_col:
        names = pool(NAMES, 6)
        cols[name_col] = [draw(names) for _ in range(n)]
    if dense or draw(st.booleans()):
        cols["cores"] = [draw(st.sampled_from([1, 2, None])) for _ in range(n)]
        cols["gpus"] = [draw(st.sampled_from([0, 1])) for _ in range(n)]
    schema_over = {"user_id": pl.Int64, "queue": pl.Utf8, "name": pl.Utf8, "app_id": pl.Utf8, "cores": pl.Int64}
    jobs = pl.DataFrame(cols, schema_overrides={k: v for k, v in schema_over.items() if k in cols})
    return sort_queue_order(jobs)


def split(jobs: pl.DataFrame) -> tuple[pl.DataFrame, np.ndarray]:
    return jobs.drop("_completion"), jobs["_completion"].to_numpy()


def make(method: str, min_prefix: int):
    return RuleCascadePredictor(min_prefix=min_prefix) if method == "rules" else make_runtime_predictor(method)


@PROFILE
@given(st.one_of(workloads(), workloads(max_jobs=30, dense=True)), st.integers(1, 3))
def test_cascade_matches_the_naive_reference(jobs, min_prefix):
    jobs, completion = split(jobs)
    out = predict_online(RuleCascadePredictor(min_prefix), jobs, completion)
    assert list(zip(out[RUNTIME_OUTPUT].to_list(), out[RULE_OUTPUT].to_list(), strict=True)) == naive_cascade(
        jobs, completion, min_prefix
    )


@PROFILE
@given(workloads(), st.sampled_from(["last2", "rules"]), st.integers(1, 2))
def test_sweep_equals_generic_driver(jobs, method, min_prefix):
    jobs, completion = split(jobs)
    fast = predict_online(make(method, min_prefix), jobs, completion)
    generic = predict_online(make(method, min_prefix), jobs, completion, use_sweep=False)
    assert_same(fast, generic)


@PROFILE
@given(workloads(), st.sampled_from(["last2", "rules"]), st.data())
def test_any_batching_gives_the_same_predictions(jobs, method, data):
    """Drive observe/predict in random batch sizes (as the simulator may), always in time order."""
    jobs, completion = split(jobs)
    reference = predict_online(make(method, 1), jobs, completion, use_sweep=False)
    submit = jobs["submit_time"].to_numpy()
    done = [int(j) for j in np.argsort(completion, kind="stable") if math.isfinite(completion[j])]
    events: list[tuple[str, int]] = []
    k = 0
    for i in range(jobs.height):
        while k < len(done) and (
            completion[done[k]] < submit[i] or (completion[done[k]] == submit[i] and submit[done[k]] < submit[i])
        ):
            events.append(("obs", done[k]))
            k += 1
        events.append(("pred", i))
    p = make(method, 1)
    p.bind(jobs)
    got = {name: np.full(jobs.height, np.nan) for name in p.outputs}
    pos = 0
    while pos < len(events):
        kind, first = events[pos]
        end = pos + 1
        while (
            end < len(events) and events[end][0] == kind and (kind == "obs" or submit[events[end][1]] == submit[first])
        ):
            end += 1
        take = data.draw(st.integers(1, end - pos))
        rows = np.array([e[1] for e in events[pos : pos + take]], dtype=np.int64)
        if kind == "obs":
            p.observe(rows, completion[rows])
        else:
            for name, values in p.predict(rows, float(submit[first])).items():
                got[name][rows] = values
        pos += take
    for name in p.outputs:
        assert np.array_equal(got[name], reference[name].to_numpy().astype(float), equal_nan=True)


@PROFILE
@given(workloads(), st.sampled_from(["last2", "rules"]), st.data())
def test_no_leakage_from_jobs_completing_later(jobs, method, data):
    """Changing or deleting jobs not yet completed at r never changes a prediction made at or before r."""
    r = data.draw(st.sampled_from(sorted(set(jobs["submit_time"].to_list()))))
    c = jobs["_completion"].to_numpy()
    s = jobs["submit_time"].to_numpy()
    later = ~((c < r) | ((c == r) & (s < r)))  # not seen completing at r (NaN: never)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    changed = jobs.with_columns(
        pl.when(pl.Series(later))
        .then(pl.Series(rng.integers(0, 30, jobs.height).astype(float)))
        .otherwise(pl.col("runtime"))
        .alias("runtime"),
        # jobs submitted after r may change in every column
        pl.when(pl.Series(later & (s > r)))
        .then(pl.Series(rng.integers(1, 3, jobs.height)))
        .otherwise(pl.col("size"))
        .alias("size"),
        pl.when(pl.Series(later & (s > r)))
        .then(pl.lit(3, dtype=pl.Int64))
        .otherwise(pl.col("user_id"))
        .alias("user_id"),
    )
    drop = np.flatnonzero(later)
    drop = drop[rng.random(drop.size) < 0.5]
    deleted = jobs.filter(~pl.Series(np.isin(np.arange(jobs.height), drop)))

    def predictions(table: pl.DataFrame) -> dict[int, tuple]:
        t, comp = split(table)
        out = predict_online(make(method, 1), t, comp).with_columns(t["job_id"], t["submit_time"])
        return {row["job_id"]: tuple(row.values()) for row in out.filter(pl.col("submit_time") <= r).to_dicts()}

    base = predictions(jobs)
    for variant in (changed, deleted):
        other = predictions(variant)
        assert all(base[job] == pred for job, pred in other.items())


def test_in_simulation_matches_the_trace_protocol_on_its_own_end_times():
    """Inside the simulator (completions as simulated) the predictions equal the trace protocol fed with the
    simulated end times (distinct end times here: same-instant completions may be observed in another order)."""
    from wattsched.engine.simulate import OnlineEstimates, simulate

    rng = np.random.default_rng(7)
    n = 300
    submit = np.sort(rng.uniform(0, 5000, n))
    jobs = pl.DataFrame(
        {
            "job_id": np.arange(1, n + 1),
            "submit_time": submit,
            "walltime": rng.choice([100.0, 400.0], n),
            "runtime": rng.uniform(1, 99, n),
            "size": rng.integers(1, 4, n),
            "user_id": rng.integers(1, 6, n),
            "name": rng.choice(["ab", "abc", "b", "abd"], n),
            "queue": rng.choice(["x", "y"], n),
        }
    )
    for method in ("last2", "rules"):
        result = simulate(jobs, "easy", 8, online=OnlineEstimates(make_runtime_predictor(method), RUNTIME_OUTPUT))
        ends = (
            jobs.select("job_id")
            .join(result.schedule.select("job_id", "end_time"), on="job_id", how="left", maintain_order="left")[
                "end_time"
            ]
            .to_numpy()
        )
        assert np.unique(ends).size == n
        inside = result.schedule.select("job_id").hstack(result.predictions)
        inside = jobs.select("job_id").join(inside, on="job_id", how="left", maintain_order="left").drop("job_id")
        assert_same(predict_online(make_runtime_predictor(method), jobs, ends), inside)


# --------------------------------------------------------------------------------------------- real trace


@pytest.mark.data
def test_cascade_beats_walltime_on_kth():
    from wattsched.workload.load import load_workload

    jobs = load_workload(require_data("swf/KTH-SP2/log.swf")).jobs
    completion, _ = completion_times(jobs, "trace")
    truth = jobs["runtime"].to_numpy()

    def mae(method: str) -> float:
        return float(np.mean(np.abs(predict_runtime(jobs, method, completion)[RUNTIME_OUTPUT].to_numpy() - truth)))

    rules = predict_runtime(jobs, "rules", completion)
    assert_same(rules, predict_runtime(jobs, "rules", completion, use_sweep=False))
    last2 = predict_runtime(jobs, "last2", completion)
    assert_same(last2, predict_runtime(jobs, "last2", completion, use_sweep=False))
    assert rules.height == jobs.height and rules[RULE_OUTPUT].is_between(1, 7).all()
    assert rules[RULE_OUTPUT].n_unique() >= 3
    assert mae("rules") < mae("walltime")
    assert mae("oracle") == 0.0
