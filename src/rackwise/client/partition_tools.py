"""What ``kafka-get-offsets.sh``, ``kafka-delete-records.sh`` and
``kafka-leader-election.sh`` ask a cluster and print (Kafka's ``GetOffsetShell``,
``DeleteRecordsCommand`` and ``LeaderElectionCommand``), over a
:class:`~rackwise.client.group_values.Transport` and the partition calls of
:class:`~rackwise.client.groups.GroupsAdmin`.

Constraints
    * Lines and messages are Kafka's: ``topic:partition:offset`` sorted as Kafka sorts
      ``TopicPartition.toString()`` (``t-10`` before ``t-2``); the partitions of the other
      two tools in the order Java's hash maps and sets of ``TopicPartition`` iterate;
      ``partition: t-0\\tlow_watermark: 5``; ``Successfully completed leader election
      (PREFERRED) for partitions t-0, t-1``.
    * A bad argument or input file is refused by :mod:`rackwise.client.partition_args`
      (:class:`ToolError`, Kafka's message) before this module is loaded.
    * DeleteRecords goes to each partition's leader, ElectLeaders to any broker (which
      forwards it to the active controller).

Worked example
    ``election_lines("PREFERRED", {TopicPartition("t", 0): None})`` is ``(["Successfully
    completed leader election (PREFERRED) for partitions t-0"], 0)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from rackwise.client.group_values import GroupsError, Node, Transport
from rackwise.client.groups import GroupsAdmin
from rackwise.client.partition_args import (
    ELECTION_TYPES,
    UNKNOWN_OFFSET,
    PartitionFilter,
    ToolError,
)
from rackwise.common import TopicPartition
from rackwise.common.error_codes import ELECTION_NOT_NEEDED, NONE
from rackwise.common.error_table import describe
from rackwise.common.java import java_hashmap_order, topic_partition_hash
from rackwise.protocol import ApiKey


def hash_order(partitions: Sequence[TopicPartition], *, initial: int = 16) -> list[TopicPartition]:
    """The order a Java ``HashMap``/``HashSet`` of ``partitions`` iterates, as Kafka's tools
    print their maps and sets of partitions."""
    return java_hashmap_order(partitions, topic_partition_hash, exact=False, initial=initial)


def java_text(code: int, message: str | None = None) -> str:
    """The exception Kafka's admin client makes of an error code, as Java prints it."""
    error = describe(code)
    if error is None or error.exception is None:
        return GroupsError(code, message).java_text
    return f"org.apache.kafka.common.errors.{error.exception}: {message or error.message}"


# ---- kafka-get-offsets -------------------------------------------------------------------------


INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})


async def get_offsets(
    admin: GroupsAdmin, selected: PartitionFilter, timestamp: int, *, exclude_internal: bool
) -> list[str]:
    """``topic:partition:offset`` of each partition selected, in Kafka's order; a partition
    with no offset for the time (none that late, no leader) is left out."""
    cluster = await admin.metadata(None)
    partitions = [
        TopicPartition(topic, p)
        for topic, leaders in cluster.leaders.items()
        if selected.topic_allowed(topic) and not (exclude_internal and topic in INTERNAL_TOPICS)
        for p in leaders
        if selected.allowed(TopicPartition(topic, p))
    ]
    if not partitions:
        raise ToolError("Could not match any topic-partitions with the specified filters")
    offsets = await admin.log_offsets(partitions, timestamp)
    found = {tp: o for tp, o in offsets.items() if o is not None and o != UNKNOWN_OFFSET}
    return [f"{tp.topic}:{tp.partition}:{found[tp]}" for tp in sorted(found, key=str)]


# ---- kafka-delete-records ----------------------------------------------------------------------


async def delete_records(
    transport: Transport, admin: GroupsAdmin, offsets: Mapping[TopicPartition, int], timeout_ms: int
) -> list[str]:
    """DeleteRecords to each partition's leader; Kafka's line for each partition."""
    cluster = await admin.metadata(sorted({tp.topic for tp in offsets}))
    by_leader: dict[int, list[TopicPartition]] = {}
    lines: dict[TopicPartition, str] = {}
    for tp in offsets:
        leader = cluster.leaders.get(tp.topic, {}).get(tp.partition)
        if tp.topic in cluster.topic_errors or tp.partition not in cluster.leaders.get(
            tp.topic, {}
        ):
            code = cluster.topic_errors.get(tp.topic, 3)
            lines[tp] = f"partition: {tp}\terror: {java_text(code)}"
        elif leader is None or leader not in cluster.brokers:
            lines[tp] = f"partition: {tp}\terror: {java_text(5)}"
        else:
            by_leader.setdefault(leader, []).append(tp)
    for leader, partitions in sorted(by_leader.items()):
        lines.update(
            await _delete(transport, cluster.brokers[leader], partitions, offsets, timeout_ms)
        )
    # The admin client's result map is a HashMap copied from one sized for the partitions.
    ordered = hash_order(
        hash_order(list(offsets), initial=len(offsets)), initial=int(len(offsets) / 0.75 + 1)
    )
    return [lines[tp] for tp in ordered]


async def _delete(
    transport: Transport,
    node: Node,
    partitions: Sequence[TopicPartition],
    offsets: Mapping[TopicPartition, int],
    timeout_ms: int,
) -> dict[TopicPartition, str]:
    topics: dict[str, list[dict[str, int]]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(
            {"partition_index": tp.partition, "offset": offsets[tp]}
        )
    response = await transport.send(
        node,
        ApiKey.DELETE_RECORDS,
        {
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            "timeout": timeout_ms,
        },
    )
    lines = {}
    for topic in response.topics:
        for p in topic.partitions:
            tp = TopicPartition(str(topic.name), int(p.partition_index))
            code = int(p.error_code)
            lines[tp] = (
                f"partition: {tp}\tlow_watermark: {int(p.low_watermark)}"
                if code == NONE
                else f"partition: {tp}\terror: {java_text(code)}"
            )
    return lines


# ---- kafka-leader-election ---------------------------------------------------------------------


async def elect_leaders(
    transport: Transport,
    election_type: str,
    partitions: Iterable[TopicPartition] | None,
    timeout_ms: int,
) -> tuple[list[str], int]:
    """ElectLeaders for ``partitions`` (None: every eligible one); Kafka's lines and the
    number of partitions that failed."""
    topic_partitions = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topic_partitions = [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]
    response = await transport.send(
        None,
        ApiKey.ELECT_LEADERS,
        {
            "election_type": ELECTION_TYPES[election_type],
            "topic_partitions": topic_partitions,
            "timeout_ms": timeout_ms,
        },
        min_version=1,
    )
    if int(response.error_code) != NONE:
        raise GroupsError(int(response.error_code))
    return election_lines(election_type, _results(response))


def _results(response: Any) -> dict[TopicPartition, tuple[int, str | None] | None]:
    results: dict[TopicPartition, tuple[int, str | None] | None] = {}
    for topic in response.replica_election_results:
        for p in topic.partition_result:
            code = int(p.error_code)
            tp = TopicPartition(str(topic.topic), int(p.partition_id))
            results[tp] = None if code == NONE else (code, p.error_message or None)
    return results


def election_lines(
    election_type: str, results: Mapping[TopicPartition, tuple[int, str | None] | None]
) -> tuple[list[str], int]:
    """Kafka's lines: the partitions elected, those that needed no election, then one line
    per failure; and the number failed. A result is None or (error code, message)."""
    order = hash_order(list(results))
    succeeded = [str(tp) for tp in order if results[tp] is None]
    noop = [str(tp) for tp in order if (results[tp] or (0,))[0] == ELECTION_NOT_NEEDED]
    failed = {
        tp: e for tp in order if (e := results[tp]) is not None and e[0] != ELECTION_NOT_NEEDED
    }
    lines = []
    if succeeded:
        lines.append(
            f"Successfully completed leader election ({election_type}) for partitions "
            + ", ".join(succeeded)
        )
    if noop:
        lines.append(f"Valid replica already elected for partitions {', '.join(noop)}")
    for tp, error in failed.items():
        lines.append(
            f"Error completing leader election ({election_type}) for partition: {tp}: "
            f"{java_text(*error)}"
        )
    return lines, len(failed)
