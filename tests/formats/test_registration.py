"""KIP-36 broker registrations, against documents Kafka brokers wrote and Kafka's own tests."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rackwise.common import InvalidFormatException
from rackwise.formats import (
    BrokerRegistration,
    format_broker_registration,
    parse_broker_registration,
)

# As 0.9 (version 2) and 0.10 (version 3) brokers left them in ZooKeeper (``get
# /brokers/ids/<id>``): compact, members in the brokers' hash-map order.
WRITTEN_V2 = (
    '{"jmx_port":-1,"timestamp":"1459199184439","endpoints":["PLAINTEXT://Rlyeh:9092"],'
    '"host":"Rlyeh","version":2,"port":9092}'
)
WRITTEN_V3 = (
    '{"jmx_port":-1,"timestamp":"1484245580054","endpoints":["PLAINTEXT://192.168.66.84:32773"],'
    '"host":"192.168.66.84","version":3,"port":32773}'
)
# The documents of Kafka's BrokerEndPointTest.
KAFKA_V1 = (
    '{"jmx_port":-1,"timestamp":"1420485325400","host":"172.16.8.243","version":1,"port":9091}'
)
KAFKA_V3 = """{
  "version":3,
  "host":"localhost",
  "port":9092,
  "jmx_port":9999,
  "timestamp":"2233345666",
  "endpoints":["PLAINTEXT://host1:9092", "SSL://host1:9093"],
  "rack":"dc1"
}"""
KAFKA_V4_NULL_RACK = """{
  "version":4, "host":"localhost", "port":9092, "jmx_port":9999, "timestamp":"2233345666",
  "endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],
  "listener_security_protocol_map":{"CLIENT":"SSL", "REPLICATION":"PLAINTEXT"},
  "rack":null
}"""
KAFKA_V5 = """{
  "version":5, "host":"localhost", "port":9092, "jmx_port":9999, "timestamp":"2233345666",
  "endpoints":["CLIENT://host1:9092", "REPLICATION://host1:9093"],
  "listener_security_protocol_map":{"CLIENT":"SSL", "REPLICATION":"PLAINTEXT"},
  "rack":"dc1",
  "features": {"feature1": {"min_version": 1, "max_version": 2}}
}"""
KAFKA_FUTURE = """{
  "foo":"bar", "version":100, "host":"localhost", "port":9092, "jmx_port":9999,
  "timestamp":"1416974968782", "endpoints":["SSL://localhost:9093"]
}"""


def test_v3_as_written_by_a_broker_round_trips_byte_for_byte() -> None:
    registration = parse_broker_registration(WRITTEN_V3)
    assert registration == BrokerRegistration(
        host="192.168.66.84",
        port=32773,
        jmx_port=-1,
        timestamp="1484245580054",
        endpoints=("PLAINTEXT://192.168.66.84:32773",),
    )
    assert format_broker_registration(registration) == WRITTEN_V3


def test_v2_is_read_and_written_back_as_v3() -> None:
    written = format_broker_registration(parse_broker_registration(WRITTEN_V2))
    assert written == WRITTEN_V2.replace('"version":2', '"version":3')


def test_v1_derives_its_plaintext_endpoint() -> None:
    registration = parse_broker_registration(KAFKA_V1)
    assert registration.endpoints == ("PLAINTEXT://172.16.8.243:9091",)
    assert registration.rack is None
    ipv6 = KAFKA_V1.replace('"172.16.8.243"', '"fe80::1"')
    assert parse_broker_registration(ipv6).endpoints == ("PLAINTEXT://[fe80::1]:9091",)


def test_rack_is_written_last_and_only_when_set() -> None:
    registration = parse_broker_registration(KAFKA_V3)
    assert registration.rack == "dc1"
    assert registration.endpoints == ("PLAINTEXT://host1:9092", "SSL://host1:9093")
    assert format_broker_registration(registration) == (
        '{"jmx_port":9999,"timestamp":"2233345666",'
        '"endpoints":["PLAINTEXT://host1:9092","SSL://host1:9093"],'
        '"host":"localhost","version":3,"port":9092,"rack":"dc1"}'
    )


def _scala_211_hash_map_order(keys: list[str]) -> list[str]:
    """The iteration order of a Scala 2.10/2.11 immutable HashMap of these (String) keys, which
    is what a 0.10 broker's ``Json.encode`` walked: by the low 5 bits of the improved hash, then
    the next 5, and so on."""

    def improved(key: str) -> int:
        h = 0
        units = key.encode("utf-16-be")
        for i in range(0, len(units), 2):
            h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
        h = (h + (~(h << 9) & 0xFFFFFFFF)) & 0xFFFFFFFF
        h ^= h >> 14
        h = (h + (h << 4)) & 0xFFFFFFFF
        return h ^ (h >> 10)

    return sorted(keys, key=lambda k: [(improved(k) >> shift) & 31 for shift in range(0, 32, 5)])


def test_member_order_is_the_0_10_brokers_hash_map_order() -> None:
    written = json.loads(format_broker_registration(parse_broker_registration(KAFKA_V3)))
    assert list(written) == _scala_211_hash_map_order(list(written))


@pytest.mark.parametrize(
    ("text", "endpoints", "rack"),
    [
        (KAFKA_V4_NULL_RACK, ("CLIENT://host1:9092", "REPLICATION://host1:9093"), None),
        (KAFKA_V5, ("CLIENT://host1:9092", "REPLICATION://host1:9093"), "dc1"),
        (KAFKA_FUTURE, ("SSL://localhost:9093",), None),
    ],
)
def test_later_versions_are_read_as_kafka_reads_them(
    text: str, endpoints: tuple[str, ...], rack: str | None
) -> None:
    registration = parse_broker_registration(text)
    assert registration.endpoints == endpoints
    assert registration.rack == rack


def test_no_plaintext_listener_means_null_host() -> None:
    text = (
        '{"jmx_port":-1,"timestamp":"1","endpoints":["SSL://h:9093"],"host":null,'
        '"version":3,"port":-1,"rack":"r"}'
    )
    registration = parse_broker_registration(text)
    assert registration.host is None
    assert format_broker_registration(registration) == text


def test_custom_listeners_cannot_be_written_as_v3() -> None:
    registration = parse_broker_registration(KAFKA_V5)
    with pytest.raises(InvalidFormatException) as caught:
        format_broker_registration(registration)
    assert str(caught.value) == (
        'broker registration JSON: endpoints[0]: "CLIENT://host1:9092" names listener CLIENT, '
        "which is not a security protocol, and version 3 has no listener map"
    )


_DROP = object()


def _doc(**changes: object) -> str:
    document: dict[str, object] = json.loads(KAFKA_V3)
    for key, value in changes.items():
        if value is _DROP:
            del document[key]
        else:
            document[key] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "{'version':3}",
            "broker registration JSON: not valid JSON: Expecting property name "
            "enclosed in double quotes (line 1, column 2)",
        ),
        ("[]", "broker registration JSON: expected a JSON object, got []"),
        (_doc(version=_DROP), 'broker registration JSON: missing required field "version"'),
        (
            _doc(version=0),
            "broker registration JSON: version: unsupported version 0; versions start at 1",
        ),
        (_doc(version="3"), 'broker registration JSON: version: expected an integer, got "3"'),
        (_doc(jmx_port=_DROP), 'broker registration JSON: missing required field "jmx_port"'),
        (
            _doc(jmx_port=False),
            "broker registration JSON: jmx_port: expected an integer, got false",
        ),
        (_doc(host=1), "broker registration JSON: host: expected a string or null, got 1"),
        (_doc(port=99.5), "broker registration JSON: port: expected an integer, got 99.5"),
        (
            _doc(timestamp=2233345666),
            "broker registration JSON: timestamp: expected a string, got 2233345666",
        ),
        (_doc(endpoints=_DROP), 'broker registration JSON: missing required field "endpoints"'),
        (
            _doc(endpoints="PLAINTEXT://h:1"),
            'broker registration JSON: endpoints: expected a JSON array, got "PLAINTEXT://h:1"',
        ),
        (
            _doc(endpoints=["PLAINTEXT://h:1", 7]),
            "broker registration JSON: endpoints[1]: expected a string, got 7",
        ),
        (
            _doc(endpoints=["host1:9092"]),
            'broker registration JSON: endpoints[0]: "host1:9092" is '
            "not of the form LISTENER://host:port",
        ),
        (
            _doc(endpoints=["SSL://h:99999999999"]),
            "broker registration JSON: endpoints[0]: "
            '"SSL://h:99999999999" has port 99999999999, outside the 32-bit range',
        ),
        (
            _doc(endpoints=["CLIENT://h:1"]),
            'broker registration JSON: endpoints[0]: "CLIENT://h:1" '
            "names listener CLIENT, which is not a security protocol, and there is no "
            "listener_security_protocol_map",
        ),
        (
            _doc(endpoints=["SSL://h:1"], listener_security_protocol_map={"CLIENT": "SSL"}),
            'broker registration JSON: endpoints[0]: "SSL://h:1" names listener SSL, which is '
            "missing from listener_security_protocol_map",
        ),
        (
            _doc(listener_security_protocol_map={"CLIENT": "TLS"}),
            "broker registration JSON: listener_security_protocol_map.CLIENT: unknown security "
            'protocol "TLS"',
        ),
        (_doc(rack=3), "broker registration JSON: rack: expected a string or null, got 3"),
        (
            KAFKA_V1.replace('"172.16.8.243"', "null"),
            "broker registration JSON: host: a version 1 registration needs a host, got null",
        ),
    ],
)
def test_errors_name_the_field_and_value(text: str, message: str) -> None:
    with pytest.raises(InvalidFormatException) as caught:
        parse_broker_registration(text)
    assert str(caught.value) == message


_hosts = st.from_regex(r"[a-z0-9.\-]{1,12}", fullmatch=True)
_endpoint = st.builds(
    "{}://{}:{}".format,
    st.sampled_from(["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "ssl"]),
    _hosts | st.just("[::1]") | st.just(""),
    st.integers(-1, 65535),
)
_registrations = st.builds(
    BrokerRegistration,
    host=st.none() | _hosts,
    port=st.integers(-(2**31), 2**31 - 1),
    jmx_port=st.integers(-1, 65535),
    timestamp=st.integers(0, 2**45).map(str),
    endpoints=st.lists(_endpoint, max_size=4).map(tuple),
    rack=st.none() | st.text(max_size=10),
)


@given(_registrations)
def test_write_then_read_gives_the_same_value(registration: BrokerRegistration) -> None:
    assert parse_broker_registration(format_broker_registration(registration)) == registration


@given(_registrations)
def test_read_then_write_gives_the_same_bytes(registration: BrokerRegistration) -> None:
    canonical = format_broker_registration(registration)
    assert format_broker_registration(parse_broker_registration(canonical)) == canonical
