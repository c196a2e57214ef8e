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
    AlterConfigsRequest,
    AlterPartitionReassignmentsRequest,
    AlterReplicaLogDirsRequest,
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    CreateAclsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeProducersRequest,
    DescribeProducersResponse,
    DescribeQuorumRequest,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeUserScramCredentialsRequest,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    ListConfigResourcesRequest,
    ListConfigResourcesResponse,
    ListPartitionReassignmentsRequest,
)
from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.metadata.find_coordinator import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

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
from rackwise.protocol.bodies import read_body, write_body
from rackwise.protocol.fetch_request_reader import FetchRequestRead
from rackwise.protocol.produce_request_reader import ProduceRequestValues

TOPIC_ID = uuid.UUID("5e0a8d1b-2c3d-4e5f-8a9b-0c1d2e3f4a5b")
RECORDS = bytes(range(70))
"""Stands for a record batch: the protocol layer carries it as bytes."""
MEMBER = "kp-1-8f14e45f-ceea-467f-a8d3-2a5c6b1f0e9d"
OTHER_MEMBER = "kp-2-c9f0f895-fb98-4b91-9f7a-6a1e4d2c3b5a"
SUBSCRIPTION = bytes(
    ConsumerProtocolSubscription(
        topics=["orders"], user_data=None, owned_partitions=[], generation_id=-1, rack_id="/dc1/r1"
    ).encode(version=3)
)
"""A consumer's JoinGroup metadata for protocol "range": the group layer carries it as bytes."""
ASSIGNMENT = bytes(
    ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic="orders", partitions=[0, 3])
        ],
        user_data=None,
    ).encode(version=1)
)
OTHER_ASSIGNMENT = bytes(
    ConsumerProtocolAssignment(
        assigned_partitions=[
            ConsumerProtocolAssignment.TopicPartition(topic="orders", partitions=[1, 2])
        ],
        user_data=None,
    ).encode(version=1)
)


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


def _alter_configs_request(body: Any, version: int) -> None:
    (resource,) = body.resources
    assert (resource.resource_type, resource.resource_name) == (4, "")
    assert [(c.name, c.value) for c in resource.configs] == [("log.retention.ms", "1000")]
    if hasattr(resource.configs[0], "config_operation"):
        assert resource.configs[0].config_operation == 0
    assert body.validate_only is True


def _describe_cluster_request(body: Any, version: int) -> None:
    assert body.include_cluster_authorized_operations is True
    if version >= 2:
        assert body.include_fenced_brokers is True


def _describe_topic_partitions_request(body: Any, version: int) -> None:
    assert [t.name for t in body.topics] == ["orders", "payments"]
    assert body.response_partition_limit == 10
    assert (body.cursor.topic_name, body.cursor.partition_index) == ("orders", 3)


def _elect_leaders_request(body: Any, version: int) -> None:
    if version >= 1:
        assert body.election_type == 1
    assert [(t.topic, list(t.partitions)) for t in body.topic_partitions] == [("orders", [0, 2])]


def _describe_acls_request(body: Any, version: int) -> None:
    assert (body.resource_type_filter, body.operation, body.permission_type) == (1, 1, 1)


def _create_acls_request(body: Any, version: int) -> None:
    (creation,) = body.creations
    assert (creation.resource_type, creation.resource_name, creation.resource_pattern_type) == (
        2,
        "orders",
        3,
    )
    assert (creation.principal, creation.host) == ("User:billing", "*")
    assert (creation.operation, creation.permission_type) == (3, 3)


def _delete_acls_request(body: Any, version: int) -> None:
    (found,) = body.filters
    assert (found.resource_type_filter, found.resource_name_filter) == (2, "orders")
    assert (found.pattern_type_filter, found.principal_filter, found.host_filter) == (1, None, None)
    assert (found.operation, found.permission_type) == (1, 1)


def _sasl_handshake_request(body: Any, version: int) -> None:
    assert body.mechanism == "SCRAM-SHA-512"


def _sasl_authenticate_request(body: Any, version: int) -> None:
    assert bytes(body.auth_bytes) == b"n,,n=alice,r=nonce"


def _describe_user_scram_credentials_request(body: Any, version: int) -> None:
    assert [u.name for u in body.users] == ["alice"]


def _alter_user_scram_credentials_request(body: Any, version: int) -> None:
    assert [(d.name, d.mechanism) for d in body.deletions] == [("bob", 1)]
    (up,) = body.upsertions
    assert (up.name, up.mechanism, up.iterations) == ("alice", 2, 8192)
    assert (bytes(up.salt), bytes(up.salted_password)) == (b"salt", b"s" * 64)


def _describe_producers_request(body: Any, version: int) -> None:
    assert [(t.name, tuple(t.partition_indexes)) for t in body.topics] == [("orders", (0, 2))]


def _list_config_resources_request(body: Any, version: int) -> None:
    if version >= 1:
        assert tuple(body.resource_types) == (2, 32)


def _alter_replica_log_dirs_request(body: Any, version: int) -> None:
    (directory,) = body.dirs
    assert directory.path == "/data-2"
    assert [(t.name, tuple(t.partitions)) for t in directory.topics] == [("orders", (0, 2))]


def _describe_log_dirs_request(body: Any, version: int) -> None:
    assert [(t.topic, tuple(t.partitions)) for t in body.topics] == [("orders", (1,))]


def _alter_partition_reassignments_request(body: Any, version: int) -> None:
    assert body.timeout.total_seconds() == 30
    assert [
        (t.name, [(p.partition_index, p.replicas) for p in t.partitions]) for t in body.topics
    ] == [("orders", [(0, (2, 3)), (1, None)])]
    if version >= 1:
        assert body.allow_replication_factor_change is True


def _list_partition_reassignments_request(body: Any, version: int) -> None:
    assert body.timeout.total_seconds() == 30
    assert [(t.name, tuple(t.partition_indexes)) for t in body.topics] == [("orders", (0, 1))]


def _describe_quorum_request(body: Any, version: int) -> None:
    (topic,) = body.topics
    assert topic.topic_name == "__cluster_metadata"
    assert [int(p.partition_index) for p in topic.partitions] == [0]


def _topic_key(topic: Any, version: int, first_id_version: int, name: str = "name") -> Any:
    return topic.topic_id if version >= first_id_version else getattr(topic, name)


def _produce_request(body: Any, version: int) -> None:
    # Read as plain values (rackwise.protocol.produce_request_reader), not kio's message.
    assert (body.version, body.transactional_id, body.acks, body.timeout_ms) == (
        version,
        None,
        -1,
        30_000,
    )
    topic = body.topic_data[0]
    assert _topic_key(topic, version, 13) == (TOPIC_ID if version >= 13 else "orders")
    assert [(p.partition_index, p.records) for p in topic.partition_data] == [
        (0, RECORDS),
        (1, None),
    ]


def _fetch_request(body: Any, version: int) -> None:
    # Read as plain values (rackwise.protocol.fetch_request_reader), not kio's message.
    assert (body.min_bytes, body.max_bytes, body.isolation_level) == (1, 52428800, 1)
    assert (body.version, body.max_wait_ms, body.replica_id) == (version, 500, -1)
    topic = body.topics[0]
    assert _topic_key(topic, version, 13, "topic") == (TOPIC_ID if version >= 13 else "orders")
    partition = topic.partitions[0]
    assert (partition.partition, partition.fetch_offset) == (2, 100)
    assert partition.partition_max_bytes == 1048576
    if version >= 9:
        assert partition.current_leader_epoch == 4
    if version >= 11:
        assert body.rack_id == "/dc1/r1"


def _list_offsets_request(body: Any, version: int) -> None:
    assert body.replica_id == -1
    partition = body.topics[0].partitions[0]
    assert (body.topics[0].name, partition.partition_index, partition.timestamp) == (
        "orders",
        0,
        -2,
    )
    if version >= 2:
        assert body.isolation_level == 1
    if version >= 4:
        assert partition.current_leader_epoch == 4


def _offset_for_leader_epoch_request(body: Any, version: int) -> None:
    topic = body.topics[0]
    partition = topic.partitions[0]
    assert (topic.topic, partition.partition, partition.leader_epoch) == ("orders", 0, 3)
    assert partition.current_leader_epoch == 4
    if version >= 3:
        assert body.replica_id == -1


def _delete_records_request(body: Any, version: int) -> None:
    topic = body.topics[0]
    assert [(p.partition_index, p.offset) for p in topic.partitions] == [(0, 42)]
    assert topic.name == "orders" and body.timeout.total_seconds() == 30


def _init_producer_id_request(body: Any, version: int) -> None:
    assert body.transactional_id is None
    assert body.transaction_timeout.total_seconds() == 60
    if version >= 3:
        assert (body.producer_id, body.producer_epoch) == (-1, -1)


def _api_versions_request(body: Any, version: int) -> None:
    if version >= 3:
        assert body.client_software_name == "kafka-python"
        assert body.client_software_version == "3.0.12"


def _find_coordinator_request(body: Any, version: int) -> None:
    if version >= 4:
        assert list(body.coordinator_keys) == ["billing", "audit"]
    else:
        assert body.key == "billing"
    if version >= 1:
        assert body.key_type == 0


def _offset_commit_request(body: Any, version: int) -> None:
    assert (body.group_id, body.generation_id_or_member_epoch, body.member_id) == (
        "billing",
        -1,
        "",
    )
    (topic,) = body.topics
    assert topic.name == "orders"
    assert [
        (p.partition_index, p.committed_offset, p.committed_metadata) for p in topic.partitions
    ] == [
        (0, 42, "m"),
        (3, 7, None),
    ]
    if version >= 6:
        assert [p.committed_leader_epoch for p in topic.partitions] == [5, -1]


def _offset_fetch_request(body: Any, version: int) -> None:
    if version >= 8:
        (group,) = body.groups
        name, topics = group.group_id, group.topics
    else:
        name, topics = body.group_id, body.topics
    assert name == "billing"
    assert [(t.name, list(t.partition_indexes)) for t in topics] == [("orders", [0, 3])]


def _list_groups_request(body: Any, version: int) -> None:
    if version >= 4:
        assert list(body.states_filter) == ["Empty"]
    if version >= 5:
        assert list(body.types_filter) == ["classic"]


def _describe_groups_request(body: Any, version: int) -> None:
    assert list(body.groups) == ["billing", "gone"]
    if version >= 3:
        assert body.include_authorized_operations is True


def _delete_groups_request(body: Any, version: int) -> None:
    assert list(body.groups_names) == ["billing", "gone"]


def _offset_delete_request(body: Any, version: int) -> None:
    assert body.group_id == "billing"
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in body.topics] == [
        ("orders", [0, 3])
    ]


def _join_group_request(body: Any, version: int) -> None:
    assert (body.group_id, body.member_id, body.protocol_type) == ("billing", MEMBER, "consumer")
    assert body.session_timeout.total_seconds() == 45
    if version >= 1:
        assert body.rebalance_timeout.total_seconds() == 300
    assert [(p.name, bytes(p.metadata)) for p in body.protocols] == [
        ("range", SUBSCRIPTION),
        ("cooperative-sticky", SUBSCRIPTION),
    ]
    # What the handler reads: a field the version lacks is None.
    instance = getattr(body, "group_instance_id", None)
    assert instance == ("billing-0" if version >= 5 else None)
    reason = getattr(body, "reason", None)
    assert reason == ("rebalance failed due to MemberIdRequiredError" if version >= 8 else None)


def _sync_group_request(body: Any, version: int) -> None:
    assert (body.group_id, body.generation_id, body.member_id) == ("billing", 3, MEMBER)
    assert getattr(body, "group_instance_id", None) == ("billing-0" if version >= 3 else None)
    protocol = (getattr(body, "protocol_type", None), getattr(body, "protocol_name", None))
    assert protocol == (("consumer", "range") if version >= 5 else (None, None))
    assert [(a.member_id, bytes(a.assignment)) for a in body.assignments] == [
        (MEMBER, ASSIGNMENT),
        (OTHER_MEMBER, OTHER_ASSIGNMENT),
    ]


def _heartbeat_request(body: Any, version: int) -> None:
    assert (body.group_id, body.generation_id, body.member_id) == ("billing", 3, MEMBER)
    assert getattr(body, "group_instance_id", None) == ("billing-0" if version >= 3 else None)


def _leave_group_request(body: Any, version: int) -> None:
    assert body.group_id == "billing"
    if version >= 3:
        assert [(m.member_id, m.group_instance_id) for m in body.members] == [
            (MEMBER, None),
            ("", "billing-1"),
        ]
        reasons = [getattr(m, "reason", None) for m in body.members]
        assert reasons == (
            ["the consumer is being closed", "removed by the admin client"]
            if version >= 5
            else [None, None]
        )
    else:
        assert body.member_id == MEMBER


# API name -> (a kafka-python request, before its version is set; what we must read of it)
REQUESTS: dict[str, tuple[Callable[[], Any], Callable[[Any, int], None]]] = {
    "Produce": (
        lambda: ProduceRequest(
            transactional_id=None,
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                ProduceRequest.TopicProduceData(
                    name="orders",
                    topic_id=TOPIC_ID,
                    partition_data=[
                        ProduceRequest.TopicProduceData.PartitionProduceData(
                            index=0, records=RECORDS
                        ),
                        ProduceRequest.TopicProduceData.PartitionProduceData(index=1, records=None),
                    ],
                )
            ],
        ),
        _produce_request,
    ),
    "Fetch": (
        lambda: FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=52428800,
            isolation_level=1,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchRequest.FetchTopic(
                    topic="orders",
                    topic_id=TOPIC_ID,
                    partitions=[
                        FetchRequest.FetchTopic.FetchPartition(
                            partition=2,
                            current_leader_epoch=4,
                            fetch_offset=100,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1048576,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
            rack_id="/dc1/r1",
        ),
        _fetch_request,
    ),
    "ListOffsets": (
        lambda: ListOffsetsRequest(
            replica_id=-1,
            isolation_level=1,
            topics=[
                ListOffsetsRequest.ListOffsetsTopic(
                    name="orders",
                    partitions=[
                        ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
                            partition_index=0, current_leader_epoch=4, timestamp=-2
                        )
                    ],
                )
            ],
            timeout_ms=30000,
        ),
        _list_offsets_request,
    ),
    "OffsetForLeaderEpoch": (
        lambda: OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderEpochRequest.OffsetForLeaderTopic(
                    topic="orders",
                    partitions=[
                        OffsetForLeaderEpochRequest.OffsetForLeaderTopic.OffsetForLeaderPartition(
                            partition=0, current_leader_epoch=4, leader_epoch=3
                        )
                    ],
                )
            ],
        ),
        _offset_for_leader_epoch_request,
    ),
    "DeleteRecords": (
        lambda: DeleteRecordsRequest(
            topics=[
                DeleteRecordsRequest.DeleteRecordsTopic(
                    name="orders",
                    partitions=[
                        DeleteRecordsRequest.DeleteRecordsTopic.DeleteRecordsPartition(
                            partition_index=0, offset=42
                        )
                    ],
                )
            ],
            timeout_ms=30000,
        ),
        _delete_records_request,
    ),
    "InitProducerId": (
        lambda: InitProducerIdRequest(
            transactional_id=None,
            transaction_timeout_ms=60000,
            producer_id=-1,
            producer_epoch=-1,
        ),
        _init_producer_id_request,
    ),
    "SaslHandshake": (
        lambda: SaslHandshakeRequest(mechanism="SCRAM-SHA-512"),
        _sasl_handshake_request,
    ),
    "SaslAuthenticate": (
        lambda: SaslAuthenticateRequest(auth_bytes=b"n,,n=alice,r=nonce"),
        _sasl_authenticate_request,
    ),
    "DescribeUserScramCredentials": (
        lambda: DescribeUserScramCredentialsRequest(
            users=[DescribeUserScramCredentialsRequest.UserName(name="alice")]
        ),
        _describe_user_scram_credentials_request,
    ),
    "AlterUserScramCredentials": (
        lambda: AlterUserScramCredentialsRequest(
            deletions=[
                AlterUserScramCredentialsRequest.ScramCredentialDeletion(name="bob", mechanism=1)
            ],
            upsertions=[
                AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
                    name="alice",
                    mechanism=2,
                    iterations=8192,
                    salt=b"salt",
                    salted_password=b"s" * 64,
                )
            ],
        ),
        _alter_user_scram_credentials_request,
    ),
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
    "AlterConfigs": (
        lambda: AlterConfigsRequest(
            resources=[
                AlterConfigsRequest.AlterConfigsResource(
                    resource_type=4,
                    resource_name="",
                    configs=[
                        AlterConfigsRequest.AlterConfigsResource.AlterableConfig(
                            name="log.retention.ms", value="1000"
                        )
                    ],
                )
            ],
            validate_only=True,
        ),
        _alter_configs_request,
    ),
    "IncrementalAlterConfigs": (
        lambda: IncrementalAlterConfigsRequest(
            resources=[
                IncrementalAlterConfigsRequest.AlterConfigsResource(
                    resource_type=4,
                    resource_name="",
                    configs=[
                        IncrementalAlterConfigsRequest.AlterConfigsResource.AlterableConfig(
                            name="log.retention.ms", config_operation=0, value="1000"
                        )
                    ],
                )
            ],
            validate_only=True,
        ),
        _alter_configs_request,
    ),
    "AlterReplicaLogDirs": (
        lambda: AlterReplicaLogDirsRequest(
            dirs=[
                AlterReplicaLogDirsRequest.AlterReplicaLogDir(
                    path="/data-2",
                    topics=[
                        AlterReplicaLogDirsRequest.AlterReplicaLogDir.AlterReplicaLogDirTopic(
                            name="orders", partitions=[0, 2]
                        )
                    ],
                )
            ]
        ),
        _alter_replica_log_dirs_request,
    ),
    "DescribeQuorum": (
        lambda: DescribeQuorumRequest(
            topics=[
                DescribeQuorumRequest.TopicData(
                    topic_name="__cluster_metadata",
                    partitions=[DescribeQuorumRequest.TopicData.PartitionData(partition_index=0)],
                )
            ]
        ),
        _describe_quorum_request,
    ),
    "DescribeLogDirs": (
        lambda: DescribeLogDirsRequest(topics=[("orders", [1])]),
        _describe_log_dirs_request,
    ),
    "AlterPartitionReassignments": (
        lambda: AlterPartitionReassignmentsRequest(
            timeout_ms=30_000,
            topics=[
                AlterPartitionReassignmentsRequest.ReassignableTopic(
                    name="orders",
                    partitions=[
                        AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition(
                            partition_index=0, replicas=[2, 3]
                        ),
                        AlterPartitionReassignmentsRequest.ReassignableTopic.ReassignablePartition(
                            partition_index=1, replicas=None
                        ),
                    ],
                )
            ],
        ),
        _alter_partition_reassignments_request,
    ),
    "ListPartitionReassignments": (
        lambda: ListPartitionReassignmentsRequest(
            timeout_ms=30_000,
            topics=[
                ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(
                    name="orders", partition_indexes=[0, 1]
                )
            ],
        ),
        _list_partition_reassignments_request,
    ),
    "DescribeCluster": (
        lambda: DescribeClusterRequest(
            include_cluster_authorized_operations=True, include_fenced_brokers=True
        ),
        _describe_cluster_request,
    ),
    "DescribeTopicPartitions": (
        lambda: DescribeTopicPartitionsRequest(
            topics=[
                DescribeTopicPartitionsRequest.TopicRequest(name="orders"),
                DescribeTopicPartitionsRequest.TopicRequest(name="payments"),
            ],
            response_partition_limit=10,
            cursor=DescribeTopicPartitionsRequest.Cursor(topic_name="orders", partition_index=3),
        ),
        _describe_topic_partitions_request,
    ),
    "ElectLeaders": (
        lambda: ElectLeadersRequest(
            election_type=1,
            topic_partitions=[
                ElectLeadersRequest.TopicPartitions(topic="orders", partitions=[0, 2])
            ],
            timeout_ms=30_000,
        ),
        _elect_leaders_request,
    ),
    "FindCoordinator": (
        lambda: FindCoordinatorRequest(
            key="billing", key_type=0, coordinator_keys=["billing", "audit"]
        ),
        _find_coordinator_request,
    ),
    "OffsetCommit": (
        lambda: OffsetCommitRequest(
            group_id="billing",
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            retention_time_ms=-1,
            topics=[
                OffsetCommitRequest.OffsetCommitRequestTopic(
                    name="orders",
                    partitions=[
                        OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                            partition_index=0,
                            committed_offset=42,
                            committed_leader_epoch=5,
                            committed_metadata="m",
                        ),
                        OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
                            partition_index=3,
                            committed_offset=7,
                            committed_leader_epoch=-1,
                            committed_metadata=None,
                        ),
                    ],
                )
            ],
        ),
        _offset_commit_request,
    ),
    "OffsetFetch": (
        lambda: OffsetFetchRequest(
            group_id="billing",
            topics=[
                OffsetFetchRequest.OffsetFetchRequestTopic(name="orders", partition_indexes=[0, 3])
            ],
            groups=[
                OffsetFetchRequest.OffsetFetchRequestGroup(
                    group_id="billing",
                    member_id=None,
                    member_epoch=-1,
                    topics=[
                        OffsetFetchRequest.OffsetFetchRequestGroup.OffsetFetchRequestTopics(
                            name="orders", partition_indexes=[0, 3]
                        )
                    ],
                )
            ],
            require_stable=False,
        ),
        _offset_fetch_request,
    ),
    "ListGroups": (
        lambda: ListGroupsRequest(states_filter=["Empty"], types_filter=["classic"]),
        _list_groups_request,
    ),
    "DescribeGroups": (
        lambda: DescribeGroupsRequest(
            groups=["billing", "gone"], include_authorized_operations=True
        ),
        _describe_groups_request,
    ),
    "DeleteGroups": (
        lambda: DeleteGroupsRequest(groups_names=["billing", "gone"]),
        _delete_groups_request,
    ),
    "OffsetDelete": (
        lambda: OffsetDeleteRequest(
            group_id="billing",
            topics=[
                OffsetDeleteRequest.OffsetDeleteRequestTopic(
                    name="orders",
                    partitions=[
                        OffsetDeleteRequest.OffsetDeleteRequestTopic.OffsetDeleteRequestPartition(
                            partition_index=i
                        )
                        for i in (0, 3)
                    ],
                )
            ],
        ),
        _offset_delete_request,
    ),
    "JoinGroup": (
        lambda: JoinGroupRequest(
            group_id="billing",
            session_timeout_ms=45_000,
            rebalance_timeout_ms=300_000,
            member_id=MEMBER,
            group_instance_id="billing-0",
            protocol_type="consumer",
            protocols=[
                JoinGroupRequest.JoinGroupRequestProtocol(name=name, metadata=SUBSCRIPTION)
                for name in ("range", "cooperative-sticky")
            ],
            reason="rebalance failed due to MemberIdRequiredError",
        ),
        _join_group_request,
    ),
    "SyncGroup": (
        lambda: SyncGroupRequest(
            group_id="billing",
            generation_id=3,
            member_id=MEMBER,
            group_instance_id="billing-0",
            protocol_type="consumer",
            protocol_name="range",
            assignments=[
                SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in ((MEMBER, ASSIGNMENT), (OTHER_MEMBER, OTHER_ASSIGNMENT))
            ],
        ),
        _sync_group_request,
    ),
    "Heartbeat": (
        lambda: HeartbeatRequest(
            group_id="billing", generation_id=3, member_id=MEMBER, group_instance_id="billing-0"
        ),
        _heartbeat_request,
    ),
    "LeaveGroup": (
        lambda: LeaveGroupRequest(
            group_id="billing",
            member_id=MEMBER,
            members=[
                LeaveGroupRequest.MemberIdentity(
                    member_id=MEMBER, group_instance_id=None, reason="the consumer is being closed"
                ),
                LeaveGroupRequest.MemberIdentity(
                    member_id="",
                    group_instance_id="billing-1",
                    reason="removed by the admin client",
                ),
            ],
        ),
        _leave_group_request,
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
    "DescribeProducers": (
        lambda: DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name="orders", partition_indexes=[0, 2])]
        ),
        _describe_producers_request,
    ),
    "ListConfigResources": (
        lambda: ListConfigResourcesRequest(resource_types=[2, 32]),
        _list_config_resources_request,
    ),
    "CreateAcls": (
        lambda: CreateAclsRequest(
            creations=[
                CreateAclsRequest.AclCreation(
                    resource_type=2,
                    resource_name="orders",
                    resource_pattern_type=3,
                    principal="User:billing",
                    host="*",
                    operation=3,
                    permission_type=3,
                )
            ]
        ),
        _create_acls_request,
    ),
    "DeleteAcls": (
        lambda: DeleteAclsRequest(
            filters=[
                DeleteAclsRequest.DeleteAclsFilter(
                    resource_type_filter=2,
                    resource_name_filter="orders",
                    pattern_type_filter=1,
                    principal_filter=None,
                    host_filter=None,
                    operation=1,
                    permission_type=1,
                )
            ]
        ),
        _delete_acls_request,
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
    # kafka-python has no KIP-848 consumer: its wire library lacks these two
    assert served - {"ConsumerGroupHeartbeat", "ConsumerGroupDescribe"} == set(REQUESTS)


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
    # The same bytes, field for field: our encoder writes what kafka-python wrote (a Produce
    # or Fetch request is read as plain values; the message written is kio's reading of it).
    body = outcome.body
    if isinstance(body, ProduceRequestValues | FetchRequestRead):
        body, _ = read_body(outcome.api.request_class(version), frames.frames[0], header.size)
    assert write_body(body) == frames.frames[0][header.size :]


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


def _describe_topic_partitions_response(read: Any, version: int) -> None:
    (topic,) = read.topics
    assert (topic.name, topic.topic_id, topic.error_code) == ("orders", TOPIC_ID, 0)
    (partition,) = topic.partitions
    assert (partition.partition_index, partition.leader_id, partition.leader_epoch) == (3, 1, 4)
    assert (list(partition.replica_nodes), list(partition.offline_replicas)) == ([1, 2], [2])
    assert list(partition.eligible_leader_replicas) == []
    assert (read.next_cursor.topic_name, read.next_cursor.partition_index) == ("orders", 4)


def _find_coordinator_response(read: Any, version: int) -> None:
    if version >= 4:
        assert [(c.key, c.node_id, c.host, c.port, c.error_code) for c in read.coordinators] == [
            ("billing", 2, "h2", 9092, 0),
            ("audit", -1, "", -1, 15),
        ]
    else:
        assert (read.node_id, read.host, read.port, read.error_code) == (2, "h2", 9092, 0)
        if version >= 1:
            assert read.error_message == "NONE"


def _offset_commit_response(read: Any, version: int) -> None:
    (topic,) = read.topics
    assert topic.name == "orders"
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [(0, 0), (3, 12)]


def _offset_fetch_response(read: Any, version: int) -> None:
    if version >= 8:
        (group,) = read.groups
        assert (group.group_id, group.error_code) == ("billing", 0)
        topics = group.topics
    else:
        topics = read.topics
        if version >= 2:
            assert read.error_code == 0
    (topic,) = topics
    assert topic.name == "orders"
    assert [(p.partition_index, p.committed_offset, p.metadata) for p in topic.partitions] == [
        (0, 42, "m"),
        (3, -1, ""),
    ]
    if version >= 5:
        assert [p.committed_leader_epoch for p in topic.partitions] == [5, -1]


def _list_groups_response(read: Any, version: int) -> None:
    assert read.error_code == 0
    (group,) = read.groups
    assert (group.group_id, group.protocol_type) == ("billing", "")
    if version >= 4:
        assert group.group_state == "Empty"
    if version >= 5:
        assert group.group_type == "classic"


def _describe_groups_response(read: Any, version: int) -> None:
    billing, gone = read.groups
    assert (billing.group_id, billing.error_code, billing.group_state) == ("billing", 0, "Empty")
    assert (billing.protocol_type, billing.protocol_data, list(billing.members)) == ("", "", [])
    assert (gone.group_id, gone.group_state, gone.error_code) == ("gone", "Dead", 69)
    if version >= 3:
        assert set(billing.authorized_operations) == {
            3,
            6,
            8,
            10,
            11,
        }  # READ DELETE DESCRIBE *_CONFIGS
    if version >= 6:
        assert gone.error_message == "Group gone not found."


def _delete_groups_response(read: Any, version: int) -> None:
    assert [(r.group_id, r.error_code) for r in read.results] == [("billing", 0), ("gone", 69)]


def _offset_delete_response(read: Any, version: int) -> None:
    assert read.error_code == 0
    (topic,) = read.topics
    assert topic.name == "orders"
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [(0, 0), (3, 3)]


def _join_group_response(read: Any, version: int) -> None:
    assert (read.error_code, read.generation_id, read.protocol_name) == (0, 3, "range")
    assert (read.leader, read.member_id) == (MEMBER, MEMBER)
    if version >= 7:
        assert read.protocol_type == "consumer"
    if version >= 9:
        assert read.skip_assignment is True
    (member,) = read.members
    assert (member.member_id, bytes(member.metadata)) == (MEMBER, SUBSCRIPTION)
    if version >= 5:
        assert member.group_instance_id == "billing-0"


def _sync_group_response(read: Any, version: int) -> None:
    assert (read.error_code, bytes(read.assignment)) == (0, ASSIGNMENT)
    if version >= 5:
        assert (read.protocol_type, read.protocol_name) == ("consumer", "range")


def _heartbeat_response(read: Any, version: int) -> None:
    assert read.error_code == 27  # REBALANCE_IN_PROGRESS


def _leave_group_response(read: Any, version: int) -> None:
    assert read.error_code == 0
    if version >= 3:
        assert [(m.member_id, m.group_instance_id, m.error_code) for m in read.members] == [
            (MEMBER, None, 0),
            ("", "billing-1", 25),  # UNKNOWN_MEMBER_ID
        ]


def _elect_leaders_response(read: Any, version: int) -> None:
    (result,) = read.replica_election_results
    assert result.topic == "orders"
    assert [(p.partition_id, p.error_code, p.error_message) for p in result.partition_result] == [
        (0, 0, None),
        (2, 84, "Leader election not needed for topic partition."),
    ]


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


def _describe_producers_response(read: Any, version: int) -> None:
    (topic,) = read.topics
    ok, refused = topic.partitions
    assert (ok.partition_index, ok.error_code, refused.error_code) == (0, 0, 6)
    (producer,) = ok.active_producers
    assert (producer.producer_id, producer.producer_epoch, producer.last_sequence) == (4000, 2, 99)
    assert (producer.last_timestamp, producer.coordinator_epoch) == (1_700_000_000_000, -1)
    assert producer.current_txn_start_offset == -1


def _list_config_resources_response(read: Any, version: int) -> None:
    assert read.error_code == 0
    listed = [(r.resource_name, r.resource_type) for r in read.config_resources]
    # v0 has no resource_type on the wire: the field reads as its default, CLIENT_METRICS
    assert listed == (
        [("orders", 2), ("billing", 32)] if version >= 1 else [("orders", 16), ("billing", 16)]
    )


def _create_acls_response(read: Any, version: int) -> None:
    assert [(r.error_code, r.error_message) for r in read.results] == [
        (54, "No Authorizer is configured.")
    ]


def _delete_acls_response(read: Any, version: int) -> None:
    (result,) = read.filter_results
    assert (result.error_code, result.error_message) == (54, "No Authorizer is configured.")
    assert list(result.matching_acls) == []


def _produce_response(read: Any, version: int) -> None:
    topic = read.responses[0]
    assert _topic_key(topic, version, 13) == (TOPIC_ID if version >= 13 else "orders")
    ok, refused = topic.partition_responses
    assert (ok.index, ok.error_code, ok.base_offset, ok.log_append_time_ms) == (0, 0, 100, -1)
    assert (refused.index, refused.error_code) == (1, 6)
    if version >= 5:
        assert ok.log_start_offset == 7
    if version >= 8:
        assert refused.error_message == "This server is not the leader for that topic-partition."
    if version >= 10:
        assert (refused.current_leader.leader_id, refused.current_leader.leader_epoch) == (2, 5)
        assert [(e.node_id, e.host, e.port) for e in read.node_endpoints] == [(2, "h2", 9092)]


def _fetch_response(read: Any, version: int) -> None:
    topic = read.responses[0]
    assert _topic_key(topic, version, 13, "topic") == (TOPIC_ID if version >= 13 else "orders")
    data, fenced = topic.partitions
    assert (data.partition_index, data.error_code, data.high_watermark) == (2, 0, 120)
    assert bytes(data.records) == RECORDS
    assert (fenced.partition_index, fenced.error_code) == (3, 74)
    if version >= 5:
        assert data.log_start_offset == 7
    if version >= 7:
        assert read.session_id == 0
    if version >= 12:
        assert (data.diverging_epoch.epoch, data.diverging_epoch.end_offset) == (3, 90)
        assert fenced.current_leader.leader_id == 2
    if version >= 16:
        assert [(e.node_id, e.host, e.port) for e in read.node_endpoints] == [(2, "h2", 9092)]


def _list_offsets_response(read: Any, version: int) -> None:
    partition = read.topics[0].partitions[0]
    assert (partition.partition_index, partition.error_code, partition.offset) == (0, 0, 55)
    if version >= 4:
        assert partition.leader_epoch == 4


def _offset_for_leader_epoch_response(read: Any, version: int) -> None:
    partition = read.topics[0].partitions[0]
    assert (partition.partition, partition.leader_epoch, partition.end_offset) == (0, 3, 90)


def _delete_records_response(read: Any, version: int) -> None:
    partition = read.topics[0].partitions[0]
    assert (partition.partition_index, partition.low_watermark, partition.error_code) == (0, 42, 0)


def _init_producer_id_response(read: Any, version: int) -> None:
    assert (read.error_code, read.producer_id, read.producer_epoch) == (0, 1000, 0)


ENDPOINTS = [{"node_id": 2, "host": "h2", "port": 9092, "rack": None}]

FETCHED: list[dict[str, Any]] = [
    {
        "partition_index": 0,
        "committed_offset": 42,
        "committed_leader_epoch": 5,
        "metadata": "m",
        "error_code": 0,
    },
    {
        "partition_index": 3,
        "committed_offset": -1,
        "committed_leader_epoch": -1,
        "metadata": "",
        "error_code": 0,
    },
]

# API name -> (kafka-python's response class, our values, what kafka-python must read)
RESPONSES: dict[str, tuple[Any, dict[str, Any], Callable[[Any, int], None]]] = {
    "Produce": (
        ProduceResponse,
        {
            "throttle_time": 0,
            "responses": [
                {
                    "name": "orders",
                    "topic_id": TOPIC_ID,
                    "partition_responses": [
                        {
                            "index": 0,
                            "error_code": 0,
                            "base_offset": 100,
                            "log_append_time": -1,
                            "log_start_offset": 7,
                            "record_errors": [],
                        },
                        {
                            "index": 1,
                            "error_code": 6,
                            "base_offset": -1,
                            "log_append_time": -1,
                            "record_errors": [],
                            "error_message": (
                                "This server is not the leader for that topic-partition."
                            ),
                            "current_leader": {"leader_id": 2, "leader_epoch": 5},
                        },
                    ],
                }
            ],
            "node_endpoints": ENDPOINTS,
        },
        _produce_response,
    ),
    "Fetch": (
        FetchResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {
                    "topic": "orders",
                    "topic_id": TOPIC_ID,
                    "partitions": [
                        {
                            "partition_index": 2,
                            "error_code": 0,
                            "high_watermark": 120,
                            "last_stable_offset": 120,
                            "log_start_offset": 7,
                            "diverging_epoch": {"epoch": 3, "end_offset": 90},
                            "aborted_transactions": [],
                            "records": RECORDS,
                        },
                        {
                            "partition_index": 3,
                            "error_code": 74,
                            "high_watermark": -1,
                            "current_leader": {"leader_id": 2, "leader_epoch": 5},
                            "aborted_transactions": None,
                            "records": None,
                        },
                    ],
                }
            ],
            "node_endpoints": ENDPOINTS,
        },
        _fetch_response,
    ),
    "ListOffsets": (
        ListOffsetsResponse,
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "timestamp": -1,
                            "offset": 55,
                            "leader_epoch": 4,
                        }
                    ],
                }
            ],
        },
        _list_offsets_response,
    ),
    "OffsetForLeaderEpoch": (
        OffsetForLeaderEpochResponse,
        {
            "throttle_time": 0,
            "topics": [
                {
                    "topic": "orders",
                    "partitions": [
                        {"error_code": 0, "partition": 0, "leader_epoch": 3, "end_offset": 90}
                    ],
                }
            ],
        },
        _offset_for_leader_epoch_response,
    ),
    "DeleteRecords": (
        DeleteRecordsResponse,
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [{"partition_index": 0, "low_watermark": 42, "error_code": 0}],
                }
            ],
        },
        _delete_records_response,
    ),
    "InitProducerId": (
        InitProducerIdResponse,
        {"throttle_time": 0, "error_code": 0, "producer_id": 1000, "producer_epoch": 0},
        _init_producer_id_response,
    ),
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
    "DescribeTopicPartitions": (
        DescribeTopicPartitionsResponse,
        {
            "throttle_time": 0,
            "topics": [
                {
                    "error_code": 0,
                    "name": "orders",
                    "topic_id": TOPIC_ID,
                    "is_internal": False,
                    "partitions": [
                        {
                            "error_code": 0,
                            "partition_index": 3,
                            "leader_id": 1,
                            "leader_epoch": 4,
                            "replica_nodes": [1, 2],
                            "isr_nodes": [1],
                            "eligible_leader_replicas": [],
                            "last_known_elr": [],
                            "offline_replicas": [2],
                        }
                    ],
                    "topic_authorized_operations": 3576,
                }
            ],
            "next_cursor": {"topic_name": "orders", "partition_index": 4},
        },
        _describe_topic_partitions_response,
    ),
    "FindCoordinator": (
        FindCoordinatorResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "error_message": "NONE",
            "node_id": 2,
            "host": "h2",
            "port": 9092,
            "coordinators": [
                {
                    "key": "billing",
                    "node_id": 2,
                    "host": "h2",
                    "port": 9092,
                    "error_code": 0,
                    "error_message": None,
                },
                {
                    "key": "audit",
                    "node_id": -1,
                    "host": "",
                    "port": -1,
                    "error_code": 15,
                    "error_message": None,
                },
            ],
        },
        _find_coordinator_response,
    ),
    "OffsetCommit": (
        OffsetCommitResponse,
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": 0, "error_code": 0},
                        {"partition_index": 3, "error_code": 12},
                    ],
                }
            ],
        },
        _offset_commit_response,
    ),
    "OffsetFetch": (
        OffsetFetchResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "topics": [{"name": "orders", "partitions": FETCHED}],
            "groups": [
                {
                    "group_id": "billing",
                    "error_code": 0,
                    "topics": [{"name": "orders", "partitions": FETCHED}],
                }
            ],
        },
        _offset_fetch_response,
    ),
    "ListGroups": (
        ListGroupsResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "groups": [
                {
                    "group_id": "billing",
                    "protocol_type": "",
                    "group_state": "Empty",
                    "group_type": "classic",
                }
            ],
        },
        _list_groups_response,
    ),
    "DescribeGroups": (
        DescribeGroupsResponse,
        {
            "throttle_time": 0,
            "groups": [
                {
                    "error_code": 0,
                    "error_message": None,
                    "group_id": "billing",
                    "group_state": "Empty",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": 3400,
                },
                {
                    "error_code": 69,
                    "error_message": "Group gone not found.",
                    "group_id": "gone",
                    "group_state": "Dead",
                    "protocol_type": "",
                    "protocol_data": "",
                    "members": [],
                    "authorized_operations": -2147483648,
                },
            ],
        },
        _describe_groups_response,
    ),
    "DeleteGroups": (
        DeleteGroupsResponse,
        {
            "throttle_time": 0,
            "results": [
                {"group_id": "billing", "error_code": 0},
                {"group_id": "gone", "error_code": 69},
            ],
        },
        _delete_groups_response,
    ),
    "OffsetDelete": (
        OffsetDeleteResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {"partition_index": 0, "error_code": 0},
                        {"partition_index": 3, "error_code": 3},
                    ],
                }
            ],
        },
        _offset_delete_response,
    ),
    "JoinGroup": (
        JoinGroupResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "generation_id": 3,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "leader": MEMBER,
            "skip_assignment": True,  # KIP-814: the static leader rejoined a stable group
            "member_id": MEMBER,
            "members": [
                {"member_id": MEMBER, "group_instance_id": "billing-0", "metadata": SUBSCRIPTION}
            ],
        },
        _join_group_response,
    ),
    "SyncGroup": (
        SyncGroupResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignment": ASSIGNMENT,
        },
        _sync_group_response,
    ),
    "Heartbeat": (
        HeartbeatResponse,
        {"throttle_time": 0, "error_code": 27},
        _heartbeat_response,
    ),
    "LeaveGroup": (
        LeaveGroupResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "members": [
                {"member_id": MEMBER, "group_instance_id": None, "error_code": 0},
                {"member_id": "", "group_instance_id": "billing-1", "error_code": 25},
            ],
        },
        _leave_group_response,
    ),
    "ElectLeaders": (
        ElectLeadersResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "replica_election_results": [
                {
                    "topic": "orders",
                    "partition_result": [
                        {"partition_id": 0, "error_code": 0, "error_message": None},
                        {
                            "partition_id": 2,
                            "error_code": 84,
                            "error_message": "Leader election not needed for topic partition.",
                        },
                    ],
                }
            ],
        },
        _elect_leaders_response,
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
    "DescribeProducers": (
        DescribeProducersResponse,
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": "orders",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "active_producers": [
                                {
                                    "producer_id": 4000,
                                    "producer_epoch": 2,
                                    "last_sequence": 99,
                                    "last_timestamp": 1_700_000_000_000,
                                    "coordinator_epoch": -1,
                                    "current_txn_start_offset": -1,
                                }
                            ],
                        },
                        {"partition_index": 2, "error_code": 6, "active_producers": []},
                    ],
                }
            ],
        },
        _describe_producers_response,
    ),
    "ListConfigResources": (
        ListConfigResourcesResponse,
        {
            "throttle_time": 0,
            "error_code": 0,
            "config_resources": [
                {"resource_name": "orders", "resource_type": 2},
                {"resource_name": "billing", "resource_type": 32},
            ],
        },
        _list_config_resources_response,
    ),
    "CreateAcls": (
        CreateAclsResponse,
        {
            "throttle_time": 0,
            "results": [{"error_code": 54, "error_message": "No Authorizer is configured."}],
        },
        _create_acls_response,
    ),
    "DeleteAcls": (
        DeleteAclsResponse,
        {
            "throttle_time": 0,
            "filter_results": [
                {
                    "error_code": 54,
                    "error_message": "No Authorizer is configured.",
                    "matching_acls": [],
                }
            ],
        },
        _delete_acls_response,
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
    assert advertised == {k: s.advertised_range for k, s in apis_for(Listener.BROKER).items()}
    assert advertised[0] == (0, 13)  # Produce, as Kafka 4.1 lists it (KAFKA-18659)
    if version >= 3:
        # KAFKA-17492: below v4 a feature whose lowest level is 0 is left out.
        names = [f.name for f in read.supported_features]
        assert names == (
            ["group.version", "metadata.version"] if version >= 4 else ["metadata.version"]
        )
