"""The shipped ``job_submit.lua`` run in Lua 5.1 (the Lua Debian's Slurm 22.05 links) through lupa, with a mock
``slurm`` table: the submit-time power guard against hostile requests, fast (no cluster).

The job descriptors below are what sbatch and scontrol of Slurm 22.05 hand the plugin, as a probe script logged
them on the local testbed (unset numbers are NO_VAL or NO_VAL16, unset strings nil, and a job_desc's string field
cannot be set to nil: 22.05 raises "string expected, got nil", which the mock reproduces). tests/
test_advise_guard_cluster.py checks the same rules on the live testbed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from wattsched.advise.slurm import DEFAULT_MARKER, GATE_MARKER, OVERSIZE_MARKER, job_submit_lua

try:  # the Lua of Debian's slurmctld 22.05 (liblua5.1); lupa's default runtime where a build lacks it
    from lupa.lua51 import LuaRuntime
except ImportError:  # pragma: no cover - depends on the lupa wheel
    from lupa import LuaRuntime

NO_VAL = 4294967294
NO_VAL16 = 65534
INFINITE = 4294967295
SUCCESS, ERROR = 0, -1
ACCESS_DENIED, INVALID_LICENSES = 2002, 2048  # ESLURM_* of 22.05
SPREAD_JOB = 256
USER, ROOT = 1001, 0
W = 400  # DEFAULT_WATTS_PER_NODE in these tests

MOCK = f"""
slurm = {{ NO_VAL = {NO_VAL}, NO_VAL16 = {NO_VAL16}, NO_VAL64 = 18446744073709551614, INFINITE = {INFINITE},
  SUCCESS = {SUCCESS}, ERROR = {ERROR}, ESLURM_ACCESS_DENIED = {ACCESS_DENIED},
  ESLURM_INVALID_LICENSES = {INVALID_LICENSES}, SPREAD_JOB = {SPREAD_JOB}, JOB_SHARED_NONE = 0 }}
LOG, USER_MSG, ERRORS = {{}}, {{}}, {{}}
function slurm.log_info(fmt, ...) LOG[#LOG + 1] = string.format(fmt, ...) end
function slurm.log_error(fmt, ...) ERRORS[#ERRORS + 1] = string.format(fmt, ...) end
function slurm.log_user(fmt, ...) USER_MSG[#USER_MSG + 1] = string.format(fmt, ...) end
-- job_desc as 22.05 passes it: unknown fields read nil; setting a field to nil raises
function make_desc(fields)
  return setmetatable({{}}, {{
    __index = function(_, k) return fields[k] end,
    __newindex = function(_, k, v)
      if v == nil then error("bad argument #3 to '?' (string expected, got nil)") end
      fields[k] = v
    end }})
end
function make_rec(fields)
  return setmetatable({{}}, {{ __index = function(_, k) return fields[k] end,
                              __newindex = function() error("job_rec is read-only") end }})
end
function raising()
  return setmetatable({{}}, {{ __index = function(_, k) error("no field " .. k) end }})
end
"""

#: What sbatch of 22.05 sends for a job without options (the probe's log), before a test's own fields.
PLAIN: dict[str, Any] = {
    "name": "wrap",
    "user_id": USER,
    "min_nodes": NO_VAL,
    "max_nodes": NO_VAL,
    "num_tasks": NO_VAL,
    "min_cpus": 1,
    "max_cpus": NO_VAL,
    "ntasks_per_node": NO_VAL16,
    "cpus_per_task": NO_VAL16,
    "pn_min_cpus": NO_VAL16,
    "shared": NO_VAL16,
    "ntasks_per_socket": NO_VAL16,
    "ntasks_per_core": NO_VAL16,
    "ntasks_per_board": 0,
    "ntasks_per_tres": NO_VAL16,
    "ntasks_per_gpu": NO_VAL16,
    "sockets_per_node": NO_VAL16,
    "cores_per_socket": NO_VAL16,
    "threads_per_core": NO_VAL16,
    "het_job_offset": NO_VAL,
    "priority": NO_VAL,
    "time_limit": NO_VAL,
    "bitflags": 503316480,
}

#: What scontrol update of 22.05 sends besides the fields it changes.
UPDATE: dict[str, Any] = {k: v for k, v in PLAIN.items() if k not in {"name", "min_cpus", "bitflags"}} | {
    "min_cpus": NO_VAL,
    "het_job_offset": 0,
}


def partition(name: str, nodes: int, cpus_per_node: int = 1, *, share: int = 0, default: bool = True, **kw: Any):
    """A part_list entry as 22.05 gives it (max_share 0: OverSubscribe=EXCLUSIVE, 1: NO)."""
    return {
        "name": name,
        "nodes": f"n[1-{nodes}]",
        "total_nodes": nodes,
        "total_cpus": nodes * cpus_per_node,
        "max_nodes": kw.pop("max_nodes", INFINITE),
        "min_nodes": 0,
        "max_cpus_per_node": INFINITE,
        "flag_default": 1 if default else 0,
        "max_share": share,
        **kw,
    }


BATCH = {"batch": partition("batch", 16)}  # 16 one-CPU nodes, whole nodes (as the testbed)


@dataclass
class Submitted:
    rc: int
    job: dict[str, Any]
    user: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    @property
    def licenses(self) -> str | None:
        return self.job.get("licenses")

    @property
    def comment(self) -> str:
        return self.job.get("admin_comment") or ""


class Guard:
    """The shipped job_submit.lua loaded in a fresh Lua state, its first lines set as an operator would."""

    def __init__(self, **constants: str) -> None:
        text = job_submit_lua().read_text()
        constants.setdefault("DEFAULT_WATTS_PER_NODE", str(W))
        for name, value in constants.items():
            text, n = re.subn(
                rf"^local {name} = .*$", lambda _m, line=f"local {name} = {value}": line, text, count=1, flags=re.M
            )
            assert n == 1, f"job_submit.lua has no line 'local {name} = ...'"
        self.lua = LuaRuntime(unpack_returned_tuples=True)
        self.lua.execute(MOCK)
        self.loaded = self.lua.execute(text)

    def _table(self, data: dict[str, Any]) -> Any:
        return self.lua.table_from(data, recursive=True)

    def _drain(self, name: str) -> list[str]:
        table = self.lua.globals()[name]
        out = [table[i] for i in range(1, len(table) + 1)]
        self.lua.execute(f"{name} = {{}}")
        return out

    def submit(self, uid: int = USER, parts: dict[str, Any] | None = None, **fields: Any) -> Submitted:
        g = self.lua.globals()
        data = self._table({k: v for k, v in (PLAIN | fields).items() if v is not None})
        part_list = self._table(BATCH if parts is None else parts)
        rc = g.slurm_job_submit(g.make_desc(data), part_list, uid)
        return Submitted(rc, dict(data.items()), self._drain("USER_MSG"), self._drain("LOG"))

    def modify(self, rec: dict[str, Any], uid: int = USER, parts: dict[str, Any] | None = None, **fields: Any) -> int:
        g = self.lua.globals()
        desc = g.make_desc(self._table(UPDATE | fields))
        rc = g.slurm_job_modify(desc, g.make_rec(self._table(rec)), self._table(BATCH if parts is None else parts), uid)
        self._drain("LOG")
        return int(rc)


@pytest.fixture
def guard() -> Guard:
    return Guard()


def _power(licenses: str | None) -> str:
    return ",".join(e for e in (licenses or "").split(",") if e.startswith("power"))


# ---------------------------------------------------------------------------------------------------- submit
def test_the_script_loads_and_says_so() -> None:
    g = Guard(BUDGET_WATTS="1600")
    assert g.loaded == SUCCESS
    assert g.lua.eval("LOG[1]") == (
        "wattsched job_submit.lua loaded (license power, 400 W per node by default, budget 1600, oversize hold, "
        "gate false)"
    )


@pytest.mark.parametrize(
    "asked",
    [
        "power:1",
        "power:0",
        "power:500,power:0",
        "power*2",
        "power",
        "power;power:3",
        "POWER:1",
        "Power*7",
        " power:1",
        "power:1 ",
        "power:-5",
        "power:5abc",
        "power:99999999999",
        "matlab:1|power:1",
    ],
)
def test_any_power_license_a_user_asks_for_is_replaced_by_the_default(guard: Guard, asked: str) -> None:
    """-N 2 (as sbatch sends it: min = max = 2): the default is 2 x 400 W, whatever power license was asked."""
    s = guard.submit(licenses=asked, min_nodes=2, max_nodes=2, min_cpus=2)
    assert s.rc == SUCCESS
    assert _power(s.licenses) == "power:800" and s.licenses.count("power") == 1, s.licenses
    assert s.comment == DEFAULT_MARKER
    assert len(s.user) == 1 and "replaced by power:800" in s.user[0] and "\n" not in s.user[0]


@pytest.mark.parametrize(
    ("asked", "kept"),
    [
        ("matlab:2,power:1", "matlab:2"),
        ("matlab:2;power:0;abaqus:3", "matlab:2,abaqus:3"),
        ("powerx:3,power:1", "powerx:3"),  # another license whose name starts with power
        ("matlab:2", "matlab:2"),
        ("power@site:4", "power@site:4"),  # a remote license of another name is not the cap's
    ],
)
def test_other_licenses_are_kept(guard: Guard, asked: str, kept: str) -> None:
    s = guard.submit(licenses=asked, min_nodes=1, max_nodes=1)
    assert s.licenses == f"{kept},power:{W}"


def test_a_remote_license_name_in_any_case_is_replaced() -> None:
    g = Guard(LICENSE='"power@srv"')
    for asked in ("power@srv:1", "POWER@SRV:1", "power@srv*3,power@srv:0"):
        s = g.submit(licenses=asked, min_nodes=1, max_nodes=1)
        assert s.licenses == f"power@srv:{W}", asked
    assert g.submit(licenses="power:5", min_nodes=1, max_nodes=1).licenses == f"power:5,power@srv:{W}"


def test_an_administrator_keeps_the_license_it_asks_for_and_gets_the_default_otherwise(guard: Guard) -> None:
    own = guard.submit(uid=ROOT, licenses="power:123", min_nodes=8, max_nodes=8, admin_comment="wattsched:gate")
    assert own.rc == SUCCESS and own.licenses == "power:123" and own.comment == "wattsched:gate"
    default = guard.submit(uid=ROOT, min_nodes=3, max_nodes=3)
    assert default.licenses == f"power:{3 * W}" and default.comment == DEFAULT_MARKER


@pytest.mark.parametrize(
    ("fields", "nodes"),
    [
        ({"min_nodes": 2, "max_nodes": 2}, 2),  # -N 2
        ({"min_nodes": 2, "max_nodes": 4}, 4),  # -N 2-4: the largest count
        ({"min_nodes": 2, "max_nodes": 2, "num_tasks": 64}, 2),  # -N 2 -n 64: Slurm keeps the job on 2 nodes
        ({"min_nodes": 64, "max_nodes": 64}, 64),  # above the partition: explicit counts are not cut
        ({"num_tasks": 4, "min_cpus": 4}, 4),  # -n 4 without -N: one task per node at most
        ({"num_tasks": 64, "min_cpus": 64}, 16),  # more tasks than the partition's nodes
        ({"num_tasks": 4, "ntasks_per_node": 2, "min_cpus": 4}, 4),  # one-CPU nodes: 1 task a node
        ({"num_tasks": 3, "ntasks_per_node": 3, "min_cpus": 3}, 3),  # --ntasks-per-node=3 alone
        ({"num_tasks": 2, "cpus_per_task": 2, "min_cpus": 4}, 2),  # -c 2 -n 2
        ({"num_tasks": NO_VAL16, "min_cpus": NO_VAL16}, 16),  # 65534 tasks is a count, not unset
        ({"min_nodes": 3, "req_nodes": "n[1-3]", "min_cpus": 3}, 3),  # -w n[1-3] (sbatch sets the minimum)
        ({"req_nodes": "n[1-3,7],m[1-2]x[1-2]"}, 8),  # a node list without -N
        ({"req_nodes": "n[1-"}, 16),  # unreadable: the partition's limit
        ({"num_tasks": 2, "req_nodes": "n[1-5]"}, 5),  # never below the node list
        ({}, 16),  # nothing stated: the partition's node limit, never 1
        ({"cpus_per_task": 2, "min_cpus": 2, "pn_min_cpus": 2}, 16),  # -c 2 alone states no count either
        ({"min_nodes": 1, "tres_per_job": "gres:gpu:8"}, 16),  # --gpus=8 may span nodes
    ],
)
def test_the_default_counts_the_most_nodes_the_job_can_get(guard: Guard, fields: dict[str, Any], nodes: int) -> None:
    s = guard.submit(**fields)
    assert (s.rc, s.licenses) == (SUCCESS, f"power:{nodes * W}"), s.log


def test_whole_nodes_pack_by_the_smallest_node_cpus_and_tasks_per_node() -> None:
    """On whole nodes (--exclusive or OverSubscribe=EXCLUSIVE) a task count fills the fewest nodes, at most
    --ntasks-per-node and CPUs of the smallest node / CPUs per task tasks on each."""
    big = {"big": partition("big", 128, cpus_per_node=64, share=1)}  # shared nodes (OverSubscribe=NO)
    g = Guard(NODE_CPUS='{ ["*"] = 64 }')
    hostile = {"num_tasks": 4096, "ntasks_per_node": 64, "min_cpus": 4096}
    assert g.submit(parts=big, shared=0, **hostile).licenses == f"power:{64 * W}"  # --exclusive: 64 nodes
    assert g.submit(parts=big, **hostile).licenses == f"power:{128 * W}"  # shared nodes: a task a node, cut at 128
    assert g.submit(parts=big, shared=0, num_tasks=8, cpus_per_task=16, min_cpus=128).licenses == f"power:{2 * W}"
    assert g.submit(parts=big, shared=0, num_tasks=8, ntasks_per_node=1, min_cpus=8).licenses == f"power:{8 * W}"
    exclusive = {"ex": partition("ex", 128, cpus_per_node=64, share=0)}
    assert g.submit(parts=exclusive, num_tasks=256, min_cpus=256).licenses == f"power:{4 * W}"
    # what stops packing: --spread-job, --mem-per-cpu, --ntasks-per-socket, --gpus-per-task
    for extra in (
        {"bitflags": 503316480 + SPREAD_JOB},
        {"min_mem_per_cpu": 4000},
        {"ntasks_per_socket": 1},
        {"tres_per_task": "gres:gpu:1"},
    ):
        assert g.submit(parts=exclusive, num_tasks=32, min_cpus=32, **extra).licenses == f"power:{32 * W}", extra
    # NODE_CPUS above the partition's mean CPUs per node is cut to the mean: 64, not 128
    assert Guard(NODE_CPUS='{ ["*"] = 128 }').submit(parts=exclusive, num_tasks=256).licenses == f"power:{4 * W}"
    # per partition, and the default of 1 CPU never packs below one task per node
    per = Guard(NODE_CPUS='{ ["*"] = 1, ex = 32 }')
    assert per.submit(parts=exclusive, num_tasks=256, min_cpus=256).licenses == f"power:{8 * W}"
    assert Guard().submit(parts=exclusive, num_tasks=256, min_cpus=256).licenses == f"power:{128 * W}"


def test_the_partitions_a_job_may_use_bound_what_it_does_not_state() -> None:
    parts = {
        "small": partition("small", 4, default=True),
        "wide": partition("wide", 64, default=False, max_nodes=8),
        "huge": partition("huge", 32, default=False),
    }
    g = Guard()
    assert g.submit(parts=parts).licenses == f"power:{4 * W}"  # the default partition
    assert g.submit(parts=parts, partition="wide").licenses == f"power:{8 * W}"  # its MaxNodes
    assert g.submit(parts=parts, partition="small,huge").licenses == f"power:{32 * W}"  # the larger of a list
    # a partition part_list does not know: the largest limit of all (wide's 64 nodes count as its MaxNodes, 8)
    assert g.submit(parts=parts, partition="nosuch").licenses == f"power:{32 * W}"
    assert g.submit(parts=parts, partition="wide", num_tasks=20, min_cpus=20).licenses == f"power:{8 * W}"
    no_default = {k: v | {"flag_default": 0} for k, v in parts.items()}
    assert g.submit(parts=no_default).licenses == f"power:{32 * W}"
    assert Guard(UNSIZED_NODES="1").submit(parts=parts).licenses == f"power:{W}"


def test_a_job_that_states_nothing_is_told_how_it_was_sized(guard: Guard) -> None:
    s = guard.submit(licenses="power:1")
    assert s.licenses == f"power:{16 * W}"
    assert len(s.user) == 1 and "no -N or -n given: sized as 16 nodes" in s.user[0]
    one = guard.submit(parts={"solo": partition("solo", 1)})
    assert one.licenses == f"power:{W}" and "sized as 1 node, the partition's limit" in one.user[0]
    quiet = Guard(UNSIZED_NODES="1").submit()
    assert quiet.licenses == f"power:{W}" and quiet.user == []


def test_missing_and_nil_fields_and_no_partition() -> None:
    g = Guard()
    bare = g.submit(**dict.fromkeys(PLAIN, None))  # a job_desc that answers nil to everything
    assert (bare.rc, bare.licenses) == (SUCCESS, f"power:{16 * W}")
    none = g.submit(parts={})
    assert none.rc == ERROR and len(none.user) == 1 and "cannot be sized" in none.user[0]
    assert g.submit(parts={}, min_nodes=2, max_nodes=2).licenses == f"power:{2 * W}"


def test_user_planted_markers_are_removed(guard: Guard) -> None:
    planted = "wattsched:gate please wattsched:oversize WattSched:Default xwattsched:gatey WATTSCHED : gate z"
    s = guard.submit(admin_comment=planted, min_nodes=1, max_nodes=1)
    # "WATTSCHED : gate" is no marker (the advisor looks for the exact words): only its first word goes
    assert s.comment == f"please x gate z {DEFAULT_MARKER}"
    only = guard.submit(admin_comment="wattsched:gate", min_nodes=1, max_nodes=1)
    assert only.comment == DEFAULT_MARKER
    for marker in (GATE_MARKER, OVERSIZE_MARKER):
        assert marker not in s.comment and marker not in only.comment


def test_an_array_and_each_heterogeneous_component_get_the_guard(guard: Guard) -> None:
    """22.05 calls slurm_job_submit once for a whole array (each task inherits the license) and once per component
    of a heterogeneous job (het_job_offset 0, 1, ...), as the probe logged."""
    array = guard.submit(array_inx="0-9", licenses="power:1", min_nodes=1, max_nodes=1)
    assert array.licenses == f"power:{W}"
    first = guard.submit(het_job_offset=0, licenses="power:1", min_nodes=1, max_nodes=1, min_cpus=1)
    second = guard.submit(het_job_offset=1, num_tasks=2, min_cpus=2)
    assert (first.licenses, second.licenses) == (f"power:{W}", f"power:{2 * W}")


def test_gate_mode_holds_every_job_including_an_administrators() -> None:
    g = Guard(GATE="true")
    user = g.submit(min_nodes=1, max_nodes=1)
    assert user.job["priority"] == 0 and user.comment == f"{DEFAULT_MARKER} {GATE_MARKER}"
    admin = g.submit(uid=ROOT, licenses="power:10")
    assert admin.job["priority"] == 0 and admin.comment == GATE_MARKER and admin.licenses == "power:10"


def test_a_job_above_the_budget_is_held_with_the_budget_as_its_license() -> None:
    g = Guard(BUDGET_WATTS="1600")
    s = g.submit(licenses="matlab:1,power:1", min_nodes=5, max_nodes=5)
    assert s.rc == SUCCESS and s.licenses == "matlab:1,power:1600" and s.job["priority"] == 0
    assert s.comment == f"{OVERSIZE_MARKER} {DEFAULT_MARKER}"
    assert len(s.user) == 1 and "\n" not in s.user[0]
    assert "held" in s.user[0] and "2000 W (5 nodes x 400 W)" in s.user[0] and "budget of 1600 W" in s.user[0]
    fits = g.submit(min_nodes=4, max_nodes=4)  # exactly the budget: not held
    assert fits.licenses == "power:1600" and fits.job["priority"] == NO_VAL and OVERSIZE_MARKER not in fits.comment
    assert g.submit(num_tasks=64, min_cpus=64).licenses == "power:1600"  # 16 nodes x 400 W: held too
    # a user cannot plant the marker to look held, nor remove it
    assert g.submit(admin_comment=OVERSIZE_MARKER, min_nodes=1, max_nodes=1).comment == DEFAULT_MARKER


def test_a_job_above_the_budget_is_refused_with_one_line() -> None:
    g = Guard(BUDGET_WATTS="1600", OVERSIZE='"refuse"')
    s = g.submit(min_nodes=5, max_nodes=5)
    assert s.rc == INVALID_LICENSES
    assert s.user == [
        "wattsched: job refused: its worst case is 2000 W (5 nodes x 400 W), above the power budget of 1600 W; "
        "ask for fewer nodes (-N) or tasks (-n)"
    ]
    assert g.submit(min_nodes=4, max_nodes=4).rc == SUCCESS


def test_without_a_budget_nothing_is_held(guard: Guard) -> None:
    s = guard.submit(min_nodes=64, max_nodes=64)
    assert s.licenses == f"power:{64 * W}" and s.job["priority"] == NO_VAL


def test_the_guard_fails_closed_when_the_script_errs(guard: Guard) -> None:
    g = guard.lua.globals()
    rc = g.slurm_job_submit(g.raising(), guard._table(BATCH), USER)  # a job_desc whose every field raises
    assert rc == ERROR and "failed" in guard._drain("USER_MSG")[0] and guard._drain("ERRORS")
    rc = g.slurm_job_modify(g.make_desc(guard._table(UPDATE | {"min_nodes": 3})), g.raising(), g.raising(), USER)
    assert rc == ACCESS_DENIED and guard._drain("ERRORS")


# ---------------------------------------------------------------------------------------------------- modify
#: A pending job as job_rec shows it in 22.05 (no num_tasks, cpus_per_task nor ntasks_per_node there).
TWO_NODES = {
    "job_id": 7,
    "licenses": "power:800",
    "min_nodes": 2,
    "max_nodes": 2,
    "min_cpus": 2,
    "pn_min_cpus": 1,
    "partition": "batch",
    "priority": 1,
    "admin_comment": DEFAULT_MARKER,
    "time_limit": NO_VAL,
}
FOUR_TASKS = TWO_NODES | {"licenses": "power:1600", "min_nodes": 1, "max_nodes": 0, "min_cpus": 4}


@pytest.mark.parametrize(
    ("licenses", "rc"),
    [
        ("power:500,power:0", ACCESS_DENIED),
        ("power:800,power:0", ACCESS_DENIED),
        ("power:400,power:400", ACCESS_DENIED),
        ("power:0", ACCESS_DENIED),
        ("power:801", ACCESS_DENIED),
        ("POWER:800", ACCESS_DENIED),
        ("", ACCESS_DENIED),  # Licenses= clears every license
        ("matlab:1", ACCESS_DENIED),  # drops the power license
        ("power:800", SUCCESS),  # the same
        ("matlab:1,power:800", SUCCESS),  # another license changes, the power license stays
    ],
)
def test_a_user_cannot_change_the_power_license(guard: Guard, licenses: str, rc: int) -> None:
    assert guard.modify(TWO_NODES, licenses=licenses) == rc
    assert guard.modify(TWO_NODES, uid=ROOT, licenses=licenses) == SUCCESS  # the advisor may


@pytest.mark.parametrize(
    ("rec", "fields", "rc"),
    [
        (TWO_NODES, {"min_nodes": 64}, ACCESS_DENIED),  # NumNodes=64
        (TWO_NODES, {"min_nodes": 3, "max_nodes": 3}, ACCESS_DENIED),
        (TWO_NODES, {"min_nodes": 1}, SUCCESS),  # NumNodes=1: fewer
        (TWO_NODES, {"req_nodes": "n[1-4]"}, ACCESS_DENIED),
        (TWO_NODES, {"time_limit": 10}, SUCCESS),  # TimeLimit=10
        (TWO_NODES, {"nice": 2147483648 + 10}, SUCCESS),  # Nice on a job not held
        (FOUR_TASKS, {"num_tasks": 8}, ACCESS_DENIED),  # NumTasks=8 of a -n 4 job
        (FOUR_TASKS, {"num_tasks": 3}, SUCCESS),
        (FOUR_TASKS, {"cpus_per_task": 1}, SUCCESS),  # its 4 CPUs stand for at most 4 tasks
        (FOUR_TASKS, {"partition": "batch"}, SUCCESS),
        (TWO_NODES | {"licenses": "power:500"}, {"min_nodes": 2}, ACCESS_DENIED),  # the advisor's 250 W a node
        (TWO_NODES | {"licenses": None}, {"min_nodes": 1}, ACCESS_DENIED),  # no power license: covers nothing
    ],
)
def test_a_user_cannot_resize_a_job_beyond_its_license(
    guard: Guard, rec: dict[str, Any], fields: dict[str, Any], rc: int
) -> None:
    rec = {k: v for k, v in rec.items() if v is not None}
    assert guard.modify(rec, **fields) == rc
    assert guard.modify(rec, uid=ROOT, **fields) == SUCCESS


def test_a_job_moved_to_a_larger_partition_is_judged_there() -> None:
    parts = {"batch": partition("batch", 4), "wide": partition("wide", 64, default=False)}
    g = Guard()
    unsized = TWO_NODES | {"licenses": "power:1600", "min_nodes": 1, "max_nodes": 0, "min_cpus": 1}
    assert g.modify(unsized, parts=parts, partition="wide") == SUCCESS  # one task: one node anywhere
    assert g.modify(FOUR_TASKS, parts=parts, partition="wide") == SUCCESS
    eight = FOUR_TASKS | {"min_cpus": 8}
    assert g.modify(eight, parts=parts, partition="wide") == ACCESS_DENIED  # 8 tasks may take 8 nodes there


def test_a_user_cannot_set_the_admin_comment(guard: Guard) -> None:
    assert guard.modify(TWO_NODES, admin_comment="") == ACCESS_DENIED


@pytest.mark.parametrize("marker", [OVERSIZE_MARKER, GATE_MARKER])
def test_a_job_held_by_the_guard_cannot_be_released_by_its_user(guard: Guard, marker: str) -> None:
    held = TWO_NODES | {"priority": 0, "admin_comment": f"{marker} {DEFAULT_MARKER}"}
    assert guard.modify(held, priority=INFINITE) == ACCESS_DENIED  # scontrol release
    assert guard.modify(held, priority=5) == ACCESS_DENIED
    assert guard.modify(held, nice=2147483648 + 10) == ACCESS_DENIED  # Nice lifts a hold in 22.05
    assert guard.modify(held, priority=0) == SUCCESS  # scontrol hold
    assert guard.modify(held, time_limit=5) == SUCCESS
    assert guard.modify(held, uid=ROOT, priority=INFINITE) == SUCCESS  # the advisor releases it
    # a job its user held (no marker) is theirs to release
    assert guard.modify(TWO_NODES | {"priority": 0}, priority=INFINITE) == SUCCESS


def test_gate_mode_refuses_a_release_even_without_the_marker() -> None:
    assert Guard(GATE="true").modify(TWO_NODES | {"priority": 0}, priority=INFINITE) == ACCESS_DENIED


def test_every_admin_uid_may_do_anything() -> None:
    g = Guard(ADMIN_UIDS="{ [0] = true, [990] = true }")
    held = TWO_NODES | {"priority": 0, "admin_comment": OVERSIZE_MARKER}
    assert g.modify(held, uid=990, licenses="power:1", min_nodes=64, priority=INFINITE) == SUCCESS
    assert g.submit(uid=990, licenses="power:1").licenses == "power:1"


def test_with_power_domains_a_user_cannot_move_a_job_out_of_its_domain() -> None:
    """The advisor releases a job with an ExcNodeList that keeps it in a domain with room (docs/advisor-model.md,
    "Power domains"); with DOMAINS = true the job's user may not change where it may run."""
    g = Guard(GATE="true", DOMAINS="true")
    for where in ("exc_nodes", "req_nodes", "features"):
        assert g.modify(TWO_NODES, **{where: ""}) == ACCESS_DENIED
        assert g.modify(TWO_NODES, uid=ROOT, **{where: "n[1-4]"}) == SUCCESS  # the advisor sets it
    assert g.modify(TWO_NODES, time_limit=5) == SUCCESS
    assert Guard().modify(TWO_NODES, exc_nodes="n1") == SUCCESS  # without domains: the user's own business
