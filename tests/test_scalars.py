"""wattsched.core.scalars: polars scalars to float/int, with a ValueError on None and non-numbers."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import numpy as np
import polars as pl
import pytest

from wattsched.core.scalars import as_float, as_int, as_number


def test_numeric_polars_scalars_convert_like_float_and_int() -> None:
    s = pl.Series("x", [3, 7, 5])
    assert as_float(s.max() - s.min()) == 4.0
    assert as_int(s.sum()) == 15
    assert isinstance(as_float(s.max()), float)
    f = pl.Series("y", [1.5, 2.75])
    assert as_float(f.mean()) == pytest.approx(2.125)
    assert as_int(f.max()) == 2  # truncated, as int() does
    assert as_int(pl.Series([True, False, True]).sum()) == 2
    assert as_float(Decimal("2.5")) == 2.5
    assert as_float(np.float32(0.5)) == 0.5
    assert as_int(np.int64(9)) == 9


@pytest.mark.parametrize("value", [None, "12", b"1", dt.date(2024, 1, 1), dt.timedelta(seconds=1), [1, 2]])
def test_none_and_non_numbers_raise_value_error(value: object) -> None:
    with pytest.raises(ValueError, match="expected a number"):
        as_float(value)
    with pytest.raises(ValueError, match="expected a number"):
        as_int(value)


def test_empty_column_names_the_likely_cause() -> None:
    with pytest.raises(ValueError, match="all-null column"):
        as_float(pl.Series("x", [], dtype=pl.Float64).max(), what="x max")


def test_as_number_keeps_int_arithmetic_exact() -> None:
    s = pl.Series("t", [2**60 + 1, 2**60 + 3])
    exact = float(s.max() - s.min())
    assert float(as_number(s.max()) - as_number(s.min())) == exact == 2.0
    assert type(as_number(s.max())) is int
    assert type(as_number(pl.Series([1.5]).max())) is float
    assert as_number(np.int64(7)) == 7 and type(as_number(np.int64(7))) is int
    for bad in (None, Decimal("1"), "3", dt.date(2024, 1, 1)):
        with pytest.raises(ValueError, match="expected an int or a float"):
            as_number(bad)
