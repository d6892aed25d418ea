"""The ``wattsched reproduce`` command's contract for every paper: each reproduction module exposes ``run``; bad
arguments give a one-line error (exit 2, no traceback); an interrupted run (SIGTERM) exits 130 with the
"interrupted" line and leaves no process behind."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wattsched.reproduce.claims import PAPERS
from wattsched.reproduce.runner import ReproduceError, paper_module

SRC = Path(__file__).resolve().parents[1] / "src"
CLI = Path(sys.executable).with_name("wattsched")
IMPLEMENTED = [p for p in PAPERS if importlib.util.find_spec(f"wattsched.reproduce.paper{p}") is not None]


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "COLUMNS": "80",
        "TERM": "dumb",
    }


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLI), *args], env=_env(), capture_output=True, text=True, timeout=timeout)


def test_the_papers_are_the_five_of_the_issue() -> None:
    assert PAPERS == ("000", "001", "002", "003", "004")
    assert "003" in IMPLEMENTED  # this branch's own; the others are checked as they land


@pytest.mark.parametrize("paper", IMPLEMENTED)
def test_each_reproduction_module_exposes_run(paper: str) -> None:
    module = paper_module(paper)
    assert callable(getattr(module, "run", None)), f"wattsched.reproduce.paper{paper} has no run(ctx)"


def test_a_paper_without_a_module_is_a_reproduce_error(monkeypatch) -> None:
    import importlib

    real = importlib.import_module

    def absent(name: str, *args, **kwargs):
        if name == "wattsched.reproduce.paper004":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", absent)
    with pytest.raises(ReproduceError, match="paper 004 has no reproduction"):
        paper_module("004")
    with pytest.raises(ReproduceError, match="paper must be one of"):
        paper_module("9")


def _one_line_error(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_an_unknown_paper_is_a_one_line_error() -> None:
    _one_line_error(_cli("reproduce", "9"), "paper must be one of 000, 001, 002, 003, 004", "'9'")


def test_an_output_that_is_a_file_is_a_one_line_error(tmp_path) -> None:
    target = tmp_path / "a-file-not-a-folder-with-a-long-name-so-the-message-is-longer-than-a-terminal-line.txt"
    target.write_text("keep me\n")
    _one_line_error(_cli("reproduce", "003", "--quick", "--output", str(target)), "is not a folder")
    assert target.read_text() == "keep me\n"


def _session_processes(sid: int) -> list[int]:
    """Processes of session ``sid`` still alive (zombies excluded)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if fields[0] != "Z" and int(fields[3]) == sid:
            pids.append(int(entry.name))
    return pids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to find leftover processes")
def test_sigterm_interrupts_the_full_run_and_leaves_no_process(tmp_path) -> None:
    import threading

    out = tmp_path / "full"
    proc = subprocess.Popen(
        [str(CLI), "reproduce", "003", "--workers", "2", "--output", str(out)],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:  # a few seconds into the synthetic builds (the run takes minutes), whatever the machine's load
        deadline = time.monotonic() + 120
        while not any("C003-04: seed" in line for line in lines) and time.monotonic() < deadline:
            assert proc.poll() is None, "".join(lines)
            time.sleep(0.1)
        time.sleep(3)
        assert proc.poll() is None, "the full run ended before it could be interrupted"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(10)
    stderr = "".join(lines)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert any(line.startswith("interrupted: paper 003's reproduction stopped") for line in lines), stderr
    deadline = time.monotonic() + 10.0
    while _session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _session_processes(proc.pid) == []
    assert not (out / "claims.json").exists()  # nothing reported
    assert not list(out.glob("wattsched-p003-*"))  # the synthetic telemetry of the interrupted seed is removed


def test_stop_workers_ends_a_busy_process_pool_at_once() -> None:
    """What the SIGTERM handler does before stopping: a pool with queued tasks shuts down without running them."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from wattsched.reproduce.runner import stop_workers

    pool = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))
    futures = [pool.submit(time.sleep, 60) for _ in range(6)]
    deadline = time.monotonic() + 60
    while not futures[0].running() and time.monotonic() < deadline:
        time.sleep(0.1)
    started = time.monotonic()
    assert stop_workers() >= 1
    pool.shutdown(wait=True)
    assert time.monotonic() - started < 15
    assert multiprocessing.active_children() == []
