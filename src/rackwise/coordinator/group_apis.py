"""The group APIs a broker serves, answered as Kafka answers them: FindCoordinator,
OffsetCommit, OffsetFetch, ListGroups, DescribeGroups, DeleteGroups and OffsetDelete (JoinGroup,
SyncGroup, Heartbeat and LeaveGroup are :mod:`rackwise.coordinator.membership_apis`'), over the
:class:`~rackwise.coordinator.group_coordinator.GroupCoordinator`'s partitions.

Goals
    Consumers that ``subscribe`` form groups (:mod:`rackwise.coordinator.membership`), and a
    consumer that ``assign``s its partitions with a ``group.id`` commits its offsets and reads
    them back, from any broker, across restarts and leader changes: kafka-python's
    ``KafkaConsumer(group_id=...)``, confluent-kafka's ``commit()``/``committed()`` and a
    closing consumer's last commit, aiokafka's ``commit``; the admin clients list, describe
    and delete the groups and their offsets.

Constraints
    * Classic groups; KIP-848's are :mod:`rackwise.coordinator.consumer_apis`'s. A commit is
      checked against the group's live members (:meth:`ClassicGroup.commit_error`), or for a
      group without any by :meth:`~rackwise.groups.offsets.GroupOffsets.commit_error`.
    * Transactions are not served: FindCoordinator for a transactional id answers
      TRANSACTIONAL_ID_AUTHORIZATION_FAILED, which librdkafka and kafka-python treat as final.
    * An empty group id is INVALID_GROUP_ID; a request for a group whose partition this broker
      does not lead is NOT_COORDINATOR, and one whose partition is still loading after
      :data:`~rackwise.coordinator.group_coordinator.LOAD_WAIT_S` COORDINATOR_LOAD_IN_PROGRESS
      (clients retry both).

Algorithm
    FindCoordinator: the leader of the key's ``__consumer_offsets`` partition, if it is
    unfenced with an endpoint on the listener (v0-3: one key, with Kafka's error message; v4+:
    a batch of keys). OffsetCommit: a partition the cluster does not have is
    UNKNOWN_TOPIC_OR_PARTITION (KafkaApis answers it before the coordinator sees the request);
    then the group id, the coordinator and the group's rules; then each partition's metadata
    size (``offset.metadata.max.bytes``: OFFSET_METADATA_TOO_LARGE); the accepted ones are
    appended as one batch (:meth:`GroupCoordinator.append`), with an expiry when a v2-v4
    request asked for a retention time. OffsetFetch: the committed offsets (-1 for a partition
    never committed), for the named topics or, with none named, every partition the group
    committed; before v2 a group's error is each partition's. ListGroups: the groups of every
    partition led here with their states, filtered by state and type (v4, v5).
    DescribeGroups: the group's state, protocol type and members (their subscriptions and the
    protocol only once Stable, as Kafka); Empty for a group with offsets only; Dead for an
    unknown one, with GROUP_ID_NOT_FOUND from v6 (KIP-1043). DeleteGroups: for an Empty group
    a tombstone for each of its offsets and one for the group, as one batch (GROUP_ID_NOT_FOUND
    for a group that does not exist, NON_EMPTY_GROUP for one with members). OffsetDelete:
    tombstones for the named partitions the group has offsets for, except those of topics a
    member of a live ``consumer`` group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC); a live group
    of another protocol type is NON_EMPTY_GROUP.

Worked example
    kafka-python's ``KafkaConsumer(group_id="billing")`` asks any broker FindCoordinator
    ("billing"): the first answers are COORDINATOR_NOT_AVAILABLE while ``__consumer_offsets``
    is created, then the leader of partition 9 is named. Its commit of offset 42 for
    ``orders-0`` is answered NONE once the in-sync replicas have the record, and
    ``describe_consumer_groups(["billing"])`` shows a classic group in state Empty; two
    consumers that subscribe with ``group_id="audit"`` show it Stable with both as members.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, Final

from rackwise.common.acl import OPERATIONS_NOT_ASKED, AclOperation, operations_field
from rackwise.common.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    GROUP_ID_NOT_FOUND,
    GROUP_SUBSCRIBED_TO_TOPIC,
    INVALID_GROUP_ID,
    INVALID_REQUEST,
    NON_EMPTY_GROUP,
    NONE,
    OFFSET_METADATA_TOO_LARGE,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.coordinator import consumer_apis
from rackwise.coordinator.group_coordinator import GroupCoordinator
from rackwise.groups.classic import EMPTY as EMPTY_STATE
from rackwise.groups.classic import STABLE, ClassicGroup
from rackwise.groups.offsets import (
    NO_EXPIRE_TIMESTAMP,
    NO_LEADER_EPOCH,
    CommittedOffset,
    GroupOffsets,
    encode_key,
    encode_value,
)
from rackwise.protocol import ApiKey, Response, error_name, make, response_class
from rackwise.protocol.values import millis

NO_OFFSET: Final = -1
EMPTY: Final = "Empty"
DEAD: Final = "Dead"
CLASSIC: Final = "classic"
GROUP_OPERATIONS: Final = operations_field(
    (
        AclOperation.READ,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    )
)
"""A group's operations as a broker without an authorizer allows them (KIP-430)."""


def _version(body: Any) -> int:
    return int(type(body).__version__)


# ---- FindCoordinator ------------------------------------------------------------------


def find_coordinator(coordinator: GroupCoordinator, body: Any) -> Response:
    version = _version(body)
    key_type = int(body.key_type)
    if version >= 4:
        coordinators = []
        for key in body.coordinator_keys:
            code, node = coordinator.find(key_type, str(key))
            coordinators.append(
                {"key": str(key), "error_code": code, "error_message": None, **node}
            )
        values: dict[str, Any] = {"throttle_time": 0, "coordinators": coordinators}
    else:
        code, node = coordinator.find(key_type, str(body.key))
        values = {
            "throttle_time": 0,
            "error_code": code,
            "error_message": _message(code),
            **node,
        }
    return make(response_class(ApiKey.FIND_COORDINATOR, version), values)


# ---- OffsetCommit -------------------------------------------------------------------------


async def offset_commit(coordinator: GroupCoordinator, body: Any) -> Response:
    version = _version(body)
    group = str(body.group_id)
    generation = int(body.generation_id_or_member_epoch)
    asked = [(str(t.name), p) for t in body.topics for p in t.partitions]
    outcome = _unknown_partitions(coordinator, asked)
    known = [(t, p) for t, p in asked if (t, int(p.partition_index)) not in outcome]
    if not known:
        return _commit_response(version, asked, outcome, NONE)
    code, state, index = (
        (INVALID_GROUP_ID, None, -1) if not group else await coordinator.loaded_state(group)
    )
    consumer = consumer_apis.consumer_commit_error(coordinator, index, state, group, body)
    if consumer is not None:
        code = consumer
    elif state is not None:
        classic = _classic(coordinator, index, state, group)
        if classic is None:
            code = state.commit_error(group, generation, version)
        else:
            member = str(getattr(body, "member_id", "") or "")
            code = classic.commit_error(
                member, getattr(body, "group_instance_id", None), generation
            )
    if code != NONE or state is None:
        return _commit_response(version, asked, outcome, code)
    now_ms = int(time.time() * 1000)
    retention_ms = millis(body.retention_time) if version <= 4 else -1
    expire_ms = NO_EXPIRE_TIMESTAMP if retention_ms < 0 else now_ms + retention_ms
    accepted: list[tuple[bytes, bytes]] = []
    for topic, p in known:
        where = (topic, int(p.partition_index))
        metadata = p.committed_metadata or ""
        if len(metadata) > coordinator.config.offset_metadata_max_bytes:
            outcome[where] = OFFSET_METADATA_TOO_LARGE
            continue
        epoch = int(getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH))
        committed = CommittedOffset(int(p.committed_offset), epoch, metadata, now_ms, expire_ms)
        accepted.append((encode_key(group, *where), encode_value(committed)))
    if accepted:
        code = await coordinator.append(index, accepted, state)
    return _commit_response(version, asked, outcome, code)


# ---- OffsetFetch --------------------------------------------------------------------------


async def offset_fetch(coordinator: GroupCoordinator, body: Any) -> Response:
    version = _version(body)
    if version >= 8:
        groups = [
            await _fetch_group(coordinator, str(g.group_id), g.topics, version) for g in body.groups
        ]
        values: dict[str, Any] = {"throttle_time": 0, "groups": groups}
    else:
        answer = await _fetch_group(coordinator, str(body.group_id), body.topics, version)
        values = {
            "throttle_time": 0,
            "topics": answer["topics"],
            "error_code": answer["error_code"],
        }
    return make(response_class(ApiKey.OFFSET_FETCH, version), values)


async def _fetch_group(
    coordinator: GroupCoordinator, group: str, topics: Iterable[Any] | None, version: int
) -> dict[str, Any]:
    code, state, _ = (
        (INVALID_GROUP_ID, None, -1) if not group else await coordinator.loaded_state(group)
    )
    if code != NONE and version >= 2:
        return {"group_id": group, "topics": [], "error_code": code}
    offsets = state.offsets(group) if state is not None else {}
    wanted: dict[str, list[int]] = {}
    if topics is None:
        for name, p in sorted(offsets):
            wanted.setdefault(name, []).append(p)
    else:
        for t in topics:
            wanted.setdefault(str(t.name), []).extend(int(i) for i in t.partition_indexes)
    answered = [
        {"name": name, "partitions": [_fetched(i, offsets.get((name, i)), code) for i in ps]}
        for name, ps in wanted.items()
    ]
    return {"group_id": group, "topics": answered, "error_code": NONE}


# ---- ListGroups and DescribeGroups ----------------------------------------------------------


async def list_groups(coordinator: GroupCoordinator, body: Any) -> Response:
    """The groups of the partitions led here (every group is a simple one: classic, Empty),
    once :meth:`GroupCoordinator.led_groups` has loaded them."""
    version = _version(body)
    states = {s.strip().lower() for s in getattr(body, "states_filter", ())}
    types = {t.strip().lower() for t in getattr(body, "types_filter", ())}
    code, groups = await coordinator.led_groups()
    listed = []
    for group in sorted(groups):
        classic = _classic_of(coordinator, group)
        consumer = consumer_apis.state_over(coordinator, group, classic)
        state = consumer or (EMPTY if classic is None else classic.state)
        protocol_type = "" if classic is None else classic.protocol_type or ""
        protocol_type, group_type = ("consumer",) * 2 if consumer else (protocol_type, CLASSIC)
        if (states and state.lower() not in states) or (types and group_type not in types):
            continue
        listed.append(
            {
                "group_id": group,
                "protocol_type": protocol_type,
                "group_state": state,
                "group_type": group_type,
            }
        )
    values = {"throttle_time": 0, "error_code": code, "groups": listed}
    return make(response_class(ApiKey.LIST_GROUPS, version), values)


async def describe_groups(coordinator: GroupCoordinator, body: Any) -> Response:
    version = _version(body)
    asked_operations = bool(getattr(body, "include_authorized_operations", False))
    described = [
        await _describe(coordinator, str(g), version, asked_operations) for g in body.groups
    ]
    values = {"throttle_time": 0, "groups": described}
    return make(response_class(ApiKey.DESCRIBE_GROUPS, version), values)


async def _describe(
    coordinator: GroupCoordinator, group: str, version: int, asked_operations: bool
) -> dict[str, Any]:
    code, state, index = (
        (INVALID_GROUP_ID, None, -1) if not group else await coordinator.loaded_state(group)
    )
    answer: dict[str, Any] = {
        "group_id": group,
        "error_code": code,
        "error_message": None,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": OPERATIONS_NOT_ASKED,
    }
    if state is None:
        return answer
    classic = _classic(coordinator, index, state, group)
    consumer = consumer_apis.state_over(coordinator, group, classic)
    if consumer or (classic is None and not state.has_group(group)):  # KIP-1043 from v6
        answer["group_state"] = DEAD
        if version >= 6:
            answer["error_code"] = GROUP_ID_NOT_FOUND
            what = "is not a classic group" if consumer else "not found"
            answer["error_message"] = f"Group {group} {what}."
        return answer
    answer["group_state"] = EMPTY
    if classic is not None:
        stable = classic.state == STABLE and classic.protocol_name is not None
        answer["group_state"] = classic.state
        answer["protocol_type"] = classic.protocol_type or ""
        answer["protocol_data"] = classic.protocol_name if stable else ""
        answer["members"] = [
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_metadata": (
                    m.metadata(classic.protocol_name)
                    if stable and classic.protocol_name is not None
                    else b""
                ),
                "member_assignment": m.assignment,
            }
            for m in classic.members.values()
        ]
    if asked_operations:
        answer["authorized_operations"] = GROUP_OPERATIONS
    return answer


# ---- DeleteGroups and OffsetDelete ----------------------------------------------------------


async def delete_groups(coordinator: GroupCoordinator, body: Any) -> Response:
    """Each group deleted as Kafka deletes an empty classic group: its offsets' tombstones and
    the group's, appended as one batch to its partition."""
    version = _version(body)
    results = [
        {"group_id": str(g), "error_code": await _delete_group(coordinator, str(g))}
        for g in body.groups_names
    ]
    values = {"throttle_time": 0, "results": results}
    return make(response_class(ApiKey.DELETE_GROUPS, version), values)


async def _delete_group(coordinator: GroupCoordinator, group: str) -> int:
    code, state, index = (
        (INVALID_GROUP_ID, None, -1) if not group else await coordinator.loaded_state(group)
    )
    if code != NONE or state is None:
        return code
    classic = _classic(coordinator, index, state, group)
    if classic is None and not state.has_group(group):
        return GROUP_ID_NOT_FOUND
    if classic is not None and classic.state != EMPTY_STATE:
        return NON_EMPTY_GROUP
    code = await coordinator.append(index, state.deletion(group), state)
    if code == NONE:
        coordinator.membership.forget(index, state, group)
    return code


async def offset_delete(coordinator: GroupCoordinator, body: Any) -> Response:
    """Tombstones for the named partitions' offsets (those the group has); every partition
    the cluster has is answered NONE, as Kafka answers for a group without members."""
    version = _version(body)
    group = str(body.group_id)
    asked = [(str(t.name), p) for t in body.topics for p in t.partitions]
    outcome = _unknown_partitions(coordinator, asked)
    code = NONE
    if len(outcome) < len(asked):
        code, state, index = (
            (INVALID_GROUP_ID, None, -1) if not group else await coordinator.loaded_state(group)
        )
        classic = None if state is None else _classic(coordinator, index, state, group)
        if state is not None and classic is None and not state.has_group(group):
            code = GROUP_ID_NOT_FOUND
        if code == NONE and classic is not None and classic.state != EMPTY_STATE:
            if classic.protocol_type != "consumer":
                code = NON_EMPTY_GROUP
            else:  # a member reads the topic: its offsets stay (Kafka's GROUP_SUBSCRIBED_TO_TOPIC)
                for t, p in asked:
                    where = (t, int(p.partition_index))
                    if where not in outcome and classic.is_subscribed_to(t):
                        outcome[where] = GROUP_SUBSCRIBED_TO_TOPIC
        if code == NONE and state is not None:
            offsets = state.offsets(group)
            tombstones = [
                (encode_key(group, t, int(p.partition_index)), None)
                for t, p in asked
                if (t, int(p.partition_index)) in offsets
                and (t, int(p.partition_index)) not in outcome
            ]
            if tombstones:
                code = await coordinator.append(index, tombstones, state)
    # A group's error is the answer's, with the partitions KafkaApis answered itself.
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, p in asked:
        where = (topic, int(p.partition_index))
        if code == NONE or where in outcome:
            error = outcome.get(where, NONE)
            by_topic.setdefault(topic, []).append(
                {"partition_index": where[1], "error_code": error}
            )
    values = {
        "throttle_time": 0,
        "error_code": code,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
    return make(response_class(ApiKey.OFFSET_DELETE, version), values)


def _unknown_partitions(
    coordinator: GroupCoordinator, asked: Iterable[tuple[str, Any]]
) -> dict[tuple[str, int], int]:
    """UNKNOWN_TOPIC_OR_PARTITION for each asked partition the cluster does not have: KafkaApis
    answers them before the coordinator sees the request."""
    image = coordinator.image()
    return {
        (t, int(p.partition_index)): UNKNOWN_TOPIC_OR_PARTITION
        for t, p in asked
        if not _has_partition(image.topic(t), int(p.partition_index))
    }


def _has_partition(topic: Any, index: int) -> bool:
    return topic is not None and 0 <= index < len(topic.partitions)


def _fetched(index: int, found: CommittedOffset | None, error: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": NO_OFFSET if found is None else found.offset,
        "committed_leader_epoch": NO_LEADER_EPOCH if found is None else found.leader_epoch,
        "metadata": "" if found is None else found.metadata,
        "error_code": error,  # before v2 a group's error is each partition's
    }


def _commit_response(
    version: int, asked: Iterable[tuple[str, Any]], outcome: dict[tuple[str, int], int], code: int
) -> Response:
    """Each asked partition's error: its own in ``outcome``, else ``code``."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, p in asked:
        index = int(p.partition_index)
        error = outcome.get((topic, index), code)
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": error})
    values = {
        "throttle_time": 0,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
    return make(response_class(ApiKey.OFFSET_COMMIT, version), values)


def _message(code: int) -> str:
    """FindCoordinator's error message before v4: Kafka's ``Errors.message()`` (the name for
    NONE)."""
    return _MESSAGES.get(code, error_name(code))


_MESSAGES: Final = {
    COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
    INVALID_REQUEST: (
        "This most likely occurs because of a request being malformed by the client library "
        "or the message was sent to an incompatible broker. See the broker logs for more "
        "details."
    ),
}


def _classic(
    coordinator: GroupCoordinator, index: int, state: GroupOffsets, group: str
) -> ClassicGroup | None:
    """The live classic group ``group`` (None for a group with no membership, a simple one)."""
    return coordinator.membership.group(index, state, group)


def _classic_of(coordinator: GroupCoordinator, group: str) -> ClassicGroup | None:
    code, state, index = coordinator.state(group)
    return None if code != NONE or state is None else _classic(coordinator, index, state, group)
