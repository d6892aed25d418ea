"""Lublin–Feitelson generator: determinism, schema, and the model's statistics vs independent computations.

Statistical checks use fixed seeds and tolerances of several binomial / standard errors, so they cannot flake.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from wattsched.core.schema import OPTIONAL_COLUMNS, REQUIRED_COLUMNS, sort_queue_order, validate_jobs
from wattsched.workload.generate import LublinParams, generate_lublin
from wattsched.workload.generate.lublin import POPULAR_WALLTIMES, LublinClassParams

N_BIG = 100_000
P_BIG = 256


@pytest.fixture(scope="module")
def big() -> tuple[pl.DataFrame, dict]:
    res = generate_lublin(N_BIG, P_BIG, seed=12345)
    return res.jobs, res.provenance.header


def _class_params(queue: str) -> LublinClassParams:
    p = LublinParams()
    return p.batch if queue == "batch" else p.interactive


def _load(jobs: pl.DataFrame, machine_size: int) -> float:
    sub = jobs["submit_time"].to_numpy()
    work = float((jobs["size"].to_numpy().astype(float) * jobs["runtime"].to_numpy()).sum())
    return work / (machine_size * (sub.max() - sub.min()))


# ------------------------------------------------------------------------------------------ determinism


def test_same_seed_same_table_different_seed_different() -> None:
    a = generate_lublin(3000, 128, seed=7)
    b = generate_lublin(3000, 128, seed=7)
    c = generate_lublin(3000, 128, seed=8)
    assert a.jobs.equals(b.jobs)
    assert not a.jobs.equals(c.jobs)
    assert a.provenance.source == "lublin:seed=7"


# -------------------------------------------------------------------------------------------- schema


def test_schema_dtypes_and_order() -> None:
    res = generate_lublin(5000, 256, seed=1)
    jobs = res.jobs
    for name, dtype in {**REQUIRED_COLUMNS, **OPTIONAL_COLUMNS}.items():
        if name in jobs.columns:
            assert jobs.schema[name] == dtype, name
    assert set(REQUIRED_COLUMNS) <= set(jobs.columns)
    assert {"user_id", "queue", "group_id"} <= set(jobs.columns)
    assert jobs["job_id"].to_list() == list(range(1, 5001))
    sub = jobs["submit_time"].to_numpy()
    assert sub[0] == 0.0 and np.all(np.diff(sub) >= 0)
    assert jobs.equals(sort_queue_order(jobs))
    assert set(jobs["queue"].unique()) == {"batch", "interactive"}
    assert jobs["group_id"].null_count() == jobs.height
    assert jobs.select(pl.all().exclude("group_id").null_count()).sum_horizontal().item() == 0
    good, rejects = validate_jobs(jobs, machine_size=256, source="t")
    assert good.height == 5000 and rejects.height == 0
    assert res.rejects.height == 0
    prov = res.provenance
    assert (prov.format, prov.machine_size, prov.size_unit) == ("lublin", 256, "processors")
    assert prov.n_jobs == prov.n_records == 5000 and prov.n_rejected == 0
    assert any("m_lublin99" in c for c in prov.conventions)
    assert prov.to_json()  # serialisable


@pytest.mark.parametrize("machine_size", [128, 256, 1024, 8192])
def test_machine_sizes(machine_size: int) -> None:
    jobs = generate_lublin(20_000, machine_size, seed=3).jobs
    size = jobs["size"].to_numpy()
    assert size.min() >= 1 and size.max() <= machine_size
    assert size.max() > machine_size // 4  # the upper stage of the two-stage uniform reaches large jobs
    rt, wt = jobs["runtime"].to_numpy(), jobs["walltime"].to_numpy()
    assert rt.min() >= 1.0 and np.all(wt >= rt)
    assert np.all(rt == np.floor(rt))


def test_non_power_of_two_machine_clips() -> None:
    size = generate_lublin(20_000, 100, seed=4).jobs["size"].to_numpy()
    assert size.max() == 100 and size.min() >= 1


# ------------------------------------------------------------------------------------------------ size


def _two_stage_cdf(x: np.ndarray, low: float, med: float, hi: float, prob: float) -> np.ndarray:
    first = prob * np.clip((x - low) / (med - low), 0.0, 1.0)
    second = (1.0 - prob) * np.clip((x - med) / (hi - med), 0.0, 1.0)
    return first + second


def _expected_pow2_share(cls: LublinClassParams, machine_size: int) -> float:
    """P(size is a power of two ≥ 2): the pow2 branch, plus non-pow2 draws whose rounding lands on 2**k."""
    hi = math.log2(machine_size) - cls.uhi_offset
    med, low = hi - cls.umed_offset, cls.ulow
    k = np.arange(1, int(math.log2(machine_size)) + 1, dtype=float)
    lo_edges, hi_edges = np.log2(2.0**k - 0.5), np.log2(2.0**k + 0.5)
    cdf_hi = _two_stage_cdf(hi_edges, low, med, hi, cls.uprob)
    hit = cdf_hi - _two_stage_cdf(lo_edges, low, med, hi, cls.uprob)
    return cls.pow2_prob + (1.0 - cls.serial_prob - cls.pow2_prob) * float(hit.sum())


@pytest.mark.parametrize("queue", ["batch", "interactive"])
def test_serial_and_pow2_shares(big: tuple[pl.DataFrame, dict], queue: str) -> None:
    jobs, _ = big
    size = jobs.filter(pl.col("queue") == queue)["size"].to_numpy()
    m = size.size
    cls = _class_params(queue)
    serial = float((size == 1).mean())
    pow2 = float(((size > 1) & ((size & (size - 1)) == 0)).mean())
    exp_pow2 = _expected_pow2_share(cls, P_BIG)
    assert abs(serial - cls.serial_prob) < 5 * math.sqrt(cls.serial_prob * (1 - cls.serial_prob) / m)
    assert abs(pow2 - exp_pow2) < 5 * math.sqrt(exp_pow2 * (1 - exp_pow2) / m)
    assert pow2 >= cls.pow2_prob - 5 * math.sqrt(0.25 / m)  # rounding only adds powers of two


# --------------------------------------------------------------------------------------------- runtime


def _gamma_pdf(g: np.ndarray, shape: float, scale: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        logpdf = (shape - 1) * np.log(g) - g / scale - math.lgamma(shape) - shape * math.log(scale)
    return np.where(g > 0, np.exp(logpdf), 0.0)


def _runtime_reference(cls: LublinClassParams, sizes: np.ndarray, cap: float = 12.0):
    """Independent model of the job-averaged truncated hyper-gamma: (cdf(log t), mean runtime)."""
    grid = np.linspace(0.0, cap, 240_001)
    dx = grid[1] - grid[0]

    def cum(y: np.ndarray) -> np.ndarray:
        return np.concatenate(([0.0], np.cumsum((y[1:] + y[:-1]) * dx / 2)))

    f1, f2 = _gamma_pdf(grid, cls.a1, cls.b1), _gamma_pdf(grid, cls.a2, cls.b2)
    c1, c2 = cum(f1), cum(f2)
    e1, e2 = cum(np.exp(grid) * f1)[-1], cum(np.exp(grid) * f2)[-1]
    uniq, counts = np.unique(sizes, return_counts=True)
    p = np.clip(cls.pa * uniq + cls.pb, 0.0, 1.0)  # p = pa·nodes + pb (reference implementation)
    z = p * c1[-1] + (1 - p) * c2[-1]
    w = counts / counts.sum()

    def cdf(x: float) -> float:
        i = min(np.searchsorted(grid, x), grid.size - 1)
        return float((w * (p * c1[i] + (1 - p) * c2[i]) / z).sum())

    mean = float((w * (p * e1 + (1 - p) * e2) / z).sum())
    return cdf, mean


@pytest.mark.parametrize("queue", ["batch", "interactive"])
def test_runtime_distribution_matches_hyper_gamma(big: tuple[pl.DataFrame, dict], queue: str) -> None:
    jobs, _ = big
    sub = jobs.filter(pl.col("queue") == queue)
    rt, sizes = sub["runtime"].to_numpy(), sub["size"].to_numpy()
    m = rt.size
    cdf, mean = _runtime_reference(_class_params(queue), sizes)
    # runtime = floor(exp(g)) so P(runtime ≤ t) = P(g < log(t + 1)) exactly, for integer t.
    for t in (5, 30, 120, 600, 3600, 14400, 86400):
        f = cdf(math.log(t + 1))
        tol = 5 * math.sqrt(max(f * (1 - f), 1e-4) / m) + 1e-3
        assert abs(float((rt <= t).mean()) - f) < tol, (t, f)
    # median: runtimes are integers, so the sample median t must satisfy P(rt ≤ t − 1) ≤ ½ ≤ P(rt ≤ t)
    med = float(np.median(rt))
    tol = 5 * math.sqrt(0.25 / m) + 1e-3
    assert cdf(math.log(med)) <= 0.5 + tol and cdf(math.log(med + 1)) >= 0.5 - tol
    # mean: truncated-MGF mean minus the floor's < 1 s, within 6 standard errors
    se = rt.std() / math.sqrt(m)
    assert mean - 1.0 - 6 * se < rt.mean() < mean + 6 * se


def test_runtime_size_correlation() -> None:
    """pa < 0: larger jobs draw the long gamma more often, so they run longer (the model's correlation)."""
    jobs = generate_lublin(50_000, 128, seed=5).jobs.filter(pl.col("queue") == "batch")
    small = jobs.filter(pl.col("size") <= 4)["runtime"].median()
    large = jobs.filter(pl.col("size") >= 64)["runtime"].median()
    assert large > 2 * small


def test_p_size_metric_variants() -> None:
    base = generate_lublin(20_000, 8192, seed=6).jobs
    for metric in ("log2", "scaled"):
        alt = generate_lublin(20_000, 8192, seed=6, params=LublinParams(p_size_metric=metric)).jobs
        assert alt["size"].equals(base["size"])  # sizes do not depend on the runtime model
        # at 8192 processors the raw node count drives p to 0 for most parallel batch jobs: longer runtimes
        assert alt["runtime"].mean() < base["runtime"].mean()
    with pytest.raises(ValueError, match="p_size_metric"):
        LublinParams(p_size_metric="bogus")


# ------------------------------------------------------------------------------------------ arrivals


def _hour_counts(jobs: pl.DataFrame, header: dict) -> np.ndarray:
    hours = ((jobs["submit_time"].to_numpy() + header["clock_offset"]) % 86400.0) // 3600.0
    return np.bincount(hours.astype(int), minlength=24)


def test_daily_cycle(big: tuple[pl.DataFrame, dict]) -> None:
    jobs, header = big
    counts = _hour_counts(jobs, header)
    expected = counts.sum() / 24
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 > 1000  # far from uniform (the 0.999 quantile with 23 dof is ≈ 49.7)
    assert 10 <= int(np.argmax(counts)) <= 17  # peak in the early afternoon
    assert 1 <= int(np.argmin(counts)) <= 7  # quietest before dawn
    assert counts[10:18].sum() > 2.5 * counts[0:8].sum()
    # the span covers many days, so the cycle is not an artefact of a short sample
    assert jobs["submit_time"].max() > 30 * 86400


@pytest.mark.parametrize("target", [0.3, 0.7, 0.95, 1.4])
def test_target_load_is_met(target: float) -> None:
    res = generate_lublin(20_000, 256, seed=9, target_load=target)
    assert abs(_load(res.jobs, 256) / target - 1) < 0.01
    assert res.provenance.header["target_load"] == target
    native = generate_lublin(20_000, 256, seed=9)
    for col in ("runtime", "size", "walltime", "queue", "user_id"):
        assert res.jobs[col].equals(native.jobs[col])  # only arrivals are rescaled


@pytest.mark.parametrize("machine_size", [128, 1024, 8192])
def test_target_load_machine_sizes_and_cycle_kept(machine_size: int) -> None:
    res = generate_lublin(30_000, machine_size, seed=10, target_load=0.8)
    assert abs(_load(res.jobs, machine_size) / 0.8 - 1) < 0.01
    counts = _hour_counts(res.jobs, res.provenance.header)
    assert 10 <= int(np.argmax(counts)) <= 17 and counts[10:18].sum() > 2 * counts[0:8].sum()


# -------------------------------------------------------------------------------------------- walltime


def test_tsafrir_walltimes_are_popular_and_cover_runtime(big: tuple[pl.DataFrame, dict]) -> None:
    jobs, _ = big
    rt, wt = jobs["runtime"].to_numpy(), jobs["walltime"].to_numpy()
    assert np.all(wt >= rt) and np.all(wt <= 172800.0)
    assert set(np.unique(wt)) <= set(POPULAR_WALLTIMES)
    assert np.median(wt / rt) > 1.0
    assert float((wt == rt).mean()) < 0.01


def test_exact_walltimes_and_cap() -> None:
    jobs = generate_lublin(20_000, 256, seed=11, walltime_model="exact").jobs
    assert jobs["walltime"].equals(jobs["runtime"])
    capped = generate_lublin(20_000, 256, seed=11, max_walltime=3600.0).jobs
    rt, wt = capped["runtime"].to_numpy(), capped["walltime"].to_numpy()
    assert rt.max() == 3600.0 and wt.max() == 3600.0 and np.all(wt >= rt)
    assert set(np.unique(wt)) <= {v for v in POPULAR_WALLTIMES if v < 3600.0} | {3600.0}


# ----------------------------------------------------------------------------------------------- users


def test_users_zipf(big: tuple[pl.DataFrame, dict]) -> None:
    jobs, _ = big
    users = jobs["user_id"].to_numpy()
    assert users.min() >= 1 and users.max() <= 100
    counts = np.bincount(users, minlength=101)[1:]
    harmonic = sum(1 / k for k in range(1, 101))
    share1 = counts[0] / users.size
    assert abs(share1 - 1 / harmonic) < 5 * math.sqrt(0.25 / users.size)
    assert counts[0] > counts[9] > counts[99] > 0
    few = generate_lublin(2000, 64, seed=1, n_users=3).jobs["user_id"]
    assert set(few.unique()) == {1, 2, 3}


# ---------------------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_jobs": 0}, "n_jobs"),
        ({"n_jobs": -5}, "n_jobs"),
        ({"machine_size": 0}, "machine_size"),
        ({"machine_size": -8}, "machine_size"),
        ({"target_load": 0.0}, "target_load"),
        ({"target_load": -0.5}, "target_load"),
        ({"target_load": float("nan")}, "target_load"),
        ({"n_users": 0}, "n_users"),
        ({"walltime_model": "guess"}, "walltime_model"),
        ({"max_walltime": 0.0}, "max_walltime"),
        ({"n_jobs": 1, "target_load": 0.5}, "n_jobs"),
    ],
)
def test_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"n_jobs": 100, "machine_size": 128, **kwargs}
    n_jobs, machine_size = args.pop("n_jobs"), args.pop("machine_size")
    with pytest.raises(ValueError, match=match):
        generate_lublin(n_jobs, machine_size, **args)


def test_single_job() -> None:
    jobs = generate_lublin(1, 16, seed=0).jobs
    assert jobs.height == 1 and jobs["submit_time"][0] == 0.0


# ------------------------------------------------------------------------------------- short submit times


@pytest.mark.parametrize("resolution", [0.001, 1.0, 0.0])
def test_submit_times_on_the_grid_round_trip_through_swf(tmp_path, resolution: float) -> None:
    """Submit times carry only the digits of the grid (issue 18: 16–17 digit times were slow to read), the SWF
    written of them reads back to the same values, and the load target still holds."""
    from wattsched import load_workload, save_workload
    from wattsched.workload.swf.tokenizer import IS_INT, LINE_OK, POW10, scan

    res = generate_lublin(5000, 256, seed=4, target_load=0.9, params=LublinParams(submit_resolution=resolution))
    sub = res.jobs["submit_time"].to_numpy()
    path = tmp_path / "w.swf"
    save_workload(res, path, format="swf")
    tokens = [ln.split()[1] for ln in path.read_text().splitlines() if not ln.startswith(";")]
    digits = [len(t.replace(".", "").lstrip("0")) for t in tokens]
    if resolution:
        assert np.array_equal(np.round(sub / resolution) / round(1 / resolution), sub)
        assert max(digits) <= 12  # ≤ 1e9 s with 3 decimals
        status = scan(np.frombuffer(path.read_bytes(), np.uint8), POW10, IS_INT, False)[4]
        assert (status == LINE_OK).all()  # Clinger's fast path, no strtod needed
    else:
        assert max(digits) >= 16  # full float64 times: the long form the reader must also handle
    back = load_workload(path)
    assert back.rejects.height == 0
    cols = ["job_id", "submit_time", "walltime", "runtime", "size", "user_id"]
    assert back.jobs.select(cols).equals(res.jobs.select(cols))
    assert abs(_load(res.jobs, 256) / 0.9 - 1) < 0.01


def test_submit_resolution_must_be_a_grid() -> None:
    with pytest.raises(ValueError, match="submit_resolution"):
        LublinParams(submit_resolution=-1.0)
