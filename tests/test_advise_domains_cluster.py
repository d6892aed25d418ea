"""Power domains on a live Slurm testbed (marker slurm: fails under CI=true when it cannot start): two domains of
two nodes under the cluster cap, gate mode; each domain stays under its own cap (the testbed's true power log),
each released job was kept in its domain by an ExcNodeList, and a user cannot move a released job out of it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from slurm_fixtures import SlurmCluster, own_testbed
from test_advise_cluster import IDLE, MAX, _advisor, _wait_done, _wait_first_cycle
from wattsched.advise.slurm import job_submit_lua
from wattsched.advise.store import AdvisorStore

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

DOMAINS = {"d1": (("n1", "n2"), 700.0), "d2": (("n3", "n4"), 900.0)}  # budgets for jobs: 500 W and 700 W


def _install_gate_with_domains(c: SlurmCluster) -> None:
    conf = Path(c.env["SLURM_CONF"])
    text = job_submit_lua().read_text()
    for name, value in (("DEFAULT_WATTS_PER_NODE", str(MAX - IDLE)), ("GATE", "true"), ("DOMAINS", "true")):
        text = re.sub(rf"^local {name} = .*$", f"local {name} = {value}", text, count=1, flags=re.M)
    (conf.parent / "job_submit.lua").write_text(text)
    (conf.parent / "job_submit.lua").chmod(0o644)
    conf.write_text(conf.read_text() + "JobSubmitPlugins=lua\n")
    c.run("scontrol", "reconfigure")
    time.sleep(1)


def test_two_domains_each_stay_under_their_own_cap(tmp_path: Path) -> None:
    """Jobs without history are sized at the worst case, 400 W: each domain has room for one at a time (500 and
    700 W of budget), while the cluster's 1,600 W would take four. Six jobs drawing 300 W above idle run two at a
    time, one per domain, and neither domain's true power ever exceeds its cap."""
    with own_testbed(nodes=4, idle_watts=IDLE, max_watts=MAX) as c:
        _install_gate_with_domains(c)
        state, status = tmp_path / "d.sqlite", tmp_path / "s.json"
        config = tmp_path / "advisor.toml"
        config.write_text(
            'mode = "gate"\n'
            + "".join(
                f'[[domains]]\nname = "{name}"\nnodes = "{",".join(nodes)}"\nwatts = {watts:g}\n'
                for name, (nodes, watts) in DOMAINS.items()
            )
            + f"[power]\nmax_watts_per_node = {MAX}\nidle_watts_per_node = {IDLE}\n"
        )
        with _advisor(c, state, "--config", str(config), "--cap", "2000W", "--status-file", str(status)):
            _wait_first_cycle(status)
            since = time.time()
            jobs = [c.submit(user=u, power=300, seconds=8, name="d") for u in ("wsalice", "wsbob", "wscarol") * 2]
            first = jobs[0]
            c.wait_state(first, ["RUNNING", "COMPLETED"], timeout=30)
            # released into one domain: its user may not widen where it may run
            moved = c.run("scontrol", "update", f"JobId={jobs[-1]}", "ExcNodeList=", user="wscarol", check=False)
            assert moved.returncode != 0
            _wait_done(c, jobs, timeout=240)
        log = [line for line in c.power_log() if line["t"] >= since]
        assert log
        for name, (nodes, cap) in DOMAINS.items():
            peak = max(sum(line["nodes"][n] for n in nodes) for line in log)
            print(f"domain {name}: true peak {peak:.0f} W against its {cap:.0f} W cap")
            assert peak <= cap, (name, peak)
            together = max(sum(1 for js in line["jobs"].values() if set(js) & set(nodes)) for line in log)
            assert together == 1, (name, together)  # room for one 400-W job at a time
        with AdvisorStore(state) as store:
            audit = store.frame("audit")
        kept = audit.filter(audit["kind"] == "set_nodes")
        assert kept.height >= len(jobs) - 1, kept  # each release kept its job inside a domain
