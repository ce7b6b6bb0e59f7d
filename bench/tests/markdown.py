"""Reading the report's markdown in tests: tables without their padding, and table blocks."""
from __future__ import annotations

import re


def squeeze(text: str) -> str:
    """`text` with runs of spaces made one, so that a test can name a row without its padding."""
    return re.sub(r" {2,}", " ", text)


def tables(text: str) -> list[list[str]]:
    """Every table of a markdown text: its lines, header and alignment row included."""
    found: list[list[str]] = []
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            found.append(current)
            current = []
    if current:
        found.append(current)
    return found
