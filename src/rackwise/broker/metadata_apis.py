"""What a broker answers its clients from its metadata image (pure: image and request in,
response message out; no sockets, no clock).

Goals
    Answer the read-only client APIs as a KRaft broker of Kafka answers them from its metadata
    cache (Kafka's ``KafkaApis`` with ``KRaftMetadataCache``), so that
    kafka-python, librdkafka and aiokafka find what they look for: ApiVersions, Metadata
    (v0-v13) and DescribeCluster. DescribeConfigs and the ACL APIs have modules of their own,
    :mod:`rackwise.broker.describe_configs` and :mod:`rackwise.node.acl_apis`.

Constraints
    Requests arrive as the protocol layer decodes them (any served version); responses are
    built with :func:`rackwise.protocol.make` in the request's version, so a field a version
    lacks is dropped. The image is the only source of cluster state; the broker's own static
    configuration (its ``.properties``) is the only other input (:class:`BrokerInfo`).

Algorithm
    Metadata, as ``KRaftMetadataCache``: the brokers listed are the unfenced ones with an
    endpoint on the listener the request came in on; a partition's leader is shown when its
    broker is registered with that listener (else LEADER_NOT_AVAILABLE, or LISTENER_NOT_FOUND
    from v6 when the broker lacks the listener); offline replicas are those whose broker is
    missing, fenced, lacks the listener or lost the replica's directory; v0 alone drops
    replicas of unavailable brokers from the lists (REPLICA_NOT_AVAILABLE). A topic not in the
    image is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name Kafka refuses);
    auto-creation is never done. In KRaft a broker names an alive broker as the controller,
    since it forwards admin writes itself; rackwise names the broker answering when it is
    unfenced, else the lowest alive broker id.

Worked example
    An image with brokers 1 (rack ``/dc1/r1``, unfenced) and 2 (fenced), topic ``t`` with one
    partition, replicas ``[1, 2]``, ISR ``[1]``, leader 1: a Metadata v12 request for all
    topics on broker 1 lists broker 1 only, controller id 1, and partition 0 with leader 1,
    replicas ``[1, 2]``, ISR ``[1]`` and offline replicas ``[2]``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from rackwise.common.acl import OPERATIONS_NOT_ASKED, AclOperation, operations_field
from rackwise.common.error_codes import (
    INVALID_REQUEST,
    INVALID_TOPIC_EXCEPTION,
    LEADER_NOT_AVAILABLE,
    LISTENER_NOT_FOUND,
    NONE,
    REPLICA_NOT_AVAILABLE,
    TOPIC_AUTHORIZATION_FAILED,
    UNKNOWN_TOPIC_ID,
    UNKNOWN_TOPIC_OR_PARTITION,
)
from rackwise.controller.controller import METADATA_VERSION_LEVEL
from rackwise.controller.names import invalid_topic_reason
from rackwise.image import MetadataImage, PartitionRegistration, endpoint_on
from rackwise.node import authorization
from rackwise.node.authorization import Check
from rackwise.node.describe_cluster import BROKER_ENDPOINT_TYPE, CLUSTER_OPERATIONS
from rackwise.node.describe_cluster import describe_cluster as node_describe_cluster
from rackwise.protocol import (
    FinalizedFeature,
    Listener,
    Response,
    SupportedFeature,
    api_versions_response,
    response_to,
)
from rackwise.records import ZERO_UUID
from rackwise.records.constants import (
    DIRECTORY_LOST,
    DIRECTORY_MIGRATING,
    DIRECTORY_UNASSIGNED,
    METADATA_VERSION_FEATURE,
    NO_LEADER,
)
from rackwise.security.acl import CLUSTER_NAME, ResourceType

NO_CONTROLLER: Final = -1
"""``controller_id`` when no broker is alive to name."""
FIRST_LISTENER_NOT_FOUND_VERSION: Final = 6
"""From this Metadata version a leader without the listener is LISTENER_NOT_FOUND."""
MIN_METADATA_VERSION_LEVEL: Final = 7
"""The lowest ``metadata.version`` a broker supports (Kafka 4's 3.3-IV3)."""
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})
"""Kafka's ``Topic.isInternal`` names."""


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """What the answering broker knows of itself: its node id, the cluster id (None while
    unknown), the name of the listener clients reach it on, its static configuration (the
    properties it started with) and the offset of the last metadata record applied (-1)."""

    node_id: int
    cluster_id: str | None
    listener_name: str = "PLAINTEXT"
    static_config: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    applied_offset: int = -1


# Authorized operations (KIP-430) as a broker without an authorizer answers them: every
# operation the resource supports (Kafka's ``AuthHelper.authorizedOperations`` with no
# authorizer, over ``AclEntry.supportedOperations``).
TOPIC_OPERATIONS: Final = operations_field(
    (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    )
)
"""3576, a topic's: READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS,
ALTER_CONFIGS."""


def _authorized(body: Any, flag: str, operations: int) -> int:
    """``operations`` if the request asks for them with ``flag``, else not-asked."""
    return operations if getattr(body, flag, False) else OPERATIONS_NOT_ASKED


def _version(body: Any) -> int:
    return int(type(body).__version__)


# ---- ApiVersions -----------------------------------------------------------------------------


def api_versions(body: Any, image: MetadataImage, info: BrokerInfo) -> Response:
    """ApiVersions on the broker listener, with the features this broker supports and the
    cluster's finalized levels (epoch: the applied offset, as a KRaft broker reports)."""
    finalized = [FinalizedFeature(name, level) for name, level in sorted(image.features.items())]
    supported = [
        SupportedFeature(
            METADATA_VERSION_FEATURE, MIN_METADATA_VERSION_LEVEL, METADATA_VERSION_LEVEL
        )
    ]
    return api_versions_response(
        _version(body),
        Listener.BROKER,
        supported_features=supported,
        finalized_features=finalized,
        finalized_features_epoch=info.applied_offset if finalized else -1,
    )


# ---- Metadata --------------------------------------------------------------------------------


def alive_brokers(image: MetadataImage, listener_name: str) -> list[dict[str, Any]]:
    """The unfenced brokers with an endpoint on ``listener_name``, by id, as Metadata lists
    them."""
    out = []
    for broker_id in sorted(image.brokers):
        broker = image.brokers[broker_id]
        if broker.fenced:
            continue
        endpoint = endpoint_on(broker, listener_name)
        if endpoint is not None:
            out.append(
                {
                    "node_id": broker_id,
                    "host": endpoint.host,
                    "port": endpoint.port,
                    "rack": broker.rack,
                }
            )
    return out


def controller_id(image: MetadataImage, info: BrokerInfo) -> int:
    """The id a KRaft broker reports as the controller: itself when alive on the listener,
    else the lowest alive broker, else -1."""
    alive = [b["node_id"] for b in alive_brokers(image, info.listener_name)]
    if info.node_id in alive:
        return info.node_id
    return alive[0] if alive else NO_CONTROLLER


def is_replica_offline(image: MetadataImage, partition: Any, broker_id: int, listener: str) -> bool:
    broker = image.brokers.get(broker_id)
    if broker is None or broker.fenced or endpoint_on(broker, listener) is None:
        return True
    directory = _directory_of(partition, broker_id)
    if directory in (DIRECTORY_UNASSIGNED, DIRECTORY_MIGRATING):
        return False
    if directory == DIRECTORY_LOST:
        return True
    return bool(broker.log_dirs) and directory not in broker.log_dirs


def _directory_of(partition: Any, broker_id: int) -> uuid.UUID:
    for replica, directory in zip(partition.replicas, partition.directories, strict=False):
        if replica == broker_id:
            return directory  # type: ignore[no-any-return]
    return DIRECTORY_UNASSIGNED


def _usable(image: MetadataImage, broker_id: int, listener: str) -> bool:
    broker = image.brokers.get(broker_id)
    return broker is not None and not broker.fenced and endpoint_on(broker, listener) is not None


def partition_metadata(
    image: MetadataImage, partition: PartitionRegistration, listener: str, version: int
) -> dict[str, Any]:
    """One partition of a Metadata response (Kafka's ``getPartitionMetadata``)."""
    replicas = list(partition.replicas)
    isr = list(partition.isr)
    if version == 0:
        replicas = [r for r in replicas if _usable(image, r, listener)]
        isr = [r for r in isr if _usable(image, r, listener)]
    offline = [r for r in partition.replicas if is_replica_offline(image, partition, r, listener)]
    leader = image.brokers.get(partition.leader)
    error = NONE
    leader_id = partition.leader
    if partition.leader == NO_LEADER or leader is None:
        error, leader_id = LEADER_NOT_AVAILABLE, NO_LEADER
    elif endpoint_on(leader, listener) is None:
        error = (
            LISTENER_NOT_FOUND
            if version >= FIRST_LISTENER_NOT_FOUND_VERSION
            else LEADER_NOT_AVAILABLE
        )
        leader_id = NO_LEADER
    elif len(replicas) < len(partition.replicas) or len(isr) < len(partition.isr):
        error = REPLICA_NOT_AVAILABLE
    return {
        "error_code": error,
        "partition_index": partition.partition_id,
        "leader_id": leader_id,
        "leader_epoch": partition.leader_epoch,
        "replica_nodes": replicas,
        "isr_nodes": isr,
        "offline_replicas": offline,
    }


def topic_metadata(image: MetadataImage, name: str, listener: str, version: int) -> dict[str, Any]:
    """One topic of a Metadata response: its partitions by id, or its error."""
    topic = image.topic(name)
    if topic is None:
        error = (
            INVALID_TOPIC_EXCEPTION if invalid_topic_reason(name) else UNKNOWN_TOPIC_OR_PARTITION
        )
        return {
            "error_code": error,
            "name": name,
            "topic_id": ZERO_UUID,
            "is_internal": name in INTERNAL_TOPICS,
            "partitions": [],
        }
    partitions = topic.partitions
    return {
        "error_code": NONE,
        "name": name,
        "topic_id": topic.topic_id,
        "is_internal": name in INTERNAL_TOPICS,
        "partitions": [
            partition_metadata(image, partitions[p], listener, version) for p in sorted(partitions)
        ],
    }


def _requested_topics(image: MetadataImage, body: Any) -> list[dict[str, Any] | str] | None:
    """The topics a Metadata request names (a name, or a ready error entry for a topic id),
    or None for all topics (a null list; an empty one in v0)."""
    version = _version(body)
    topics = body.topics
    if topics is None or (version == 0 and not topics):
        return None
    wanted: list[dict[str, Any] | str] = []
    for entry in topics:
        name = getattr(entry, "name", None)
        topic_id = getattr(entry, "topic_id", None)
        if topic_id is not None and topic_id != ZERO_UUID:
            known = image.topics_by_id.get(topic_id)
            if version < 12:
                wanted.append(_error_topic(INVALID_REQUEST, name, topic_id))
            elif known is None:
                wanted.append(_error_topic(UNKNOWN_TOPIC_ID, None, topic_id))
            else:
                wanted.append(known.name)
        elif name is None:
            wanted.append(_error_topic(INVALID_REQUEST, None, ZERO_UUID))
        else:
            wanted.append(str(name))
    return wanted


def _error_topic(error: int, name: str | None, topic_id: uuid.UUID) -> dict[str, Any]:
    return {"error_code": error, "name": name, "topic_id": topic_id, "partitions": []}


def metadata(
    body: Any,
    image: MetadataImage,
    info: BrokerInfo,
    auto_create: Callable[[str], None] | None = None,
    check: Check | None = None,
) -> Response:
    """The Metadata response (any version 0-13). With ``auto_create`` (the broker's
    ``auto.create.topics.enable``) and the request's ``allow_auto_topic_creation`` (always
    true before v4), a named topic that does not exist is created: ``auto_create`` starts it,
    and the answer for it is LEADER_NOT_AVAILABLE until it exists, as Kafka answers.

    With an authorizer (``check``), as Kafka's ``KafkaApis.handleTopicMetadataRequest``: a
    listing of every topic holds only those the caller may DESCRIBE, a named topic it may not
    is TOPIC_AUTHORIZATION_FAILED (whether or not it exists), creating one needs CREATE on the
    cluster or the topic, and the authorized operations asked for are the caller's."""
    version = _version(body)
    allow = bool(getattr(body, "allow_auto_topic_creation", True))
    listener = info.listener_name
    wanted = _requested_topics(image, body)
    topics: list[dict[str, Any]] = []
    describable = (lambda _name: True) if check is None else check.may_topic(AclOperation.DESCRIBE)
    if wanted is None:
        wanted = [name for name in sorted(image.topics_by_name) if describable(name)]
    seen: set[str] = set()
    topic_operations = _authorized(body, "include_topic_authorized_operations", TOPIC_OPERATIONS)
    for item in wanted:
        if not isinstance(item, str):
            topics.append(item)
        elif item not in seen:
            seen.add(item)
            if not describable(item):
                topics.append(_error_topic(TOPIC_AUTHORIZATION_FAILED, item, ZERO_UUID))
                continue
            entry = topic_metadata(image, item, listener, version)
            entry["topic_authorized_operations"] = topic_operations
            if check is not None and topic_operations != OPERATIONS_NOT_ASKED:
                entry["topic_authorized_operations"] = check.operations(
                    ResourceType.TOPIC, item, authorization.TOPIC_OPERATIONS
                )
            if (
                entry["error_code"] == UNKNOWN_TOPIC_OR_PARTITION
                and auto_create is not None
                and allow
                and item not in INTERNAL_TOPICS
            ):
                if check is not None and not check.may_create_topic(item):
                    entry["error_code"] = TOPIC_AUTHORIZATION_FAILED
                else:
                    auto_create(item)
                    entry["error_code"] = LEADER_NOT_AVAILABLE
            topics.append(entry)
    cluster_operations = _authorized(
        body, "include_cluster_authorized_operations", CLUSTER_OPERATIONS
    )
    if check is not None and cluster_operations != OPERATIONS_NOT_ASKED:
        cluster_operations = check.operations(
            ResourceType.CLUSTER, CLUSTER_NAME, authorization.CLUSTER_OPERATIONS
        )
    return response_to(
        body,
        {
            "throttle_time": 0,
            "brokers": alive_brokers(image, listener),
            "cluster_id": info.cluster_id,
            "controller_id": controller_id(image, info),
            "topics": topics,
            "cluster_authorized_operations": cluster_operations,
            "error_code": NONE,
        },
    )


# ---- DescribeCluster ---------------------------------------------------------------------------


def describe_cluster(body: Any, image: MetadataImage, info: BrokerInfo) -> Response:
    """DescribeCluster on the broker listener (:mod:`rackwise.node.describe_cluster`): the
    alive brokers (with ``include_fenced_brokers``, v2, the fenced ones too, marked)."""
    include_fenced = bool(getattr(body, "include_fenced_brokers", False))
    brokers = []
    for broker_id in sorted(image.brokers):
        broker = image.brokers[broker_id]
        endpoint = endpoint_on(broker, info.listener_name)
        if endpoint is None or (broker.fenced and not include_fenced):
            continue
        brokers.append(
            {
                "broker_id": broker_id,
                "host": endpoint.host,
                "port": endpoint.port,
                "rack": broker.rack,
                "is_fenced": bool(broker.fenced),
            }
        )
    return node_describe_cluster(
        body,
        serving=BROKER_ENDPOINT_TYPE,
        cluster_id=info.cluster_id,
        controller_id=controller_id(image, info),
        nodes=brokers,
    )
