"""One lookup of the shared data folder for every command (issue 30, item 8): `reproduce` read $WATTSCHED_DATA
and `eamc` $WATTSCHED_SHARED_DATA, and `eamc run` did not find ../shared/data where `reproduce` did."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import require_data
from wattsched.cli import app
from wattsched.core.data_folder import DATA_ENV, OLD_DATA_ENV, shared_data_dir


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv(DATA_ENV, raising=False)
    monkeypatch.delenv(OLD_DATA_ENV, raising=False)
    work = tmp_path / "work" / "repo"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return work


def test_the_variable_then_its_old_name_then_the_folder_beside(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert shared_data_dir() is None
    beside = clean.parent / "shared" / "data"
    beside.mkdir(parents=True)
    assert shared_data_dir() == beside.resolve()
    monkeypatch.setenv(OLD_DATA_ENV, "/old")
    assert shared_data_dir() == Path("/old")
    monkeypatch.setenv(DATA_ENV, "/new")
    assert shared_data_dir() == Path("/new")
    monkeypatch.setenv(DATA_ENV, "")  # empty: not set
    assert shared_data_dir() == Path("/old")


def test_a_checkout_finds_the_data_beside_it(clean: Path, tmp_path: Path) -> None:
    checkout = tmp_path / "elsewhere" / "repo"
    (checkout.parent / "shared" / "data").mkdir(parents=True)
    assert shared_data_dir() is None
    assert shared_data_dir(checkout) == (checkout.parent / "shared" / "data").resolve()


def test_eamc_finds_the_shared_data_as_reproduce_does(clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    en_conf = require_data("eamc/en_conf")
    runner = CliRunner()
    missing = runner.invoke(app, ["eamc", "table"])
    assert missing.exit_code == 2
    assert "--data-dir or $WATTSCHED_DATA" in " ".join(missing.output.split())
    (clean.parent / "shared").mkdir()
    (clean.parent / "shared" / "data").symlink_to(en_conf.parent.parent, target_is_directory=True)
    found = runner.invoke(app, ["--json", "eamc", "table"])
    assert found.exit_code == 0, found.output
    monkeypatch.chdir(clean.parent.parent)  # no ../shared/data from here: the variable says where
    monkeypatch.setenv(DATA_ENV, str(en_conf.parent.parent))
    assert runner.invoke(app, ["--json", "eamc", "table"]).stdout == found.stdout
