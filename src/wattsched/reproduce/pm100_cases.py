"""Hand-made test cases of the PM100 method (paper 003 §3; docs/dataset.md, Reproduce), as data.

Each case is a tiny job table, the node telemetry it runs on, and the outcome the method as docs/dataset.md states
it prescribes (which jobs are excluded and at which stage, the grid bounds, the series, the per-node aggregates, the
unpacked TRES counts). The expected values are written from those rules by hand arithmetic on these inputs;
the observed values come from running the method (:func:`~wattsched.dataset.build.build_dataset` and the
exclusivity test it uses) on them. :func:`run_case` compares the two field by field.

Telemetry of every case: node ``nK`` reports ``ps0 = BASE[n][0] + k`` and ``ps1 = BASE[n][1]`` watts at instant
``k`` (time ``T0 + 20·k``), for k = 0 … 30, except the (node, instant, PSU) cells a case lists as absent. So node
n1 draws 150 + k W, n2 260 + k W, n3 370 + k W.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from wattsched.dataset.build import build_dataset
from wattsched.dataset.exclusive import classify_exclusive

#: 2020-06-01 00:00:00 UTC, inside PM100's period and on the 20-s grid; case times are seconds after it.
T0 = 1_590_969_600.0
PERIOD = 20.0
BASE = {"n1": (100.0, 50.0), "n2": (200.0, 60.0), "n3": (300.0, 70.0)}
INSTANTS = 31


@dataclass(frozen=True)
class SpecCase:
    """One case: ``jobs`` rows ``(job_id, start s, end s, nodes[, tres_alloc_str])`` after T0; ``absent`` cells
    ``(node, instant, psu)`` missing from the telemetry; build ``options``; ``expected[job_id]`` maps output
    fields (``outcome``, ``grid``, ``samples``, ``series``, ``power_mean`` …) to the expected values."""

    name: str
    where: str
    rule: str
    jobs: tuple[tuple[Any, ...], ...]
    expected: dict[int, dict[str, Any]]
    absent: frozenset[tuple[str, int, int]] = frozenset()
    options: dict[str, Any] = field(default_factory=dict)


CASES: tuple[SpecCase, ...] = (
    SpecCase(
        "two overlapping jobs on one node",
        "paper 003 §3; docs/dataset.md, exclusive-job filter",
        "two overlapping jobs on one node → both excluded (a job alone on its node is kept)",
        ((1, 0, 100, ["n1"]), (2, 60, 200, ["n1"]), (3, 0, 200, ["n2"])),
        {1: {"outcome": "exclusivity"}, 2: {"outcome": "exclusivity"}, 3: {"outcome": "dataset"}},
    ),
    SpecCase(
        "multi-node series",
        "paper 003 §3 (Eq. 1–2); docs/dataset.md, extraction",
        "a multi-node exclusive job → its series is the per-timestamp sum over nodes of ps0 + ps1",
        ((1, 5, 65, ["n1", "n2"]),),
        {1: {"outcome": "dataset", "grid": (20.0, 60.0), "samples": 3, "series": [412.0, 414.0, 416.0]}},
    ),
    SpecCase(
        "a 25-s job",
        "docs/dataset.md, exclusive-job filter (the grid)",
        "a job from 00:00:05 to 00:00:30 rounds to [00:00:20, 00:00:20] → 1 sample",
        ((1, 5, 30, ["n1"]),),
        {1: {"outcome": "dataset", "grid": (20.0, 20.0), "samples": 1, "series": [151.0]}},
    ),
    SpecCase(
        "series length",
        "docs/dataset.md, extraction",
        "length = (end' − start')/θ + 1 (the paper's text omits the +1): 00:00:00–00:01:00 → 4 samples",
        ((1, 0, 60, ["n1"]),),
        {1: {"outcome": "dataset", "grid": (0.0, 60.0), "samples": 4, "series": [150.0, 151.0, 152.0, 153.0]}},
    ),
    SpecCase(
        "no instant between start and end",
        "docs/dataset.md, exclusive-job filter; [AMBIG-3.1]",
        "a job with start' > end' (00:00:45–00:00:55 → [00:01:00, 00:00:40]) is unverifiable and dropped",
        ((1, 45, 55, ["n1"]),),
        {1: {"outcome": "exclusivity", "status": "unverifiable", "grid": (60.0, 40.0)}},
    ),
    SpecCase(
        "back-to-back jobs",
        "docs/dataset.md, exclusive-job filter",
        "a job ending at 00:00:40 and one starting at 00:00:40 on the same node both cover that instant → both "
        "excluded; a job starting at 00:00:41 elsewhere is kept from 00:01:00",
        ((1, 0, 40, ["n1"]), (2, 40, 100, ["n1"]), (3, 41, 100, ["n2"])),
        {
            1: {"outcome": "exclusivity", "status": "shared"},
            2: {"outcome": "exclusivity", "status": "shared"},
            3: {"outcome": "dataset", "grid": (60.0, 100.0), "samples": 3},
        },
    ),
    SpecCase(
        "one shared node of a multi-node job",
        "docs/dataset.md, exclusive-job filter",
        "non-exclusive if any (node, instant) cell of the job holds another id: a 3-node job and a job on one of "
        "its nodes are both excluded",
        ((1, 0, 100, ["n1", "n2", "n3"]), (2, 80, 90, ["n3"])),
        {1: {"outcome": "exclusivity", "status": "shared"}, 2: {"outcome": "exclusivity", "status": "shared"}},
    ),
    SpecCase(
        "a node missing at one instant (strict)",
        "§4.2 step 4, [AMBIG-3.2] resolution",
        "a sample needs every node of the job; one missing → the job is dropped at extraction (threshold 0)",
        ((1, 0, 60, ["n1", "n2"]),),
        {1: {"outcome": "extraction"}},
        absent=frozenset({("n2", 2, 0), ("n2", 2, 1)}),
    ),
    SpecCase(
        "a node missing at one instant (tolerated)",
        "§4.2 step 4, [AMBIG-3.2] resolution",
        "with a 25% missing threshold the job is kept and the incomplete instant is left out and counted",
        ((1, 0, 60, ["n1", "n2"]),),
        {1: {"outcome": "dataset", "samples": 4, "missing_samples": 1, "series": [410.0, 412.0, 416.0]}},
        absent=frozenset({("n2", 2, 0), ("n2", 2, 1)}),
        options={"max_missing": 0.25},
    ),
    SpecCase(
        "one PSU missing",
        "§4.2 step 4, [AMBIG-3.2] resolution",
        "ps0 and ps1 are joined on the timestamp: a node's sample needs both PSUs, so ps1 missing at one instant "
        "drops the job (strict)",
        ((1, 0, 60, ["n1"]),),
        {1: {"outcome": "extraction"}},
        absent=frozenset({("n1", 1, 1)}),
    ),
    SpecCase(
        "per-node aggregates",
        "docs/dataset.md, extraction (per-node aggregates, as paper 000 reads them)",
        "P^avg, P^max, P^σ over the concatenation of all per-node samples (σ with ddof 0)",
        ((1, 5, 65, ["n1", "n2"]),),
        # per-node values: n1 151, 152, 153 and n2 261, 262, 263
        {
            1: {
                "outcome": "dataset",
                "power_mean": 207.0,
                "power_max": 263.0,
                "power_std": math.sqrt(2 * (56**2 + 55**2 + 54**2) / 6),
            }
        },
    ),
    SpecCase(
        "TRES unpacking",
        "docs/dataset.md, TRES; the paper's §3 example",
        '"nodes=1,cpus=32,gpu=1,mem=256G" → num_nodes 1, num_cores 32, num_gpus 1, mem 256 GB (262,144 MB)',
        ((1, 0, 60, ["n1"], "nodes=1,cpus=32,gpu=1,mem=256G"),),
        {
            1: {
                "outcome": "dataset",
                "num_nodes_alloc": 1,
                "num_cores_alloc": 32,
                "num_gpus_alloc": 1,
                "mem_alloc": 256 * 1024.0,
            }
        },
    ),
)


def case_telemetry(case: SpecCase) -> pl.DataFrame:
    """``node, timestamp, ps0, ps1`` of the case (absent PSU values are null, an absent node sample has no row)."""
    rows = []
    for k in range(INSTANTS):
        for node, (b0, b1) in BASE.items():
            ps0 = None if (node, k, 0) in case.absent else b0 + k
            ps1 = None if (node, k, 1) in case.absent else b1
            if ps0 is not None or ps1 is not None:
                rows.append((node, T0 + PERIOD * k, ps0, ps1))
    return pl.DataFrame(
        rows, schema={"node": pl.Utf8, "timestamp": pl.Float64, "ps0": pl.Float64, "ps1": pl.Float64}, orient="row"
    )


def case_jobs(case: SpecCase) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "job_id": [r[0] for r in case.jobs],
            "start_time": [T0 + r[1] for r in case.jobs],
            "end_time": [T0 + r[2] for r in case.jobs],
            "nodes": [r[3] for r in case.jobs],
            "tres_alloc_str": [r[4] if len(r) > 4 else "cpu=128,mem=256G,node=1,gres/gpu=4" for r in case.jobs],
        },
        schema_overrides={"job_id": pl.Int64, "nodes": pl.List(pl.Utf8)},
    )


def observe(case: SpecCase) -> dict[int, dict[str, Any]]:
    """Run the method on the case; per job every field the expectations can name."""
    jobs = case_jobs(case)
    dataset, rejects = build_dataset(jobs, case_telemetry(case), period=PERIOD, **case.options)
    status = classify_exclusive(jobs, period=PERIOD)
    out: dict[int, dict[str, Any]] = {}
    for row in status.iter_rows(named=True):
        out[row["job_id"]] = {
            "status": row["status"],
            "grid": (row["grid_start"] - T0, row["grid_end"] - T0),
            "outcomes": [],
        }
    for row in rejects.iter_rows(named=True):
        out[row["job_id"]]["outcomes"].append(row["stage"])
    for row in dataset.iter_rows(named=True):
        got = out[row["job_id"]]
        got["outcomes"].append("dataset")
        got["series"] = list(row["power_consumption"])
        for name in (
            "samples",
            "missing_samples",
            "power_mean",
            "power_max",
            "power_std",
            "num_nodes_alloc",
            "num_cores_alloc",
            "num_gpus_alloc",
            "mem_alloc",
        ):
            got[name] = row[name]
    for got in out.values():  # exactly one place per job, else the outcome shows the duplication
        got["outcome"] = got["outcomes"][0] if len(got["outcomes"]) == 1 else "+".join(got["outcomes"]) or "lost"
    return out


def _same(expected: Any, got: Any) -> bool:
    if isinstance(expected, list | tuple):
        return (
            isinstance(got, list | tuple)
            and len(got) == len(expected)
            and all(_same(e, g) for e, g in zip(expected, got, strict=True))
        )
    if isinstance(expected, float):
        return got is not None and math.isclose(float(got), expected, rel_tol=1e-9, abs_tol=1e-9)
    return expected == got


def run_case(case: SpecCase) -> tuple[bool, list[str]]:
    """``(matches, differences)``: each difference names the job, the field, the expected value and ours."""
    got = observe(case)
    diffs = []
    for job, fields in case.expected.items():
        mine = got.get(job, {})
        for name, value in fields.items():
            if not _same(value, mine.get(name)):
                diffs.append(f"job {job} {name}: spec {value!r}, ours {mine.get(name)!r}")
    return not diffs, diffs
