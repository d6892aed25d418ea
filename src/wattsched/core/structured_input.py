"""JSON, TOML and YAML from files a user gives, parsed only when they nest no deeper than :data:`MAX_DEPTH`.

Every parser we use descends one level of nesting per call. Fed 10^5 nested brackets, each gave a traceback
instead of an answer, in 9 places (issue 31, item 8), and measured (Python 3.11) it is worse than that:

* ``json.loads`` (C scanner) raises ``RecursionError`` at Python's recursion limit, and *crashes the process*
  (SIGSEGV, no message) when a library has raised that limit (``sys.setrecursionlimit(10**6)``): the C stack
  runs out first. Catching the error is therefore not enough for JSON: the depth is measured *before* the parser
  sees the text, by a pre-scan that skips strings (:func:`json_depth`).
* ``tomllib`` (pure Python) raises ``RecursionError`` on deep inline arrays or tables; a dotted key of 10^5 parts
  (``a.a.a…= 1``, 200 kB) takes memory quadratic in its length (4,000 parts: 75 MB; 10^5: tens of GB, the
  machine's). The pre-scan (:func:`toml_depth`) counts both, with strings and comments skipped.
* ``yaml.safe_load`` (pure Python) raises ``RecursionError`` in its composer; YAML nests without brackets
  (``- - - 1``), so no bracket count bounds it. Pure-Python recursion uses no C stack in Python 3.11, so there the
  error is caught and re-raised naming the file; the parsed value is then measured (:func:`value_depth`), which
  also bounds what a parse let through (a TOML table header of many parts, an alias inside its own anchor).

The limit, 100 levels: the deepest file we read is Slurm's ``sacct --json`` / slurmrestd output, 9 levels
(tests/data/slurm-22.05, measured); the shipped platform, advisor and claims files nest 5 at most. 100 leaves
ten times that for future formats (Slurm adds levels from one version to the next), and every parser and what
consumes its result (pydantic, ``json.dumps``, ``repr``) was measured to handle 100 levels with 500 frames
already on the stack. A refusal is one line naming the file and the depth; the caller chooses the exception class
(``error=``) so each reader keeps its own.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "TooDeepError",
    "json_depth",
    "load_json",
    "load_toml",
    "load_yaml",
    "toml_depth",
    "value_depth",
]

#: Deepest nesting (arrays/lists and objects/tables within each other) a JSON, TOML or YAML input may have; see
#: the module docstring for why 100.
MAX_DEPTH = 100


class TooDeepError(ValueError):
    """An input nested deeper than :data:`MAX_DEPTH` (the default ``error`` of the loaders)."""


ErrorClass = Callable[[str], Exception]

# The JSON pre-scan works on bytes with C-speed operations only (translate, replace, split): a Python loop over a
# 100 MB sacct file would cost more than parsing it. Escapes go first (``\\"`` is not a quote), then everything
# but quotes and brackets; brackets become ( and ).
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_KEEP = b'"[]{}'
_PARENS = bytes.maketrans(b"[]{}", b"()()")
_NOT_KEPT = bytes(c for c in range(256) if c not in _KEEP)
_NOT_BRACKET = bytes(c for c in range(256) if c not in b"[]{}")
# Passes that remove the innermost bracket pairs before the running count (each pass lowers the depth by one; a
# file of ours, 9 deep, has then almost nothing left to count).
_PASSES = 12

# TOML strings (multi-line first, so that """ is not read as an empty string and a quote) and comments.
_TOML_SKIPPED = re.compile(
    r'"""[\s\S]*?"""(?!")|' r"'''[\s\S]*?'''(?!')|" r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"|' r"'[^'\n]*'|" r"#[^\n]*"
)
# A dotted key: each part is a table level. Strings are replaced by ``s`` before, so quoted parts count too.
_DOTTED = re.compile(r"[\w-]+(?:[ \t]*\.[ \t]*[\w-]+)+")


def _paren_depth(parens: bytes) -> int:
    """The deepest running count of ``(`` minus ``)`` in ``parens`` (only those two bytes), exact for balanced
    text and an upper bound otherwise. Up to :data:`_PASSES` passes first remove every adjacent ``()`` (bytes
    replace, C speed): a pass lowers the deepest count by exactly one when it ends on a ``)``, and by at most
    one in any case, since the ``(`` before a deepest one is followed by ``(`` and stays."""
    passes = 0
    while passes < _PASSES and b"()" in parens:
        parens = parens.replace(b"()", b"")
        passes += 1
    return passes + max(accumulate(1 if c == 40 else -1 for c in parens), default=0)


def json_depth(text: str | bytes) -> int:
    """How deep arrays and objects nest in the JSON ``text`` (0 for a scalar; UTF-8 if bytes), brackets inside
    strings not counted: linear time, no recursion, no Python loop over the text. A text with at most
    :data:`MAX_DEPTH` opening brackets cannot be deeper and is not scanned: that count is returned (an upper
    bound). Malformed text gets a number too (the parser then says what is wrong)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    opening = data.count(b"[") + data.count(b"{")
    if opening <= MAX_DEPTH:
        return opening
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    # quotes and brackets only; a string without brackets is then "" and goes (removing two adjacent quotes keeps
    # the others paired); the strings left hold brackets and are dropped by splitting at the quotes
    kept = data.translate(_PARENS, _NOT_KEPT).replace(b'""', b"")
    if b'"' in kept:
        kept = b"".join(kept.split(b'"')[::2])
    return _paren_depth(kept)


def toml_depth(text: str) -> int:
    """An upper bound of how deep the TOML ``text`` nests before parsing: the deeper of its inline arrays and tables
    (brackets outside strings and comments) and its longest dotted key (parts), which is what makes ``tomllib``
    recurse or grow. A table header ``[a.b]`` counts as its dotted key."""
    skeleton = _TOML_SKIPPED.sub(lambda m: "" if m.group(0).startswith("#") else "s", text)
    longest = max((m.group(0).count(".") + 1 for m in _DOTTED.finditer(skeleton)), default=0)
    brackets = skeleton.encode("utf-8", "surrogatepass").translate(_PARENS, _NOT_BRACKET)
    return max(_paren_depth(brackets), longest)


def value_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep lists and dicts nest in a parsed ``value`` (0 for a scalar), counted up to ``limit + 1`` only:
    the walk stops there, so a value that refers to itself (a YAML alias inside its own anchor) ends too. No
    recursion; a container shared by many parents (YAML aliases) is walked again only when reached deeper."""
    deepest = 0
    seen: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list):
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        if seen.get(id(item), 0) >= depth:
            continue
        seen[id(item)] = depth
        stack.extend((child, depth) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _refuse(source: str | Path, depth: int | None, what: str, error: ErrorClass) -> Exception:
    """The one-line refusal: the file, how deep (when the pre-scan measured it), the limit and the deepest real."""
    if depth is None:
        return error(
            f"{source}: nested deeper than the limit of {MAX_DEPTH} levels ({what} within each other; the deepest"
            " file wattsched reads nests 9); refused"
        )
    return error(
        f"{source}: nested {depth:,} levels deep ({what} within each other), more than the limit of {MAX_DEPTH}"
        " (the deepest file wattsched reads nests 9); refused"
    )


def _check_value(value: Any, source: str | Path, what: str, error: ErrorClass) -> Any:
    depth = value_depth(value)
    if depth > MAX_DEPTH:
        raise _refuse(source, None, what, error)
    return value


def load_json(data: str | bytes, source: str | Path, *, error: ErrorClass = TooDeepError) -> Any:
    """``json.loads(data)`` when it nests at most :data:`MAX_DEPTH` levels, else ``error(one line naming
    source and the depth)``. Bytes are decoded as ``json.loads`` does (UTF-8, -16 or -32 by their first bytes;
    ``UnicodeDecodeError`` as there); ``json.JSONDecodeError`` is left to the caller, which words it."""
    text = data.decode(json.detect_encoding(data), "surrogatepass") if isinstance(data, bytes | bytearray) else data
    depth = json_depth(text)
    if depth > MAX_DEPTH:
        raise _refuse(source, depth, "arrays and objects", error)
    try:
        return json.loads(text)
    except RecursionError:  # cannot happen below the limit: kept so that no traceback can reach the user
        raise _refuse(source, None, "arrays and objects", error) from None


def load_toml(text: str, source: str | Path, *, error: ErrorClass = TooDeepError) -> dict[str, Any]:
    """``tomllib.loads(text)`` when it nests at most :data:`MAX_DEPTH` levels (pre-scan, then the parsed
    value), else ``error(one line naming source and the depth)``; ``tomllib.TOMLDecodeError`` is left to the
    caller."""
    depth = toml_depth(text)
    if depth > MAX_DEPTH:
        raise _refuse(source, depth, "arrays, tables and dotted keys", error)
    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise _refuse(source, None, "arrays, tables and dotted keys", error) from None
    return _check_value(value, source, "arrays, tables and dotted keys", error)


def load_yaml(text: str, source: str | Path, *, error: ErrorClass = TooDeepError) -> Any:
    """``yaml.safe_load(text)`` when it nests at most :data:`MAX_DEPTH` levels, else ``error(one line naming
    source)``: a ``RecursionError`` of the parser (YAML nests without brackets, so no pre-scan bounds it; the
    parser is pure Python, which recurses without the C stack) and a parsed value nested deeper are both refused;
    ``yaml.YAMLError`` is left to the caller."""
    import yaml  # deferred: PyYAML is only needed for .yaml files, most readers never load it

    try:
        value = yaml.safe_load(text)
    except RecursionError:
        raise _refuse(source, None, "lists and mappings", error) from None
    return _check_value(value, source, "lists and mappings", error)
