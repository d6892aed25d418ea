"""Eurora's ``power_predictions``: the ISC16 ML model's predicted power per PBS job (W), not measurements."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from wattsched.core.schema import WorkloadError, shorten

_TEXT = "__text"


def read_eurora_power_predictions(path: str | Path) -> pl.DataFrame:
    """Read Eurora's ``power_predictions`` (``498459.node129;93.0`` per line: PBS id; predicted job power in W).

    Returns ``job_id`` (Int64, the PBS number) and ``pred_power_eurora`` (Float64, W). The values are the ISC16 ML
    model's predictions, not measurements. A malformed line, or one id with two different values, is an error
    naming the file and line (a repeated identical line is dropped).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot read: {exc}") from None
    raw = pl.Series(_TEXT, text.split("\n"), dtype=pl.Utf8)
    frame = pl.DataFrame({_TEXT: raw.str.strip_chars()}).with_row_index("line", offset=1).filter(pl.col(_TEXT) != "")
    if frame.height == 0:
        raise WorkloadError(f"{path}: no predictions")
    parts = frame[_TEXT].str.extract_groups(r"^(?P<id>\d{1,18})(?:\.[^;\s]*)?\s*;\s*(?P<w>[^;]+?)$")
    frame = frame.with_columns(
        parts.struct.field("id").cast(pl.Int64).alias("job_id"),
        parts.struct.field("w").cast(pl.Float64, strict=False).alias("pred_power_eurora"),
    )
    bad = frame.filter(
        pl.col("job_id").is_null()
        | pl.col("pred_power_eurora").is_null()
        | ~pl.col("pred_power_eurora").is_finite()
        | (pl.col("pred_power_eurora") < 0)
    )
    if bad.height:
        first = bad.row(0, named=True)
        raise WorkloadError(
            f"{path}:{first['line']}: expected '<job_id>[.<host>];<non-negative watts>', got {shorten(first[_TEXT])!r}"
            f" ({bad.height} malformed line(s))"
        )
    frame = frame.unique(["job_id", "pred_power_eurora"], keep="first", maintain_order=True)
    clash = frame.filter(pl.col("job_id").is_duplicated())
    if clash.height:
        first = clash.row(0, named=True)
        lines = clash.filter(pl.col("job_id") == first["job_id"])["line"].to_list()
        raise WorkloadError(f"{path}: job {first['job_id']} has different predictions on lines {lines}")
    return frame.select("job_id", "pred_power_eurora")
