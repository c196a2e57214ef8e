"""``rackwise assign``: run a consumer partition assignor over groups, as a what-if.

Input: one group a line, in the format of Kafka's assignor golden cases (``partitions`` with the
replica racks of each partition, the leader's first; ``members``; ``options``); other fields on
a line are ignored, and blank lines are skipped. ``--input -`` reads standard input.
Output: one line a group, ``{"assignment": {member_id: [[topic, partition], ...]}}``, members
in input order, partitions in the assignor's order. ``--report`` adds, per group, each member's
rack, partitions, partitions whose leader is in the member's rack, and that share, with the most
any balanced assignment reaches (the ``rack-local-optimal`` optimum) for comparison.

This command must start fast: it imports no Spark, pandas or numba, and the flow solver only
when ``rack-local-optimal`` runs or a report asks for the optimum.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import TextIO

from rackwise.assignors import (
    ASSIGNOR_NAMES,
    Assignment,
    GroupSpec,
    PartitionAssignor,
    create_assignor,
)
from rackwise.assignors.group_json import group_from_json
from rackwise.cli._table import render
from rackwise.cli.errors import CommandError
from rackwise.common import RackwiseError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--assignor", required=True, metavar="NAME", help=", ".join(ASSIGNOR_NAMES))
    parser.add_argument(
        "--input", required=True, metavar="FILE", help="one group a line (JSON); - for stdin"
    )
    parser.add_argument(
        "--report", action="store_true", help="partitions and leader-rack locality per member"
    )
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default=None,
        help="JSON lines (the default) or tables (the default with --report)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.assignor not in ASSIGNOR_NAMES:
        raise CommandError(
            f"unknown assignor {args.assignor!r}; known assignors: {', '.join(ASSIGNOR_NAMES)}"
        )
    assignor = create_assignor(args.assignor)
    as_table = (args.format or ("table" if args.report else "json")) == "table"
    if args.input == "-":
        _run_lines(sys.stdin, assignor, args.report, as_table)
    else:
        with open(args.input, encoding="utf-8") as lines:
            _run_lines(lines, assignor, args.report, as_table)
    return 0


def _run_lines(lines: TextIO, assignor: PartitionAssignor, report: bool, as_table: bool) -> None:
    first = True
    for number, group in _groups(lines):
        try:
            assignment = assignor.assign(group)
        except (RackwiseError, ValueError) as e:
            raise CommandError(f"line {number}: {e}") from None
        if as_table:
            if not first:
                print()
            print(_table(number, assignor.name, group, assignment, report))
        else:
            document: dict[str, object] = {"assignment": _assignment_json(group, assignment)}
            if report:
                document["report"] = _report_json(group, assignment)
            print(json.dumps(document, separators=(",", ":")))
        first = False


def _groups(lines: TextIO) -> Iterator[tuple[int, GroupSpec]]:
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line.rstrip("\r\n"))  # a column past the end, not line 2 column 1
        except json.JSONDecodeError as e:
            raise CommandError(f"line {number}: not JSON: {e.msg} at column {e.colno}") from None
        try:
            group = group_from_json(obj)
        except (RackwiseError, ValueError, KeyError, TypeError) as e:
            raise CommandError(f"line {number}: {e}") from None
        yield number, group


def _assignment_json(group: GroupSpec, assignment: Assignment) -> dict[str, list[list[object]]]:
    return {
        m.member_id: [[tp.topic, tp.partition] for tp in assignment.get(m.member_id, [])]
        for m in group.members
    }


def _rows(group: GroupSpec, assignment: Assignment) -> list[tuple[str, str | None, int, int]]:
    """(member, rack, partitions, partitions whose leader is in the member's rack)."""
    rows = []
    for m in group.members:
        parts = assignment.get(m.member_id, [])
        local = sum(
            1
            for tp in parts
            if m.rack and group.partitions[tp.topic][tp.partition].leader_rack == m.rack
        )
        rows.append((m.member_id, m.rack, len(parts), local))
    return rows


def _optimum(group: GroupSpec) -> int:
    from rackwise.assignors.optimal import optimal_locality  # noqa: PLC0415  (networkx)

    return optimal_locality(group)


def _share(local: int, total: int) -> str:
    return f"{100 * local / total:.1f}%" if total else "-"


def _report_json(group: GroupSpec, assignment: Assignment) -> dict[str, object]:
    rows = _rows(group, assignment)
    counts = [r[2] for r in rows]
    return {
        "members": [
            {"member_id": m, "rack": rack, "partitions": n, "leader_rack_local": local}
            for m, rack, n, local in rows
        ],
        "partitions": sum(counts),
        "leader_rack_local": sum(r[3] for r in rows),
        "balance": max(counts) - min(counts) if counts else 0,
        "optimal_leader_rack_local": _optimum(group),
    }


def _table(number: int, name: str, group: GroupSpec, assignment: Assignment, report: bool) -> str:
    if not report:
        listed = [
            (m.member_id, m.rack or "-", " ".join(map(str, assignment.get(m.member_id, []))))
            for m in group.members
        ]
        return f"line {number}: {name}\n" + render(["member", "rack", "assigned"], listed)
    rows = _rows(group, assignment)
    counts = [n for _, _, n, _ in rows]
    total, local = sum(counts), sum(r[3] for r in rows)
    optimum = _optimum(group)
    table = render(
        ["member", "rack", "partitions", "leader in rack", "share"],
        [(m, rack or "-", n, k, _share(k, n)) for m, rack, n, k in rows]
        + [("total", "", total, local, _share(local, total))],
    )
    balance = max(counts) - min(counts) if counts else 0
    return (
        f"line {number}: {name}, balance (max - min) {balance}\n{table}\n"
        f"most in the leader's rack for a balanced assignment: {optimum} "
        f"({_share(optimum, total)})"
    )
