"""A reproduction's files: ``results.parquet``, ``claims.json``, ``REPORT.md`` and ``REPORT.html``.

``claims.json`` is read back and validated by :func:`read_claims` (the schema is :class:`ClaimRecord`), so every
format written here is also read here. The report is generated from the claim results only: it holds no number
that the paper module did not compute from its run.
"""

from __future__ import annotations

import html
import json
import platform
import sys
from collections import Counter
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from wattsched.reproduce.claims import KINDS, VERDICTS, catalogue, paper_title

if TYPE_CHECKING:
    from wattsched.reproduce.runner import PaperRun, ReproduceContext

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SpreadRecord(_Strict):
    mean: float
    min: float
    max: float
    std: float = Field(ge=0)
    n: int = Field(ge=1)
    over: str
    values: list[float]


class OursRecord(_Strict):
    text: str = Field(min_length=1)
    value: float | list[float] | bool | None
    spread: dict[str, SpreadRecord]


class ClaimRecord(_Strict):
    """One object of ``claims.json``."""

    id: str = Field(pattern=r"^C00[0-4]-\d\d$")
    paper: Literal["000", "001", "002", "003", "004"]
    claim: str
    kind: Literal[KINDS]  # type: ignore[valid-type]
    paper_value: str
    ours: OursRecord
    verdict: Literal[VERDICTS]  # type: ignore[valid-type]
    note: str


class ClaimsFile(_Strict):
    schema_version: Literal[1]
    paper: Literal["000", "001", "002", "003", "004"]
    title: str
    quick: bool
    seeds: list[int]
    seconds: float
    counts: dict[str, int]
    claims: list[ClaimRecord]


def read_claims(path: Path) -> ClaimsFile:
    """Read and validate a ``claims.json`` (also checks it covers its paper's whole catalogue)."""
    data = ClaimsFile.model_validate_json(path.read_text(encoding="utf-8"))
    expected = [c.id for c in catalogue(data.paper)]
    got = [c.id for c in data.claims]
    if sorted(got) != sorted(expected):
        raise ValueError(f"{path}: claims {got} do not match paper {data.paper}'s catalogue {expected}")
    return data


def write_report(ctx: ReproduceContext, run: PaperRun, *, seconds: float, command: str = "") -> dict[str, Path]:
    out = ctx.out
    files = {
        "results": out / "results.parquet",
        "claims": out / "claims.json",
        "report": out / "REPORT.md",
        "html": out / "REPORT.html",
    }
    run.results.write_parquet(files["results"])
    counts = Counter(r.verdict for r in run.claims)
    payload = {
        "schema_version": SCHEMA_VERSION,
        "paper": ctx.paper,
        "title": paper_title(ctx.paper),
        "quick": ctx.quick,
        "seeds": list(ctx.seeds),
        "seconds": round(seconds, 3),
        "counts": {v: counts.get(v, 0) for v in VERDICTS},
        "claims": [r.record() for r in run.claims],
    }
    files["claims"].write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    read_claims(files["claims"])  # what we write, we read back
    meta = _meta(ctx, run, seconds, command)
    files["report"].write_text(_markdown(ctx, run, payload, meta), encoding="utf-8")
    files["html"].write_text(_html(ctx, run, payload, meta), encoding="utf-8")
    return files


def _meta(ctx: ReproduceContext, run: PaperRun, seconds: float, command: str) -> list[tuple[str, str]]:
    rows = [
        ("command", command or f"wattsched reproduce {ctx.paper}{' --quick' if ctx.quick else ''}"),
        ("setting", "quick (reduced; every shape, not the paper's scale)" if ctx.quick else "full"),
        ("seeds", ", ".join(str(s) for s in ctx.seeds)),
        ("run time", f"{seconds:.1f} s on {ctx.workers} worker(s)"),
        ("wattsched", version("wattsched")),
        ("python", f"{sys.version.split()[0]} on {platform.machine()}"),
        ("written", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
    ]
    rows += [(str(k), _fmt(v)) for k, v in run.settings.items()]
    return rows


def _fmt(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def _counts_line(payload: dict[str, Any]) -> str:
    c = payload["counts"]
    return f"{c['holds']} hold, {c['differs']} differ, {c['not checkable']} not checkable (of {len(payload['claims'])})"


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _markdown(ctx: ReproduceContext, run: PaperRun, payload: dict[str, Any], meta: list[tuple[str, str]]) -> str:
    lines = [f"# Paper {ctx.paper}: {payload['title']}", "", f"**Claims: {_counts_line(payload)}.**", ""]
    lines += ["| | |", "|---|---|"] + [f"| {k} | {_md_cell(v)} |" for k, v in meta] + [""]
    if run.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in run.notes] + [""]
    lines += ["## Claims", "", "| id | claim | kind | paper | ours | verdict | note |", "|---|---|---|---|---|---|---|"]
    for r in payload["claims"]:
        lines.append(
            "| "
            + " | ".join(
                _md_cell(x)
                for x in (
                    r["id"],
                    r["claim"],
                    r["kind"],
                    r["paper_value"],
                    r["ours"]["text"],
                    f"**{r['verdict']}**",
                    r["note"],
                )
            )
            + " |"
        )
    if run.figures:
        lines += ["", "## Figures", ""]
        for fig in run.figures:
            rel = _relative(fig, ctx.out)
            lines += [f"![{rel}]({rel})", ""]
    lines += ["", "Files: `results.parquet` (one row per run), `claims.json` (one object per claim), this report.", ""]
    return "\n".join(lines)


_COLOURS = {"holds": "#1b7f3b", "differs": "#b35900", "not checkable": "#666"}
_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f3f3f3}img{max-width:100%;margin:1em 0;border:1px solid #eee}
.verdict{font-weight:bold}
"""


def _html(ctx: ReproduceContext, run: PaperRun, payload: dict[str, Any], meta: list[tuple[str, str]]) -> str:
    e = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>Paper {e(ctx.paper)} reproduction</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Paper {e(ctx.paper)}: {e(payload['title'])}</h1>",
        f"<p><b>Claims: {e(_counts_line(payload))}.</b></p><table>",
    ]
    parts += [f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in meta]
    parts.append("</table>")
    if run.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{e(n)}</li>" for n in run.notes) + "</ul>")
    parts.append(
        "<h2>Claims</h2><table><tr>"
        + "".join(f"<th>{h}</th>" for h in ("id", "claim", "kind", "paper", "ours", "verdict", "note"))
        + "</tr>"
    )
    for r in payload["claims"]:
        colour = _COLOURS[r["verdict"]]
        parts.append(
            f"<tr><td>{e(r['id'])}</td><td>{e(r['claim'])}</td><td>{e(r['kind'])}</td><td>{e(r['paper_value'])}</td>"
            f"<td>{e(r['ours']['text'])}</td><td class='verdict' style='color:{colour}'>{e(r['verdict'])}</td>"
            f"<td>{e(r['note'])}</td></tr>"
        )
    parts.append("</table>")
    if run.figures:
        parts.append("<h2>Figures</h2>")
        for fig in run.figures:
            rel = _relative(fig, ctx.out)
            if fig.suffix.lower() in (".png", ".svg", ".jpg"):
                parts.append(f"<figure><img src='{e(rel)}' alt='{e(rel)}'><figcaption>{e(rel)}</figcaption></figure>")
            else:
                parts.append(f"<p><a href='{e(rel)}'>{e(rel)}</a></p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)
