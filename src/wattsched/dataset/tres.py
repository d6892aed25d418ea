"""Unpack Slurm TRES strings (``tres_req_str``, ``tres_alloc_str``) into numeric columns (PM100 features).

``"cpu=32,mem=256G,node=1,billing=32,gres/gpu=4"`` → nodes 1, cores 32, gpus 4, mem 262,144 MB. Memory units
follow Slurm: K, M (default), G, T, P with base 1024, so ``mem`` is in megabytes. A missing key is null, never 0.
``gres/gpu`` and ``gpu`` (with or without a type, ``gres/gpu:v100=4``) both count GPUs. The plural keys of the
paper's example, ``"nodes=1,cpus=32,gpu=1,mem=256G"`` (paper 003 §3), count as ``node`` and ``cpu``.
"""

from __future__ import annotations

import polars as pl

_MEM_TO_MB = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def _count(text: pl.Expr, pattern: str) -> pl.Expr:
    return text.str.extract(pattern, 1).cast(pl.Int64, strict=False)


def tres_columns(text: pl.Expr, suffix: str) -> list[pl.Expr]:
    """``num_nodes_<suffix>``, ``num_cores_<suffix>``, ``num_gpus_<suffix>`` and ``mem_<suffix>`` (MB) from a
    TRES string column."""
    t = pl.concat_str([pl.lit(","), text, pl.lit(",")])  # so that every key is delimited on both sides
    gpus = (
        t.str.extract_all(r",(?:gres/)?gpu(?::[^=,]*)?=(\d+)")
        .list.eval(pl.element().str.extract(r"=(\d+)", 1).cast(pl.Int64))
        .list.sum()
    )
    has_gpu = t.str.contains(r",(?:gres/)?gpu(?::[^=,]*)?=\d+")
    mem_value = t.str.extract(r",mem=([0-9.]+)[KMGTP]?,", 1).cast(pl.Float64, strict=False)
    mem_unit = t.str.extract(r",mem=[0-9.]+([KMGTP]?),", 1).replace({"": "M"})
    factor = mem_unit.replace_strict(_MEM_TO_MB, default=None, return_dtype=pl.Float64)
    return [
        _count(t, r",nodes?=(\d+),").alias(f"num_nodes_{suffix}"),
        _count(t, r",cpus?=(\d+),").alias(f"num_cores_{suffix}"),
        pl.when(has_gpu).then(gpus).otherwise(None).alias(f"num_gpus_{suffix}"),
        (mem_value * factor).alias(f"mem_{suffix}"),
    ]


def unpack_tres(jobs: pl.DataFrame) -> pl.DataFrame:
    """Add the unpacked columns for ``tres_req_str`` (``_req``) and ``tres_alloc_str`` (``_alloc``) if present."""
    exprs = []
    for col, suffix in (("tres_req_str", "req"), ("tres_alloc_str", "alloc")):
        if col in jobs.columns:
            exprs += tres_columns(pl.col(col).cast(pl.Utf8), suffix)
    return jobs.with_columns(exprs) if exprs else jobs
