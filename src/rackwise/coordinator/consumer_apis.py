"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69), as Kafka 4.1 answers them, over
the consumer groups of :mod:`rackwise.coordinator.consumer_groups`.

Constraints
    * From version 1 the member id is the client's own and must be given
      (INVALID_REQUEST "MemberId can't be empty."); version 0 lets the coordinator make one.
    * A group whose partition is not led here is NOT_COORDINATOR, one still loading
      COORDINATOR_LOAD_IN_PROGRESS. A classic group of the same id gives way to the consumer
      group, its offsets kept (:mod:`rackwise.coordinator.migration`): an empty one always, one
      with members when ``group.consumer.migration.policy`` allows an upgrade (its members
      then served in the consumer group, :mod:`rackwise.coordinator.consumer_classic`);
      otherwise it is GROUP_ID_NOT_FOUND ("Group g is not a consumer group."), as Kafka
      answers when it does not convert.
    * Describe answers each group asked: its state, epochs, assignor and members with their
      assignment and target (topic names from the image), GROUP_ID_NOT_FOUND for one that is
      not a consumer group.
"""

from __future__ import annotations

from typing import Any, Final

from rackwise.common.error_codes import GROUP_ID_NOT_FOUND, INVALID_REQUEST, NONE
from rackwise.coordinator import migration
from rackwise.coordinator.consumer_groups import topic_partitions
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.coordinator.timers import wall_clock_ms
from rackwise.groups.classic import ClassicGroup
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_records import Partitions
from rackwise.groups.consumer_types import Heartbeat, HeartbeatAnswer, TopicsView
from rackwise.groups.offsets import GroupOffsets
from rackwise.net import current_connection
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.protocol.values import millis

CONSUMER_MEMBER_TYPE: Final = 1
"""``MemberType.CONSUMER`` in a ConsumerGroupDescribe member (v1)."""
CLASSIC_MEMBER_TYPE: Final = 0
"""``MemberType.CLASSIC``: a classic member served in the consumer group."""
NO_AUTHORIZED_OPERATIONS: Final = -(2**31)


def _version(body: Any) -> int:
    return int(type(body).__version__)


def _client_host() -> str:
    connection = current_connection()
    if connection is None:
        return ""
    return "/" + connection.ip


def heartbeat_request(body: Any, client_id: str) -> Heartbeat:
    names = body.subscribed_topic_names
    return Heartbeat(
        group_id=str(body.group_id),
        member_id=str(body.member_id or ""),
        member_epoch=int(body.member_epoch),
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=millis(body.rebalance_timeout),
        topic_names=None if names is None else tuple(str(n) for n in names),
        topic_regex=getattr(body, "subscribed_topic_regex", None),
        server_assignor=body.server_assignor,
        owned=topic_partitions(body.topic_partitions),
        client_id=client_id,
        client_host=_client_host(),
    )


def _heartbeat_response(version: int, answer: HeartbeatAnswer) -> Response:
    assignment = None
    if answer.assignment is not None:
        assignment = {
            "topic_partitions": [
                {"topic_id": t, "partitions": sorted(ps)}
                for t, ps in sorted(answer.assignment.items(), key=lambda kv: str(kv[0]))
            ]
        }
    values = {
        "throttle_time": 0,
        "error_code": answer.error_code,
        "error_message": answer.error_message,
        "member_id": answer.member_id,
        "member_epoch": answer.member_epoch,
        "heartbeat_interval": answer.heartbeat_interval_ms,
        "assignment": assignment,
    }
    return make(response_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, version), values)


async def consumer_group_heartbeat(
    coordinator: GroupCoordinator, body: Any, client_id: str
) -> Response:
    version = _version(body)
    request = heartbeat_request(body, client_id)
    if version >= 1 and not request.member_id.strip():
        return _heartbeat_response(
            version, HeartbeatAnswer(INVALID_REQUEST, "MemberId can't be empty.")
        )
    code, state, index = await coordinator.loaded_state(request.group_id)
    driver = coordinator.consumers
    shard = driver.shard(index, state) if code == NONE else None
    if state is None or shard is None:
        return _heartbeat_response(version, HeartbeatAnswer(code or INVALID_REQUEST))
    joining = request.member_epoch == 0
    conversion = await migration.into_consumer_group(
        coordinator, index, state, request.group_id, joining
    )
    if conversion.refused:
        answer = HeartbeatAnswer(conversion.code, conversion.message)
        return _heartbeat_response(version, answer)
    out = shard.heartbeat(request, wall_clock_ms(), driver.view())
    code = await driver.run(index, state, out)
    answer = out.answer or HeartbeatAnswer()
    if code != NONE:
        answer = HeartbeatAnswer(code)
    return _heartbeat_response(version, answer)


# ---- ConsumerGroupDescribe and ListGroups ------------------------------------------------


def _assignment(partitions: Partitions, view: TopicsView) -> dict[str, Any]:
    names = {t.topic_id: t.name for t in view.topics.values()}
    return {
        "topic_partitions": [
            {"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(ps)}
            for t, ps in sorted(partitions.items(), key=lambda kv: names.get(kv[0], str(kv[0])))
        ]
    }


def describe_group(group: ConsumerGroup, assignor: str, view: TopicsView) -> dict[str, Any]:
    members = [
        {
            "member_id": m.member_id,
            "instance_id": m.instance_id,
            "rack_id": m.rack_id,
            "member_epoch": m.member_epoch,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscribed_topic_names": list(m.topic_names),
            "subscribed_topic_regex": m.topic_regex,
            "assignment": _assignment(m.assigned, view),
            "target_assignment": _assignment(group.target(m.member_id), view),
            "member_type": CONSUMER_MEMBER_TYPE if m.classic is None else CLASSIC_MEMBER_TYPE,
        }
        for m in group.members.values()
    ]
    return {
        "error_code": NONE,
        "error_message": None,
        "group_id": group.group_id,
        "group_state": group.state,
        "group_epoch": group.epoch,
        "assignment_epoch": group.target_epoch,
        "assignor_name": group.preferred_assignor(assignor),
        "members": members,
        "authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


def _not_found(group_id: str, code: int, message: str | None) -> dict[str, Any]:
    return {
        "error_code": code,
        "error_message": message,
        "group_id": group_id,
        "group_state": "Dead",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "assignor_name": "",
        "members": [],
        "authorized_operations": NO_AUTHORIZED_OPERATIONS,
    }


async def consumer_group_describe(coordinator: GroupCoordinator, body: Any) -> Response:
    version = _version(body)
    driver = coordinator.consumers
    described = []
    for group_id in (str(g) for g in body.group_ids):
        code, state, index = await coordinator.loaded_state(group_id)
        shard = driver.shard(index, state) if code == NONE else None
        group = None if shard is None else shard.groups.get(group_id)
        if code != NONE:
            described.append(_not_found(group_id, code, None))
        elif group is None:
            message = f"Consumer group {group_id} not found."
            described.append(_not_found(group_id, GROUP_ID_NOT_FOUND, message))
        else:
            described.append(describe_group(group, driver.config.assignors[0], driver.view()))
    values = {"throttle_time": 0, "groups": described}
    return make(response_class(ApiKey.CONSUMER_GROUP_DESCRIBE, version), values)


def consumer_group_state(coordinator: GroupCoordinator, group: str) -> str | None:
    """The state of the KIP-848 consumer group ``group``, None if there is none."""
    code, state, index = coordinator.state(group)
    shard = coordinator.consumers.shard(index, state) if code == NONE else None
    found = None if shard is None else shard.groups.get(group)
    return None if found is None else found.state


def consumer_commit_error(
    coordinator: GroupCoordinator, index: int, state: GroupOffsets | None, group: str, body: Any
) -> int | None:
    """An OffsetCommit's error for the consumer group ``group`` (NONE when accepted; with an
    old member epoch STALE_MEMBER_EPOCH), None when ``group`` is no consumer group."""
    shard = coordinator.consumers.shard(index, state)
    if shard is None or group not in shard.groups:
        return None
    member = str(getattr(body, "member_id", "") or "")
    refused = shard.commit_error(group, member, int(body.generation_id_or_member_epoch))
    return NONE if refused is None else refused.code


def state_over(
    coordinator: GroupCoordinator, group: str, classic: ClassicGroup | None
) -> str | None:
    """The state of the consumer group ``group`` where a listing or a description shows it:
    None when there is none, or when a classic group of that id has members."""
    if classic is not None and classic.members:
        return None
    return consumer_group_state(coordinator, group)
