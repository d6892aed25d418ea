"""Every command's --help in plain words, the option vocabulary of docs/cli.md, enums and shell completion."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from wattsched.cli import app
from wattsched.cli.choices import complete_check, complete_policy, policy_name, power_check_name
from wattsched.cli.vocabulary import OPTION_MEANINGS, option_names, option_table

runner = CliRunner()
ROOT = typer.main.get_command(app)
REPO = Path(__file__).resolve().parents[1]


def _commands(command=ROOT, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        found += _commands(sub, (*path, name))
    return found


COMMANDS = _commands()

#: What --help must not show: typer's type metavars, braces around arguments, reStructuredText markup, the
#: internal tags of the decisions register.
NOT_IN_HELP = re.compile(r"<(bool|str|int|float|path|file|text)>|\{[a-z_]+\}|``|:(class|func|mod|meth|data):|\[AMBIG")


def test_the_tree_is_walked() -> None:
    assert ("simulate",) in COMMANDS and ("campaign", "report") in COMMANDS and len(COMMANDS) > 25


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "root")
@pytest.mark.parametrize("columns", ["80", "200"])
def test_help_is_plain(path: tuple[str, ...], columns: str) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    bad = NOT_IN_HELP.findall(result.output)
    assert not bad, f"wattsched {' '.join(path)} --help shows {bad}"
    assert "Usage:" in result.output


def test_enum_choices_are_listed_in_help() -> None:
    result = runner.invoke(app, ["simulate", "--help"], env={"COLUMNS": "200"})
    for shown in ("dynamic|total", "requeue|prestart|drop", "nodes|nodes+power", "stop|skip", "real|predicted|naive"):
        assert shown in result.output
    result = runner.invoke(app, ["eamc", "table", "--help"], env={"COLUMNS": "200"})
    assert "paper|code" in result.output and "euclidean|code_linear" in result.output


def _params(command=ROOT):
    yield from command.params
    for sub in getattr(command, "commands", {}).values():
        yield from _params(sub)


def test_every_choice_is_case_insensitive() -> None:
    choices = [p for p in _params() if p.type_descriptor.is_choice]
    assert len(choices) >= 15
    assert [p.name for p in choices if p.type_descriptor.case_sensitive] == []


def test_every_option_has_one_meaning_and_the_page_matches() -> None:
    names = option_names(ROOT)
    assert sorted(set(names) - set(OPTION_MEANINGS)) == [], "options without a meaning in wattsched.cli.vocabulary"
    assert sorted(set(OPTION_MEANINGS) - set(names)) == [], "meanings of options that no longer exist"
    page = (REPO / "docs" / "cli.md").read_text()
    table = page.split("<!-- options:begin -->\n", 1)[1].split("<!-- options:end -->", 1)[0]
    assert table == option_table(ROOT), "docs/cli.md's table is behind: regenerate it with option_table"
    assert "cli.md" in (REPO / "mkdocs.yml").read_text()


def test_the_vocabulary_of_issue_16() -> None:
    names = option_names(ROOT)
    assert "wattsched dataset build" not in names["--jobs"] and "wattsched dataset build" in names["--job-table"]
    assert names["--window"] == ["wattsched simulate"]
    assert "wattsched predict power" in names["--history-window"]
    # --workers: one default, the CPU count, in every command that has it
    for path in [tuple(c.split()[1:]) for c in names["--workers"]]:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert "default: the CPU count" in result.output, path


def test_choices_and_names_in_any_case(tmp_path) -> None:
    assert policy_name("EASY-PC") == "easy-pc" and policy_name("Easy") == "easy"
    assert policy_name("my.module:MyPolicy") == "my.module:MyPolicy"  # left to the policy loader
    assert policy_name("no-such-policy") == "no-such-policy"  # refused, with the list, where it is used
    assert power_check_name("Gaussian95") == "gaussian95" and power_check_name("QUANTILE:0.9") == "quantile:0.9"
    workload = tmp_path / "w.swf"
    made = runner.invoke(app, ["generate", "lublin", "--jobs", "50", "--machine-size", "16", "--output", str(workload)])
    assert made.exit_code == 0, made.output
    result = runner.invoke(
        app, ["simulate", "--workload", str(workload), "--policy", "EASY", "--format", "CSV", "--output", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "jobs.csv").exists()


def test_completion_from_the_registries() -> None:
    assert {"easy-pc", "easy-saf-pc", "easy-sjf"} <= set(complete_policy("EASY-"))
    assert complete_check("gauss") == ["gaussian68", "gaussian95", "gaussian99"]


def test_shell_completion_end_to_end() -> None:
    """What bash asks the installed script (the protocol of `wattsched --install-completion`)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "_WATTSCHED_COMPLETE": "complete_bash",
        "COMP_WORDS": "wattsched simulate --cap-basis ",
        "COMP_CWORD": "3",
    }
    code = "import sys; sys.argv[0] = 'wattsched'; from wattsched.cli import app; app(prog_name='wattsched')"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["dynamic", "total"], out.stderr
    env["COMP_WORDS"], env["COMP_CWORD"] = "wattsched simulate --policy knapsack-e", "3"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["knapsack-exact-wait", "knapsack-exact-stretch"], out.stderr
