"""Every SWF file in ../shared/data, read with exact job and reject counts.

Each reject below was checked against the raw lines:

* LLNL Atlas: 4,571 lines have both requested (field 8) and allocated (field 5) processors = -1 (jobs with
  run time 0, cancelled before they started), so the job size is unknown.
* Alea/MetaCentrum wagap: lines 4186 and 4200 (jobs 4185, 4199) have run times of -1359980917 and
  -1359981026, i.e. an end time of 0 minus the start time in the converter.
* The other traces have no unusable line.

The Alea file has no header at all, so its machine size is passed explicitly: the companion
``wagap-2013.swf.machines`` lists cluster zewura with 20 nodes x 80 CPUs and zegox with 48 nodes x 12 CPUs,
2176 processors in all.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from conftest import require_data
from wattsched.workload.swf import read_swf

pytestmark = pytest.mark.data

ALEA_MACHINE_SIZE = 20 * 80 + 48 * 12  # from swf/alea/wagap-2013.swf.machines

# file -> (machine_size argument, expected machine size, jobs, {(field, reason): count}, lines with extras)
TRACES: dict[str, tuple[int | None, int, int, dict[tuple[str, str], int], int]] = {
    "swf/KTH-SP2/log.swf": (None, 100, 28_489, {}, 0),
    "swf/NASA-iPSC-1993-3.1-cln.swf": (None, 128, 18_239, {}, 0),
    "swf/LLNL-Atlas-2006-2.1-cln.swf": (None, 9216, 39_207, {("size", "job size is unknown"): 4571}, 0),
    "swf/RICC-2010-2.swf.gz": (None, 8192, 447_794, {}, 0),
    "swf/CEA-curie_sample/log.swf": (None, 93_312, 29_998, {}, 0),
    "swf/alea/wagap-2013.swf": (
        ALEA_MACHINE_SIZE,
        ALEA_MACHINE_SIZE,
        17_898,
        {("runtime", "run time is negative"): 2},
        17_900,
    ),
    "swf/DOST-ASTI_COARE-Saliksik-2020-cln.swf": (None, 1728, 19_760, {}, 0),
    "swf_synthetic/lublin_256.swf": (None, 256, 10_000, {}, 0),
}


def data_lines(path: Path) -> list[tuple[int, bytes]]:
    """(1-based line number, text) of every non-comment, non-blank line: an independent, slow reference."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    out = []
    for number, line in enumerate(raw.split(b"\n"), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith(b";"):
            out.append((number, line))
    return out


@pytest.mark.parametrize("relative", list(TRACES))
def test_trace_counts(relative: str) -> None:
    path = require_data(relative)
    machine_arg, machine, n_jobs, reasons, n_extra = TRACES[relative]
    jobs, rejects, prov = read_swf(path, machine_size=machine_arg)
    lines = data_lines(path)
    assert prov.machine_size == machine
    assert jobs.height == n_jobs == prov.n_jobs
    assert rejects.height == sum(reasons.values()) == prov.n_rejected
    assert jobs.height + rejects.height == len(lines) == prov.n_records
    got = {(r["field"], r["reason"]): r["len"] for r in rejects.group_by("field", "reason").len().to_dicts()}
    assert got == reasons
    assert sum("extra fields" in c for c in prov.conventions) == (1 if n_extra else 0)
    if n_extra:
        assert f"{n_extra} data lines had extra fields after the 18th (ignored)" in prov.conventions
    # every reject points at its real line
    text = dict(lines)
    for row in rejects.iter_rows(named=True):
        assert text[row["line"]].decode().rstrip("\r") == row["raw"]
    # queue order, unique ids, all sizes within the machine
    assert jobs["job_id"].n_unique() == jobs.height
    assert jobs.select(["submit_time", "job_id"]).equals(jobs.sort(["submit_time", "job_id"]).select(
        ["submit_time", "job_id"]))  # fmt: skip
    assert jobs["size"].max() <= machine and jobs["size"].min() >= 1


@pytest.mark.parametrize("relative", list(TRACES))
def test_values_match_a_naive_parse(relative: str) -> None:
    """The numba tokenizer agrees with float(token) on the 18 fields (every line; every 50th for RICC)."""
    path = require_data(relative)
    jobs, _, _ = read_swf(path, machine_size=TRACES[relative][0])
    step = 50 if jobs.height > 100_000 else 1
    sample = [line for _, line in data_lines(path)[::step]]
    ids = [int(line.split()[0]) for line in sample]
    by_id = {r["job_id"]: r for r in jobs.filter(pl.col("job_id").is_in(ids)).iter_rows(named=True)}
    checked = 0
    for line in sample:
        f = [float(t) for t in line.split()[:18]]
        row = by_id.get(int(f[0]))
        if row is None:
            continue  # rejected
        checked += 1
        assert row["submit_time"] == f[1]
        assert row["runtime"] == f[3]
        assert row["walltime"] == (f[8] if f[8] > 0 else f[3])
        assert row["size"] == (f[7] if f[7] > 0 else f[4])
        assert row["swf_req_mem"] == (None if f[9] == -1 else f[9])
        assert row["swf_used_mem"] == (None if f[6] == -1 else f[6])
        assert row["user_id"] == (None if f[11] == -1 else f[11])
        assert row["swf_think_time"] == (None if f[17] == -1 else f[17])
    assert checked > 0


def test_header_provenance_of_real_traces() -> None:
    prov = read_swf(require_data("swf/KTH-SP2/log.swf")).provenance
    assert prov.unix_start_time == 843480031 and prov.timezone == "Europe/Stockholm"
    assert prov.header["Note"] == ["uses the EASY scheduler"]
    prov = read_swf(require_data("swf/LLNL-Atlas-2006-2.1-cln.swf")).provenance
    assert prov.header["Partition"] == ["1  pbatch", "2  pdebug", "3  pbroke", "4  moody20"]
    assert prov.header["MaxNodes"] == "1152"
    prov = read_swf(require_data("swf/alea/wagap-2013.swf"), machine_size=ALEA_MACHINE_SIZE).provenance
    assert prov.header == {} and prov.unix_start_time is None
