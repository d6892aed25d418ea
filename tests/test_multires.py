"""Multi-resource engine, allocators and dispatchers (paper 001): golden cases and engine properties."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wattsched.studies.multires.allocators import Allocator
from wattsched.studies.multires.dispatchers import DISPATCHERS, ClusterView, make_dispatcher
from wattsched.studies.multires.engine import DispatchError, simulate_multires
from wattsched.studies.multires.nodes import NodePool

RES = ("cores", "gpus", "mem")


def pool(capacity, queues=None, reserved=None) -> NodePool:
    cap = np.array(capacity, dtype=np.int64)
    return NodePool(
        "tiny", RES, cap, np.arange(cap.shape[0]), np.array(reserved or [False] * cap.shape[0]), queues=queues or {}
    )


def workload(rows) -> pl.DataFrame:
    """rows: (job_id, submit, runtime, walltime, chunks, cores, gpus, mem[, queue])."""
    cols = ["job_id", "submit_time", "runtime", "walltime", "chunks", "chunk_cores", "chunk_gpus", "chunk_mem"]
    frame = pl.DataFrame([r[:8] for r in rows], schema=cols, orient="row").with_columns(
        pl.col("submit_time", "runtime", "walltime").cast(pl.Float64)
    )
    if len(rows[0]) > 8:
        frame = frame.with_columns(pl.Series("queue", [r[8] for r in rows]))
    return frame


def starts(result) -> dict[int, float]:
    return dict(zip(result.jobs["job_id"].to_list(), result.jobs["start_time"].to_list(), strict=True))


# ----------------------------------------------------------------------------------------------- allocators

FREE = np.array([[4, 1, 8], [2, 0, 16], [0, 1, 8], [4, 1, 2]])
CAP = np.array([[4, 1, 16], [4, 0, 16], [4, 1, 16], [4, 1, 16]])
NEED = np.array([True, False, False])


def test_first_fit_takes_nodes_in_order_and_packs_chunks_on_a_node() -> None:
    nodes, counts = Allocator("first-fit").place(FREE, CAP, 3, np.array([1, 0, 2]), NEED)
    assert nodes.tolist() == [0] and counts.tolist() == [3]  # node 0 holds 4 chunks of 1 core / 2 mem
    nodes, counts = Allocator("first-fit").place(FREE, CAP, 6, np.array([1, 0, 2]), NEED)
    assert nodes.tolist() == [0, 1] and counts.tolist() == [4, 2]


def test_consolidate_prefers_the_fullest_node_and_normalising_changes_the_order() -> None:
    # raw free sums: 13, 18, 9, 7 -> node 3 first (node 2 has no free core: skipped)
    nodes, _ = Allocator("consolidate").place(FREE, CAP, 1, np.array([1, 0, 1]), NEED)
    assert nodes.tolist() == [3]
    # shares of capacity: node 0 = 1+1+.5 = 2.5, node 1 = .5+0+1 = 1.5, node 3 = 1+1+.125 = 2.125 -> node 1 first
    nodes, _ = Allocator("consolidate", normalise=True).place(FREE, CAP, 1, np.array([1, 0, 1]), NEED)
    assert nodes.tolist() == [1]


def test_a_node_without_a_free_core_is_skipped_even_for_a_gpu_only_chunk() -> None:
    nodes, _ = Allocator("first-fit").place(FREE, CAP, 2, np.array([0, 1, 0]), NEED)
    assert nodes.tolist() == [0, 3]  # node 2 has a free GPU but no free core
    assert Allocator("first-fit").place(FREE, CAP, 4, np.array([0, 1, 0]), NEED) is None


def test_forbidden_nodes_are_not_used() -> None:
    nodes, _ = Allocator("first-fit").place(
        FREE, CAP, 1, np.array([1, 0, 1]), NEED, forbidden=np.array([True, False, False, False])
    )
    assert nodes.tolist() == [1]


# ----------------------------------------------------------------------------------------------- dispatchers


def test_fifo_stops_at_the_first_failure_while_prb_skips() -> None:
    p = pool([[4, 0, 16]])
    jobs = workload(
        [
            (1, 0, 10, 20, 1, 4, 0, 1),
            (2, 1, 10, 20, 1, 4, 0, 1),
            (3, 1, 10, 20, 1, 1, 0, 32),
            (4, 1, 10, 20, 1, 2, 0, 1),
        ]
    )
    # job 3 can never fit (32 mem > 16): rejected up front
    fifo = simulate_multires(jobs, p, make_dispatcher("fifo"))
    assert fifo.rejects["job_id"].to_list() == [3] and "mem short" in fifo.rejects["reason"][0]
    assert starts(fifo) == {1: 0.0, 2: 10.0, 4: 20.0}
    jobs = workload([(1, 0, 10, 20, 1, 3, 0, 1), (2, 1, 10, 20, 1, 4, 0, 1), (4, 1, 10, 20, 1, 1, 0, 1)])
    assert starts(simulate_multires(jobs, p, make_dispatcher("fifo"))) == {1: 0.0, 2: 10.0, 4: 20.0}
    assert starts(simulate_multires(jobs, p, make_dispatcher("prb"))) == {1: 0.0, 2: 11.0, 4: 1.0}  # 4 skips ahead


def test_sjf_and_ljf_order_by_the_estimate_not_the_truth() -> None:
    p = pool([[1, 0, 1]])
    jobs = workload([(1, 0, 5, 5, 1, 1, 0, 1), (2, 1, 1, 30, 1, 1, 0, 1), (3, 1, 30, 10, 1, 1, 0, 1)])
    assert starts(simulate_multires(jobs, p, make_dispatcher("sjf"))) == {1: 0.0, 3: 5.0, 2: 15.0}
    assert starts(simulate_multires(jobs, p, make_dispatcher("ljf"))) == {1: 0.0, 2: 5.0, 3: 6.0}
    real = simulate_multires(jobs, p, make_dispatcher("sjf"), estimate="runtime")
    assert starts(real) == {1: 0.0, 2: 5.0, 3: 6.0} and real.jobs["killed"].to_list() == [False, False, True]


def _ebf_case():
    p = pool([[4, 0, 4]])
    # A holds the node, ends at 10 though its walltime says 100; B (head) is blocked; C is small and short
    return p, workload([(1, 0, 10, 100, 1, 4, 0, 1), (2, 1, 5, 50, 1, 4, 0, 1), (3, 2, 20, 20, 1, 2, 0, 1)])


def test_ebf_2017_keeps_the_fixed_reservation_and_backfills_before_it() -> None:
    p, jobs = _ebf_case()
    result = simulate_multires(jobs, p, make_dispatcher("ebf"))
    # B's reservation: A's expected end, 100. At 10 C backfills (10 + 20 ≤ 100); B is retried only at 100.
    assert starts(result) == {1: 0.0, 2: 100.0, 3: 10.0}


def test_classic_easy_recomputes_the_reservation_and_starts_the_head_as_soon_as_it_fits() -> None:
    p, jobs = _ebf_case()
    assert starts(simulate_multires(jobs, p, make_dispatcher("easy"))) == {1: 0.0, 2: 10.0, 3: 15.0}


def test_backfilled_jobs_running_past_the_reservation_keep_off_its_nodes() -> None:
    p = pool([[4, 0, 4], [4, 0, 4]])
    jobs = workload(
        [
            (1, 0, 50, 50, 1, 4, 0, 1),  # node 0 busy until 50
            (2, 1, 50, 50, 1, 2, 0, 1),  # node 1, 2 cores until 51
            (3, 2, 10, 10, 2, 4, 0, 1),  # head: needs both nodes -> reservation at 51 on {0, 1}
            (4, 3, 100, 100, 1, 2, 0, 1),  # would run past 51 on node 1 (reserved): must wait
            (5, 4, 10, 10, 1, 2, 0, 1),
        ]
    )  # ends at 14 < 51: may use node 1 now
    got = starts(simulate_multires(jobs, p, make_dispatcher("ebf")))
    assert got[5] == 4.0 and got[3] == 51.0 and got[4] == 61.0


def test_prb_puts_short_wait_queues_and_long_waiters_first() -> None:
    p = pool([[1, 0, 1]], queues={"debug": 100.0, "long": 10_000.0})
    jobs = workload(
        [(1, 0, 10, 10, 1, 1, 0, 1, "long"), (2, 1, 10, 10, 1, 1, 0, 1, "long"), (3, 2, 10, 10, 1, 1, 0, 1, "debug")]
    )
    # at 10: urgency long job 2 = 10000*(10-1+1)/10000 = 10; debug job 3 = 10000*(10-2+1)/100 = 900
    assert starts(simulate_multires(jobs, p, make_dispatcher("prb"))) == {1: 0.0, 3: 10.0, 2: 20.0}


def test_the_view_holds_estimates_only_and_is_read_only() -> None:
    names = {f.name for f in dataclasses.fields(ClusterView)}
    assert not {"runtime", "true_runtime", "end_time"} & names

    class Peek:
        name = "peek"

        def reset(self) -> None:
            pass

        def dispatch(self, view):
            with pytest.raises(ValueError):
                view.free[0, 0] = 99
            return [(int(view.queue[0]), (np.array([0]), np.array([1])))]

    p = pool([[1, 0, 1]])
    simulate_multires(workload([(1, 0, 5, 5, 1, 1, 0, 1)]), p, Peek())


def test_illegal_decisions_are_refused_loudly() -> None:
    class Greedy:
        name = "greedy"

        def reset(self) -> None:
            pass

        def dispatch(self, view):
            return [(int(j), (np.array([0]), np.array([1]))) for j in view.queue]

    p = pool([[1, 0, 1]])
    jobs = workload([(1, 0, 5, 5, 1, 1, 0, 1), (2, 0, 5, 5, 1, 1, 0, 1)])
    with pytest.raises(DispatchError, match="over-allocates node index 0"):
        simulate_multires(jobs, p, Greedy())


# ------------------------------------------------------------------------------------------------ properties


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 25))
    rows = []
    for j in range(n):
        runtime = draw(st.integers(0, 50))
        rows.append(
            (
                j + 1,
                draw(st.integers(0, 60)),
                runtime,
                max(1, runtime + draw(st.integers(-10, 40))),
                draw(st.integers(1, 3)),
                draw(st.integers(0, 4)),
                draw(st.integers(0, 1)),
                draw(st.integers(1, 8)),
                draw(st.sampled_from(["debug", "long"])),
            )
        )
    return workload(rows)


def _check_no_over_allocation(result, p: NodePool, jobs: pl.DataFrame) -> None:
    req = {r["job_id"]: np.array([r["chunk_cores"], r["chunk_gpus"], r["chunk_mem"]]) for r in jobs.to_dicts()}
    done = result.jobs
    events = sorted({t for t in done["start_time"].to_list()})
    for t in events:
        used = np.zeros_like(p.capacity)
        for row in done.filter(
            (pl.col("start_time") <= t)
            & (
                (pl.col("end_time") > t)
                | ((pl.col("end_time") == t) & (pl.col("start_time") == t) & (pl.col("runtime") > 0))
            )
        ).to_dicts():
            for node, count in zip(row["alloc_nodes"], row["alloc_chunks"], strict=True):
                used[node] += count * req[row["job_id"]]
        assert (used <= p.capacity).all(), t


@settings(max_examples=60, deadline=None)
@given(workloads(), st.sampled_from([d for d in DISPATCHERS if d != "cph"]), st.sampled_from(["walltime", "runtime"]))
def test_engine_invariants(jobs, name, estimate) -> None:
    p = pool([[4, 1, 8], [4, 0, 8], [2, 1, 4]], queues={"debug": 60.0, "long": 600.0})
    result = simulate_multires(jobs, p, make_dispatcher(name), estimate=estimate)
    out = result.jobs
    assert out.height + result.rejects.height == jobs.height
    assert (out["start_time"] >= out["submit_time"]).all()
    assert ((out["end_time"] - out["start_time"] - out["runtime"]).abs() < 1e-9).all()
    placed = out.join(jobs.select("job_id", "chunks"), on="job_id")
    assert (placed["alloc_chunks"].list.sum() == placed["chunks"]).all()
    _check_no_over_allocation(result, p, jobs)
    if name == "fifo":  # no overtaking: starts follow queue order
        ordered = out.sort("submit_time", "job_id")["start_time"].to_numpy()
        assert (np.diff(ordered) >= 0).all()
    again = simulate_multires(jobs, p, make_dispatcher(name), estimate=estimate)
    assert again.jobs.equals(out)


def test_rules_predictions_in_simulation_follow_the_simulated_completions() -> None:
    from wattsched.core.schema import sort_queue_order
    from wattsched.predict.online import predict_online
    from wattsched.predict.registry import make_runtime_predictor

    rng = np.random.default_rng(3)
    rows = []
    for j in range(60):
        runtime = float(rng.integers(1, 40))
        rows.append(
            (
                j + 1,
                float(rng.integers(0, 200)),
                runtime,
                runtime + float(rng.integers(0, 30)),
                1,
                int(rng.integers(1, 5)),
                0,
                1,
                str(rng.choice(["debug", "long"])),
            )
        )
    jobs = workload(rows).with_columns(pl.lit("app").alias("name"), pl.lit(7).alias("user_id"))
    p = pool([[4, 1, 8], [4, 0, 8]])
    result = simulate_multires(jobs, p, make_dispatcher("sjf"), estimate=make_runtime_predictor("rules"))
    ordered = sort_queue_order(jobs)
    ends = (
        ordered.select("job_id")
        .join(result.jobs.select("job_id", "end_time"), on="job_id", how="left", maintain_order="left")["end_time"]
        .to_numpy()
    )
    trace = predict_online(make_runtime_predictor("rules"), ordered, ends)
    got = ordered.select("job_id").join(
        result.jobs.select("job_id", "expected_runtime"), on="job_id", maintain_order="left"
    )["expected_runtime"]
    assert np.allclose(got.to_numpy(), trace["pred_runtime"].to_numpy())
    assert (got != ordered["walltime"]).any()  # the history was used, not only the fallback
