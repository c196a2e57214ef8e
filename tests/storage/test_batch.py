"""Record batch v2: golden bytes, header fields, stamping, and the leader's validation."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from rackwise.storage.batch import (
    BATCH_HEADER_BYTES,
    LOG_APPEND_TIME,
    NO_SEQUENCE,
    BatchHeader,
    build_batch,
    check_batches,
    crc_matches,
    increment_sequence,
    iter_headers,
    parse_header,
    stamp_batches,
    validate_batches,
)
from rackwise.storage.batch_records import iter_record_timestamps, varint_bytes, walk_records
from rackwise.storage.errors import (
    CorruptRecordException,
    InvalidRecordException,
    InvalidTimestampException,
    RecordBatchTooLargeException,
    RecordTooLargeException,
)

NOW = 1_700_000_000_000

# One record, key b"k", value b"v", at timestamp 1000, laid out by hand per Kafka's
# DefaultRecordBatch / DefaultRecord.
GOLDEN = bytes.fromhex(
    "0000000000000000"  # baseOffset 0
    "0000003a"  # batchLength 58 = 61 - 12 + 9
    "ffffffff"  # partitionLeaderEpoch -1
    "02"  # magic 2
    "716a6189"  # crc32c of the bytes from attributes on
    "0000"  # attributes: no compression, CreateTime
    "00000000"  # lastOffsetDelta 0
    "00000000000003e8"  # baseTimestamp 1000
    "00000000000003e8"  # maxTimestamp 1000
    "ffffffffffffffff"  # producerId -1
    "ffff"  # producerEpoch -1
    "ffffffff"  # baseSequence -1
    "00000001"  # recordCount 1
    "10"  # record length 8 (zig-zag)
    "00"  # attributes
    "00"  # timestampDelta 0
    "00"  # offsetDelta 0
    "02"  # key length 1
    "6b"  # b"k"
    "02"  # value length 1
    "76"  # b"v"
    "00"  # no headers
)


def test_build_batch_matches_the_hand_built_golden_batch() -> None:
    assert build_batch([(b"k", b"v", ())], timestamp_ms=1000) == GOLDEN


def test_header_fields_of_the_golden_batch() -> None:
    h = parse_header(GOLDEN)
    assert h == BatchHeader(
        position=0,
        base_offset=0,
        batch_length=58,
        partition_leader_epoch=-1,
        magic=2,
        crc=0x716A6189,
        attributes=0,
        last_offset_delta=0,
        base_timestamp=1000,
        max_timestamp=1000,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        record_count=1,
    )
    assert (h.size, h.last_offset, h.next_offset, h.compression) == (70, 0, 1, 0)
    assert not h.has_producer_id and h.last_sequence == NO_SEQUENCE
    assert crc_matches(GOLDEN, h)


records_strategy = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=20)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(
            st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))),
            max_size=3,
        ),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=60, deadline=None)
@given(records=records_strategy, producer=st.booleans())
def test_build_batch_agrees_with_kafka_python(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    producer: bool,
) -> None:
    pid, epoch, seq = (77, 3, 10) if producer else (-1, -1, -1)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=1 << 22,
    )
    for i, (key, value, headers) in enumerate(records):
        builder.append(i, timestamp=NOW + i, key=key, value=value, headers=headers)
    theirs = bytes(builder.build())
    ours = build_batch(
        records,
        timestamp_ms=NOW,
        record_timestamps=[NOW + i for i in range(len(records))],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        partition_leader_epoch=0,  # kafka-python writes 0 where Java writes -1
    )
    assert ours == theirs
    h = parse_header(ours)
    summary = walk_records(ours, BATCH_HEADER_BYTES, h.end, h.record_count, h.base_timestamp)
    assert summary.max_timestamp == NOW + len(records) - 1
    assert summary.min_timestamp == NOW
    assert summary.has_null_key == any(k is None for k, _, _ in records)
    pairs = list(iter_record_timestamps(ours, BATCH_HEADER_BYTES, h.end, h.record_count, NOW))
    assert pairs == [(i, NOW + i) for i in range(len(records))]
    decoded = [(r.key, r.value, list(r.headers)) for r in DefaultRecordBatch(ours)]
    assert decoded == [(k, v, list(hs)) for k, v, hs in records]


@settings(max_examples=40, deadline=None)
@given(records=records_strategy, data=st.data())
def test_a_flipped_bit_after_the_crc_field_is_caught(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    data: st.DataObject,
) -> None:
    batch = bytearray(build_batch(records, timestamp_ms=NOW))
    position = data.draw(st.integers(21, len(batch) - 1))
    batch[position] ^= 1 << data.draw(st.integers(0, 7))
    assert not crc_matches(batch, parse_header(batch))
    with pytest.raises(CorruptRecordException):
        check_batches(batch, allow_partial_tail=False)


def test_iter_headers_stops_before_a_torn_tail() -> None:
    two = GOLDEN + GOLDEN
    assert [h.position for h in iter_headers(two)] == [0, 70]
    assert [h.position for h in iter_headers(two[:-1])] == [0]
    assert [h.position for h in iter_headers(two + GOLDEN[:60])] == [0, 70]
    assert check_batches(two[:-1], allow_partial_tail=True)[0].position == 0
    with pytest.raises(CorruptRecordException, match="69 bytes after the last whole"):
        check_batches(two[:-1], allow_partial_tail=False)


def test_a_length_shorter_than_a_header_is_corruption() -> None:
    bad = bytearray(GOLDEN)
    struct.pack_into(">i", bad, 8, 40)
    with pytest.raises(CorruptRecordException, match="size 52 is smaller than the minimum"):
        parse_header(bad)
    with pytest.raises(CorruptRecordException, match="only 60 bytes remain"):
        parse_header(GOLDEN[:60])


def test_stamping_writes_offsets_and_epoch_outside_the_crc() -> None:
    buf = bytearray(GOLDEN)
    (stamped,) = stamp_batches(
        buf, [parse_header(buf)], first_offset=42, leader_epoch=7, log_append_time_ms=None
    )
    expected = bytearray(GOLDEN)
    expected[0:8] = (42).to_bytes(8, "big")
    expected[12:16] = (7).to_bytes(4, "big")
    assert buf == expected
    assert stamped == parse_header(buf)
    assert stamped.crc == 0x716A6189 and crc_matches(buf, stamped)
    kafka_view = DefaultRecordBatch(bytes(buf))
    assert kafka_view.validate_crc() and kafka_view.base_offset == 42


def test_log_append_time_stamps_the_timestamp_type_and_a_new_crc() -> None:
    buf = bytearray(GOLDEN)
    (stamped,) = stamp_batches(
        buf, [parse_header(buf)], first_offset=5, leader_epoch=1, log_append_time_ms=NOW
    )
    assert stamped.timestamp_type == 1 and stamped.max_timestamp == NOW
    assert buf[21:23] == b"\x00\x08"
    assert buf[35:43] == NOW.to_bytes(8, "big")
    assert stamped.crc != 0x716A6189 and crc_matches(buf, stamped)
    kafka_view = DefaultRecordBatch(bytes(buf))
    assert kafka_view.validate_crc() and kafka_view.timestamp_type == 1
    assert [r.timestamp for r in kafka_view] == [NOW]


def test_consecutive_batches_get_consecutive_base_offsets() -> None:
    three = build_batch([(None, b"a", ()), (None, b"b", ()), (None, b"c", ())], timestamp_ms=NOW)
    buf = bytearray(three + GOLDEN)
    stamped = stamp_batches(
        buf, list(iter_headers(buf)), first_offset=10, leader_epoch=0, log_append_time_ms=None
    )
    assert [(h.base_offset, h.last_offset) for h in stamped] == [(10, 12), (13, 13)]


def test_sequence_wraps_past_int32_max() -> None:
    assert increment_sequence(2**31 - 1, 1) == 0
    assert increment_sequence(2**31 - 3, 4) == 1
    batch = build_batch(
        [(None, b"x", ())] * 3,
        timestamp_ms=NOW,
        producer_id=1,
        producer_epoch=0,
        base_sequence=2**31 - 2,
    )
    assert parse_header(batch).last_sequence == 0


def _validate(data: bytes, **kwargs: object) -> list[BatchHeader]:
    options: dict[str, object] = {"max_message_bytes": 1_048_588, "now_ms": NOW, "partition": "t-0"}
    options.update(kwargs)
    return validate_batches(data, **options)  # type: ignore[arg-type]


def _patched(batch: bytes, at: int, fmt: str, value: int, *, fix_crc: bool = True) -> bytes:
    """``batch`` with one header field changed (and its CRC recomputed)."""
    from crc32c import crc32c

    buf = bytearray(batch)
    struct.pack_into(fmt, buf, at, value)
    if fix_crc:
        struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


GOOD = build_batch([(b"k", b"v", ()), (b"k2", b"v2", ())], timestamp_ms=NOW)


def _bad_offset_delta() -> bytes:
    from rackwise.storage.batch_records import encode_record

    body = encode_record(0, 0, b"a", b"1", ()) + encode_record(2, 0, b"b", b"2", ())
    return _batch_with_body(body, count=2)


def _batch_with_body(body: bytes, *, count: int) -> bytes:
    head = bytearray(build_batch([(b"a", b"1", ())], timestamp_ms=NOW)[:BATCH_HEADER_BYTES])
    struct.pack_into(">i", head, 8, BATCH_HEADER_BYTES - 12 + len(body))
    struct.pack_into(">i", head, 23, count - 1)
    struct.pack_into(">i", head, 57, count)
    return _patched(bytes(head) + body, 57, ">i", count)


@pytest.mark.parametrize(
    ("data", "kwargs", "error", "code", "message"),
    [
        (GOOD[:-1], {}, CorruptRecordException, 2, "illegal length"),
        (GOOD + b"\x00", {}, CorruptRecordException, 2, "1 bytes after the last whole batch"),
        (_patched(GOOD, 16, ">b", 1), {}, InvalidRecordException, 87, "magic version 2"),
        (GOOD + GOOD, {}, InvalidRecordException, 87, "more than one batch"),
        (b"", {}, InvalidRecordException, 87, "no batches at all"),
        (_patched(GOOD, 0, ">q", 5), {}, InvalidRecordException, 87, "should be 0, but it is 5"),
        (GOOD, {"max_message_bytes": 50}, RecordTooLargeException, 10, "exceeds the maximum"),
        (_patched(GOOD, 17, ">I", 1, fix_crc=False), {}, CorruptRecordException, 2, "crc"),
        (_patched(GOOD, 57, ">i", 3), {}, InvalidRecordException, 87, "Inconsistent batch"),
        (_patched(GOOD, 23, ">i", -1), {}, InvalidRecordException, 87, "invalid offset range"),
        (_patched(GOOD, 21, ">h", 0x20), {}, InvalidRecordException, 87, "control records"),
        (_patched(GOOD, 43, ">q", 9), {}, InvalidRecordException, 87, "Invalid sequence"),
        (_bad_offset_delta(), {}, InvalidRecordException, 87, "offset delta 2"),
        (
            _batch_with_body(b"\x10\x00\x00\x00", count=1),
            {},
            InvalidRecordException,
            87,
            "Invalid record size",
        ),
        (
            build_batch([(None, b"v", ())], timestamp_ms=NOW),
            {"require_keys": True},
            InvalidRecordException,
            87,
            "Compacted topic cannot accept message without key",
        ),
        (
            build_batch([(b"k", b"v", ())], timestamp_ms=NOW - 10_000),
            {"timestamp_before_max_ms": 5_000},
            InvalidTimestampException,
            32,
            "invalid timestamp",
        ),
        (
            build_batch([(b"k", b"v", ())], timestamp_ms=NOW + 3_600_001),
            {},
            InvalidTimestampException,
            32,
            "invalid timestamp",
        ),
        (_patched(GOOD, 21, ">h", 0x08), {}, InvalidTimestampException, 32, "LogAppendTime"),
        (GOOD, {"segment_bytes": 50}, RecordBatchTooLargeException, 18, "segment size of 50"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_validation_refuses_with_kafkas_code(
    data: bytes, kwargs: dict[str, object], error: type[Exception], code: int, message: str
) -> None:
    with pytest.raises(error, match=message) as caught:
        _validate(data, **kwargs)
    assert caught.value.error_code == code  # type: ignore[attr-defined]


def test_timestamp_refusal_names_each_late_record() -> None:
    batch = build_batch(
        [(b"a", b"1", ()), (b"b", b"2", ()), (b"c", b"3", ())],
        timestamp_ms=NOW,
        record_timestamps=[NOW, NOW - 9_000, NOW + 1],
    )
    with pytest.raises(InvalidTimestampException) as caught:
        _validate(batch, timestamp_before_max_ms=5_000)
    assert caught.value.record_errors == (
        (
            1,
            f"Timestamp {NOW - 9_000} of message with offset 1 is out of range. The timestamp "
            f"should be within [{NOW - 5_000}, {NOW + 3_600_000}]",
        ),
    )


def test_log_append_time_topics_skip_the_create_time_bounds() -> None:
    old = build_batch([(b"k", b"v", ())], timestamp_ms=1)
    (header,) = _validate(old, timestamp_type=LOG_APPEND_TIME, timestamp_before_max_ms=0)
    assert header.record_count == 1


def test_a_valid_batch_passes_with_its_header() -> None:
    (header,) = _validate(GOOD)
    assert header == parse_header(GOOD)


def test_varint_encoding_is_kafkas_zig_zag() -> None:
    assert varint_bytes(0) == b"\x00"
    assert varint_bytes(-1) == b"\x01"
    assert varint_bytes(1) == b"\x02"
    assert varint_bytes(63) == b"\x7e"
    assert varint_bytes(64) == b"\x80\x01"
    assert varint_bytes(-(2**63)) == b"\xff" * 9 + b"\x01"


def test_a_compacted_topic_names_each_record_without_a_key() -> None:
    # Kafka's LogValidator: one record error per record without a key, by index, and the
    # message of processRecordErrors (the count and the first three, as Java prints a list).
    records = [(None if i % 4 == 0 else b"k", b"v", ()) for i in range(10)]
    with pytest.raises(InvalidRecordException) as refused:
        _validate(build_batch(records, timestamp_ms=NOW), require_keys=True)
    one = "Compacted topic cannot accept message without key in topic partition t-0"
    assert refused.value.record_errors == ((0, one), (4, one), (8, one))
    assert str(refused.value) == (
        "One or more records have been rejected due to 3 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=0, message='{one}'), "
        f"RecordError(batchIndex=4, message='{one}'), RecordError(batchIndex=8, message='{one}')]"
    )


def test_keys_and_timestamps_wrong_together_are_an_invalid_timestamp() -> None:
    # Each record has one error, its key's first; any timestamp error makes the batch's error
    # INVALID_TIMESTAMP, still naming every record (Kafka's processRecordErrors).
    batch = build_batch([(None, b"v", ()), (b"k", b"v", ())], timestamp_ms=NOW - 10_000)
    with pytest.raises(InvalidTimestampException) as refused:
        _validate(batch, require_keys=True, timestamp_before_max_ms=5_000)
    assert [i for i, _ in refused.value.record_errors] == [0, 1]
    assert refused.value.record_errors[0][1].startswith("Compacted topic cannot accept")
    assert refused.value.record_errors[1][1].startswith("Timestamp ")
