"""What the classic group APIs read and answer: a JoinGroup as the coordinator reads it, the
JoinGroup and SyncGroup answers' values (Kafka's response defaults), as pure values; the rules
of :mod:`rackwise.coordinator.joins` and :mod:`rackwise.coordinator.rebalance` decide them, with
the error codes of :mod:`rackwise.common.error_codes`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from rackwise.groups.classic import Protocols

Waiter = asyncio.Future[dict[str, Any]]
"""A JoinGroup or SyncGroup waiting for its answer's values (the event loop's future)."""


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
