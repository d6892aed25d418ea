"""Malformed-input corpus, part 6, through the command line end to end (tests/malformed_harness.py's
:func:`check_cli`): JSON, TOML and YAML nested 10^5 deep wherever a user's file is parsed (issue 31, item 8;
``core.structured_input``), a damaged campaign folder (its ``manifest.json`` and result files), and the inputs that
left nothing to simulate or could not be decoded without saying which file (item 10). Each case must give one
``error:`` line naming the file and why: never a traceback, a crash, a hang or a "(run with --debug)"."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from malformed_harness import check_cli, deadline, text_file
from wattsched.cli import app
from wattsched.core.structured_input import MAX_DEPTH, json_depth, load_json, load_toml, load_yaml, toml_depth

#: Nesting of the deep inputs: what issue 31 reported (10^5 levels, 200 kB).
DEEP = 10**5
ARRAYS = "[" * DEEP + "]" * DEEP
runner = CliRunner()


def write(folder: Path, name: str, text: str | bytes) -> Path:
    """``text`` saved as ``folder/name`` (the harness's file writer, called at once)."""
    return text_file(name, text)(folder)


# ------------------------------------------------------------------------------------------ item 8: deep inputs

#: (case name, file name, its text, the command line given that path): every reader of a user's JSON/TOML/YAML.
DEEP_CASES: list[tuple[str, str, str, Callable[[Path, Path], list[str]]]] = [
    (
        "batsim_json",
        "batsim.json",
        '{"nb_res": 4, "jobs": [{"id": 1, "subtime": 0, "res": 1, "walltime": 10, "profile": "p", "x": '
        + ARRAYS
        + '}], "profiles": {}}',
        lambda p, d: ["data", "convert", "--workload", str(p), "--output", str(d / "o.parquet")],
    ),
    (
        "sacct_json",
        "sacct.json",
        '{"jobs": [{"job_id": 1, "x": ' + ARRAYS + "}]}",
        lambda p, d: ["data", "convert", "--workload", str(p), "--output", str(d / "o.parquet")],
    ),
    (  # neither key in the first megabyte: the whole document is parsed to tell (load.detect_json)
        "undecided_json",
        "jobs.json",
        '{"jobs": ' + ARRAYS + "}",
        lambda p, d: ["simulate", "--workload", str(p), "--policy", "fcfs", "--output", str(d / "run")],
    ),
    (  # the advisor's offline what-if reads a recorded sacct history
        "advise_replay",
        "history.json",
        '{"jobs": [{"job_id": 1, "x": ' + ARRAYS + "}]}",
        lambda p, d: ["advise", "--cap", "1000W", "--replay", str(p)],
    ),
    (
        "campaign_toml",
        "campaign.toml",
        'kind = "power"\nx = ' + ARRAYS + "\n",
        lambda p, d: ["campaign", "run", str(p), "--output", str(d / "c")],
    ),
    (
        "campaign_toml_inline_tables",
        "tables.toml",
        'kind = "power"\nx = ' + "{a = " * DEEP + "1" + "}" * DEEP + "\n",
        lambda p, d: ["campaign", "run", str(p), "--output", str(d / "c")],
    ),
    (  # 2,000 parts, not 10^5: tomllib's memory grows with the square of a dotted key (10^5 parts: tens of GB)
        "campaign_toml_dotted_key",
        "dotted.toml",
        'kind = "power"\n' + ".".join(["a"] * 2000) + " = 1\n",
        lambda p, d: ["campaign", "run", str(p), "--output", str(d / "c")],
    ),
    (
        "campaign_json",
        "campaign.json",
        '{"kind": "power", "x": ' + ARRAYS + "}",
        lambda p, d: ["campaign", "run", str(p), "--output", str(d / "c")],
    ),
    (
        "campaign_yaml_flow",
        "campaign.yaml",
        "kind: power\nx: " + ARRAYS + "\n",
        lambda p, d: ["campaign", "run", str(p), "--output", str(d / "c")],
    ),
    (  # YAML nests without a bracket: no pre-scan sees it, the parser's RecursionError is caught
        "campaign_yaml_block",
        "block.yml",
        "kind: power\nx:\n  " + "- " * DEEP + "1\n",
        lambda p, d: ["campaign", "run", str(p), "--output", str(d / "c")],
    ),
    (
        "advisor_toml",
        "advisor.toml",
        "cap = 1000\nx = " + ARRAYS + "\n",
        lambda p, d: ["advise", "--config", str(p), "--once"],
    ),
    (
        "platform_toml",
        "machine.toml",
        'kind = "power"\nname = "m"\nx = ' + ARRAYS + "\n",
        lambda p, d: ["platforms", "check", str(p)],
    ),
    (
        "platform_yaml_for_simulate",
        "machine.yaml",
        "kind: power\nname: m\nx: " + ARRAYS + "\n",
        lambda p, d: [
            "simulate",
            "--workload",
            str(d / "small.swf"),
            "--policy",
            "easy-pc",
            "--platform",
            str(p),
            "--power-check",
            "max",
            "--cap",
            "0.5",
            "--output",
            str(d / "run"),
        ],
    ),
    (
        "simulate_config_toml",
        "options.toml",
        "x = " + ARRAYS + "\n",
        lambda p, d: [
            "simulate",
            "--config",
            str(p),
            "--workload",
            str(d / "small.swf"),
            "--policy",
            "fcfs",
            "--output",
            str(d / "run"),
        ],
    ),
    (
        "columns_toml",
        "columns.toml",
        "[columns]\nx = " + ARRAYS + "\n",
        lambda p, d: [
            "data",
            "convert",
            "--workload",
            str(d / "t.csv"),
            "--columns",
            str(p),
            "--output",
            str(d / "o.parquet"),
        ],
    ),
    (
        "report_run_summary",
        "summary.json",
        '{"run": ' + ARRAYS + "}",
        lambda p, d: ["report", str(p.parent)],
    ),
]


@pytest.mark.parametrize("case", DEEP_CASES, ids=lambda c: c[0])
def test_deep_input_is_refused_in_one_line(case: tuple[str, str, str, Callable[[Path, Path], list[str]]],
                                           tmp_path: Path) -> None:  # fmt: skip
    _, name, text, command = case
    write(tmp_path, "small.swf", "; MaxProcs: 8\n1 0 -1 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n")
    write(tmp_path, "t.csv", "job_id,submit_time,walltime,runtime,size\n1,0,100,50,2\n")
    folder = tmp_path / "in"
    folder.mkdir()
    path = write(folder, name, text)
    line = check_cli(command(path, tmp_path), name, "nested")
    assert f"limit of {MAX_DEPTH}" in line


def test_deep_parquet_metadata_is_ignored_like_any_bad_blob(tmp_path: Path) -> None:
    """A job table's provenance (schema metadata) nested 10^5 deep is dropped as an unreadable one is; the jobs
    are read."""
    table = pa.table({"job_id": [1], "submit_time": [0.0], "walltime": [100.0], "runtime": [50.0], "size": [2]})
    table = table.replace_schema_metadata({b"wattsched.provenance": ('{"x": ' + ARRAYS + "}").encode()})
    pq.write_table(table, tmp_path / "meta.parquet")
    with deadline():
        result = runner.invoke(
            app, ["data", "convert", "--workload", str(tmp_path / "meta.parquet"), "--output", str(tmp_path / "o.csv")]
        )
    assert result.exit_code == 0, result.output
    assert pl.read_csv(tmp_path / "o.csv")["job_id"].to_list() == [1]


def test_deep_json_cannot_crash_the_process_under_a_raised_recursion_limit(tmp_path: Path) -> None:
    """Python's C JSON scanner recurses on the C stack: with the recursion limit raised (as some libraries do) a
    10^5-deep document crashed the process with SIGSEGV, no message at all. The pre-scan refuses it before."""
    path = write(tmp_path, "sacct.json", '{"jobs": [{"job_id": 1, "x": ' + ARRAYS + "}]}")
    code = (
        "import sys; sys.setrecursionlimit(10**6)\n"
        "from typer.testing import CliRunner\nfrom wattsched.cli import app\n"
        f"r = CliRunner().invoke(app, ['data', 'convert', '--workload', {str(path)!r}, '--output', "
        f"{str(tmp_path / 'o.parquet')!r}])\n"
        "print(r.exit_code); print(r.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"the process died ({done.returncode}): {done.stderr[-500:]}"
    exit_code, message = done.stdout.split("\n", 1)
    assert int(exit_code) != 0 and "sacct.json: nested 100,003 levels deep" in message, done.stdout


def test_limit_is_exact_and_legitimate_depths_pass() -> None:
    """Exactly MAX_DEPTH levels parse, one more is refused, in each format; brackets in strings, escapes and
    comments do not count."""
    for depth, ok in ((MAX_DEPTH, True), (MAX_DEPTH + 1, False)):
        texts = {
            load_json: "[" * depth + "]" * depth,
            load_toml: "a = " + "[" * (depth - 1) + "]" * (depth - 1),  # the top table is a level
            load_yaml: "[" * depth + "]" * depth,
        }
        for load, text in texts.items():
            if ok:
                load(text, "f")
            else:
                with pytest.raises(ValueError, match=r"^f: nested"):
                    load(text, "f")
    tricky = json.dumps({"a": "[" * 300, "b": ['"]]]}\\' * 50, {"c": "{{{{" * 40}], "d": [[[]]]})
    assert json_depth(tricky) == 4 and load_json(tricky, "f")["d"] == [[[]]]
    assert toml_depth("a = \"[[[[[[[[\"  # [[[[[[[[[\nb = '''\n[[[[[[[\n'''\nc = [[1]]\n[x.y.z]\n") == 3


def test_yaml_alias_inside_its_own_anchor_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^loop\.yaml: nested deeper than"):
        load_yaml("a: &a [*a]\n", "loop.yaml")


def test_real_sacct_output_nests_9(tmp_path: Path) -> None:
    """The deepest file we read (sacct --json of Slurm 22.05), as the module docstring says."""
    text = (Path(__file__).parent / "data" / "slurm-22.05" / "sacct.json").read_text()
    assert json_depth(text) == 9


# --------------------------------------------------------------------------- item 8: the campaign store's files


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny queue campaign run to the end (2 runs, a few seconds)."""
    folder = tmp_path_factory.mktemp("campaign")
    spec = write(folder, "q.toml", 'kind = "queue"\nname = "q"\npolicies = ["fcfs", "easy"]\n[[workloads]]\n'
                 'name = "l"\ngenerate = { model = "lublin", jobs = 200, machine_size = 64, seed = 5 }\n')  # fmt: skip
    result = runner.invoke(app, ["campaign", "run", str(spec), "--output", str(folder / "c"), "--workers", "1"])
    assert result.exit_code == 0, result.output
    return folder


DAMAGED = "it is not a campaign folder of this version or it was damaged"
MANIFEST_CASES = [
    ("empty", b"", "is not valid JSON (line 1, column 1): Expecting value"),
    ("truncated", b'{"kind": "queue", "spec": {', "is not valid JSON (line 1, column 28)"),
    ("list", b"[1, 2]", "it holds a list, not an object"),
    ("no_spec", b'{"kind": "queue", "runs": []}', "key 'spec' is missing"),
    ("no_runs", b'{"kind": "queue", "spec": {}}', "key 'runs' is missing"),
    ("runs_number", b'{"spec": {}, "runs": 5}', "key 'runs' is a number, not a list"),
    ("run_not_object", b'{"spec": {}, "runs": ["x"]}', "runs[0] is a string, not an object"),
    ("run_without_id", b'{"spec": {}, "runs": [{"x": 1}]}', "runs[0] has no text 'id'"),
    ("kind_number", b'{"kind": 7, "spec": {}, "runs": []}', "key 'kind' is a number, not a string"),
    ("kind_unknown", b'{"kind": "quantum", "spec": {}, "runs": []}', "unknown campaign kind 'quantum'"),
    ("latin1", b'{"kind": "\xe9"}', "is not UTF-8 text (byte 10)"),
    ("deep", ARRAYS.encode(), "nested 100,000 levels deep"),
]


@pytest.mark.parametrize("case", MANIFEST_CASES, ids=lambda c: c[0])
@pytest.mark.parametrize("command", ["status", "results", "report"])
def test_damaged_manifest_is_one_line_naming_it(case: tuple[str, bytes, str], command: str, tmp_path: Path) -> None:
    _, content, why = case
    folder = tmp_path / "c"
    (folder / "results").mkdir(parents=True)
    (folder / "manifest.json").write_bytes(content)
    extra = ["--output", str(tmp_path / "r.parquet")] if command == "results" else []
    line = check_cli(["campaign", command, str(folder), *extra], "c/manifest.json", why)
    assert case[0] == "kind_unknown" or DAMAGED in line


def test_damaged_manifest_stops_a_resumed_run(campaign: Path, tmp_path: Path) -> None:
    folder = tmp_path / "c"
    (folder / "results").mkdir(parents=True)
    (folder / "manifest.json").write_text('{"kind": "queue", "spec": {"name": "q"}}')
    check_cli(["campaign", "run", str(campaign / "q.toml"), "--output", str(folder)], "manifest.json", "'runs'")


@pytest.mark.parametrize("content", ["", "[1]", '{"id": "another-run"}', ARRAYS], ids=["empty", "list", "id", "deep"])
def test_damaged_result_file_is_a_run_not_done(campaign: Path, content: str, tmp_path: Path) -> None:
    """The store's rule: a result file exists whole or its run did not finish; a damaged one (not JSON, not an
    object, another run's id, nested 10^5 deep) is a run to redo, for every reader alike, never a traceback."""
    import shutil

    folder = tmp_path / "c"
    shutil.copytree(campaign / "c", folder)
    damaged = sorted((folder / "results").glob("*.json"))[0]
    damaged.write_text(content)
    with deadline():
        status = runner.invoke(app, ["--json", "campaign", "status", str(folder)])
    with deadline():
        results = runner.invoke(app, ["campaign", "results", str(folder), "--output", str(tmp_path / "r.csv")])
    with deadline(60):  # a run of the campaign (in this process), longer on a loaded machine
        rerun = runner.invoke(app, ["campaign", "run", str(campaign / "q.toml"), "--output", str(folder),
                                    "--workers", "1"])  # fmt: skip
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["done"] == 1
    assert results.exit_code == 0 and pl.read_csv(tmp_path / "r.csv").height == 1, results.output
    assert rerun.exit_code == 0 and "1 ran now" in rerun.output, rerun.output
    assert json.loads(damaged.read_text())["id"] == damaged.stem


# ------------------------------------------------------------------- item 10: nothing to run, undecodable files


@pytest.fixture(scope="module")
def m100(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("m100") / "m.parquet"
    result = runner.invoke(app, ["generate", "m100", "--jobs", "60", "--seed", "1", "--output", str(path)])
    assert result.exit_code == 0, result.output
    return path


def simulate(workload: Path, tmp_path: Path, *power: str) -> list[str]:
    policy = "easy-pc" if power else "fcfs"
    return ["simulate", "--workload", str(workload), "--policy", policy, "--output", str(tmp_path / "run"), *power]


def test_sacct_header_only_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "header.psv", "JobIDRaw|Submit|Start|End|Timelimit|NNodes|State\n")
    check_cli([*simulate(path, tmp_path), "--machine-size", "4"], "header.psv", "no jobs to simulate")


def test_batsim_without_jobs_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "none.json", '{"nb_res": 4, "jobs": [], "profiles": {}}')
    check_cli(simulate(path, tmp_path), "none.json", "no jobs to simulate: it holds no job record")


def test_tiny_dynamic_range_names_the_platform_file(m100: Path, tmp_path: Path) -> None:
    """max_node_watts 10^-9 W above idle: every job's estimate is above the whole dynamic range, so no cap derived
    from it lets one start. The cause is the platform, not the workload: its file is named."""
    platform = write(tmp_path, "tiny.toml", 'kind = "power"\nname = "tiny"\nnodes = 980\nidle_watts = 100.0\n'
                     "max_node_watts = 100.000000001\n")  # fmt: skip
    power = ("--platform", str(platform), "--power-check", "max", "--cap", "0.5")
    check_cli(simulate(m100, tmp_path, *power), "tiny.toml", "the platform's dynamic range is too small")


def test_cap_below_every_job_names_the_workload(m100: Path, tmp_path: Path) -> None:
    power = ("--platform", "marconi100", "--power-check", "max", "--cap", "1W")
    check_cli(simulate(m100, tmp_path, *power), "m.parquet", "none of its 60 jobs could ever start")


CAPS = "0;500000\n3600;400000\n"


def test_latin1_comment_in_a_cap_file_is_read(m100: Path, tmp_path: Path) -> None:
    """A comment saved in Latin-1 ("# été") does not stop the run: values are ASCII in every 8-bit encoding."""
    cap_file = write(tmp_path, "caps.csv", b"# caps de l'\xe9t\xe9\n" + CAPS.encode())
    power = ("--platform", "marconi100", "--power-check", "max", "--cap-file", str(cap_file))
    with deadline(60):  # a whole power run, longer on a loaded machine
        result = runner.invoke(app, simulate(m100, tmp_path, *power))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"0;500000\n3600;4\xe900000\n", "caps.csv:2: non-numeric field"),
        (CAPS.encode("utf-16"), "caps.csv: not a text cap file (a NUL byte at byte 3"),
    ],
    ids=["latin1_in_a_value", "utf16"],
)
def test_undecodable_cap_file_names_the_file(m100: Path, content: bytes, why: str, tmp_path: Path) -> None:
    cap_file = write(tmp_path, "caps.csv", content)
    power = ("--platform", "marconi100", "--power-check", "max", "--cap-file", str(cap_file))
    check_cli(simulate(m100, tmp_path, *power), "caps.csv", why)
