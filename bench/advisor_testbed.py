"""The advisor on the local testbed: the same jobs without a cap and under ``wattsched advise --cap``, measured.

Four emulated nodes (idle 100 W, at most 500 W), two users whose jobs draw 350 W and 150 W above idle (the
testbed's hidden truth in the job comment), a cap of 1,200 W on whole-cluster power. First four jobs build the
history, then eight more run. Printed per run: the measured peak (the sum of the nodes' CurrentWatts, sampled
every second) against the cap, the peak from sacct's energy afterwards, the waits (start − submit from sacct),
the makespan, and the advisor's learned power per user against the truth.

Needs root and Debian's Slurm packages (``make testbed-deps``); about 2 minutes:

    .venv/bin/python bench/advisor_testbed.py
"""

from __future__ import annotations

import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

from wattsched.advise.slurm import job_submit_lua
from wattsched.advise.store import AdvisorStore
from wattsched.testbed.cluster import down, up
from wattsched.testbed.config import TestbedOptions

NODES, IDLE, MAX, CAP = 4, 100, 500, 1200
TRUTH = {"wsalice": 350, "wsbob": 150}


def _run(env: dict[str, str], *argv: str, user: str | None = None) -> str:
    cmd = ["runuser", "-u", user, "--", *argv] if user else list(argv)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout


def _submit(env: dict[str, str], work: Path, user: str, seconds: int) -> int:
    out = subprocess.run(
        ["runuser", "-u", user, "--", "sbatch", "--parsable", "-o", "/dev/null", "-N", "1",
         "--comment", f"testpower={TRUTH[user]}", "--wrap", f"srun sleep {seconds}"],
        env=env, cwd=work, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return int(out.strip().split(";")[0])


def _wait_all(env: dict[str, str], jobs: list[int], timeout: float = 300) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = _run(env, "sacct", "-X", "-n", "-P", "-j", ",".join(map(str, jobs)), "-o", "State")
        states = out.split()
        if len(states) == len(jobs) and all(s == "COMPLETED" for s in states):
            return
        time.sleep(1)
    raise SystemExit(f"jobs not completed within {timeout} s")


def _sample(env: dict[str, str], samples: list[float], stop: threading.Event) -> None:
    while not stop.is_set():
        out = subprocess.run(["scontrol", "show", "node", "-o"], env=env, capture_output=True, text=True).stdout
        watts = [float(w) for w in re.findall(r"CurrentWatts=(\d+)", out)]
        if len(watts) == NODES:
            samples.append(sum(watts))
        stop.wait(1.0)


def _sacct(env: dict[str, str], jobs: list[int]) -> list[dict[str, float]]:
    out = _run(
        env, "sacct", "-X", "-n", "-P", "-j", ",".join(map(str, jobs)), "-o", "Submit,Start,End,ConsumedEnergyRaw"
    )
    rows = []
    for line in out.splitlines():
        submit, start, end, energy = line.split("|")
        s, e = datetime.fromisoformat(start).timestamp(), datetime.fromisoformat(end).timestamp()
        rows.append({"submit": datetime.fromisoformat(submit).timestamp(), "start": s, "end": e,
                     "watts": float(energy or 0) / max(e - s, 1.0)})  # fmt: skip
    return rows


def _sacct_peak(rows: list[dict[str, float]]) -> float:
    peak = 0.0
    for row in rows:
        busy = [r for r in rows if r["start"] <= row["start"] < r["end"]]
        peak = max(peak, sum(r["watts"] for r in busy) + IDLE * (NODES - len(busy)))
    return peak


def scenario(capped: bool) -> dict[str, object]:
    base = Path(tempfile.mkdtemp(prefix="wattsched-bench-", dir="/tmp"))
    base.chmod(0o755)
    # capped: slurm.conf's license total is the cap's budget (docs/advisor.md), the Lua default the worst case
    total = CAP - NODES * IDLE if capped else NODES * MAX
    result = up(TestbedOptions(base=base, nodes=NODES, idle_watts=IDLE, max_watts=MAX, license_total=total))
    env = result.state.env()
    advisor = None
    try:
        if capped:
            text = job_submit_lua().read_text()
            text = re.sub(r"^local DEFAULT_WATTS_PER_NODE = \d+$", f"local DEFAULT_WATTS_PER_NODE = {MAX - IDLE}",
                          text, count=1, flags=re.M)  # fmt: skip
            (base / "job_submit.lua").write_text(text)
            (base / "slurm.conf").write_text((base / "slurm.conf").read_text() + "JobSubmitPlugins=lua\n")
            _run(env, "scontrol", "reconfigure")
            (base / "advisor.toml").write_text(f"[power]\nmax_watts_per_node = {MAX}\n")
            advisor = subprocess.Popen(
                [sys.executable, "-m", "wattsched", "--quiet", "advise", "--config", str(base / "advisor.toml"),
                 "--cap", f"{CAP}W", "--interval", "1", "--state", str(base / "advisor.sqlite"),
                 "--status-file", str(base / "status.json")],
                env=env,
            )  # fmt: skip
            while not (base / "status.json").exists():
                time.sleep(0.2)
        samples: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=_sample, args=(env, samples, stop), daemon=True)
        sampler.start()
        work = base / "work"
        began = time.time()
        first = [_submit(env, work, u, 6) for u in TRUTH for _ in range(2)]
        _wait_all(env, first)
        time.sleep(3)
        second = [_submit(env, work, u, 8) for _ in range(4) for u in TRUTH]
        _wait_all(env, second)
        makespan = time.time() - began
        time.sleep(3)
        stop.set()
        sampler.join()
        rows = _sacct(env, first + second)
        waits = [r["start"] - r["submit"] for r in rows]
        out: dict[str, object] = {
            "run": f"advise --cap {CAP}W" if capped else "no cap",
            "jobs": len(rows),
            "measured_peak_w": max(samples),
            "sacct_peak_w": round(_sacct_peak(rows)),
            "mean_wait_s": round(statistics.mean(waits), 1),
            "max_wait_s": round(max(waits), 1),
            "makespan_s": round(makespan, 1),
        }
        if capped:
            with AdvisorStore(base / "advisor.sqlite") as store:
                history = store.history_frame()
            learned = {}
            for user in TRUTH:
                rows_u = history.filter(history["user"] == user)
                learned[user] = round(float(rows_u["watts_net"].mean()), 1)
            out["learned_net_w"] = learned
        return out
    finally:
        if advisor is not None:
            advisor.send_signal(signal.SIGTERM)
            advisor.wait(timeout=30)
        down(base, purge=True)


def main() -> None:
    results = [scenario(capped=False), scenario(capped=True)]
    print(json.dumps({"cap_w": CAP, "truth_net_w": TRUTH, "runs": results}, indent=2))


if __name__ == "__main__":
    main()
