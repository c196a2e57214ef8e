"""The summary table the ``audit`` and ``plan`` subcommands print: one row per cluster.

Plain text: columns padded, numbers right-aligned with thousands separators. A table wider
than :data:`MAX_WIDTH` columns puts each header on two lines, split at the underscore nearest
its middle (``partitions_with`` over ``spread_violations``), so that the default summary fits a
terminal of 100 columns; the names stay the JSON's (``--format json``), only broken in two.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

TABLE_CLUSTERS: Final = 50
"""Clusters listed at most (the rest are in the output directory)."""
MAX_WIDTH: Final = 100
_GAP: Final = "  "


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _split(header: str) -> tuple[str, str]:
    """``header`` in two lines at the underscore nearest its middle (or whole on the first)."""
    cuts = [i for i, c in enumerate(header) if c == "_"]
    if not cuts:
        return header, ""
    cut = min(cuts, key=lambda i: abs(len(header) - 2 * i))
    return header[: cut + 1], header[cut + 1 :]


def _lines(heads: list[list[str]], cells: list[list[str]], numeric: list[bool]) -> str:
    widths = [max(len(t) for t in column) for column in zip(*heads, *cells, strict=True)]
    out = []
    for row in [*heads, *cells]:
        padded = (
            c.rjust(w) if n else c.ljust(w) for c, w, n in zip(row, widths, numeric, strict=True)
        )
        out.append(_GAP.join(padded).rstrip())
    return "\n".join(out)


def render(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table (see the module notes)."""
    cells = [[_cell(c) for c in row] for row in rows]
    numeric = [
        bool(rows) and all(isinstance(r[i], int | float) or r[i] is None for r in rows)
        for i in range(len(headers))
    ]
    text = _lines([[str(h) for h in headers]], cells, numeric)
    if max(len(line) for line in text.splitlines()) <= MAX_WIDTH:
        return text
    split = [_split(str(h)) for h in headers]
    return _lines([[a for a, _ in split], [b for _, b in split]], cells, numeric)


def table_rows(
    clusters: dict[str, dict[str, Any]], preferred: tuple[str, ...]
) -> tuple[list[str], list[list[Any]]]:
    """The header and the rows of the first :data:`TABLE_CLUSTERS` clusters: the
    ``preferred`` columns the entries have, else every numeric figure."""
    first = next(iter(clusters.values()), {})
    columns = [c for c in preferred if c in first] or [
        k for k, v in first.items() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    rows = [
        [cluster_id, *(entry.get(c) for c in columns)]
        for cluster_id, entry in list(clusters.items())[:TABLE_CLUSTERS]
    ]
    return ["cluster", *columns], rows


def plan_table(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The plan's headline figures per cluster, flat, for the table (the JSON has them all)."""
    rows: dict[str, dict[str, Any]] = {}
    for cluster_id, entry in summary.get("clusters", {}).items():
        spread = entry.get("spread_violations", {})
        seconds = entry.get("move_time", {}).get("seconds")
        rows[cluster_id] = {
            "replica_moves": entry.get("replica_moves"),
            "lower_bound": entry.get("lower_bound", {}).get("replica_moves"),
            "intra_broker_moves": entry.get("intra_broker_moves"),
            "leader_moves": entry.get("leader_moves"),
            "data_to_move_bytes": entry.get("data_to_move_bytes"),
            "spread_before": spread.get("before"),
            "spread_after": spread.get("after"),
            "score_after": entry.get("balancedness_score", {}).get("after"),
            "move_time_s": None if seconds is None else round(float(seconds), 1),
        }
    return rows
