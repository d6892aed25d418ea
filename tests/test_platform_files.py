"""Platform files (docs/platforms.md): the presets are package data read by the same loader as a user's file."""

from __future__ import annotations

import dataclasses
import re
import shutil
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import wattsched
from conftest import require_data
from wattsched.cli import app
from wattsched.core.platform_file import (
    PLATFORM_KINDS,
    PlatformFileError,
    platform_kind,
    preset_file,
    preset_names,
    read_platform_file,
)
from wattsched.power.platform import Platform, PowerConfigError, load_platform
from wattsched.studies.eamc.dvfs import DVFSPlatformFile, PartitionFacts, eamc_p1p2, load_dvfs_platform
from wattsched.studies.eamc.en_conf import DVFSConfigError
from wattsched.studies.multires.eurora import eurora_pool
from wattsched.studies.multires.nodes import NodeConfigError, NodeGroup, PoolPlatform, load_pool
from wattsched.studies.rmap.hardware import (
    RMAP_CAB,
    SANDY_BRIDGE,
    RmapConfigError,
    RmapMachine,
    SocketModel,
    load_rmap_platform,
)

PRESETS = {"power": ["marconi100"], "multires": ["eurora"], "dvfs": ["eamc-p1p2"], "rmap": ["rmap-cab"]}
DOCS = Path(__file__).resolve().parents[1] / "docs" / "platforms.md"


def test_every_preset_is_package_data_inside_the_package() -> None:
    package = Path(wattsched.__file__).resolve().parent
    for kind, names in PRESETS.items():
        assert preset_names(kind) == names
        for name in names:
            entry = preset_file(name, kind)
            assert entry.is_file() and package in Path(str(entry)).resolve().parents
            assert entry == resources.files("wattsched").joinpath(*PLATFORM_KINDS[kind].split("/"), f"{name}.toml")
            file = read_platform_file(name, kind)
            assert file.kind == kind and file.folder is None and file.description


def test_a_preset_and_its_copy_load_alike(tmp_path: Path) -> None:
    """A user's file with a preset's content gives the same machine: one reader, one validation."""
    for kind, name in (("power", "marconi100"), ("multires", "eurora"), ("rmap", "rmap-cab")):
        copy = tmp_path / f"{name}.toml"
        copy.write_text(preset_file(name, kind).read_text())
        if kind == "power":
            assert load_platform(copy) == load_platform(name)
        elif kind == "multires":
            a, b = load_pool(copy, nodes=8), eurora_pool(nodes=8)
            assert a.name == b.name and a.queues == b.queues and np.array_equal(a.capacity, b.capacity)
        else:
            assert load_rmap_platform(copy) == (RMAP_CAB, SANDY_BRIDGE)


def test_kind_mismatch_and_unknown_names_say_why(tmp_path: Path) -> None:
    with pytest.raises(PowerConfigError, match=r"eurora: a 'multires' platform preset, but a 'power' platform"):
        load_platform("eurora")
    with pytest.raises(NodeConfigError, match=r"neither a platform preset \(\['eurora'\]\) nor a file"):
        load_pool("cab")
    pool_file = tmp_path / "pool.toml"
    pool_file.write_text('kind = "multires"\nname = "x"\n')
    with pytest.raises(PowerConfigError, match=r"pool\.toml: field 'kind': a 'multires' platform, but a 'power'"):
        load_platform(pool_file)
    pool_file.write_text('kind = "gpu"\nname = "x"\n')
    with pytest.raises(PowerConfigError, match=r"field 'kind': 'gpu' is not one of"):
        load_platform(pool_file)
    with pytest.raises(PlatformFileError, match="unknown platform kind"):
        preset_names("gpu")


def test_errors_are_one_line_naming_file_and_field(tmp_path: Path) -> None:
    power = tmp_path / "p.toml"
    power.write_text('kind = "power"\nname = "toy"\nnodes = 4\nidle_watts = 10\nmax_node_watts = 100\ncolour = 1\n')
    with pytest.raises(PowerConfigError, match=r"p\.toml: invalid platform: field 'colour': Extra inputs") as info:
        load_platform(power)
    assert "\n" not in str(info.value)

    pool = tmp_path / "pool.toml"
    pool.write_text(
        'kind = "multires"\nname = "toy"\nresources = ["cores", "mem"]\n'
        "[[groups]]\ncount = 2\ncapacity = { cores = 8, mem = -1 }\n"
    )
    with pytest.raises(NodeConfigError, match=r"pool\.toml: invalid platform: field 'groups\.0': .*non-negative"):
        load_pool(pool)
    pool.write_text('kind = "multires"\nname = "toy"\nresources = ["cores", "mem"]\n[[groups]]\ncount = 2\n'
                    "capacity = { cores = 8 }\n")  # fmt: skip
    with pytest.raises(NodeConfigError, match=r"capacity must name exactly the resources \['cores', 'mem'\]"):
        load_pool(pool)

    rmap = tmp_path / "m.toml"
    text = preset_file("rmap-cab", "rmap").read_text()
    rmap.write_text(text.replace("alpha = 2.6", "alpha = -1"))
    with pytest.raises(RmapConfigError, match=r"m\.toml: invalid platform: field 'socket\.alpha': .*greater than 0"):
        load_rmap_platform(rmap)
    rmap.write_text(text.replace("nodes = 64", "nodes = 32"))
    with pytest.raises(RmapConfigError, match=r"field 'node_counts': 64 exceeds the 32 nodes"):
        load_rmap_platform(rmap)

    dvfs = tmp_path / "d.toml"
    dvfs.write_text('kind = "dvfs"\nname = "x"\nprimary = "p9"\n[[partitions]]\nname = "p1"\nmodule_id = "A"\n'
                    "nodes = 4\nfreq_min = 1.0\nfreq_nominal = 2.0\n")  # fmt: skip
    with pytest.raises(DVFSConfigError, match=r"d\.toml: invalid platform: .*primary 'p9' is not one of"):
        load_dvfs_platform(dvfs, tmp_path)


def test_user_pool_file_with_groups_and_queues(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(
        "kind: multires\nname: mine\nresources: [cores, gpus]\ndefault_ewt: 600\n"
        "groups:\n  - {count: 3, capacity: {cores: 32, gpus: 0}}\n"
        "  - {count: 1, capacity: {cores: 32, gpus: 4}, reserved: true}\n"
        "queues: {short: 3600}\n"
    )
    pool = load_pool(path)
    assert pool.name == "mine-4" and pool.capacity.tolist() == [[32, 0], [32, 0], [32, 0], [32, 4]]
    assert pool.reserved.tolist() == [False, False, False, True]
    assert pool.queues == {"short": 600.0, "default": 600.0}
    assert load_pool(path, ewt="queues-file").queues == {"short": 3600.0, "default": 600.0}
    assert load_pool(path, nodes=2).capacity.tolist() == [[32, 0], [32, 4]]  # each group in proportion


def test_user_dvfs_file_with_its_conf_beside_it(tmp_path: Path) -> None:
    en_conf = require_data("eamc/en_conf/2hw.conf").parent
    shutil.copy(en_conf / "2hw.conf", tmp_path / "2hw.conf")
    (tmp_path / "2hw").symlink_to(en_conf / "2hw")
    text = preset_file("eamc-p1p2", "dvfs").read_text()
    mine = tmp_path / "half.toml"
    mine.write_text(text.replace('name = "eamc-p1p2"', 'name = "half"').replace("nodes = 512", "nodes = 256"))
    half = load_dvfs_platform(mine)
    paper = eamc_p1p2(en_conf)
    assert half.name == "half" and [p.nodes for p in half] == [256, 256] and half.primary == "p1"
    for a, b in zip(half, paper, strict=True):
        assert np.array_equal(a.coefficients, b.coefficients) and a.f_ref == b.f_ref
    assert paper.total_nodes == 1024 and paper.name == "eamc-p1p2" and paper.primary == "p1"
    mine.write_text(text.replace('module_id = "ESB"', 'module_id = "XYZ"'))
    with pytest.raises(DVFSConfigError, match=re.escape(f"{mine}: p2 is XYZ (Xeon Gold 6254)")):
        load_dvfs_platform(mine)


def test_docs_list_every_field_of_every_kind() -> None:
    """docs/platforms.md documents each field a platform file may hold."""
    text = DOCS.read_text(encoding="utf-8")
    fields = [
        *Platform.model_fields,
        *PoolPlatform.model_fields,
        *NodeGroup.model_fields,
        *DVFSPlatformFile.model_fields,
        *PartitionFacts.model_fields,
        *(f.name for f in dataclasses.fields(RmapMachine)),
        *(f.name for f in dataclasses.fields(SocketModel)),
    ]
    missing = [f for f in fields if not re.search(rf"[`.]{f}` \|", text)]  # a table row: `f` or `table.f`
    assert not missing, f"docs/platforms.md does not document {missing}"


def test_cli_lists_the_presets_and_checks_a_file(tmp_path: Path) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["platforms", "list"])
    assert listed.exit_code == 0
    for names in PRESETS.values():
        assert names[0] in listed.output
    for name in ("marconi100", "eurora", "eamc-p1p2", "rmap-cab"):
        shown = runner.invoke(app, ["platforms", "check", name])
        assert shown.exit_code == 0, shown.output
    assert "719,880 W" in runner.invoke(app, ["platforms", "check", "marconi100"]).output
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "rmap"\nname = "x"\n')
    out = runner.invoke(app, ["platforms", "check", str(bad)])
    assert out.exit_code == 2 and "bad.toml: invalid platform: field 'socket'" in out.output
    assert platform_kind(bad) == "rmap" and platform_kind("eurora") == "multires"


def test_eamc_run_takes_a_platform_file(tmp_path: Path) -> None:
    en_conf = require_data("eamc/en_conf/2hw.conf").parent
    text = preset_file("eamc-p1p2", "dvfs").read_text()
    double = tmp_path / "double.toml"
    double.write_text(text.replace('name = "eamc-p1p2"', 'name = "double"').replace("nodes = 512", "nodes = 1024"))
    runner = CliRunner()
    base = ["eamc", "run", "--jobs", "200", "--data-dir", str(en_conf)]
    ran = runner.invoke(app, [*base, "--output", str(tmp_path / "d"), "--platform", str(double)])
    assert ran.exit_code == 0, ran.output
    assert "200 jobs" in ran.output and (tmp_path / "d" / "jobs.parquet").is_file()
    wrong = runner.invoke(app, [*base, "--output", str(tmp_path / "w"), "--platform", "rmap-cab"])
    assert wrong.exit_code == 2 and "a 'rmap' platform preset, but a 'dvfs' platform is needed" in wrong.output
