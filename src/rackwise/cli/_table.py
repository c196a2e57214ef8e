"""Plain-text tables for a person at a terminal."""

from __future__ import annotations

from collections.abc import Sequence


def render(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Columns padded to width; numbers right-aligned, text left-aligned."""
    cells = [[str(c) for c in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [
        all(isinstance(r[i], int | float) or r[i] is None for r in rows) and bool(rows)
        for i in range(len(headers))
    ]
    lines = []
    for row in cells:
        parts = [
            cell.rjust(w) if is_num else cell.ljust(w)
            for cell, w, is_num in zip(row, widths, numeric, strict=True)
        ]
        lines.append("  ".join(parts).rstrip())
    return "\n".join(lines)
