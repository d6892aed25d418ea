"""Slurm hostlist expressions expanded into node names: ``r256n[01-03,07],login1`` → r256n01, r256n02, r256n03,
r256n07, login1. Zero padding follows the range's first bound; several bracket groups in one name expand as their
product (``c[1-2]-g[1-2]``). A malformed expression is a ``ValueError`` naming it."""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

_GROUP = re.compile(r"\[([^\[\]]*)\]")


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced brackets in hostlist {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise ValueError(f"unbalanced brackets in hostlist {text!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _range_values(spec: str, text: str) -> list[str]:
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        if "-" in item:
            lo, hi = item.split("-", 1)
            if not (lo.isdigit() and hi.isdigit()) or int(hi) < int(lo):
                raise ValueError(f"bad range {item!r} in hostlist {text!r}")
            width = len(lo)
            out += [str(k).zfill(width) for k in range(int(lo), int(hi) + 1)]
        elif item.isdigit() or item.isalnum():
            out.append(item)
        else:
            raise ValueError(f"bad item {item!r} in hostlist {text!r}")
    return out


@lru_cache(maxsize=65_536)
def expand_hostlist(text: str) -> tuple[str, ...]:
    """Every node name of a Slurm hostlist expression, in order (duplicates kept as written)."""
    names: list[str] = []
    for host in _split_top(text):
        pieces = _GROUP.split(host)  # literal, group, literal, group, ...
        literals, groups = pieces[0::2], pieces[1::2]
        if any("[" in lit or "]" in lit for lit in literals):
            raise ValueError(f"nested or unbalanced brackets in hostlist {text!r}")
        for combo in itertools.product(*[_range_values(g, text) for g in groups]):
            name = literals[0]
            for value, literal in zip(combo, literals[1:], strict=True):
                name += value + literal
            names.append(name)
    return tuple(names)
