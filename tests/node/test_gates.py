"""The gates of the APIs: a request allowed whole, refused whole, or split between the items
the caller may touch and the others, with Kafka's codes; the refused items' answers merged."""

from __future__ import annotations

from typing import Any

from rackwise.common.acl import AclOperation as Op
from rackwise.common.error_codes import (
    CLUSTER_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED,
    TOPIC_AUTHORIZATION_FAILED,
)
from rackwise.image import MetadataImage
from rackwise.node import gates
from rackwise.node.authorization import Check
from rackwise.protocol import ApiKey, make, request_class
from rackwise.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from rackwise.security.authorizer import Authorizer


def check(*acls: tuple[ResourceType, str, Op], kind: PatternType = PatternType.LITERAL) -> Check:
    bindings = [
        AclBinding(
            ResourcePattern(rtype, name, kind),
            AccessControlEntry("User:a", "*", op, AclPermissionType.ALLOW),
        )
        for rtype, name, op in acls
    ]
    return Check(Authorizer.build(bindings), "User:a", "10.0.0.1")


def create_topics(*names: str) -> Any:
    topic = {"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    return make(
        request_class(ApiKey.CREATE_TOPICS, 7),
        topics=[{"name": n, **topic} for n in names],
        timeout=1000,
        validate_only=False,
    )


def test_create_topics_is_split_by_topic_unless_the_cluster_allows() -> None:
    body = create_topics("a", "b")
    verdict = gates.judge(
        check((ResourceType.TOPIC, "a", Op.CREATE)), ApiKey.CREATE_TOPICS, body, MetadataImage()
    )
    assert isinstance(verdict, gates.Split)
    assert [t.name for t in verdict.allowed.topics] == ["a"]
    ((refused, code, message),) = verdict.refused
    assert [t.name for t in refused.topics] == ["b"]
    assert (code, message) == (TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    cluster = check((ResourceType.CLUSTER, "kafka-cluster", Op.CREATE))
    assert gates.judge(cluster, ApiKey.CREATE_TOPICS, body, MetadataImage()) is None
    nobody = gates.judge(check(), ApiKey.CREATE_TOPICS, body, MetadataImage())
    assert isinstance(nobody, gates.Split) and nobody.allowed is None


def test_cluster_and_group_apis_are_refused_whole() -> None:
    body = make(request_class(ApiKey.HEARTBEAT, 4), group_id="g", generation_id=1,
                member_id="m", group_instance_id=None)  # fmt: skip
    refused = gates.judge(check(), ApiKey.HEARTBEAT, body, MetadataImage())
    assert refused == gates.Refuse(GROUP_AUTHORIZATION_FAILED)
    answer = gates.error_answer(body, GROUP_AUTHORIZATION_FAILED, None)
    assert int(answer.error_code) == GROUP_AUTHORIZATION_FAILED
    allowed = check((ResourceType.GROUP, "g", Op.READ))
    assert gates.judge(allowed, ApiKey.HEARTBEAT, body, MetadataImage()) is None
    reassign = make(
        request_class(ApiKey.LIST_PARTITION_REASSIGNMENTS, 0), timeout_ms=1, topics=None
    )
    assert gates.judge(check(), ApiKey.LIST_PARTITION_REASSIGNMENTS, reassign, MetadataImage()) == (
        gates.Refuse(CLUSTER_AUTHORIZATION_FAILED)
    )


def test_partial_answers_merge_the_refused_items() -> None:
    partition = {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
    body = make(
        request_class(ApiKey.LIST_OFFSETS, 8),
        replica_id=-1,
        isolation_level=0,
        topics=[{"name": n, "partitions": [partition]} for n in ("pay-1", "x")],
    )
    verdict = gates.judge(
        check((ResourceType.TOPIC, "pay-", Op.DESCRIBE), kind=PatternType.PREFIXED),
        ApiKey.LIST_OFFSETS,
        body,
        MetadataImage(),
    )
    assert isinstance(verdict, gates.Split)
    ((refused_body, code, _),) = verdict.refused
    refused = gates.error_answer(refused_body, code, None)
    allowed = gates.error_answer(verdict.allowed, 0, None)
    merged = gates.merge(allowed, [refused], verdict.field)
    assert [(t.name, int(t.partitions[0].error_code)) for t in merged.topics] == [
        ("pay-1", 0),
        ("x", TOPIC_AUTHORIZATION_FAILED),
    ]


def test_the_consumer_group_protocol_needs_the_group() -> None:
    """ConsumerGroupHeartbeat needs READ on its group; ConsumerGroupDescribe DESCRIBE on each
    group, the others answered GROUP_AUTHORIZATION_FAILED."""
    heartbeat = make(
        request_class(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0),
        group_id="g",
        member_id="",
        member_epoch=0,
        rebalance_timeout_ms=30000,
        subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    reader = check((ResourceType.GROUP, "g", Op.READ))
    assert gates.judge(reader, ApiKey.CONSUMER_GROUP_HEARTBEAT, heartbeat, MetadataImage()) is None
    refused = gates.judge(check(), ApiKey.CONSUMER_GROUP_HEARTBEAT, heartbeat, MetadataImage())
    assert refused == gates.Refuse(GROUP_AUTHORIZATION_FAILED)
    describe = make(
        request_class(ApiKey.CONSUMER_GROUP_DESCRIBE, 0),
        group_ids=["g", "h"],
        include_authorized_operations=False,
    )
    verdict = gates.judge(reader, ApiKey.CONSUMER_GROUP_DESCRIBE, describe, MetadataImage())
    assert isinstance(verdict, gates.Split)
    assert verdict.allowed.group_ids == ("g",)
    ((body, code, message),) = verdict.refused
    answer = gates.error_answer(body, code, message)
    assert [(g.group_id, g.error_code) for g in answer.groups] == [
        ("h", GROUP_AUTHORIZATION_FAILED)
    ]
