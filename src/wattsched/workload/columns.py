"""Column mappings: read any job table whose columns are not the canonical ones.

A mapping gives each canonical column (``submit_time``, ``walltime``, ``runtime``, ``size``, ``user_id``, …) the
source column it comes from, or an expression over the source columns::

    --columns runtime=run_time,size=num_nodes_alloc,walltime="time_limit * 60"
    --columns m100.toml              # a file: [columns] runtime = "run_time" …, or the keys at top level

A source that names a column of the table is that column (whatever its spelling); anything else is an SQL expression
as polars parses it (``pl.sql_expr``: arithmetic, ``CASE``, ``COALESCE``, ``TIMESTAMP(text)``; inside an expression,
a name that is not a plain identifier or is an SQL keyword is quoted: ``"End" - "Start"``), so a duration can be
derived (``runtime = "end_time - start_time"``) without a preset per site: a preset would fit one table, an
expression fits any. Datetimes and durations become seconds as in every table (``workload/tableio.py``). Columns the
mapping does not name are kept as they are, so an unmapped canonical column still counts.

The mapping applies to job tables (Parquet, CSV) only: SWF, sacct, Batsim, PM100 and Eurora have fixed layouts.
:func:`wattsched.workload.load.load_workload` passes it to the table reader, the one place it is applied.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from wattsched.core.schema import WorkloadError
from wattsched.core.structured_input import load_toml

__all__ = ["ColumnMap", "apply_columns", "describe_columns", "parse_columns"]

#: Canonical column → source column name or SQL expression over the source columns.
ColumnMap = dict[str, str]

_TARGET = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME_LIKE = re.compile(r"^[\w .:/-]+$")
# an item boundary: a comma followed by `name=` (so commas inside an expression, e.g. COALESCE(a, b), stay)
_ITEM = re.compile(r",\s*(?=[A-Za-z_][A-Za-z0-9_]*\s*=(?!=))")


def parse_columns(spec: str | Mapping[str, str] | None, *, option: str = "--columns") -> ColumnMap | None:
    """The mapping of ``spec``: ``target=source,...`` text, a path to a TOML file (its ``[columns]`` table, or
    its top-level keys), or a mapping already (a campaign spec's ``columns = {...}``); None stays None.

    A malformed spec is a :class:`WorkloadError` naming the option (or the file) and the item."""
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        return _checked(dict(spec), option)
    text = spec.strip()
    if not text:
        raise WorkloadError(f"{option}: empty; give target=source pairs or a TOML file")
    if "=" not in text:
        return _from_file(Path(text), option)
    mapping: ColumnMap = {}
    for item in _ITEM.split(text):
        target, sep, source = item.partition("=")
        if not sep or not source.strip():
            raise WorkloadError(f"{option}: item {item.strip()!r} is not target=source")
        target = target.strip()
        if target in mapping:
            raise WorkloadError(f"{option}: column {target!r} is mapped twice")
        mapping[target] = _unquote(source.strip())
    return _checked(mapping, option)


def _unquote(text: str) -> str:
    """``"time_limit * 60"`` as typed in a shell that kept the quotes → the expression; a lone quoted name such
    as ``"run time"`` stays quoted (SQL's quoted identifier)."""
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1]
    return text


def _from_file(path: Path, option: str) -> ColumnMap:
    if not path.exists():
        raise WorkloadError(f"{option}: {path} does not exist (give target=source pairs or a TOML file)")
    try:
        doc = load_toml(path.read_text(), path, error=WorkloadError)  # nested at most MAX_DEPTH
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise WorkloadError(f"{path}: not a readable TOML column mapping: {exc}") from exc
    table = doc.get("columns", doc)
    if not isinstance(table, dict):
        raise WorkloadError(f"{path}: 'columns' must be a table of target = \"source\" pairs")
    return _checked(table, str(path))


def _checked(mapping: Mapping[str, object], where: str) -> ColumnMap:
    if not mapping:
        raise WorkloadError(f"{where}: the column mapping is empty")
    out: ColumnMap = {}
    for target, source in mapping.items():
        if not _TARGET.match(str(target)):
            raise WorkloadError(f"{where}: target column {target!r} is not a plain name (letters, digits, _)")
        if not isinstance(source, str) or not source.strip():
            raise WorkloadError(f"{where}: column {target!r} must map to a source column or an expression (text)")
        try:
            _expr(source)
        except pl.exceptions.PolarsError as exc:
            if _NAME_LIKE.match(source.strip()):  # maybe a column named "run time": the table will tell
                out[str(target)] = source.strip()
                continue
            raise WorkloadError(f"{where}: {target} = {source!r} is not a column or SQL expression: {exc}") from exc
        out[str(target)] = source.strip()
    return out


def _expr(text: str, columns: Sequence[str] = ()) -> pl.Expr:
    """A source column by its name (a plain name, or any column of the table: ``Limit`` or ``End`` are SQL
    keywords, ``run time`` has a space), else the SQL expression."""
    if text in columns or _TARGET.match(text):
        return pl.col(text)
    return pl.sql_expr(text)


def apply_columns(frame: pl.DataFrame, mapping: ColumnMap, source: str) -> pl.DataFrame:
    """``frame`` with each mapped column computed from its source (replacing a column of that name); a source
    column that does not exist or an expression that fails is a :class:`WorkloadError` naming the file, the
    mapping item and the columns found."""
    exprs = [_expr(text, frame.columns).alias(target) for target, text in mapping.items()]
    try:
        return frame.with_columns(exprs)
    except pl.exceptions.ColumnNotFoundError as exc:
        missing = [t for t, e in mapping.items() if not _evaluates(frame, e)]
        items = ", ".join(f"{t} = {mapping[t]!r}" for t in missing) or str(exc).splitlines()[0]
        raise WorkloadError(
            f"{source}: column mapping {items} names a column the table lacks; found: {frame.columns}"
        ) from exc
    except pl.exceptions.PolarsError as exc:
        bad = [t for t, e in mapping.items() if not _evaluates(frame, e)]
        items = ", ".join(f"{t} = {mapping[t]!r}" for t in bad) or "the mapping"
        raise WorkloadError(f"{source}: column mapping {items} cannot be computed: {str(exc).splitlines()[0]}") from exc


def _evaluates(frame: pl.DataFrame, text: str) -> bool:
    try:
        frame.head(1).select(_expr(text, frame.columns))
    except pl.exceptions.PolarsError:
        return False
    return True


def describe_columns(mapping: ColumnMap) -> str:
    """The mapping as a provenance convention line."""
    return "columns mapped: " + ", ".join(f"{t} = {s}" for t, s in mapping.items())
