"""What ``kafka-consumer-groups.sh`` makes of the cluster's answers, as Kafka's
``ConsumerGroupCommand`` makes it: the rows of ``--describe`` and its views, and the new
offsets of ``--reset-offsets``. Pure: descriptions and offsets in, rows and plans out.

Goals
    The same rows, in the same order, with the same values, as the Java tool prints for the
    same cluster: lag from the committed offset and the log-end offset, the members with the
    most partitions first, partitions a group committed but no member owns at the end.

Constraints
    * Order: where the tool iterates a Java ``HashMap`` or ``HashSet`` (a member's
      partitions, the offsets of a group, the groups and partitions of a reset plan) the rows
      come in that map's order (:func:`rackwise.common.java.java_hashmap_order` with
      ``TopicPartition.hashCode()``); groups come sorted as a ``TreeMap`` sorts them.
    * Lag is the log-end offset less the committed offset when both are known; a partition
      without a committed offset shows none.
    * Reset offsets are Kafka's: ``--to-offset`` and ``--shift-by`` are clamped into
      ``[log start, log end]`` with Kafka's warning; ``--to-current`` keeps a committed offset
      and takes the log end for a partition without one; ``--to-datetime`` takes Kafka's
      format (``YYYY-MM-DDTHH:mm:SS.sss``, UTC unless a zone is given).

Algorithm
    ``offset_rows``: members with partitions, most partitions first (a stable sort, as
    ``sorted(comparator.reversed())``), each member's partitions sorted by partition number
    and then put in a ``HashMap`` (the log-end offsets' map), whose order the rows take;
    then the committed partitions no member owns, likewise, with ``-`` for the member.

Worked example
    A member with ``orders-0`` and ``orders-1``, committed 4 and 7, log ends 10 and 7, gives
    two rows with lag 6 and 0; an offset committed for ``refunds-0`` that nobody owns adds a
    row with consumer ``-``.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from rackwise.client.groups import GroupDescription
from rackwise.common import RackwiseError, TopicPartition
from rackwise.common.java import (
    java_hashmap_order,
    java_string_hash,
    java_string_key,
    topic_partition_hash,
)
from rackwise.formats.consumer_groups import (
    GroupState,
    MemberAssignmentState,
    PartitionAssignmentState,
)

_DATETIME: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}:\d{2}|[+-]\d{2})"
)
_MS_PER_S: Final = 1000
_S_PER_MINUTE: Final = 60
_MINUTES_PER_HOUR: Final = 60


class ResetError(RackwiseError, ValueError):
    """A reset the tool refuses (Kafka's ``IllegalArgumentException`` or ``ParseException``)."""


def hash_order(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """The order a ``HashMap<TopicPartition, ...>`` filled in this order iterates them."""
    return java_hashmap_order(list(partitions), topic_partition_hash, exact=False)


def group_hash_order(groups: Iterable[str]) -> list[str]:
    """The order a ``HashMap<String, ...>`` filled in this order iterates the group ids."""
    return java_hashmap_order(list(groups), java_string_hash, exact=False)


def tree_order(groups: Iterable[str]) -> list[str]:
    """Group ids as a ``TreeMap`` orders them (Java's ``String.compareTo``)."""
    return sorted(dict.fromkeys(groups), key=java_string_key)


# ---- --describe --------------------------------------------------------------------------------


def partitions_to_describe(
    description: GroupDescription, committed: Mapping[TopicPartition, int | None]
) -> list[TopicPartition]:
    """The partitions whose log-end offsets ``--describe`` needs: the members' and the
    committed ones."""
    owned = [tp for m in description.members for tp in m.assignment]
    return list(dict.fromkeys([*owned, *committed]))


def _lag(offset: int | None, log_end: int | None) -> int | None:
    return None if offset is None or log_end is None else log_end - offset


def _partition_rows(
    group: str,
    partitions: Iterable[TopicPartition],
    committed: Mapping[TopicPartition, int | None],
    log_ends: Mapping[TopicPartition, int | None],
    member: tuple[str, str, str] | tuple[None, None, None],
) -> list[PartitionAssignmentState]:
    by_partition = sorted(hash_order(partitions), key=lambda tp: tp.partition)
    rows = []
    for tp in hash_order(by_partition):
        offset, log_end = committed.get(tp), log_ends.get(tp)
        rows.append(
            PartitionAssignmentState(
                group, tp.topic, tp.partition, offset, log_end, _lag(offset, log_end), *member
            )
        )
    return rows


def offset_rows(
    description: GroupDescription,
    committed: Mapping[TopicPartition, int | None],
    log_ends: Mapping[TopicPartition, int | None],
) -> list[PartitionAssignmentState]:
    """``--describe``'s rows for one group (Kafka's ``collectGroupsOffsets``)."""
    group = description.group_id
    members = [m for m in description.members if m.assignment]
    members.sort(key=lambda m: len(set(m.assignment)), reverse=True)
    rows: list[PartitionAssignmentState] = []
    owned: set[TopicPartition] = set()
    for m in members:
        partitions = set(m.assignment)
        owned |= partitions
        rows += _partition_rows(
            group, partitions, committed, log_ends, (m.member_id, m.host, m.client_id)
        )
    unowned = [tp for tp in committed if tp not in owned]
    if unowned:
        rows += _partition_rows(group, unowned, committed, log_ends, (None, None, None))
    return rows


def member_rows(description: GroupDescription) -> list[MemberAssignmentState]:
    """``--describe --members``' rows, members in the coordinator's order."""
    return [
        MemberAssignmentState(
            description.group_id,
            m.member_id,
            m.host,
            m.client_id,
            m.group_instance_id or "",
            len(set(m.assignment)),
            tuple(dict.fromkeys(m.assignment)),
            m.member_epoch,
            description.target_epoch,
            m.target,
        )
        for m in description.members
    ]


def state_row(description: GroupDescription) -> GroupState:
    """``--describe --state``'s row."""
    node = description.coordinator
    return GroupState(
        description.group_id,
        node.host,
        node.port,
        node.id,
        description.partition_assignor,
        description.state,
        len(description.members),
        description.group_epoch,
        description.target_epoch,
    )


# ---- --reset-offsets ---------------------------------------------------------------------------


def parse_topic_partitions(argument: str) -> list[TopicPartition]:
    """``--topic orders:0,2`` as its partitions (Kafka's ``parseTopicsWithPartitions``)."""
    parts = argument.split(":")
    if len(parts) != 2 or not parts[0]:
        raise ResetError(f"Invalid topic arg '{argument}', expected topic name and partitions")
    topic, partitions = parts
    result = []
    for partition in partitions.split(","):
        try:
            result.append(TopicPartition(topic, int(partition)))
        except ValueError:
            raise ResetError(
                f"Invalid partition '{partition}' specified in topic arg '{argument}''"
            ) from None
    return result


def clamp_offsets(
    requested: Mapping[TopicPartition, int],
    log_starts: Mapping[TopicPartition, int | None],
    log_ends: Mapping[TopicPartition, int | None],
) -> tuple[dict[TopicPartition, int], list[str]]:
    """Kafka's ``checkOffsetsRange``: each offset moved into ``[log start, log end]`` (a bound
    that is unknown does not move it), and the warnings Kafka logs for those moved."""
    offsets: dict[TopicPartition, int] = {}
    warnings = []
    for tp, offset in requested.items():
        start, end = log_starts.get(tp), log_ends.get(tp)
        if end is not None and offset > end:
            warnings.append(
                f"New offset ({offset}) is higher than latest offset for topic partition {tp}. "
                f"Value will be set to {end}"
            )
            offsets[tp] = end
        elif start is not None and offset < start:
            warnings.append(
                f"New offset ({offset}) is lower than earliest offset for topic partition {tp}. "
                f"Value will be set to {start}"
            )
            offsets[tp] = start
        else:
            offsets[tp] = offset
    return offsets, warnings


def shifted_offsets(
    partitions: Iterable[TopicPartition],
    committed: Mapping[TopicPartition, int | None],
    shift_by: int,
) -> dict[TopicPartition, int]:
    """``--shift-by``: each committed offset plus ``shift_by`` (before clamping)."""
    shifted = {}
    for tp in partitions:
        current = committed.get(tp)
        if current is None:
            raise ResetError(
                f"Cannot shift offset for partition {tp} since there is no current committed offset"
            )
        shifted[tp] = current + shift_by
    return shifted


STARTING: Final = "Error getting starting offset of topic partition"
ENDING: Final = "Error getting ending offset of topic partition"
BY_TIMESTAMP: Final = "Error getting offset by timestamp of topic partition"


def offsets_from_log(
    partitions: Iterable[TopicPartition], found: Mapping[TopicPartition, int | None], failure: str
) -> dict[TopicPartition, int]:
    """``--to-earliest``, ``--to-latest``, ``--to-datetime``: the log's offsets, each required
    (``failure``: Kafka's words when one is missing, :data:`STARTING`, :data:`ENDING` or
    :data:`BY_TIMESTAMP`)."""
    offsets = {}
    for tp in partitions:
        offset = found.get(tp)
        if offset is None:
            raise ResetError(f"{failure}: {tp}")
        offsets[tp] = offset
    return offsets


def current_offsets(
    partitions: Sequence[TopicPartition],
    committed: Mapping[TopicPartition, int | None],
    log_ends: Mapping[TopicPartition, int | None],
) -> dict[TopicPartition, int]:
    """``--to-current``: the committed offset, or the log end where there is none."""
    with_offset = {tp: c for tp in partitions if (c := committed.get(tp)) is not None}
    without = [tp for tp in partitions if tp not in with_offset]
    return {**with_offset, **offsets_from_log(without, log_ends, ENDING)}


def parse_datetime(text: str) -> int:
    """Kafka's ``Utils.getDateTime``: ``2024-05-01T12:00:00.000`` (UTC) or with a zone
    (``Z``, ``+02:00``, or ``+02``: after an hour-only zone Java reads no minutes), as
    milliseconds since the epoch. Like Java's ``DateFormat.parse``, text after a date is
    ignored."""
    parts = text.split("T")
    if len(parts) < 2:
        raise ResetError(
            "java.text.ParseException: Error parsing timestamp. It does not contain a 'T' "
            "according to ISO8601 format"
        )
    if not any(c in parts[1] for c in "+-Z"):
        text += "Z"
    match = _DATETIME.match(text)
    if match is None:
        raise ResetError(f'java.text.ParseException: Unparseable date: "{text}"')
    year, month, day, hour, minute, second, millis = (int(g) for g in match.groups()[:7])
    zone = match.group(8)
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(year, month)[1]):
        raise ResetError(f'java.text.ParseException: Unparseable date: "{text}"')
    if hour > 23 or minute > 59 or second > 59:
        raise ResetError(f'java.text.ParseException: Unparseable date: "{text}"')
    offset_minutes = 0
    if zone != "Z":
        hours, _, minutes = zone[1:].partition(":")
        offset_minutes = int(hours) * _MINUTES_PER_HOUR + int(minutes or 0)
        offset_minutes *= -1 if zone[0] == "-" else 1
    seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    seconds -= offset_minutes * _S_PER_MINUTE
    return seconds * _MS_PER_S + millis
