"""REPORT.md and REPORT.html of a reproduction, rendered from its ``claims.json`` payload only (report.py), so the
two reports and the JSON cannot disagree.

Sections, in order: the verdict counts (setup checks apart), the run's settings, notes, the result claims (with
each seed's verdict, the tolerance and its basis), the setup checks, the claims under other readings beside the
default's, the sensitivity rows, the shared notes and the figures (``paper_vs_ours`` first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader

_MARK = {"holds": "✓", "differs": "✗", "unstable": "~", "not checkable": "–"}
_COLOURS = {"holds": "#1b7f3b", "differs": "#b35900", "unstable": "#7a3db8", "not checkable": "#666"}
RULES = (
    "Verdicts (docs/reproduce.md): a claim **holds** when its value on all seeds pooled holds and it holds on at "
    "least two thirds of the seeds; it **differs** when the pooled value differs and at most a third of the seeds "
    "hold; otherwise it is **unstable**. A number holds within its own tolerance, max(abs, rel·|paper|), whose "
    "basis is given. Per seed: ✓ holds, ✗ differs, ~ unstable. Setup checks are not results."
)


def counts_line_of(payload: dict[str, Any]) -> str:
    """The counts line of a ``claims.json`` payload."""
    return counts_line(payload["counts"], payload["setup"])


def counts_line(counts: dict[str, int], setup: dict[str, int]) -> str:
    """ "18 hold, 3 differ, 4 unstable, 2 not checkable (of 27 results); setup: 1 holds" """
    n = sum(counts.values())
    line = (
        f"{counts.get('holds', 0)} hold, {counts.get('differs', 0)} differ, {counts.get('unstable', 0)} unstable, "
        f"{counts.get('not checkable', 0)} not checkable (of {n} results)"
    )
    if setup:
        line += "; setup checks: " + ", ".join(f"{k} {v}" for k, v in setup.items())
    return line


def tolerance_text(r: dict[str, Any]) -> str:
    t = r.get("tolerance")
    if not t:
        return ""
    unit = "pp" if r["unit"] == "%" else r["unit"]
    absolute = t["abs"]
    if isinstance(absolute, list):
        labels = r["labels"] or [str(k) for k in range(len(absolute))]
        text = " / ".join(f"{lab} {a:g}" for lab, a in zip(labels, absolute, strict=False))
        parts = [f"{text} {unit}".strip()]
    else:
        parts = [f"{absolute:g} {unit}".strip()] if absolute else []
    parts += [f"{t['rel'] * 100:g}%"] if t["rel"] else []
    if not parts:
        return f"no band ({t['basis']})"
    band = parts[0] if len(parts) == 1 else f"max({', '.join(parts)})"
    return f"±{band} ({t['basis']})"


def seeds_text(r: dict[str, Any]) -> str:
    rows = r["per_seed"]
    if not rows:
        return ""
    held = sum(s["verdict"] == "holds" for s in rows)
    return f"{held}/{len(rows)}: " + " ".join(f"{s['seed']}{_MARK[s['verdict']]}" for s in rows)


def verdict_text(r: dict[str, Any]) -> str:
    if not r["parts"]:
        return r["verdict"]
    return f"{r['verdict']} ({', '.join(f'{k} {v}' for k, v in r['parts'].items())})"


def claim_row(r: dict[str, Any]) -> tuple[str, ...]:
    """The cells of a result claim's row, the same in REPORT.md and REPORT.html."""
    return (
        r["id"],
        r["claim"],
        r["kind"],
        r["paper_value"],
        r["ours"]["text"],
        seeds_text(r),
        tolerance_text(r),
        verdict_text(r),
        r["note"],
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


def _split(payload: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    claims = payload["claims"]
    return [r for r in claims if r["kind"] != "setup"], [r for r in claims if r["kind"] == "setup"]


def _alternative_rows(payload: dict[str, Any], alt: dict[str, Any]) -> list[tuple[str, ...]]:
    default = {r["id"]: r for r in payload["claims"]}
    rows: list[tuple[str, ...]] = []
    for r in alt["claims"]:
        d = default[r["id"]]
        rows.append(
            (
                r["id"],
                r["claim"],
                r["paper_value"],
                f"{d['ours']['text']} — {verdict_text(d)}",
                f"{r['ours']['text']} — {verdict_text(r)}",
                seeds_text(r),
                r["note"],
            )
        )
    return rows


def markdown_report(
    payload: dict[str, Any], meta: list[tuple[str, str]], notes: list[str], figures: list[Path], out: Path
) -> str:
    results, setup = _split(payload)
    lines = [f"# Paper {payload['paper']}: {payload['title']}", "", f"**Claims: {counts_line_of(payload)}.**", ""]
    lines += [RULES, ""]
    lines += ["| | |", "|---|---|"] + [f"| {k} | {_cell(v)} |" for k, v in meta] + [""]
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    head = "| id | claim | kind | paper | ours | per seed | tolerance | verdict | note |"
    lines += ["## Claims", "", head, "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        cells = claim_row(r)
        cells = (*cells[:7], f"**{cells[7]}**", cells[8])
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    if setup:
        lines += [
            "",
            "## Setup checks (not results)",
            "",
            "| id | check | ours | verdict | note |",
            "|---|---|---|---|---|",
        ]
        for r in setup:
            cells = (r["id"], r["claim"], r["ours"]["text"], f"**{r['verdict']}**", r["note"])
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    for alt in payload["alternatives"]:
        lines += ["", f"## Under another reading: {alt['name']}", "", alt["description"], ""]
        lines += [
            "| id | claim | paper | default reading | this reading | per seed | note |",
            "|---|---|---|---|---|---|---|",
        ]
        lines += ["| " + " | ".join(_cell(x) for x in row) + " |" for row in _alternative_rows(payload, alt)]
    if payload["sensitivity"]:
        lines += ["", "## Sensitivity: what moves the claims that differ", ""]
        lines += ["| claim | change | default | with the change | effect |", "|---|---|---|---|---|"]
        for s in payload["sensitivity"]:
            cells = (s["claim"], s["change"], s["default"], s["variant"], s["effect"])
            lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    if payload["shared_notes"]:
        lines += ["", "## Shared notes", ""] + [f"- **[{k}]** {v}" for k, v in payload["shared_notes"].items()]
    if figures:
        lines += ["", "## Figures", ""]
        for fig in figures:
            rel = _relative(fig, out)
            lines += [f"![{rel}]({rel})", ""]
    lines += [
        "",
        "Files: `results.parquet` (one row per run), `claims.json` (one object per claim), "
        "`paper_vs_ours.png`/`.svg`, this report.",
        "",
    ]
    return "\n".join(lines)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1300px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;
vertical-align:top;text-align:left}th{background:#f3f3f3}img{max-width:100%;margin:1em 0;border:1px solid #eee}
.verdict{font-weight:bold}
"""


def html_report(
    payload: dict[str, Any], meta: list[tuple[str, str]], notes: list[str], figures: list[Path], out: Path
) -> str:
    """REPORT.html, rendered from ``templates/report.html.j2`` (autoescaped): the sections of the module
    docstring, with each verdict in its colour."""
    results, setup = _split(payload)
    env = Environment(loader=PackageLoader("wattsched.reproduce", "templates"), autoescape=True)
    return (
        env.get_template("report.html.j2").render(
            payload=payload,
            css=_CSS,
            colours=_COLOURS,
            counts=counts_line_of(payload),
            rules=RULES.replace("**", ""),
            meta=meta,
            notes=notes,
            claim_rows=[claim_row(r) for r in results],
            setup_rows=[(r["id"], r["claim"], r["ours"]["text"], r["verdict"], r["note"]) for r in setup],
            alternatives=[
                {"name": alt["name"], "description": alt["description"], "rows": _alternative_rows(payload, alt)}
                for alt in payload["alternatives"]
            ],
            sensitivity_rows=[
                (s["claim"], s["change"], s["default"], s["variant"], s["effect"]) for s in payload["sensitivity"]
            ],
            shared_notes=list(payload["shared_notes"].items()),
            figures=[(_relative(f, out), f.suffix.lower() in (".png", ".svg", ".jpg")) for f in figures],
        )
        + "\n"
    )
