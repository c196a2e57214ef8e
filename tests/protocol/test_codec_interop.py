"""Every request and response class of every version we serve, under hypothesis:

* kafka-python, a third-party codec, reads our bytes and writes them back unchanged;
* a message carrying tagged fields its version does not know, at every depth, reads as the
  message without them (KIP-482), through the tolerant reader kio's reader falls back to.
"""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader

from rackwise.protocol import request_class
from rackwise.protocol.bodies import read_body, write_body
from rackwise.protocol.tolerant import tolerant_reader
from rackwise.protocol.values import struct_of
from tests.protocol.helpers import (
    KAFKA_APIS,
    every_class,
    future_class,
    kafka_python_class,
    messages_of,
    to_future,
)

ALL = every_class()
KAFKA = every_class(KAFKA_APIS)
FLEXIBLE = [(name, cls) for name, cls in ALL if cls.__flexible__]
# kafka-python has every API we serve to clients; the controller-only ones are pinned by
# hand-derived bytes in test_golden.py.
WITH_KAFKA_PYTHON = [
    (name, cls, kafka_python_class(name.split("-")[0], name.rsplit("-", 1)[1]))
    for name, cls in KAFKA
    if kafka_python_class(name.split("-")[0], name.rsplit("-", 1)[1]) is not None
]
SETTINGS = settings(
    max_examples=6, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


@pytest.mark.parametrize(
    ("name", "cls", "theirs"), WITH_KAFKA_PYTHON, ids=[n for n, _, _ in WITH_KAFKA_PYTHON]
)
@SETTINGS
@given(data=st.data())
def test_kafka_python_reads_and_rewrites_our_bytes(
    name: str, cls: type, theirs: Any, data: st.DataObject
) -> None:
    api, version, kind = name.rsplit("-", 2)
    message = data.draw(messages_of(cls))
    assume(_durations_kio_reads(message))
    if api == "ApiVersions" and kind == "response":
        # kafka-python reads every ApiVersions response with an error as v0 (KIP-511's rule for
        # UNSUPPORTED_VERSION), so only error-free ones round-trip at their own version.
        message = _without_error(message)
    raw = write_body(message)
    decoded = theirs.decode(raw, version=int(version.removeprefix("v")))
    if kind == "request":
        decoded.with_header()  # kafka-python keeps a request's version in its header
    assert decoded.encode() == raw
    assert read_body(cls, raw)[0] == message


@pytest.mark.parametrize(("name", "cls"), FLEXIBLE, ids=[n for n, _ in FLEXIBLE])
@SETTINGS
@given(data=st.data(), payload=st.binary(max_size=5))
def test_unknown_tagged_fields_are_skipped_at_every_depth(
    name: str, cls: type, data: st.DataObject, payload: bytes
) -> None:
    message = data.draw(messages_of(cls))
    assume(_durations_kio_reads(message))
    newer = to_future(message, payload or b"\x01")
    raw = write_body(newer)
    assert raw != write_body(message)  # the unknown fields are on the wire
    decoded, end = read_body(cls, raw)  # kio's reader fails, the tolerant one takes over
    assert end == len(raw)
    assert decoded == message
    assert tolerant_reader(cls)(write_body(message), 0)[0] == message


def test_only_controller_apis_lack_a_kafka_python_class() -> None:
    """kafka-python 3.0 speaks the classic group protocol only, so KIP-848's two APIs are the
    other ones it has no class for."""
    missing = {name.split("-")[0] for name, _ in KAFKA} - {
        name.split("-")[0] for name, _, _ in WITH_KAFKA_PYTHON
    }
    assert missing == {
        "BrokerRegistration",
        "BrokerHeartbeat",
        "AlterPartition",
        "AllocateProducerIds",
        "AssignReplicasToDirs",
        "Vote",
        "BeginQuorumEpoch",
        "EndQuorumEpoch",
        "FetchSnapshot",
        "ConsumerGroupHeartbeat",
        "ConsumerGroupDescribe",
    }


def test_kios_own_reader_refuses_an_unknown_tag() -> None:
    """Why the tolerant reader exists: kio raises on a tag it does not know."""
    cls = request_class(18, 3)
    message = cls(client_software_name="a", client_software_version="b")
    raw = write_body(to_future(message, b"\xaa\xbb"))
    assert raw == bytes.fromhex("02 61 02 62 01 5a 03 03 aa bb")
    with pytest.raises(KeyError, match="Unknown tagged field tag: 90"):
        entity_reader(cls)(raw, 0)  # type: ignore[arg-type]
    assert read_body(cls, raw) == (message, len(raw))
    assert future_class(cls).__name__ == "ApiVersionsRequest"


def _without_error(message: Any) -> Any:
    return dataclasses.replace(message, error_code=type(message.error_code)(0))


def _structs(cls: type, seen: set[type]) -> None:
    for field in dataclasses.fields(cls):
        struct = struct_of(field.type)
        if struct is not None and struct not in seen:
            seen.add(struct)
            _structs(struct, seen)


def test_no_array_item_is_empty_on_the_wire() -> None:
    """Why the reader may refuse an array claiming more items than bytes left: every item of
    every array in every message we read takes at least one byte."""
    structs: set[type] = set()
    for _, cls in ALL:
        _structs(cls, structs)
    assert len(structs) > 100
    for struct in structs:
        plain = [f for f in dataclasses.fields(struct) if "tag" not in f.metadata]
        assert plain or struct.__flexible__, struct  # type: ignore[attr-defined]


KIO_READABLE_MS = (2**63 - 1) // 1000
"""kio's reader turns milliseconds into microseconds in 64 bits ("timedelta milliseconds
overflow" beyond), while its hypothesis strategy draws any ``timedelta``: a duration field
(OffsetCommit v2-v4's retention) above about 292,000 years is one kio cannot read back."""


def _durations_kio_reads(value: Any) -> bool:
    if isinstance(value, datetime.timedelta):
        return abs(value // datetime.timedelta(milliseconds=1)) <= KIO_READABLE_MS
    if isinstance(value, tuple):
        return all(_durations_kio_reads(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(_durations_kio_reads(getattr(value, f.name)) for f in dataclasses.fields(value))
    return True
