"""What ``kafka-get-offsets.sh``, ``kafka-delete-records.sh`` and
``kafka-leader-election.sh`` ask a cluster and print (Kafka's ``GetOffsetShell``,
``DeleteRecordsCommand`` and ``LeaderElectionCommand``), over a
:class:`~rackwise.client.group_values.Transport` and the partition calls of
:class:`~rackwise.client.groups.GroupsAdmin`.

Constraints
    * Lines and messages are Kafka's: ``topic:partition:offset`` sorted as Kafka sorts
      ``TopicPartition.toString()`` (``t-10`` before ``t-2``); ``partition: t-0\\tlow_watermark:
      5``; ``Successfully completed leader election (PREFERRED) for partitions t-0, t-1``.
    * A bad argument or input file raises :class:`ToolError` with Kafka's message.
    * DeleteRecords goes to each partition's leader, ElectLeaders to any broker (which
      forwards it to the active controller).

Worked example
    ``parse_time("earliest")`` is -2; ``parse_time("soon")`` raises ``Malformed time argument
    soon. Please use -1 or latest / -2 or earliest / -3 or max-timestamp / ...``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from rackwise.client.group_values import GroupsError, Node, Transport
from rackwise.client.groups import GroupsAdmin
from rackwise.common import TopicPartition
from rackwise.common.error_codes import ELECTION_NOT_NEEDED, NONE
from rackwise.common.error_table import describe
from rackwise.common.errors import RackwiseError
from rackwise.protocol import ApiKey

TIMES: Final = {
    "latest": -1, "earliest": -2, "max-timestamp": -3, "earliest-local": -4, "latest-tiered": -5,
}  # fmt: skip
UNKNOWN_OFFSET: Final = -1
ELECTION_TYPES: Final = {"PREFERRED": 0, "UNCLEAN": 1}
INT_MAX: Final = 2**31 - 1


class ToolError(RackwiseError):
    """Bad input, in Kafka's words."""


def java_text(code: int, message: str | None = None) -> str:
    """The exception Kafka's admin client makes of an error code, as Java prints it."""
    error = describe(code)
    if error is None or error.exception is None:
        return GroupsError(code, message).java_text
    return f"org.apache.kafka.common.errors.{error.exception}: {message or error.message}"


# ---- kafka-get-offsets -------------------------------------------------------------------------


def parse_time(text: str) -> int:
    """``--time``: a name, -1 to -5, or ms since the epoch (Kafka's ``parseOffsetSpec``)."""
    if text in TIMES:
        return TIMES[text]
    try:
        value = int(text)
        if not -(2**63) <= value < 2**63:
            raise ValueError(text)
    except ValueError:
        raise ToolError(
            f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or "
            "max-timestamp / -4 or earliest-local / -5 or latest-tiered, or a specified long "
            "format timestamp"
        ) from None
    return value


def _topic_regex(text: str) -> re.Pattern[str]:
    """Kafka's ``IncludeList``: commas are alternatives, blanks and quotes dropped."""
    raw = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", text.strip().replace(",", "|")))
    return re.compile(raw.replace(" ", ""))


class PartitionFilter:
    """Which topics and partitions ``--topic``/``--partitions`` or ``--topic-partitions``
    select: rules of (topic regex, low, high) with ``low <= partition < high``."""

    _RULE: Final = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")

    def __init__(self, rules: Sequence[tuple[re.Pattern[str], frozenset[int] | None, int, int]]):
        self.rules = rules

    @classmethod
    def of_topic(cls, topic: str | None, partitions: str | None) -> PartitionFilter:
        ids: frozenset[int] | None = None
        if partitions:
            try:
                ids = frozenset(_java_int(p) for p in partitions.split(","))
            except ValueError:
                raise ToolError(
                    "--partitions expects a comma separated list of numeric partition ids, but "
                    f"received: {partitions}"
                ) from None
        return cls([(_topic_regex(topic if topic is not None else ".*"), ids, 0, INT_MAX)])

    @classmethod
    def of_patterns(cls, text: str) -> PartitionFilter:
        rules: list[tuple[re.Pattern[str], frozenset[int] | None, int, int]] = []
        for spec in [s for s in text.split(",")] or [""]:
            match = cls._RULE.fullmatch(spec)
            if match is None:
                raise ToolError(f"Invalid rule specification: {spec}")
            topic, single, low, high = (g or None for g in match.groups())
            regex = _topic_regex(topic or ".*")
            if single is not None:
                rules.append((regex, frozenset({int(single)}), 0, INT_MAX))
            else:
                rules.append((regex, None, int(low or 0), int(high) if high else INT_MAX))
        return cls(rules)

    def topic_allowed(self, topic: str) -> bool:
        return any(regex.fullmatch(topic) for regex, *_ in self.rules)

    def allowed(self, tp: TopicPartition) -> bool:
        return any(
            regex.fullmatch(tp.topic)
            and (ids is None or not ids or tp.partition in ids)
            and low <= tp.partition < high
            for regex, ids, low, high in self.rules
        )


def _java_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", text) or not -(2**31) <= int(text) <= INT_MAX:
        raise ValueError(text)
    return int(text)


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


def parse_offset_json(text: str) -> dict[TopicPartition, int]:
    """``--offset-json-file``'s partitions and offsets (version 1), refused as Kafka refuses
    it: not JSON, another version, no partitions, a partition twice."""
    try:
        document = json.loads(text)
    except ValueError:
        raise ToolError("The input string is not a valid JSON") from None
    version = document.get("version", 1) if isinstance(document, dict) else None
    if version != 1:
        raise ToolError(f"Not supported version field value {version}")
    if "partitions" not in document:
        raise ToolError("Missing partitions field")
    seen: dict[TopicPartition, list[int]] = {}
    try:
        for entry in document["partitions"]:
            tp = TopicPartition(str(entry["topic"]), int(entry["partition"]))
            seen.setdefault(tp, []).append(int(entry["offset"]))
    except (KeyError, TypeError, ValueError) as e:
        raise ToolError(f"Malformed offset json file: {e}") from None
    duplicates = [str(tp) for tp, offsets in seen.items() if len(offsets) > 1]
    if duplicates:
        raise ToolError(
            f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}"
        )
    return {tp: offsets[0] for tp, offsets in seen.items()}


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
    return [lines[tp] for tp in offsets]


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


def parse_election_json(text: str) -> list[TopicPartition]:
    """``--path-to-json-file``'s partitions, refused as Kafka refuses them."""
    try:
        document = json.loads(text)
    except ValueError:
        raise ToolError("Replica election data is empty") from None
    if not isinstance(document, dict) or "partitions" not in document:
        raise ToolError('Replica election data is missing "partitions" field')
    try:
        partitions = [
            TopicPartition(str(e["topic"]), int(e["partition"])) for e in document["partitions"]
        ]
    except (KeyError, TypeError, ValueError) as e:
        raise ToolError(f"Malformed replica election data: {e}") from None
    duplicates = sorted({str(tp) for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise ToolError(
            f"Replica election data contains duplicate partitions: [{', '.join(duplicates)}]"
        )
    return list(dict.fromkeys(partitions))


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
    succeeded = [str(tp) for tp, e in results.items() if e is None]
    noop = [str(tp) for tp, e in results.items() if e is not None and e[0] == ELECTION_NOT_NEEDED]
    failed = {tp: e for tp, e in results.items() if e is not None and e[0] != ELECTION_NOT_NEEDED}
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
