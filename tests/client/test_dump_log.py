"""kafka-dump-log's lines for segments and indexes, against Kafka's ``DumpLogSegments``
format: a batch's fields in Kafka's order, records with ``--deep-iteration`` and
``--print-data-log``, control markers, indexes, and an incomplete tail."""

from __future__ import annotations

import struct
from pathlib import Path

from crc32c import crc32c

from rackwise.client.dump_log import dump_offset_index, dump_segment, dump_time_index
from rackwise.storage.record_codec import Record, build_batch_from_records

T = 1700000000000


def _segment(tmp_path: Path) -> Path:
    plain = build_batch_from_records(
        [Record(0, T, b"k1", b"v1", (("h", b"x"),)), Record(1, T + 5, None, b"v2")],
        base_offset=0, producer_id=7, producer_epoch=1, base_sequence=3,
        partition_leader_epoch=2,
    )  # fmt: skip
    control = build_batch_from_records(
        [Record(2, T + 9, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5))],
        base_offset=2, producer_id=7, producer_epoch=1, is_transactional=True, is_control=True,
    )  # fmt: skip
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(plain + control + b"\x00" * 17)
    return path


def test_batches_and_records_are_printed_in_kafkas_words(tmp_path: Path) -> None:
    path = _segment(tmp_path)
    data = path.read_bytes()
    lines: list[str] = []
    dump_segment(path, lines.append, deep=True, print_data=True)
    size = struct.unpack_from(">i", data, 8)[0] + 12
    crc = crc32c(data[21:size])
    assert lines[:3] == [
        "Log starting offset: 0",
        "baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 3 lastSequence: 4 producerId: 7 "
        "producerEpoch: 1 partitionLeaderEpoch: 2 isTransactional: false isControl: false "
        f"deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: {T + 5} size: {size} "
        f"magic: 2 compresscodec: none crc: {crc} isvalid: true",
        f"| offset: 0 CreateTime: {T} keySize: 2 valueSize: 2 sequence: 3 headerKeys: [h] "
        "key: k1 payload: v1",
    ]
    assert lines[3] == (
        f"| offset: 1 CreateTime: {T + 5} keySize: -1 valueSize: 2 sequence: 4 headerKeys: [] "
        "payload: v2"
    )
    assert " isTransactional: true isControl: true " in lines[4]
    assert lines[5] == (
        f"| offset: 2 CreateTime: {T + 9} keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 5"
    )
    assert lines[6:] == ["Found 17 invalid bytes at the end of 00000000000000000000.log"]


def test_shallow_iteration_prints_batches_only(tmp_path: Path) -> None:
    lines: list[str] = []
    dump_segment(_segment(tmp_path), lines.append, deep=False, print_data=False)
    assert [line.split(" ")[0] for line in lines] == ["Log", "baseOffset:", "baseOffset:", "Found"]


def test_indexes_are_printed_in_kafkas_words(tmp_path: Path) -> None:
    index = tmp_path / "00000000000000000100.index"
    index.write_bytes(struct.pack(">iiii", 5, 4096, 12, 8192))
    times = tmp_path / "00000000000000000100.timeindex"
    times.write_bytes(struct.pack(">qiqi", T, 5, T + 1, 12))
    lines: list[str] = []
    dump_offset_index(index, lines.append)
    dump_time_index(times, lines.append)
    assert lines == [
        "offset: 105 position: 4096",
        "offset: 112 position: 8192",
        f"timestamp: {T} offset: 105",
        f"timestamp: {T + 1} offset: 112",
    ]
    empty = tmp_path / "00000000000000000000.index"
    empty.write_bytes(b"")
    lines.clear()
    dump_offset_index(empty, lines.append)
    assert lines == [f"{empty} is empty."]
