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
from rackwise.protocol import error_name

GROUP_ID_NOT_FOUND: Final = 69
RETRIABLE: Final = frozenset({5, 6, 7, 13, 14, 15, 16, 74, 75, 78})
"""LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, NETWORK_EXCEPTION,
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, FENCED_LEADER_EPOCH,
UNKNOWN_LEADER_EPOCH, OFFSET_NOT_AVAILABLE: what Kafka's admin client retries here."""

_EXCEPTIONS: Final = {
    -1: (
        "UnknownServerException",
        "The server experienced an unexpected error when processing the request.",
    ),
    3: ("UnknownTopicOrPartitionException", "This server does not host this topic-partition."),
    5: (
        "LeaderNotAvailableException",
        "There is no leader for this topic-partition as we are in the middle of a leadership "
        "election.",
    ),
    6: (
        "NotLeaderOrFollowerException",
        "For requests intended only for the leader, this error indicates that the broker is not "
        "the current leader. For requests intended for any replica, this error indicates that "
        "the broker is not a replica of the topic partition.",
    ),
    7: ("TimeoutException", "The request timed out."),
    12: ("OffsetMetadataTooLarge", "The metadata field of the offset request was too large."),
    13: ("NetworkException", "The server disconnected before a response was received."),
    14: (
        "CoordinatorLoadInProgressException",
        "The coordinator is loading and hence can't process requests.",
    ),
    15: ("CoordinatorNotAvailableException", "The coordinator is not available."),
    16: ("NotCoordinatorException", "This is not the correct coordinator."),
    22: ("IllegalGenerationException", "Specified group generation id is not valid."),
    24: ("InvalidGroupIdException", "The configured groupId is invalid."),
    25: ("UnknownMemberIdException", "The coordinator is not aware of this member."),
    27: ("RebalanceInProgressException", "The group is rebalancing, so a rejoin is needed."),
    29: ("TopicAuthorizationException", "Topic authorization failed."),
    30: ("GroupAuthorizationException", "Group authorization failed."),
    35: ("UnsupportedVersionException", "The version of API is not supported."),
    68: ("GroupNotEmptyException", "The group is not empty."),
    69: ("GroupIdNotFoundException", "The group id does not exist."),
    86: (
        "GroupSubscribedToTopicException",
        "Deleting offsets of a topic is forbidden while the consumer group is actively "
        "subscribed to it.",
    ),
}
"""Kafka's exception class and default message per error code (``Errors``), for the codes
these calls meet."""


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
        cls, default = _EXCEPTIONS.get(code, ("KafkaException", self.name))
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


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """A consumer group as DescribeGroups describes it; ``partition_assignor`` is the protocol
    chosen (empty unless the group is Stable), ``coordinator`` the node that answered."""

    group_id: str
    state: str
    partition_assignor: str
    members: tuple[MemberDescription, ...]
    coordinator: Node


@dataclass(frozen=True, slots=True)
class ClusterMetadata:
    """Metadata's brokers, and each topic asked for: its partitions' leaders (None: no
    leader), or its error code."""

    brokers: Mapping[int, Node]
    leaders: Mapping[str, Mapping[int, int | None]]
    topic_errors: Mapping[str, int]
