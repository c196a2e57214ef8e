"""The broker's client-facing answers, from hand-built images, through the wire and back."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from rackwise.broker.describe_configs import describe_configs
from rackwise.broker.metadata_apis import (
    BrokerInfo,
    api_versions,
    controller_id,
    describe_cluster,
    metadata,
)
from rackwise.image import MetadataImage, replay
from rackwise.net.errors import CloseConnection
from rackwise.node.acl_apis import create_acls, delete_acls, describe_acls
from rackwise.protocol import (
    Listener,
    Request,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    make,
    request_class,
)
from rackwise.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from rackwise.records.constants import DIRECTORY_LOST

T = uuid.UUID(int=7)
U = uuid.UUID(int=8)
D = {n: uuid.UUID(int=100 + n) for n in range(1, 5)}


def register(broker_id: int, *, fenced: bool = False, listener: str = "PLAINTEXT") -> Any:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=broker_id + 1000),
        broker_epoch=broker_id * 10,
        end_points=(
            RegisterBrokerRecord.BrokerEndpoint(
                name=listener, host="127.0.0.1", port=9000 + broker_id, security_protocol=0
            ),
        ),
        features=(),
        rack=f"/dc1/r{broker_id}",
        fenced=fenced,
        log_dirs=(D[broker_id],),
    )


def partition(
    partition_id: int,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    leader: int,
    topic_id: uuid.UUID = T,
    directories: tuple[uuid.UUID, ...] | None = None,
) -> Any:
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=replicas,
        isr=isr,
        removing_replicas=(),
        adding_replicas=(),
        leader=leader,
        leader_epoch=3,
        partition_epoch=5,
        directories=directories if directories is not None else tuple(D[r] for r in replicas),
    )


def image_of(*extra: Any) -> MetadataImage:
    return replay(
        [
            FeatureLevelRecord(name="metadata.version", feature_level=23),
            register(1),
            register(2, fenced=True),
            register(3),
            register(4, listener="INTERNAL"),
            TopicRecord(name="t", topic_id=T),
            partition(0, (1, 2), (1,), 1),
            partition(1, (3, 1), (3, 1), 3),
            partition(2, (2, 3), (), -1),
            partition(3, (4, 1), (4, 1), 4),
            TopicRecord(name="a", topic_id=U),
            partition(0, (3,), (3,), 3, topic_id=U, directories=(DIRECTORY_LOST,)),
            *extra,
        ]
    )


INFO = BrokerInfo(
    node_id=1,
    cluster_id="MkU3OEVBNTcwNTJENDM2Qg",
    static_config={
        "node.id": "1",
        "log.retention.hours": "24",
        "compression.type": "lz4",
        "ssl.keystore.password": "hunter2",
    },
    applied_offset=41,
)


REQUIRED_FALSE = {
    "include_cluster_authorized_operations": False,
    "include_topic_authorized_operations": False,
    "include_fenced_brokers": False,
    "resource_name_filter": None,
    "principal_filter": None,
    "host_filter": None,
}


def through_the_wire(
    handler: Callable[..., Any],
    api_key: int,
    version: int,
    values: dict[str, Any],
    image: MetadataImage | None = None,
    info: BrokerInfo = INFO,
) -> Any:
    """The request encoded and decoded as a server does, answered, and the answer decoded as
    a client does: the response must be valid for its version."""
    body = make(request_class(api_key, version), {**REQUIRED_FALSE, **values})
    outcome = decode_request(encode_request(body, 11)[4:], Listener.BROKER)
    assert isinstance(outcome, Request)
    args = (outcome.body,) if handler in ACL_HANDLERS else (outcome.body, image or image_of(), info)
    frame = encode_response(outcome.header, handler(*args))
    return decode_response(frame[4:], api_key, version, 11)


ACL_HANDLERS = (describe_acls, create_acls, delete_acls)


def by_index(topic: Any) -> dict[int, Any]:
    return {p.partition_index: p for p in topic.partitions}


@pytest.mark.parametrize("version", range(14))
def test_metadata_every_version_lists_alive_brokers_and_all_topics(version: int) -> None:
    topics = [] if version == 0 else None
    response = through_the_wire(metadata, 3, version, {"topics": topics})
    brokers = [(b.node_id, b.port) for b in response.brokers]
    assert brokers == [(1, 9001), (3, 9003)]  # 2 is fenced, 4 has no PLAINTEXT listener
    if version >= 1:
        assert [b.rack for b in response.brokers] == ["/dc1/r1", "/dc1/r3"]
        assert response.controller_id == 1
    if version >= 2:
        assert response.cluster_id == "MkU3OEVBNTcwNTJENDM2Qg"
    assert [t.name for t in response.topics] == ["a", "t"]
    t = by_index(response.topics[1])
    assert sorted(t) == [0, 1, 2, 3]
    if version >= 10:
        assert response.topics[1].topic_id == T


def test_metadata_partition_details_follow_kraft() -> None:
    response = through_the_wire(metadata, 3, 12, {"topics": None})
    a, t = response.topics
    p = by_index(t)
    assert (int(p[0].error_code), p[0].leader_id, p[0].leader_epoch) == (0, 1, 3)
    assert (p[0].replica_nodes, p[0].isr_nodes, p[0].offline_replicas) == ((1, 2), (1,), (2,))
    assert (int(p[1].error_code), p[1].offline_replicas) == (0, ())
    # No leader: LEADER_NOT_AVAILABLE, replicas still listed.
    assert (int(p[2].error_code), p[2].leader_id, p[2].replica_nodes) == (5, -1, (2, 3))
    # The leader lacks the listener: LISTENER_NOT_FOUND from v6, and it is offline here.
    assert (int(p[3].error_code), p[3].leader_id, p[3].offline_replicas) == (72, -1, (4,))
    # A replica in a lost directory is offline.
    assert by_index(a)[0].offline_replicas == (3,)


def test_metadata_v0_drops_unavailable_replicas_and_says_so() -> None:
    response = through_the_wire(metadata, 3, 0, {"topics": [{"name": "t", "topic_id": None}]})
    p = by_index(response.topics[0])
    assert (int(p[0].error_code), p[0].replica_nodes, p[0].isr_nodes) == (9, (1,), (1,))
    assert int(p[3].error_code) == 5  # no listener: LEADER_NOT_AVAILABLE before v6


def test_metadata_unknown_invalid_and_by_id() -> None:
    response = through_the_wire(
        metadata,
        3,
        12,
        {
            "topics": [
                {"name": "nope", "topic_id": None},
                {"name": "bad name!", "topic_id": None},
                {"name": "t", "topic_id": None},
                {"name": "t", "topic_id": None},
                {"topic_id": U, "name": None},
                {"topic_id": uuid.UUID(int=99), "name": None},
            ]
        },
    )
    got = [(t.name, int(t.error_code), len(t.partitions)) for t in response.topics]
    assert got == [("nope", 3, 0), ("bad name!", 17, 0), ("t", 0, 4), ("a", 0, 1), (None, 100, 0)]


def test_metadata_v11_refuses_topic_ids() -> None:
    response = through_the_wire(metadata, 3, 11, {"topics": [{"topic_id": U, "name": "a"}]})
    assert int(response.topics[0].error_code) == 42


def test_controller_is_the_broker_itself_or_an_alive_one() -> None:
    image = image_of()
    assert controller_id(image, INFO) == 1
    assert controller_id(image, BrokerInfo(node_id=2, cluster_id=None)) == 1
    empty = replay([register(2, fenced=True)])
    assert controller_id(empty, BrokerInfo(node_id=2, cluster_id=None)) == -1


@pytest.mark.parametrize("version", range(3))
def test_describe_cluster_shows_racks(version: int) -> None:
    response = through_the_wire(describe_cluster, 60, version, {})
    assert int(response.error_code) == 0
    assert [(b.broker_id, b.rack) for b in response.brokers] == [(1, "/dc1/r1"), (3, "/dc1/r3")]
    assert (response.cluster_id, response.controller_id) == ("MkU3OEVBNTcwNTJENDM2Qg", 1)


def test_describe_cluster_fenced_brokers_and_endpoint_types() -> None:
    response = through_the_wire(describe_cluster, 60, 2, {"include_fenced_brokers": True})
    assert [(b.broker_id, b.is_fenced) for b in response.brokers] == [
        (1, False),
        (2, True),
        (3, False),
    ]
    wrong = through_the_wire(describe_cluster, 60, 1, {"endpoint_type": 2})
    assert int(wrong.error_code) == 114
    assert "we wanted an endpoint of type CONTROLLER" in wrong.error_message
    unknown = through_the_wire(describe_cluster, 60, 1, {"endpoint_type": 9})
    assert (int(unknown.error_code), unknown.error_message) == (115, "Unsupported endpoint type 9")


@pytest.mark.parametrize("version", range(1, 4))
def test_describe_acls_says_security_is_disabled(version: int) -> None:
    response = through_the_wire(
        describe_acls,
        29,
        version,
        {"resource_type_filter": 1, "pattern_type_filter": 1, "operation": 1, "permission_type": 1},
    )
    assert int(response.error_code) == 54
    assert response.error_message == "No Authorizer is configured on the broker"


ACL = {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 3, "principal": "User:a",
       "host": "*", "operation": 3, "permission_type": 3}  # fmt: skip
FILTER = {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
          "principal_filter": None, "host_filter": None, "operation": 1,
          "permission_type": 1}  # fmt: skip


@pytest.mark.parametrize("version", range(1, 4))
def test_create_and_delete_acls_say_security_is_disabled_for_each_entry(version: int) -> None:
    created = through_the_wire(create_acls, 30, version, {"creations": [ACL, ACL, ACL]})
    assert [(int(r.error_code), r.error_message) for r in created.results] == [
        (54, "No Authorizer is configured.")
    ] * 3
    deleted = through_the_wire(delete_acls, 31, version, {"filters": [FILTER, FILTER]})
    assert [
        (int(r.error_code), r.error_message, r.matching_acls) for r in deleted.filter_results
    ] == [(54, "No Authorizer is configured.", ())] * 2
    assert through_the_wire(create_acls, 30, version, {"creations": []}).results == ()


@pytest.mark.parametrize(
    ("handler", "api_key", "entries", "entry", "field"),
    [
        (describe_acls, 29, None, FILTER, "resource_type_filter"),
        (create_acls, 30, "creations", ACL, "resource_type"),
        (create_acls, 30, "creations", ACL, "operation"),
        (delete_acls, 31, "filters", FILTER, "pattern_type_filter"),
        (delete_acls, 31, "filters", FILTER, "permission_type"),
    ],
)
def test_an_unknown_acl_element_closes_the_connection_as_kafka_does(
    handler: Callable[..., Any],
    api_key: int,
    entries: str | None,
    entry: dict[str, Any],
    field: str,
) -> None:
    unknown = {**entry, field: 0}
    with pytest.raises(CloseConnection, match=field):
        through_the_wire(handler, api_key, 3, {entries: [entry, unknown]} if entries else unknown)


def test_api_versions_carry_features_and_the_broker_apis() -> None:
    response = through_the_wire(
        api_versions, 18, 3, {"client_software_name": "x", "client_software_version": "1"}
    )
    keys = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    assert keys[3] == (0, 13) and 1000 in keys and 62 not in keys
    assert [(f.name, f.max_version_level) for f in response.finalized_features] == [
        ("metadata.version", 23)
    ]
    assert response.finalized_features_epoch == 41


def entries_of(result: Any) -> dict[str, Any]:
    return {c.name: c for c in result.configs}


def test_describe_topic_configs_with_sources_and_synonyms() -> None:
    image = image_of(
        ConfigRecord(resource_type=2, resource_name="t", name="cleanup.policy", value="compact"),
        ConfigRecord(resource_type=4, resource_name="", name="log.retention.ms", value="5000"),
    )
    response = through_the_wire(
        describe_configs,
        32,
        4,
        {
            "resources": [{"resource_type": 2, "resource_name": "t", "configuration_keys": None}],
            "include_synonyms": True,
        },
        image,
    )
    (result,) = response.results
    assert int(result.error_code) == 0
    e = entries_of(result)
    assert (e["cleanup.policy"].value, e["cleanup.policy"].config_source) == ("compact", 1)
    assert [(s.name, s.source) for s in e["cleanup.policy"].synonyms] == [
        ("cleanup.policy", 1),
        ("log.cleanup.policy", 5),
    ]
    assert (e["compression.type"].value, e["compression.type"].config_source) == ("lz4", 4)
    assert (e["retention.ms"].value, e["retention.ms"].config_source) == ("5000", 3)
    assert e["cleanup.policy"].config_type == 7 and e["retention.ms"].config_type == 5


def test_describe_configs_errors_and_key_filter() -> None:
    response = through_the_wire(
        describe_configs,
        32,
        1,
        {
            "resources": [
                {"resource_type": 2, "resource_name": "missing", "configuration_keys": None},
                {"resource_type": 2, "resource_name": "t", "configuration_keys": ["retention.ms"]},
                {"resource_type": 4, "resource_name": "2", "configuration_keys": None},
                {"resource_type": 4, "resource_name": "x", "configuration_keys": None},
            ]
        },
    )
    missing, filtered, other, bad = response.results
    assert int(missing.error_code) == 3
    assert [c.name for c in filtered.configs] == ["retention.ms"]
    assert (int(other.error_code), other.error_message) == (
        42,
        "Unexpected broker id, expected 1 or empty string, but received 2",
    )
    assert bad.error_message == "Broker id must be an integer, but it is: x"


def test_describe_broker_configs_hide_secrets() -> None:
    image = image_of(
        ConfigRecord(resource_type=4, resource_name="1", name="log.retention.ms", value="48"),
    )
    response = through_the_wire(
        describe_configs,
        32,
        4,
        {
            "resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}],
            "include_synonyms": True,
        },
        image,
    )
    e = entries_of(response.results[0])
    assert (e["log.retention.ms"].value, e["log.retention.ms"].config_source) == ("48", 2)
    assert [s.source for s in e["log.retention.ms"].synonyms] == [2, 4, 5, 5, 5]
    assert e["node.id"].read_only is True
    assert (e["ssl.keystore.password"].value, e["ssl.keystore.password"].is_sensitive) == (
        None,
        True,
    )


def test_unfencing_shows_in_the_next_answer() -> None:
    image = image_of(BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=20, fenced=-1))
    response = through_the_wire(metadata, 3, 12, {"topics": []}, image)
    assert [b.node_id for b in response.brokers] == [1, 2, 3]
    assert response.topics == ()
