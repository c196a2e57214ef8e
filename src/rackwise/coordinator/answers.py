"""What the classic group APIs read and answer: a JoinGroup as the coordinator reads it, the
JoinGroup and SyncGroup answers' values (Kafka's response defaults), and the error codes the
membership answers with (pure values, from :mod:`rackwise.common.error_codes`;
:mod:`rackwise.coordinator.membership` decides them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from rackwise.common.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    GROUP_MAX_SIZE_REACHED,
    MEMBER_ID_REQUIRED,
    NOT_COORDINATOR,
    REBALANCE_IN_PROGRESS,
)
from rackwise.groups.classic import Protocols


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


def complete(waiter: asyncio.Future[dict[str, Any]] | None, answer: dict[str, Any]) -> None:
    """Answer a waiting request, unless it has no waiter or was answered already."""
    if waiter is not None and not waiter.done():
        waiter.set_result(answer)


__all__ = [
    "COORDINATOR_NOT_AVAILABLE",
    "GROUP_MAX_SIZE_REACHED",
    "MEMBER_ID_REQUIRED",
    "NOT_COORDINATOR",
    "REBALANCE_IN_PROGRESS",
    "JoinRequest",
    "complete",
    "join_answer",
    "sync_answer",
]
