"""The Fetch request writer: byte for byte kio's output for every version served, from
messages and from plain values."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.protocol import (
    SUPPORTED,
    ApiKey,
    FetchRequestValues,
    MessageEncodeError,
    encode_request,
    make,
    request_class,
)
from rackwise.protocol.bodies import write_body
from rackwise.protocol.fetch_request import write_fetch_request
from tests.protocol.helpers import messages_of
from tests.protocol.test_fetch_response import plain

VERSIONS = list(SUPPORTED[ApiKey.FETCH].versions)
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
T1 = uuid.UUID(int=7)


def values(*partitions: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "replica_id": 2,
        "max_wait": 500,
        "min_bytes": 1,
        "topics": [{"topic": "t", "topic_id": T1, "partitions": list(partitions)}],
        "forgotten_topics_data": [],
        **extra,
    }


def partition(**extra: Any) -> dict[str, Any]:
    return {"partition": 0, "fetch_offset": 9, "partition_max_bytes": 1 << 20, **extra}


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"v{v}")
@SETTINGS
@given(data=st.data())
def test_the_same_bytes_as_kio_from_messages_and_from_plain_values(
    version: int, data: st.DataObject
) -> None:
    message = data.draw(messages_of(request_class(ApiKey.FETCH, version)))
    expected = write_body(message)
    assert write_fetch_request(version, message) == expected
    assert write_fetch_request(version, plain(message)) == expected


def test_the_worked_example_of_the_module_docstring() -> None:
    body = write_fetch_request(4, values(partition()))
    assert body == bytes.fromhex(
        "00000002 000001f4 00000001 7fffffff 00"  # replica, max wait, min bytes, max bytes
        "00000001 000174"  # one topic, "t"
        "00000001 00000000 0000000000000009 00100000"  # partition 0 at 9, 1 MiB
    )
    assert len(body) == 44


@pytest.mark.parametrize("version", [12, 15, 17, 18], ids=lambda v: f"v{v}")
def test_tagged_fields_are_written_only_when_set(version: int) -> None:
    directory = uuid.UUID(int=3)
    fields = values(
        partition(replica_directory_id=directory, high_watermark=40),
        partition(partition=1, high_watermark=2**63 - 1),  # the default: not written
        cluster_id="c1",
        replica_state={"replica_id": 2, "replica_epoch": 11},
    )
    body = write_fetch_request(version, fields)
    assert body == write_body(make(request_class(ApiKey.FETCH, version), fields))
    tags = bytes.fromhex("00 03 03 6331")  # tag 0: cluster id "c1"
    if version >= 15:
        tags = b"\x02" + tags + bytes.fromhex("01 0d 00000002 000000000000000b 00")  # tag 1
    else:
        tags = b"\x01" + tags
    assert body.endswith(tags)
    assert (directory.bytes in body) == (version >= 17)
    assert (bytes.fromhex("01 08 0000000000000028") in body) == (version >= 18)


def test_a_missing_required_field_or_a_value_out_of_range_is_refused() -> None:
    fields = values(partition())
    del fields["forgotten_topics_data"]
    with pytest.raises(MessageEncodeError, match=r"FetchRequest v7: .*'forgotten_topics_data'"):
        write_fetch_request(7, fields)
    with pytest.raises(MessageEncodeError, match=r"FetchPartition needs 'partition'"):
        write_fetch_request(4, values({"fetch_offset": 1}))
    with pytest.raises(MessageEncodeError, match=r"FetchRequest v13: .*needs 'topic_id'"):
        write_fetch_request(13, values(topics=[{"topic": "t", "partitions": []}]))
    with pytest.raises(MessageEncodeError, match="FetchRequest v12: "):
        write_fetch_request(12, values(partition(fetch_offset=2**63)))
    with pytest.raises(ValueError, match="BUG: Fetch version 3 is not one this writer knows"):
        write_fetch_request(3, values())


@pytest.mark.parametrize("version", [4, 11, 12, 17], ids=lambda v: f"v{v}")
def test_encode_request_frames_values_as_it_frames_the_message(version: int) -> None:
    fields = values(partition(), rack_id="r1")
    message = make(request_class(ApiKey.FETCH, version), fields)
    framed = encode_request(FetchRequestValues(version, fields), 9, "follower-2")
    assert framed == encode_request(message, 9, "follower-2")
