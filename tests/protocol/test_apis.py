"""The table of APIs we serve: its exact ranges, what real clients pick from it, and our own
api keys."""

from __future__ import annotations

import pytest
from kafka.protocol.api_key import ApiKey as KafkaPythonApiKey
from kafka.protocol.broker_version_data import (
    BROKER_API_VERSIONS,
    infer_broker_version_from_api_versions,
)
from kio.schema.index import api_key_map

from rackwise.protocol import (
    SUPPORTED,
    ApiKey,
    Listener,
    UnsupportedVersionException,
    apis_for,
    message_class,
    negotiate,
    negotiate_with,
)
from rackwise.protocol.api_versions import api_version_entries
from rackwise.protocol.apis import api_name, constant_name
from tests.protocol.helpers import kafka_python_class

B = frozenset({Listener.BROKER})
C = frozenset({Listener.CONTROLLER})
BC = B | C
EXPECTED = {
    18: ("ApiVersions", 0, 4, BC),
    0: ("Produce", 3, 13, B),
    1: ("Fetch", 4, 18, BC),
    2: ("ListOffsets", 1, 10, B),
    23: ("OffsetForLeaderEpoch", 2, 4, B),
    21: ("DeleteRecords", 0, 2, B),
    22: ("InitProducerId", 0, 5, B),
    10: ("FindCoordinator", 0, 6, B),
    8: ("OffsetCommit", 2, 9, B),
    9: ("OffsetFetch", 1, 9, B),
    11: ("JoinGroup", 0, 9, B),
    12: ("Heartbeat", 0, 4, B),
    13: ("LeaveGroup", 0, 5, B),
    14: ("SyncGroup", 0, 5, B),
    15: ("DescribeGroups", 0, 6, B),
    16: ("ListGroups", 0, 5, B),
    42: ("DeleteGroups", 0, 2, B),
    47: ("OffsetDelete", 0, 0, B),
    68: ("ConsumerGroupHeartbeat", 0, 1, B),
    69: ("ConsumerGroupDescribe", 0, 1, B),
    3: ("Metadata", 0, 13, B),
    60: ("DescribeCluster", 0, 2, BC),
    61: ("DescribeProducers", 0, 0, B),
    75: ("DescribeTopicPartitions", 0, 0, B),
    74: ("ListConfigResources", 0, 1, B),
    19: ("CreateTopics", 2, 7, BC),
    37: ("CreatePartitions", 0, 3, BC),
    20: ("DeleteTopics", 1, 6, BC),
    32: ("DescribeConfigs", 1, 4, BC),
    33: ("AlterConfigs", 0, 2, BC),
    43: ("ElectLeaders", 0, 2, BC),
    44: ("IncrementalAlterConfigs", 0, 1, BC),
    29: ("DescribeAcls", 1, 3, BC),
    30: ("CreateAcls", 1, 3, BC),
    31: ("DeleteAcls", 1, 3, BC),
    34: ("AlterReplicaLogDirs", 1, 2, B),
    35: ("DescribeLogDirs", 1, 4, B),
    45: ("AlterPartitionReassignments", 0, 1, BC),
    46: ("ListPartitionReassignments", 0, 0, BC),
    62: ("BrokerRegistration", 0, 4, C),
    63: ("BrokerHeartbeat", 0, 1, C),
    56: ("AlterPartition", 2, 3, C),
    67: ("AllocateProducerIds", 0, 0, C),
    73: ("AssignReplicasToDirs", 0, 0, C),
    52: ("Vote", 0, 2, C),
    53: ("BeginQuorumEpoch", 0, 1, C),
    54: ("EndQuorumEpoch", 0, 1, C),
    55: ("DescribeQuorum", 0, 2, BC),
    59: ("FetchSnapshot", 0, 1, C),
    1000: ("CreateReplicaPlacement", 0, 0, BC),
    17: ("SaslHandshake", 0, 1, BC),
    36: ("SaslAuthenticate", 0, 2, BC),
    50: ("DescribeUserScramCredentials", 0, 0, BC),
    51: ("AlterUserScramCredentials", 0, 0, BC),
}


def test_the_effective_table() -> None:
    """Kafka 4.1's ranges survive the intersection with kio's classes unchanged."""
    actual = {
        key: (spec.name, spec.min_version, spec.max_version, spec.listeners)
        for key, spec in SUPPORTED.items()
    }
    assert actual == EXPECTED


def test_each_listener_serves_its_apis() -> None:
    assert sorted(apis_for(Listener.BROKER)) == [
        *(
            0,
            1,
            2,
            3,
            8,
            9,
            10,
            11,
            12,
            13,
            14,
            15,
            16,
            17,
            18,
            19,
            20,
            21,
            22,
            23,
            29,
            30,
            31,
            32,
            33,
            34,
            35,
            36,
            37,
            42,
            43,
            44,
            45,
            46,
            47,
            50,
            51,
            55,
            60,
            61,
            68,
            69,
            74,
            75,
            1000,
        )
    ]
    assert sorted(apis_for(Listener.CONTROLLER)) == [
        *(1, 17, 18, 19, 20, 29, 30, 31, 32, 33, 36, 37, 43, 44, 45, 46, 50, 51, 52, 53, 54),
        *(55, 56, 59, 60),
        *(62, 63, 67, 73),
        1000,
    ]


def test_produce_is_advertised_from_0_as_kafka_4_1_does() -> None:
    """KAFKA-18659: librdkafka before 2.11.1 sends compressed batches only to a broker that
    lists Produce v0; Kafka 4.1 lists 0-13 and refuses 0-2. Nothing else differs."""
    advertised = {
        e["api_key"]: (e["min_version"], e["max_version"])
        for e in (api_version_entries(Listener.BROKER))
    }
    assert advertised[ApiKey.PRODUCE] == (0, 13)
    assert not SUPPORTED[ApiKey.PRODUCE].supports(2)
    assert SUPPORTED[ApiKey.PRODUCE].request_class(3).__name__ == "ProduceRequest"
    others = {k: v for k, v in advertised.items() if k != ApiKey.PRODUCE}
    assert others == {
        k: (s.min_version, s.max_version)
        for k, s in apis_for(Listener.BROKER).items()
        if k != ApiKey.PRODUCE
    }
    controller = api_version_entries(Listener.CONTROLLER)
    assert [(e["min_version"], e["max_version"]) for e in controller] == [
        (s.min_version, s.max_version)
        for s in sorted(apis_for(Listener.CONTROLLER).values(), key=lambda s: s.api_key)
    ]


def test_kafka_4_1_advertises_what_kafka_python_knows_of_it() -> None:
    """kafka-python's table of what a 4.1 broker lists (from a real one), for every Kafka API
    we serve to clients."""
    kafka_4_1 = BROKER_API_VERSIONS[(4, 1)]
    for entry in api_version_entries(Listener.BROKER):
        if entry["api_key"] < 1000:
            expected = kafka_4_1[entry["api_key"]]
            assert (entry["min_version"], entry["max_version"]) == expected, entry


def test_our_api_keys_are_not_kafkas() -> None:
    """KIP-879's 68 is ConsumerGroupHeartbeat now; ours sit far above every key Kafka uses."""
    kafka_keys = set(api_key_map) | {int(k) for k in KafkaPythonApiKey}
    assert 68 in kafka_keys
    assert api_name(68) == "ConsumerGroupHeartbeat"
    assert max(kafka_keys) < 1000
    assert ApiKey.CREATE_REPLICA_PLACEMENT not in kafka_keys


def test_kafka_python_sees_a_4_1_broker() -> None:
    """Produce v13 is kafka-python's mark of 4.1; what it gates on its guess (create_topics
    with -1 partitions from 2.4, throttling from 2.0, idempotence and record batch v2 from
    0.11) holds as it did at 3.3, the guess without the data path (DescribeAcls v3)."""
    advertised = {
        e["api_key"]: (e["min_version"], e["max_version"])
        for e in api_version_entries(Listener.BROKER)
    }
    assert infer_broker_version_from_api_versions(advertised) == (4, 1)
    without_data = {k: v for k, v in advertised.items() if k not in (0, 1, 2, 21, 22, 23)}
    assert infer_broker_version_from_api_versions(without_data) == (3, 3)


# (api, the client's own range) -> the version it ends up sending us.
LIBRDKAFKA = {  # librdkafka 2.15, rdkafka_request.c / rdkafka_admin.c / rdkafka_msgset_writer.c
    ApiKey.API_VERSIONS: ((3, 3), 3),
    ApiKey.PRODUCE: ((3, 10), 10),  # from 3: message format v2 (MSGVER2) is on
    ApiKey.FETCH: ((4, 16), 16),
    ApiKey.LIST_OFFSETS: ((0, 7), 7),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ((2, 2), 2),
    ApiKey.DELETE_RECORDS: ((0, 2), 2),
    ApiKey.INIT_PRODUCER_ID: ((0, 4), 4),
    ApiKey.METADATA: ((0, 13), 13),
    ApiKey.CREATE_TOPICS: ((0, 4), 4),
    ApiKey.DELETE_TOPICS: ((0, 4), 4),
    ApiKey.CREATE_PARTITIONS: ((0, 2), 2),
    ApiKey.DESCRIBE_CONFIGS: ((0, 1), 1),
}
AIOKAFKA = {  # aiokafka 0.14, the request classes it defines
    ApiKey.API_VERSIONS: ((0, 0), 0),
    ApiKey.PRODUCE: ((0, 7), 7),
    ApiKey.FETCH: ((1, 11), 11),
    ApiKey.LIST_OFFSETS: ((0, 3), 3),
    ApiKey.DELETE_RECORDS: ((0, 2), 2),
    ApiKey.INIT_PRODUCER_ID: ((0, 0), 0),
    ApiKey.METADATA: ((0, 5), 5),
    ApiKey.CREATE_TOPICS: ((0, 3), 3),
    ApiKey.DELETE_TOPICS: ((0, 3), 3),
    ApiKey.CREATE_PARTITIONS: ((0, 1), 1),
    ApiKey.DESCRIBE_CONFIGS: ((0, 2), 2),
    ApiKey.DESCRIBE_ACLS: ((0, 2), 2),
}


@pytest.mark.parametrize("client", [LIBRDKAFKA, AIOKAFKA], ids=["librdkafka", "aiokafka"])
def test_real_clients_find_a_version(client: dict[ApiKey, tuple[tuple[int, int], int]]) -> None:
    for api_key, ((low, high), expected) in client.items():
        assert negotiate(api_key, low, high) == expected, api_key.name


def test_kafka_python_finds_its_highest_version_of_every_client_api() -> None:
    for key, spec in apis_for(Listener.BROKER).items():
        theirs = kafka_python_class(spec.name, "request")
        if key >= 1000 or key in (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE):
            assert theirs is None  # rackwise's own, and the KIP-848 APIs kafka-python lacks
            continue
        assert negotiate(key, theirs.min_version, theirs.max_version) == spec.max_version


def test_no_common_version_is_kafkas_unsupported_version() -> None:
    with pytest.raises(UnsupportedVersionException) as caught:
        negotiate(ApiKey.CREATE_TOPICS, 0, 1)
    assert str(caught.value) == (
        "The node does not support CREATE_TOPICS with version in range [2,7]. "
        "The supported range is [0,1]."
    )
    assert caught.value.error_code == 35


def test_negotiating_with_a_peers_api_versions() -> None:
    peer = {62: (0, 3), 63: (0, 1)}
    assert negotiate_with(ApiKey.BROKER_REGISTRATION, peer) == 3
    with pytest.raises(
        UnsupportedVersionException, match=r"does not support CREATE_REPLICA_PLACEMENT$"
    ):
        negotiate_with(ApiKey.CREATE_REPLICA_PLACEMENT, peer)
    with pytest.raises(ValueError, match="BUG: api key 57 is not one rackwise speaks"):
        negotiate(57, 0, 1)  # UpdateFeatures


def test_classes_outside_the_range_are_refused() -> None:
    spec = SUPPORTED[ApiKey.CREATE_TOPICS]
    assert spec.request_class(7).__name__ == "CreateTopicsRequest"
    with pytest.raises(UnsupportedVersionException, match=r"CreateTopics version 1 .* \[2,7\]"):
        spec.request_class(1)
    with pytest.raises(
        UnsupportedVersionException, match="no request class for Metadata version 99"
    ):
        message_class(3, 99, "request")
    with pytest.raises(ValueError, match="BUG: a message is a request or a response"):
        message_class(3, 1, "header")


def test_names() -> None:
    assert constant_name(ApiKey.CREATE_REPLICA_PLACEMENT) == "CREATE_REPLICA_PLACEMENT"
    assert constant_name(ApiKey.API_VERSIONS) == "API_VERSIONS"
    assert api_name(4242) == "Unknown(4242)"
    assert SUPPORTED[ApiKey.METADATA].first_flexible_version == 9
    assert SUPPORTED[ApiKey.CREATE_PARTITIONS].first_flexible_version == 2
