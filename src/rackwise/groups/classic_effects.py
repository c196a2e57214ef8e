"""What the classic group rules read and decide, as values: a JoinGroup as the coordinator
reads it, the JoinGroup and SyncGroup answers' values (Kafka's response defaults), and the
effects a rule returns, in order: answering a waiting request, starting or cancelling a timer,
writing the group's record.

The rules of :mod:`rackwise.groups.classic_joins` and :mod:`rackwise.groups.classic_rebalance`
change a :class:`~rackwise.groups.classic.ClassicGroup` and return these;
:class:`~rackwise.groups.classic_coordinator.ClassicGroups` keeps a timer's action and a
write's continuation (rules again, given the time when they run and the write's error code)
and hands the driver only data: which timer to set for when, which record to append.

Constraints
    A waiting request is an opaque :data:`Waiter` (the driver's future, a simulation's
    token): the rules keep it on the member and name it in an :class:`Answer`, nothing more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rackwise.groups.classic import Protocols, as_protocols

Waiter = Any
"""A JoinGroup or SyncGroup waiting for its answer's values, opaque here."""

TimerKey = tuple[str, ...]
"""``(kind, group id[, member id])``: ``heartbeat`` (a member's session), ``join`` (the
rebalance's deadline, or its initial delay) or ``sync`` (the SyncGroups' deadline)."""


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A JoinGroup, as the coordinator reads it."""

    group_id: str
    member_id: str
    instance_id: str | None
    protocol_type: str
    protocols: Protocols
    session_timeout_ms: int
    rebalance_timeout_ms: int
    client_id: str
    client_host: str
    version: int
    reason: str | None = None

    @staticmethod
    def of(
        body: Any,
        client_id: str,
        client_host: str,
        version: int,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
    ) -> JoinRequest:
        """A JoinGroup request's fields, as read here."""
        return JoinRequest(
            group_id=str(body.group_id),
            member_id=str(body.member_id),
            instance_id=getattr(body, "group_instance_id", None),
            protocol_type=str(body.protocol_type),
            protocols=as_protocols(body.protocols),
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            client_id=client_id,
            client_host=client_host,
            version=version,
            reason=getattr(body, "reason", None),
        )


def join_answer(code: int, member_id: str, **fields: Any) -> dict[str, Any]:
    """A JoinGroup answer's values (Kafka's ``JoinGroupResponseData`` defaults)."""
    return {
        "error_code": code,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None,
        "leader": "",
        "skip_assignment": False,
        "member_id": member_id,
        "members": [],
        **fields,
    }


def sync_answer(code: int, **fields: Any) -> dict[str, Any]:
    """A SyncGroup answer's values (Kafka's ``SyncGroupResponseData`` defaults)."""
    return {
        "error_code": code,
        "protocol_type": None,
        "protocol_name": None,
        "assignment": b"",
        **fields,
    }


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer a waiting JoinGroup or SyncGroup (none if ``waiter`` is None or was answered)."""

    waiter: Waiter | None
    values: dict[str, Any]


@dataclass(frozen=True, slots=True)
class StartTimer:
    """Run ``fire(now_ms)`` after ``delay_ms``, in place of the timer of the same key, if the
    group is then still the live one of its partition."""

    key: TimerKey
    delay_ms: int
    fire: Callable[[int], list[Effect]]


@dataclass(frozen=True, slots=True)
class CancelTimer:
    """Cancel the timer of ``key``, if it is running."""

    key: TimerKey


@dataclass(frozen=True, slots=True)
class Store:
    """Write the group's ``GroupMetadataValue`` (``record()``) to its partition; once the
    in-sync replicas answer, ``then(error code, now_ms)``."""

    group_id: str
    record: Callable[[], bytes]
    then: Callable[[int, int], list[Effect]]


Effect = Answer | StartTimer | CancelTimer | Store
