"""Platform presets and files, power-cap schedules and job dynamic-power estimates (docs/semantics.md §3.7)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import require_data
from wattsched.power.platform import (
    Platform,
    PowerCapSchedule,
    PowerConfigError,
    job_dynamic_estimates,
    load_cap_file,
    load_platform,
    naive_estimates,
    parse_cap,
)

M100 = load_platform("marconi100")


# --------------------------------------------------------------------------------------------- platform
def test_marconi100_preset_matches_the_easypower_readme() -> None:
    assert (M100.nodes, M100.idle_watts, M100.max_node_watts) == (980, 240.0, 2100.0)
    assert M100.max_platform_watts == 955_080.0  # not 980 × 2100
    assert M100.idle_platform_watts == 235_200.0
    assert M100.dynamic_range == 719_880.0  # normal_dynamic_watts


def test_max_platform_defaults_to_nodes_times_max_node() -> None:
    p = Platform(name="toy", nodes=4, idle_watts=10, max_node_watts=100)
    assert p.max_platform_watts == 400.0
    assert p.dynamic_range == 360.0


def test_platform_is_frozen() -> None:
    with pytest.raises(Exception, match="frozen"):
        M100.nodes = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"nodes": 0}, "nodes"),
        ({"idle_watts": -1}, "idle_watts"),
        ({"idle_watts": 200}, "must exceed idle_watts"),
        ({"max_platform_watts": 30}, "dynamic range would be empty"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_platform_validation_names_the_field(fields: dict, why: str, tmp_path) -> None:
    data = {"name": "toy", "nodes": 4, "idle_watts": 10, "max_node_watts": 100} | fields
    body = "\n".join(f"{k} = {v!r}".replace("'", '"') for k, v in data.items())
    path = tmp_path / "p.toml"
    path.write_text(body)
    with pytest.raises(PowerConfigError, match=why) as info:
        load_platform(path)
    assert str(path) in str(info.value)


def test_load_platform_preset_toml_flat_and_table(tmp_path) -> None:
    assert load_platform("marconi100") is M100
    flat = tmp_path / "flat.toml"
    flat.write_text('name = "toy"\nnodes = 4\nidle_watts = 10.0\nmax_node_watts = 100.0\n')
    table = tmp_path / "table.toml"
    table.write_text('[platform]\nname = "toy"\nnodes = 4\nidle_watts = 10.0\nmax_node_watts = 100.0\n')
    assert (
        load_platform(flat)
        == load_platform(str(table))
        == Platform(name="toy", nodes=4, idle_watts=10, max_node_watts=100)
    )


def test_load_platform_errors(tmp_path) -> None:
    with pytest.raises(PowerConfigError, match="neither a platform preset"):
        load_platform("marconi-9000")
    bad = tmp_path / "bad.toml"
    bad.write_text("nodes = = 3")
    with pytest.raises(PowerConfigError, match="not valid TOML"):
        load_platform(bad)
    other = tmp_path / "p.json"
    other.write_text("{}")
    with pytest.raises(PowerConfigError, match="unknown platform file type"):
        load_platform(other)


def test_yaml_platform(tmp_path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: toy\nnodes: 4\nidle_watts: 10\nmax_node_watts: 100\n")
    assert load_platform(path).nodes == 4  # PyYAML is a declared dependency


# --------------------------------------------------------------------------------------------- caps
@pytest.mark.parametrize(("alpha", "watts"), [(0.4, 287_952.0), (0.5, 359_940.0), (0.6, 431_928.0), (0.7, 503_916.0)])
def test_window_caps_of_the_paper(alpha: float, watts: float) -> None:
    cap = PowerCapSchedule.window(alpha, M100, post_window_cap="dynamic_range")
    assert cap.times == (0.0, 10_800.0)
    assert cap.cap_at(0.0) == pytest.approx(watts, abs=1e-6)
    assert cap.cap_at(10_799.999) == pytest.approx(watts, abs=1e-6)
    assert cap.cap_at(10_800.0) == 719_880.0  # [AMBIG-0.6]: the artifact's dynamic range after the window
    assert cap.change_times() == (10_800.0,)
    # the default, as on the command line and in campaigns: no cap after the window
    assert PowerCapSchedule.window(alpha, M100).cap_at(10_800.0) is None


def test_readme_example_cap() -> None:
    assert PowerCapSchedule.window(0.45, M100).cap_at(0) == 323_946.0


def test_window_post_cap_options() -> None:
    assert PowerCapSchedule.window(0.5, M100, post_window_cap=None).cap_at(1e9) is None
    assert PowerCapSchedule.window(0.5, M100, post_window_cap="None").cap_at(1e9) is None
    assert PowerCapSchedule.window(0.5, M100, post_window_cap=500_000.0).cap_at(1e9) == 500_000.0
    assert PowerCapSchedule.window(0.5, M100, post_window_cap="0.6").cap_at(1e9) == pytest.approx(431_928.0)
    assert PowerCapSchedule.window("350000W", M100, window_end=100).caps == (350_000.0, None)
    capped = PowerCapSchedule.window("350000W", M100, window_end=100, post_window_cap="dynamic_range")
    assert capped.caps == (350_000.0, 719_880.0)
    assert PowerCapSchedule.window(350_000.0, M100).cap_at(0) == 350_000.0  # a number > 1 is watts
    with pytest.raises(PowerConfigError, match="window_end"):
        PowerCapSchedule.window(0.5, M100, window_end=0)


def test_total_basis_converts_to_a_dynamic_cap() -> None:
    # [AMBIG-0.2] α·955,080 on total power = α·955,080 − 235,200 on dynamic power.
    cap = PowerCapSchedule.window(0.5, M100, post_window_cap="dynamic_range", cap_basis="total")
    assert cap.cap_at(0) == 0.5 * 955_080 - 235_200
    assert cap.cap_at(20_000) == 719_880.0
    assert parse_cap("400000W", M100, cap_basis="total") == 400_000 - 235_200
    with pytest.raises(PowerConfigError, match="below the idle power"):
        parse_cap("0.2", M100, cap_basis="total")
    with pytest.raises(PowerConfigError, match="needs the platform"):
        parse_cap("400000W", None, cap_basis="total")


def test_parse_cap_syntax() -> None:
    assert parse_cap("0.5", M100) == 359_940.0
    assert parse_cap(" 350000W ", M100) == 350_000.0
    assert parse_cap("350000 w", None) == 350_000.0
    assert parse_cap("none", M100) is None
    assert parse_cap("inf", M100) is None
    for bad, why in [("350000", "add 'W'"), ("abc", "expected a fraction"), ("xW", "not a number"), ("-5W", "non")]:
        with pytest.raises(PowerConfigError, match=why):
            parse_cap(bad, M100)
    with pytest.raises(PowerConfigError, match="needs a platform"):
        parse_cap("0.5", None)


@pytest.mark.parametrize(
    ("cap", "why"),
    [
        ("1e308W", "more than any machine draws"),  # issue 31 item 9: was accepted as a cap
        ("1e13W", r"at most 1e\+12 W"),
        ("0W", "a zero cap lets no job start"),
        ("0", "a zero cap lets no job start"),
        (0.0, "a zero cap lets no job start"),
        (1e300, "more than any machine draws"),
    ],
)
def test_caps_are_bounded_by_physical_sense(cap: str | float, why: str) -> None:
    """A cap is positive (zero starts no job; the P0 metrics divide by it) and at most MAX_POWER_W, 10 million
    nodes of 100 kW: beyond is a typo or a unit error, refused in one line naming the cap."""
    with pytest.raises(PowerConfigError, match=why) as info:
        PowerCapSchedule.constant(cap, M100)
    assert repr(cap) in str(info.value) and "\n" not in str(info.value)


def test_a_total_cap_at_the_idle_power_is_refused() -> None:
    with pytest.raises(PowerConfigError, match="equals the idle power"):
        parse_cap("235200W", M100, cap_basis="total")


def test_a_cap_above_the_platform_warns_once(recwarn) -> None:
    """A cap above what the platform can draw (980 × 2,100 W less idle on M100) binds no real power: likely a typo,
    warned once; the dynamic range itself (the artifact's post-window cap) and α caps are not."""
    from wattsched.core.errors import InputWarning
    from wattsched.runs import power_setup

    assert M100.peak_dynamic_watts == 980 * 2100.0 - 235_200.0
    with pytest.warns(InputWarning, match="above the most marconi100 can draw") as caught:
        setup = power_setup("marconi100", "max", cap="1e9W")
    assert setup is not None and setup.cap is not None and setup.cap.caps == (1e9,)
    assert len([w for w in caught if issubclass(w.category, InputWarning)]) == 1
    power_setup("marconi100", "max", cap="0.5", window=100.0, post_window_cap="dynamic_range")
    power_setup("marconi100", "max", cap="1822800W")  # exactly the peak: reachable, no warning
    assert not [w for w in recwarn if issubclass(w.category, InputWarning)]


def test_schedule_queries() -> None:
    cap = PowerCapSchedule((0.0, 10.0, 20.0, 30.0), (100.0, None, None, 50.0))
    assert [cap.cap_at(t) for t in (-5, 0, 9.99, 10, 25, 30, 1e12)] == [100.0, 100.0, 100.0, None, None, 50.0, 50.0]
    many = cap.cap_at_many(np.array([-5, 0, 9.99, 10, 25, 30, 1e12]))
    np.testing.assert_array_equal(many, [100, 100, 100, np.inf, np.inf, 50, 50])
    assert cap.change_times() == (10.0, 30.0)  # 20 changes nothing
    assert PowerCapSchedule.constant(None).cap_at(5) is None
    assert PowerCapSchedule.constant(0.5, M100).cap_at(5) == 359_940.0
    assert PowerCapSchedule.constant(math.inf).caps == (None,)


@pytest.mark.parametrize(
    ("times", "caps", "why"),
    [
        ((1.0,), (5.0,), "starts at time 0"),
        ((0.0, 5.0, 5.0), (1.0, 2.0, 3.0), "strictly increasing"),
        ((0.0, 5.0), (1.0,), "as many times as caps"),
        ((0.0,), (-1.0,), "non-negative"),
        ((0.0,), (math.nan,), "non-negative"),
        ((0.0,), (1e300,), "up to 1e\\+12"),
    ],
)
def test_schedule_validation(times, caps, why) -> None:
    with pytest.raises(PowerConfigError, match=why):
        PowerCapSchedule(times, caps)


@pytest.mark.data
def test_eurora_cap_file() -> None:
    path = require_data("eurora/variable_power_caps/power_caps_100")
    cap = load_cap_file(path)
    assert cap.times[:3] == (0.0, 100.0, 1000.0)
    assert cap.cap_at(50) is None  # before the file's first offset: no cap
    assert cap.cap_at(100) == 2200.0
    assert cap.cap_at(1050) == 4000.0
    assert cap.cap_at(1e6) == 2000.0
    assert load_cap_file(path, before_first=1000.0).cap_at(0) == 1000.0


@pytest.mark.parametrize(
    ("text", "line", "why"),
    [
        ("0;100\n10;abc\n", 2, "non-numeric"),
        ("0;100\n\n# c\n10;5;6\n", 4, "expected 'time_offset_s;power_cap_W'"),
        ("10;100\n5;100\n", 2, "does not increase"),
        ("-1;100\n", 1, "non-negative"),
        ("0;-100\n", 1, "non-negative watts"),
        ("0;100\n10;1e308\n", 2, "more than any machine draws"),
    ],
)
def test_cap_file_errors_name_file_and_line(tmp_path, text: str, line: int, why: str) -> None:
    path = tmp_path / "caps"
    path.write_text(text)
    with pytest.raises(PowerConfigError, match=why) as info:
        load_cap_file(path)
    assert f"{path}:{line}:" in str(info.value)
    empty = tmp_path / "empty"
    empty.write_text("# nothing\n")
    with pytest.raises(PowerConfigError, match="no cap lines"):
        load_cap_file(empty)


def test_cap_file_total_basis(tmp_path) -> None:
    path = tmp_path / "caps"
    path.write_text("0;500000\n")
    assert load_cap_file(path, platform=M100, cap_basis="total").cap_at(0) == 500_000 - 235_200


# --------------------------------------------------------------------------------------------- estimates
def test_job_dynamic_estimates() -> None:
    m, mx, s = job_dynamic_estimates([1, 4], [700.0, 500.0], [1000.0, 900.0], [50.0, 30.0], 240.0)
    np.testing.assert_array_equal(m, [460.0, 1040.0])
    np.testing.assert_array_equal(mx, [760.0, 2640.0])
    np.testing.assert_array_equal(s, [50.0, 120.0])
    _, _, s_sqrt = job_dynamic_estimates(
        [1, 4], [700.0, 500.0], [1000.0, 900.0], [50.0, 30.0], 240.0, sigma_scaling="sqrt"
    )
    np.testing.assert_array_equal(s_sqrt, [50.0, 60.0])
    m_lit, mx_lit, _ = job_dynamic_estimates([2], [700.0], [1000.0], [0.0], 240.0, subtract_idle=False)
    assert (m_lit[0], mx_lit[0]) == (1400.0, 2000.0)
    with pytest.raises(ValueError, match="one shape"):
        job_dynamic_estimates([1, 2], [1.0], [1.0], [1.0], 240.0)
    with pytest.raises(ValueError, match="sigma_scaling"):
        job_dynamic_estimates([1], [1.0], [1.0], [1.0], 240.0, sigma_scaling="cube")  # type: ignore[arg-type]


def test_naive_estimates() -> None:
    m, mx, s = naive_estimates(np.array([1, 3]), 1860.0)
    np.testing.assert_array_equal(m, [1860.0, 5580.0])
    np.testing.assert_array_equal(mx, m)
    np.testing.assert_array_equal(s, [0.0, 0.0])
    assert naive_estimates([2], naive_watts=2100.0)[1][0] == 4200.0


def test_naive_is_the_platforms_max_less_idle_not_marconi100s() -> None:
    """Regression (issue 29): naive's per-node power was hard-coded at Marconi100's 1,860 W, so on a platform
    idling at 100 W with 500 W nodes a 2-node job was estimated at 3,720 W instead of 800 W."""
    import polars as pl

    from wattsched.policies.powercheck import PowerCheck
    from wattsched.power.platform import Platform
    from wattsched.power.run import PowerSetup, with_estimates

    jobs = pl.DataFrame({"job_id": [1, 2], "size": [2, 1], "runtime": [10.0, 10.0]})
    small = Platform(name="small", nodes=8, idle_watts=100.0, max_node_watts=500.0)
    est = with_estimates(jobs, PowerSetup(small, PowerCheck.named("naive")))
    assert est["est_dyn_max"].to_list() == [800.0, 400.0] and est["est_dyn_mean"].to_list() == [800.0, 400.0]
    literal = with_estimates(jobs, PowerSetup(small, PowerCheck.named("naive"), subtract_idle=False))
    assert literal["est_dyn_max"].to_list() == [1000.0, 500.0]
    m100 = Platform(name="m100", nodes=980, idle_watts=240.0, max_node_watts=2100.0)
    assert with_estimates(jobs, PowerSetup(m100, PowerCheck.named("naive")))["est_dyn_max"].to_list() == [
        3720.0,
        1860.0,
    ]
