"""Validation in process of the small tables: brokers and reported log directories, row by
row, with the Spark validator's rules and messages (:mod:`rackwise.pipeline.ingest._validate`).

Goals
    Keep and reject the rows the Spark validator keeps and rejects, each with the same reason.
Constraints
    Thousands of rows at most: plain Python, in the rows' order.
Algorithm
    1. Brokers: no cluster id, no id, a negative id, a bad log directory entry (no path, a
       relative path, a negative capacity, a path twice), a malformed rack
       (:func:`rackwise.pipeline.ingest.checks.rack_problems`); of the good rows, a second one
       for an id already seen. The held directories learn each kept broker's declared ones.
    2. Reported directories: on a kept broker and, if the broker list declares the broker's
       directories, one of them.
Worked example
    Rows ``{"id": 1, "rack": "/dc1/r1"}`` and ``{"id": 1, "rack": "/dc1/r9"}``: the second is
    rejected with "broker 1 is listed more than once; the first entry is kept".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final

from rackwise.pipeline.ingest.checks import ABSOLUTE_PATH, Directories, rack_problems

BrokerRow = tuple[Any, ...]
"""``cluster_id, broker_id, rack, log_dirs`` (a list of ``(path, total_bytes, is_live)`` or
``None``), ``ordinal`` (the row's position in its input)."""
ReportedRow = tuple[Any, ...]
"""``cluster_id, broker_id, log_dir, is_live, ordinal``."""
RejectedRow = tuple[Any, Any, Any, Any]

_ABSOLUTE: Final = re.compile(ABSOLUTE_PATH)


def record_json(fields: dict[str, Any]) -> str:
    """A rejected row as JSON, as Spark's ``to_json`` writes a struct: compact, every field
    (nulls too), in order."""
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def _concat(*parts: object) -> str | None:
    """Spark's ``concat``: ``None`` when any part is."""
    if any(p is None for p in parts):
        return None
    return "".join(str(p) for p in parts)


def _dir_problem(broker: int, dirs: Sequence[tuple[Any, Any, Any]]) -> str | None:
    paths = [d[0] for d in dirs]
    if any(p is None for p in paths):
        return f"broker {broker}: a log directory has no path"
    relative = [p for p in paths if not _ABSOLUTE.search(p)]
    if relative:
        return f'broker {broker}: log directory "{relative[0]}" is not an absolute path'
    negative = [d for d in dirs if d[1] is not None and d[1] < 0]
    if negative:
        path, total = negative[0][0], negative[0][1]
        return f"broker {broker}: log directory {path} has a negative total_bytes {total}"
    if len(set(paths)) < len(paths):
        return f"broker {broker}: a log directory is listed more than once"
    return None


def _broker_reason(row: BrokerRow, racks: dict[str, tuple[str, str | None]]) -> str | None:
    cluster_id, broker, rack, dirs = row[0], row[1], row[2], row[3]
    if cluster_id is None:
        return "broker row has no cluster_id"
    if broker is None:
        return "broker row has no broker_id"
    if broker < 0:
        return f"broker id {broker} is negative"
    reason = _dir_problem(broker, dirs or [])
    if reason is None and rack is not None and racks[rack][1] is not None:
        reason = f"Broker {broker} {racks[rack][1]}"
    return reason


def _broker_record(row: BrokerRow) -> str:
    dirs = row[3]
    listed = None if dirs is None else [dict(zip(_DIR_FIELDS, d, strict=True)) for d in dirs]
    return record_json(
        {"cluster_id": row[0], "broker_id": row[1], "rack": row[2], "log_dirs": listed}
    )


_DIR_FIELDS: Final = ("path", "total_bytes", "is_live")


def check_brokers(
    rows: list[BrokerRow], source: str, held: Directories
) -> tuple[list[tuple[str, int, str | None]], list[RejectedRow]]:
    """Kept brokers (``rack`` as a path) and rejected rows; ``held`` learns the brokers and
    their declared directories."""
    racks = rack_problems(row[2] for row in rows)
    reasons = [_broker_reason(row, racks) for row in rows]
    seen: set[tuple[Any, Any]] = set()
    for i in sorted(range(len(rows)), key=lambda i: rows[i][4]):
        key = (rows[i][0], rows[i][1])
        if reasons[i] is None:
            if key in seen:
                reasons[i] = f"broker {key[1]} is listed more than once; the first entry is kept"
            seen.add(key)
    kept, rejected = [], []
    for row, reason in zip(rows, reasons, strict=True):
        cluster_id, broker = row[0], row[1]
        if cluster_id is not None and broker is not None:
            held.listed.add((cluster_id, broker))
        if reason is not None:
            rejected.append((cluster_id, source, _broker_record(row), reason))
            continue
        held.kept.add((cluster_id, broker))
        for path, total, live in row[3] or []:
            held.add((cluster_id, broker, path), total, live is not False)
        rack = row[2]
        kept.append((cluster_id, broker, None if rack is None else racks[rack][0]))
    return kept, rejected


def check_reported(rows: list[ReportedRow], source: str, held: Directories) -> list[RejectedRow]:
    """The rejected reported directories; ``held`` learns the kept ones."""
    known = {(c, b): (kept, dirs) for c, b, kept, dirs in held.lookup_rows()}
    rejected: list[RejectedRow] = []
    kept_rows = []
    for cluster_id, broker, log_dir, is_live, _ in rows:
        entry = known.get((cluster_id, broker))
        subject = ("log directory ", log_dir, " of broker ", broker)
        if entry is None:
            reason = _concat(*subject, ", which is not in the broker list")
        elif not entry[0]:
            reason = _concat(*subject, ", which was rejected from the broker list")
        elif entry[1] is not None and log_dir is not None and log_dir not in entry[1]:
            reason = f"broker {broker} has no log directory {log_dir} in the broker list"
        else:
            reason = None
        if reason is None:
            kept_rows.append((cluster_id, broker, log_dir, is_live))
            continue
        record = {"cluster_id": cluster_id, "broker_id": broker, "log_dir": log_dir}
        rejected.append((cluster_id, source, record_json({**record, "is_live": is_live}), reason))
    for cluster_id, broker, log_dir, is_live in kept_rows:
        held.add((cluster_id, broker, log_dir), None, is_live is not False)
    return rejected
