"""What a membership rule decided, as values: the rules of
:mod:`~rackwise.coordinator.rebalance` and :mod:`~rackwise.coordinator.joins` change a
:class:`~rackwise.groups.classic.ClassicGroup` and return these, in order, and
:class:`~rackwise.coordinator.membership.GroupMembership` carries them out on the event loop:
answering a waiting request, starting or cancelling a timer, writing the group's record. A
timer's action and a write's continuation are rules again, given the time when they run (and
the write's error code), returning the next effects."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rackwise.coordinator.answers import Waiter

TimerKey = tuple[str, ...]
"""``(kind, group id[, member id])``: ``heartbeat`` (a member's session), ``join`` (the
rebalance's deadline, or its initial delay) or ``sync`` (the SyncGroups' deadline)."""


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
    """Write the group's ``GroupMetadataValue`` (``record()``, made when the write starts) to
    its partition; once the in-sync replicas answer, ``then(error code, now_ms)``."""

    group_id: str
    record: Callable[[], bytes]
    then: Callable[[int, int], list[Effect]]


Effect = Answer | StartTimer | CancelTimer | Store
