"""``save_workload``: every format it writes, ``load_workload`` reads back with the same jobs."""

from __future__ import annotations

from pathlib import Path

import pytest

from wattsched import load_workload, save_workload
from wattsched.core.schema import WorkloadError
from wattsched.workload.generate import generate_lublin, generate_m100like
from wattsched.workload.save import SAVE_FORMATS, workload_format

#: The columns SWF's 18 fields carry for a generated workload (the rest, e.g. the queue name, are numbered).
SWF_COLUMNS = ["job_id", "submit_time", "walltime", "runtime", "size", "user_id"]


@pytest.fixture(scope="module")
def lublin():
    return generate_lublin(300, 128, seed=3)


@pytest.mark.parametrize("name", ["w.parquet", "w.csv", "w.csv.gz"])
def test_tables_round_trip(tmp_path: Path, lublin, name: str) -> None:
    path = tmp_path / "sub" / name  # the parent is created
    assert save_workload(lublin, path) == []
    back = load_workload(path)
    assert back.rejects.height == 0
    assert back.jobs.equals(lublin.jobs)
    if name.endswith(".parquet"):  # Parquet keeps the provenance and the machine size
        assert back.provenance.machine_size == 128
        assert back.provenance.header["seed"] == 3


@pytest.mark.parametrize("name", ["w.swf", "w.swf.gz"])
def test_swf_round_trip(tmp_path: Path, lublin, name: str) -> None:
    path = tmp_path / name
    assert save_workload(lublin, path, format="swf") == []
    back = load_workload(path)
    assert back.rejects.height == 0
    assert back.provenance.machine_size == 128
    assert back.jobs.select(SWF_COLUMNS).equals(lublin.jobs.select(SWF_COLUMNS))


def test_csv_leaves_list_columns_out_and_names_them(tmp_path: Path) -> None:
    m100 = generate_m100like(40, seed=1)
    nested = [c for c, t in m100.jobs.schema.items() if t.is_nested()]
    assert nested  # the power profiles
    assert save_workload(m100, tmp_path / "m.csv") == nested
    back = load_workload(tmp_path / "m.csv").jobs
    assert back.columns == m100.jobs.drop(nested).columns
    assert back.select("job_id", "runtime", "power_mean").equals(m100.jobs.select("job_id", "runtime", "power_mean"))
    assert save_workload(m100, tmp_path / "m.parquet") == []
    assert load_workload(tmp_path / "m.parquet").jobs.select(nested).equals(m100.jobs.select(nested))


def test_the_name_decides_and_a_given_format_must_agree(tmp_path: Path, lublin) -> None:
    assert {workload_format(f"x{e}") for es in SAVE_FORMATS.values() for e in es} == set(SAVE_FORMATS)
    assert workload_format("X.SWF.GZ") == "swf"
    with pytest.raises(WorkloadError, match=r"must end in \.parquet, \.csv"):
        save_workload(lublin, tmp_path / "w.json")
    with pytest.raises(WorkloadError, match="must be named"):
        save_workload(lublin, tmp_path / "w.csv", format="parquet")
    with pytest.raises(WorkloadError, match="unknown workload format 'xml'"):
        save_workload(lublin, tmp_path / "w.csv", format="xml")
    assert not list(tmp_path.iterdir())  # nothing written on an error


def test_a_csv_of_a_workload_in_nodes_says_nodes(tmp_path: Path) -> None:
    """Issue 30, item 9: a Marconi100-like workload written as CSV was read back as "980 processors"; its size
    column is now `nodes`, read back through the alias, and the unit with it."""
    m100 = generate_m100like(300, seed=1)
    assert m100.provenance.size_unit == "nodes"
    path = tmp_path / "m100.csv"
    save_workload(m100, path)
    assert path.read_text().splitlines()[0].split(",")[4] == "nodes"
    back = load_workload(path)
    assert back.provenance.size_unit == "nodes"
    assert back.jobs["size"].to_list() == m100.jobs["size"].to_list()
    lublin = tmp_path / "lublin.csv"
    save_workload(generate_lublin(50, 32, seed=1), lublin)
    assert "size" in lublin.read_text().splitlines()[0].split(",")
    assert load_workload(lublin).provenance.size_unit == "processors"
