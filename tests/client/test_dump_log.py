"""kafka-dump-log's lines for segments and indexes, against Kafka's ``DumpLogSegments``
format: a batch's fields in Kafka's order, records with ``--deep-iteration`` and
``--print-data-log``, control markers, indexes and their checks, producer snapshots,
transaction indexes, the offsets decoder's JSON, and an incomplete tail."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from crc32c import crc32c

from rackwise.client.dump_files import (
    DumpError,
    IndexProblems,
    dump_offset_index,
    dump_producer_snapshot,
    dump_time_index,
    dump_txn_index,
)
from rackwise.client.dump_log import dump_segment
from rackwise.client.dump_offsets import offsets_key_value
from rackwise.groups.group_metadata import StoredGroup, StoredMember, encode_metadata
from rackwise.groups.offsets import CommittedOffset, encode_group_key, encode_key, encode_value
from rackwise.storage.producer_state import BatchMetadata, ProducerEntry, write_snapshot
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


def _dumped(dump: Callable[..., None], path: Path, **checks: bool) -> tuple[list[str], list[str]]:
    lines: list[str] = []
    problems = IndexProblems()
    dump(path, lines.append, problems, **checks)
    errors: list[str] = []
    problems.report(errors.append)
    return lines, errors


def test_indexes_are_printed_and_checked_in_kafkas_words(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    second = struct.unpack_from(">i", segment.read_bytes(), 8)[0] + 12  # the control batch
    index = tmp_path / "00000000000000000000.index"
    index.write_bytes(struct.pack(">iiii", 1, 0, 2, second))
    times = tmp_path / "00000000000000000000.timeindex"
    times.write_bytes(struct.pack(">qiqi", T + 5, 1, T + 9, 2))
    assert _dumped(dump_offset_index, index) == (
        ["offset: 1 position: 0", f"offset: 2 position: {second}"], [],
    )  # fmt: skip
    assert _dumped(dump_time_index, times) == (
        [f"timestamp: {T + 5} offset: 1", f"timestamp: {T + 9} offset: 2"], [],
    )  # fmt: skip
    # An entry naming the batch's first offset, and a timestamp that is not the batch's largest.
    index.write_bytes(struct.pack(">iiii", 1, 0, 3, second))
    times.write_bytes(struct.pack(">qiqi", T + 9, 1, T + 9, 2))
    lines, errors = _dumped(dump_offset_index, index, verify_only=True)
    assert (lines, errors) == (
        [], [f"Mismatches in :{index.absolute()}", "  Index offset: 3, log offset: 2"],
    )  # fmt: skip
    assert _dumped(dump_time_index, times, verify_only=True)[1] == [
        f"Found timestamp mismatch in :{times.absolute()}",
        f"  Index timestamp: {T + 9}, log timestamp: {T + 5}",
        f"Found out of order timestamp in :{times.absolute()}",
        f"  Index timestamp: {T + 9}, Previously indexed timestamp: {T + 9}",
    ]
    empty = tmp_path / "00000000000000000007.index"
    empty.write_bytes(b"")
    assert _dumped(dump_offset_index, empty) == ([f"{empty} is empty."], [])


def test_the_sanity_check_is_the_brokers(tmp_path: Path) -> None:
    index = tmp_path / "00000000000000000100.index"
    index.write_bytes(struct.pack(">ii", 5, 0))
    assert _dumped(dump_offset_index, index, sanity_only=True)[0] == [
        f"{index} passed sanity check."
    ]
    index.write_bytes(struct.pack(">iii", 5, 0, 7))
    with pytest.raises(DumpError) as refused:
        _dumped(dump_offset_index, index, sanity_only=True)
    assert str(refused.value) == (
        f"Index file {index.absolute()} is corrupt, found 12 bytes which is neither positive "
        "nor a multiple of 8"
    )
    times = tmp_path / "00000000000000000100.timeindex"
    times.write_bytes(struct.pack(">qiqi", T, 5, T - 1, 6))
    with pytest.raises(DumpError) as refused:
        _dumped(dump_time_index, times, sanity_only=True)
    assert str(refused.value) == (
        f"Corrupt time index found, time index file ({times.absolute()}) has non-zero size but "
        f"the last timestamp is {T - 1} which is less than the first timestamp {T}"
    )


def test_skip_record_metadata_and_max_bytes(tmp_path: Path) -> None:
    path = _segment(tmp_path)
    first = struct.unpack_from(">i", path.read_bytes(), 8)[0] + 12
    lines: list[str] = []
    dump_segment(path, lines.append, deep=True, print_data=True, skip_metadata=True)
    assert lines[2:4] == ["| key: k1 payload: v1", " payload: v2"]
    assert lines[5] == ""  # a control record has nothing but its metadata
    lines.clear()
    dump_segment(path, lines.append, deep=False, print_data=False, max_bytes=first + 10)
    assert [line.split(" ")[0] for line in lines] == ["Log", "baseOffset:"]


def test_producer_snapshots_and_transaction_indexes(tmp_path: Path) -> None:
    snapshot = tmp_path / "00000000000000000010.snapshot"
    write_snapshot(snapshot, [
        ProducerEntry(7, 1, (BatchMetadata(0, 9, 0, 9, T),), T, current_txn_first_offset=4),
        ProducerEntry(8, 0, (), T + 1),
    ])  # fmt: skip
    lines: list[str] = []
    dump_producer_snapshot(snapshot, lines.append, lines.append)
    assert lines == [
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong[4] lastTimestamp: {T} firstSequence: 0 lastSequence: 9 lastOffset: 9 "
        f"offsetDelta: 9 timestamp: {T}",
        "producerId: 8 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        f"OptionalLong.empty lastTimestamp: {T + 1} ",
    ]
    snapshot.write_bytes(snapshot.read_bytes()[:-1])
    lines.clear()
    dump_producer_snapshot(snapshot, lines.append, lines.append)
    assert lines and lines[0].startswith("Snapshot failed schema validation")
    txns = tmp_path / "00000000000000000010.txnindex"
    txns.write_bytes(struct.pack(">hqqqq", 0, 7, 10, 14, 12) + b"\x00" * 5)
    lines.clear()
    dump_txn_index(txns, lines.append)
    assert lines == ["version: 0 producerId: 7 firstOffset: 10 lastOffset: 14 lastStableOffset: 12"]


def test_the_offsets_decoder_prints_kafkas_json() -> None:
    key = encode_key("g", "t", 0)
    value = encode_value(CommittedOffset(10, 3, "m", T))
    assert offsets_key_value(5, key, value) == (
        '{"type":"1","data":{"group":"g","topic":"t","partition":0}}',
        f'{{"version":"3","data":{{"offset":10,"leaderEpoch":3,"metadata":"m","commitTimestamp":'
        f"{T}}}}}",
    )
    assert offsets_key_value(5, key, None)[1] == "<DELETE>"
    subscription = struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", -1)
    assignment = (
        struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">iii", 2, 0, 1)
        + struct.pack(">i", -1)
    )  # fmt: skip
    member = StoredMember("m1", None, "c", "/127.0.0.1", 300000, 45000, subscription, assignment)
    group = encode_metadata(StoredGroup("consumer", 1, "range", "m1", T, (member,)))
    shown_key, payload = offsets_key_value(6, encode_group_key("g"), group)
    assert shown_key == '{"type":"2","data":{"group":"g"}}'
    assert payload == (
        '{"version":"3","data":{"protocolType":"consumer","generation":1,"protocol":"range",'
        f'"leader":"m1","currentStateTimestamp":{T},"members":[{{"memberId":"m1",'
        '"groupInstanceId":null,"clientId":"c","clientHost":"/127.0.0.1",'
        '"rebalanceTimeout":300000,"sessionTimeout":45000,"subscription":{"topics":["t"],'
        '"userData":null},"assignment":{"assignedPartitions":[{"topic":"t","partitions":[0,1]}],'
        '"userData":null}}]}}'
    )
    assert offsets_key_value(7, struct.pack(">h", 3) + b"xx", b"") == (
        "Unknown record type 3 at offset 7, skipping.", None,
    )  # fmt: skip
    assert offsets_key_value(8, key, b"\x00\x03")[0].startswith("Error at offset 8, skipping. ")
    with pytest.raises(DumpError) as refused:
        offsets_key_value(9, None, value)
    assert str(refused.value) == (
        "Failed to decode message at offset 9 using offset topic decoder (message had a "
        "missing key)"
    )
