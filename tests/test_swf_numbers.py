"""The compiled SWF number parser gives the float64 Python's float() gives, bit for bit, for every token the
grammar accepts (issue 18: 16–17 digit times are parsed in the compiled loop, no longer on the Python path)."""

from __future__ import annotations

import gzip
import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import require_data
from wattsched.workload.swf.tokenizer import IS_INT, LINE_OK, POW10, parse_line_slow, scan

# 16 fields after the token: 'submit' (field 2, a float field) carries the token under test.
REST = " -1 100 4 -1 -1 4 7200 -1 1 1 1 -1 -1 -1 -1 -1"


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def _scan_tokens(tokens: list[str], use_strtod: bool = True) -> tuple[np.ndarray, np.ndarray]:
    text = "".join(f"{k + 1} {tok}{REST}\n" for k, tok in enumerate(tokens)).encode()
    vals, _, _, _, status, *_ = scan(np.frombuffer(text, np.uint8), POW10, IS_INT, use_strtod)
    return vals[1], status


def _assert_exact(tokens: list[str]) -> None:
    values, status = _scan_tokens(tokens)
    assert status.tolist() == [LINE_OK] * len(tokens)
    for tok, got in zip(tokens, values.tolist(), strict=True):
        want = float(tok)
        assert _bits(got) == _bits(want) or (math.isnan(want) and math.isnan(got)), (tok, got, want)


finite = st.floats(allow_nan=False, allow_infinity=False)
digits = st.text("0123456789", min_size=1, max_size=40)


@st.composite
def decimal_strings(draw: st.DrawFn) -> str:
    """Random digit strings: sign, leading zeros, long integer and fraction parts, exponents of any size."""
    sign = draw(st.sampled_from(["", "-", "+"]))
    whole = draw(st.one_of(digits, st.just("")))
    frac = draw(st.one_of(st.none(), st.text("0123456789", max_size=40)))
    if not whole and not frac:
        whole = draw(digits)
    body = whole + ("" if frac is None else "." + frac)
    if draw(st.booleans()):
        e = draw(st.one_of(st.integers(-30, 30), st.integers(-400, 400)))
        body += draw(st.sampled_from("eE")) + (f"{e:+d}" if draw(st.booleans()) else str(e))
    return sign + body


@settings(max_examples=300, deadline=None)
@given(st.lists(finite, min_size=1, max_size=50))
def test_repr_and_17_digit_forms_are_exact(xs: list[float]) -> None:
    tokens = []
    for x in xs:
        tokens += [repr(x), f"{x:.17g}", f"{x:.16g}", f"{x:.15e}", f"{abs(x):.20f}"[:60]]
    _assert_exact(tokens)


@settings(max_examples=300, deadline=None)
@given(st.lists(decimal_strings(), min_size=1, max_size=50))
def test_random_digit_strings_with_exponents_are_exact(tokens: list[str]) -> None:
    _assert_exact(tokens)


def test_hard_cases_are_exact() -> None:
    _assert_exact(
        [
            "-1", "0", "-0", "+0.0", "00000000000000000000000123.450000000000000000e+3", "9007199254740993",
            "9007199254740992.5", "1e23", "8.98846567431158e307", "1.7976931348623157e308", "1.8e308", "1e400",
            "4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324", "1e-400",
            "2.2250738585072011e-308", "2.2250738585072012e-308", "0.1", "0.30000000000000004",
            "1234567890.123456789", "123456.78901234567", "7.0e-10", "1" + "0" * 250, "." + "0" * 200 + "1",
        ]
    )  # fmt: skip


def test_long_tokens_and_no_strtod_take_the_python_path() -> None:
    """Without strtod (a locale whose decimal point is not '.') or past STRTOD_MAX bytes the line is flagged,
    and the Python path gives the value."""
    long_token = "1." + "3" * 300
    values, status = _scan_tokens(["123456.78901234567", long_token, "0.5"], use_strtod=False)
    assert status.tolist() == [1, 1, LINE_OK] and values[2] == 0.5
    values, status = _scan_tokens(["123456.78901234567", long_token])
    assert status.tolist() == [LINE_OK, 1] and values[0] == 123456.78901234567
    parsed, _, _, _ = parse_line_slow(f"2 {long_token}{REST}".encode())
    assert parsed is not None and parsed[1] == float(long_token)


def test_bad_tokens_keep_their_line_and_field_errors() -> None:
    """A malformed long token is a reject with its field, not a strtod value."""
    _, status = _scan_tokens(["123456.78901234567x", "1.2345678901234567e", "1.2.3"])
    assert status.tolist() == [2, 2, 2]
    _, field, reason, _ = parse_line_slow(f"1 123456.78901234567x{REST}".encode())
    assert field == "submit" and "non-numeric value '123456.78901234567x' in field 2 (submit)" in reason
    line = "1.5000000000000000001 0" + REST
    _, field, reason, _ = parse_line_slow(line.encode())
    assert field == "job" and "not an integer" in reason
    status_line = scan(np.frombuffer((line + "\n").encode(), np.uint8), POW10, IS_INT)[4]
    assert status_line.tolist() == [2]


def test_a_real_trace_prefix_parses_as_the_python_path() -> None:
    """Every field of the first 100k RICC lines, and the same lines rewritten with '%.17g' times, parse in the
    compiled loop to the values of the authoritative Python path."""
    raw = gzip.decompress(require_data("swf/RICC-2010-2.swf.gz").read_bytes())
    lines = [ln for ln in raw.split(b"\n") if ln.strip() and not ln.lstrip().startswith(b";")][:100_000]
    rng = np.random.default_rng(18)
    fuzzed = []
    for ln in lines:
        tok = ln.split()
        tok[1] = b"%.17g" % (float(tok[1]) + rng.random())
        tok[3] = b"%.17g" % (float(tok[3]) * (1 + rng.random()))
        fuzzed.append(b" ".join(tok))
    for block in (lines, fuzzed):
        vals, _, _, _, status, *_ = scan(np.frombuffer(b"\n".join(block) + b"\n", np.uint8), POW10, IS_INT)
        assert (status == LINE_OK).sum() == len(block)
        for k in range(0, len(block), 7):
            want, *_ = parse_line_slow(block[k])
            assert want is not None
            assert vals[:, k].view(np.int64).tolist() == np.array(want).view(np.int64).tolist()
