"""The workload formats, each declared once: its name, file endings, how its content is recognised, its reader,
whether it reads wall-clock times (and so takes a time zone), and what a reject's ``line`` counts.

:func:`wattsched.workload.load.load_workload` tries the formats in registry order, first by file name, then —
for a name no format claims — by content (the order matters where they overlap: PM100 before the job table, both
``.parquet``; by content JSON (Batsim, then sacct), then sacct text, then SWF lines).
The CLI's help texts, the formats table of docs/formats.md (``python -m wattsched.workload.formats`` rewrites
it; a test fails when it falls behind) and the rejects' units come from here. docs/contributing.md, "Adding a
format", shows one registered.

Readers are imported when a file of theirs is read, so this module stays light.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wattsched.core.generated_docs import generated_block, rewrite_generated_block
from wattsched.core.record_units import register_record_unit

if TYPE_CHECKING:  # readers and their tables are imported when a file is read
    from wattsched.core.schema import ReadResult

__all__ = [
    "FORMATS",
    "ReadOptions",
    "WorkloadFormat",
    "format_help",
    "format_named",
    "formats_table",
    "reads_timezone",
    "register_format",
    "supported_suffixes",
]


@dataclass(frozen=True)
class ReadOptions:
    """What ``load_workload`` passes every reader; a reader ignores what does not apply to it (the CLI warns when
    a time zone is given to a format that reads none)."""

    machine_size: int | None = None
    strict: bool = False
    timezone: str | None = None
    columns: dict[str, str] | None = None  # a job table's column mapping


@dataclass(frozen=True)
class WorkloadFormat:
    """One workload format.

    ``claims_name(path, lower_name)``: the file is this format by its name (and, where a name is shared, a look
    inside: PM100's Parquet schema, a JSON's first job); ``claims_content(path, head)``: by its first bytes, for a
    name no format claims (``None``: never by content). ``read(path, options, hint)`` reads it (``hint`` is
    unused by the built-in readers). ``units``: each ``provenance.format`` value it produces and
    what a reject's ``line`` counts in it (``line``, ``row`` or ``record``); default: its name, lines."""

    name: str
    label: str
    short: str
    suffixes: tuple[str, ...]
    read: Callable[[Path, ReadOptions, Any], ReadResult]
    claims_name: Callable[[Path, str], bool]
    claims_content: Callable[[Path, str], bool] | None = None
    units: Mapping[str, str] | None = None
    timezone: bool = False
    table: bool = False
    read_from: str = ""  # the docs table's columns
    written: str = "–"
    size_from: str = "–"

    def produces(self) -> Mapping[str, str]:
        return self.units or {self.name: "line"}


FORMATS: list[WorkloadFormat] = []


def register_format(fmt: WorkloadFormat, *, before: str | None = None) -> WorkloadFormat:
    """Add a format (at the end, or before the format named ``before``: the order decides shared names)."""
    if any(f.name == fmt.name for f in FORMATS):
        raise ValueError(f"a workload format named {fmt.name!r} is already registered")
    at = next((i for i, f in enumerate(FORMATS) if f.name == before), len(FORMATS)) if before else len(FORMATS)
    FORMATS.insert(at, fmt)
    for produced, unit in fmt.produces().items():
        register_record_unit(produced, unit)
    return fmt


def format_named(provenance_format: str | None) -> WorkloadFormat | None:
    """The registered format that produces a ``provenance.format`` value (None for a generated workload)."""
    return next((f for f in FORMATS if provenance_format in f.produces()), None)


def reads_timezone(provenance_format: str | None) -> bool:
    """Whether files of that format have naive wall-clock times, read in ``--timezone``."""
    fmt = format_named(provenance_format)
    return fmt is not None and fmt.timezone


def supported_suffixes() -> tuple[str, ...]:
    """Every file ending some format claims, in registry order, each once."""
    return tuple(dict.fromkeys(s for f in FORMATS for s in f.suffixes))


def format_help(what: str = "Any readable workload") -> str:
    """The help text of an option that takes a workload file: every format's label, from the registry."""
    labels = list(dict.fromkeys(f.short for f in FORMATS))
    return f"{what}: {', '.join(labels[:-1])} or {labels[-1]} (docs/formats.md)."


def formats_table() -> str:
    """The table of docs/formats.md: each format, what it is read from, whether ``--timezone`` applies, what
    writes it and where its machine size comes from."""
    rows = [
        "| format | read from | `--timezone` | written by `data convert --output` | machine size declared by |",
        "|---|---|---|---|---|",
    ]
    for f in FORMATS:
        zone = "yes: its times are naive local times" if f.timezone else "–"
        rows.append(f"| {f.label} | {f.read_from} | {zone} | {f.written} | {f.size_from} |")
    return "\n".join(rows)


def _ends(*suffixes: str) -> Callable[[Path, str], bool]:
    return lambda path, name: name.endswith(suffixes)


# ------------------------------------------------------------------------------------------------ the readers
def _read_eurora(path: Path, o: ReadOptions, hint: Any) -> ReadResult:
    from wattsched.workload.eurora import read_eurora

    return read_eurora(path, machine_size=o.machine_size, strict=o.strict, timezone=o.timezone)


def _eurora_name(path: Path, name: str) -> bool:
    from wattsched.workload.eurora import EURORA_SUFFIX, is_eurora_dir

    return name.endswith(EURORA_SUFFIX) or is_eurora_dir(path)


def _read_swf(path: Path, o: ReadOptions, hint: Any) -> ReadResult:
    from wattsched.workload.swf import read_swf

    return read_swf(path, machine_size=o.machine_size, strict=o.strict)


def _swf_content(path: Path, head: str) -> bool:
    import re

    line = re.compile(r"^\s*(;|-?\d+(\.\d+)?(\s+-?\d+(\.\d+)?){17,})")
    lines = [ln for ln in head.splitlines()[:20] if ln.strip()]
    return bool(lines) and all(line.match(ln) for ln in lines)


def _pm100_name(path: Path, name: str) -> bool:
    if not name.endswith(".parquet"):
        return False
    from wattsched.workload.pm100 import is_pm100_parquet  # deferred: pyarrow (~30 ms)

    return is_pm100_parquet(path)


def _read_pm100(path: Path, o: ReadOptions, hint: Any) -> ReadResult:
    from wattsched.workload.pm100 import read_pm100

    if o.machine_size is None:
        return read_pm100(path, strict=o.strict)
    return read_pm100(path, machine_size=o.machine_size, strict=o.strict)


def _read_table(path: Path, o: ReadOptions, hint: Any) -> ReadResult:
    from wattsched.workload.tableio import read_table

    return read_table(path, machine_size=o.machine_size, strict=o.strict, columns=o.columns)


def _read_sacct(path: Path, o: ReadOptions, hint: Any) -> ReadResult:
    from wattsched.workload.sacct import read_sacct

    return read_sacct(path, machine_size=o.machine_size, strict=o.strict, timezone=o.timezone)


def _sacct_content(path: Path, head: str) -> bool:
    from wattsched.workload.sacct import is_sacct_file

    return is_sacct_file(path)


def _json_kind(path: Path) -> str:
    """``batsim`` or ``sacct`` for a JSON file, computed once per file version: the Batsim and sacct records both
    ask, and telling them apart may parse the whole document."""
    st = path.stat()
    return _json_kind_of(str(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _json_kind_of(path: str, mtime_ns: int, size: int) -> str:
    from wattsched.workload.load import detect_json

    return detect_json(Path(path))[0]


def _json_name(kind: str) -> Callable[[Path, str], bool]:
    """A ``.json`` file of ``kind`` (``batsim`` or ``sacct``), told apart by content (``load.detect_json``)."""

    def claims(path: Path, name: str) -> bool:
        if not name.endswith((".json", ".json.gz")):
            return False
        from wattsched.workload.load import check_file

        check_file(path)
        return _json_kind(path) == kind

    return claims


def _json_content(kind: str) -> Callable[[Path, str], bool]:
    """A file of another name whose first bytes are JSON, of ``kind``."""

    def claims(path: Path, head: str) -> bool:
        if not head.lstrip().startswith(("{", "[")):
            return False
        return _json_kind(path) == kind

    return claims


def _read_batsim(path: Path, o: ReadOptions, hint: Any) -> ReadResult:
    from wattsched.workload.batsim import read_batsim

    return read_batsim(path, machine_size=o.machine_size, strict=o.strict)


for _fmt in (
    WorkloadFormat(
        "eurora",
        "Eurora instances",
        "Eurora",
        (".log_crypt",),
        _read_eurora,
        _eurora_name,
        timezone=True,
        read_from="`.log_crypt`, or a folder of them",
        size_from="the Eurora preset",
    ),
    WorkloadFormat(
        "pm100",
        "PM100 job table",
        "PM100",
        (".parquet",),
        _read_pm100,
        _pm100_name,
        units={"pm100": "row"},
        read_from="`.parquet` with `node_power_consumption` and `num_nodes_alloc`",
        size_from="980 nodes",
    ),
    WorkloadFormat(
        "table",
        "job table",
        "job table (.parquet, .csv)",
        (".parquet", ".csv", ".csv.gz"),
        _read_table,
        _ends(".parquet", ".csv", ".csv.gz"),
        units={"parquet": "row", "csv": "line"},
        table=True,
        read_from="`.parquet`, `.csv`, `.csv.gz` (any columns, with `--columns`)",
        written="`.parquet`, `.csv`, `.csv.gz`",
        size_from="Parquet metadata written by wattsched",
    ),
    WorkloadFormat(
        "batsim",
        "Batsim v4 workload",
        "Batsim JSON",
        (".json", ".json.gz"),
        _read_batsim,
        _json_name("batsim"),
        _json_content("batsim"),
        units={"batsim": "record"},
        read_from="`.json` (by content: `nb_res`, or jobs with `subtime`); any ending by content",
        written="`.json`",
        size_from="`nb_res`",
    ),
    WorkloadFormat(
        "sacct-json",
        "Slurm `sacct --json`",
        "sacct JSON",
        (".json", ".json.gz"),
        _read_sacct,
        _json_name("sacct"),
        _json_content("sacct"),
        units={"sacct-json": "record"},  # its times are epoch seconds: no time zone
        read_from="`.json` (by content: jobs with `job_id` and `time`); any ending by content",
        size_from="– (give `--machine-size` or `--platform`)",
    ),
    WorkloadFormat(
        "sacct",
        "Slurm `sacct -P` text",
        "sacct text",
        (".sacct", ".sacct.gz", ".psv", ".psv.gz"),
        _read_sacct,
        _ends(".sacct", ".sacct.gz", ".psv", ".psv.gz"),
        _sacct_content,
        timezone=True,
        read_from="`.sacct`, `.psv` (optionally `.gz`); `.txt` and other endings by content",
    ),
    WorkloadFormat(
        "swf",
        "SWF (Standard Workload Format)",
        "SWF",
        (".swf", ".swf.gz"),
        _read_swf,
        _ends(".swf", ".swf.gz"),
        _swf_content,
        read_from="`.swf`, `.swf.gz`; a file with another ending whose lines are SWF",
        written="`.swf`, `.swf.gz`",
        size_from="the header's `MaxProcs`/`MaxNodes`",
    ),
):
    register_format(_fmt)


def docs_table_block(page: Path) -> str:
    """The table now between the ``formats`` markers of ``page`` (for the test that it is up to date)."""
    return generated_block(page, "formats")


if __name__ == "__main__":  # python -m wattsched.workload.formats: rewrite docs/formats.md's table
    changed = rewrite_generated_block(Path("docs/formats.md"), "formats", formats_table())
    print("docs/formats.md:", "table rewritten" if changed else "table up to date")
