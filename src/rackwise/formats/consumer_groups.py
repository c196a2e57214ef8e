"""``kafka-consumer-groups.sh`` output, character for character: the tables Kafka's
``ConsumerGroupCommand`` prints with ``printf`` (column widths computed from the rows, ``-`` for
a missing value), and the same rows as JSON documents.

Goals
    A script or a person that reads ``kafka-consumer-groups.sh`` output reads
    ``rackwise consumer-groups`` output unchanged: the blank line each table starts with, the
    header, the padding (trailing blanks included), the order of the rows as given.

Constraints
    * Pure: rows in, text out. The caller orders the rows as Kafka's tool does (its hash maps'
      order, see :mod:`rackwise.client.group_reports`).
    * Widths are Kafka's: a column's width is the widest of its values and a floor (15 for
      group, topic, consumer id and host; 17 for the group instance id; 25 for the
      coordinator; group names in ``--list`` get 10 more), the other columns fixed (10 for the
      partition, 15 for offsets and lag, 20 and 15 for strategy and state, 30 in the reset and
      delete-offsets reports). A value wider than its column is printed whole, as ``%-Ns``
      prints it.
    * ``--describe --state`` keeps Kafka's layout: the GROUP column has the coordinator's
      width and the COORDINATOR (ID) column 25.
    * ``--members --verbose``'s ASSIGNMENT cell lists each topic's partitions as
      ``topic(0,1,2)``, the topics sorted and joined by ``, `` (the form the tool has printed
      since KIP-175; the Java port of 2024 drops the topic names, which this does not copy).
    * JSON: one document, a list of objects with the table's fields in snake_case, ``null``
      for a missing value.

Algorithm
    Each table is Java's ``String.format`` of one line format, applied to the header and to
    each row: ``%-Ns`` is ``str.ljust(N)``, ``%s`` the value itself; ``%n`` is ``\\n``.

Worked example
    One member ``c-1`` (client ``c``) of group ``billing`` at ``/127.0.0.1`` reading ``orders``
    partition 0, committed 4 of 10: :func:`offsets_text` is a blank line, the header
    ``GROUP`` ``TOPIC`` ``PARTITION`` ``CURRENT-OFFSET`` ``LOG-END-OFFSET`` ``LAG``
    ``CONSUMER-ID`` ``HOST`` ``CLIENT-ID`` and the row ``billing`` ``orders`` ``0`` ``4``
    ``10`` ``6`` ``c-1`` ``/127.0.0.1`` ``c``, each cell padded to 15 characters (the
    partition to 10, the client id not at all) and followed by one blank.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common import TopicPartition

MISSING: Final = "-"
"""Kafka's ``MISSING_COLUMN_VALUE``."""
NOT_PROVIDED: Final = "Not Provided"
"""The partition of a ``--delete-offsets`` topic whose partitions could not be found."""

OFFSETS_HEADER: Final = (
    "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
    "CONSUMER-ID", "HOST", "CLIENT-ID",
)  # fmt: skip
STATE_HEADER: Final = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
RESET_HEADER: Final = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
DELETE_OFFSETS_HEADER: Final = ("TOPIC", "PARTITION", "STATUS")
_MIN_WIDTH: Final = 15
_MIN_INSTANCE_ID_WIDTH: Final = 17
_MIN_COORDINATOR_WIDTH: Final = 25
_LIST_PADDING: Final = 10


@dataclass(frozen=True, slots=True)
class PartitionAssignmentState:
    """One row of ``--describe`` (``--offsets``): None where Kafka prints ``-``."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


@dataclass(frozen=True, slots=True)
class MemberAssignmentState:
    """One row of ``--describe --members``; ``group_instance_id`` is ``""`` for a dynamic
    member, ``assignment`` its partitions (kept for ``--verbose``)."""

    group: str
    consumer_id: str
    host: str
    client_id: str
    group_instance_id: str
    num_partitions: int
    assignment: tuple[TopicPartition, ...]
    member_epoch: int | None = None
    """A consumer-protocol member's epoch and target assignment (None for a classic one)."""
    target_epoch: int | None = None
    target: tuple[TopicPartition, ...] | None = None


@dataclass(frozen=True, slots=True)
class GroupState:
    """The one row of ``--describe --state`` for a group."""

    group: str
    coordinator_host: str
    coordinator_port: int
    coordinator_id: int
    assignment_strategy: str
    state: str
    num_members: int
    group_epoch: int | None = None
    """A consumer-protocol group's epochs (None for a classic one)."""
    target_epoch: int | None = None

    @property
    def coordinator(self) -> str:
        """As Kafka prints it: ``host:port  (id)``."""
        return f"{self.coordinator_host}:{self.coordinator_port}  ({self.coordinator_id})"


@dataclass(frozen=True, slots=True)
class GroupListing:
    """A group as ``--list`` shows it; ``type`` and ``state`` as Kafka names them
    (``Classic``, ``Stable``; ``Unknown`` when the broker did not say)."""

    group_id: str
    type: str
    state: str


def _text(value: object) -> str:
    return MISSING if value is None else str(value)


def _line(widths: Sequence[int | None], values: Sequence[object]) -> str:
    """``String.format`` of ``%-Ns %-Ms ... %s``: a None width is a bare ``%s``."""
    return " ".join(
        str(v) if w is None else str(v).ljust(w) for w, v in zip(widths, values, strict=True)
    )


# ---- --describe (--offsets) -----------------------------------------------------------------


def offsets_text(rows: Sequence[PartitionAssignmentState]) -> str:
    """One group's ``--describe`` table, from the blank line before it to the last newline."""
    group = max([_MIN_WIDTH, *(len(r.group) for r in rows)])
    topic = max([_MIN_WIDTH, *(len(_text(r.topic)) for r in rows)])
    consumer = max([_MIN_WIDTH, *(len(_text(r.consumer_id)) for r in rows)])
    host = max([_MIN_WIDTH, *(len(_text(r.host)) for r in rows)])
    widths = (group, topic, 10, 15, 15, 15, consumer, host, None)
    lines = [_line(widths, OFFSETS_HEADER)]
    lines += [
        _line(
            widths,
            (
                r.group,
                _text(r.topic),
                _text(r.partition),
                _text(r.offset),
                _text(r.log_end_offset),
                _text(r.lag),
                _text(r.consumer_id),
                _text(r.host),
                _text(r.client_id),
            ),
        )
        for r in rows
    ]
    return "".join("\n" + line for line in lines) + "\n"


def offsets_json(rows: Iterable[PartitionAssignmentState]) -> list[dict[str, Any]]:
    return [
        {
            "group": r.group,
            "topic": r.topic,
            "partition": r.partition,
            "current_offset": r.offset,
            "log_end_offset": r.log_end_offset,
            "lag": r.lag,
            "consumer_id": r.consumer_id,
            "host": r.host,
            "client_id": r.client_id,
        }
        for r in rows
    ]


# ---- --describe --members ---------------------------------------------------------------------


def assignment_text(partitions: Iterable[TopicPartition]) -> str:
    """``--verbose``'s ASSIGNMENT cell: ``orders(0,1), refunds(2)``, or ``-`` for none."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return MISSING
    cells = [f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in by_topic.items()]
    return ", ".join(sorted(cells))


def members_text(rows: Sequence[MemberAssignmentState], *, verbose: bool) -> str:
    """One group's ``--describe --members`` table: the header is printed even without rows,
    and every cell but the last is followed by a blank, as Kafka prints them."""
    group = max([_MIN_WIDTH, *(len(r.group) for r in rows)])
    consumer = max([_MIN_WIDTH, *(len(r.consumer_id) for r in rows)])
    instance = max([_MIN_INSTANCE_ID_WIDTH, *(len(r.group_instance_id) for r in rows)])
    host = max([_MIN_WIDTH, *(len(r.host) for r in rows)])
    client = max([_MIN_WIDTH, *(len(r.client_id) for r in rows)])
    with_instance = any(r.group_instance_id for r in rows)
    if with_instance:
        widths: tuple[int, ...] = (group, consumer, instance, host, client, 15)
        header: tuple[str, ...] = (
            "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
        )  # fmt: skip
    else:
        widths = (group, consumer, host, client, 15)
        header = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    if verbose and any(r.member_epoch is not None for r in rows):
        return _consumer_members_text(rows, widths, header, with_instance)
    text = "\n" + _line(widths, header) + " " + ("ASSIGNMENT" if verbose else "") + "\n"
    for r in rows:
        text += _line(widths, _member_values(r, with_instance)) + " "
        text += (assignment_text(r.assignment) if verbose else "") + "\n"
    return text


def _member_values(r: MemberAssignmentState, with_instance: bool) -> tuple[object, ...]:
    values: tuple[object, ...] = (r.group, r.consumer_id)
    if with_instance:
        values += (r.group_instance_id,)
    return (*values, r.host, r.client_id, r.num_partitions)


def _consumer_members_text(
    rows: Sequence[MemberAssignmentState],
    widths: tuple[int, ...],
    header: tuple[str, ...],
    with_instance: bool,
) -> str:
    """``--members --verbose`` of a consumer-protocol group, with the columns of Kafka 4's
    tool: each member's epoch and assignment, then the target's epoch and assignment."""
    current = [assignment_text(r.assignment) for r in rows]
    width = max([20, *(len(c) for c in current)])
    all_widths: tuple[int | None, ...] = (*widths, 15, width, 15, None)
    header = (*header, "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
    text = "\n" + _line(all_widths, header) + "\n"
    for r, assigned in zip(rows, current, strict=True):
        target = assignment_text(r.target or ())
        values = (*_member_values(r, with_instance), r.member_epoch, assigned, r.target_epoch)
        text += _line(all_widths, (*values, target)) + "\n"
    return text


def members_json(rows: Iterable[MemberAssignmentState], *, verbose: bool) -> list[dict[str, Any]]:
    documents = []
    for r in rows:
        document: dict[str, Any] = {
            "group": r.group,
            "consumer_id": r.consumer_id,
            "group_instance_id": r.group_instance_id or None,
            "host": r.host,
            "client_id": r.client_id,
            "num_partitions": r.num_partitions,
        }
        if verbose:
            document["assignment"] = [
                {"topic": tp.topic, "partition": tp.partition} for tp in r.assignment
            ]
            if r.member_epoch is not None:
                document["member_epoch"] = r.member_epoch
                document["target_epoch"] = r.target_epoch
                document["target_assignment"] = [
                    {"topic": tp.topic, "partition": tp.partition} for tp in r.target or ()
                ]
        documents.append(document)
    return documents


# ---- --describe --state -----------------------------------------------------------------------


def state_text(state: GroupState, *, verbose: bool = False) -> str:
    """A group's ``--describe --state`` table: a header and one row; with ``verbose``, a
    consumer-protocol group's epochs too (``GROUP-EPOCH``, ``TARGET-ASSIGNMENT-EPOCH``)."""
    coordinator = state.coordinator
    widths: tuple[int | None, ...] = (max(_MIN_COORDINATOR_WIDTH, len(coordinator)), 25, 20, 15)
    header: tuple[str, ...] = STATE_HEADER[:4]
    row: tuple[object, ...] = (state.group, coordinator, state.assignment_strategy, state.state)
    if verbose and state.group_epoch is not None:
        widths += (15, 25)
        header += ("GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH")
        row += (state.group_epoch, state.target_epoch)
    widths += (None,)
    header += STATE_HEADER[4:]
    row += (state.num_members,)
    return "\n" + _line(widths, header) + "\n" + _line(widths, row) + "\n"


def state_json(states: Iterable[GroupState]) -> list[dict[str, Any]]:
    return [
        {
            "group": s.group,
            "coordinator_host": s.coordinator_host,
            "coordinator_port": s.coordinator_port,
            "coordinator_id": s.coordinator_id,
            "assignment_strategy": s.assignment_strategy,
            "state": s.state,
            "num_members": s.num_members,
            **(
                {}
                if s.group_epoch is None
                else {"group_epoch": s.group_epoch, "target_assignment_epoch": s.target_epoch}
            ),
        }
        for s in states
    ]


# ---- --list -----------------------------------------------------------------------------------


def listing_text(groups: Sequence[GroupListing], *, include_type: bool, include_state: bool) -> str:
    """``--list``: one group id a line, or with ``--type``/``--state`` a table of them."""
    if not (include_type or include_state):
        return "".join(g.group_id + "\n" for g in groups)
    width = max([_MIN_WIDTH, *(len(g.group_id) for g in groups)]) + _LIST_PADDING
    widths: list[int] = [width]
    header = ["GROUP"]
    if include_type:
        widths.append(20)
        header.append("TYPE")
    if include_state:
        widths.append(20)
        header.append("STATE")
    lines = [_line(widths, header)]
    for g in groups:
        values = [g.group_id]
        if include_type:
            values.append(g.type)
        if include_state:
            values.append(g.state)
        lines.append(_line(widths, values))
    return "".join(line + "\n" for line in lines)


def listing_json(
    groups: Iterable[GroupListing], *, include_type: bool, include_state: bool
) -> list[dict[str, Any]]:
    documents = []
    for g in groups:
        document: dict[str, Any] = {"group": g.group_id}
        if include_type:
            document["type"] = g.type
        if include_state:
            document["state"] = g.state
        documents.append(document)
    return documents


# ---- --reset-offsets and --delete-offsets ----------------------------------------------------


def reset_plan_text(plan: Mapping[str, Sequence[tuple[TopicPartition, int]]]) -> str:
    """``--reset-offsets``' report: the header (when any group was asked), then each group's
    new offsets, in the order given."""
    widths = (30, 30, 10, 15)
    text = "\n" + _line(widths, RESET_HEADER) if plan else ""
    for group, offsets in plan.items():
        for tp, offset in offsets:
            text += "\n" + _line(widths, (group, tp.topic, tp.partition, offset))
    return text + "\n"


def reset_plan_json(plan: Mapping[str, Sequence[tuple[TopicPartition, int]]]) -> list[Any]:
    return [
        {"group": group, "topic": tp.topic, "partition": tp.partition, "new_offset": offset}
        for group, offsets in plan.items()
        for tp, offset in offsets
    ]


def delete_offsets_order(results: Mapping[TopicPartition, str | None]) -> list[TopicPartition]:
    """Kafka's order of the report: by the topic and the partition number written together as
    one string (``t0 < t10 < t2``)."""
    return sorted(results, key=lambda tp: tp.topic + str(tp.partition))


def delete_offsets_text(results: Mapping[TopicPartition, str | None]) -> str:
    """``--delete-offsets``' report: each partition's status, ``Successful`` or ``Error: :``
    and the error (a partition of -1 is a topic whose partitions were not found)."""
    widths = (30, 15, 15)
    text = "\n" + _line(widths, DELETE_OFFSETS_HEADER)
    for tp in delete_offsets_order(results):
        error = results[tp]
        partition = tp.partition if tp.partition >= 0 else NOT_PROVIDED
        status = "Successful" if error is None else "Error: :" + error
        text += "\n" + _line(widths, (tp.topic, partition, status))
    return text + "\n"


def delete_offsets_json(results: Mapping[TopicPartition, str | None]) -> list[Any]:
    return [
        {
            "topic": tp.topic,
            "partition": tp.partition if tp.partition >= 0 else None,
            "error": results[tp],
        }
        for tp in delete_offsets_order(results)
    ]
