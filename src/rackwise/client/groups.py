"""The consumer group calls of Kafka's admin client, over rackwise's protocol layer: what
``kafka-consumer-groups.sh`` asks a cluster, request by request, behind a :class:`Transport`.

Goals
    ``rackwise consumer-groups`` lists, describes, resets and deletes groups and their offsets
    as Kafka's ``Admin`` does it for ``ConsumerGroupCommand``: the same requests to the same
    brokers (each group's coordinator, each partition's leader, every broker for ListGroups),
    the same retries, the same answers kept and dropped.

Constraints
    * I/O goes through a :class:`Transport` (one call: a request of plain values to a node, or
      to any broker; its response message), so the calls are tested against a fake, and the
      command line brings the real one over :mod:`rackwise.net` (which this layer may not
      import). Requests are :func:`rackwise.protocol.make` plain values; a field a version
      lacks is dropped, so one request serves every version the transport negotiates.
    * Versions: FindCoordinator v4+ (a batch of keys) and OffsetFetch v8+ (a batch of groups),
      which every Kafka since 3.0 and every rackwise broker speak; the others at any version.
    * Retriable errors (the coordinator moving or loading, a leader changing) are retried
      every :data:`RETRY_BACKOFF_S` until the operation's ``timeout_ms`` (the tool's
      ``--timeout``) runs out, as Kafka's admin client retries them; then the last error is
      raised. Any other error is a :class:`GroupsError` carrying Kafka's error code, name and
      the text of the exception Kafka's client makes of it.
    * A group DescribeGroups does not know (Dead, or GROUP_ID_NOT_FOUND from v6, KIP-1043) is
      described as Dead; a group of another protocol than ``consumer`` is refused, as Kafka's
      admin client refuses it. ListGroups keeps only consumer groups (protocol type
      ``consumer`` or empty).

Algorithm
    A group call: FindCoordinator for the groups not yet placed; one request per coordinator
    for its groups; groups answered with a retriable error are placed again and asked again.
    A partition call: Metadata for the topics; one ListOffsets per leader; partitions answered
    with a retriable error are asked again after fresh Metadata. A partition without a leader
    has no offset (None), as Kafka's tool shows it.

Worked example
    ``await GroupsAdmin(transport).describe_groups(["billing"])`` sends FindCoordinator
    (key_type 0, ["billing"]) to any broker, then DescribeGroups(["billing"]) to the node
    named, and returns ``{"billing": GroupDescription(state="Stable", members=(...), ...)}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from rackwise.client.consumer_protocol import decode_assignment
from rackwise.client.group_values import (
    RETRIABLE,
    ClusterMetadata,
    GroupDescription,
    GroupsError,
    Listed,
    MemberDescription,
    Node,
    Transport,
    consumer_described,
)
from rackwise.common import TopicPartition
from rackwise.common.error_codes import GROUP_ID_NOT_FOUND, NONE, UNSUPPORTED_VERSION
from rackwise.protocol import ApiKey

DEFAULT_TIMEOUT_MS: Final = 5000
"""``kafka-consumer-groups.sh --timeout``'s default, in milliseconds."""
RETRY_BACKOFF_S: Final = 0.1
"""Kafka's ``retry.backoff.ms`` (100 ms)."""
GROUP_KEY_TYPE: Final = 0
"""FindCoordinator's key type of a group."""
CONSUMER_PROTOCOL_TYPE: Final = "consumer"
DEAD: Final = "Dead"
NO_GENERATION: Final = -1
"""The generation (and member epoch) of a commit made outside the group, as the admin's."""
NO_LEADER: Final = -1
NO_LEADER_EPOCH: Final = -1
NO_OFFSET: Final = -1
"""An offset Kafka does not have: none committed, or none for a timestamp (UNKNOWN_OFFSET)."""
LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
CONSUMER_REPLICA_ID: Final = -1
READ_UNCOMMITTED: Final = 0

T = TypeVar("T")


def _code(value: Any) -> int:
    return int(value)


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    topics: dict[str, list[int]] = {}
    for tp in partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return topics


class GroupsAdmin:
    """The group calls (see the module docstring); ``clock`` and ``sleep`` pace the retries."""

    def __init__(
        self,
        transport: Transport,
        *,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.transport = transport
        self.timeout_ms = timeout_ms
        self._clock = clock
        self._sleep = sleep
        self._coordinators: dict[str, Node] = {}

    async def _retry(self, what: str, attempt: Callable[[], Awaitable[T | None]]) -> T:
        """Run ``attempt`` until it returns a value; a retriable :class:`GroupsError` (or a
        None answer: something retriable left) is tried again until the timeout."""
        deadline = self._clock() + self.timeout_ms / 1000
        last: GroupsError | None = None
        while True:
            try:
                result = await attempt()
                if result is not None:
                    return result
            except GroupsError as e:
                if not e.is_retriable:
                    raise
                last = e
            if self._clock() + RETRY_BACKOFF_S > deadline:
                detail = f": {last}" if last is not None else ""
                raise GroupsError(7, f"{what} timed out after {self.timeout_ms} ms{detail}")
            await self._sleep(RETRY_BACKOFF_S)

    # ---- the cluster ---------------------------------------------------------------------

    async def metadata(self, topics: Sequence[str] | None = ()) -> ClusterMetadata:
        """The brokers, and the named topics (None: every topic; empty: none)."""
        values = {
            "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }

        async def attempt() -> Any:
            return await self.transport.send(None, ApiKey.METADATA, values, min_version=1)

        response = await self._retry("Metadata", attempt)
        brokers = {
            int(b.node_id): Node(int(b.node_id), str(b.host), int(b.port)) for b in response.brokers
        }
        leaders: dict[str, dict[int, int | None]] = {}
        errors: dict[str, int] = {}
        for topic in response.topics:
            name, code = str(topic.name), _code(topic.error_code)
            if code != NONE:
                errors[name] = code
                continue
            leaders[name] = {
                int(p.partition_index): None if int(p.leader_id) == NO_LEADER else int(p.leader_id)
                for p in topic.partitions
            }
        return ClusterMetadata(brokers, leaders, errors)

    async def topic_partitions(self, topics: Sequence[str]) -> dict[str, list[int] | GroupsError]:
        """Each topic's partitions, sorted, or the error for a topic the cluster lacks."""
        if not topics:
            return {}
        found = await self.metadata(list(dict.fromkeys(topics)))
        result: dict[str, list[int] | GroupsError] = {}
        for topic in dict.fromkeys(topics):
            if topic in found.leaders:
                result[topic] = sorted(found.leaders[topic])
            else:
                result[topic] = GroupsError(found.topic_errors.get(topic, 3))
        return result

    async def _coordinator_of(self, groups: Sequence[str]) -> dict[str, Node | GroupsError]:
        """Each group's coordinator (FindCoordinator v4+, retried while it is unavailable)."""
        placed: dict[str, Node | GroupsError] = {
            g: self._coordinators[g] for g in groups if g in self._coordinators
        }

        async def attempt() -> dict[str, Node | GroupsError] | None:
            wanted = [g for g in groups if g not in placed]
            if wanted:
                response = await self.transport.send(
                    None,
                    ApiKey.FIND_COORDINATOR,
                    {"key_type": GROUP_KEY_TYPE, "coordinator_keys": wanted},
                    min_version=4,
                )
                for c in response.coordinators:
                    code = _code(c.error_code)
                    if code == NONE:
                        node = Node(int(c.node_id), str(c.host), int(c.port))
                        self._coordinators[str(c.key)] = placed[str(c.key)] = node
                    elif code not in RETRIABLE:
                        placed[str(c.key)] = GroupsError(code, c.error_message)
            return placed if all(g in placed for g in groups) else None

        return await self._retry("FindCoordinator", attempt)

    async def _per_coordinator(
        self,
        what: str,
        groups: Sequence[str],
        ask: Callable[[Node, list[str]], Awaitable[Mapping[str, T | GroupsError]]],
    ) -> dict[str, T | GroupsError]:
        """``ask`` each coordinator about its groups; a group answered with a retriable error
        (the coordinator moved, or is loading) is placed again and asked again."""
        done: dict[str, T | GroupsError] = {}

        async def attempt() -> dict[str, T | GroupsError] | None:
            todo = [g for g in dict.fromkeys(groups) if g not in done]
            coordinators = await self._coordinator_of(todo)
            by_node: dict[Node, list[str]] = {}
            for group in todo:
                node = coordinators[group]
                if isinstance(node, GroupsError):
                    done[group] = node
                else:
                    by_node.setdefault(node, []).append(group)
            for node, asked in by_node.items():
                for group, answer in (await ask(node, asked)).items():
                    if isinstance(answer, GroupsError) and answer.is_retriable:
                        self._coordinators.pop(group, None)
                    else:
                        done[group] = answer
            return done if len(done) == len(set(groups)) else None

        return await self._retry(what, attempt)

    # ---- groups --------------------------------------------------------------------------

    async def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[Listed]:
        """The consumer groups of every broker (ListGroups; v4+ to filter by state, v5+ by
        type), brokers in id order, each broker's groups in its order."""
        states, types = list(states), list(types)
        min_version = 5 if types else 4 if states else 0
        brokers = (await self.metadata(())).brokers
        listed: list[Listed] = []
        for broker_id in sorted(brokers):
            node = brokers[broker_id]

            async def attempt(node: Node = node) -> Any:
                response = await self.transport.send(
                    node,
                    ApiKey.LIST_GROUPS,
                    {"states_filter": states, "types_filter": types},
                    min_version=min_version,
                )
                code = _code(response.error_code)
                if code != NONE:
                    raise GroupsError(code)
                return response

            response = await self._retry("ListGroups", attempt)
            for g in response.groups:
                protocol_type = str(g.protocol_type)
                if protocol_type in (CONSUMER_PROTOCOL_TYPE, ""):
                    listed.append(
                        Listed(
                            str(g.group_id),
                            protocol_type,
                            str(getattr(g, "group_state", "")),
                            str(getattr(g, "group_type", "")),
                        )
                    )
        return listed

    async def describe_groups(
        self, groups: Sequence[str]
    ) -> dict[str, GroupDescription | GroupsError]:
        """Each group as DescribeGroups describes it, or its error."""

        async def ask(node: Node, asked: list[str]) -> dict[str, GroupDescription | GroupsError]:
            response = await self.transport.send(
                node,
                ApiKey.DESCRIBE_GROUPS,
                {"groups": asked, "include_authorized_operations": False},
            )
            return {str(g.group_id): _described(g, node) for g in response.groups}

        described = await self._per_coordinator("DescribeGroups", groups, ask)
        dead = [
            g for g, d in described.items() if isinstance(d, GroupDescription) and d.state == DEAD
        ]
        if dead:  # a consumer-protocol group is not a classic one: ConsumerGroupDescribe
            for group, answer in (await self._consumer_groups(dead)).items():
                if isinstance(answer, GroupDescription):
                    described[group] = answer
        return described

    async def _consumer_groups(
        self, groups: Sequence[str]
    ) -> dict[str, GroupDescription | GroupsError]:
        """Each group as ConsumerGroupDescribe describes it (KIP-848), or its error (a broker
        without the API: UNSUPPORTED_VERSION for each)."""

        async def ask(node: Node, asked: list[str]) -> dict[str, GroupDescription | GroupsError]:
            try:
                response = await self.transport.send(
                    node,
                    ApiKey.CONSUMER_GROUP_DESCRIBE,
                    {"group_ids": asked, "include_authorized_operations": False},
                )
            except GroupsError as e:
                if e.code != UNSUPPORTED_VERSION:
                    raise
                return dict.fromkeys(asked, e)
            return {str(g.group_id): consumer_described(g, node) for g in response.groups}

        return await self._per_coordinator("ConsumerGroupDescribe", groups, ask)

    async def committed_offsets(self, group: str) -> dict[TopicPartition, int | None]:
        """Every offset ``group`` committed (OffsetFetch v8+ for all partitions), in the
        coordinator's order; None for a partition without one."""

        async def ask(node: Node, asked: list[str]) -> dict[str, Any]:
            response = await self.transport.send(
                node,
                ApiKey.OFFSET_FETCH,
                {
                    "groups": [
                        {"group_id": g, "member_id": None, "member_epoch": -1, "topics": None}
                        for g in asked
                    ],
                    "require_stable": False,
                },
                min_version=8,
            )
            return {str(g.group_id): _fetched(g) for g in response.groups}

        answer = (await self._per_coordinator("OffsetFetch", [group], ask))[group]
        if isinstance(answer, GroupsError):
            raise answer
        return dict(answer)

    async def alter_offsets(self, group: str, offsets: Mapping[TopicPartition, int]) -> None:
        """Commit ``offsets`` for ``group`` from outside it (OffsetCommit, generation -1, no
        member), as ``alterConsumerGroupOffsets`` does; the first partition's error raises."""
        topics = [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": p,
                        "committed_offset": offsets[TopicPartition(topic, p)],
                        "committed_leader_epoch": NO_LEADER_EPOCH,
                        "committed_metadata": "",
                        "commit_timestamp": -1,
                    }
                    for p in partitions
                ],
            }
            for topic, partitions in _by_topic(offsets).items()
        ]

        async def ask(node: Node, asked: list[str]) -> dict[str, bool | GroupsError]:
            response = await self.transport.send(
                node,
                ApiKey.OFFSET_COMMIT,
                {
                    "group_id": group,
                    "generation_id_or_member_epoch": NO_GENERATION,
                    "member_id": "",
                    "group_instance_id": None,
                    "retention_time_ms": -1,
                    "topics": topics,
                },
                max_version=9,
            )
            codes = [_code(p.error_code) for t in response.topics for p in t.partitions]
            failed = [c for c in codes if c != NONE]
            return {group: GroupsError(failed[0]) if failed else True}

        answer = (await self._per_coordinator("OffsetCommit", [group], ask))[group]
        if isinstance(answer, GroupsError):
            raise answer

    async def delete_groups(self, groups: Sequence[str]) -> dict[str, GroupsError | None]:
        """Delete each group (DeleteGroups); None for a group deleted, else its error."""

        async def ask(node: Node, asked: list[str]) -> dict[str, bool | GroupsError]:
            response = await self.transport.send(
                node, ApiKey.DELETE_GROUPS, {"groups_names": asked}
            )
            return {
                str(r.group_id): True
                if _code(r.error_code) == NONE
                else GroupsError(_code(r.error_code))
                for r in response.results
            }

        answers = await self._per_coordinator("DeleteGroups", groups, ask)
        return {g: a if isinstance(a, GroupsError) else None for g, a in answers.items()}

    async def delete_offsets(
        self, group: str, partitions: Iterable[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        """Delete ``group``'s offsets of ``partitions`` (OffsetDelete): the top-level error
        code and each partition's."""
        wanted = list(dict.fromkeys(partitions))
        topics = [
            {"name": t, "partitions": [{"partition_index": p} for p in ps]}
            for t, ps in _by_topic(wanted).items()
        ]

        async def ask(node: Node, asked: list[str]) -> dict[str, Any]:
            response = await self.transport.send(
                node, ApiKey.OFFSET_DELETE, {"group_id": group, "topics": topics}
            )
            code = _code(response.error_code)
            if code in RETRIABLE:
                return {group: GroupsError(code)}
            return {
                group: (
                    code,
                    {
                        TopicPartition(str(t.name), int(p.partition_index)): _code(p.error_code)
                        for t in response.topics
                        for p in t.partitions
                    },
                )
            }

        answer = (await self._per_coordinator("OffsetDelete", [group], ask))[group]
        if isinstance(answer, GroupsError):
            raise answer
        code, results = answer
        return code, results

    # ---- partitions ----------------------------------------------------------------------

    async def log_offsets(
        self, partitions: Iterable[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int | None]:
        """Each partition's offset for ``timestamp`` (:data:`LATEST_TIMESTAMP`,
        :data:`EARLIEST_TIMESTAMP`, or ms since the epoch: -1 when no record is that late)
        from its leader (ListOffsets, read uncommitted); None for a partition without leader."""
        wanted = list(dict.fromkeys(partitions))
        found: dict[TopicPartition, int | None] = {}

        async def attempt() -> dict[TopicPartition, int | None] | None:
            todo = [tp for tp in wanted if tp not in found]
            cluster = await self.metadata(sorted({tp.topic for tp in todo}))
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in todo:
                if tp.topic in cluster.topic_errors or tp.topic not in cluster.leaders:
                    raise GroupsError(cluster.topic_errors.get(tp.topic, 3))
                if tp.partition not in cluster.leaders[tp.topic]:
                    raise GroupsError(3, f"Partition {tp} does not exist.")
                leader = cluster.leaders[tp.topic][tp.partition]
                if leader is None or leader not in cluster.brokers:
                    found[tp] = None
                else:
                    by_leader.setdefault(leader, []).append(tp)
            for leader, asked in sorted(by_leader.items()):
                found.update(await self._list_offsets(cluster.brokers[leader], asked, timestamp))
            return found if len(found) == len(wanted) else None

        await self._retry("ListOffsets", attempt)
        return {tp: found[tp] for tp in wanted}

    async def _list_offsets(
        self, node: Node, partitions: Sequence[TopicPartition], timestamp: int
    ) -> dict[TopicPartition, int]:
        response = await self.transport.send(
            node,
            ApiKey.LIST_OFFSETS,
            {
                "replica_id": CONSUMER_REPLICA_ID,
                "isolation_level": READ_UNCOMMITTED,
                "timeout": self.timeout_ms,
                "topics": [
                    {
                        "name": topic,
                        "partitions": [
                            {
                                "partition_index": p,
                                "current_leader_epoch": NO_LEADER_EPOCH,
                                "timestamp": timestamp,
                            }
                            for p in ps
                        ],
                    }
                    for topic, ps in _by_topic(partitions).items()
                ],
            },
            min_version=1,
        )
        offsets: dict[TopicPartition, int] = {}
        for topic in response.topics:
            for p in topic.partitions:
                code = _code(p.error_code)
                tp = TopicPartition(str(topic.name), int(p.partition_index))
                if code == NONE:
                    offsets[tp] = int(p.offset)
                elif code not in RETRIABLE:
                    raise GroupsError(code)
        return offsets


def _described(group: Any, node: Node) -> GroupDescription | GroupsError:
    """One group of a DescribeGroups response, or its error."""
    group_id, code = str(group.group_id), _code(group.error_code)
    if code == GROUP_ID_NOT_FOUND:
        return GroupDescription(group_id, DEAD, "", (), node)
    if code != NONE:
        return GroupsError(code, getattr(group, "error_message", None))
    protocol_type = str(group.protocol_type)
    if protocol_type not in (CONSUMER_PROTOCOL_TYPE, ""):
        return GroupsError(
            -1,
            f"GroupId {group_id} is not a consumer group ({protocol_type}).",
            java_class="java.lang.IllegalArgumentException",
        )
    members = tuple(
        MemberDescription(
            str(m.member_id),
            None if m.group_instance_id is None else str(m.group_instance_id),
            str(m.client_id),
            str(m.client_host),
            decode_assignment(bytes(m.member_assignment)).partitions,
        )
        for m in group.members
    )
    return GroupDescription(
        group_id, str(group.group_state), str(group.protocol_data), members, node
    )


def _fetched(group: Any) -> dict[TopicPartition, int | None] | GroupsError:
    """One group of an OffsetFetch response: its offsets (partitions answered with an error
    left out, as Kafka's admin client leaves them), or the group's error."""
    code = _code(group.error_code)
    if code != NONE:
        return GroupsError(code)
    offsets: dict[TopicPartition, int | None] = {}
    for topic in group.topics:
        for p in topic.partitions:
            if _code(p.error_code) == NONE:
                offset = int(p.committed_offset)
                offsets[TopicPartition(str(topic.name), int(p.partition_index))] = (
                    None if offset < 0 else offset
                )
    return offsets


__all__ = [
    "ClusterMetadata",
    "GroupDescription",
    "GroupsAdmin",
    "GroupsError",
    "Listed",
    "MemberDescription",
    "Node",
    "Transport",
]
