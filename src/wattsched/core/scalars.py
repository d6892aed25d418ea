"""Typed conversions of the scalars polars returns to ``float`` and ``int``.

polars types the result of ``Series.max()``, ``min()``, ``sum()``, ``mean()`` and ``item()`` as a wide union
(``int | float | Decimal | date | time | timedelta | str | bytes | list | ... | None``), because the method's
return type cannot depend on the column's dtype. On a numeric column the value is a plain ``int`` or ``float``,
but mypy cannot know that: ``float(s.max() - s.min())`` or ``int(df["n"].sum())`` does not type-check.

:func:`as_float` and :func:`as_int` take such a value, check at run time that it is a number, and return it as
``float(value)`` / ``int(value)`` would; anything else (``None`` from an empty or all-null column, a string, a
date, a list) raises one ``ValueError`` line naming what was expected and what came. :func:`as_number` keeps an
``int`` an ``int``, for arithmetic that must stay exact before a final conversion:
``float(as_number(s.max()) - as_number(s.min()))`` is ``float(s.max() - s.min())``, bit for bit.
"""

from __future__ import annotations

import numbers
from decimal import Decimal
from typing import SupportsInt, cast

__all__ = ["as_float", "as_int", "as_number"]


def _check_number(value: object, target: str, what: str) -> numbers.Real | Decimal:
    if isinstance(value, numbers.Real | Decimal):
        return value
    if value is None:
        raise ValueError(f"{what}: expected a number to convert to {target}, got None (an empty or all-null column?)")
    raise ValueError(f"{what}: expected a number to convert to {target}, got {type(value).__name__} {value!r}")


def as_float(value: object, what: str = "polars scalar") -> float:
    """``float(value)`` for a numeric polars scalar (``bool``, ``int``, ``float``, ``Decimal``, numpy number).

    Raises ``ValueError`` on ``None`` (an empty or all-null column) and on anything that is not a number.
    """
    return float(_check_number(value, "float", what))


def as_int(value: object, what: str = "polars scalar") -> int:
    """``int(value)`` for a numeric polars scalar (``bool``, ``int``, ``float``, ``Decimal``, numpy number).

    A float is truncated toward zero, as ``int()`` does. Raises ``ValueError`` on ``None`` (an empty or all-null
    column) and on anything that is not a number.
    """
    # numbers.Real declares no __int__ in typeshed; every Real and Decimal has one.
    return int(cast(SupportsInt, _check_number(value, "int", what)))


def as_number(value: object, what: str = "polars scalar") -> int | float:
    """A numeric polars scalar as it is: an ``int`` stays an ``int``, a ``float`` a ``float``.

    Other integers (numpy's) become ``int`` and other reals ``float``, both exactly; ``Decimal`` is refused, as is
    anything that is not a number. Raises ``ValueError`` on ``None`` (an empty or all-null column) and on those.
    """
    if isinstance(value, int | float):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if value is None:
        raise ValueError(f"{what}: expected an int or a float, got None (an empty or all-null column?)")
    raise ValueError(f"{what}: expected an int or a float, got {type(value).__name__} {value!r}")
