"""The one safe way to write (core/atomic.py, issue 31 item 1): the primitives, apart from a real full disk
(tests/test_full_disk.py)."""

from __future__ import annotations

import errno
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.core.atomic import OutputWriteError, atomic_files, atomic_folder, atomic_path, write_failure


def test_a_system_failure_is_named_by_the_file_and_another_error_keeps_its_message(tmp_path: Path) -> None:
    target = tmp_path / "r.csv"
    rust = OSError("No space left on device (os error 28)")
    arrow = OSError("[Errno 28] Error writing bytes to file. Detail: [errno 28] No space left on device")
    polars = pl.exceptions.ComputeError("parquet: underlying IO error: No space left on device (os error 28)")
    for exc in (OSError(errno.ENOSPC, "No space left on device"), rust, arrow, polars):
        failure = write_failure(target, exc)
        assert (
            failure is not None and str(failure) == f"no space left on device writing {target}; r.csv was not written"
        )
    target.write_text("old")
    quota = write_failure(target, OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert str(quota) == f"disk quota exceeded writing {target}; the previous r.csv is unchanged"
    assert write_failure(target, KeyError("x")) is None  # a bug in the writer
    assert write_failure(target, FileNotFoundError(2, "gone", "/elsewhere/input.csv")) is None  # another file


def test_a_writer_nested_in_a_temporary_is_named_by_the_outer_file(tmp_path: Path) -> None:
    target = tmp_path / "w.parquet"
    with pytest.raises(OutputWriteError) as caught, atomic_path(target, keep_suffix=True) as tmp:
        raise write_failure(tmp, OSError(errno.ENOSPC, "full"))  # what an inner atomic writer raises
    assert str(caught.value) == f"no space left on device writing {target}; w.parquet was not written"


def test_atomic_files_renames_all_or_none(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.parquet"
    a.write_text("old a")
    with pytest.raises(OutputWriteError, match=r"writing .*b\.parquet"), atomic_files() as files:
        files.text(a, "new a")
        files.path(b, keep_suffix=True)
        raise OSError(errno.ENOSPC, "No space left on device")
    assert a.read_text() == "old a" and not b.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]  # no temporary left
    with atomic_files() as files:
        files.text(a, "new a")
        files.table(pl.DataFrame({"x": [1, 2]}), b)
    assert a.read_text() == "new a" and pl.read_parquet(b)["x"].to_list() == [1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.parquet"]


def test_atomic_folder_replaces_the_whole_folder_or_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "telemetry"
    folder.mkdir()
    for k in range(3):
        (folder / f"part-{k}.parquet").write_text(f"old {k}")
    with pytest.raises(RuntimeError), atomic_folder(folder) as staging:
        (staging / "part-0.parquet").write_text("new 0")
        raise RuntimeError("the writer failed")
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert (folder / "part-0.parquet").read_text() == "old 0"
    with atomic_folder(folder) as staging:
        (staging / "part-0.parquet").write_text("new 0")
    assert [p.name for p in folder.iterdir()] == ["part-0.parquet"]  # the old days are gone, not mixed in
    assert sorted(p.name for p in tmp_path.iterdir()) == ["telemetry"]


def test_generating_telemetry_again_never_mixes_two_runs(tmp_path: Path) -> None:
    runner = CliRunner()
    base = ["generate", "telemetry", "--output", str(tmp_path), "--jobs", "40", "--nodes", "8", "--seed", "1"]
    for days in ("2", "0.5"):
        done = runner.invoke(app, [*base, "--days", days])
        assert done.exit_code == 0, done.output
    parts = sorted((tmp_path / "telemetry").rglob("*.parquet"))
    stamps = pl.concat([pl.read_parquet(p) for p in parts])["timestamp"]
    span_days = (stamps.max() - stamps.min()).total_seconds() / 86400  # type: ignore[operator, union-attr]
    assert span_days <= 0.5, f"parts of the 2-day run left beside the 0.5-day one ({len(parts)} parts)"
