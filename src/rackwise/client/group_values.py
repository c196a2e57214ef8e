"""The values and errors of :mod:`rackwise.client.groups`: a broker (:class:`Node`), the
:class:`Transport` the calls go through, what the calls return, and :class:`GroupsError` with
Kafka's exception for each error code these calls meet (``Errors``: class and default message,
word for word, so the command line prints what Kafka's tool prints).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from rackwise.common import RackwiseError, TopicPartition
from rackwise.common import error_codes as codes
from rackwise.common.error_table import describe
from rackwise.protocol import error_name

RETRIABLE: Final = frozenset(
    {
        codes.LEADER_NOT_AVAILABLE,
        codes.NOT_LEADER_OR_FOLLOWER,
        codes.REQUEST_TIMED_OUT,
        codes.NETWORK_EXCEPTION,
        codes.COORDINATOR_LOAD_IN_PROGRESS,
        codes.COORDINATOR_NOT_AVAILABLE,
        codes.NOT_COORDINATOR,
        codes.FENCED_LEADER_EPOCH,
        codes.UNKNOWN_LEADER_EPOCH,
        codes.OFFSET_NOT_AVAILABLE,
    }
)
"""What Kafka's admin client retries here."""

_MET: Final = frozenset(
    {
        codes.UNKNOWN_SERVER_ERROR,
        codes.UNKNOWN_TOPIC_OR_PARTITION,
        codes.LEADER_NOT_AVAILABLE,
        codes.NOT_LEADER_OR_FOLLOWER,
        codes.REQUEST_TIMED_OUT,
        codes.OFFSET_METADATA_TOO_LARGE,
        codes.NETWORK_EXCEPTION,
        codes.COORDINATOR_LOAD_IN_PROGRESS,
        codes.COORDINATOR_NOT_AVAILABLE,
        codes.NOT_COORDINATOR,
        codes.ILLEGAL_GENERATION,
        codes.INVALID_GROUP_ID,
        codes.UNKNOWN_MEMBER_ID,
        codes.REBALANCE_IN_PROGRESS,
        codes.TOPIC_AUTHORIZATION_FAILED,
        codes.GROUP_AUTHORIZATION_FAILED,
        codes.UNSUPPORTED_VERSION,
        codes.NON_EMPTY_GROUP,
        codes.GROUP_ID_NOT_FOUND,
        codes.GROUP_SUBSCRIBED_TO_TOPIC,
    }
)
"""The codes these calls meet, for which the error names Kafka's exception class and default
message (``Errors``); any other code is a ``KafkaException`` with Kafka's name of the code."""


def _exception(code: int, name: str) -> tuple[str, str]:
    """Kafka's exception class and default message for ``code``."""
    error = describe(code) if code in _MET else None
    if error is None or error.exception is None or error.message is None:
        return "KafkaException", name
    return error.exception, error.message


class GroupsError(RackwiseError):
    """A call the cluster refused or did not answer in time: ``code`` is Kafka's error code,
    ``name`` Kafka's name for it, ``java_text`` what Kafka's client prints of its exception
    (``org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.``);
    ``java_class`` names the exception where Kafka's client raises one of its own (Java's
    ``IllegalArgumentException`` for a group that is not a consumer group)."""

    def __init__(
        self, code: int, message: str | None = None, *, java_class: str | None = None
    ) -> None:
        self.code = code
        self.name = error_name(code)
        cls, default = _exception(code, self.name)
        cls = java_class or f"org.apache.kafka.common.errors.{cls}"
        self.java_text = f"{cls}: {message or default}"
        super().__init__(message or default)

    @property
    def is_retriable(self) -> bool:
        return self.code in RETRIABLE


@dataclass(frozen=True, slots=True)
class Node:
    """A broker: its id and its address."""

    id: int
    host: str
    port: int


class Transport(Protocol):
    """Sends one request of plain values (:func:`rackwise.protocol.make`) to ``node`` (None:
    any broker) at the highest version both sides speak within ``[min_version, max_version]``
    and returns the response message. A broker that cannot be reached or speaks no such
    version raises; the transport does not retry."""

    async def send(
        self,
        node: Node | None,
        api_key: int,
        values: Mapping[str, Any],
        *,
        min_version: int = 0,
        max_version: int | None = None,
    ) -> Any: ...


@dataclass(frozen=True, slots=True)
class Listed:
    """A group as ListGroups lists it; empty strings where the broker's version says nothing."""

    group_id: str
    protocol_type: str
    state: str
    type: str


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: tuple[TopicPartition, ...]
    member_epoch: int | None = None
    """A consumer-protocol member's epoch (ConsumerGroupDescribe); None for a classic one."""
    target: tuple[TopicPartition, ...] | None = None
    """A consumer-protocol member's target assignment."""
    rack: str | None = None


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A consumer group as DescribeGroups describes it (``partition_assignor`` the protocol
    chosen, empty unless the group is Stable), or a consumer-protocol group as
    ConsumerGroupDescribe does (its assignor, with the epochs); ``coordinator`` the node that
    answered."""

    group_id: str
    state: str
    partition_assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: Node
    group_epoch: int | None = None
    """A consumer-protocol group's epoch (ConsumerGroupDescribe); None for a classic one."""
    target_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """Metadata's brokers, and each topic asked for: its partitions' leaders (None: no
    leader), or its error code."""

    brokers: Mapping[int, Node]
    leaders: Mapping[str, Mapping[int, int | None]]
    topic_errors: Mapping[str, int]


def _partitions(assignment: Any) -> tuple[TopicPartition, ...]:
    return tuple(
        TopicPartition(str(t.topic_name), int(p))
        for t in assignment.topic_partitions
        for p in t.partitions
    )


def consumer_described(group: Any, node: Node) -> GroupDescription | GroupsError:
    """One group of a ConsumerGroupDescribe response, or its error."""
    code = int(group.error_code)
    if code != codes.NONE:
        return GroupsError(code, getattr(group, "error_message", None))
    members = tuple(
        MemberDescription(
            str(m.member_id),
            None if m.instance_id is None else str(m.instance_id),
            str(m.client_id),
            str(m.client_host),
            _partitions(m.assignment),
            member_epoch=int(m.member_epoch),
            target=_partitions(m.target_assignment),
            rack=None if m.rack_id is None else str(m.rack_id),
        )
        for m in group.members
    )
    return GroupDescription(
        str(group.group_id),
        str(group.group_state),
        str(group.assignor_name),
        members,
        node,
        group_epoch=int(group.group_epoch),
        target_epoch=int(group.assignment_epoch),
    )
