"""The offline what-if: the advisor's learning and sizing replayed in the simulator's power-capped EASY on a
synthetic sacct dump whose jobs' true power is known (energy = power × nodes × elapsed)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from wattsched.advise.config import load_config
from wattsched.advise.replay import ReplayError, replay

HEADER = (
    "JobIDRaw|JobName|User|Account|Partition|Submit|Start|End|ElapsedRaw|TimelimitRaw|State|NNodes|NCPUS|"
    "ConsumedEnergyRaw|NodeList"
)
TRUTH = {"alice": 300.0, "bob": 120.0}  # gross W per node
IDLE = 50.0


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def write_dump(path: Path, n: int = 60, seed: int = 3, energy: bool = True) -> Path:
    """``n`` 2-node jobs of alice and bob on an 8-node cluster (nid[001-008]), submitted every 2 minutes."""
    rng = random.Random(seed)
    t0 = 1_780_000_000.0
    lines = [HEADER]
    for i in range(n):
        user = "alice" if i % 3 else "bob"
        submit = t0 + 120 * i
        runtime = rng.randint(600, 1800)
        watts = TRUTH[user] * rng.uniform(0.97, 1.03)
        joules = str(int(watts * 2 * runtime)) if energy else "0"
        first = 1 + 2 * (i % 4)
        lines.append(
            "|".join([
                str(1000 + i), "sim", user, "acct", "batch", _iso(submit), _iso(submit), _iso(submit + runtime),
                str(runtime), "60", "COMPLETED", "2", "16", joules, f"nid[{first:03d}-{first + 1:03d}]",
            ])
        )  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return path


def test_replay_keeps_the_cap_and_reports_the_cost(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "dump.sacct")
    cap = 1400.0  # budget 1400 − 8 × 50 = 1000 W: two alice jobs (2 × 2 × 250 W) at a time, not four
    cfg = load_config(None, cap=cap, power__idle_watts_per_node=IDLE, power__max_watts_per_node=400)
    result = replay(dump, cfg)
    s = result.summary
    assert s["jobs"] == 60 and s["machine_size"] == 8 and s["machine_size_source"].startswith("the nodes")
    assert s["peak_watts"]["uncapped"] > cap  # the cap binds
    assert s["peak_watts"]["capped"] <= cap and s["instants_over_cap"] == 0
    assert s["peak_watts"]["saved"] > 0
    assert s["wait_s"]["increase"]["mean"] > 0 and s["jobs_delayed"] > 0
    # a job learns once a job of its user completed before its submission (runs are 10–30 min)
    late = result.capped.filter(pl.col("submit_time") >= pl.col("submit_time").min() + 3600)
    assert late["has_history"].all() and s["learned_jobs"] >= late.height
    learned = result.capped.filter("has_history")
    assert learned["license"].min() >= 2 * (TRUTH["bob"] - IDLE)
    assert learned["license"].max() <= 2 * 350 * 1.05 + 1  # the worst case bounds every license
    # energy of the jobs is the same either way: the cap moves work in time, it does not remove it
    assert s["energy_j"]["jobs"] == pytest.approx(
        float((result.uncapped["true_watts"] * (result.uncapped["end_time"] - result.uncapped["start_time"])).sum())
    )
    assert result.power["capped_watts"].max() == pytest.approx(s["peak_watts"]["capped"])
    paths = result.write(tmp_path / "out")
    assert pl.read_csv(paths["capped"]).height == 60 and json.loads(paths["summary"].read_text())["jobs"] == 60


def test_replay_without_a_binding_cap_changes_nothing(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "dump.sacct", n=30)
    cfg = load_config(None, cap="100kW", power__idle_watts_per_node=IDLE, power__max_watts_per_node=400)
    s = replay(dump, cfg).summary
    assert s["jobs_delayed"] == 0 and s["wait_s"]["increase"]["mean"] == 0.0
    assert s["peak_watts"]["capped"] == pytest.approx(s["peak_watts"]["uncapped"])
    # without a worst case a job with no history is sized at the whole budget: it runs alone (documented default)
    alone = replay(dump, load_config(None, cap="100kW", power__idle_watts_per_node=IDLE)).summary
    assert alone["jobs_delayed"] > 0


def test_replay_errors_are_one_line(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "dump.sacct", n=5)
    with pytest.raises(ReplayError, match=r"needs power\.idle_watts_per_node"):
        replay(dump, load_config(None, cap=1400))
    with pytest.raises(ReplayError, match="no budget above the idle power"):
        replay(dump, load_config(None, cap=300, power__idle_watts_per_node=IDLE))


def test_jobs_without_energy_still_hold_nodes(tmp_path: Path) -> None:
    dump = write_dump(tmp_path / "dump.sacct", n=12, energy=False)
    cfg = load_config(None, cap=1400, power__idle_watts_per_node=IDLE, power__max_watts_per_node=400)
    s = replay(dump, cfg).summary
    assert s["jobs_without_energy"] == 12 and s["learned_jobs"] == 0


RECORDED = Path(__file__).parent / "data" / "slurm-22.05" / "sacct.json"


def test_replay_reads_a_recorded_slurm_22_05_sacct_answer() -> None:
    """``sacct --json`` of a Slurm 22.05 testbed (8 nodes, 100 W idle, a job's test power on top of it; a copy of
    tests/data/slurm-22.05/sacct.json of the testbed branch): energy becomes each job's true net power."""
    cfg = load_config(None, cap=1400, power__idle_watts_per_node=100, power__max_watts_per_node=400)
    result = replay(RECORDED, cfg, machine_size=8)
    s = result.summary
    assert s["jobs"] == 4 and s["rejected"] == 4  # two still running, two never started when recorded
    assert s["jobs_without_energy"] == 2  # the failed and the cancelled job
    true = dict(result.capped.select("job_id", "true_watts").iter_rows())
    assert true[1] == pytest.approx(2 * 250.0, rel=0.03)  # done2n: 2 nodes at testpower=250
    assert true[2] == pytest.approx(150.0, rel=0.03)  # done1n: testpower=150
    assert s["instants_over_cap"] == 0 and s["peak_watts"]["capped"] <= 1400


def test_a_poisoned_history_stays_under_the_cap(tmp_path: Path) -> None:
    """Issue 28: one user first runs 30 idle 1-node jobs, then eight 4-node jobs at 500 W a node. Without the
    floors and evidence by size the user's license fell to 1 W and the replay went 1,000 W over a 1,000 W cap;
    now the 4-node jobs have no evidence at their size, are sized at the worst case (4 × 500 W, more than the
    whole budget) and held, and the replay never exceeds the cap."""
    t0 = 1_780_000_000.0
    lines = [HEADER]
    for i in range(30):
        submit = t0 + 60 * i
        lines.append("|".join([str(2000 + i), "idle", "mallory", "acct", "batch", _iso(submit), _iso(submit),
                               _iso(submit + 50), "50", "60", "COMPLETED", "1", "8", "0", "nid001"]))  # fmt: skip
    for i in range(8):
        submit = t0 + 1900 + 30 * i
        lines.append("|".join([str(3000 + i), "burn", "mallory", "acct", "batch", _iso(submit), _iso(submit),
                               _iso(submit + 600), "600", "60", "COMPLETED", "4", "32", str(500 * 4 * 600),
                               "nid[001-004]"]))  # fmt: skip
    dump = tmp_path / "poison.sacct"
    dump.write_text("\n".join(lines) + "\n")
    cfg = load_config(None, cap=1000, power__definition="gross", power__max_watts_per_node=500)
    s = replay(dump, cfg).summary
    assert s["peak_watts"]["uncapped"] >= 2000  # what the history did
    assert s["instants_over_cap"] == 0 and s["peak_watts"]["capped"] <= 1000
    assert s["held_above_budget"] == 8 and s["held_jobs"] == list(range(3000, 3008))
