"""The compiled record walk agrees with the interpreted one: the same summary for every batch it
accepts, and it accepts no batch the interpreted walk refuses."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.storage.batch import BATCH_HEADER_BYTES, build_batch, parse_header
from rackwise.storage.batch_records import (
    RecordsSummary,
    encode_record,
    walk_records,
    walk_records_interpreted,
)
from rackwise.storage.errors import InvalidRecordException
from rackwise.storage.records_kernel import (
    COMPILED_MIN_RECORDS,
    SCAN_OK,
    SCAN_UNSURE,
    _scan_records,
    as_array,
    scan_records,
)
from tests.storage.test_batch import NOW, records_strategy

Rows = list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]
deltas = st.one_of(
    st.integers(-5, 5),
    st.integers(-(1 << 40), 1 << 40),
    st.sampled_from([-1 - NOW, -NOW, 1 << 61]),  # a record at NO_TIMESTAMP, at 0, far ahead
)


def interpreted(data: bytes, count: int, base: int) -> RecordsSummary | str:
    try:
        return walk_records_interpreted(data, BATCH_HEADER_BYTES, len(data), count, base)
    except InvalidRecordException as e:
        return str(e)


def compiled(data: bytes, count: int, base: int) -> tuple[int, int, int, bool]:
    status, lo, hi, null_key = scan_records()(
        as_array(data), BATCH_HEADER_BYTES, len(data), count, base
    )
    return int(status), int(lo), int(hi), bool(null_key)


def batch_of(rows: Rows, stamps: list[int]) -> bytes:
    return build_batch(rows, timestamp_ms=NOW, record_timestamps=[NOW + d for d in stamps])


@settings(max_examples=300, deadline=None)
@given(rows=records_strategy, data=st.data())
def test_the_kernel_gives_the_interpreted_summary_of_every_valid_batch(
    rows: Rows,
    data: st.DataObject,
) -> None:
    stamps = data.draw(st.lists(deltas, min_size=len(rows), max_size=len(rows)))
    batch = batch_of(rows, stamps)
    base = parse_header(batch).base_timestamp
    expected = interpreted(batch, len(rows), base)
    assert isinstance(expected, RecordsSummary)
    assert compiled(batch, len(rows), base) == (
        SCAN_OK,
        expected.min_timestamp,
        expected.max_timestamp,
        expected.has_null_key,
    )


@settings(max_examples=600, deadline=None)
@given(rows=records_strategy, data=st.data())
def test_the_kernel_accepts_no_damaged_batch_the_interpreted_walk_refuses(
    rows: Rows,
    data: st.DataObject,
) -> None:
    """Bytes overwritten, cut off or added, or a wrong record count: where the kernel says
    SCAN_OK, the interpreted walk accepts the batch with the same summary."""
    batch = bytearray(batch_of(rows, [0] * len(rows)))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(BATCH_HEADER_BYTES, len(batch) - 1))
        batch[at] = data.draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF, batch[at] ^ 1]))
    cut = data.draw(st.integers(-3, 3))
    damaged = bytes(batch[:cut] if cut < 0 else batch + b"\x00" * cut)
    count = len(rows) + data.draw(st.integers(-1, 1))
    expected = interpreted(damaged, count, NOW)
    status, lo, hi, null_key = compiled(damaged, count, NOW)
    if status == SCAN_OK:
        assert expected == RecordsSummary(lo, hi, null_key)
    else:
        assert status == SCAN_UNSURE


def test_the_kernel_leaves_a_ten_byte_timestamp_delta_to_the_interpreted_walk() -> None:
    """Kafka reads a varlong of up to 10 bytes; the kernel reads 9 (its sums stay in int64)."""
    record = encode_record(0, -(1 << 62) - 1, b"k", b"v", ())
    data = bytes(BATCH_HEADER_BYTES) + record
    summary = interpreted(data, 1, 0)
    assert summary == RecordsSummary(-(1 << 62) - 1, -1, False)  # max: above -1 only, as Kafka
    assert compiled(data, 1, 0)[0] == SCAN_UNSURE
    assert walk_records(data, BATCH_HEADER_BYTES, len(data), 1, 0) == summary


def test_the_interpreted_form_of_the_kernel_runs_the_same_statements() -> None:
    batch = batch_of([(None, b"v" * 10, [("h", None)]), (b"k", None, [])], [3, -2])
    array = as_array(batch)
    base = parse_header(batch).base_timestamp
    assert _scan_records(array, BATCH_HEADER_BYTES, len(batch), 2, base) == (
        SCAN_OK,
        NOW - 2,
        NOW + 3,
        True,
    )
    assert _scan_records(array, BATCH_HEADER_BYTES, len(batch) - 1, 2, base)[0] == SCAN_UNSURE


def test_a_large_damaged_batch_is_refused_in_kafkas_words_by_the_compiled_path() -> None:
    scan_records()  # loaded: walk_records now takes the compiled path for large batches
    rows: Rows = [(None, b"x" * 100, []) for _ in range(COMPILED_MIN_RECORDS)]
    batch = bytearray(batch_of(rows, [0] * len(rows)))
    h = parse_header(bytes(batch))
    assert walk_records(bytes(batch), BATCH_HEADER_BYTES, h.end, h.record_count, NOW) == (
        RecordsSummary(NOW, NOW, True)
    )
    # The first record: length (2 bytes), attributes, timestamp delta, offset delta (now 2).
    batch[BATCH_HEADER_BYTES + 4] = 0x04
    with pytest.raises(InvalidRecordException, match="Record 0 of the batch has offset delta 2"):
        walk_records(bytes(batch), BATCH_HEADER_BYTES, h.end, h.record_count, NOW)
