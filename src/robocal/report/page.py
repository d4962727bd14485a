"""One self-contained HTML page (inline CSS, plots as base64 PNG) and the pieces every robocal page
is made of: tables whose numbers are right-aligned, the verdict with its findings. Every piece of
text taken from the user's files (names, paths, reasons) is escaped here.
"""

from __future__ import annotations

import base64
import json
from html import escape
from pathlib import Path

import numpy as np

from robocal.analysis.verdict import Verdict
from robocal.outputs import write_atomically

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.6em 0 1em; }
caption { text-align: left; font-weight: 600; padding-bottom: 0.3em; }
th, td { border: 1px solid #ddd; padding: 0.25em 0.6em; }
th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { background: #f3f3f3; padding: 0 0.2em; }
img { max-width: 100%; }
.ok { color: #1a7f37; } .warn { color: #b35900; } .fail { color: #c62828; }
"""


def _fmt(value) -> str:
    if value is None:
        return "none"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(value)
    if isinstance(value, (float, np.floating)):
        return "∞" if np.isinf(value) else f"{value:.6g}"
    return str(value)


def _cell(value) -> str:
    numeric = isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_))
    attribute = ' class="num"' if numeric else ""
    return f"<td{attribute}>{escape(_fmt(value))}</td>"


def table_html(header: list[str], rows: list[list], caption: str | None = None) -> str:
    """An HTML table; every cell is formatted with _fmt and escaped, numbers right-aligned."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def png_html(png: bytes, alt: str) -> str:
    """An inline base64 PNG <img>."""
    return f'<img alt="{escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def verdict_html(verdict: Verdict) -> str:
    """The verdict's level and its findings (code, sentence, evidence), docs/trust.md."""
    css = {"ok": "ok", "warning": "warn", "fail": "fail"}
    against = any(f.level != "info" for f in verdict.findings)
    text = (
        f'<p class="{css[verdict.level]}"><strong>{escape(verdict.level)}</strong>' + ("" if against else ": nothing found against this calibration") + "</p>"
    )
    if not verdict.findings:
        return text
    rows = [[f.level, f.code, f.sentence, json.dumps(f.evidence, default=float)[:600]] for f in verdict.findings]
    return text + table_html(["level", "code", "finding", "evidence (SI units)"], rows) + "<p>What each finding means: docs/trust.md.</p>"


def write_page(path: Path, title: str, intro_html: str, sections: list[tuple[str, str]]) -> None:
    """One self-contained HTML page: a title, an introduction and (heading, html) sections."""
    body = "".join(f"<h2>{escape(heading)}</h2>{content}" for heading, content in sections)
    write_atomically(
        Path(path),
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>robocal: {escape(title)}</title>'
        f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>{intro_html}{body}</body></html>\n".encode(),
    )
