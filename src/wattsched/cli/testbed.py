"""``wattsched testbed up|down|status``: a throwaway local Slurm cluster with synthetic node power
(docs/testbed.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from wattsched.cli.common import console, emit_json, err, fail, warn

app = typer.Typer(
    help="A throwaway local Slurm cluster with synthetic node power, to try the advisor (docs/testbed.md).",
    no_args_is_help=True,
)

#: The default testbed folder (relative to where the command runs): wattsched.api.testbed.DEFAULT_DIR, written
#: out so that printing --help imports no toolkit module (tests/test_api_advise_testbed.py checks they agree).
DEFAULT_DIR = Path("wattsched-testbed")

DirOption = Annotated[Path, typer.Option("--dir", help="The testbed's folder: configuration, state, logs.")]


@app.command("up")
def up(
    dir: DirOption = DEFAULT_DIR,
    nodes: Annotated[int, typer.Option(min=1, max=64, help="Emulated nodes.")] = 8,
    idle_watts: Annotated[int, typer.Option(min=0, help="A node's power without a job (W).")] = 100,
    max_watts: Annotated[int, typer.Option(min=1, help="A node's power at most (W).")] = 500,
    license_total: Annotated[
        int | None,
        typer.Option(min=1, help="The power license's count in W (default: nodes × --max-watts, never binding)."),
    ] = None,
    remote_license: Annotated[
        bool, typer.Option(help="Define the power budget as a remote license (power@testbed) in slurmdbd.")
    ] = False,
    rest: Annotated[bool, typer.Option(help="Also start slurmrestd with JWT on a free port.")] = False,
) -> None:
    """Start the cluster (munge, MariaDB, slurmdbd, slurmctld, one slurmd per node, the power daemon); a running
    one is left as it is; a crashed one is cleaned up and started again. Creates the test users wsalice and wsbob
    when missing. Needs root and the Debian packages of `make testbed-deps`."""
    from wattsched.api.testbed import TestbedError, testbed_up  # deferred: psutil, hostlist

    try:
        result = testbed_up(
            dir, nodes=nodes, idle_watts=idle_watts, max_watts=max_watts, license_total=license_total,
            remote_license=remote_license, rest=rest,
        )  # fmt: skip
    except TestbedError as exc:
        fail(str(exc))
    except OSError as exc:  # the folder cannot be made or written (a file in the way, a read-only disk)
        fail(f"{dir}: {exc.strerror or exc} ({exc.filename or dir})")
    state = result.state
    if result.already_running:
        err.print(f"a testbed already runs in {state.base}: nothing started")
        if result.ignored:
            ignored = ", ".join(result.ignored)
            warn(f"{ignored} ignored: they differ from the running testbed's; `wattsched testbed down` first")
    elif result.cleaned_stale:
        err.print(f"cleaned the stale state of an earlier testbed in {state.base}")
    if result.users_created:
        err.print(f"created the test users {', '.join(result.users_created)}")
    emit_json({
        "dir": state.base, "slurm_conf": state.slurm_conf, "nodes": state.nodes, "license": state.license_name,
        "license_total": state.license_total, "already_running": result.already_running,
        "cold_start_s": state.cold_start_s, "rest_url": state.rest_url, "power_log": state.power_log,
    })  # fmt: skip
    if not result.already_running:
        console.print(
            f"testbed up in {state.cold_start_s:.1f} s: {len(state.nodes)} nodes, license {state.license_name}:"
            f"{state.license_total}" + (f", slurmrestd {state.rest_url}" if state.rest_url else "")
        )
    console.print(f"export SLURM_CONF={state.slurm_conf}")


@app.command("down")
def down(
    dir: DirOption = DEFAULT_DIR,
    purge: Annotated[bool, typer.Option(help="Also delete the folder (logs included).")] = False,
) -> None:
    """Cancel every job, stop the daemons in reverse order, then any other process of the testbed (a daemon
    restarted by hand is found by its configuration), and fail naming each process still alive."""
    from wattsched.api.testbed import NoTestbedError, testbed_down

    try:
        result = testbed_down(dir, purge=purge)
    except NoTestbedError as exc:
        fail(str(exc))
    emit_json({"dir": str(dir.resolve()), "cancelled_jobs": result.cancelled, "stopped": result.stopped,
               "found": result.found, "survivors": result.survivors, "purged": result.purged})  # fmt: skip
    if result.survivors:
        named = "; ".join(f"pid {s['pid']} ({s['command']})" for s in result.survivors)
        fail(f"{len(result.survivors)} process(es) of the testbed survived down: {named}")
    found = ", ".join(f"{f['daemon']} pid {f['pid']}" for f in result.found)
    console.print(
        f"testbed down: {result.cancelled} jobs cancelled, {len(result.stopped)} daemons stopped"
        + (f" ({len(result.found)} not started by up: {found})" if result.found else "")
        + ("; folder deleted" if result.purged else f"; logs kept in {dir}")
    )


@app.command("status")
def status(dir: DirOption = DEFAULT_DIR) -> None:
    """The daemons (alive or not), the nodes (state, CurrentWatts) and the power license (total, used)."""
    from wattsched.api.testbed import NoTestbedError, testbed_status

    try:
        st = testbed_status(dir)
    except NoTestbedError as exc:
        fail(str(exc))
    emit_json({"dir": st.base, "running": st.running, "slurm_conf": st.slurm_conf, "daemons": st.daemons,
               "nodes": st.nodes, "license": st.license, "rest_url": st.rest_url})  # fmt: skip
    table = Table(title=f"testbed {st.base}")
    for column in ("daemon", "pid", "alive"):
        table.add_column(column)
    for d in st.daemons:
        table.add_row(d["name"], str(d["pid"]), "yes" if d["alive"] else "NO")
    console.print(table)
    if st.nodes:
        nodes = Table(title="nodes")
        for column in ("node", "state", "CurrentWatts"):
            nodes.add_column(column)
        for n in st.nodes:
            w = n["current_watts"]
            nodes.add_row(n["name"], str(n["state"]), "n/s" if w is None else f"{w:.0f}")
        console.print(nodes)
    if st.license:
        lic = st.license
        console.print(f"license {lic['name']}: {lic['used']} of {lic['total']} W used")
    if not st.running:
        dead = [d["name"] for d in st.daemons if not d["alive"]]
        err.print(f"the testbed is down; dead: {', '.join(dead)}" if dead else "the testbed is down")
        raise typer.Exit(code=1)
