"""HTML report (placeholder until the full report lands)."""

from __future__ import annotations

from pathlib import Path


def write_html_report(cal, path: Path) -> None:
    path.write_text("<html><body><pre>report</pre></body></html>\n")
