"""Stopping with real signals: Ctrl-C (SIGINT to the process group, as a terminal sends it) and SIGTERM stop every
long command with one line and exit code 130, keep the finished runs and leave no process behind; workers die
with a CLI killed by ``kill -9``; one process at a time writes a campaign folder or a dataset output; what
killed writers left is removed by the next lock holder only; dataset outputs are written atomically.

The commands run as subprocesses (``python -m wattsched.cli``), each in its own session, and the tests poll for
the state they wait for (results written, workers started) with generous timeouts: the machine may be loaded.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl
import psutil
import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app
from wattsched.core.executors import map_tasks
from wattsched.core.output_folders import FolderBusyError, FolderLock, is_temporary
from wattsched.core.stopping import COMPILED_STOP_MESSAGE, interruptions, sigterm_as_interrupt
from wattsched.core.store import done_ids
from wattsched.dataset.build import lock_output, rejects_path, write_outputs

REPO = Path(__file__).resolve().parents[1]

#: 12 dispatch runs on real Eurora instances of 1,000 jobs: SJF's finish in a second, CPH's (CP-SAT) take several
#: seconds each, so the campaign is still running when the first results are there.
DISPATCH = """
kind = "dispatch"
name = "signals-dispatch"
instances = {instances}
dispatchers = ["sjf", "cph"]
estimates = ["walltime", "real"]
"""
RUNS = 12


def _dispatch_spec(tmp_path: Path) -> Path:
    files = sorted(require_data("eurora/historical_traces/1000").glob("*.log_crypt"))[:3]
    spec = tmp_path / "dispatch.toml"
    spec.write_text(DISPATCH.format(instances=json.dumps([str(f) for f in files])))
    return spec


#: Its preparation generates 20,000 Marconi100-like jobs: a few seconds in which to interrupt it.
POWER = """
kind = "power"
name = "signals-power"
platform = "marconi100"
[[workloads]]
name = "m100"
generate = { model = "m100", jobs = 20000, seed = 2, target_load = 1.0 }
windows = { count = 3, hours = 12, seed = 1 }
[grid]
policies = ["easy-pc"]
checks = ["mean", "max"]
sources = ["real"]
caps = [0.5]
"""


def _start(*args: str) -> subprocess.Popen:
    """``wattsched ARGS`` in a session of its own (its pid is the group's id), output captured."""
    return subprocess.Popen(
        [sys.executable, "-m", "wattsched.cli", *args],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200", "TERM": "dumb"},
    )


def _wait_for(condition: Callable[[], bool], proc: subprocess.Popen, what: str, timeout: float = 300) -> None:
    """Poll ``condition`` until it holds; fail if ``proc`` ended first or the time runs out."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the command ended (code {proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no {what} after {timeout} s")
        time.sleep(0.05)


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _survivors(processes: list[psutil.Process], timeout: float = 20.0) -> list[int]:
    """Which of ``processes`` still run after ``timeout`` seconds (zombies count as ended)."""
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    return [p.pid for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def _finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        pytest.fail(f"the command did not stop within {timeout} s of the signal:\n{err}")


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if is_temporary(p)]


# ------------------------------------------------------------------------------------------------ campaigns


@pytest.mark.slow
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupted_campaign_says_how_far_it_got_ends_its_workers_and_resumes(tmp_path: Path, how: str) -> None:
    spec = _dispatch_spec(tmp_path)
    out = tmp_path / "c"
    proc = _start("campaign", "run", str(spec), "--output", str(out), "--workers", "2")
    _wait_for(lambda: len(done_ids(out)) >= 1 and len(_descendants(proc.pid)) >= 2, proc, "a finished run")
    workers = _descendants(proc.pid)
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does: the whole group gets it, workers too
    else:
        proc.send_signal(signal.SIGTERM)  # what a batch system does: the CLI alone gets it
    _, stderr = _finish(proc)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr  # neither the CLI's nor a worker's
    done = len(done_ids(out))
    assert 1 <= done < RUNS
    assert _lines(stderr)[-1] == (
        f"interrupted: {done} of {RUNS} runs done in {out}; run the same command again to resume"
    ), stderr
    assert _survivors(workers) == [], "a worker outlived the interrupted campaign"
    assert _temporaries(out) == []
    again = _start("campaign", "run", str(spec), "--output", str(out), "--workers", "1")
    stdout, stderr = _finish(again, timeout=600)
    assert again.returncode == 0, stderr
    assert f"{RUNS} runs in {out}: {done} were done, {RUNS - done} ran now" in stdout


@pytest.mark.slow
def test_workers_do_not_survive_kill_9_of_the_cli(tmp_path: Path) -> None:
    spec = _dispatch_spec(tmp_path)
    out = tmp_path / "c"
    proc = _start("campaign", "run", str(spec), "--output", str(out), "--workers", "2")
    _wait_for(lambda: len(done_ids(out)) >= 1 and len(_descendants(proc.pid)) >= 2, proc, "a finished run")
    workers = _descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)  # the CLI alone: nothing of it runs to end the workers
    proc.communicate()
    assert _survivors(workers, timeout=15) == [], "workers kept computing after kill -9 of the CLI"
    written = len(done_ids(out))
    time.sleep(2)
    assert len(done_ids(out)) == written  # nobody writes any more


@pytest.mark.slow
def test_one_runner_per_campaign_folder_and_status_touches_nothing(tmp_path: Path) -> None:
    spec = _dispatch_spec(tmp_path)
    out = tmp_path / "c"
    first = _start("campaign", "run", str(spec), "--output", str(out), "--workers", "1")
    _wait_for(lambda: (out / "manifest.json").exists(), first, "the manifest")
    # a file another writer is writing (the runner removes such files only when it starts, holding the lock)
    in_progress = out / "results" / ".abc.jobs.4242.tmp.parquet"
    in_progress.write_bytes(b"partial")
    second = _start("campaign", "run", str(spec), "--output", str(out), "--workers", "1")
    _, stderr = _finish(second, timeout=120)
    assert second.returncode == 2
    assert _lines(stderr) == [
        f"error: the campaign folder {out} is in use by process {first.pid} (lock {out / '.wattsched.lock'}); "
        "wait for it to finish or stop it"
    ], stderr
    status = CliRunner().invoke(app, ["campaign", "status", str(out)])
    assert status.exit_code == 0, status.output
    assert in_progress.exists()
    assert first.poll() is None, "the first run was disturbed"
    first.send_signal(signal.SIGTERM)
    _finish(first)
    assert first.returncode == 130
    assert not in_progress.exists()  # the holder, its workers ended, removes what is left unfinished
    in_progress.write_bytes(b"partial")  # as a kill -9 leaves it: removed by the next holder when it starts
    from wattsched.campaign.kinds import load_experiment
    from wattsched.campaign.runner import run_experiment

    run_experiment(load_experiment(spec), out, workers=1, limit=0)  # takes the lock, cleans, runs nothing
    assert not in_progress.exists()


@pytest.mark.slow
def test_an_interrupted_preparation_leaves_no_temporary_file(tmp_path: Path) -> None:
    spec = tmp_path / "power.toml"
    spec.write_text(POWER)
    out = tmp_path / "p"
    proc = _start("campaign", "run", str(spec), "--output", str(out), "--workers", "1")
    _wait_for(lambda: (out / ".wattsched.lock").exists(), proc, "the lock", timeout=120)
    proc.send_signal(signal.SIGTERM)
    _, stderr = _finish(proc)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert _lines(stderr)[-1].startswith("interrupted"), stderr
    if not (out / "manifest.json").exists():  # stopped while preparing, as intended
        assert _lines(stderr)[-1].startswith(f"interrupted while preparing {out}"), stderr
    assert _temporaries(out) == []


def test_the_lock_names_its_holder_and_is_released() -> None:
    import tempfile

    busy = rf"the test folder is in use by process {os.getpid()} "
    with tempfile.TemporaryDirectory() as folder:
        with FolderLock(Path(folder), "the test folder"), pytest.raises(FolderBusyError, match=busy):
            FolderLock(Path(folder), "the test folder").acquire()
        FolderLock(Path(folder), "the test folder").acquire().release()  # free again


# ------------------------------------------------------------------------------------------------ dataset build


@pytest.fixture(scope="module")
def telemetry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("telemetry")
    made = CliRunner().invoke(
        app,
        [
            *("generate", "telemetry", "--output", str(folder), "--jobs", "200", "--nodes", "24", "--days", "1.5"),
            *("--outages", "2", "--seed", "4"),
        ],
    )
    assert made.exit_code == 0, made.output
    return folder


@pytest.fixture(scope="module")
def long_telemetry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 days of 24 nodes: 2,142 windows at --memory-gb 0.00002, about 10 s of build on two idle cores (the
    small fixture's 278 windows took 3 s idle, too short to be sure a stop lands during the build)."""
    folder = tmp_path_factory.mktemp("long-telemetry")
    made = CliRunner().invoke(
        app,
        [
            *("generate", "telemetry", "--output", str(folder), "--jobs", "1500", "--nodes", "24", "--days", "12"),
            *("--outages", "2", "--seed", "4"),
        ],
    )
    assert made.exit_code == 0, made.output
    return folder


def _build_args(folder: Path, output: Path, memory_gb: str = "0.01") -> list[str]:
    jobs, telemetry = str(folder / "jobs.parquet"), str(folder / "telemetry")
    return [
        "dataset",
        "build",
        "--job-table",
        jobs,
        "--telemetry",
        telemetry,
        "--output",
        str(output),
        "--memory-gb",
        memory_gb,
    ]


@pytest.mark.slow
def test_sigterm_stops_a_dataset_build_and_keeps_the_previous_build(tmp_path: Path, long_telemetry: Path) -> None:
    """Each stop ends the build within 15 s of the signal (issue 31: 2 of ~105 stopped builds printed their line
    and never exited, the pool's manager thread waiting for a result its ended worker was sending): thousands of
    tiny windows stopped as soon as they run, and 22 windows of half a day stopped while results come back."""
    output = tmp_path / "ds.parquet"
    built = CliRunner().invoke(app, _build_args(long_telemetry, output))
    assert built.exit_code == 0, built.output
    before = (output.read_bytes(), rejects_path(output).read_bytes())
    for memory_gb, delay in (("0.00002", 0.5), ("0.002", 1.5)):  # builds of 93 s and 29 s at a load of 7
        proc = _start(*_build_args(long_telemetry, output, memory_gb=memory_gb), "--workers", "2")
        _wait_for(lambda proc=proc: len(_descendants(proc.pid)) >= 2, proc, "the build's workers", timeout=120)
        time.sleep(delay)
        workers = _descendants(proc.pid)
        assert proc.poll() is None, "the build ended before it could be stopped"
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, stderr = _finish(proc)
        assert time.monotonic() - stopped < 15, f"--memory-gb {memory_gb}: over 15 s from the signal to the exit"
        assert proc.returncode == 130, stderr
        assert _lines(stderr)[-1] == (
            f"interrupted: the dataset build stopped; {output} was not written (a previous build there is "
            "unchanged); run the same command again to rebuild"
        ), stderr
        assert (output.read_bytes(), rejects_path(output).read_bytes()) == before
        assert _temporaries(tmp_path) == []
        assert _survivors(workers) == []


def _fails_first_sleeps_otherwise(item: int) -> int:
    """A pool task: the first one fails at once, the others would keep a worker busy for a minute."""
    if item == 0:
        raise ValueError("the first task fails")
    time.sleep(60)
    return item


def test_an_ended_pool_leaves_no_thread_or_worker_behind() -> None:
    """A fan-out stopped by its consumer's error ends the workers and leaves no thread: a thread left running (the
    manager of concurrent.futures' pool, before issue 31) made CPython's exit print ``OSError: Bad file
    descriptor`` after an interrupted command's last line (seen in 2 of 20 stopped dataset builds under load), or
    never exit. The task's error keeps its type and message, its worker's traceback as its cause."""
    before = set(threading.enumerate())
    started = time.monotonic()
    with pytest.raises(ValueError, match="the first task fails") as failed:
        list(map_tasks(_fails_first_sleeps_otherwise, list(range(6)), workers=2, ordered=False, in_flight=3))
    assert "_fails_first_sleeps_otherwise" in str(failed.value.__cause__)  # where it failed, in the worker
    assert time.monotonic() - started < 30  # the sleeping tasks were not waited for
    assert [t.name for t in threading.enumerate() if t not in before] == []
    assert multiprocessing.active_children() == []


#: A fan-out whose every task returns 400 MB (``bytes(n)``: a builtin, so the workers import nothing), run as a
#: command runs: SIGTERM as Ctrl-C, then the console script's exit. It prints a line per result it received.
LARGE_RESULTS = """
import sys
from wattsched.cli.console_script import leave
from wattsched.core.executors import map_tasks
from wattsched.core.stopping import sigterm_as_interrupt
code = 0
with sigterm_as_interrupt():
    try:
        for result in map_tasks(bytes, [400_000_000] * 12, workers=2, ordered={ordered}):
            print(len(result), flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr, flush=True)
        code = 130
leave(code)
"""

#: The same fan-out, one of whose workers is killed (as the kernel's OOM killer would) after the first result.
KILLED_WORKER = """
import multiprocessing, os, signal, time
from wattsched.core.executors import map_tasks
try:
    for k, result in enumerate(map_tasks(bytes, [400_000_000] * 12, workers=2, ordered={ordered})):
        if k == 0:
            os.kill(multiprocessing.active_children()[0].pid, signal.SIGKILL)
            killed = time.monotonic()
except Exception as exc:
    print(type(exc).__name__, round(time.monotonic() - killed, 1), flush=True)
"""


def _python(code: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )


@pytest.mark.slow
def test_sigterm_while_large_results_are_in_flight_ends_the_process_within_15_s() -> None:
    """Issue 31: with concurrent.futures' pool, a worker ended while it sent a 400 MB result left the pool's manager
    thread waiting for the rest of the message, and CPython's exit joined that thread: "interrupted" was printed
    and the process never exited (4 of 4 signals; with that fixed, 2 of 100 still hung on a lock the stop had
    interrupted). Five signals, each once the first result arrived (the next ones are in flight), ordered and
    unordered: each process exits with 130 within 15 s and leaves no worker (bench/stop_under_large_results.py
    does it 100 times)."""
    for k in range(5):
        proc = _python(LARGE_RESULTS.format(ordered=k % 2 == 0))
        assert proc.stdout is not None and proc.stdout.readline() == "400000000\n"
        workers = _descendants(proc.pid)
        stopped = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, stderr = _finish(proc, timeout=60)
        assert time.monotonic() - stopped < 15, f"signal {k + 1}: the process took over 15 s to exit"
        assert proc.returncode == 130 and _lines(stderr) == ["interrupted"], stderr
        assert _survivors(workers) == []


@pytest.mark.slow
def test_a_worker_killed_while_sending_a_large_result_breaks_the_pool_instead_of_hanging() -> None:
    """A worker killed from outside while its 400 MB result is in the pipe: concurrent.futures' manager thread
    waited for the rest forever and could not see the death, so the fan-out hung (3 of 3). The pool's own pipe to
    that worker ends: BrokenProcessPool at once, and the process exits."""
    for ordered in (True, False):
        proc = _python(KILLED_WORKER.format(ordered=ordered))
        out, err = _finish(proc, timeout=60)
        assert proc.returncode == 0, err
        name, seconds = out.split()
        assert name == "BrokenProcessPool" and float(seconds) < 15, out


def test_one_build_per_output_at_a_time(tmp_path: Path, telemetry: Path) -> None:
    output = tmp_path / "ds.parquet"
    lock = lock_output(output)
    try:
        refused = CliRunner().invoke(app, _build_args(telemetry, output))
    finally:
        lock.release()
    assert refused.exit_code == 2
    assert f"the dataset output {output} is in use by process {os.getpid()}" in " ".join(refused.output.split())
    assert not output.exists()
    other = CliRunner().invoke(app, _build_args(telemetry, tmp_path / "other.parquet"))  # another output: free
    assert other.exit_code == 0, other.output


def test_dataset_outputs_are_atomic_and_stale_temporaries_are_cleaned(tmp_path: Path, monkeypatch) -> None:
    output = tmp_path / "ds.parquet"
    good = pl.DataFrame({"job_id": [1, 2], "x": [1.0, 2.0]})
    rejects = pl.DataFrame({"job_id": [3], "stage": ["input"], "reason": ["no node list"]})
    assert write_outputs(good, rejects, output) == tmp_path / "ds.rejects.parquet"
    before = (output.read_bytes(), rejects_path(output).read_bytes())
    real = pl.DataFrame.write_parquet

    def dies_half_way(self: pl.DataFrame, file, *args, **kwargs):  # a kill while the second file is written
        if "rejects" in str(file):
            Path(file).write_bytes(b"PAR1")
            raise KeyboardInterrupt
        return real(self, file, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "write_parquet", dies_half_way)
    with pytest.raises(KeyboardInterrupt):
        write_outputs(good.head(1), rejects, output)
    monkeypatch.undo()
    assert (output.read_bytes(), rejects_path(output).read_bytes()) == before  # the previous build, whole
    assert _temporaries(tmp_path) == []
    # what a kill -9 leaves: temporaries of this output (removed by the next holder), and another output's (kept)
    stale = [tmp_path / ".ds.999.tmp.parquet", tmp_path / ".ds.rejects.999.tmp.parquet"]
    foreign = tmp_path / ".other.999.tmp.parquet"
    for path in [*stale, foreign]:
        path.write_bytes(b"")
    lock_output(output).release()
    assert [p.exists() for p in stale] == [False, False] and foreign.exists()


# ------------------------------------------------------------------------------------------------ the helper


def test_sigterm_is_ctrl_c_inside_the_block_only() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler runs at once; this is never reached in full
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_error_raised_by_the_stop_counts_as_the_stop() -> None:
    # the signal interrupting an extension module's initialisation surfaces as ImportError, not KeyboardInterrupt
    # (seen in CI: a campaign stopped during OR-Tools' lazy import exited 1 with "initialization failed")
    assert interruptions() == (KeyboardInterrupt,)
    with pytest.raises(ImportError), sigterm_as_interrupt():
        try:
            raise ImportError("initialization failed")
        except interruptions():
            pytest.fail("an error before any stop signal is an error")
    caught: list[BaseException] = []
    with sigterm_as_interrupt():
        try:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)
            except KeyboardInterrupt:
                raise ImportError("initialization failed") from None
        except interruptions() as exc:
            caught.append(exc)
    assert [type(e) for e in caught] == [ImportError]
    assert interruptions() == (KeyboardInterrupt,)  # the block is over: the next stop starts afresh


def test_a_second_signal_while_stopping_ends_the_process_at_once() -> None:
    """A stop that hangs (here: a cleanup that sleeps) is forced by a second Ctrl-C or SIGTERM: exit 130 now."""
    script = (
        "import os, signal, time\n"
        "from wattsched.core.stopping import sigterm_as_interrupt\n"
        "with sigterm_as_interrupt():\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "        time.sleep(60)\n"
        "    except KeyboardInterrupt:\n"
        "        print('stopping', flush=True)\n"
        "        time.sleep(60)  # a cleanup that does not end\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert proc.stdout is not None and proc.stdout.readline() == "stopping\n"
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = _finish(proc, timeout=30)
    assert proc.returncode == 130 and time.monotonic() - started < 30
    assert _lines(stderr) == ["interrupted again: workers killed, stopped at once"]


@pytest.mark.slow
def test_any_long_command_stops_with_one_line(tmp_path: Path) -> None:
    """A command with no stop message of its own (here a simulation of the 447,794-job RICC trace, about 20 s long)
    gets the generic line, exit 130 and no traceback; it wrote nothing."""
    trace = require_data("swf/RICC-2010-2.swf.gz")
    args = ("simulate", "--workload", str(trace), "--policy", "conservative", "--output", str(tmp_path / "run"))
    proc = _start(*args)
    cpu = psutil.Process(proc.pid)
    _wait_for(lambda: sum(cpu.cpu_times()[:2]) > 6.0, proc, "6 s of CPU (imports done, the trace being read)")
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = _finish(proc, timeout=180)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    # the generic line when the stop lands in Python code, the compiled section's line inside the kernel
    assert _lines(stderr) in (
        [f"interrupted: `wattsched {' '.join(args)}` stopped before it finished (Ctrl-C or SIGTERM)"],
        [COMPILED_STOP_MESSAGE.decode().strip()],
    ), stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_long_compiled_pass_stops_at_once(tmp_path: Path) -> None:
    """Conservative backfilling on RICC spends about 20 CPU s inside compiled calls (minutes before issue 18),
    where no Python signal handler runs; the C-level handler of core.stopping.compiled_section ends it at once
    with one line and exit 130. The signal comes at 6 s of CPU: past the read (about 1 s), well before the end."""
    trace = require_data("swf/RICC-2010-2.swf.gz")
    args = ("simulate", "--workload", str(trace), "--policy", "conservative", "--output", str(tmp_path / "run"))
    proc = _start(*args)
    cpu = psutil.Process(proc.pid)
    _wait_for(lambda: sum(cpu.cpu_times()[:2]) > 6.0, proc, "6 s of CPU (deep in the simulation)")
    stopped = time.monotonic()
    os.killpg(proc.pid, signal.SIGTERM)
    _, stderr = _finish(proc, timeout=60)
    assert proc.returncode == 130, stderr
    assert time.monotonic() - stopped < 15, "the compiled pass did not stop at once"
    assert "Traceback" not in stderr
    assert len(_lines(stderr)) == 1 and _lines(stderr)[0].startswith("interrupted: "), stderr
    assert not (tmp_path / "run").exists()
