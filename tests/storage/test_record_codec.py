"""Records inside v2 batches and the compression codecs, against Kafka's layout and
kafka-python's own codec and batch code."""

from __future__ import annotations

import struct
import types

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from rackwise.storage.errors import CorruptRecordException, InvalidRecordException
from rackwise.storage.record_codec import (
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    NO_COMPRESSION,
    SNAPPY,
    XERIAL_HEADER,
    ZSTD,
    Record,
    build_batch_from_records,
    compress,
    decompress,
    encode_record,
    iter_records,
    read_zigzag_varint,
    require_keys,
    xxh32,
    zigzag_varint,
)

CODECS = (NO_COMPRESSION, GZIP, SNAPPY, LZ4, ZSTD)


@pytest.fixture
def kafka_python_snappy(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python's xerial framing, with cramjam's raw snappy as its block codec (the
    python-snappy package it would use is not installed)."""
    shim = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(data)),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(data)),
    )
    monkeypatch.setattr(kafka_codec, "snappy", shim)


# --------------------------------------------------------------------------- golden bytes


def test_golden_batch_built_by_hand_per_kafka_layout() -> None:
    records = [
        Record(16, 1000, b"k", b"v"),
        Record(17, 1005, None, None, (("h", b"x"),)),
    ]
    built = build_batch_from_records(
        records,
        base_offset=16,
        producer_id=7,
        producer_epoch=1,
        base_sequence=5,
        partition_leader_epoch=3,
    )
    rec0 = bytes.fromhex("10000000026b027600")
    rec1 = bytes.fromhex("14000a0201010202680278")
    after_crc = (
        struct.pack(">h", 0)  # attributes: no compression, CreateTime
        + struct.pack(">i", 1)  # last offset delta
        + struct.pack(">q", 1000)  # base timestamp
        + struct.pack(">q", 1005)  # max timestamp
        + struct.pack(">q", 7)  # producer id
        + struct.pack(">h", 1)  # producer epoch
        + struct.pack(">i", 5)  # base sequence
        + struct.pack(">i", 2)  # record count
        + rec0
        + rec1
    )
    expected = (
        struct.pack(">q", 16)
        + struct.pack(">i", 4 + 1 + 4 + len(after_crc))  # batch length
        + struct.pack(">i", 3)  # partition leader epoch
        + b"\x02"  # magic
        + struct.pack(">I", crc32c(after_crc))
        + after_crc
    )
    assert built == expected
    assert len(built) == 61 + len(rec0) + len(rec1)
    assert list(iter_records(built)) == records
    theirs = DefaultRecordBatch(built)
    assert theirs.validate_crc()
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in theirs] == [
        (16, 1000, b"k", b"v", []),
        (17, 1005, None, None, [("h", b"x")]),
    ]


def test_record_layout_matches_kafka_default_record() -> None:
    assert encode_record(0, 0, b"k", b"v") == bytes.fromhex("10000000026b027600")
    assert encode_record(300, -1, None, b"") == bytes.fromhex("0e0001d804010000")


def test_varints_zigzag_as_kafka_byte_utils() -> None:
    assert zigzag_varint(0) == b"\x00"
    assert zigzag_varint(-1) == b"\x01"
    assert zigzag_varint(1) == b"\x02"
    assert zigzag_varint(-64) == b"\x7f"
    assert zigzag_varint(64) == b"\x80\x01"
    assert zigzag_varint(2**31 - 1) == b"\xfe\xff\xff\xff\x0f"
    assert zigzag_varint(-(2**63)) == b"\xff" * 9 + b"\x01"


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trip(value: int) -> None:
    encoded = zigzag_varint(value)
    assert read_zigzag_varint(encoded + b"\x99", 0) == (value, len(encoded))


def test_xxh32_known_vectors() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


# --------------------------------------------------------------------------- codecs

payloads = st.one_of(
    st.binary(max_size=2000),
    st.binary(min_size=1, max_size=40).map(lambda b: b * 4000),  # spans several blocks
)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(CODECS), payloads)
def test_codec_round_trip(codec: int, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_lz4_frame_as_kafka_writes_it() -> None:
    data = bytes(range(256)) * 600  # 153,600 bytes: three 64 KiB blocks
    frame = compress(LZ4, data)
    assert frame[:4] == bytes.fromhex("04224d18")  # magic, little-endian
    assert frame[4] == 0x60  # version 01, independent blocks, no checksums, no content size
    assert frame[5] == 0x40  # 64 KiB blocks
    assert frame[6] == (xxh32(frame[4:6]) >> 8) & 0xFF
    assert frame[-4:] == b"\x00\x00\x00\x00"
    pos, blocks = 7, []
    while True:
        (size,) = struct.unpack_from("<I", frame, pos)
        if size == 0:
            break
        blocks.append(size & 0x7FFFFFFF)
        pos += 4 + (size & 0x7FFFFFFF)
    assert len(blocks) == 3
    assert pos + 4 == len(frame)


def test_lz4_reads_frames_of_other_writers() -> None:
    data = b"linked blocks and checksums " * 5000
    assert decompress(LZ4, bytes(cramjam.lz4.compress(data))) == data


def test_zstd_reads_frames_without_content_size() -> None:
    streaming = cramjam.zstd.Compressor()
    streaming.compress(b"zstd-jni streams " * 100)
    frame = bytes(streaming.finish())
    assert frame[4] & 0xC0 == 0  # frame header descriptor: no content size field
    assert decompress(ZSTD, frame) == b"zstd-jni streams " * 100


def test_snappy_writes_xerial_and_reads_raw_blocks() -> None:
    data = b"abc" * 30000  # 90,000 bytes: three 32 KiB xerial blocks
    framed = compress(SNAPPY, data)
    assert framed.startswith(XERIAL_HEADER)
    (first_block,) = struct.unpack_from(">i", framed, 16)
    assert bytes(cramjam.snappy.decompress_raw(framed[20 : 20 + first_block])) == data[:32768]
    assert decompress(SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


@pytest.mark.usefixtures("kafka_python_snappy")
def test_snappy_interoperates_with_kafka_python() -> None:
    data = b"kafka-python xerial " * 4000
    assert decompress(SNAPPY, kafka_codec.snappy_encode(data)) == data
    assert decompress(SNAPPY, kafka_codec.snappy_encode(data, xerial_compatible=False)) == data
    assert kafka_codec.snappy_decode(compress(SNAPPY, data)) == data


def test_gzip_interoperates_with_kafka_python() -> None:
    data = b"gzip from kafka-python " * 1000
    assert decompress(GZIP, kafka_codec.gzip_encode(data)) == data
    assert kafka_codec.gzip_decode(compress(GZIP, data)) == data


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_garbage_does_not_decompress(codec: int) -> None:
    with pytest.raises(CorruptRecordException, match="Failed to decompress record stream"):
        decompress(codec, b"\x00\x01 certainly not compressed \xff" * 3)


def test_unknown_codec_refused() -> None:
    with pytest.raises(CorruptRecordException, match="Unknown compression type id: 5"):
        decompress(5, b"")


# --------------------------------------------------------------------------- batches

keys = st.none() | st.binary(max_size=20)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3)


@st.composite
def record_lists(draw: st.DrawFn) -> tuple[int, list[Record]]:
    base_offset = draw(st.integers(min_value=0, max_value=2**40))
    gaps = draw(st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=12))
    offset, records = base_offset + gaps[0], []
    base_ts = draw(st.integers(min_value=0, max_value=2**41))
    for gap in [*gaps[1:], 0]:
        ts = base_ts + draw(st.integers(min_value=-(10**6), max_value=10**6))
        records.append(Record(offset, ts, draw(keys), draw(keys), tuple(draw(headers))))
        offset += gap + 1
    return base_offset, records


@settings(max_examples=60, deadline=None)
@given(record_lists(), st.sampled_from(CODECS), st.integers(min_value=0, max_value=5))
def test_batch_round_trip(
    drawn: tuple[int, list[Record]], codec: int, extra_last_delta: int
) -> None:
    base_offset, records = drawn
    last_delta = records[-1].offset - base_offset + extra_last_delta
    batch = build_batch_from_records(
        records, base_offset=base_offset, compression=codec, last_offset_delta=last_delta
    )
    assert list(iter_records(batch)) == records
    (attributes,) = struct.unpack_from(">h", batch, 21)
    assert attributes & 7 == codec
    (stored_last_delta,) = struct.unpack_from(">i", batch, 23)
    assert stored_last_delta == last_delta
    (stored_crc,) = struct.unpack_from(">I", batch, 17)
    assert stored_crc == crc32c(batch[21:])


@settings(max_examples=30, deadline=None)
@given(record_lists(), st.sampled_from([NO_COMPRESSION, GZIP]))
def test_kafka_python_reads_our_batches_and_we_read_theirs(
    drawn: tuple[int, list[Record]], codec: int
) -> None:
    base_offset, records = drawn
    ours = build_batch_from_records(records, base_offset=base_offset, compression=codec)
    theirs = DefaultRecordBatch(ours)
    assert theirs.validate_crc()
    got = [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in theirs]
    assert got == [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]

    builder = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 10**7)
    for delta, record in enumerate(records):
        builder.append(delta, record.timestamp, record.key, record.value, list(record.headers))
    decoded = list(iter_records(bytes(builder.build())))
    assert [(r.offset, r.key, r.value, r.headers) for r in decoded] == [
        (delta, r.key, r.value, r.headers) for delta, r in enumerate(records)
    ]
    assert [r.timestamp for r in decoded] == [r.timestamp for r in records]


@pytest.mark.usefixtures("kafka_python_snappy")
def test_kafka_python_snappy_batch_decodes() -> None:
    builder = DefaultRecordBatchBuilder(2, SNAPPY, False, -1, -1, -1, 10**7)
    for i in range(200):
        builder.append(i, 5000 + i, b"key-%d" % (i % 7), b"value " * 20, [])
    batch = bytes(builder.build())
    assert batch[22] & 7 == SNAPPY
    decoded = list(iter_records(batch))
    assert [r.key for r in decoded] == [b"key-%d" % (i % 7) for i in range(200)]
    assert decoded[-1] == Record(199, 5199, b"key-3", b"value " * 20)


def test_log_append_time_gives_every_record_the_batch_time() -> None:
    records = [Record(0, 10, b"a", b"1"), Record(1, 20, b"b", b"2")]
    batch = build_batch_from_records(
        records, base_offset=0, timestamp_type=LOG_APPEND_TIME, max_timestamp=99_000
    )
    assert batch[22] & 0x08
    assert [r.timestamp for r in iter_records(batch)] == [99_000, 99_000]


def test_empty_batch_is_kafkas_empty_header() -> None:
    batch = build_batch_from_records(
        [],
        base_offset=40,
        last_offset_delta=9,
        max_timestamp=777,
        producer_id=3,
        producer_epoch=2,
        base_sequence=11,
        compression=ZSTD,
    )
    assert len(batch) == 61
    fields = struct.unpack_from(">qiibIhiqqqhii", batch)
    assert fields[5:] == (0, 9, 777, 777, 3, 2, 11, 0)
    assert list(iter_records(batch)) == []


def test_delete_horizon_keeps_record_timestamps() -> None:
    records = [Record(5, 1_000, b"a", None)]
    batch = build_batch_from_records(records, base_offset=5, delete_horizon_ms=90_000)
    assert batch[22] & 0x40
    assert struct.unpack_from(">q", batch, 27) == (90_000,)
    assert list(iter_records(batch)) == records


def test_offsets_must_increase() -> None:
    with pytest.raises(ValueError, match="do not increase"):
        build_batch_from_records([Record(3, 0, b"a", b""), Record(3, 0, b"b", b"")], base_offset=0)


def test_truncated_record_is_corrupt() -> None:
    batch = build_batch_from_records([Record(0, 0, b"key", b"value")], base_offset=0)
    cut = bytearray(batch[:-2])
    struct.pack_into(">i", cut, 8, len(cut) - 12)
    with pytest.raises(CorruptRecordException, match="Invalid record size"):
        list(iter_records(bytes(cut)))


def test_length_field_must_match() -> None:
    batch = build_batch_from_records([Record(0, 0, b"key", b"value")], base_offset=0)
    size = len(batch)
    with pytest.raises(
        CorruptRecordException, match=f"says {size} bytes, the batch has {size + 1}"
    ):
        list(iter_records(batch + b"\x00"))


def test_short_batch_is_corrupt() -> None:
    with pytest.raises(CorruptRecordException, match="smaller than the minimum"):
        list(iter_records(b"\x00" * 60))


def test_leftover_bytes_are_corrupt() -> None:
    batch = bytearray(build_batch_from_records([Record(0, 0, b"k", b"v")], base_offset=0))
    batch += b"\x00"
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    with pytest.raises(CorruptRecordException, match="records still remaining"):
        list(iter_records(bytes(batch)))


@pytest.mark.parametrize("codec", CODECS)
def test_require_keys(codec: int) -> None:
    keyed = build_batch_from_records(
        [Record(0, 0, b"k", b"v"), Record(1, 0, b"j", None)], base_offset=0, compression=codec
    )
    require_keys(keyed)
    unkeyed = build_batch_from_records(
        [Record(0, 0, b"k", b"v"), Record(1, 0, None, b"v")], base_offset=0, compression=codec
    )
    require_keys(keyed + keyed)
    with pytest.raises(InvalidRecordException, match="cannot accept message without key") as e:
        require_keys(keyed + unkeyed)
    assert e.value.error_code == 87
