"""LogConfig from Kafka's topic settings, and the append checks that depend on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackwise.common.errors import InvalidConfigurationException
from rackwise.storage.config import LogConfig
from rackwise.storage.errors import InvalidRecordException, InvalidTimestampException
from rackwise.storage.record_codec import Record, build_batch_from_records
from tests.storage.helpers import START_MS, LogHarness, batch


def test_missing_keys_take_kafkas_defaults_and_unknown_keys_are_ignored() -> None:
    config = LogConfig.from_topic_configs({"min.insync.replicas": "2", "compression.type": "lz4"})
    assert config == LogConfig()
    assert (config.segment_bytes, config.retention_ms, config.max_message_bytes) == (
        1_073_741_824,
        604_800_000,
        1_048_588,
    )
    assert config.message_timestamp_after_max_ms == 3_600_000
    assert config.is_delete and not config.is_compact


def test_topic_settings_are_parsed() -> None:
    config = LogConfig.from_topic_configs(
        {
            "segment.bytes": "1048576",
            "cleanup.policy": "compact,delete",
            "retention.bytes": "-1",
            "min.cleanable.dirty.ratio": "0.25",
            "message.timestamp.type": "LogAppendTime",
            "preallocate": "true",
        }
    )
    assert config.segment_bytes == 1_048_576
    assert config.cleanup_policy == frozenset({"compact", "delete"})
    assert config.min_cleanable_dirty_ratio == 0.25
    assert config.message_timestamp_type == "LogAppendTime" and config.preallocate


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("segment.bytes", "10", "Value must be at least 14"),
        ("retention.ms", "-2", "Value must be at least -1"),
        ("segment.ms", "soon", "Not a number of type LONG"),
        ("cleanup.policy", "shred", "String must be one of: compact, delete"),
        ("message.timestamp.type", "Now", "String must be one of: CreateTime, LogAppendTime"),
        ("min.cleanable.dirty.ratio", "2", "between 0 and 1"),
    ],
)
def test_bad_values_are_refused_naming_the_key(key: str, value: str, message: str) -> None:
    with pytest.raises(InvalidConfigurationException, match=message) as caught:
        LogConfig.from_topic_configs({key: value})
    assert key in str(caught.value) and caught.value.error_code == 40


def test_a_compacted_topic_refuses_records_without_keys(tmp_path: Path) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(cleanup_policy=frozenset({"compact"})))
    log = h.open()
    for compression in (0, 1, 4):
        records = [Record(0, START_MS, b"k", b"v"), Record(1, START_MS, None, b"w")]
        data = build_batch_from_records(records, base_offset=0, compression=compression)
        with pytest.raises(InvalidRecordException, match="without key"):
            log.append_as_leader(data, leader_epoch=0)
    assert log.log_end_offset == 0
    compressed = build_batch_from_records(
        [Record(0, START_MS, b"k", b"v")], base_offset=0, compression=1
    )
    assert log.append_as_leader(compressed, leader_epoch=0).last_offset == 0


def test_create_time_bounds_apply_to_compressed_batches(tmp_path: Path) -> None:
    h = LogHarness(tmp_path / "t-0", LogConfig(message_timestamp_before_max_ms=60_000))
    log = h.open()
    old = build_batch_from_records(
        [Record(0, START_MS - 120_000, b"k", b"v")], base_offset=0, compression=1
    )
    with pytest.raises(InvalidTimestampException):
        log.append_as_leader(old, leader_epoch=0)
    assert log.append_as_leader(batch(1), leader_epoch=0).first_offset == 0
