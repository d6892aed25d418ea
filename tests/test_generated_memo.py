"""A campaign worker generates a workload once for the calls with the same generator arguments
(``campaign.workloads.load_workload_spec``): paper 000's reproduction asks for a seed's trace for its campaign,
its predictor claims and two sensitivity variants. Reuse must be invisible: the same tables, a provenance of its
own, other arguments generated anew, the oldest entry dropped, and large workloads not kept."""

from __future__ import annotations

import pytest

from wattsched.campaign import workloads
from wattsched.campaign.spec import WorkloadSpec
from wattsched.campaign.workloads import load_workload_spec
from wattsched.workload.generate import generate_lublin, generate_m100like


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, ...]]:
    calls: list[tuple[object, ...]] = []

    def m100(jobs, *, seed, target_load):  # type: ignore[no-untyped-def]
        calls.append(("m100", jobs, seed, target_load))
        return generate_m100like(jobs, seed=seed, target_load=target_load)

    def lublin(jobs, size, *, seed, target_load):  # type: ignore[no-untyped-def]
        calls.append(("lublin", jobs, size, seed, target_load))
        return generate_lublin(jobs, size, seed=seed, target_load=target_load)

    monkeypatch.setattr(workloads, "generate_m100like", m100)
    monkeypatch.setattr(workloads, "generate_lublin", lublin)
    monkeypatch.setattr(workloads, "_GENERATED", type(workloads._GENERATED)(workloads._GENERATED_KEEP))
    return calls


def _m100(jobs: int = 60, load: float | None = None) -> WorkloadSpec:
    return WorkloadSpec(name="g", generate={"model": "m100", "jobs": jobs, "seed": 3, "target_load": load})


def test_the_same_arguments_generate_once_and_give_the_same_tables(counted: list[tuple[object, ...]]) -> None:
    first = load_workload_spec(_m100(), 1)
    again = load_workload_spec(_m100(), 1)
    assert counted == [("m100", 60, 4, None)]
    assert again.jobs.equals(first.jobs) and again.provenance == first.provenance
    again.provenance.header["seed"] = -1  # a caller changing its provenance does not reach the next one
    assert load_workload_spec(_m100(), 1).provenance.header["seed"] == first.provenance.header["seed"]
    fresh = generate_m100like(60, seed=4)
    assert first.jobs.equals(fresh.jobs) and first.provenance == fresh.provenance


def test_other_arguments_generate_anew_and_the_oldest_is_dropped(counted: list[tuple[object, ...]]) -> None:
    load_workload_spec(_m100(), 0)
    load_workload_spec(_m100(), 1)  # another seed
    load_workload_spec(_m100(load=0.85), 1)  # another offered load: the seed-0 trace is dropped
    load_workload_spec(_m100(load=0.85), 1)
    load_workload_spec(_m100(), 0)
    lublin = WorkloadSpec(name="l", generate={"model": "lublin", "jobs": 50, "machine_size": 64})
    load_workload_spec(lublin, 0)
    load_workload_spec(lublin, 0)
    assert counted == [
        ("m100", 60, 3, None),
        ("m100", 60, 4, None),
        ("m100", 60, 4, 0.85),
        ("m100", 60, 3, None),
        ("lublin", 50, 64, 0, None),
    ]


def test_large_workloads_are_not_kept(counted: list[tuple[object, ...]], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workloads, "_GENERATED_MAX_BYTES", 1_000)
    load_workload_spec(_m100(), 0)
    load_workload_spec(_m100(), 0)
    assert len(counted) == 2 and not workloads._GENERATED
