"""A partition log against a model: appends, rolls, truncation, retention, DeleteRecords,
clean and unclean reopening. After every step every batch that was appended and not since
truncated or deleted reads back at its offset, byte for byte."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from rackwise.storage.batch import LOG_APPEND_TIME, parse_header
from rackwise.storage.config import LogConfig
from tests.storage.helpers import LogHarness, batch, read_all


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="rackwise-log-machine-"))
        self.h = LogHarness(
            self.tmp / "topic-0",
            LogConfig(segment_bytes=900, index_interval_bytes=150, retention_ms=60_000),
        )
        self.model: dict[int, bytes] = {}
        """Base offset -> the batch as stored."""
        self.epoch = 0

    def teardown(self) -> None:
        if self.h.log is not None:
            self.h.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def log(self):  # type: ignore[no-untyped-def]
        assert self.h.log is not None
        return self.h.log

    @initialize()
    def start(self) -> None:
        self.h.open()

    @rule(
        records=st.integers(1, 4),
        size=st.integers(0, 120),
        append_time=st.booleans(),
        new_epoch=st.booleans(),
        advance_ms=st.integers(0, 20_000),
    )
    def append(
        self, records: int, size: int, append_time: bool, new_epoch: bool, advance_ms: int
    ) -> None:
        self.h.clock.now_ms += advance_ms
        timestamp_type = LOG_APPEND_TIME if append_time else "CreateTime"
        if self.log.config.message_timestamp_type != timestamp_type:
            self.h.config = LogConfig(
                segment_bytes=900,
                index_interval_bytes=150,
                retention_ms=60_000,
                message_timestamp_type=timestamp_type,
            )
            self.log.update_config(self.h.config)
        self.epoch += int(new_epoch)
        sent = batch(records, size=size, timestamp_ms=self.h.clock.now_ms - 5)
        end = self.log.log_end_offset
        info = self.log.append_as_leader(sent, leader_epoch=self.epoch)
        assert (info.first_offset, info.last_offset) == (end, end + records - 1)
        got = self.log.read(end, max_bytes=10_000, max_offset=end + records, min_one_batch=True)
        assert got.first_offset == end and len(got.records) == len(sent)
        header = parse_header(got.records)
        assert (header.base_offset, header.partition_leader_epoch) == (end, self.epoch)
        assert got.records[8:12] == sent[8:12] and got.records[23:35] == sent[23:35]
        assert got.records[43:] == sent[43:]
        assert header.timestamp_type == int(append_time)
        self.model[end] = got.records

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offsets = [o for o in sorted(self.model) if o >= self.log.log_start_offset]
        if not offsets:
            return
        target = data.draw(st.sampled_from(offsets))
        self.log.truncate_to(target)
        self.model = {o: b for o, b in self.model.items() if o < target}

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data(), advance_ms=st.integers(0, 120_000), delete_records=st.booleans())
    def retention(self, data: st.DataObject, advance_ms: int, delete_records: bool) -> None:
        boundaries = sorted(o for o in self.model if o >= self.log.log_start_offset)
        boundaries.append(self.log.log_end_offset)
        self.log.update_high_watermark(data.draw(st.sampled_from(boundaries)))
        hw = self.log.high_watermark
        if delete_records:
            self.log.maybe_increment_log_start_offset(
                data.draw(st.sampled_from([b for b in boundaries if b <= hw]))
            )
        self.h.clock.now_ms += advance_ms
        self.log.delete_old_segments(self.h.clock.now_ms)
        assert self.log.log_start_offset <= hw
        self.model = {o: b for o, b in self.model.items() if o >= self.log.log_start_offset}

    @rule()
    def reopen_clean(self) -> None:
        self.h.reopen(clean=True)

    @rule()
    def reopen_unclean(self) -> None:
        self.h.reopen(clean=False)

    @precondition(lambda self: len(self.model) > 0)
    @rule(data=st.data())
    def crash_with_a_torn_tail(self, data: st.DataObject) -> None:
        """The machine dies while the active segment's unflushed tail is being written."""
        segment = self.log.active_segment
        if self.log.recovery_point > segment.base_offset or segment.size == 0:
            return
        cut = data.draw(st.integers(0, segment.size - 1))
        lost = [h.base_offset for h in segment.iter_headers() if h.end > cut]
        self.h.files.forget_under(self.h.directory)
        with open(segment.log_path, "r+b") as f:
            f.truncate(cut)
        self.h.open(clean=False)
        for offset in lost:
            self.model.pop(offset, None)

    @invariant()
    def every_batch_reads_back(self) -> None:
        if self.h.log is None:
            return
        stored = dict(read_all(self.log))
        visible = {o: b for o, b in self.model.items() if o >= self.log.log_start_offset}
        assert stored == visible
        expected_end = max(
            (o + parse_header(b).last_offset_delta + 1 for o, b in visible.items()), default=None
        )
        if expected_end is not None:
            assert self.log.log_end_offset == expected_end
        assert self.log.log_start_offset <= self.log.high_watermark <= self.log.log_end_offset


TestLogMachine = LogMachine.TestCase
TestLogMachine.settings = settings(max_examples=25, stateful_step_count=25, deadline=None)
