"""Compressed inputs are read through a size limit (issue 31, item 5): a decompression bomb is refused in one line
naming the file, before its memory is spent; a MemoryError or a Rust panic never reaches the user as a traceback.
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import REPO_ROOT
from wattsched.cli import app
from wattsched.core.bounded_input import LIMIT_VARIABLE, decompressed_limit, read_input_bytes, usable_memory

runner = CliRunner()

MiB = 1 << 20


def gzip_of_zeros(path: Path, mib: int) -> Path:
    """``mib`` MiB of zeros as gzip: one 16-MiB member repeated (a multi-member stream is valid gzip), so that
    a 1-GiB bomb is written in a fraction of a second."""
    member = gzip.compress(b"\0" * (16 * MiB), compresslevel=9, mtime=0)
    with path.open("wb") as f:
        for _ in range(mib // 16):
            f.write(member)
    return path


def gzip_of(path: Path, text: str, copies: int) -> Path:
    """``text`` repeated ``copies`` times, gzipped in a stream."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    with path.open("wb") as f:
        for _ in range(copies):
            f.write(packer.compress(text.encode()))
        f.write(packer.flush())
    return path


def test_the_limit_is_a_share_of_the_usable_memory_and_set_by_the_variable(monkeypatch) -> None:
    monkeypatch.delenv(LIMIT_VARIABLE, raising=False)
    assert decompressed_limit() == usable_memory() // 16
    assert usable_memory() <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    monkeypatch.setenv(LIMIT_VARIABLE, "0.5")
    assert decompressed_limit() == 500_000_000
    for bad in ("0", "-1", "lots", "inf", "nan"):
        monkeypatch.setenv(LIMIT_VARIABLE, bad)
        with pytest.raises(ValueError, match=LIMIT_VARIABLE):
            decompressed_limit()


def test_a_gzip_within_the_limit_reads_whole_and_a_larger_one_stops_at_the_limit(tmp_path, monkeypatch) -> None:
    path = gzip_of(tmp_path / "lines.swf.gz", "1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n", 20_000)
    monkeypatch.setenv(LIMIT_VARIABLE, "0.01")  # 10 MB: the 960 KB of text fit
    assert read_input_bytes(path).count(b"\n") == 20_000
    monkeypatch.setenv(LIMIT_VARIABLE, "0.0005")  # 500 KB: they do not
    with pytest.raises(ValueError, match=r"lines\.swf\.gz: decompresses to more than 0\.0005 GB.*WATTSCHED_MAX"):
        read_input_bytes(path)


BOMBS = {
    "swf": ("bomb.swf.gz", []),
    "csv job table": ("bomb.csv.gz", []),
    "sacct text": ("bomb.sacct.gz", []),
    "json": ("bomb.json.gz", []),
}


@pytest.mark.parametrize("kind", list(BOMBS))
def test_a_bomb_of_every_compressed_format_is_one_line_through_the_cli(kind, tmp_path, monkeypatch) -> None:
    name, _ = BOMBS[kind]
    path = tmp_path / name
    if kind == "csv job table":
        gzip_of(path, "job_id,submit_time,runtime,size,walltime\n" + "1,0,10,1,20\n" * 1000, 200)
    elif kind == "sacct text":
        gzip_of(path, "JobID|Submit|Start|End|NNodes\n" + "1|2024-01-01T00:00:00|x|x|1\n" * 1000, 200)
    elif kind == "json":
        gzip_of(path, json.dumps({"nb_res": 4, "jobs": [{"id": 1}] * 1000, "profiles": {}}), 200)
    else:
        gzip_of_zeros(path, 64)
    monkeypatch.setenv(LIMIT_VARIABLE, "0.001")  # 1 MB
    result = runner.invoke(app, ["data", "stats", "--workload", str(path)])
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {path}: decompresses to more than 0.001 GB, the limit for one input on this machine"
        f" (a sixteenth of its usable memory); set {LIMIT_VARIABLE} to raise it"
    ], result.output


def test_a_gib_of_zeros_is_refused_under_a_1_gb_memory_cap(tmp_path) -> None:
    """The held-out case: 1 GiB of zeros in a 1 MB ``.swf.gz``, read by the console script under ``ulimit -v``
    1 GB: refused in one line, not ``MemoryError``."""
    bomb = gzip_of_zeros(tmp_path / "zeros.swf.gz", 1024)
    assert bomb.stat().st_size < 2 * MiB

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {k: v for k, v in os.environ.items() if k != LIMIT_VARIABLE}
    env["PYTHONPATH"] = str(REPO_ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-m", "wattsched", "data", "stats", "--workload", str(bomb)],
        capture_output=True,
        text=True,
        env=env,
        preexec_fn=cap,
        timeout=300,
        check=False,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr
    assert done.stderr.strip().startswith(f"error: {bomb}: decompresses to more than"), done.stderr


def test_memory_error_and_a_rust_panic_are_one_line(monkeypatch, tmp_path) -> None:
    from polars.exceptions import PanicException

    for exc in (MemoryError(), PanicException("memory allocation of 1073741824 bytes failed")):

        def boom(*args, exc=exc, **kwargs):
            raise exc

        monkeypatch.setattr("wattsched.workload.load.load_workload", boom)
        swf = tmp_path / "w.swf"
        swf.write_text("1 0 -1 10 2 -1 -1 2 20 -1 1 1 1 -1 1 -1 -1 -1\n")
        args = ["simulate", "--workload", str(swf), "--policy", "easy", "--output", str(tmp_path / "o")]
        result = runner.invoke(app, args)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert result.stderr.startswith("error: out of memory: "), result.stderr
