"""The table of APIs we serve: its exact ranges, what real clients pick from it, and our own
api keys."""

from __future__ import annotations

import pytest
from kafka.protocol.api_key import ApiKey as KafkaPythonApiKey
from kafka.protocol.broker_version_data import infer_broker_version_from_api_versions
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
from rackwise.protocol.apis import api_name, constant_name
from tests.protocol.helpers import kafka_python_class

B = frozenset({Listener.BROKER})
C = frozenset({Listener.CONTROLLER})
BC = B | C
EXPECTED = {
    18: ("ApiVersions", 0, 4, BC),
    3: ("Metadata", 0, 13, B),
    60: ("DescribeCluster", 0, 2, B),
    19: ("CreateTopics", 2, 7, BC),
    37: ("CreatePartitions", 0, 3, BC),
    20: ("DeleteTopics", 1, 6, BC),
    32: ("DescribeConfigs", 1, 4, BC),
    44: ("IncrementalAlterConfigs", 0, 1, C),
    29: ("DescribeAcls", 1, 3, B),
    62: ("BrokerRegistration", 0, 4, C),
    63: ("BrokerHeartbeat", 0, 1, C),
    56: ("AlterPartition", 2, 3, C),
    1000: ("CreateReplicaPlacement", 0, 0, BC),
    1001: ("FetchMetadataLog", 0, 0, C),
    1002: ("FetchMetadataSnapshot", 0, 0, C),
}


def test_the_effective_table() -> None:
    """Kafka 4.1's ranges survive the intersection with kio's classes unchanged."""
    actual = {
        key: (spec.name, spec.min_version, spec.max_version, spec.listeners)
        for key, spec in SUPPORTED.items()
    }
    assert actual == EXPECTED


def test_each_listener_serves_its_apis() -> None:
    assert sorted(apis_for(Listener.BROKER)) == [3, 18, 19, 20, 29, 32, 37, 60, 1000]
    assert sorted(apis_for(Listener.CONTROLLER)) == [
        18,
        19,
        20,
        32,
        37,
        44,
        56,
        62,
        63,
        1000,
        1001,
        1002,
    ]


def test_our_api_keys_are_not_kafkas() -> None:
    """KIP-879's 68 is ConsumerGroupHeartbeat now; ours sit far above every key Kafka uses."""
    kafka_keys = set(api_key_map) | {int(k) for k in KafkaPythonApiKey}
    assert 68 in kafka_keys
    assert api_name(68) == "ConsumerGroupHeartbeat"
    assert max(kafka_keys) < 1000
    ours = {ApiKey.CREATE_REPLICA_PLACEMENT, ApiKey.FETCH_METADATA_LOG}
    assert not ours & kafka_keys
    assert ApiKey.FETCH_METADATA_SNAPSHOT not in kafka_keys


def test_kafka_python_sees_a_3_3_broker() -> None:
    """kafka-python gates create_topics(-1 partitions) on 2.4+; DescribeAcls is why it sees
    3.3: without it, the best it could infer from our table is 1.0 (Metadata v5)."""
    advertised = {
        key: (spec.min_version, spec.max_version) for key, spec in apis_for(Listener.BROKER).items()
    }
    assert infer_broker_version_from_api_versions(advertised) == (3, 3)
    without_acls = {k: v for k, v in advertised.items() if k != ApiKey.DESCRIBE_ACLS}
    assert infer_broker_version_from_api_versions(without_acls) == (1, 0)


# (api, the client's own range) -> the version it ends up sending us.
LIBRDKAFKA = {  # librdkafka 2.15, rdkafka_request.c / rdkafka_admin.c
    ApiKey.API_VERSIONS: ((3, 3), 3),
    ApiKey.METADATA: ((0, 13), 13),
    ApiKey.CREATE_TOPICS: ((0, 4), 4),
    ApiKey.DELETE_TOPICS: ((0, 4), 4),
    ApiKey.CREATE_PARTITIONS: ((0, 2), 2),
    ApiKey.DESCRIBE_CONFIGS: ((0, 1), 1),
}
AIOKAFKA = {  # aiokafka 0.14, the request classes it defines
    ApiKey.API_VERSIONS: ((0, 0), 0),
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
        if key >= 1000:
            assert theirs is None
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
    with pytest.raises(UnsupportedVersionException, match=r"does not support FETCH_METADATA_LOG$"):
        negotiate_with(ApiKey.FETCH_METADATA_LOG, peer)
    with pytest.raises(ValueError, match="BUG: api key 1 is not one rackwise speaks"):
        negotiate(1, 0, 17)


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
