"""The plain Fetch response reader: field for field what kio reads from the same bytes, for
every flexible version; malformed bytes raise MalformedResponseError and nothing else."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.protocol import (
    ApiKey,
    MalformedResponseError,
    decode_fetch_answer,
    decode_response,
    make,
    response_class,
)
from rackwise.protocol.bodies import write_body
from rackwise.protocol.errors import CorrelationIdMismatchException
from rackwise.protocol.fetch_response_reader import FIRST_VERSION, LAST_VERSION, FetchAnswer
from rackwise.protocol.header import encode_response_header
from tests.protocol.helpers import messages_of
from tests.protocol.test_fetch_response import plain

EMPTY = {"throttle_time": 0, "error_code": 0, "responses": []}
VERSIONS = list(range(FIRST_VERSION, LAST_VERSION + 1))
SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


def frame_of(message: Any, correlation_id: int = 7) -> bytes:
    """A response frame without its size prefix, as a connection hands it on."""
    return encode_response_header(correlation_id, 1) + write_body(message)


def as_kio_reads(answer: FetchAnswer, version: int) -> dict[str, Any]:
    """The answer in the shape of ``plain(kio's message)``."""

    def value(v: Any) -> Any:
        if isinstance(v, tuple) and hasattr(v, "_asdict"):
            return {k: value(x) for k, x in v._asdict().items()}
        if isinstance(v, tuple):
            return [value(x) for x in v]
        if isinstance(v, memoryview):
            return bytes(v)
        return v

    out = value(answer)
    out["throttle_time"] = out.pop("throttle_time_ms")
    for topic in out["responses"]:
        topic.pop("topic_id" if version < 13 else "topic")
    if version < 16:
        out.pop("node_endpoints")
    return out


def kio_values(message: Any) -> dict[str, Any]:
    out = plain(message)
    for topic in out["responses"]:
        for p in topic["partitions"]:
            p["records"] = None if p["records"] is None else bytes(p["records"])
    return out


@SETTINGS
@given(version=st.sampled_from(VERSIONS), data=st.data())
def test_what_kio_reads_from_the_same_bytes_and_no_cut_of_them(
    version: int, data: st.DataObject
) -> None:
    message = data.draw(messages_of(response_class(ApiKey.FETCH, version)))
    wire = frame_of(message)
    kio = decode_response(wire, ApiKey.FETCH, version, 7)
    answer = decode_fetch_answer(memoryview(wire), version, 7)
    assert as_kio_reads(answer, version) == kio_values(kio)
    cut = data.draw(st.integers(4, len(wire) - 1))
    with pytest.raises(MalformedResponseError):
        decode_fetch_answer(wire[:cut], version, 7)
    with pytest.raises(MalformedResponseError, match="after its body"):
        decode_fetch_answer(wire + b"\x00", version, 7)


@SETTINGS
@given(body=st.binary(max_size=300), version=st.sampled_from(VERSIONS))
def test_any_bytes_are_read_or_refused_as_malformed(body: bytes, version: int) -> None:
    wire = encode_response_header(7, 1) + body
    try:
        answer = decode_fetch_answer(wire, version, 7)
    except MalformedResponseError:
        return
    assert isinstance(answer, FetchAnswer)


def test_records_are_views_of_the_frame_and_tags_have_kio_defaults() -> None:
    topic_id = uuid.UUID(int=9)
    records = bytes(range(200))
    fields = {
        "throttle_time": 3,
        "error_code": 0,
        "session_id": 0,
        "responses": [
            {
                "topic_id": topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 0,
                        "high_watermark": 5,
                        "aborted_transactions": [],
                        "records": records,
                    },
                    {
                        "partition_index": 1,
                        "error_code": 0,
                        "high_watermark": 5,
                        "aborted_transactions": [],
                        "diverging_epoch": {"epoch": 2, "end_offset": 40},
                        "records": None,
                    },
                ],
            }
        ],
    }
    wire = bytearray(frame_of(make(response_class(ApiKey.FETCH, 17), fields)))
    answer = decode_fetch_answer(memoryview(wire), 17, 7)
    first, second = answer.responses[0].partitions
    assert answer.throttle_time_ms == 3
    assert answer.responses[0].topic_id == topic_id and answer.responses[0].topic is None
    assert isinstance(first.records, memoryview) and first.records.readonly
    assert bytes(first.records) == records
    wire[wire.index(records) : wire.index(records) + 1] = b"\xff"  # the view is of the frame
    assert first.records[0] == 0xFF
    assert (first.diverging_epoch.epoch, first.diverging_epoch.end_offset) == (-1, -1)
    assert (second.diverging_epoch.epoch, second.diverging_epoch.end_offset) == (2, 40)
    assert second.records is None and second.aborted_transactions == ()
    assert first.aborted_transactions == () and first.current_leader.leader_id == -1


def test_another_correlation_id_is_kafkas_mismatch() -> None:
    wire = frame_of(
        make(
            response_class(ApiKey.FETCH, 17), {"throttle_time": 0, "error_code": 0, "responses": []}
        ),
        correlation_id=8,
    )
    with pytest.raises(CorrelationIdMismatchException):
        decode_fetch_answer(wire, 17, 7)


@pytest.mark.parametrize("version", [4, 11])
def test_older_versions_are_read_by_kio(version: int) -> None:
    wire = encode_response_header(7, 0) + write_body(
        make(
            response_class(ApiKey.FETCH, version),
            {"throttle_time": 0, "error_code": 0, "responses": []},
        )
    )
    answer = decode_fetch_answer(wire, version, 7)
    assert not isinstance(answer, FetchAnswer) and answer.responses == ()
