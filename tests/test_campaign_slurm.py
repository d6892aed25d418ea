"""A campaign on the user's own Slurm cluster (issue 30): dask-jobqueue's ``SLURMCluster`` starts the Dask workers
as Slurm jobs of the local testbed (marker slurm: fails under CI=true when it cannot start), the campaign runs on
them through ``wattsched.api.run_campaign(..., executor="dask", address=...)``, and its result set is the local
run's, bit for bit but for the timing fields. docs/campaigns.md's recipe is run as printed by the docs test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from dask.distributed import Client
from dask_jobqueue import SLURMCluster

from slurm_fixtures import own_testbed
from test_campaign import SMALL, _results
from wattsched.api.campaigns import load_experiment, run_campaign

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

SPEC = 'kind = "power"\n' + SMALL  # tests/test_campaign.py's small power campaign


def test_a_campaign_on_slurm_workers_gives_the_local_result_set(tmp_path: Path, monkeypatch) -> None:
    spec = tmp_path / "c.toml"
    spec.write_text(SPEC)
    local = run_campaign(load_experiment(spec), tmp_path / "local", workers=1)
    assert local.executed == local.total > 0
    with own_testbed(nodes=2) as c:
        monkeypatch.setenv("SLURM_CONF", c.env["SLURM_CONF"])  # sbatch, squeue and scancel of dask-jobqueue
        monkeypatch.chdir(tmp_path)
        # a testbed node has 1 CPU and 1,000 MB: one single-threaded worker per Slurm job
        with SLURMCluster(
            queue="batch", cores=1, processes=1, memory="900MB", walltime="00:20:00", log_directory="worker-logs"
        ) as cluster:
            cluster.scale(jobs=2)
            with Client(cluster) as client:
                client.wait_for_workers(2, timeout=120)
                running = c.run("squeue", "-h", "-t", "RUNNING", "-o", "%i %j").stdout.split("\n")
                workers = [line.split()[0] for line in running if line.strip()]
                assert len(workers) == 2, running  # the workers are Slurm jobs of the testbed
                done = run_campaign(
                    load_experiment(spec), tmp_path / "slurm", executor="dask", address=cluster.scheduler_address
                )
                # the scheduler's only workers are the two Slurm jobs, so they ran every run
                assert done.executed == done.total == local.total
                assert len(client.scheduler_info()["workers"]) == 2
        logs = sorted((tmp_path / "worker-logs").glob("*.err"))
        assert len(logs) == 2, logs
        assert all(re.search(r"Start worker", log.read_text()) for log in logs)
    assert _results(tmp_path / "slurm").equals(_results(tmp_path / "local"))
