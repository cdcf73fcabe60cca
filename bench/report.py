"""Writes one benchmark's table into docs/benchmarks.md, replacing its earlier section."""

from __future__ import annotations

import datetime as dt
import platform
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"
_TITLE = "# Benchmarks\n\nEach section names the command that produced it. Figures are ratios measured side by side in one run where possible: this machine is noisy.\n"


def write_section(title: str, command: str, body: str) -> None:
    """Replace (or append) the ``## title`` section of docs/benchmarks.md."""
    text = DOC.read_text() if DOC.exists() else _TITLE
    stamp = f"{dt.date.today().isoformat()}, {platform.machine()}, Python {platform.python_version()}"
    section = f"## {title}\n\nCommand: `{command}` ({stamp})\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text)
    else:
        text = text.rstrip() + "\n\n" + section
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(text)
