"""One name, one meaning: every option of the command line with the one thing it means in every command that has
it. docs/cli.md holds the table :func:`option_table` renders; tests/test_cli_help.py checks that every option of
the command tree is here (and nothing else) and that the page matches, so neither can drift.

A new option either reuses a name with the meaning below, or takes a new name and a line here.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OPTION_MEANINGS", "option_names", "option_table", "write_page"]

#: Option (or argument, in capitals) -> its meaning in every command that has it.
OPTION_MEANINGS: dict[str, str] = {
    # the root options
    "--version": "print the version and exit",
    "--debug": "show the traceback of an error instead of one line (also WATTSCHED_DEBUG=1)",
    "--quiet": "print errors only",
    "--json": "print the command's summary as one JSON object on stdout",
    "--install-completion": "install shell completion for the current shell",
    "--show-completion": "print the shell completion script",
    # inputs and outputs
    "--workload": "a workload file to read (SWF, canonical table, PM100, Batsim...)",
    "--job-table": "a job table file (job_id, start_time, end_time, nodes) to build a dataset from",
    "--telemetry": "node telemetry: a Parquet file or directory",
    "--output": "where the command writes: a file or a directory, as its help says",
    "--to": "the last instant a figure shows (seconds of the run's clock, or a date)",
    "--format": "the format of the tables written (parquet or csv)",
    "--columns": "map a job table's columns to the canonical ones: target=source,... or a TOML file (docs/formats.md)",
    "--timezone": "the IANA time zone of sacct's local times (default UTC)",
    "--from": "the first instant a figure shows (seconds of the run's clock, or a date)",
    "--kill-grace": "seconds a job may run past its walltime before it is killed (Slurm's OverTimeLimit)",
    "--max-size": "the largest file a download accepts (GiB)",
    "--deadline": "seconds a whole download may take; past it, it stops (a partial file is kept for a resume)",
    "--min-rate": "the slowest transfer a download accepts (bytes/s, averaged over --stall-window; 0: no minimum)",
    "--stall-window": "seconds over which a download's --min-rate is averaged",
    "--report": "a JSON file for the evaluation report",
    "--plots": "a directory for figures",
    "--html": "also write an HTML report (a power campaign's dashboard, a queue campaign's or a run's report.html)",
    "--common-jobs": "compare runs over the jobs they share (metrics recomputed)",
    "--config": "a TOML file whose keys are the command's options (the command line overrides it)",
    "--figure": "also draw a figure to this file (.png, .svg)",
    "RUN": "a simulate --output folder",
    "RUNS": "simulate --output folders, the first the reference",
    "--data-dir": "the shared data folder (or a data directory inside it)",
    "--details": "a file of measured configuration data",
    "--file": "a file of an archive record to download (repeatable)",
    "--record": "an archive record id",
    "--base-url": "the archive's address",
    "SPEC": "a campaign file (.toml, .yaml, .json)",
    "DIRECTORY": "a campaign directory",
    "DATASET": "a dataset to download",
    "PAPER": "a paper of the project (000 to 004)",
    "PLATFORM": "a platform preset or file",
    # the machine and the workload
    "--platform": "a platform preset name or platform file (docs/platforms.md)",
    "--machine-size": "units (processors or nodes) of the machine",
    "--nodes": "nodes of the machine",
    # wattsched advise (docs/advisor.md)
    "--actions": "a JSON-lines file every advisor action is appended to",
    "--backend": "how the advisor talks to Slurm (cli or rest)",
    "--interval": "seconds between two advisor cycles",
    "--metrics-port": "serve the advisor's Prometheus metrics on 127.0.0.1:PORT",
    "--mode": "how the advisor acts on Slurm (licenses, shadow or gate)",
    "--once": "run one advisor cycle and exit",
    "--on-overshoot": "what the advisor does when the measured power is above the cap (none, suspend, requeue)",
    "--print-job-submit-lua": "print the shipped job_submit.lua",
    "--replay": "a recorded sacct history to replay the advisor on, in simulation",
    "--report-dir": "where the advisor's shadow report or replay results go",
    "--state": "the advisor's SQLite state store",
    "--status-file": "a JSON file with the advisor's last cycle",
    "--url": "slurmrestd's URL",
    "--jobs": "a number of jobs",
    "--users": "a number of users",
    "--load": "the target offered load",
    "--seed": "a random seed (the first one, where several are run)",
    "--seeds": "a comma-separated list of seeds",
    "--seed-count": "how many consecutive seeds to run",
    "--set": "a paper's own option NAME=VALUE of a reproduction (a reading or a budget), repeatable",
    "--span-days": "days the submissions are spread over",
    "--days": "days of generated telemetry",
    "--period": "the telemetry sample period θ (s)",
    "--shared-share": "share of generated jobs that also take a busy node",
    "--missing-share": "share of generated telemetry samples left out",
    "--outages": "generated node outages",
    "--median-minutes": "median generated job duration (min)",
    "--strict": "turn any rejected input line into an error",
    # simulation
    "--policy": "a scheduling policy, by name (any case)",
    "--policies": "a comma-separated list of policies",
    "--runtime-estimate": "the column of runtime estimates the policy sees",
    "--metrics-window": "the START:END window (s) of the utilisation and queue-length metrics",
    "--window-start": "simulate only the workload window starting at this instant (s)",
    "--window-hours": "length of the --window-start window (h)",
    "--prestate": "what becomes of the jobs running or queued at a window's start",
    "--baseline": "also run uncapped EASY to compare turnarounds",
    # power
    "--power-check": "the power check of power-aware policies",
    "--power-source": "the job power estimates the check uses",
    "--cap": "the power cap: a fraction of the dynamic range, or watts (350000W)",
    "--cap-file": "a time-varying power cap file",
    "--cap-basis": "what a fractional cap is a fraction of",
    "--window": "the power cap window: the cap holds during [0, WINDOW) s",
    "--post-window-cap": "the cap after the power cap window",
    "--reservation": "what EASY's reservation under power reserves",
    "--knapsack": "what knapsack policies do at the first job that does not fit",
    "--subtract-idle": "job power estimates above idle (nodes × (value − idle))",
    "--sigma-scaling": "how a job's power deviation grows with its nodes",
    "--online-power": "a power predictor run inside the simulation",
    "--online-runtime": "a runtime predictor run inside the simulation",
    # prediction
    "--method": "the predictor (see wattsched predict list)",
    "--completion": "the completion times a predictor learns from",
    "--alpha": "the history predictor's weight exponent α",
    "--eps": "ε added to the history predictor's whole-history window (s)",
    "--history-window": "the history predictor's fixed history window (s)",
    "--cv-kind": "the folds of the ML predictors' cross-validation",
    "--cv-workers": "parallel workers of the ML predictors' cross-validation",
    "--max-train-rows": "the ML predictors train on this many most recent jobs",
    "--t0": "start of the ML predictors' week 0 (s, submit clock)",
    "--min-prefix": "the rules predictor's shortest similar name prefix",
    # datasets
    "--legacy-split": "test exclusivity per month and single/multi-node, as the PM100 scripts",
    "--max-missing": "share of missing telemetry samples a job may have",
    "--snap": "telemetry rows up to this many seconds off the sample grid are used",
    "--memory-gb": "memory per worker for a telemetry window (GiB)",
    # running many things
    "--executor": "where runs execute: local processes or dask",
    "--workers": "worker processes (default everywhere: the CPU count)",
    "--address": "a Dask scheduler address",
    "--max-runs": "runs a campaign grid may expand to, or it is refused (default: the spec's max_runs, else 1,000,000)",
    "--quick": "the reduced setting of a reproduction",
    "--kind": "which demo to run",
    # campaign reports
    "--aggregate": "how summaries aggregate groups (mean or median)",
    "--gantt-run": "the run drawn as a Gantt chart",
    # paper 002 (EAMC)
    "--t-weight": "the weight of time over energy (Eq. 4/5)",
    "--t-weights": "a comma-separated list of t_weight values",
    "--weight-placement": "where t_weight enters Eq. 5",
    "--score": "the partition score",
    "--threshold-mode": "PriorityInc-V's part_eff threshold",
    "--mix": "the app mix of a generated EAMC workload",
    "--mixes": "a comma-separated list of app mixes",
    # paper 004 (RMAP)
    "--traces": "a comma-separated list of RMAP traces",
    "--bounds": "a comma-separated list of global power bounds (W)",
    "--sample-share": "share of each app's points the model trains on",
    "--overestimate": "users overestimate t_req by up to this share",
    "--arrival-scale": "mean inter-arrival time over the mean t_req",
    "--cab-data": "the parameters of the synthetic Cab model",
    # the local Slurm testbed (docs/testbed.md)
    "--dir": "the local testbed's folder (configuration, state, logs)",
    "--idle-watts": "a testbed node's power without a job (W)",
    "--max-watts": "a testbed node's power at most (W)",
    "--license-total": "the testbed's power license count (W)",
    "--remote-license": "define the testbed's power budget as a remote license in slurmdbd",
    "--rest": "also start slurmrestd with JWT",
    "--purge": "also delete the testbed's folder",
}


def option_names(command: Any, path: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """Every visible option (its long name) and argument (its name in capitals) under ``command``, with the
    commands that have it (``wattsched`` for the root)."""
    found: dict[str, list[str]] = {}
    where = " ".join(("wattsched", *path))
    for param in command.params:
        if getattr(param, "hidden", False):
            continue
        if param.param_type_name == "argument":
            name = (param.name or "").upper()
        else:
            name = max((o for o in param.opts if o.startswith("--")), key=len, default=param.opts[0])
        found.setdefault(name, []).append(where)
    for sub_name, sub in sorted(getattr(command, "commands", {}).items()):
        if getattr(sub, "hidden", False):
            continue
        for name, commands in option_names(sub, (*path, sub_name)).items():
            found.setdefault(name, []).extend(commands)
    return found


def option_table(command: Any) -> str:
    """The Markdown table of docs/cli.md: option, meaning, the commands that have it."""
    names = option_names(command)
    lines = ["| option | meaning | commands |", "|---|---|---|"]
    for name in sorted(names, key=lambda n: (n.isupper(), n)):
        commands = ", ".join(f"`{c}`" for c in names[name])
        lines.append(f"| `{name}` | {OPTION_MEANINGS.get(name, '(no meaning registered)')} | {commands} |")
    return "\n".join(lines) + "\n"


def write_page(page: str = "docs/cli.md") -> None:
    """Rewrite the table of ``page`` between its ``<!-- options:begin -->``/``end`` markers from the command tree
    (``python -m wattsched.cli.vocabulary`` in the repository root, after adding an option and its meaning)."""
    from pathlib import Path

    import typer

    from wattsched.cli.root_app import app
    from wattsched.core.generated_docs import rewrite_generated_block

    rewrite_generated_block(Path(page), "options", option_table(typer.main.get_command(app)).rstrip("\n"))


if __name__ == "__main__":
    write_page()
