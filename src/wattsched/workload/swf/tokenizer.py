"""The SWF tokenizer: one numba pass over the file's bytes parses the 18 fields of every data line.

Every number is parsed exactly (the float64 Python's ``float()`` gives): Clinger's fast path when the mantissa
is below 2**53 and the power of ten within ±22 (both exact in float64, so one multiply or divide rounds once);
otherwise the C library's correctly rounded ``strtod``, called from the compiled loop (issue 18: 16–17 digit
times had taken a Python path at 11 µs a line; strtod costs ~80 ns a token, measured). Only the lines it flags
(malformed, or, when the C locale's decimal point is not '.', long numbers) go through :func:`parse_line_slow`,
which is authoritative for them.
"""

from __future__ import annotations

import locale
import math
import re

import numpy as np
from numba import njit

from wattsched.core.intrinsics import STRTOD_MAX, strtod
from wattsched.workload.swf.fields import INT_FIELDS, N_FIELDS, SWF_FIELDS

# The token grammar the numba tokenizer accepts; the Python path must agree with it exactly.
_NUMBER_RE = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

# Line status codes from the tokenizer, in increasing severity (a line keeps its worst); anything but LINE_OK goes
# through the Python path: LINE_SLOW a number strtod could not take, LINE_BAD a non-integer in an integer field or
# an unparsable token, LINE_SHORT fewer than 18 fields.
LINE_OK, LINE_SLOW, LINE_BAD, LINE_SHORT = 0, 1, 2, 3

# Exact powers of ten (10**22 is the largest exactly representable one).
POW10 = np.array([10.0**k for k in range(23)], dtype=np.float64)
IS_INT = np.array([name in INT_FIELDS for name in SWF_FIELDS], dtype=np.bool_)


def strtod_usable() -> bool:
    """True when libc's strtod reads '.' as the decimal point (LC_NUMERIC "C", Python's default); else the
    long numbers go through Python's float()."""
    return locale.localeconv()["decimal_point"] == "."


@njit(cache=True, inline="always")
def _is_ws(c: int) -> bool:
    # Same set as bytes.split(): space, \t, \r, \v, \f (\n ends the line).
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@njit(cache=True, nogil=True)
def scan(
    buf: np.ndarray, pow10: np.ndarray, is_int: np.ndarray, use_strtod: bool = True
) -> tuple:  # pragma: no cover - compiled
    """One pass over the bytes: classify lines, parse the first 18 fields of data lines as float64.

    Returns the values as an (18, n_data_lines) array plus per-line number, byte span, status and
    extra-field flag, and the comment lines' numbers and spans. Status: 0 parsed exactly; 1 needs Python's
    float() (only without ``use_strtod`` or for tokens over STRTOD_MAX bytes); 2 malformed or non-integer
    token; 3 fewer than 18 fields.
    """
    n = buf.size
    scratch = np.zeros(STRTOD_MAX + 1, np.uint8)
    nl = 0
    for i in range(n):
        if buf[i] == 10:
            nl += 1
    cap = nl + 1
    vals = np.empty((18, cap), np.float64)
    d_line = np.empty(cap, np.int64)
    d_start = np.empty(cap, np.int64)
    d_end = np.empty(cap, np.int64)
    d_status = np.zeros(cap, np.int8)
    d_extra = np.zeros(cap, np.bool_)
    c_line = np.empty(cap, np.int64)
    c_start = np.empty(cap, np.int64)
    c_end = np.empty(cap, np.int64)
    nd = 0
    nc = 0
    nblank = 0
    pos = 0
    lineno = 0
    while pos < n:
        lineno += 1
        start = pos
        i = pos
        while i < n and buf[i] != 10 and _is_ws(buf[i]):
            i += 1
        if i >= n or buf[i] == 10:
            nblank += 1
            pos = i + 1
            continue
        if buf[i] == 59:  # ';' comment / header line
            j = i
            while j < n and buf[j] != 10:
                j += 1
            c_line[nc] = lineno
            c_start[nc] = start
            c_end[nc] = j
            nc += 1
            pos = j + 1
            continue
        k = nd
        nd += 1
        status = LINE_OK
        nf = 0
        while True:
            while i < n and buf[i] != 10 and _is_ws(buf[i]):
                i += 1
            if i >= n or buf[i] == 10:
                break
            if nf == 18:
                d_extra[k] = True
                while i < n and buf[i] != 10:
                    i += 1
                break
            # --- one numeric token: [+-]? digits [. digits] [(e|E) [+-]? digits] ---
            neg = False
            c = buf[i]
            if c == 45:
                neg = True
                i += 1
            elif c == 43:
                i += 1
            digits_start = i
            mant = 0
            ndig = 0
            exp10 = 0
            slow = False
            while i < n and buf[i] >= 48 and buf[i] <= 57:
                if mant < 100000000000000000:
                    mant = mant * 10 + (buf[i] - 48)
                else:
                    slow = True
                ndig += 1
                i += 1
            if i < n and buf[i] == 46:
                i += 1
                while i < n and buf[i] >= 48 and buf[i] <= 57:
                    if mant < 100000000000000000:
                        mant = mant * 10 + (buf[i] - 48)
                        exp10 -= 1
                    else:
                        slow = True
                    ndig += 1
                    i += 1
            ok = ndig > 0
            if ok and i < n and (buf[i] == 101 or buf[i] == 69):
                i += 1
                eneg = False
                if i < n and (buf[i] == 45 or buf[i] == 43):
                    eneg = buf[i] == 45
                    i += 1
                ev = 0
                ed = 0
                while i < n and buf[i] >= 48 and buf[i] <= 57:
                    if ev < 100000:
                        ev = ev * 10 + (buf[i] - 48)
                    ed += 1
                    i += 1
                if ed == 0:
                    ok = False
                exp10 += -ev if eneg else ev
            if i < n and buf[i] != 10 and not _is_ws(buf[i]):
                ok = False
                while i < n and buf[i] != 10 and not _is_ws(buf[i]):
                    i += 1
            v = 0.0
            if not ok:
                status = max(status, LINE_BAD)
            elif mant == 0 and not slow:
                v = 0.0
            elif slow or mant > 9007199254740992 or exp10 > 22 or exp10 < -22:
                length = i - digits_start
                if use_strtod and length <= STRTOD_MAX:
                    scratch[:length] = buf[digits_start:i]
                    scratch[length] = 0
                    v = strtod(scratch.ctypes)
                else:
                    status = max(status, LINE_SLOW)
            elif exp10 >= 0:
                v = float(mant) * pow10[exp10]
            else:
                v = float(mant) / pow10[-exp10]
            if is_int[nf] and (v != np.floor(v) or abs(v) > 9007199254740992.0):
                status = max(status, LINE_BAD)
            vals[nf, k] = -v if neg else v
            nf += 1
        if nf < 18:
            status = LINE_SHORT
        d_line[k] = lineno
        d_start[k] = start
        d_end[k] = i
        d_status[k] = status
        pos = i + 1
    return (
        vals[:, :nd],
        d_line[:nd],
        d_start[:nd],
        d_end[:nd],
        d_status[:nd],
        d_extra[:nd],
        c_line[:nc],
        c_start[:nc],
        c_end[:nc],
        nblank,
    )


def _maybe_int(token: bytes) -> int | None:
    if not _NUMBER_RE.fullmatch(token):
        return None
    value = float(token)
    return int(value) if math.isfinite(value) and value == int(value) else None


def parse_line_slow(raw: bytes) -> tuple[list[float] | None, str | None, str | None, int | None]:
    """Authoritative parse of a flagged line: ``(values, field, reason, job_id)``; values None if rejected."""
    tokens = raw.split()
    job_id = _maybe_int(tokens[0]) if tokens else None
    if len(tokens) < N_FIELDS:
        return None, "line", f"line has {len(tokens)} fields, SWF needs {N_FIELDS}", job_id
    values: list[float] = []
    for j in range(N_FIELDS):
        name = SWF_FIELDS[j]
        if not _NUMBER_RE.fullmatch(tokens[j]):
            text = tokens[j].decode("utf-8", errors="replace")[:40]
            return None, name, f"non-numeric value {text!r} in field {j + 1} ({name})", job_id
        value = float(tokens[j])
        if name in INT_FIELDS and not (math.isfinite(value) and value == int(value) and abs(value) <= 2**53):
            text = tokens[j].decode("utf-8", errors="replace")[:40]
            return None, name, f"value {text!r} in field {j + 1} ({name}) is not an integer", job_id
        values.append(value)
    return values, None, None, job_id
