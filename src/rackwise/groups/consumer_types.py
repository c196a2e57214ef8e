"""What goes into and comes out of the consumer group coordinator
(:mod:`rackwise.groups.consumer_coordinator`): its configuration, the topics it reads from the
metadata image, a heartbeat and its answer, timers, and the checks Kafka makes of a heartbeat
before it touches a group (``throwIfConsumerGroupHeartbeatRequestIsInvalid``), with Kafka's
error codes and messages.

Pure values. A heartbeat's optional fields are ``None`` when the member sent nothing new, as
on the wire.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from rackwise.assignors.model import PartitionInfo
from rackwise.assignors.server_registry import DEFAULT_ASSIGNORS
from rackwise.common.error_codes import (
    INVALID_REGULAR_EXPRESSION,
    INVALID_REQUEST,
    UNSUPPORTED_ASSIGNOR,
)
from rackwise.groups.consumer_member import LEAVE_GROUP_EPOCH, LEAVE_GROUP_STATIC_EPOCH, Owned
from rackwise.groups.consumer_records import Partitions

INT32_MAX: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    """The broker's ``group.consumer.*`` settings the coordinator applies."""

    heartbeat_interval_ms: int = 5000
    """``group.consumer.heartbeat.interval.ms``."""
    session_timeout_ms: int = 45000
    """``group.consumer.session.timeout.ms``."""
    max_size: int = INT32_MAX
    """``group.consumer.max.size``."""
    assignors: tuple[str, ...] = DEFAULT_ASSIGNORS
    """``group.consumer.assignors``: the first is the default of a group whose members name
    none."""
    leader_rack_damping_ms: int = 30000
    """``group.consumer.leader.rack.change.delay.ms`` (rackwise's): how long a subscribed
    partition's leader must stay in another rack before a leader-rack-aware assignor's group
    gets a new target, so that a flapping leader does not make the group churn."""
    migration_policy: str = "bidirectional"
    """``group.consumer.migration.policy``
    (:mod:`rackwise.groups.online_migration`)."""
    classic_max_size: int = INT32_MAX
    """``group.max.size``: the largest classic group a downgrade may make."""
    offload_partitions: int = 1000
    """Subscribed partitions from which a group's target is computed away from the
    coordinator's loop (:meth:`ConsumerGroups.assigned` takes the result); a smaller group's
    target (a few milliseconds for any assignor) is computed within the heartbeat."""


@dataclass(frozen=True, slots=True)
class TopicView:
    """A topic as the coordinator reads it from the metadata image: its partitions' replica
    racks, the leader's first."""

    name: str
    topic_id: uuid.UUID
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True, slots=True)
class TopicsView:
    """The topics (internal ones left out) and a version that changes whenever they do."""

    version: int
    topics: Mapping[str, TopicView] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A ConsumerGroupHeartbeat request (api 68), with the client's id and host."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topic_names: tuple[str, ...] | None = None
    topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Owned | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    """A ConsumerGroupHeartbeat response; ``assignment`` is ``None`` when unchanged."""

    error_code: int = 0
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Partitions | None = None


SESSION: Final = "session"
REBALANCE: Final = "rebalance"
CLASSIC_JOIN: Final = "classic-join"
"""A classic member told to rejoin must do so within its rebalance timeout."""
CLASSIC_SYNC: Final = "classic-sync"
"""A classic member answered its JoinGroup must send its SyncGroup within its rebalance
timeout."""
MEMBER_TIMERS: Final = (SESSION, REBALANCE, CLASSIC_JOIN, CLASSIC_SYNC)


@dataclass(frozen=True, slots=True)
class Timer:
    """A timer to set (``deadline_ms``) or cancel (``None``), named by kind, group and member;
    a rebalance timer carries the member epoch it was set for."""

    kind: str
    group_id: str
    member_id: str
    deadline_ms: int | None
    epoch: int = 0


class GroupError(Exception):
    """An error answered with Kafka's code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def invalid(message: str) -> GroupError:
    return GroupError(INVALID_REQUEST, message)


def check_heartbeat(request: Heartbeat, assignors: tuple[str, ...]) -> None:
    """Kafka's checks of a heartbeat before any group is read."""
    for value, name in (
        (request.group_id, "GroupId"),
        (request.instance_id, "InstanceId"),
        (request.rack_id, "RackId"),
    ):
        if value is not None and not value.strip():
            raise invalid(f"{name} can't be empty.")
    epoch = request.member_epoch
    if epoch > 0 or epoch == LEAVE_GROUP_EPOCH:
        if not request.member_id.strip():
            raise invalid("MemberId can't be empty.")
    elif epoch == 0:
        if request.rebalance_timeout_ms == -1:
            raise invalid("RebalanceTimeoutMs must be provided in first request.")
        if request.owned is None or request.owned:
            raise invalid("TopicPartitions must be empty when (re-)joining.")
        if not request.topic_names and request.topic_regex is None:
            raise invalid(
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
            )
    elif epoch == LEAVE_GROUP_STATIC_EPOCH:
        if not request.member_id.strip():
            raise invalid("MemberId can't be empty.")
        if request.instance_id is None:
            raise invalid("InstanceId can't be null.")
    else:
        raise invalid("MemberEpoch is invalid.")
    if request.topic_regex is not None:
        compiled_regex(request.topic_regex)
    if request.server_assignor is not None and request.server_assignor not in assignors:
        raise GroupError(
            UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {request.server_assignor} is not supported. Supported assignors: "
            f"{', '.join(assignors)}.",
        )


_REGEXES: dict[str, re.Pattern[str]] = {}


def compiled_regex(regex: str) -> re.Pattern[str]:
    """The compiled subscription regex; INVALID_REGULAR_EXPRESSION when it does not compile."""
    found = _REGEXES.get(regex)
    if found is None:
        try:
            found = re.compile(regex)
        except re.error as e:
            raise GroupError(
                INVALID_REGULAR_EXPRESSION,
                f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}.",
            ) from None
        if len(_REGEXES) > 1000:
            _REGEXES.clear()
        _REGEXES[regex] = found
    return found
