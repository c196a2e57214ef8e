"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup on the wire, as Kafka's group coordinator
answers them: a classic group's through :mod:`rackwise.coordinator.membership`, a consumer
group's classic members through :mod:`rackwise.coordinator.consumer_classic` (a group
migrating between the protocols), and an empty group of the other protocol converted first
(:mod:`rackwise.coordinator.migration`).

Constraints
    * JoinGroup checks the group id and ``group.min.session.timeout.ms`` /
      ``group.max.session.timeout.ms`` (INVALID_SESSION_TIMEOUT) before the coordinator, as
      Kafka's ``GroupCoordinatorService``; a Heartbeat during the partition's load is answered
      NONE, as Kafka answers it.
"""

from __future__ import annotations

from typing import Any

from rackwise.common.error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    INVALID_GROUP_ID,
    INVALID_SESSION_TIMEOUT,
    NONE,
)
from rackwise.coordinator import consumer_classic, migration
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.groups.classic_effects import JoinRequest, join_answer, sync_answer
from rackwise.net import current_connection
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.protocol.values import millis


def _version(body: Any) -> int:
    return int(type(body).__version__)


# ---- JoinGroup, SyncGroup, Heartbeat, LeaveGroup -------------------------------------------


async def join_group(coordinator: GroupCoordinator, body: Any, client_id: str) -> Response:
    """A JoinGroup, answered once the group's rebalance completes (or at once with an error,
    MEMBER_ID_REQUIRED, or this generation as it is)."""
    version = _version(body)
    group = str(body.group_id)
    session_ms = millis(body.session_timeout)
    config = coordinator.config
    if not group:
        answer = join_answer(INVALID_GROUP_ID, str(body.member_id))
    elif not (
        config.group_min_session_timeout_ms <= session_ms <= config.group_max_session_timeout_ms
    ):
        answer = join_answer(INVALID_SESSION_TIMEOUT, str(body.member_id))
    else:
        code, state, index = await coordinator.loaded_state(group)
        connection = current_connection()
        host = "/" + (connection.ip if connection is not None else "127.0.0.1")
        rebalance = getattr(body, "rebalance_timeout", None)
        rebalance_ms = session_ms if rebalance is None else millis(rebalance)
        request = JoinRequest.of(body, client_id, host, version, session_ms, rebalance_ms)
        served = None
        if code == NONE and state is not None:
            served = await consumer_classic.join(coordinator, index, state, request)
            if served is None:
                code = (await migration.into_classic_group(coordinator, index, state, group)).code
        if served is not None:
            answer = served
        elif code != NONE or state is None:
            answer = join_answer(code, str(body.member_id))
        else:
            answer = await coordinator.membership.join(index, state, request)
    if version < 7 and answer["protocol_name"] is None:
        answer["protocol_name"] = ""  # Kafka's JoinGroupResponse: not nullable before v7
    return make(response_class(ApiKey.JOIN_GROUP, version), {"throttle_time": 0, **answer})


async def sync_group(coordinator: GroupCoordinator, body: Any) -> Response:
    version = _version(body)
    group = str(body.group_id)
    if not group:
        answer = sync_answer(INVALID_GROUP_ID)
    else:
        code, state, index = await coordinator.loaded_state(group)
        member = (str(body.member_id), getattr(body, "group_instance_id", None))
        protocol = (getattr(body, "protocol_type", None), getattr(body, "protocol_name", None))
        served = None
        if code == NONE and state is not None:
            at = (*member, int(body.generation_id))
            served = consumer_classic.sync(coordinator, index, state, group, at, protocol)
        if served is not None:
            answer = served
        elif code != NONE or state is None:
            answer = sync_answer(code)
        else:
            answer = await coordinator.membership.sync(
                index,
                state,
                group,
                str(body.member_id),
                getattr(body, "group_instance_id", None),
                int(body.generation_id),
                getattr(body, "protocol_type", None),
                getattr(body, "protocol_name", None),
                {str(a.member_id): bytes(a.assignment) for a in body.assignments},
            )
    return make(response_class(ApiKey.SYNC_GROUP, version), {"throttle_time": 0, **answer})


async def heartbeat(coordinator: GroupCoordinator, body: Any) -> Response:
    version = _version(body)
    group = str(body.group_id)
    if not group:
        code = INVALID_GROUP_ID
    else:
        code, state, index = await coordinator.loaded_state(group)
        if code == COORDINATOR_LOAD_IN_PROGRESS:
            code = NONE  # Kafka answers a heartbeat during the load as if it were fine
        elif code == NONE and state is not None:
            at = (str(body.member_id), getattr(body, "group_instance_id", None))
            served = consumer_classic.heartbeat(
                coordinator, index, state, group, (*at, int(body.generation_id))
            )
            code = (
                served
                if served is not None
                else coordinator.membership.heartbeat(
                    index,
                    state,
                    group,
                    str(body.member_id),
                    getattr(body, "group_instance_id", None),
                    int(body.generation_id),
                )
            )
    values = {"throttle_time": 0, "error_code": code}
    return make(response_class(ApiKey.HEARTBEAT, version), values)


async def leave_group(coordinator: GroupCoordinator, body: Any) -> Response:
    """LeaveGroup: one member before v3, a batch from v3 (KIP-345); before v3 the answer is
    the group's error, else the first member's (Kafka's ``LeaveGroupResponse``)."""
    version = _version(body)
    group = str(body.group_id)
    if version >= 3:
        leaving = [(str(m.member_id), m.group_instance_id) for m in body.members]
    else:
        leaving = [(str(body.member_id), None)]
    codes: list[int] = []
    if not group:
        code = INVALID_GROUP_ID
    else:
        code, state, index = await coordinator.loaded_state(group)
        if code == NONE and state is not None:
            served = await consumer_classic.leave(coordinator, index, state, group, leaving)
            if served is not None:
                codes = served
            else:
                code, codes = coordinator.membership.leave(index, state, group, leaving)
    if version < 3:
        first = next((c for c in codes if c != NONE), NONE)
        values: dict[str, Any] = {"throttle_time": 0, "error_code": code if code != NONE else first}
    else:
        members = [
            {"member_id": m, "group_instance_id": i, "error_code": c}
            for (m, i), c in zip(leaving, codes, strict=False)
        ]
        values = {
            "throttle_time": 0,
            "error_code": code,
            "members": members if code == NONE else [],
        }
    return make(response_class(ApiKey.LEAVE_GROUP, version), values)
