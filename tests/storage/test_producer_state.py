"""Idempotent producer state: Kafka's sequence and epoch rules, snapshots, expiry."""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from rackwise.storage.batch import BatchHeader, parse_header
from rackwise.storage.errors import (
    InvalidProducerEpochException,
    InvalidTxnStateException,
    OutOfOrderSequenceException,
)
from rackwise.storage.producer_state import (
    MAX_SEQUENCE,
    BatchMetadata,
    DuplicateBatch,
    LastEntry,
    ProducerEntry,
    ProducerStateManager,
    decode_snapshot,
    decrement_sequence,
    encode_snapshot,
    increment_sequence,
    snapshot_name,
)
from rackwise.storage.record_codec import Record, build_batch_from_records

EXPIRATION_MS = 86_400_000
TRANSACTIONAL = 0x10
CONTROL = 0x20


def header(
    pid: int,
    epoch: int,
    seq: int,
    count: int = 1,
    *,
    offset: int = 0,
    ts: int = 1_000,
    attributes: int = 0,
) -> BatchHeader:
    return BatchHeader(
        position=0,
        base_offset=offset,
        batch_length=49,
        partition_leader_epoch=0,
        magic=2,
        crc=0,
        attributes=attributes,
        last_offset_delta=count - 1,
        base_timestamp=ts,
        max_timestamp=ts,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        record_count=count,
    )


@pytest.fixture
def psm(tmp_path: Path) -> ProducerStateManager:
    return ProducerStateManager(tmp_path / "orders-0")


@pytest.fixture(autouse=True)
def _log_dir(tmp_path: Path) -> None:
    (tmp_path / "orders-0").mkdir()


def append(psm: ProducerStateManager, h: BatchHeader, now_ms: int = 1_000) -> DuplicateBatch | None:
    found = psm.check(h, is_leader=True)
    if found is None:
        psm.update(h, now_ms=now_ms)
    return found


def test_real_batch_header_drives_the_state(psm: ProducerStateManager) -> None:
    batch = build_batch_from_records(
        [Record(40 + i, 5_000 + i, b"k", b"v") for i in range(3)],
        base_offset=40,
        producer_id=9,
        producer_epoch=2,
        base_sequence=0,
    )
    h = parse_header(batch)
    assert psm.check(h, is_leader=True) is None
    psm.update(h, now_ms=0)
    assert psm.last_entry(9) == LastEntry(2, 2, 42)
    assert psm.map_end_offset == 43
    assert psm.check(h, is_leader=True) == DuplicateBatch(40, 42, 5_002)


def test_duplicate_of_any_of_the_last_five(psm: ProducerStateManager) -> None:
    for i in range(6):
        assert append(psm, header(1, 0, i * 2, 2, offset=10 * i, ts=100 + i)) is None
    # The first batch (seq 0-1) has been pushed out; 2-3 .. 10-11 are remembered.
    assert psm.check(header(1, 0, 2, 2), is_leader=True) == DuplicateBatch(10, 11, 101)
    assert psm.check(header(1, 0, 10, 2), is_leader=True) == DuplicateBatch(50, 51, 105)
    with pytest.raises(OutOfOrderSequenceException) as e:
        psm.check(header(1, 0, 0, 2), is_leader=True)
    assert e.value.error_code == 45
    assert "0 (incoming seq. number), 11 (current end sequence number)" in str(e.value)


def test_gap_is_out_of_order(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0, 5))
    with pytest.raises(OutOfOrderSequenceException, match=r"partition orders-0: 7 \(incoming"):
        psm.check(header(1, 0, 7), is_leader=True)
    assert psm.check(header(1, 0, 5), is_leader=True) is None


def test_lower_epoch_is_invalid_producer_epoch(psm: ProducerStateManager) -> None:
    append(psm, header(1, 3, 0))
    with pytest.raises(InvalidProducerEpochException) as e:
        psm.check(header(1, 2, 1, offset=8), is_leader=True)
    assert e.value.error_code == 47
    assert str(e.value) == (
        "Epoch of producer 1 at offset 8 in orders-0 is 2, which is smaller than the last "
        "seen epoch 3"
    )


def test_new_epoch_starts_at_sequence_zero(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0, 3))
    with pytest.raises(OutOfOrderSequenceException, match="Invalid sequence number for new epoch"):
        psm.check(header(1, 1, 3), is_leader=True)
    assert append(psm, header(1, 1, 0, offset=3)) is None
    assert psm.last_entry(1) == LastEntry(1, 0, 3)
    # The old epoch's batches are forgotten: its retry is now a fenced epoch.
    with pytest.raises(InvalidProducerEpochException):
        psm.check(header(1, 0, 0, 3), is_leader=True)


def test_unknown_producer_may_start_anywhere(psm: ProducerStateManager) -> None:
    assert psm.check(header(5, 4, 1234), is_leader=True) is None
    assert psm.check_batches([header(5, 4, 1234), header(5, 4, 99)], is_leader=True) is None


def test_sequence_wraps_at_int_max(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, MAX_SEQUENCE - 1, 1))
    wrap = header(1, 0, MAX_SEQUENCE, 3, offset=1)
    assert wrap.last_sequence == 1
    assert append(psm, wrap) is None
    assert psm.check(header(1, 0, 2, offset=4), is_leader=True) is None
    assert psm.check(wrap, is_leader=True) == DuplicateBatch(1, 3, 1_000)


def test_follower_skips_sequence_checks(
    psm: ProducerStateManager, caplog: pytest.LogCaptureFixture
) -> None:
    append(psm, header(1, 2, 0))
    assert psm.check(header(1, 2, 50), is_leader=False) is None
    with caplog.at_level(logging.WARNING, logger="rackwise.storage"):
        assert psm.check(header(1, 1, 0), is_leader=False) is None
    assert "is 1, which is smaller than the last seen epoch 2" in caplog.text


def test_batches_of_one_request_are_checked_in_order(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0, 2))
    assert psm.check_batches([header(1, 0, 2, 2), header(1, 0, 4, 1)], is_leader=True) is None
    with pytest.raises(OutOfOrderSequenceException):
        psm.check_batches([header(1, 0, 2, 2), header(1, 0, 5, 1)], is_leader=True)
    # Checking changed nothing.
    assert psm.last_entry(1) == LastEntry(0, 1, 1)


def test_non_idempotent_batches_only_move_the_map_end(psm: ProducerStateManager) -> None:
    h = header(-1, -1, -1, 4, offset=20)
    assert psm.check(h, is_leader=True) is None
    psm.update(h, now_ms=0)
    assert psm.active_producers == {}
    assert psm.map_end_offset == 24


def test_transactional_then_plain_write_is_invalid_txn_state(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0, attributes=TRANSACTIONAL, offset=5))
    entry = psm.entry(1)
    assert entry is not None and entry.current_txn_first_offset == 5
    with pytest.raises(InvalidTxnStateException) as e:
        psm.check(header(1, 0, 1, offset=6), is_leader=True)
    assert e.value.error_code == 48
    psm.update(header(1, 0, -1, attributes=CONTROL | TRANSACTIONAL, offset=6), now_ms=0)
    entry = psm.entry(1)
    assert entry is not None and not entry.has_open_transaction
    assert psm.check(header(1, 0, 1, offset=7), is_leader=True) is None


def test_expiry(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0, ts=1_000))
    append(psm, header(2, 0, 0, ts=5_000, offset=1))
    psm.remove_expired(1_000 + EXPIRATION_MS - 1)
    assert set(psm.active_producers) == {1, 2}
    psm.remove_expired(1_000 + EXPIRATION_MS)
    assert set(psm.active_producers) == {2}


def test_batch_without_timestamp_uses_now(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0, ts=-1), now_ms=50_000)
    entry = psm.entry(1)
    assert entry is not None and entry.last_timestamp == 50_000


# --------------------------------------------------------------------------- snapshots


def test_snapshot_golden_bytes(psm: ProducerStateManager) -> None:
    append(psm, header(7, 1, 10, 3, offset=100, ts=1_700_000_000_000))
    append(psm, header(3, 0, 0, 1, offset=103, ts=1_700_000_000_500))
    path = psm.take_snapshot(104)
    assert path.name == "00000000000000000104.snapshot"
    entries = (
        struct.pack(">i", 2)
        # producer 3: epoch 0, last seq 0, last offset 103, offset delta 0, timestamp,
        # coordinator epoch -1, no open transaction (-1)
        + struct.pack(">qhiqiqiq", 3, 0, 0, 103, 0, 1_700_000_000_500, -1, -1)
        + struct.pack(">qhiqiqiq", 7, 1, 12, 102, 2, 1_700_000_000_000, -1, -1)
    )
    expected = struct.pack(">hI", 1, crc32c(entries)) + entries
    assert path.read_bytes() == expected
    assert expected.hex() == (
        "0001"
        "ad18e0f7"
        "00000002"
        "0000000000000003"
        "0000"
        "00000000"
        "0000000000000067"
        "00000000"
        "0000018bcfe569f4"
        "ffffffff"
        "ffffffffffffffff"
        "0000000000000007"
        "0001"
        "0000000c"
        "0000000000000066"
        "00000002"
        "0000018bcfe56800"
        "ffffffff"
        "ffffffffffffffff"
    )
    assert not list(path.parent.glob("*.tmp"))


def test_snapshot_entry_round_trip_keeps_first_sequence_across_wrap() -> None:
    entry = ProducerEntry(
        producer_id=11,
        producer_epoch=4,
        batches=(BatchMetadata(MAX_SEQUENCE - 1, 1, 500, 503, 9),),
        last_timestamp=9,
        coordinator_epoch=6,
        current_txn_first_offset=480,
    )
    assert decode_snapshot(encode_snapshot([entry])) == [entry]
    assert decrement_sequence(1, 3) == MAX_SEQUENCE - 1
    assert increment_sequence(MAX_SEQUENCE - 1, 3) == 1


def test_reload_from_snapshot_and_replay(tmp_path: Path) -> None:
    directory = tmp_path / "orders-0"
    psm = ProducerStateManager(directory)
    batches = [header(1, 0, i, offset=i) for i in range(8)]
    for h in batches[:5]:
        append(psm, h)
    psm.take_snapshot(5)
    for h in batches[5:]:
        append(psm, h)

    reopened = ProducerStateManager(directory)
    replay_from = reopened.load(0, 8)
    assert replay_from == 5
    assert reopened.last_entry(1) == LastEntry(0, 4, 4)
    for h in batches:
        if h.base_offset >= replay_from:
            reopened.update(h, now_ms=0)
    assert reopened.last_entry(1) == psm.last_entry(1)
    assert reopened.check(batches[7], is_leader=True) == DuplicateBatch(7, 7, 1_000)
    assert reopened.check(batches[4], is_leader=True) == DuplicateBatch(4, 4, 1_000)
    # Only the snapshot's last batch survives of what came before it.
    with pytest.raises(OutOfOrderSequenceException):
        reopened.check(batches[3], is_leader=True)


def test_corrupt_snapshot_is_skipped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    directory = tmp_path / "orders-0"
    psm = ProducerStateManager(directory)
    append(psm, header(1, 0, 0))
    psm.take_snapshot(1)
    append(psm, header(1, 0, 1, offset=1))
    newer = psm.take_snapshot(2)
    damaged = bytearray(newer.read_bytes())
    damaged[-1] ^= 0x01
    newer.write_bytes(bytes(damaged))

    reopened = ProducerStateManager(directory)
    with caplog.at_level(logging.WARNING, logger="rackwise.storage"):
        assert reopened.load(0, 2) == 1
    assert "Failed to load producer snapshot from" in caplog.text
    assert "Snapshot is corrupt (CRC is no longer valid)" in caplog.text
    assert not newer.exists()
    assert reopened.last_entry(1) == LastEntry(0, 0, 0)


def test_load_drops_out_of_range_snapshots_and_leftovers(tmp_path: Path) -> None:
    directory = tmp_path / "orders-0"
    psm = ProducerStateManager(directory)
    for offset in (3, 6, 9):
        psm.take_snapshot(offset)
    (directory / "00000000000000000012.snapshot.tmp").write_bytes(b"half")
    (directory / "00000000000000000000.log").write_bytes(b"")
    reopened = ProducerStateManager(directory)
    assert reopened.load(3, 7) == 6
    assert reopened.snapshot_offsets() == [6]
    assert sorted(p.name for p in directory.iterdir()) == [
        "00000000000000000000.log",
        snapshot_name(6),
    ]


def test_load_without_snapshot_replays_from_log_start(psm: ProducerStateManager) -> None:
    assert psm.load(17, 40) == 17
    assert psm.map_end_offset == 17


def test_load_leaves_out_expired_producers(tmp_path: Path) -> None:
    directory = tmp_path / "orders-0"
    psm = ProducerStateManager(directory, producer_id_expiration_ms=1_000)
    append(psm, header(1, 0, 0, ts=100))
    append(psm, header(2, 0, 0, ts=900, offset=1))
    psm.take_snapshot(2)
    reopened = ProducerStateManager(directory, producer_id_expiration_ms=1_000)
    reopened.load(0, 2, now_ms=1_500)
    assert set(reopened.active_producers) == {2}


def test_truncate_and_reload(tmp_path: Path) -> None:
    directory = tmp_path / "orders-0"
    psm = ProducerStateManager(directory)
    for i in range(6):
        append(psm, header(1, 0, i, offset=i))
        psm.take_snapshot(i + 1)
    assert psm.truncate_and_reload(0, 3) == 3
    assert psm.snapshot_offsets() == [1, 2, 3]
    assert psm.last_entry(1) == LastEntry(0, 2, 2)
    assert psm.check(header(1, 0, 3, offset=3), is_leader=True) is None
    # Unchanged log end: nothing reloaded, only the log start applied.
    assert psm.truncate_and_reload(2, 3) == 3
    assert psm.snapshot_offsets() == [3]


def test_log_start_offset_drops_old_snapshots_and_producers(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0, offset=0))
    psm.take_snapshot(1)
    append(psm, header(2, 0, 0, offset=1))
    psm.take_snapshot(2)
    append(psm, header(3, 0, 0, offset=2))
    psm.on_log_start_offset(2)
    assert psm.snapshot_offsets() == [2]
    assert set(psm.active_producers) == {3}
    assert psm.map_end_offset == 3


def test_truncate_fully(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0))
    psm.take_snapshot(1)
    psm.truncate_fully_and_start_at(50)
    assert psm.active_producers == {}
    assert psm.snapshot_offsets() == []
    assert psm.map_end_offset == 50


def test_snapshot_below_applied_state_is_a_bug(psm: ProducerStateManager) -> None:
    append(psm, header(1, 0, 0, 3))
    with pytest.raises(ValueError, match="BUG: producer snapshot at offset 2 is below"):
        psm.take_snapshot(2)


# --------------------------------------------------------------------------- state machine


@dataclass
class ModelProducer:
    epoch: int
    batches: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    """(first seq, last seq, first offset, last offset, timestamp), oldest first, at most 5."""

    @property
    def last_seq(self) -> int:
        return self.batches[-1][1]


class ProducerStateMachine(RuleBasedStateMachine):
    """Random producers against a plain model of Kafka's rules, with snapshot, reload,
    expiry and log-start moves at random points."""

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[int, ModelProducer] = {}
        self.log_end = 0
        self.now = 1_000_000

    @initialize(tmp=st.integers(min_value=0, max_value=10**9))
    def setup(self, tmp: int) -> None:
        import tempfile

        self._tmp = tempfile.TemporaryDirectory()
        self.directory = Path(self._tmp.name) / f"topic-{tmp % 7}"
        self.directory.mkdir()
        self.psm = ProducerStateManager(self.directory, producer_id_expiration_ms=EXPIRATION_MS)

    def teardown(self) -> None:
        if hasattr(self, "_tmp"):
            self._tmp.cleanup()

    def _expect(self, pid: int, epoch: int, first: int, last: int) -> object:
        """What the model says: a DuplicateBatch, an exception class, or None (accepted)."""
        known = self.model.get(pid)
        if known is None:
            return None
        if epoch == known.epoch:
            for b in known.batches:
                if (b[0], b[1]) == (first, last):
                    return DuplicateBatch(b[2], b[3], b[4])
        if epoch < known.epoch:
            return InvalidProducerEpochException
        if epoch > known.epoch:
            return None if first == 0 else OutOfOrderSequenceException
        return (
            None if first == increment_sequence(known.last_seq, 1) else OutOfOrderSequenceException
        )

    def _append(self, pid: int, epoch: int, first: int, count: int) -> None:
        self.now += 10
        h = header(pid, epoch, first, count, offset=self.log_end, ts=self.now)
        expected = self._expect(pid, epoch, first, h.last_sequence)
        if isinstance(expected, type):
            with pytest.raises(expected):
                self.psm.check(h, is_leader=True)
            return
        assert self.psm.check(h, is_leader=True) == expected
        if expected is not None:
            return
        self.psm.update(h, now_ms=self.now)
        entry = self.model.get(pid)
        if entry is None or entry.epoch != epoch:
            entry = self.model[pid] = ModelProducer(epoch)
        entry.batches = [
            *entry.batches,
            (first, h.last_sequence, h.base_offset, h.last_offset, self.now),
        ][-5:]
        self.log_end = h.next_offset

    pids = st.integers(min_value=1, max_value=3)
    counts = st.integers(min_value=1, max_value=4)

    @rule(pid=pids, count=counts)
    def next_in_sequence(self, pid: int, count: int) -> None:
        known = self.model.get(pid)
        if known is None:
            self._append(pid, 0, 0, count)
        else:
            self._append(pid, known.epoch, increment_sequence(known.last_seq, 1), count)

    @rule(pid=pids, pick=st.integers(min_value=0, max_value=6))
    def retry(self, pid: int, pick: int) -> None:
        known = self.model.get(pid)
        if known is not None:
            first, last, *_ = known.batches[pick % len(known.batches)]
            count = (last - first) % (MAX_SEQUENCE + 1) + 1
            self._append(pid, known.epoch, first, count)

    @rule(
        pid=pids,
        seq=st.integers(min_value=0, max_value=60),
        count=counts,
        epoch_step=st.integers(min_value=-1, max_value=1),
    )
    def arbitrary(self, pid: int, seq: int, count: int, epoch_step: int) -> None:
        known = self.model.get(pid)
        epoch = max(0, (known.epoch if known else 0) + epoch_step)
        self._append(pid, epoch, seq, count)

    @rule(pid=pids)
    def near_wrap(self, pid: int) -> None:
        if pid not in self.model:
            self._append(pid, 0, MAX_SEQUENCE - 2, 1)

    @rule()
    def plain_batch(self) -> None:
        h = header(-1, -1, -1, 2, offset=self.log_end, ts=self.now)
        self.psm.update(h, now_ms=self.now)
        self.log_end = h.next_offset

    @rule()
    def snapshot_and_reload(self) -> None:
        self.psm.take_snapshot(self.log_end)
        self.psm = ProducerStateManager(self.directory, producer_id_expiration_ms=EXPIRATION_MS)
        assert self.psm.load(0, self.log_end, now_ms=self.now) == self.log_end
        for entry in self.model.values():
            entry.batches = entry.batches[-1:]

    @rule(hours=st.integers(min_value=1, max_value=30))
    def time_passes_and_expire(self, hours: int) -> None:
        self.now += hours * 3_600_000
        self.psm.remove_expired(self.now)
        for pid in [
            p for p, e in self.model.items() if self.now - e.batches[-1][4] >= EXPIRATION_MS
        ]:
            del self.model[pid]

    @precondition(lambda self: self.log_end > 0)
    @rule(data=st.data())
    def move_log_start(self, data: st.DataObject) -> None:
        start = data.draw(st.integers(min_value=0, max_value=self.log_end))
        self.psm.on_log_start_offset(start)
        for pid in [p for p, e in self.model.items() if e.batches[-1][3] < start]:
            del self.model[pid]
        assert all(offset >= start for offset in self.psm.snapshot_offsets())

    @invariant()
    def same_producers(self) -> None:
        if not hasattr(self, "psm"):
            return
        assert set(self.psm.active_producers) == set(self.model)
        for pid, entry in self.model.items():
            assert self.psm.last_entry(pid) == LastEntry(
                entry.epoch, entry.last_seq, entry.batches[-1][3]
            )


ProducerStateMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestProducerStateMachine = ProducerStateMachine.TestCase
