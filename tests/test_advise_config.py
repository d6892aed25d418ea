"""The advisor's configuration: the example file, watts strings, cap windows and files, one-line errors."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from wattsched.advise.config import AdvisorConfigError, load_config, parse_watts

ROOT = Path(__file__).resolve().parents[1]


def _epoch(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_example_file_parses_with_paths_relative_to_it() -> None:
    cfg = load_config(ROOT / "examples" / "advisor.toml")
    assert cfg.mode == "licenses" and cfg.interval == 15
    assert cfg.state == ROOT / "examples" / "advisor-state.sqlite"
    assert cfg.learning.key == ["user", "nodes"] and cfg.power.max_watts_per_node == 400.0
    assert cfg.cap.at(_epoch("2026-11-26T09:00:00")) == 1200.0
    assert cfg.cap.at(_epoch("2026-11-26T23:30:00")) == 1600.0


@pytest.mark.parametrize(
    ("text", "watts"), [("1500W", 1500.0), ("1.5kW", 1500.0), ("2MW", 2e6), ("750", 750.0), (1200, 1200.0)]
)
def test_parse_watts(text: object, watts: float) -> None:
    assert parse_watts(text) == watts


@pytest.mark.parametrize("text", ["abc", "-5W", "1.5 parsecs", True, "inf"])
def test_parse_watts_refuses(text: object) -> None:
    with pytest.raises(ValueError, match="watts"):
        parse_watts(text)


def test_overrides_beat_the_file(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text('mode = "shadow"\n[cap]\nwatts = 1000\n')
    cfg = load_config(path, cap="1.5kW", mode=None, interval=5, learning__quantile=0.95)
    assert cfg.cap.at(0.0) == 1500.0 and cfg.mode == "shadow" and cfg.interval == 5
    assert cfg.learning.quantile == 0.95


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("[cap]\nwatts = 'lots'\n", "key 'cap.watts': expected watts"),
        ("[cap]\nwatts = 1000\nfile = 'x'\n", "key 'cap': give exactly one of watts, windows or file"),
        ("[cap]\nwatts = 1000\n[learning]\nquantile = 1.5\n", "key 'learning.quantile'"),
        ("[cap]\nwatts = 1000\n[learning]\npredictor = 'crystal-ball'\n", "unknown power prediction method"),
        ("[cap]\nwatts = 1000\ncolour = 'red'\n", "key 'cap.colour': Extra inputs are not permitted"),
        ("[cap]\nwindows = [{start = '25:00', end = '06:00', watts = 5}]\n", "expected 'HH:MM'"),
        ("[cap]\nwatts = 1000\n[power]\nidle_watts_per_node = 500\nmax_watts_per_node = 400\n", "must exceed"),
        ("[cap]\nwatts = 1000\n[backend]\nkind = 'rest'\n", "needs url"),
        ("mode = 'yolo'\n[cap]\nwatts = 1000\n", "key 'mode'"),
        ("[cap\n", "not valid TOML"),
        ("mode = 'shadow'\n", "key 'cap': missing"),
    ],
)
def test_errors_are_one_line_naming_file_and_key(tmp_path: Path, body: str, needle: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(body)
    with pytest.raises(AdvisorConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(path)) and needle in message, message


def test_missing_file() -> None:
    with pytest.raises(AdvisorConfigError, match="no such configuration file"):
        load_config(Path("/nonexistent/advisor.toml"))


def test_windows_lowest_wins_and_changes_compile() -> None:
    cfg = load_config(
        None,
        cap={
            "windows": [
                {"start": "22:00", "end": "06:00", "watts": "1kW"},
                {"start": "2026-11-26T10:00:00+00:00", "end": "2026-11-26T12:00:00+00:00", "watts": 500},
                {"start": "11:00", "end": "13:00", "watts": 800},
            ],
            "default": "2kW",
            "timezone": "UTC",
        },
    )
    cap = cfg.cap
    assert cap.at(_epoch("2026-11-26T03:00:00")) == 1000.0  # wrapped window
    assert cap.at(_epoch("2026-11-26T11:30:00")) == 500.0  # two windows: the lowest
    assert cap.at(_epoch("2026-11-27T11:30:00")) == 800.0  # the dated window is over
    assert cap.at(_epoch("2026-11-26T15:00:00")) == 2000.0  # default
    t0 = _epoch("2026-11-26T00:00:00")
    changes = [(datetime.fromtimestamp(t, UTC).strftime("%d %H:%M"), w) for t, w in cap.changes(t0, t0 + 86400)]
    assert changes == [
        ("26 06:00", 2000.0),
        ("26 10:00", 500.0),
        ("26 12:00", 800.0),
        ("26 13:00", 2000.0),
        ("26 22:00", 1000.0),
    ]
    schedule = cap.schedule(t0, t0 + 86400)
    assert schedule.cap_at(0) == 1000.0 and schedule.cap_at(10.5 * 3600) == 500.0


def test_cap_file_uses_the_simulator_reader_and_needs_an_origin(tmp_path: Path) -> None:
    caps = tmp_path / "caps.txt"
    caps.write_text("0;3000\n3600;1500\n")
    with pytest.raises(AdvisorConfigError, match="needs origin"):
        load_config(None, cap_file=caps)
    cfg = load_config(None, cap={"file": str(caps), "origin": 1_000_000.0})
    assert cfg.cap.at(1_000_100.0) == 3000.0 and cfg.cap.at(1_003_600.0) == 1500.0
    assert cfg.cap.changes(1_000_000.0, 1_010_000.0) == [(1_003_600.0, 1500.0)]
    bad = tmp_path / "bad.txt"
    bad.write_text("0;3000\n10;lots\n")
    with pytest.raises(AdvisorConfigError, match=r"bad.txt:2: non-numeric"):
        load_config(None, cap={"file": str(bad), "origin": 0})


def test_daily_windows_follow_daylight_saving(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Rome")
    cfg = load_config(None, cap={"windows": [{"start": "08:00", "end": "20:00", "watts": 1000}]})
    # 08:00 in Rome is 07:00 UTC in winter and 06:00 UTC in summer
    assert cfg.cap.at(_epoch("2026-01-15T07:30:00")) == 1000.0
    assert cfg.cap.at(_epoch("2026-07-15T06:30:00")) == 1000.0
    assert cfg.cap.at(_epoch("2026-07-15T18:30:00")) is None  # 20:30 in Rome
