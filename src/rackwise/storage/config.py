"""A topic's effective log settings (Kafka's LogConfig), field names Kafka's keys in snake case.

Goals
    One frozen value per topic that the log reads on every append and retention pass, built
    from the topic's effective configuration (``segment.bytes=...``) with Kafka 4's defaults
    for what is not given.

Constraints
    Keys this module does not use (``min.insync.replicas``, ``compression.type``...) are
    ignored, so the caller may pass a topic's whole configuration. A value that does not
    parse, or is below Kafka's minimum, raises :class:`InvalidConfigurationException` naming
    the key, in Kafka's words.

Algorithm
    Each key has a parser (int, float, list, string, boolean); an integer key has Kafka's
    minimum too (:func:`~rackwise.common.config_values.parse_int_config` reads it as a
    ``LONG``). ``cleanup.policy`` is a comma-separated list of ``delete`` and ``compact``.

Worked example
    ``LogConfig.from_topic_configs({"segment.bytes": "1048576", "cleanup.policy":
    "compact,delete"})`` is the default config with ``segment_bytes=1048576`` and
    ``cleanup_policy=frozenset({"compact", "delete"})``: retention deletes old segments and
    the cleaner compacts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rackwise.common.config_values import parse_int_config
from rackwise.common.errors import InvalidConfigurationException
from rackwise.storage.batch import CREATE_TIME, LOG_APPEND_TIME, LONG_MAX

NO_LIMIT: Final = -1
"""``retention.bytes`` / ``retention.ms`` meaning "no limit"."""
CLEANUP_POLICY_DELETE: Final = "delete"
CLEANUP_POLICY_COMPACT: Final = "compact"


@dataclass(frozen=True, slots=True)
class LogConfig:
    """A topic's log settings (units in the names; defaults Kafka 4's)."""

    segment_bytes: int = 1_073_741_824
    segment_ms: int = 604_800_000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10_485_760
    index_interval_bytes: int = 4096
    retention_ms: int = 604_800_000
    """NO_LIMIT keeps data forever."""
    retention_bytes: int = NO_LIMIT
    cleanup_policy: frozenset[str] = field(default=frozenset({CLEANUP_POLICY_DELETE}))
    delete_retention_ms: int = 86_400_000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    max_message_bytes: int = 1_048_588
    message_timestamp_type: str = CREATE_TIME
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = 3_600_000
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60_000
    preallocate: bool = False

    @property
    def is_compact(self) -> bool:
        return CLEANUP_POLICY_COMPACT in self.cleanup_policy

    @property
    def is_delete(self) -> bool:
        return CLEANUP_POLICY_DELETE in self.cleanup_policy

    @classmethod
    def from_topic_configs(cls, configs: Mapping[str, str]) -> LogConfig:
        """The config for Kafka topic settings (``"segment.bytes"`` ...); missing keys take
        the defaults, unknown keys are ignored."""
        values: dict[str, Any] = {}
        for key, (parse, minimum) in _KEYS.items():
            text = configs.get(key)
            if text is None:
                continue
            if parse is int:
                value = parse_int_config(
                    key,
                    text,
                    minimum=minimum,
                    type_name="LONG",
                    error=InvalidConfigurationException,
                )
            else:
                value = _parse(key, text, parse)
            values[key.replace(".", "_")] = value
        return dataclasses.replace(cls(), **values)


def _parse(key: str, text: str, parse: Callable[[str], Any]) -> Any:
    try:
        return parse(text.strip())
    except ValueError as e:
        raise InvalidConfigurationException(
            f"Invalid value {text} for configuration {key}: {e}"
        ) from None


def _ratio(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise ValueError("Value must be between 0 and 1")
    return value


def _policy(text: str) -> frozenset[str]:
    items = frozenset(p.strip() for p in text.strip("[]").split(",") if p.strip())
    unknown = items - {CLEANUP_POLICY_DELETE, CLEANUP_POLICY_COMPACT}
    if unknown:
        raise ValueError(
            f"String must be one of: {CLEANUP_POLICY_COMPACT}, {CLEANUP_POLICY_DELETE}"
        )
    return items


def _timestamp_type(text: str) -> str:
    if text not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(f"String must be one of: {CREATE_TIME}, {LOG_APPEND_TIME}")
    return text


def _bool(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return text.lower() == "true"


_KEYS: Final[dict[str, tuple[Callable[[str], Any], int | None]]] = {
    # key: (parser, minimum); only an integer (``int``) key has a minimum
    "segment.bytes": (int, 14),
    "segment.ms": (int, 1),
    "segment.jitter.ms": (int, 0),
    "segment.index.bytes": (int, 4),
    "index.interval.bytes": (int, 0),
    "retention.ms": (int, NO_LIMIT),
    "retention.bytes": (int, None),
    "cleanup.policy": (_policy, None),
    "delete.retention.ms": (int, 0),
    "min.compaction.lag.ms": (int, 0),
    "max.compaction.lag.ms": (int, 1),
    "min.cleanable.dirty.ratio": (_ratio, None),
    "max.message.bytes": (int, 0),
    "message.timestamp.type": (_timestamp_type, None),
    "message.timestamp.before.max.ms": (int, 0),
    "message.timestamp.after.max.ms": (int, 0),
    "flush.messages": (int, 1),
    "flush.ms": (int, 0),
    "file.delete.delay.ms": (int, 0),
    "preallocate": (_bool, None),
}
