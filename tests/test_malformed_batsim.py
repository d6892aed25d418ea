"""Malformed-input corpus of the Batsim workload reader (``workload/batsim.py``), judged by the shared harness
(tests/malformed_harness.py): a one-line error naming the file, rejects that account for every job, or accepted
values. Batsim's own format: ``nb_res``, ``jobs`` (id, subtime, res, profile, walltime) and ``profiles``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from malformed_harness import Accepts, Case, Error, Rejects, Writer, check_case, text_file
from wattsched.core.schema import WorkloadError
from wattsched.workload.load import load_workload

GOOD = {"id": 1, "subtime": 0, "res": 2, "profile": "p100", "walltime": 200}
PROFILES = {"p100": {"type": "delay", "delay": 100}}


def workload(*jobs: Any, nb_res: Any = 8, profiles: Any = None, **top: Any) -> Writer:
    """A Batsim workload of the good job (id 1) followed by ``jobs``, as ``w.json``."""
    doc: dict[str, Any] = {
        "nb_res": nb_res,
        "jobs": [GOOD, *jobs],
        "profiles": PROFILES if profiles is None else profiles,
    }
    doc.update(top)
    return text_file("w.json", json.dumps(doc))


def job(**changes: Any) -> dict[str, Any]:
    """A second job (id 2) with ``changes``; a value of None removes the key."""
    out = {**GOOD, "id": 2, **changes}
    return {k: v for k, v in out.items() if v is not None}


CASES = [
    # the whole file
    Case("not_json", text_file("w.json", "{nb_res: 8"), Error("json")),
    Case("empty_file", text_file("w.json", ""), Error("w.json")),
    Case("top_level_list", text_file("w.json", "[1, 2]"), Error("w.json")),
    Case("nb_res_text", workload(nb_res="eight"), Error("nb_res")),
    Case("nb_res_zero", workload(nb_res=0), Error("nb_res")),
    Case("nb_res_negative", workload(nb_res=-4), Error("nb_res")),
    Case("nb_res_fraction", workload(nb_res=2.5), Error("nb_res")),
    Case("profiles_not_object", workload(profiles=[1, 2]), Error("profiles")),
    Case("not_utf8", text_file("w.json", b'{"nb_res": 8, "jobs": [], "x": "\xff\xfe"}'), Error("w.json")),
    # one job, rejected with its field
    Case("job_not_object", workload("job"), Rejects(1, 1, "jobs")),
    Case("id_missing", workload(job(id=None)), Rejects(1, 1, "id")),
    # Batsim's ids are text (issue 30): kept in batsim_id, the jobs then numbered by position
    Case(
        "id_text",
        workload(job(id="abc")),
        Accepts(2, lambda jobs: jobs["batsim_id"].to_list() == ["1", "abc"] and jobs["job_id"].to_list() == [1, 2]),
    ),
    Case(
        "id_20_digits",
        workload(job(id=12345678901234567890)),
        Accepts(2, lambda jobs: jobs["batsim_id"].to_list() == ["1", "12345678901234567890"]),
    ),
    Case("id_repeated", workload(job(id=1)), Rejects(1, 1, "id", "given twice")),
    Case("id_fraction", workload(job(id=2.5)), Rejects(1, 1, "id")),
    Case("subtime_missing", workload(job(subtime=None)), Rejects(1, 1, "subtime", "missing")),
    Case("subtime_text", workload(job(subtime="soon")), Rejects(1, 1, "subtime", "not a number")),
    Case("subtime_negative", workload(job(subtime=-5)), Rejects(1, 1, "subtime", "negative")),
    Case("subtime_ns_epoch", workload(job(subtime=1.6e18)), Rejects(1, 1, "submit_time", "2100")),
    Case("subtime_1e300", workload(job(subtime=1e300)), Rejects(1, 1, "submit_time")),
    Case("res_missing", workload(job(res=None)), Rejects(1, 1, "res", "missing")),
    Case("res_text", workload(job(res="two")), Rejects(1, 1, "res", "not an integer")),
    Case("res_fraction", workload(job(res=1.5)), Rejects(1, 1, "res", "not an integer")),
    Case("res_bool", workload(job(res=True)), Rejects(1, 1, "res", "not an integer")),
    Case("res_zero", workload(job(res=0)), Rejects(1, 1, "size")),
    Case("res_above_nb_res", workload(job(res=9)), Rejects(1, 1, "size", "machine size")),
    Case("profile_missing", workload(job(profile=None)), Rejects(1, 1, "profile")),
    Case("profile_unknown", workload(job(profile="nope")), Rejects(1, 1, "profile", "not in 'profiles'")),
    Case(
        "profile_parallel",
        workload(job(profile="par"), profiles={**PROFILES, "par": {"type": "parallel", "cpu": [1e9], "com": [0]}}),
        Rejects(1, 1, "profile", "only delay profiles"),
    ),
    Case(
        "profile_delay_text",
        workload(job(profile="bad"), profiles={**PROFILES, "bad": {"type": "delay", "delay": "long"}}),
        Rejects(1, 1, "profile", "no numeric 'delay'"),
    ),
    Case(
        "profile_delay_negative",
        workload(job(profile="neg"), profiles={**PROFILES, "neg": {"type": "delay", "delay": -3}}),
        Rejects(1, 1, "runtime", "negative"),
    ),
    Case("walltime_text", workload(job(walltime="1h")), Rejects(1, 1, "walltime", "not a number")),
    Case("walltime_1e12", workload(job(walltime=1e12)), Rejects(1, 1, "walltime", "100 years")),
    Case("duplicate_id", workload(job(id=1)), Rejects(1, 1)),
    # accepted, with the value the conventions give
    Case("walltime_missing_is_runtime", workload(job(walltime=None)), Accepts(2, lambda j: j["walltime"][1] == 100)),
    Case("walltime_minus_one_is_runtime", workload(job(walltime=-1)), Accepts(2, lambda j: j["walltime"][1] == 100)),
    Case("res_float_integral", workload(job(res=2.0)), Accepts(2, lambda j: j["size"][1] == 2)),
    Case("extra_keys_ignored", workload(job(color="blue")), Accepts(2)),
    Case("no_jobs_beyond_the_good_one", workload(), Accepts(1)),
]


def _read(path: Path) -> Any:
    return load_workload(path)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_batsim_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, _read, (WorkloadError,))


def test_corpus_size() -> None:
    assert len(CASES) >= 30
