"""The plain Produce request reader: field for field what kio reads from the same bytes, for
every version the broker takes; malformed bytes are refused as kio refuses them, with a
ValueError and nothing else; and the server's decoding uses it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.protocol import ApiKey, encode_request, make, request_class
from rackwise.protocol.apis import Listener
from rackwise.protocol.bodies import BODY_DECODE_ERRORS, read_body, write_body
from rackwise.protocol.outcomes import Close, Request
from rackwise.protocol.produce_request_reader import (
    FIRST_VERSION,
    LAST_VERSION,
    ProduceRequestValues,
    read_produce_request,
)
from rackwise.protocol.server import decode_request
from tests.protocol.helpers import future_class, messages_of
from tests.protocol.test_fetch_response import plain

VERSIONS = list(range(FIRST_VERSION, LAST_VERSION + 1))
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


def as_kio_reads(values: ProduceRequestValues) -> dict[str, Any]:
    """The plain reader's values in the shape of ``plain(kio's message)``."""
    out: dict[str, Any] = {
        "transactional_id": values.transactional_id,
        "acks": values.acks,
        "timeout": values.timeout_ms,
        "topic_data": [],
    }
    for topic in values.topic_data:
        entry: dict[str, Any] = (
            {"topic_id": topic.topic_id} if values.version >= 13 else {"name": topic.name}
        )
        entry["partition_data"] = [
            {"index": p.partition_index, "records": None if p.records is None else bytes(p.records)}
            for p in topic.partition_data
        ]
        out["topic_data"].append(entry)
    return out


def kio_values(message: Any) -> dict[str, Any]:
    out: dict[str, Any] = plain(message)
    for topic in out["topic_data"]:
        for p in topic["partition_data"]:
            p["records"] = None if p["records"] is None else bytes(p["records"])
    return out


def both_read(body: bytes, version: int) -> tuple[Any, Any]:
    """(kio's reading, the plain reader's), each a dict of values or the exception type's
    family ("refused")."""
    try:
        kio: Any = kio_values(read_body(request_class(ApiKey.PRODUCE, version), body)[0])
    except BODY_DECODE_ERRORS:
        kio = "refused"
    try:
        ours: Any = as_kio_reads(read_produce_request(body, 0, version))
    except ValueError:
        ours = "refused"
    return kio, ours


@SETTINGS
@given(version=st.sampled_from(VERSIONS), data=st.data())
def test_what_kio_reads_from_the_same_bytes_and_from_any_cut_or_changed_byte(
    version: int, data: st.DataObject
) -> None:
    message = data.draw(messages_of(request_class(ApiKey.PRODUCE, version)))
    body = write_body(message)
    values = read_produce_request(body, 0, version)
    assert values.version == version
    assert as_kio_reads(values) == kio_values(message)
    cut = data.draw(st.integers(0, len(body) - 1))
    kio, ours = both_read(body[:cut], version)
    assert ours == kio
    if body:
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
@given(version=st.sampled_from([v for v in VERSIONS if v >= 9]), data=st.data())
def test_tagged_fields_of_a_later_version_are_skipped_at_every_depth(
    version: int, data: st.DataObject
) -> None:
    future = future_class(request_class(ApiKey.PRODUCE, version))
    message = data.draw(messages_of(future))
    values = read_produce_request(write_body(message), 0, version)
    expected = kio_values(message)
    expected.pop("future")
    for topic in expected["topic_data"]:
        topic.pop("future")
        for p in topic["partition_data"]:
            p.pop("future")
    assert as_kio_reads(values) == expected


def request_frame(version: int, records: bytes | None, topic_id: uuid.UUID | None = None) -> bytes:
    topic: dict[str, Any] = {"partition_data": [{"index": 3, "records": records}]}
    if version >= 13:
        topic["topic_id"] = topic_id
    else:
        topic["name"] = "orders"
    body = make(
        request_class(ApiKey.PRODUCE, version),
        {"transactional_id": None, "acks": -1, "timeout": 1500, "topic_data": [topic]},
    )
    return encode_request(body, 11, "test")[4:]  # as a connection hands it on: no size prefix


@pytest.mark.parametrize("version", [3, 8, 9, 12, 13])
def test_the_server_decodes_produce_with_it_and_records_are_views_of_the_frame(
    version: int,
) -> None:
    records = bytes(range(200))
    topic_id = uuid.UUID(int=5)
    wire = bytearray(request_frame(version, records, topic_id))
    outcome = decode_request(memoryview(wire).toreadonly(), Listener.BROKER)
    assert isinstance(outcome, Request)
    body = outcome.body
    assert isinstance(body, ProduceRequestValues)
    assert (body.version, body.acks, body.timeout_ms, body.transactional_id) == (
        version,
        -1,
        1500,
        None,
    )
    (topic,) = body.topic_data
    assert (topic.name, topic.topic_id) == ((None, topic_id) if version >= 13 else ("orders", None))
    (partition,) = topic.partition_data
    assert partition.partition_index == 3
    assert isinstance(partition.records, memoryview) and partition.records.readonly
    assert bytes(partition.records) == records
    at = wire.index(records)
    wire[at] = 0xFF  # a view of the frame, not a copy
    assert partition.records[0] == 0xFF


def test_null_records_and_a_zero_topic_id_read_as_none() -> None:
    outcome = decode_request(request_frame(13, None, uuid.UUID(int=0)), Listener.BROKER)
    assert isinstance(outcome, Request)
    (topic,) = outcome.body.topic_data
    assert topic.topic_id is None and topic.partition_data[0].records is None


def test_a_produce_request_cut_short_closes_the_connection_naming_the_api() -> None:
    wire = request_frame(9, bytes(100))
    outcome = decode_request(wire[:-30], Listener.BROKER)
    assert isinstance(outcome, Close)
    assert outcome.reason.startswith("Error getting request for apiKey: PRODUCE, apiVersion: 9: ")
    assert outcome.correlation_id == 11


def test_a_version_it_does_not_read_is_a_bug_not_a_malformed_request() -> None:
    with pytest.raises(ValueError, match="BUG"):
        read_produce_request(b"", 0, 14)
