"""The testbed's settings, its state file and the Slurm/MariaDB configuration files it writes.

Everything of one testbed lives under one folder (its base): configuration, munge key and socket, MariaDB datadir,
spool and state folders, logs, and ``testbed.json`` (what ``down`` and ``status`` need: pids, ports, paths). Every
port is a free TCP port picked at ``up``, so several testbeds run side by side on one machine.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from wattsched.core.structured_input import load_json

#: The testbed's Slurm cluster name (also the remote license server: the license is then ``power@testbed``).
CLUSTER = "testbed"

#: The state file under the base folder.
STATE_FILE = "testbed.json"

#: Users ``up`` creates (when missing) and gives an association, so tests submit as several users.
TEST_USERS = ("wsalice", "wsbob", "wscarol", "wsdave")  # four: the advisor's mixed workload (bench/advisor_mixed.py)

#: The Slurm account of every testbed user.
ACCOUNT = "testbed"


@dataclass
class TestbedOptions:
    """What ``wattsched testbed up`` was asked for (docs/testbed.md gives the defaults and why)."""

    base: Path
    nodes: int = 8
    idle_watts: int = 100
    max_watts: int = 500
    license_total: int | None = None  # None: nodes × max_watts, a budget that never binds until changed
    remote_license: bool = False
    rest: bool = False

    @property
    def power_total(self) -> int:
        """The power license's count: the option, or the whole cluster at full power."""
        return self.license_total if self.license_total is not None else self.nodes * self.max_watts

    @property
    def license_name(self) -> str:
        """The license's name as jobs request it (``power`` or the remote ``power@testbed``)."""
        return f"power@{CLUSTER}" if self.remote_license else "power"


@dataclass
class TestbedState:
    """The content of ``testbed.json``: enough for ``down``, ``status`` and the tests to find everything."""

    base: str
    slurm_conf: str
    nodes: list[str]
    idle_watts: int
    max_watts: int
    license_name: str
    license_total: int
    remote_license: bool
    ports: dict[str, int]
    pids: dict[str, int] = field(default_factory=dict)  # daemon name -> pid, in start order
    namespaces: list[str] = field(default_factory=list)  # the slurmd mount namespaces (their jobs live there)
    rest_url: str | None = None
    jwt_key: str | None = None
    power_log: str = ""
    counters: str = ""  # folder holding <node>/cray/pm_counters/{power,energy}
    started_at: float = 0.0
    cold_start_s: float = 0.0

    def save(self, base: Path) -> None:
        """Write ``testbed.json`` atomically (a crash never leaves half a state file)."""
        tmp = base / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(tmp, base / STATE_FILE)

    @classmethod
    def load(cls, base: Path) -> TestbedState | None:
        """The state of the testbed under ``base``, or None when there is none (or it is unreadable)."""
        path = base / STATE_FILE
        try:
            raw: dict[str, Any] = load_json(path.read_text(), path)  # too deep: a ValueError, unreadable
            return cls(**raw)
        except (OSError, ValueError, TypeError):
            return None

    def env(self) -> dict[str, str]:
        """The environment the Slurm tools need to talk to this testbed."""
        return {**os.environ, "SLURM_CONF": self.slurm_conf}


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 now (the kernel picks them; held open together so they
    differ). A port can be taken between this call and the daemon's bind: ``up`` then fails on that daemon with
    its log named, and a second ``up`` picks new ones."""
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


def slurm_conf(opts: TestbedOptions, ports: dict[str, int], host: str, jwt_key: Path | None) -> str:
    """slurm.conf of the testbed: the lines of ``../shared/spec/slurm-testbed.md`` with this base's paths."""
    b = opts.base
    node_lines = "\n".join(
        f"NodeName=n{i} NodeHostname={host} NodeAddr=127.0.0.1 Port={ports[f'n{i}']} CPUs=1 RealMemory=1000 "
        "State=UNKNOWN"
        for i in range(1, opts.nodes + 1)
    )
    tres_license = f"license/{opts.license_name}"
    licenses = "" if opts.remote_license else f"Licenses=power:{opts.power_total}\n"
    jwt = f"AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={jwt_key}\n" if jwt_key else ""
    return f"""# Written by `wattsched testbed up`: a throwaway local cluster (docs/testbed.md). Do not edit; `down` and
# `up` rewrite it.
ClusterName={CLUSTER}
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports["slurmctld"]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={b / "munge" / "munge.socket"}
CredType=cred/munge
{jwt}StateSaveLocation={b / "state"}
SlurmdSpoolDir={b / "spool"}/%n
SlurmctldPidFile={b / "run" / "slurmctld.pid"}
SlurmdPidFile={b / "run"}/slurmd-%n.pid
SlurmctldLogFile={b / "log" / "slurmctld.log"}
SlurmdLogFile={b / "log"}/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=5,energy=1
AcctGatherEnergyType=acct_gather_energy/pm_counters
AcctGatherNodeFreq=1
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,sched_interval=1,bf_resolution=1,bf_licenses
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PriorityType=priority/basic
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={ports["slurmdbd"]}
# Quirk: clients and slurmctld take the munge socket for slurmdbd connections from here, not from AuthInfo
AccountingStoragePass=socket={b / "munge" / "munge.socket"}
AccountingStorageTRES=cpu,mem,energy,node,billing,{tres_license}
JobCompType=jobcomp/none
MinJobAge=60
InactiveLimit=0
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=60
{licenses}{node_lines}
PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=EXCLUSIVE
"""


def slurmdbd_conf(opts: TestbedOptions, ports: dict[str, int], host: str, jwt_key: Path | None) -> str:
    """slurmdbd.conf: the private MariaDB on its own port, the log and pid under the base."""
    b = opts.base
    jwt = f"AuthAltTypes=auth/jwt\nAuthAltParameters=jwt_key={jwt_key}\n" if jwt_key else ""
    return f"""# Written by `wattsched testbed up` (docs/testbed.md).
AuthType=auth/munge
AuthInfo=socket={b / "munge" / "munge.socket"}
{jwt}DbdHost={host}
DbdAddr=127.0.0.1
DbdPort={ports["slurmdbd"]}
SlurmUser=root
LogFile={b / "log" / "slurmdbd.log"}
PidFile={b / "run" / "slurmdbd.pid"}
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports["mariadb"]}
StorageUser=slurm
StoragePass=testbed
StorageLoc=slurm_acct_db
"""
