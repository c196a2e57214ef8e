"""Golden bytes written out by hand from the message specs, field by field: a request and a
response of the APIs kafka-python cannot check for us (the controller's, and our own), and of
ApiVersions and Metadata as anchors. Each is held against our encoder and, framed with its
header, against the request decoder."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from rackwise.protocol import (
    FinalizedFeature,
    Listener,
    Request,
    SupportedFeature,
    api_versions_response,
    decode_request,
    encode_response,
    make,
    request_class,
    response_class,
)
from rackwise.protocol.bodies import read_body, write_body
from rackwise.protocol.header import encode_request_header
from rackwise.protocol.messages import (
    CreateReplicaPlacementRequest,
    CreateReplicaPlacementResponse,
    CreateReplicaPlacementResponseV0,
)

U1 = uuid.UUID(int=1)
U2 = uuid.UUID(int=2)
U3 = uuid.UUID(int=3)


def _hex(text: str) -> bytes:
    """Hex with spaces and ``#`` comments, one field per line."""
    return bytes.fromhex("".join(line.split("#")[0] for line in text.splitlines()))


def _uuid_hex(value: uuid.UUID) -> str:
    return value.bytes.hex()


REGISTRATION_V4 = _hex(f"""
    00000001                    # BrokerId 1
    03 6331                     # ClusterId "c1" (compact: length + 1)
    {_uuid_hex(U1)}             # IncarnationId
    02                          # Listeners: one
      0a 504c41494e54455854     #   Name "PLAINTEXT"
      02 68                     #   Host "h"
      2384                      #   Port 9092 (uint16)
      0000                      #   SecurityProtocol 0
      00                        #   no tagged fields
    02                          # Features: one
      11 6d657461646174612e76657273696f6e  # Name "metadata.version"
      0001 001b                 #   MinSupportedVersion 1, MaxSupportedVersion 27
      00
    08 2f6463312f7231           # Rack "/dc1/r1"
    00                          # IsMigratingZkBroker false
    02 {_uuid_hex(U2)}          # LogDirs: one
    ffffffffffffffff            # PreviousBrokerEpoch -1
    00                          # no tagged fields
""")
REGISTRATION_RESPONSE_V4 = _hex("""
    00000000 0000 000000000000002a 00  # ThrottleTimeMs, ErrorCode, BrokerEpoch 42, tags
""")
HEARTBEAT_V1 = _hex(f"""
    00000001 000000000000002a   # BrokerId 1, BrokerEpoch 42
    0000000000000064            # CurrentMetadataOffset 100
    00 00                       # WantFence, WantShutDown
    01 00 11 02 {_uuid_hex(U3)} # tagged: OfflineLogDirs (tag 0, 17 bytes) = [U3]
""")
HEARTBEAT_RESPONSE_V1 = _hex("""
    00000000 0000               # ThrottleTimeMs, ErrorCode
    01 00 00                    # IsCaughtUp, IsFenced, ShouldShutDown
    00
""")
ALTER_PARTITION_V3 = _hex(f"""
    00000001 000000000000002a   # BrokerId 1, BrokerEpoch 42
    02 {_uuid_hex(U2)}          # Topics: one (compact count + 1); TopicId U2
      02                        #   Partitions: one
        00000000 00000003       #     PartitionIndex 0, LeaderEpoch 3
        03                      #     NewIsrWithEpochs: two
          00000001 000000000000002a 00  # BrokerId 1, BrokerEpoch 42, no tags
          00000002 0000000000000007 00  # BrokerId 2, BrokerEpoch 7, no tags
        00 00000005 00          #     LeaderRecoveryState 0, PartitionEpoch 5, no tags
      00                        #   no tags
    00
""")
ALTER_PARTITION_RESPONSE_V3 = _hex(f"""
    00000000 0000               # ThrottleTimeMs, ErrorCode
    02 {_uuid_hex(U2)}          # Topics: one; TopicId U2
      02                        #   Partitions: one
        00000000 0000           #     PartitionIndex 0, ErrorCode 0
        00000001 00000003       #     LeaderId 1, LeaderEpoch 3
        03 00000001 00000002    #     Isr [1, 2]
        00 00000006 00          #     LeaderRecoveryState 0, PartitionEpoch 6, no tags
      00                        #   no tags
    00
""")
ALLOCATE_PRODUCER_IDS_V0 = _hex("""
    00000001                    # BrokerId 1
    000000000000002a            # BrokerEpoch 42
    00
""")
ALLOCATE_PRODUCER_IDS_RESPONSE_V0 = _hex("""
    00000000 0000               # ThrottleTimeMs, ErrorCode
    00000000000007d0            # ProducerIdStart 2000
    000003e8                    # ProducerIdLen 1000
    00
""")
METADATA_V12 = _hex("00 00 00 00  # Topics null, no auto-creation, no operations, no tags")
METADATA_RESPONSE_V1 = _hex("""
    00000001                    # Brokers: one (int32 count)
      00000001 0001 68 00002384 #   NodeId 1, Host "h" (int16 length), Port 9092
      0007 2f6463312f7231       #   Rack "/dc1/r1"
    00000001                    # ControllerId 1
    00000001                    # Topics: one
      0000 0001 74 00           #   ErrorCode, Name "t", IsInternal false
      00000001                  #   Partitions: one
        0000 00000000 00000001  #     ErrorCode, PartitionIndex 0, LeaderId 1
        00000002 00000001 00000002  # ReplicaNodes [1, 2]
        00000001 00000001       #     IsrNodes [1]
""")
API_VERSIONS_V3 = _hex("""
    0d 6b61666b612d707974686f6e # ClientSoftwareName "kafka-python"
    07 332e302e3132             # ClientSoftwareVersion "3.0.12"
    00
""")
_NAME = "11 6d657461646174612e76657273696f6e"  # "metadata.version"
API_VERSIONS_RESPONSE_V3_CONTROLLER = _hex(f"""
    0000                        # ErrorCode
    1f                          # ApiKeys: thirty
      0001 0004 0012 00         #   Fetch 4-18 (the quorum's followers fetch the metadata log)
      0011 0000 0001 00         #   SaslHandshake 0-1
      0012 0000 0004 00         #   ApiVersions 0-4
      0013 0002 0007 00         #   CreateTopics 2-7
      0014 0001 0006 00         #   DeleteTopics 1-6
      001d 0001 0003 00         #   DescribeAcls 1-3
      001e 0001 0003 00         #   CreateAcls 1-3
      001f 0001 0003 00         #   DeleteAcls 1-3
      0020 0001 0004 00         #   DescribeConfigs 1-4
      0021 0000 0002 00         #   AlterConfigs 0-2
      0024 0000 0002 00         #   SaslAuthenticate 0-2
      0025 0000 0003 00         #   CreatePartitions 0-3
      002b 0000 0002 00         #   ElectLeaders 0-2
      002c 0000 0001 00         #   IncrementalAlterConfigs 0-1
      002d 0000 0001 00         #   AlterPartitionReassignments 0-1
      002e 0000 0000 00         #   ListPartitionReassignments 0
      0032 0000 0000 00         #   DescribeUserScramCredentials 0
      0033 0000 0000 00         #   AlterUserScramCredentials 0
      0034 0000 0002 00         #   Vote 0-2
      0035 0000 0001 00         #   BeginQuorumEpoch 0-1
      0036 0000 0001 00         #   EndQuorumEpoch 0-1
      0037 0000 0002 00         #   DescribeQuorum 0-2
      0038 0002 0003 00         #   AlterPartition 2-3
      003b 0000 0001 00         #   FetchSnapshot 0-1
      003c 0000 0002 00         #   DescribeCluster 0-2 (the controllers, KIP-919)
      003e 0000 0004 00         #   BrokerRegistration 0-4
      003f 0000 0001 00         #   BrokerHeartbeat 0-1
      0043 0000 0000 00         #   AllocateProducerIds 0
      0049 0000 0000 00         #   AssignReplicasToDirs 0
      03e8 0000 0000 00         #   CreateReplicaPlacement 0
    00000000                    # ThrottleTimeMs
    03                          # three tagged fields
      00 17 02 {_NAME} 0001 001b 00  # 0: SupportedFeatures [metadata.version 1-27]
      01 08 0000000000000007    # 1: FinalizedFeaturesEpoch 7
      02 17 02 {_NAME} 001b 001b 00  # 2: FinalizedFeatures [metadata.version 27]
""")
PLACEMENT = _hex("""
    00000003 0002 00            # NumPartitions 3, ReplicationFactor 2, ForceSimplePlacement
    04 00000001 00000002 00000003  # NodeId [1, 2, 3]
    0000ea60                    # TimeoutMs 60000
    00
""")
PLACEMENT_RESPONSE = _hex("""
    04                          # ReplicaPlacement: three
      00000000 03 00000001 00000002 00  # partition 0: [1, 2]
      00000001 03 00000002 00000003 00  # partition 1: [2, 3]
      00000002 03 00000003 00000001 00  # partition 2: [3, 1]
    00                          # no tagged fields: no error
""")
_MESSAGE = "Replication factor: 4 larger than available brokers: 3."
PLACEMENT_ERROR = _hex(f"""
    01                          # ReplicaPlacement: none
    02                          # two tagged fields
      00 02 0026                # 0: ErrorCode 38 (INVALID_REPLICATION_FACTOR)
      01 38 38 {_MESSAGE.encode().hex()}  # 1: ErrorMessage (56 bytes: length + 55)
""")
FETCH_LOG = _hex("""
    00000001 000000000000002a   # ReplicaId 1, BrokerEpoch 42
    0000000000000064 00000003   # FetchOffset 100, LastFetchedEpoch 3
    000001f4 00800000           # MaxWaitMs 500, MaxBytes 8388608
    01 00 04 04 616263          # tagged: ClusterId (tag 0) "abc"
""")
FETCH_LOG_RESPONSE = _hex("""
    00000000 0000 00            # ThrottleTimeMs, ErrorCode, ErrorMessage null
    0000000000000096 0000000000000000  # HighWatermark 150, LogStartOffset 0
    ffffffffffffffff ffffffff   # no snapshot to load
    04 616263                   # Records (compact bytes)
    00
""")
FETCH_SNAPSHOT = _hex("""
    00000001                    # ReplicaId 1
    0000000000000064 00000003   # SnapshotEndOffset 100, SnapshotEpoch 3
    0000000000000000 7fffffff   # Position 0, MaxBytes
    00
""")
FETCH_SNAPSHOT_RESPONSE = _hex("""
    00000000 0000 00            # ThrottleTimeMs, ErrorCode, ErrorMessage null
    0000000000000064 00000003   # SnapshotEndOffset 100, SnapshotEpoch 3
    0000000000000003 0000000000000000  # Size 3, Position 0
    04 616263 00                # Bytes, no tagged fields
""")


# Kafka's APIs: the controller's (kafka-python has no classes for them) and two anchors.
REGISTRATION = make(
    request_class(62, 4),
    broker_id=1,
    cluster_id="c1",
    incarnation_id=U1,
    listeners=[{"name": "PLAINTEXT", "host": "h", "port": 9092, "security_protocol": 0}],
    features=[
        {"name": "metadata.version", "min_supported_version": 1, "max_supported_version": 27}
    ],
    rack="/dc1/r1",
    log_dirs=[U2],
)
METADATA_RESPONSE = make(
    response_class(3, 1),
    brokers=[{"node_id": 1, "host": "h", "port": 9092, "rack": "/dc1/r1"}],
    controller_id=1,
    topics=[
        {
            "error_code": 0,
            "name": "t",
            "is_internal": False,
            "partitions": [
                {
                    "error_code": 0,
                    "partition_index": 0,
                    "leader_id": 1,
                    "replica_nodes": [1, 2],
                    "isr_nodes": [1],
                }
            ],
        }
    ],
)
KAFKA_CASES: list[tuple[str, Any, bytes]] = [
    ("BrokerRegistration-v4-request", REGISTRATION, REGISTRATION_V4),
    (
        "BrokerRegistration-v4-response",
        make(response_class(62, 4), throttle_time=0, error_code=0, broker_epoch=42),
        REGISTRATION_RESPONSE_V4,
    ),
    (
        "BrokerHeartbeat-v1-request",
        make(
            request_class(63, 1),
            broker_id=1,
            broker_epoch=42,
            current_metadata_offset=100,
            want_fence=False,
            want_shut_down=False,
            offline_log_dirs=[U3],
        ),
        HEARTBEAT_V1,
    ),
    (
        "BrokerHeartbeat-v1-response",
        make(
            response_class(63, 1),
            throttle_time=0,
            error_code=0,
            is_caught_up=True,
            is_fenced=False,
            should_shut_down=False,
        ),
        HEARTBEAT_RESPONSE_V1,
    ),
    (
        "AlterPartition-v3-request",
        make(
            request_class(56, 3),
            broker_id=1,
            broker_epoch=42,
            topics=[
                {
                    "topic_id": U2,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "leader_epoch": 3,
                            "new_isr_with_epochs": [
                                {"broker_id": 1, "broker_epoch": 42},
                                {"broker_id": 2, "broker_epoch": 7},
                            ],
                            "leader_recovery_state": 0,
                            "partition_epoch": 5,
                        }
                    ],
                }
            ],
        ),
        ALTER_PARTITION_V3,
    ),
    (
        "AlterPartition-v3-response",
        make(
            response_class(56, 3),
            throttle_time=0,
            error_code=0,
            topics=[
                {
                    "topic_id": U2,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "leader_id": 1,
                            "leader_epoch": 3,
                            "isr": [1, 2],
                            "leader_recovery_state": 0,
                            "partition_epoch": 6,
                        }
                    ],
                }
            ],
        ),
        ALTER_PARTITION_RESPONSE_V3,
    ),
    (
        "AllocateProducerIds-v0-request",
        make(request_class(67, 0), broker_id=1, broker_epoch=42),
        ALLOCATE_PRODUCER_IDS_V0,
    ),
    (
        "AllocateProducerIds-v0-response",
        make(
            response_class(67, 0),
            throttle_time=0,
            error_code=0,
            producer_id_start=2000,
            producer_id_len=1000,
        ),
        ALLOCATE_PRODUCER_IDS_RESPONSE_V0,
    ),
    (
        "Metadata-v12-request",
        make(
            request_class(3, 12),
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
        METADATA_V12,
    ),
    ("Metadata-v1-response", METADATA_RESPONSE, METADATA_RESPONSE_V1),
    (
        "ApiVersions-v3-request",
        make(
            request_class(18, 3),
            client_software_name="kafka-python",
            client_software_version="3.0.12",
        ),
        API_VERSIONS_V3,
    ),
    (
        "ApiVersions-v3-response",
        api_versions_response(
            3,
            Listener.CONTROLLER,
            supported_features=[SupportedFeature("metadata.version", 1, 27)],
            finalized_features=[
                FinalizedFeature("metadata.version", 27),
                FinalizedFeature("eligible.leader.replicas.version", 0),  # off: not listed
            ],
            finalized_features_epoch=7,
        ),
        API_VERSIONS_RESPONSE_V3_CONTROLLER,
    ),
]


OWN_CASES: list[tuple[str, Any, bytes]] = [
    (
        "CreateReplicaPlacement-v0-request",
        CreateReplicaPlacementRequest(num_partitions=3, replication_factor=2, node_id=(1, 2, 3)),
        PLACEMENT,
    ),
    (
        "CreateReplicaPlacement-v0-response",
        CreateReplicaPlacementResponse(
            replica_placement=tuple(
                CreateReplicaPlacementResponseV0.ReplicaPlacement(partition_id=p, replicas=r)
                for p, r in enumerate([(1, 2), (2, 3), (3, 1)])
            )
        ),
        PLACEMENT_RESPONSE,
    ),
    (
        "CreateReplicaPlacement-v0-error",
        CreateReplicaPlacementResponse(replica_placement=(), error_code=38, error_message=_MESSAGE),
        PLACEMENT_ERROR,
    ),
]


CASES = KAFKA_CASES + OWN_CASES


@pytest.mark.parametrize(("name", "message", "golden"), CASES, ids=[c[0] for c in CASES])
def test_golden_bytes(name: str, message: Any, golden: bytes) -> None:
    assert write_body(message) == golden
    assert read_body(type(message), golden) == (message, len(golden))


REQUESTS = [(n, m, g) for n, m, g in CASES if n.endswith("-request")]


@pytest.mark.parametrize(("name", "message", "golden"), REQUESTS, ids=[c[0] for c in REQUESTS])
def test_golden_requests_framed(name: str, message: Any, golden: bytes) -> None:
    """Framed with their header, on the listener that serves them, and answered."""
    cls = type(message)
    api_key, version = int(cls.__api_key__), int(cls.__version__)
    listener = Listener.BROKER if api_key in (3, 1000) else Listener.CONTROLLER
    header_version = 2 if cls.__flexible__ else 1
    outcome = decode_request(
        encode_request_header(api_key, version, 99, "t", header_version) + golden, listener
    )
    assert isinstance(outcome, Request)
    assert outcome.body == message
    for answer in [m for n, m, _ in CASES if n == name.replace("-request", "-response")]:
        framed = encode_response(outcome.header, answer)
        header = "00000063" + ("00" if outcome.api.response_header_version(version) else "")
        assert framed[4:] == bytes.fromhex(header) + write_body(answer)
