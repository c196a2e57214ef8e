"""The plain Fetch request reader: field for field what kio reads from the same bytes, for
every version the broker listener serves; malformed bytes are refused as kio refuses them,
with a ValueError and nothing else; the broker listener's decoding uses it and the
controller listener's does not."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.protocol import ApiKey, encode_request, request_class
from rackwise.protocol.apis import Listener
from rackwise.protocol.bodies import BODY_DECODE_ERRORS, read_body, write_body
from rackwise.protocol.fetch_request import FetchRequestValues
from rackwise.protocol.fetch_request_reader import (
    FIRST_VERSION,
    LAST_VERSION,
    FetchRequestRead,
    read_fetch_request,
)
from rackwise.protocol.header import parse_request_header
from rackwise.protocol.outcomes import Request
from rackwise.protocol.server import decode_request
from tests.protocol.helpers import future_class, messages_of
from tests.protocol.test_fetch_response import plain

VERSIONS = list(range(FIRST_VERSION, LAST_VERSION + 1))
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


def as_kio_reads(values: FetchRequestRead, fields: set[str]) -> dict[str, Any]:
    """The plain reader's values in the shape of ``plain(kio's message)`` of that version
    (whose fields are ``fields`` at the top level)."""
    out = values._asdict()
    version = out.pop("version")
    out["max_wait"] = out.pop("max_wait_ms")
    replica_id, replica_epoch = out.pop("replica_id"), out.pop("replica_epoch")
    if version >= 15:
        out["replica_state"] = {"replica_id": replica_id, "replica_epoch": replica_epoch}
    else:
        out["replica_id"] = replica_id
    key = "topic_id" if version >= 13 else "topic"

    def topic(t: Any, inner: Any) -> dict[str, Any]:
        return {key: getattr(t, key), "partitions": inner(t.partitions)}

    def partition(p: Any) -> dict[str, Any]:
        entry = p._asdict()
        if version < 18:
            entry.pop("high_watermark")
        if version < 17:
            entry.pop("replica_directory_id")
        if version < 12:
            entry.pop("last_fetched_epoch")
        if version < 9:
            entry.pop("current_leader_epoch")
        if version < 5:
            entry.pop("log_start_offset")
        return entry

    out["topics"] = [topic(t, lambda ps: [partition(p) for p in ps]) for t in values.topics]
    out["forgotten_topics_data"] = [topic(t, list) for t in values.forgotten_topics_data]
    return {k: v for k, v in out.items() if k in fields}


def both_read(body: bytes, version: int) -> tuple[Any, Any]:
    cls = request_class(ApiKey.FETCH, version)
    try:
        kio: Any = plain(read_body(cls, body)[0])
    except BODY_DECODE_ERRORS:
        kio = "refused"
    try:
        ours: Any = as_kio_reads(read_fetch_request(body, 0, version), set(field_names(cls)))
    except ValueError:
        ours = "refused"
    return kio, ours


def field_names(cls: type) -> list[str]:
    return list(cls.__dataclass_fields__)  # type: ignore[attr-defined]


@SETTINGS
@given(version=st.sampled_from(VERSIONS), data=st.data())
def test_what_kio_reads_from_the_same_bytes_and_from_any_cut_or_changed_byte(
    version: int, data: st.DataObject
) -> None:
    cls = request_class(ApiKey.FETCH, version)
    message = data.draw(messages_of(cls))
    body = write_body(message)
    values = read_fetch_request(body, 0, version)
    assert values.version == version
    assert as_kio_reads(values, set(field_names(cls))) == plain(message)
    cut = data.draw(st.integers(0, len(body) - 1))
    kio, ours = both_read(body[:cut], version)
    assert ours == kio
    at = data.draw(st.integers(0, len(body) - 1))
    changed = body[:at] + bytes([data.draw(st.integers(0, 255))]) + body[at + 1 :]
    kio, ours = both_read(changed, version)
    assert ours == kio


@SETTINGS
@given(body=st.binary(max_size=300), version=st.sampled_from(VERSIONS))
def test_any_bytes_are_read_as_kio_reads_them_or_refused_with_a_value_error(
    body: bytes, version: int
) -> None:
    kio, ours = both_read(body, version)
    assert ours == kio


@SETTINGS
@given(version=st.sampled_from([v for v in VERSIONS if v >= 12]), data=st.data())
def test_tagged_fields_of_a_later_version_are_skipped_at_every_depth(
    version: int, data: st.DataObject
) -> None:
    cls = request_class(ApiKey.FETCH, version)
    message = data.draw(messages_of(future_class(cls)))
    values = read_fetch_request(write_body(message), 0, version)

    def without_future(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: without_future(v) for k, v in value.items() if k != "future"}
        if isinstance(value, list):
            return [without_future(v) for v in value]
        return value

    assert as_kio_reads(values, set(field_names(cls))) == without_future(plain(message))


FOLLOWER = {
    "replica_id": 2,
    "replica_state": {"replica_id": 2, "replica_epoch": 7},
    "max_wait": 500,
    "min_bytes": 1,
    "max_bytes": 10_485_760,
    "isolation_level": 0,
    "session_id": 0,
    "session_epoch": -1,
    "rack_id": "/dc1/r1",
    "topics": [
        {
            "topic": "orders",
            "topic_id": uuid.UUID(int=5),
            "partitions": [
                {
                    "partition": p,
                    "current_leader_epoch": 3,
                    "fetch_offset": 100 + p,
                    "last_fetched_epoch": 3,
                    "log_start_offset": 0,
                    "partition_max_bytes": 1_048_576,
                }
                for p in range(3)
            ],
        }
    ],
    "forgotten_topics_data": [],
}


@pytest.mark.parametrize("version", [4, 11, 12, 13, 15, 17, 18])
def test_the_broker_listener_decodes_fetch_with_it(version: int) -> None:
    wire = encode_request(FetchRequestValues(version, FOLLOWER), 11, "follower")[4:]
    outcome = decode_request(wire, Listener.BROKER)
    assert isinstance(outcome, Request)
    body = outcome.body
    assert isinstance(body, FetchRequestRead)
    assert (body.version, body.replica_id, body.max_wait_ms, body.min_bytes) == (
        version,
        2,
        500,
        1,
    )
    assert body.replica_epoch == (7 if version >= 15 else -1)
    assert body.rack_id == ("/dc1/r1" if version >= 11 else "")
    (topic,) = body.topics
    assert (topic.topic, topic.topic_id) == (
        (None, uuid.UUID(int=5)) if version >= 13 else ("orders", None)
    )
    assert [(p.partition, p.fetch_offset, p.partition_max_bytes) for p in topic.partitions] == [
        (0, 100, 1_048_576),
        (1, 101, 1_048_576),
        (2, 102, 1_048_576),
    ]
    assert {p.current_leader_epoch for p in topic.partitions} == {3 if version >= 9 else -1}


def test_the_controller_listener_keeps_kios_message_for_the_quorum() -> None:
    wire = encode_request(FetchRequestValues(13, FOLLOWER), 11, "voter")[4:]
    outcome = decode_request(wire, Listener.CONTROLLER)
    assert isinstance(outcome, Request)
    assert isinstance(outcome.body, request_class(ApiKey.FETCH, 13))


def test_a_tagged_replica_state_longer_than_its_size_is_refused_as_kio_refuses_it() -> None:
    wire = encode_request(FetchRequestValues(15, FOLLOWER), 11, "follower")[4:]
    body = wire[parse_request_header(wire, 2).size :]
    # The body ends with its tagged fields: one field, tag 1, 13 bytes (replica_state); claim
    # 11 bytes and drop two, so that its value overruns the size.
    tail = bytes([1, 1, 13])
    at = body.rindex(tail)
    wrong = body[:at] + bytes([1, 1, 11]) + body[at + 3 : -2]
    kio, ours = both_read(wrong, 15)
    assert kio == ours == "refused"


def test_a_version_it_does_not_read_is_a_bug_not_a_malformed_request() -> None:
    with pytest.raises(ValueError, match="BUG"):
        read_fetch_request(b"", 0, 3)
