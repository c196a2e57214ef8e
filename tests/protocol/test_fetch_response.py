"""The Fetch response writer: byte for byte kio's output for every version served, from
messages and from plain values, without copying big record batches."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.protocol import (
    SUPPORTED,
    ApiKey,
    MessageEncodeError,
    RequestHeader,
    encode_response,
    make,
    response_class,
)
from rackwise.protocol.bodies import write_body
from rackwise.protocol.fetch_response import (
    INLINE_RECORDS_BYTES,
    FetchResponseValues,
    encode_fetch_response,
    write_fetch_response,
)
from rackwise.protocol.framing import frame
from rackwise.protocol.header import encode_response_header
from rackwise.protocol.server import encode_response_buffers
from tests.protocol.helpers import messages_of

VERSIONS = list(SUPPORTED[ApiKey.FETCH].versions)
SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
T1 = uuid.UUID(int=7)


def header(version: int, correlation_id: int = 7) -> RequestHeader:
    return RequestHeader(ApiKey.FETCH, version, correlation_id, "c", 2 if version >= 12 else 1, 0)


def plain(value: Any) -> Any:
    """A message as the plain values a handler would give (ints, dicts, lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return value


def kio_frame(version: int, message: Any, correlation_id: int = 7) -> bytes:
    spec = SUPPORTED[ApiKey.FETCH]
    head = encode_response_header(correlation_id, spec.response_header_version(version))
    return frame(head + write_body(message))


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"v{v}")
@SETTINGS
@given(data=st.data())
def test_the_same_bytes_as_kio_from_messages_and_from_plain_values(
    version: int, data: st.DataObject
) -> None:
    message = data.draw(messages_of(response_class(ApiKey.FETCH, version)))
    expected = write_body(message)
    assert b"".join(write_fetch_response(version, message)) == expected
    assert b"".join(write_fetch_response(version, plain(message))) == expected
    framed = b"".join(encode_fetch_response(header(version), plain(message)))
    assert framed == kio_frame(version, message)


def partition(records: Any, **extra: Any) -> dict[str, Any]:
    return {
        "partition_index": 0,
        "error_code": 0,
        "high_watermark": 5,
        "aborted_transactions": [],
        "records": records,
        **extra,
    }


def values(version: int, *partitions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    topic = {"topic": "t", "topic_id": T1, "partitions": list(partitions)}
    return {"throttle_time": 0, "error_code": 0, "responses": [topic], **extra}


@pytest.mark.parametrize("version", [4, 11, 12, 13, 16, 18], ids=lambda v: f"v{v}")
def test_big_record_batches_are_sent_as_given(version: int) -> None:
    big = bytes(range(256)) * 64  # 16 KiB
    view = memoryview(bytearray(big))
    small = b"\x01" * (INLINE_RECORDS_BYTES - 1)
    fields = values(version, partition(big), partition(view), partition(small), partition(None))
    buffers = write_fetch_response(version, fields)
    assert any(b is big for b in buffers)
    assert any(b is view for b in buffers)
    assert not any(b is small for b in buffers)  # copied into the framing
    assert b"".join(buffers) == write_body(make(response_class(ApiKey.FETCH, version), fields))


def test_the_worked_example_of_the_module_docstring() -> None:
    records = bytes(61)
    buffers = encode_fetch_response(header(4), values(4, partition(records)))
    assert (
        b"".join(buffers)
        == bytes.fromhex(
            "0000006e 00000007"  # size 110, correlation id 7 (header v0)
            "00000000 00000001 000174"  # throttle time, one topic, "t"
            "00000001 00000000 0000 0000000000000005 ffffffffffffffff"  # partition 0
            "00000000 0000003d"  # no aborted transactions, 61 bytes of records
        )
        + records
    )


def test_tagged_fields_are_written_only_when_set() -> None:
    """v16: the partition's tags 0-2 and the response's node endpoints, in tag order."""
    fields = values(
        16,
        partition(
            b"",
            diverging_epoch={"epoch": 3, "end_offset": 40},
            current_leader={"leader_id": 2, "leader_epoch": 4},
            snapshot_id={"end_offset": -1, "epoch": -1},  # the default: not written
        ),
        node_endpoints=[{"node_id": 2, "host": "h", "port": 9092, "rack": None}],
    )
    body = b"".join(write_fetch_response(16, fields))
    assert body == write_body(make(response_class(ApiKey.FETCH, 16), fields))
    assert body.endswith(
        bytes.fromhex(
            "01"  # records: empty (compact)
            "02 00 0d 00000003 0000000000000028 00"  # two tags: 0 diverging epoch (3, 40)
            "01 09 00000002 00000004 00"  # 1 current leader (2, 4)
            "00"  # topic: no tags
            "01 00 0d 02 00000002 0268 00002384 00 00"  # response: tag 0, endpoint 2 "h" 9092
        )
    )


def test_fields_a_version_lacks_are_ignored_and_optional_ones_default() -> None:
    fields = values(4, partition(b"", preferred_read_replica=3, log_start_offset=9))
    fields["node_endpoints"] = [{"node_id": 1, "host": "h", "port": 1}]
    v4 = b"".join(write_fetch_response(4, fields))
    assert v4 == write_body(make(response_class(ApiKey.FETCH, 4), fields))
    v13 = values(13, partition(b""))
    del v13["responses"][0]["topic"]  # v13 names topics by id
    assert b"".join(write_fetch_response(13, v13)) == write_body(
        make(response_class(ApiKey.FETCH, 13), v13)
    )


def test_a_missing_required_field_or_a_value_out_of_range_is_refused() -> None:
    fields = values(12, partition(b""))
    del fields["responses"][0]["partitions"][0]["aborted_transactions"]
    with pytest.raises(MessageEncodeError, match=r"FetchResponse v12: PartitionData needs"):
        write_fetch_response(12, fields)
    with pytest.raises(MessageEncodeError, match=r"FetchResponse v13: .*needs 'topic_id'"):
        write_fetch_response(13, values(13, partition(b""), responses=[{"partitions": []}]))
    with pytest.raises(MessageEncodeError, match="FetchResponse v12: "):
        write_fetch_response(12, values(12, partition(b"", partition_index=2**31)))
    with pytest.raises(ValueError, match="BUG: Fetch version 3 is not one this writer knows"):
        write_fetch_response(3, values(3))


def test_encode_response_writes_fetch_messages_and_values_with_the_fast_writer() -> None:
    records = bytes(INLINE_RECORDS_BYTES)
    fields = values(17, partition(records))
    message = make(response_class(ApiKey.FETCH, 17), fields)
    expected = kio_frame(17, message)
    assert encode_response(header(17), message) == expected
    assert encode_response(header(17), FetchResponseValues(17, fields)) == expected
    buffers = encode_response_buffers(header(17), message)
    # size and header; the framing up to the records; the records; the framing after them
    assert len(buffers) == 4 and buffers[2] is records
    assert b"".join(buffers) == expected
    with pytest.raises(ValueError, match="BUG: a Fetch v16 response does not answer api key 1 "):
        encode_response(header(17), FetchResponseValues(16, fields))
    with pytest.raises(ValueError, match="does not answer api key 22 version 17"):
        encode_response(
            RequestHeader(ApiKey.INIT_PRODUCER_ID, 17, 1, "c", 2, 0),
            FetchResponseValues(17, fields),
        )
    with pytest.raises(ValueError, match="BUG: a Fetch v17 response does not answer"):
        encode_fetch_response(header(16), message)


def test_other_responses_are_one_buffer() -> None:
    request = RequestHeader(ApiKey.INIT_PRODUCER_ID, 4, 3, "c", 2, 0)
    answer = make(
        response_class(ApiKey.INIT_PRODUCER_ID, 4),
        throttle_time=0,
        error_code=0,
        producer_id=1000,
        producer_epoch=0,
    )
    assert encode_response_buffers(request, answer) == [encode_response(request, answer)]
