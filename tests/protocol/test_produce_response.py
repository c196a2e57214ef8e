"""The Produce response writer: byte for byte kio's output for every version served, from
messages and from plain values."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.protocol import (
    SUPPORTED,
    ApiKey,
    MessageEncodeError,
    ProduceResponseValues,
    RequestHeader,
    encode_response,
    make,
    response_class,
)
from rackwise.protocol.bodies import write_body
from rackwise.protocol.framing import frame
from rackwise.protocol.header import encode_response_header
from rackwise.protocol.produce_response import write_produce_response
from rackwise.protocol.server import encode_response_buffers
from tests.protocol.helpers import messages_of
from tests.protocol.test_fetch_response import plain

VERSIONS = list(SUPPORTED[ApiKey.PRODUCE].versions)
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def header(version: int, correlation_id: int = 7) -> RequestHeader:
    return RequestHeader(ApiKey.PRODUCE, version, correlation_id, "c", 2 if version >= 9 else 1, 0)


def plain_with_millis(value: Any) -> Any:
    """:func:`plain`, with timestamps as ms since the epoch (None as -1), as handlers give them."""
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(value, dict):
        return {
            k: -1 if k == "log_append_time" and v is None else plain_with_millis(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [plain_with_millis(v) for v in value]
    return value


def kio_frame(version: int, message: Any, correlation_id: int = 7) -> bytes:
    spec = SUPPORTED[ApiKey.PRODUCE]
    head = encode_response_header(correlation_id, spec.response_header_version(version))
    return frame(head + write_body(message))


def values(version: int, *partitions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    topic = {"name": "t", "topic_id": uuid.UUID(int=7), "partition_responses": list(partitions)}
    return {"responses": [topic], "throttle_time": 0, **extra}


def partition(**extra: Any) -> dict[str, Any]:
    return {
        "index": 0,
        "error_code": 0,
        "base_offset": 5,
        "log_append_time": -1,
        "log_start_offset": 0,
        "record_errors": [],
        "error_message": None,
        **extra,
    }


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"v{v}")
@SETTINGS
@given(data=st.data())
def test_the_same_bytes_as_kio_from_messages_and_from_plain_values(
    version: int, data: st.DataObject
) -> None:
    message = data.draw(messages_of(response_class(ApiKey.PRODUCE, version)))
    expected = write_body(message)
    assert write_produce_response(version, message) == expected
    assert write_produce_response(version, plain(message)) == expected
    fields = plain_with_millis(plain(message))
    assert write_produce_response(version, fields) == expected
    framed = encode_response(header(version), ProduceResponseValues(version, fields))
    assert framed == kio_frame(version, message)


def test_the_worked_example_of_the_module_docstring() -> None:
    body = write_produce_response(3, values(3, partition()))
    assert body == bytes.fromhex(
        "00000001 000174"  # one topic, "t"
        "00000001 00000000 0000 0000000000000005 ffffffffffffffff"  # partition 0
        "00000000"  # throttle time
    )
    assert len(body) == 37


def test_tagged_fields_are_written_only_when_set() -> None:
    """v10: a partition's current leader (tag 0) and the response's node endpoints (tag 0)."""
    unset = partition(current_leader={"leader_id": -1, "leader_epoch": -1})
    fields = values(
        10,
        partition(index=1, error_code=6, current_leader={"leader_id": 2, "leader_epoch": 4}),
        unset,
        node_endpoints=[{"node_id": 2, "host": "h", "port": 9092, "rack": "r"}],
    )
    body = write_produce_response(10, fields)
    assert body == write_body(make(response_class(ApiKey.PRODUCE, 10), fields))
    assert bytes.fromhex("01 00 09 00000002 00000004 00") in body  # partition 1: its leader
    assert body.endswith(
        bytes.fromhex(
            "0000000000000005 ffffffffffffffff 0000000000000000 01 00 00"  # partition 0: no tags
            "00"  # topic: no tags
            "00000000"  # throttle time
            "01 00 0e 02 00000002 0268 00002384 0272 00"  # tag 0: endpoint 2 "h" 9092 "r"
        )
    )


def test_log_append_time_is_written_from_milliseconds_or_a_datetime() -> None:
    when = datetime.datetime(2026, 11, 25, tzinfo=datetime.UTC)
    ms = (when - _EPOCH) // datetime.timedelta(milliseconds=1)
    from_ms = write_produce_response(12, values(12, partition(log_append_time=ms)))
    assert from_ms == write_produce_response(12, values(12, partition(log_append_time=when)))
    assert from_ms == write_body(
        make(response_class(ApiKey.PRODUCE, 12), values(12, partition(log_append_time=ms)))
    )


def test_record_errors_and_messages_in_both_encodings() -> None:
    errors = [{"batch_index": 0, "batch_index_error_message": "bad"}, {"batch_index": 3}]
    for version in (8, 9):
        fields = values(version, partition(error_code=87, record_errors=errors, error_message="x"))
        body = write_produce_response(version, fields)
        assert body == write_body(make(response_class(ApiKey.PRODUCE, version), fields))


def test_a_missing_required_field_or_a_value_out_of_range_is_refused() -> None:
    fields = values(9, partition())
    del fields["responses"][0]["partition_responses"][0]["record_errors"]
    with pytest.raises(MessageEncodeError, match=r"ProduceResponse v9: .*needs 'record_errors'"):
        write_produce_response(9, fields)
    with pytest.raises(MessageEncodeError, match=r"ProduceResponse v13: .*needs 'topic_id'"):
        write_produce_response(13, {"responses": [{"name": "t", "partition_responses": []}]})
    with pytest.raises(MessageEncodeError, match=r"PartitionProduceResponse needs 'index'"):
        write_produce_response(3, values(3, {"error_code": 0, "base_offset": 1}))
    with pytest.raises(MessageEncodeError, match="ProduceResponse v12: "):
        write_produce_response(12, values(12, partition(index=2**31)))
    with pytest.raises(ValueError, match="BUG: Produce version 2 is not one this writer knows"):
        write_produce_response(2, values(2))


def test_encode_response_checks_the_values_answer_the_request() -> None:
    fields = values(11, partition())
    buffers = encode_response_buffers(header(11), ProduceResponseValues(11, fields))
    assert buffers == [kio_frame(11, make(response_class(ApiKey.PRODUCE, 11), fields))]
    with pytest.raises(ValueError, match="BUG: a Produce v10 response does not answer api key 0"):
        encode_response(header(11), ProduceResponseValues(10, fields))
    with pytest.raises(ValueError, match="does not answer api key 22 version 11"):
        encode_response(
            RequestHeader(ApiKey.INIT_PRODUCER_ID, 11, 1, "c", 2, 0),
            ProduceResponseValues(11, fields),
        )
