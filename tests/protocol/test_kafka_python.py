"""kafka-python 3.0.12, a real third-party client, against the protocol layer: the framed
requests it sends, for every API and version we serve to clients, decode to what it meant and
re-encode to its bytes; the framed responses we send decode, header and all, in kafka-python
as we meant them."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)

from rackwise.protocol import (
    FrameDecoder,
    Listener,
    Request,
    SupportedFeature,
    api_versions_response,
    apis_for,
    decode_request,
    encode_response,
    make,
)
from rackwise.protocol.bodies import write_body

TOPIC_ID = uuid.UUID("5e0a8d1b-2c3d-4e5f-8a9b-0c1d2e3f4a5b")


def _metadata_request(body: Any, version: int) -> None:
    assert [t.name for t in body.topics] == ["orders"]
    if version >= 4:
        assert body.allow_auto_topic_creation is False


def _create_topics_request(body: Any, version: int) -> None:
    topic = body.topics[0]
    assert (topic.name, topic.num_partitions, topic.replication_factor) == ("orders", -1, -1)
    assert [(a.partition_index, a.broker_ids) for a in topic.assignments] == [(0, (1, 2))]
    assert [(c.name, c.value) for c in topic.configs] == [("cleanup.policy", "compact")]
    assert body.timeout.total_seconds() == 30 and body.validate_only is True


def _create_partitions_request(body: Any, version: int) -> None:
    topic = body.topics[0]
    assert (topic.name, topic.count) == ("orders", 6)
    assert [a.broker_ids for a in topic.assignments] == [(1, 2), (2, 3)]


def _delete_topics_request(body: Any, version: int) -> None:
    names = [t.name for t in body.topics] if version >= 6 else list(body.topic_names)
    assert names == ["orders"]


def _describe_configs_request(body: Any, version: int) -> None:
    resource = body.resources[0]
    assert (resource.resource_type, resource.resource_name) == (2, "orders")
    assert resource.configuration_keys is None
    assert body.include_synonyms is True


def _describe_cluster_request(body: Any, version: int) -> None:
    assert body.include_cluster_authorized_operations is True
    if version >= 2:
        assert body.include_fenced_brokers is True


def _describe_acls_request(body: Any, version: int) -> None:
    assert (body.resource_type_filter, body.operation, body.permission_type) == (1, 1, 1)


def _api_versions_request(body: Any, version: int) -> None:
    if version >= 3:
        assert body.client_software_name == "kafka-python"
        assert body.client_software_version == "3.0.12"


# API name -> (a kafka-python request, before its version is set; what we must read of it)
REQUESTS: dict[str, tuple[Callable[[], Any], Callable[[Any, int], None]]] = {
    "ApiVersions": (
        lambda: ApiVersionsRequest(
            client_software_name="kafka-python", client_software_version="3.0.12"
        ),
        _api_versions_request,
    ),
    "Metadata": (
        lambda: MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name="orders")],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=True,
        ),
        _metadata_request,
    ),
    "CreateTopics": (
        lambda: CreateTopicsRequest(
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name="orders",
                    num_partitions=-1,
                    replication_factor=-1,
                    assignments=[
                        CreateTopicsRequest.CreatableTopic.CreatableReplicaAssignment(
                            partition_index=0, broker_ids=[1, 2]
                        )
                    ],
                    configs=[
                        CreateTopicsRequest.CreatableTopic.CreatableTopicConfig(
                            name="cleanup.policy", value="compact"
                        )
                    ],
                )
            ],
            timeout_ms=30000,
            validate_only=True,
        ),
        _create_topics_request,
    ),
    "CreatePartitions": (
        lambda: CreatePartitionsRequest(
            topics=[
                CreatePartitionsRequest.CreatePartitionsTopic(
                    name="orders",
                    count=6,
                    assignments=[
                        CreatePartitionsRequest.CreatePartitionsTopic.CreatePartitionsAssignment(
                            broker_ids=ids
                        )
                        for ids in ([1, 2], [2, 3])
                    ],
                )
            ],
            timeout_ms=30000,
            validate_only=False,
        ),
        _create_partitions_request,
    ),
    "DeleteTopics": (
        lambda: DeleteTopicsRequest(
            topics=[DeleteTopicsRequest.DeleteTopicState(name="orders", topic_id=None)],
            topic_names=["orders"],
            timeout_ms=30000,
        ),
        _delete_topics_request,
    ),
    "DescribeConfigs": (
        lambda: DescribeConfigsRequest(
            resources=[
                DescribeConfigsRequest.DescribeConfigsResource(
                    resource_type=2, resource_name="orders", configuration_keys=None
                )
            ],
            include_synonyms=True,
            include_documentation=False,
        ),
        _describe_configs_request,
    ),
    "DescribeCluster": (
        lambda: DescribeClusterRequest(
            include_cluster_authorized_operations=True, include_fenced_brokers=True
        ),
        _describe_cluster_request,
    ),
    "DescribeAcls": (
        lambda: DescribeAclsRequest(
            resource_type_filter=1,
            resource_name_filter=None,
            pattern_type_filter=1,
            principal_filter=None,
            host_filter=None,
            operation=1,
            permission_type=1,
        ),
        _describe_acls_request,
    ),
}

CASES = [
    (spec.name, version)
    for spec in apis_for(Listener.BROKER).values()
    if spec.name in REQUESTS
    for version in spec.versions
]


def test_every_client_api_is_covered() -> None:
    served = {spec.name for spec in apis_for(Listener.BROKER).values() if spec.api_key < 1000}
    assert served == set(REQUESTS)


@pytest.mark.parametrize(("api", "version"), CASES, ids=[f"{a}-v{v}" for a, v in CASES])
def test_kafka_python_requests_decode(api: str, version: int) -> None:
    build, check = REQUESTS[api]
    request = build()
    request.API_VERSION = version
    request.with_header(correlation_id=4321, client_id="kafka-python-3.0.12")
    wire = bytes(request.encode(header=True, framed=True))
    frames = FrameDecoder().feed(wire)
    assert frames.close is None
    outcome = decode_request(frames.frames[0], Listener.BROKER)
    assert isinstance(outcome, Request), outcome
    assert outcome.api.name == api
    header = outcome.header
    assert (header.api_version, header.correlation_id) == (version, 4321)
    assert header.client_id == "kafka-python-3.0.12"
    check(outcome.body, version)
    # The same bytes, field for field: our encoder writes what kafka-python wrote.
    assert write_body(outcome.body) == frames.frames[0][header.size :]


def _metadata_response(read: Any, version: int) -> None:
    assert [(b.node_id, b.host, b.port) for b in read.brokers] == [
        (1, "127.0.0.1", 19092),
        (2, "127.0.0.1", 19093),
    ]
    if version >= 1:
        assert [b.rack for b in read.brokers] == ["/dc1/r1", None]
        assert read.controller_id == 1
    partition = read.topics[0].partitions[0]
    assert (partition.leader_id, partition.replica_nodes, partition.isr_nodes) == (
        1,
        [1, 2],
        [1],
    )
    if version >= 5:
        assert partition.offline_replicas == [2]
    if version >= 10:
        assert read.topics[0].topic_id == TOPIC_ID


def _describe_cluster_response(read: Any, version: int) -> None:
    assert read.cluster_id == "rackwise-test"
    assert [(b.broker_id, b.rack) for b in read.brokers] == [(1, "/dc1/r1"), (2, None)]
    if version >= 2:
        assert [b.is_fenced for b in read.brokers] == [False, True]


def _create_topics_response(read: Any, version: int) -> None:
    topic = read.topics[0]
    assert (topic.name, topic.error_code) == ("orders", 38)
    assert topic.error_message == "Replication factor: 4 larger than available brokers: 3."


def _create_partitions_response(read: Any, version: int) -> None:
    assert [(r.name, r.error_code) for r in read.results] == [("orders", 0)]


def _delete_topics_response(read: Any, version: int) -> None:
    assert [(r.name, r.error_code) for r in read.responses] == [("orders", 3)]


def _describe_configs_response(read: Any, version: int) -> None:
    config = read.results[0].configs[0]
    assert (config.name, config.value, config.read_only) == ("cleanup.policy", "compact", False)


def _describe_acls_response(read: Any, version: int) -> None:
    assert read.error_code == 54
    assert read.error_message == "No Authorizer is configured on the broker"


# API name -> (kafka-python's response class, our values, what kafka-python must read)
RESPONSES: dict[str, tuple[Any, dict[str, Any], Callable[[Any, int], None]]] = {
    "Metadata": (
        MetadataResponse,
        {
            "throttle_time": 0,
            "brokers": [
                {"node_id": 1, "host": "127.0.0.1", "port": 19092, "rack": "/dc1/r1"},
                {"node_id": 2, "host": "127.0.0.1", "port": 19093, "rack": None},
            ],
            "cluster_id": "rackwise-test",
            "controller_id": 1,
            "topics": [
                {
                    "error_code": 0,
                    "name": "orders",
                    "topic_id": TOPIC_ID,
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": 0,
                            "leader_id": 1,
                            "leader_epoch": 4,
                            "replica_nodes": [1, 2],
                            "isr_nodes": [1],
                            "offline_replicas": [2],
                        }
                    ],
                    "topic_authorized_operations": -2147483648,
                }
            ],
            "cluster_authorized_operations": -2147483648,
            "error_code": 0,
        },
        _metadata_response,
    ),
    "DescribeCluster": (
        DescribeClusterResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "error_message": None,
            "endpoint_type": 1,
            "cluster_id": "rackwise-test",
            "controller_id": 1,
            "brokers": [
                {"broker_id": 1, "host": "h", "port": 1, "rack": "/dc1/r1", "is_fenced": False},
                {"broker_id": 2, "host": "h", "port": 2, "rack": None, "is_fenced": True},
            ],
            "cluster_authorized_operations": -2147483648,
        },
        _describe_cluster_response,
    ),
    "CreateTopics": (
        CreateTopicsResponse,
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": "orders",
                    "topic_id": TOPIC_ID,
                    "error_code": 38,
                    "error_message": "Replication factor: 4 larger than available brokers: 3.",
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "configs": None,
                }
            ],
        },
        _create_topics_response,
    ),
    "CreatePartitions": (
        CreatePartitionsResponse,
        {"throttle_time": 0, "results": [{"name": "orders", "error_code": 0}]},
        _create_partitions_response,
    ),
    "DeleteTopics": (
        DeleteTopicsResponse,
        {
            "throttle_time": 0,
            "responses": [{"name": "orders", "topic_id": None, "error_code": 3}],
        },
        _delete_topics_response,
    ),
    "DescribeConfigs": (
        DescribeConfigsResponse,
        {
            "throttle_time": 0,
            "results": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "resource_type": 2,
                    "resource_name": "orders",
                    "configs": [
                        {
                            "name": "cleanup.policy",
                            "value": "compact",
                            "read_only": False,
                            "config_source": 1,
                            "is_default": False,
                            "is_sensitive": False,
                            "synonyms": [],
                            "config_type": 2,
                            "documentation": None,
                        }
                    ],
                }
            ],
        },
        _describe_configs_response,
    ),
    "DescribeAcls": (
        DescribeAclsResponse,
        {
            "throttle_time": 0,
            "error_code": 54,
            "error_message": "No Authorizer is configured on the broker",
            "resources": [],
        },
        _describe_acls_response,
    ),
}

RESPONSE_CASES = [(api, version) for api, version in CASES if api in RESPONSES]


@pytest.mark.parametrize(
    ("api", "version"), RESPONSE_CASES, ids=[f"{a}-v{v}" for a, v in RESPONSE_CASES]
)
def test_our_responses_decode_in_kafka_python(api: str, version: int) -> None:
    theirs, values, check = RESPONSES[api]
    build, _ = REQUESTS[api]
    request = build()
    request.API_VERSION = version
    request.with_header(correlation_id=77, client_id="kp")
    outcome = decode_request(bytes(request.encode(header=True)), Listener.BROKER)
    assert isinstance(outcome, Request)
    response = make(outcome.api.response_class(version), values)
    wire = encode_response(outcome.header, response)
    read = theirs.decode(wire, version=version, header=True, framed=True)
    assert read.header.correlation_id == 77
    check(read, version)


@pytest.mark.parametrize("version", range(5), ids=lambda v: f"v{v}")
def test_our_api_versions_responses_decode_in_kafka_python(version: int) -> None:
    request = ApiVersionsRequest(client_software_name="kafka-python", client_software_version="3")
    request.API_VERSION = version
    request.with_header(correlation_id=1, client_id="kp")
    outcome = decode_request(bytes(request.encode(header=True)), Listener.BROKER)
    assert isinstance(outcome, Request)
    features = [
        SupportedFeature("metadata.version", 1, 27),
        SupportedFeature("group.version", 0, 1),
    ]
    response = api_versions_response(version, Listener.BROKER, supported_features=features)
    read = ApiVersionsResponse.decode(
        encode_response(outcome.header, response), version=version, header=True, framed=True
    )
    assert read.error_code == 0
    advertised = {k.api_key: (k.min_version, k.max_version) for k in read.api_keys}
    assert advertised == {
        k: (s.min_version, s.max_version) for k, s in apis_for(Listener.BROKER).items()
    }
    if version >= 3:
        # KAFKA-17492: below v4 a feature whose lowest level is 0 is left out.
        names = [f.name for f in read.supported_features]
        assert names == (
            ["group.version", "metadata.version"] if version >= 4 else ["metadata.version"]
        )
