"""The advisor on a mixed workload, measured on the local testbed against the fixed-license baseline (issue 28).

Eight emulated nodes (idle 100 W, at most 500 W), a cap of 2,000 W on whole-cluster power: the jobs' budget is
2,000 − 8 × 100 = 1,200 W, slurm.conf's license total. The shipped job_submit.lua is installed with
``DEFAULT_WATTS_PER_NODE = 400`` (the net worst case, 500 − 100). 32 jobs of four users, each user with two kinds
of job under two names, of different true power (the testbed's hidden truth, ``--comment testpower=W``, watts per
node above idle) and size:

========  ======  =====  =================
user      name    nodes  true W per node
========  ======  =====  =================
wsalice   cfd     2      350
wsalice   post    1      100
wsbob     md      1      250
wsbob     ana     1      50
wscarol   ml      2      300
wscarol   prep    1      150
wsdave    lin     3      200
wsdave    io      1      80
========  ======  =====  =================

Four jobs of each kind, runtimes 15–30 s, submitted in a seeded random order over 60 s (``--seed``, default 0),
each with a time limit of 1 minute (``--time-limit``; 0: none, the partition's INFINITE), as users give them.
The limit changes the schedule: with it, backfill reserves the licenses for a waiting wide job and the 1-node jobs
queue behind it; without it, Slurm cannot plan, and the 1-node jobs pass the wide ones whenever their licenses fit
(seed 0's baseline: the first 2-node ``ml`` job waited 45 s with the limit and 163 s without; the mean wait was
154 s against 117 s).

The conditions, each on a fresh testbed with the same submissions:

- ``baseline``: the Lua's fixed license (nodes × 400 W), no advisor;
- ``advisor``: ``wattsched advise --cap 2000W --interval 2`` with ``power.max_watts_per_node = 500`` and
  ``power.idle_watts_per_node = 100`` (every other key at its default, or ``learning.key`` from ``--key``; the
  key in force is recorded), started before the first submission; the jobs are submitted after its first
  successful cycle (its status file);
- ``suspend``: the same with ``on_overshoot = "suspend"``.

Measured the same way for every condition. From the power daemon's log (``power.jsonl``, every 0.25 s, the truth;
the advisor never reads it): the peak cluster power, the seconds above the cap and the mean cluster power over the
makespan divided by the cap. From ``sacct --json``: the jobs completed, the mean wait (start − submit), the makespan
(last end − first submit) and each job's power license against its true power (nodes × testpower).

Writes ``bench/results/advisor_mixed.json`` (every job of every condition, the advisor's overshoots, actions and
last predictions from its store), the advisor run's ``sacct --json -a -S <testbed start>`` as
``bench/results/advisor_mixed_sacct.json`` (the recorded dump that ``bench/advisor_keys.py`` replays; the suspend
run's as ``advisor_mixed_sacct_suspend.json``), and each condition's power log and advisor log beside them. A seed
other than 0, a time limit other than 1 min or a ``--key`` add ``_seed<N>``, ``_t<N>``, ``_key-<fields>`` to every
name, so that only the default run writes the recorded dump. Prints one markdown row per condition.

Needs root and Debian's Slurm packages (``make testbed-deps``). Measured on the project's 2-core machine: 19–20 min
for the three conditions, about 7 min for the baseline and 6–6.5 min for each advisor run (testbed up 5–11 s, the
workload 5.5–7 min, down a few seconds); 1,152 s and 1,205 s with another job keeping both cores busy (load 3),
1,189 s on the machine alone:

    .venv/bin/python bench/advisor_mixed.py                      # all three conditions, seed 0
    .venv/bin/python bench/advisor_mixed.py --conditions baseline,advisor --seed 1 --key user --keep

Ctrl-C or SIGTERM brings every testbed it started down (``--keep`` leaves them up only after a complete run).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from wattsched.advise.config import load_config
from wattsched.advise.slurm import job_submit_lua
from wattsched.testbed.cluster import down, up
from wattsched.testbed.config import TEST_USERS, TestbedOptions
from wattsched.testbed.power import read_power_log

NODES, IDLE, MAX, CAP = 8, 100, 500, 2000
BUDGET = CAP - NODES * IDLE  # 1,200 W: slurm.conf's license total
DEFAULT_WPN = MAX - IDLE  # the Lua's default per node: the net worst case
PER_KIND = 4  # jobs of each kind: 2 kinds × 4 = 8 jobs per user
SPREAD_S = 60.0  # submissions spread over this many seconds
RUNTIME_S = (15, 30)
#: user -> its two kinds: (job name, nodes, true watts per node above idle)
KINDS: dict[str, tuple[tuple[str, int, int], ...]] = {
    "wsalice": (("cfd", 2, 350), ("post", 1, 100)),
    "wsbob": (("md", 1, 250), ("ana", 1, 50)),
    "wscarol": (("ml", 2, 300), ("prep", 1, 150)),
    "wsdave": (("lin", 3, 200), ("io", 1, 80)),
}
CONDITIONS = ("baseline", "advisor", "suspend")
RESULTS = Path(__file__).parent / "results"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}
#: Give up on a run when this long passes with jobs left and none running nor finishing (held for ever).
STALL_S = 120.0
TIMEOUT_S = 1200.0


@dataclass
class Planned:
    """One submission of the plan: who, what, when (seconds after the first)."""

    user: str
    name: str
    nodes: int
    watts: int  # true per node above idle
    seconds: int
    offset: float


def plan(seed: int) -> list[Planned]:
    """The 32 submissions of ``seed``: every kind ``PER_KIND`` times, in a random order at random instants over
    ``SPREAD_S`` (the first at 0), runtimes uniform in ``RUNTIME_S``."""
    rng = random.Random(seed)
    jobs = [(user, kind) for user, kinds in KINDS.items() for kind in kinds for _ in range(PER_KIND)]
    rng.shuffle(jobs)
    offsets = [0.0, *sorted(rng.uniform(0.0, SPREAD_S) for _ in range(len(jobs) - 1))]
    return [
        Planned(user, name, nodes, watts, rng.randint(*RUNTIME_S), round(offset, 2))
        for (user, (name, nodes, watts)), offset in zip(jobs, offsets, strict=True)
    ]


@dataclass
class Run:
    """One condition on its own testbed: what the finally needs to clean up."""

    condition: str
    base: Path
    env: dict[str, str] = field(default_factory=dict)
    advisor: subprocess.Popen[bytes] | None = None
    advisor_log: Any = None
    downed: bool = False


def _run(env: dict[str, str], *argv: str, cwd: Path | None = None, timeout: float = 60) -> str:
    done = subprocess.run(list(argv), env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def _install_lua(run: Run) -> None:
    """The shipped job_submit.lua next to slurm.conf with the default at the net worst case (docs/advisor.md)."""
    text = job_submit_lua().read_text()
    text, n = re.subn(
        r"^local DEFAULT_WATTS_PER_NODE = \d+$", f"local DEFAULT_WATTS_PER_NODE = {DEFAULT_WPN}", text, flags=re.M
    )
    if n != 1:
        raise RuntimeError("the shipped job_submit.lua has no 'local DEFAULT_WATTS_PER_NODE = N' line to set")
    lua = run.base / "job_submit.lua"
    lua.write_text(text)
    lua.chmod(0o644)
    conf = run.base / "slurm.conf"
    conf.write_text(conf.read_text() + "JobSubmitPlugins=lua\n")
    _run(run.env, "scontrol", "reconfigure")
    time.sleep(1)


def _start_advisor(run: Run, suspend: bool, key: list[str] | None) -> tuple[float, list[str]]:
    """``wattsched advise`` as its own process; returns once its first cycle succeeded: the seconds it took and
    the learning key in force (``key``, else the advisor's default, read from the same configuration file)."""
    config = run.base / "advisor.toml"
    text = f"[power]\nmax_watts_per_node = {MAX}\nidle_watts_per_node = {IDLE}\n"
    if suspend:
        text = 'on_overshoot = "suspend"\n' + text
    if key:
        text += f"[learning]\nkey = {json.dumps(key)}\n"
    config.write_text(text)
    in_force = list(load_config(config, cap=f"{CAP}W").learning.key)
    status = run.base / "status.json"
    argv = [
        sys.executable, "-m", "wattsched", "advise", "--config", str(config), "--cap", f"{CAP}W", "--interval", "2",
        "--state", str(run.base / "advisor.sqlite"), "--status-file", str(status),
    ]  # fmt: skip
    run.advisor_log = (run.base / "advisor.log").open("ab")
    began = time.monotonic()
    run.advisor = subprocess.Popen(argv, env=run.env, stdout=run.advisor_log, stderr=subprocess.STDOUT)
    deadline = began + 60
    while time.monotonic() < deadline:
        if run.advisor.poll() is not None:
            raise RuntimeError(f"the advisor exited {run.advisor.returncode}: see {run.base / 'advisor.log'}")
        if status.exists():
            try:
                if json.loads(status.read_text()).get("ok"):
                    return time.monotonic() - began, in_force
            except ValueError:
                pass
        time.sleep(0.2)
    raise RuntimeError("no successful advisor cycle within 60 s")


def _stop_advisor(run: Run) -> None:
    if run.advisor is not None and run.advisor.poll() is None:
        run.advisor.send_signal(signal.SIGTERM)
        try:
            run.advisor.wait(timeout=30)
        except subprocess.TimeoutExpired:
            run.advisor.kill()
            run.advisor.wait()
    if run.advisor_log is not None:
        run.advisor_log.close()
        run.advisor_log = None


def _submit(run: Run, job: Planned, limit_min: int) -> int:
    limit = ["-t", str(limit_min)] if limit_min > 0 else []
    out = _run(
        run.env, "runuser", "-u", job.user, "--", "sbatch", "--parsable", "-J", job.name, "-N", str(job.nodes),
        *limit, "-o", "/dev/null", "--comment", f"testpower={job.watts}", "--wrap", f"srun sleep {job.seconds}",
        cwd=run.base / "work",
    )  # fmt: skip
    return int(out.strip().split(";")[0])


def _states(run: Run, ids: list[int]) -> dict[int, str]:
    out = _run(run.env, "sacct", "-X", "-n", "-P", "-a", "-j", ",".join(map(str, ids)), "-o", "JobIDRaw,State")
    states = {}
    for line in out.splitlines():
        raw, state = line.split("|")
        states[int(raw)] = state.split()[0] if state else ""
    return states


def _wait_all(run: Run, ids: list[int]) -> list[str]:
    """Wait until every job has ended; returns what was left (with squeue's reason) when the run stalled."""
    deadline = time.monotonic() + TIMEOUT_S
    last_change, last = time.monotonic(), None
    while time.monotonic() < deadline:
        states = _states(run, ids)
        if len(states) == len(ids) and all(s in TERMINAL for s in states.values()):
            return []
        snapshot = sorted(states.items())
        if snapshot != last:
            last, last_change = snapshot, time.monotonic()
        if time.monotonic() - last_change > STALL_S:
            break
        time.sleep(2)
    out = _run(run.env, "squeue", "-h", "-o", "%i %u %j %T %r %W")
    return [line.strip() for line in out.splitlines()]


def _sacct_json(run: Run, since: float) -> dict[str, Any]:
    start = datetime.fromtimestamp(since).strftime("%Y-%m-%dT%H:%M:%S")
    return json.loads(_run(run.env, "sacct", "--json", "-a", "-S", start))


def _jobs_from(dump: dict[str, Any], planned: dict[int, Planned]) -> list[dict[str, Any]]:
    """One row per planned job from ``sacct --json``: times, state, the license it ran with, its energy, and the
    truth (nodes × testpower) next to its license."""
    rows = []
    for job in dump["jobs"]:
        job_id = int(job["job_id"])
        if job_id not in planned:
            continue
        p = planned[job_id]
        t = job["time"]
        alloc = {(x["type"], x.get("name")): x.get("count") for x in job["tres"]["allocated"]}
        req = {(x["type"], x.get("name")): x.get("count") for x in job["tres"]["requested"]}
        license_w = alloc.get(("license", "power"), req.get(("license", "power")))
        rows.append(
            {
                "job_id": job_id,
                "user": p.user,
                "name": p.name,
                "nodes": p.nodes,
                "true_w": p.nodes * p.watts,
                "license_w": license_w,
                "seconds": p.seconds,
                "state": job["state"]["current"],
                "submit": t["submission"],
                "start": t["start"] or None,
                "end": t["end"] or None,
                "suspended_s": t.get("suspended", 0),
                "energy_j": alloc.get(("energy", None)),
            }
        )
    return sorted(rows, key=lambda r: r["job_id"])


def _power(log: list[dict[str, Any]], t0: float, t1: float) -> dict[str, float]:
    """Peak, seconds above the cap and mean power / cap over [t0, t1] from the power daemon's samples (each held
    until the next one)."""
    rows = sorted((float(r["t"]), float(r["total_w"])) for r in log)
    peak_all = max((w for _, w in rows), default=0.0)
    above = energy = span = 0.0
    peak = 0.0
    for (t, w), (t_next, _) in itertools.pairwise(rows):
        a, b = max(t, t0), min(t_next, t1)
        if b <= a:
            continue
        dt = b - a
        span += dt
        energy += w * dt
        peak = max(peak, w)
        if w > CAP + 1e-6:
            above += dt
    return {
        "peak_w": peak,
        "peak_whole_log_w": peak_all,
        "seconds_above_cap": round(above, 2),
        "mean_w": round(energy / span, 1) if span else 0.0,
        "mean_over_cap": round(energy / span / CAP, 4) if span else 0.0,
        "samples": len(rows),
        "covered_s": round(span, 1),
    }


def _advisor_store(path: Path) -> dict[str, Any]:
    """What the advisor's store says (read-only, tolerant of schema changes): its overshoots, its actions, and the
    last prediction of each job."""
    if not path.exists():
        return {}
    out: dict[str, Any] = {}
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        for name, sql in (
            ("overshoots", 'SELECT start, "end", peak, seconds, acted FROM overshoots ORDER BY id'),
            ("actions", "SELECT kind, applied, count(*) FROM audit GROUP BY kind, applied"),
            (
                "last_prediction",
                "SELECT job_id, watts_per_node, license, source FROM predictions p WHERE time = "
                "(SELECT max(time) FROM predictions q WHERE q.job_id = p.job_id) ORDER BY job_id",
            ),
            ("history", "SELECT job_id, user, name, nodes, watts_net, license FROM history ORDER BY job_id"),
            (
                "license_changes",  # job, how many set_license, the lowest and highest value set
                "SELECT job_id, count(*), min(value), max(value) FROM audit WHERE kind = 'set_license' "
                "GROUP BY job_id ORDER BY job_id",
            ),
        ):
            try:
                out[name] = [list(r) for r in con.execute(sql).fetchall()]
            except sqlite3.Error as exc:
                out[name] = f"unreadable: {exc}"
    finally:
        con.close()
    return out


def condition(
    name: str, jobs: list[Planned], runs: list[Run], limit_min: int, tag: str = "", key: list[str] | None = None
) -> dict[str, Any]:
    """One condition on a fresh testbed (module docstring); ``runs`` collects it for the caller's cleanup."""
    began = time.monotonic()
    load_before = os.getloadavg()[0]
    base = Path(tempfile.mkdtemp(prefix=f"wattsched-mixed-{name}-", dir="/tmp"))
    base.chmod(0o755)
    run = Run(name, base)
    runs.append(run)
    result = up(TestbedOptions(base=base, nodes=NODES, idle_watts=IDLE, max_watts=MAX, license_total=BUDGET))
    run.env = result.state.env()
    up_s = time.monotonic() - began
    _install_lua(run)
    first_cycle_s, learning_key = None, None
    if name != "baseline":
        first_cycle_s, learning_key = _start_advisor(run, suspend=name == "suspend", key=key)

    t_start = time.time()
    planned: dict[int, Planned] = {}
    for job in jobs:
        delay = t_start + job.offset - time.time()
        if delay > 0:
            time.sleep(delay)
        planned[_submit(run, job, limit_min)] = job
    ids = list(planned)
    left = _wait_all(run, ids)
    time.sleep(3)  # the last energy reaches the accounting; a cycle or two more of the advisor
    _stop_advisor(run)
    dump = _sacct_json(run, result.state.started_at - 60)
    rows = _jobs_from(dump, planned)
    done = [r for r in rows if r["state"] == "COMPLETED"]
    started = [r for r in rows if r["start"]]
    first_submit = min(r["submit"] for r in rows)
    last_end = max((r["end"] for r in rows if r["end"]), default=first_submit)
    log = read_power_log(Path(result.state.power_log))
    power = _power(log, float(first_submit), float(last_end) + 1.0)  # sacct's whole seconds: the last one included
    waits = [r["start"] - r["submit"] for r in started]
    lic_err = [r["license_w"] - r["true_w"] for r in rows if r["license_w"] is not None]
    out: dict[str, Any] = {
        "condition": name,
        "learning_key": learning_key,
        "jobs": len(rows),
        "completed": len(done),
        "left_at_end": left,
        "peak_w": power["peak_w"],
        "seconds_above_cap": power["seconds_above_cap"],
        "mean_power_over_cap": power["mean_over_cap"],
        "mean_power_w": power["mean_w"],
        "mean_wait_s": round(statistics.mean(waits), 1) if waits else None,
        "max_wait_s": max(waits) if waits else None,
        "makespan_s": last_end - first_submit,
        "license_minus_true_w": {
            "mean": round(statistics.mean(lic_err), 1) if lic_err else None,
            "min": min(lic_err, default=None),
            "max": max(lic_err, default=None),
            "under_licensed_jobs": sum(1 for e in lic_err if e < 0),
        },
        "power": power,
        "timing_s": {"testbed_up": round(up_s, 1), "advisor_first_cycle": first_cycle_s},
        "load_before": round(load_before, 2),
        "per_job": rows,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    if name != "baseline":
        suffix = "" if name == "advisor" else f"_{name}"
        (RESULTS / f"advisor_mixed_sacct{suffix}{tag}.json").write_text(json.dumps(dump, indent=1) + "\n")
        out["advisor_store"] = _advisor_store(base / "advisor.sqlite")
        shutil.copy(base / "advisor.log", RESULTS / f"advisor_mixed_{name}{tag}.log")
        status = base / "status.json"
        out["advisor_last_status"] = json.loads(status.read_text()) if status.exists() else None
    shutil.copy(result.state.power_log, RESULTS / f"advisor_mixed_power_{name}{tag}.jsonl")
    out["timing_s"]["condition"] = round(time.monotonic() - began, 1)
    return out


def _row(r: dict[str, Any]) -> str:
    wait = "–" if r["mean_wait_s"] is None else f"{r['mean_wait_s']:.1f} s"
    key = "–" if not r.get("learning_key") else "[" + ", ".join(r["learning_key"]) + "]"
    return (
        f"| {r['condition']} | {key} | {r['completed']}/{r['jobs']} | {r['peak_w']:,.0f} W "
        f"| {r['seconds_above_cap']:.1f} s | {r['mean_power_over_cap']:.3f} | {wait} | {r['makespan_s']:.0f} s |"
    )


def _down(run: Run) -> None:
    if not run.downed:
        left = down(run.base, purge=True)
        run.downed = True
        if left.survivors:
            print(f"{run.base}: processes survived down: {left.survivors}", file=sys.stderr)


def _terminate(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="the submissions' order, instants and runtimes")
    parser.add_argument(
        "--conditions", default=",".join(CONDITIONS), help=f"comma-separated, of {', '.join(CONDITIONS)}"
    )
    parser.add_argument(
        "--time-limit", type=int, default=1, help="every job's -t in minutes (default 1; 0: none, the partition's)"
    )
    parser.add_argument(
        "--key", help="the advisor's learning.key, comma-separated (e.g. user,name); default: the advisor's default"
    )
    parser.add_argument("--keep", action="store_true", help="leave the testbeds up after a complete run")
    args = parser.parse_args(argv)
    wanted = [c.strip() for c in args.conditions.split(",") if c.strip()]
    unknown = [c for c in wanted if c not in CONDITIONS]
    if unknown:
        parser.error(f"unknown condition(s) {', '.join(unknown)}; known: {', '.join(CONDITIONS)}")
    if os.geteuid() != 0:
        parser.error("the testbed needs root")
    missing = [u for u in KINDS if u not in TEST_USERS]
    if missing:  # TEST_USERS of wattsched.testbed.config: the users `up` creates
        parser.error(f"the testbed creates only {', '.join(TEST_USERS)}: {', '.join(missing)} missing")
    signal.signal(signal.SIGTERM, _terminate)
    jobs = plan(args.seed)
    # seed 0's files under the default time limit are the recorded ones (advisor_keys.py); others get a suffix
    key = [k.strip() for k in args.key.split(",") if k.strip()] if args.key else None
    tag = ("" if args.seed == 0 else f"_seed{args.seed}") + ("" if args.time_limit == 1 else f"_t{args.time_limit}")
    tag += f"_key-{'-'.join(key)}" if key else ""
    runs: list[Run] = []
    results: list[dict[str, Any]] = []
    began = time.monotonic()
    try:
        for name in wanted:
            try:
                results.append(condition(name, jobs, runs, args.time_limit, tag, key))
            finally:
                _stop_advisor(runs[-1])
                if not args.keep:
                    _down(runs[-1])
            print(_row(results[-1]), flush=True)
    except BaseException:
        for run in runs:  # interrupted or failed: nothing is kept
            _stop_advisor(run)
            _down(run)
        raise
    header = (
        "| condition | learning key | completed | peak (power log) | above the cap | mean power / cap | mean wait "
        "| makespan |\n" + "|---" * 8 + "|"
    )
    limit = f"-t {args.time_limit}" if args.time_limit > 0 else "no time limit"
    print(f"\nseed {args.seed}, {limit}, cap {CAP} W, budget {BUDGET} W, {len(jobs)} jobs\n\n{header}")
    for r in results:
        print(_row(r))
    if args.keep:
        for run in runs:
            print(f"kept: {run.base} (wattsched testbed down --dir {run.base} --purge)")
    summary = {
        "seed": args.seed,
        "time_limit_min": args.time_limit,
        "cap_w": CAP,
        "budget_w": BUDGET,
        "nodes": NODES,
        "idle_w": IDLE,
        "max_w": MAX,
        "lua_default_w_per_node": DEFAULT_WPN,
        "kinds": {u: [dict(zip(("name", "nodes", "watts"), k, strict=True)) for k in ks] for u, ks in KINDS.items()},
        "plan": [vars(j) for j in jobs],
        "conditions": results,
        "elapsed_s": round(time.monotonic() - began, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"advisor_mixed{tag}.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KeyboardInterrupt as exc:
        print(f"interrupted ({exc or 'Ctrl-C'}): every testbed this run started is down", file=sys.stderr)
        raise SystemExit(130) from None
