"""Request and response headers: their bytes, and which version each message uses."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rackwise.protocol import SUPPORTED, ApiKey, ApiSpec
from rackwise.protocol.header import (
    HeaderError,
    RequestHeader,
    encode_request_header,
    encode_response_header,
    parse_request_header,
    parse_response_header,
    request_header_version,
    response_header_version,
)
from tests.protocol.helpers import kafka_python_class

# api key 3, version 12, correlation id 7, client id "cli"; v2 adds the tagged-field count.
HEADER_V1 = bytes.fromhex("0003 000c 00000007 0003 636c69")
HEADER_V2 = HEADER_V1 + b"\x00"


def test_a_v1_header_golden_bytes() -> None:
    assert encode_request_header(3, 12, 7, "cli", 1) == HEADER_V1
    assert parse_request_header(HEADER_V1 + b"body", 1) == RequestHeader(3, 12, 7, "cli", 1, 13)


def test_a_v2_header_golden_bytes() -> None:
    assert encode_request_header(3, 12, 7, "cli", 2) == HEADER_V2
    assert parse_request_header(HEADER_V2 + b"body", 2) == RequestHeader(3, 12, 7, "cli", 2, 14)


def test_a_null_client_id_reads_as_empty_as_kafka_treats_it() -> None:
    raw = encode_request_header(18, 0, 1, None, 1)
    assert raw == bytes.fromhex("0012 0000 00000001 ffff")
    assert parse_request_header(raw, 1).client_id == ""


def test_the_client_id_is_read_leniently() -> None:
    """Kafka turns invalid UTF-8 into U+FFFD; a client id is only informational."""
    raw = bytes.fromhex("0012 0000 00000001 0002 ff41")
    assert parse_request_header(raw, 1).client_id == "\ufffdA"


def test_unknown_tagged_fields_in_a_v2_header_are_skipped() -> None:
    # Two tagged fields: tag 0 with 3 bytes, tag 5 with 1 byte.
    raw = HEADER_V1 + bytes.fromhex("02 00 03 aabbcc 05 01 dd") + b"body"
    header = parse_request_header(raw, 2)
    assert header.size == len(raw) - 4
    assert raw[header.size :] == b"body"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "a request header needs 8 bytes, the frame has 0"),
        (bytes.fromhex("0003 000c 0000"), "a request header needs 8 bytes, the frame has 6"),
        (bytes.fromhex("0003 000c 00000007 00"), "the request header ends before its client id"),
        (bytes.fromhex("0003 000c 00000007 0009 6162"), "client id's length 9 does not fit"),
        (bytes.fromhex("0003 000c 00000007 fffe"), "client id's length -2 does not fit"),
    ],
)
def test_a_truncated_header_is_refused(raw: bytes, message: str) -> None:
    with pytest.raises(HeaderError, match=message):
        parse_request_header(raw, 1)


@pytest.mark.parametrize(
    "tags",
    [
        b"",  # the tagged-field count is missing
        bytes.fromhex("01 00"),  # a field without its size
        bytes.fromhex("01 00 05 aa"),  # a field shorter than its size
        bytes.fromhex("ff ff ff ff ff"),  # a varint longer than five bytes
    ],
)
def test_truncated_header_tagged_fields_are_refused(tags: bytes) -> None:
    with pytest.raises(HeaderError):
        parse_request_header(HEADER_V1 + tags, 2)


def test_response_headers() -> None:
    assert encode_response_header(7, 0) == bytes.fromhex("00000007")
    assert encode_response_header(7, 1) == bytes.fromhex("00000007 00")
    assert parse_response_header(bytes.fromhex("00000007 02 00 01 aa 01 00 ff"), 1) == (7, 10)
    with pytest.raises(HeaderError):
        parse_response_header(b"\x00\x00", 0)


def test_header_versions_follow_flexibility() -> None:
    assert request_header_version(None, 5) == 1
    assert request_header_version(9, 8) == 1
    assert request_header_version(9, 9) == 2
    assert response_header_version(3, 9, 9) == 1
    assert response_header_version(3, 9, 8) == 0


def test_api_versions_responses_always_use_header_v0() -> None:
    """KIP-511: a client that does not know the server's versions yet must read the answer."""
    spec = SUPPORTED[ApiKey.API_VERSIONS]
    assert [spec.response_header_version(v) for v in range(0, 6)] == [0] * 6
    # The request side is normal, and a version past the range still follows flexibility:
    # Kafka's generated requestHeaderVersion gives ApiVersions v5 header v2.
    assert [spec.request_header_version(v) for v in range(0, 6)] == [1, 1, 1, 2, 2, 2]


SERVED = [
    (spec, version)
    for spec in SUPPORTED.values()
    for version in spec.versions
    if spec.api_key < 1000
]


@pytest.mark.parametrize(("spec", "version"), SERVED, ids=[f"{s.name}-v{v}" for s, v in SERVED])
def test_header_versions_agree_with_kio_and_kafka_python(spec: ApiSpec, version: int) -> None:
    request = spec.request_class(version)
    response = spec.response_class(version)
    assert spec.request_header_version(version) == request.__header_schema__.__version__
    assert spec.response_header_version(version) == response.__header_schema__.__version__
    theirs = kafka_python_class(spec.name, "request")
    if theirs is not None:
        assert (spec.request_header_version(version) == 2) == theirs.flexible_version_q(version)


def test_a_first_request_loads_only_its_own_versions_classes() -> None:
    """The header versions of a Produce v9 request come from v9's classes alone: a fresh
    process that reads one and writes its answer has loaded no other Produce version's."""
    script = """
import sys
from rackwise.protocol import Listener
from rackwise.protocol.header import encode_request_header
from rackwise.protocol.server import decode_request, encode_response_buffers
from rackwise.protocol.produce_response import ProduceResponseValues
body = bytes.fromhex("00 0001 00007530 01 00")  # no transactional id, acks 1, no topics
request = decode_request(encode_request_header(0, 9, 5, "c", 2) + body, Listener.BROKER)
encode_response_buffers(request.header, ProduceResponseValues(9, {"responses": []}))
print(sorted({m.split(".")[3] for m in sys.modules if m.startswith("kio.schema.produce.v")}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["['v9']"]
