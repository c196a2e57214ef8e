"""Every class of every record type and version, under hypothesis: our codec writes what kio's
``entity_writer`` writes, kio's ``entity_reader`` reads what we write, and we read what kio
writes. (kio reads the all-zero uuid as None; we keep Kafka's ZERO_UUID.)"""

from __future__ import annotations

import dataclasses
import io
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer

from rackwise.records import RECORD_TYPES, decode_record, encode_record
from rackwise.records.registry import codec_of
from tests.records.strategies import records_of

CLASSES = [cls for record_type in RECORD_TYPES.values() for cls in record_type.classes.values()]


def _as_kio_reads(value: Any) -> Any:
    """``value`` with every all-zero uuid replaced by None, as kio's reader returns them."""
    if isinstance(value, uuid.UUID):
        return None if value.int == 0 else value
    if isinstance(value, tuple):
        return tuple(_as_kio_reads(v) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _as_kio_reads(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    return value


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__qualname__)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_same_bytes_as_kio(cls: type, data: st.DataObject) -> None:
    record = data.draw(records_of(cls))
    ours = codec_of(record).encode(record)
    out = io.BytesIO()
    entity_writer(cls)(out, record)
    assert ours == out.getvalue()
    kio_read, size = entity_reader(cls)(ours, 0)
    assert size == len(ours)
    assert kio_read == _as_kio_reads(record)
    decoded, end = codec_of(record).decode(ours, 0, {})
    assert end == len(ours)
    assert decoded == record
    assert decode_record(encode_record(record)) == record
