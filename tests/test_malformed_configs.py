"""Malformed-input corpus, part 4: power platform files (TOML) and power campaign specs (TOML). Every bad file
must give one line naming the file and the field (tests/malformed_harness.py); a good variant must validate."""

from __future__ import annotations

from pathlib import Path

import pytest

from malformed_harness import Accepts, Case, Error, Writer, check_case, text_file
from wattsched.campaign.spec import load_spec
from wattsched.core.platform_file import PlatformFileError
from wattsched.core.store import CampaignError
from wattsched.power.platform import load_platform

# ------------------------------------------------------------------------------------------------ platform TOML

PLATFORM = {"name": '"m"', "nodes": "10", "idle_watts": "100.0", "max_node_watts": "500.0"}


def platform(extra: str = "", name: str = "machine.toml", **fields: str) -> Writer:
    """A power platform file; ``fields`` replace values (``""`` drops the field), ``extra`` is appended."""
    values = PLATFORM | fields
    body = "".join(f"{k} = {v}\n" for k, v in values.items() if v != "")
    return text_file(name, 'kind = "power"\n' + body + extra)


OK = Accepts(0)
PLATFORM_CASES = [
    Case("good", platform(), OK),
    Case("good_yaml", text_file("m.yaml", "kind: power\nname: m\nnodes: 4\nidle_watts: 1\nmax_node_watts: 2\n"), OK),
    Case(
        "good_platform_table",
        text_file("t.toml", '[platform]\nname = "m"\nnodes = 2\nidle_watts = 1\nmax_node_watts = 2\n'),
        OK,
    ),
    Case("nodes_text", platform(nodes='"ten"'), Error("nodes")),
    Case("nodes_zero", platform(nodes="0"), Error("nodes")),
    Case("nodes_negative", platform(nodes="-4"), Error("nodes")),
    Case("nodes_fraction", platform(nodes="2.5"), Error("nodes")),
    Case("nodes_20_digits", platform(nodes="99999999999999999999"), Error("machine.toml")),
    Case("nodes_missing", platform(nodes=""), Error("nodes")),
    Case("idle_negative", platform(idle_watts="-1.0"), Error("idle_watts")),
    Case("idle_nan", platform(idle_watts="nan"), Error("idle_watts")),
    Case("idle_inf", platform(idle_watts="inf"), Error("idle_watts")),
    Case("idle_text", platform(idle_watts='"cold"'), Error("idle_watts")),
    Case("max_below_idle", platform(max_node_watts="50.0"), Error("max_node_watts")),
    Case("max_node_nan", platform(max_node_watts="nan"), Error("max_node_watts")),
    Case("max_node_zero", platform(max_node_watts="0"), Error("max_node_watts")),
    Case("max_platform_text", platform(max_platform_watts='"big"'), Error("max_platform_watts")),
    Case("max_platform_inf", platform(max_platform_watts="inf"), Error("max_platform_watts")),
    Case("name_empty", platform(name='""'), Error("name")),
    Case("name_number", platform(name="5"), Error("name")),
    Case("unknown_field", platform(extra="idle_wats = 3\n"), Error("idle_wats")),
    Case("wrong_kind", text_file("k.toml", 'kind = "rmap"\nname = "m"\n'), Error("kind")),
    Case("kind_unknown", text_file("u.toml", 'kind = "quantum"\nname = "m"\n'), Error("kind")),
    Case("description_number", platform(extra="description = 5\n"), Error("description")),
    Case("not_toml", text_file("b.toml", "nodes = = 3\n"), Error("not valid TOML")),
    Case("binary", text_file("bin.toml", b"\x00\xff\xfe"), Error("bin.toml")),
    Case("empty", text_file("e.toml", ""), Error("e.toml")),
    Case("array_top", text_file("a.yaml", "- 1\n- 2\n"), Error("a.yaml")),
    Case("wrong_suffix", text_file("m.ini", "nodes = 3\n"), Error("m.ini")),
    Case("missing", lambda d: d / "absent.toml", Error("absent.toml")),
    Case("nodes_list", platform(nodes="[1, 2]"), Error("nodes")),
    Case("bool_nodes", platform(nodes="true"), Error("nodes")),
    # issue 31 item 9: powers bounded by physical sense (100 kW a node, 1e12 W a machine): beyond is a unit error
    Case("max_node_1e300", platform(max_node_watts="1e300"), Error("max_node_watts")),
    Case("idle_1e9", platform(idle_watts="1e9", max_node_watts="2e9"), Error("idle_watts")),
    Case("max_platform_1e300", platform(max_platform_watts="1e300"), Error("max_platform_watts")),
]


@pytest.mark.parametrize("case", PLATFORM_CASES, ids=lambda c: c.name)
def test_platform_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, load_platform, (PlatformFileError,))


# ------------------------------------------------------------------------------------------------ campaign TOML

SPEC = """kind = "power"
name = "c"
platform = "marconi100"
{top}
[[workloads]]
name = "w"
{workload}

[grid]
{grid}
"""
WORKLOAD = 'generate = { model = "m100", jobs = 200, seed = 0 }'
GRID = 'policies = ["easy-pc"]\nchecks = ["naive"]\ncaps = [0.5]'


def spec(top: str = "", workload: str = WORKLOAD, grid: str = GRID, name: str = "campaign.toml") -> Writer:
    return text_file(name, SPEC.format(top=top, workload=workload, grid=grid))


SPEC_CASES = [
    Case("good", spec(), OK),
    Case("good_path_workload", spec(workload='path = "jobs.parquet"'), OK),
    Case("unknown_top_field", spec(top="baseline = true"), Error("baseline")),
    Case("unknown_policy", spec(grid='policies = ["fifo-pc"]\ncaps = [0.5]'), Error("fifo-pc")),
    Case("unknown_check", spec(grid='checks = ["psychic"]\ncaps = [0.5]'), Error("checks")),
    Case("cap_zero", spec(grid="caps = [0.0]"), Error("caps")),
    Case("cap_negative", spec(grid="caps = [-0.5]"), Error("caps")),
    Case("cap_text", spec(grid='caps = ["half"]'), Error("caps")),
    Case("cap_nan", spec(grid="caps = [nan]"), Error("caps")),
    Case("caps_empty", spec(grid="caps = []"), Error("caps")),
    Case("power_window_negative", spec(grid="caps = [0.5]\npower_window = -1"), Error("power_window")),
    Case("power_window_text", spec(grid='caps = [0.5]\npower_window = "3h"'), Error("power_window")),
    Case("post_window_cap_bad", spec(grid='caps = [0.5]\npost_window_cap = "sometimes"'), Error("post_window_cap")),
    Case("seeds_text", spec(grid='caps = [0.5]\nseeds = ["zero"]'), Error("seeds")),
    Case("unknown_source", spec(grid='caps = [0.5]\nsources = ["oracle"]'), Error("oracle")),
    Case("reservation_bad", spec(grid='caps = [0.5]\nreservation = "cores"'), Error("reservation")),
    Case("workload_both", spec(workload='path = "a.parquet"\n' + WORKLOAD), Error("exactly one")),
    Case("workload_neither", spec(workload=""), Error("exactly one")),
    Case("generate_jobs_text", spec(workload='generate = { model = "m100", jobs = "many" }'), Error("jobs")),
    Case("generate_jobs_negative", spec(workload='generate = { model = "m100", jobs = -5 }'), Error("jobs")),
    Case("generate_model_unknown", spec(workload='generate = { model = "m200", jobs = 5 }'), Error("model")),
    Case("windows_count_zero", spec(workload=WORKLOAD + "\nwindows = { count = 0, hours = 24 }"), Error("count")),
    Case("windows_hours_negative", spec(workload=WORKLOAD + "\nwindows = { count = 2, hours = -1 }"), Error("hours")),
    Case(
        "windows_prestate_bad",
        spec(workload=WORKLOAD + '\nwindows = { count = 2, hours = 1, prestate = "x" }'),
        Error("prestate"),
    ),
    Case("prediction_method_bad", spec(top="", grid=GRID + '\n\n[prediction]\nmethod = "tea-leaves"'), Error("tea")),
    Case(
        "duplicate_workload_names",
        text_file(
            "d.toml",
            SPEC.format(top="", workload=WORKLOAD, grid=GRID).replace(
                "[grid]", '[[workloads]]\nname = "w"\n' + WORKLOAD + "\n\n[grid]"
            ),
        ),
        Error("unique"),
    ),
    Case(  # the name has a documented default ("campaign")
        "name_missing",
        text_file("n.toml", SPEC.format(top="", workload=WORKLOAD, grid=GRID).replace('name = "c"\n', "")),
        OK,
    ),
    Case("not_toml", text_file("x.toml", "kind = power\n"), Error("not valid TOML")),
    Case("binary", text_file("bin.toml", b"\xff\xfe\x00"), Error("bin.toml")),
    Case("empty", text_file("e.toml", ""), Error("e.toml")),
    Case("wrong_suffix", text_file("c.txt", "kind = 1\n"), Error("c.txt")),
    Case("missing", lambda d: d / "absent.toml", Error("absent.toml")),
    Case("workloads_not_list", text_file("w.toml", 'kind = "power"\nname = "c"\nworkloads = 3\n'), Error("workloads")),
]


@pytest.mark.parametrize("case", SPEC_CASES, ids=lambda c: c.name)
def test_campaign_spec_corpus(case: Case, tmp_path: Path) -> None:
    check_case(case, tmp_path, load_spec, (CampaignError,))


def test_corpus_sizes() -> None:
    assert len(PLATFORM_CASES) >= 30 and len(SPEC_CASES) >= 30
