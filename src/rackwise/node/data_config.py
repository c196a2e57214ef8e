"""The broker's data-path settings: Kafka's broker keys for replication, fetching, log defaults
and topic auto-creation, and each topic's effective log settings.

Goals
    * A broker accepts Kafka's names (``replica.lag.time.max.ms``, ``num.replica.fetchers``,
      ``replica.selector.class``, ``auto.create.topics.enable``, ``log.segment.bytes``, every
      broker-level synonym of a topic key, the group coordinator's ``offsets.topic.*``...),
      with Kafka's defaults, and refuses a bad value naming the key.
    * A topic's settings are its overrides, else the broker's synonyms (``log.segment.bytes``
      for ``segment.bytes``), else Kafka's default, exactly as DescribeConfigs reports them
      (the same :class:`~rackwise.controller.configs.ConfigControl` computes both).

Constraints
    The values are read once, at start. For a key that can change without a restart
    (``replica.alter.log.dirs.io.max.bytes.per.second``, ``log.segment.delete.delay.ms``...)
    read its value now from :class:`~rackwise.node.dynamic_config.DynamicBrokerConfig`; the
    field here is its static value (``.properties``, else Kafka's default), until
    :meth:`DataPathConfig.with_dynamic` gives a copy with the current values.
    ``num.replica.alter.log.dirs.threads`` is 0 when unset (Kafka's null: one mover per log
    directory); ``file_delete_delay_ms`` is ``log.segment.delete.delay.ms`` (the broker-level
    name of the topic key ``file.delete.delay.ms``, which is also accepted).

Worked example
    A broker started with ``log.segment.bytes=1048576`` and a topic created with
    ``retention.ms=60000``: that topic's :class:`~rackwise.storage.log.LogConfig` has
    ``segment_bytes=1048576`` and ``retention_ms=60000``; another topic gets 1 MiB segments and
    seven days' retention.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.assignors.server_registry import DEFAULT_ASSIGNORS
from rackwise.common.config_values import parse_int_config
from rackwise.controller.config import ControllerConfig
from rackwise.controller.configs import ConfigControl
from rackwise.controller.configschema import TOPIC_CONFIGS
from rackwise.image import MetadataImage
from rackwise.node.dynamic_config import DynamicBrokerConfig
from rackwise.replica.hosting import TopicSettings
from rackwise.replica.selector import DEFAULT_SELECTOR, SelectorPluginException, load_selector
from rackwise.storage.log import LogConfig

REPLICA_LAG_TIME_MAX_MS: Final = "replica.lag.time.max.ms"
REPLICA_FETCH_MAX_BYTES: Final = "replica.fetch.max.bytes"
REPLICA_FETCH_RESPONSE_MAX_BYTES: Final = "replica.fetch.response.max.bytes"
REPLICA_FETCH_WAIT_MAX_MS: Final = "replica.fetch.wait.max.ms"
REPLICA_FETCH_MIN_BYTES: Final = "replica.fetch.min.bytes"
REPLICA_FETCH_BACKOFF_MS: Final = "replica.fetch.backoff.ms"
NUM_REPLICA_FETCHERS: Final = "num.replica.fetchers"
REPLICA_SELECTOR_CLASS: Final = "replica.selector.class"
AUTO_CREATE_TOPICS_ENABLE: Final = "auto.create.topics.enable"
PRODUCER_ID_EXPIRATION_MS: Final = "producer.id.expiration.ms"
LOG_RETENTION_CHECK_INTERVAL_MS: Final = "log.retention.check.interval.ms"
LOG_FLUSH_SCHEDULER_INTERVAL_MS: Final = "log.flush.scheduler.interval.ms"
LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS: Final = "log.flush.offset.checkpoint.interval.ms"
HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS: Final = "replica.high.watermark.checkpoint.interval.ms"
LOG_CLEANER_ENABLE: Final = "log.cleaner.enable"
LOG_CLEANER_BACKOFF_MS: Final = "log.cleaner.backoff.ms"
REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND: Final = (
    "replica.alter.log.dirs.io.max.bytes.per.second"
)
NUM_REPLICA_ALTER_LOG_DIRS_THREADS: Final = "num.replica.alter.log.dirs.threads"
LEADER_REPLICATION_THROTTLED_RATE: Final = "leader.replication.throttled.rate"
FOLLOWER_REPLICATION_THROTTLED_RATE: Final = "follower.replication.throttled.rate"
REPLICATION_QUOTA_WINDOW_NUM: Final = "replication.quota.window.num"
REPLICATION_QUOTA_WINDOW_SIZE_SECONDS: Final = "replication.quota.window.size.seconds"
LOG_SEGMENT_DELETE_DELAY_MS: Final = "log.segment.delete.delay.ms"
"""The broker-level name of the topic key ``file.delete.delay.ms``."""
FILE_DELETE_DELAY_MS: Final = "file.delete.delay.ms"
"""Accepted in a broker's properties too, when ``log.segment.delete.delay.ms`` is not set."""
OFFSETS_TOPIC_NUM_PARTITIONS: Final = "offsets.topic.num.partitions"
OFFSETS_TOPIC_REPLICATION_FACTOR: Final = "offsets.topic.replication.factor"
OFFSETS_TOPIC_SEGMENT_BYTES: Final = "offsets.topic.segment.bytes"
OFFSET_METADATA_MAX_BYTES: Final = "offset.metadata.max.bytes"
OFFSETS_COMMIT_TIMEOUT_MS: Final = "offsets.commit.timeout.ms"
OFFSETS_RETENTION_MINUTES: Final = "offsets.retention.minutes"
OFFSETS_RETENTION_CHECK_INTERVAL_MS: Final = "offsets.retention.check.interval.ms"
GROUP_MIN_SESSION_TIMEOUT_MS: Final = "group.min.session.timeout.ms"
GROUP_MAX_SESSION_TIMEOUT_MS: Final = "group.max.session.timeout.ms"
GROUP_INITIAL_REBALANCE_DELAY_MS: Final = "group.initial.rebalance.delay.ms"
GROUP_MAX_SIZE: Final = "group.max.size"
GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS: Final = "group.consumer.heartbeat.interval.ms"
GROUP_CONSUMER_SESSION_TIMEOUT_MS: Final = "group.consumer.session.timeout.ms"
GROUP_CONSUMER_MAX_SIZE: Final = "group.consumer.max.size"
GROUP_CONSUMER_LEADER_RACK_CHANGE_DELAY_MS: Final = "group.consumer.leader.rack.change.delay.ms"
"""rackwise's: how long a leader must stay in another rack before a group of a
leader-rack-aware assignor gets a new target assignment."""
GROUP_CONSUMER_ASSIGNORS: Final = "group.consumer.assignors"
GROUP_CONSUMER_MIGRATION_POLICY: Final = "group.consumer.migration.policy"
MIGRATION_POLICIES: Final = ("bidirectional", "upgrade", "downgrade", "disabled")
CORDONED_LOG_DIRS: Final = "cordoned.log.dirs"
"""KIP-1066: the log directories that take no new replica (``*``: every one); dynamic."""

_INT_KEYS: Final[dict[str, tuple[int, int]]] = {
    # key: (Kafka's default, minimum)
    REPLICA_LAG_TIME_MAX_MS: (30_000, 1),
    REPLICA_FETCH_MAX_BYTES: (1_048_576, 0),
    REPLICA_FETCH_RESPONSE_MAX_BYTES: (10_485_760, 0),
    REPLICA_FETCH_WAIT_MAX_MS: (500, 0),
    REPLICA_FETCH_MIN_BYTES: (1, 1),
    REPLICA_FETCH_BACKOFF_MS: (1_000, 0),
    NUM_REPLICA_FETCHERS: (1, 1),
    PRODUCER_ID_EXPIRATION_MS: (86_400_000, 1),
    LOG_RETENTION_CHECK_INTERVAL_MS: (300_000, 1),
    LOG_FLUSH_SCHEDULER_INTERVAL_MS: (2**63 - 1, 0),
    LOG_FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS: (60_000, 0),
    HIGH_WATERMARK_CHECKPOINT_INTERVAL_MS: (5_000, 1),
    LOG_CLEANER_BACKOFF_MS: (15_000, 0),
    REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND: (2**63 - 1, 0),
    NUM_REPLICA_ALTER_LOG_DIRS_THREADS: (0, 0),  # 0: Kafka's null, one per log directory
    LEADER_REPLICATION_THROTTLED_RATE: (2**63 - 1, 0),
    FOLLOWER_REPLICATION_THROTTLED_RATE: (2**63 - 1, 0),
    REPLICATION_QUOTA_WINDOW_NUM: (11, 1),
    REPLICATION_QUOTA_WINDOW_SIZE_SECONDS: (1, 1),
    OFFSETS_TOPIC_NUM_PARTITIONS: (50, 1),
    OFFSETS_TOPIC_REPLICATION_FACTOR: (3, 1),
    OFFSETS_TOPIC_SEGMENT_BYTES: (104_857_600, 1),
    OFFSET_METADATA_MAX_BYTES: (4_096, 0),
    OFFSETS_COMMIT_TIMEOUT_MS: (5_000, 1),
    OFFSETS_RETENTION_MINUTES: (10_080, 1),
    OFFSETS_RETENTION_CHECK_INTERVAL_MS: (600_000, 1),
    GROUP_MIN_SESSION_TIMEOUT_MS: (6_000, 0),
    GROUP_MAX_SESSION_TIMEOUT_MS: (1_800_000, 0),
    GROUP_INITIAL_REBALANCE_DELAY_MS: (3_000, 0),
    GROUP_MAX_SIZE: (2_147_483_647, 1),
    GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS: (5_000, 1),
    GROUP_CONSUMER_SESSION_TIMEOUT_MS: (45_000, 1),
    GROUP_CONSUMER_MAX_SIZE: (2_147_483_647, 1),
    GROUP_CONSUMER_LEADER_RACK_CHANGE_DELAY_MS: (30_000, 0),
}
_BOOL_KEYS: Final[dict[str, bool]] = {AUTO_CREATE_TOPICS_ENABLE: True, LOG_CLEANER_ENABLE: True}

TOPIC_SYNONYM_KEYS: Final = frozenset(
    synonym for key in TOPIC_CONFIGS.values() for synonym, _ in key.synonyms
)
"""The broker-level names of topic keys (``log.segment.bytes``, ``message.max.bytes``...)."""
DATA_PATH_KEYS: Final = frozenset(
    {
        *_INT_KEYS,
        *_BOOL_KEYS,
        REPLICA_SELECTOR_CLASS,
        GROUP_CONSUMER_ASSIGNORS,
        CORDONED_LOG_DIRS,
        *TOPIC_SYNONYM_KEYS,
    }
)
"""Every key this module reads from a broker's properties."""


class DataConfigException(ValueError):
    """A data-path key with a value Kafka would refuse; the message names it."""


@dataclass(frozen=True, slots=True)
class DataPathConfig:
    """A broker's data-path settings (module docstring); field names are the keys'."""

    replica_lag_time_max_ms: int
    replica_fetch_max_bytes: int
    replica_fetch_response_max_bytes: int
    replica_fetch_wait_max_ms: int
    replica_fetch_min_bytes: int
    replica_fetch_backoff_ms: int
    num_replica_fetchers: int
    producer_id_expiration_ms: int
    log_retention_check_interval_ms: int
    log_flush_scheduler_interval_ms: int
    log_flush_offset_checkpoint_interval_ms: int
    replica_high_watermark_checkpoint_interval_ms: int
    log_cleaner_backoff_ms: int
    replica_alter_log_dirs_io_max_bytes_per_second: int
    num_replica_alter_log_dirs_threads: int
    leader_replication_throttled_rate: int
    follower_replication_throttled_rate: int
    replication_quota_window_num: int
    replication_quota_window_size_seconds: int
    offsets_topic_num_partitions: int
    offsets_topic_replication_factor: int
    offsets_topic_segment_bytes: int
    offset_metadata_max_bytes: int
    offsets_commit_timeout_ms: int
    offsets_retention_minutes: int
    offsets_retention_check_interval_ms: int
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_initial_rebalance_delay_ms: int
    group_max_size: int
    group_consumer_heartbeat_interval_ms: int
    group_consumer_session_timeout_ms: int
    group_consumer_max_size: int
    group_consumer_leader_rack_change_delay_ms: int
    file_delete_delay_ms: int
    auto_create_topics_enable: bool
    log_cleaner_enable: bool
    replica_selector_class: str
    group_consumer_assignors: tuple[str, ...] = DEFAULT_ASSIGNORS
    group_consumer_migration_policy: str = "bidirectional"
    cordoned_log_dirs: tuple[str, ...] = ()

    def with_dynamic(self, dynamic: DynamicBrokerConfig) -> DataPathConfig:
        """This configuration with the values the data path reads as it goes taken from
        ``dynamic`` as they are now (the log-directory mover's throttle, the replication
        throttles and the delay before a replaced log directory is deleted); the others are
        read once, at start."""
        return dataclasses.replace(
            self,
            replica_alter_log_dirs_io_max_bytes_per_second=(
                dynamic.replica_alter_log_dirs_io_max_bytes_per_second
            ),
            file_delete_delay_ms=dynamic.file_delete_delay_ms,
            leader_replication_throttled_rate=dynamic.int_value(LEADER_REPLICATION_THROTTLED_RATE),
            follower_replication_throttled_rate=dynamic.int_value(
                FOLLOWER_REPLICATION_THROTTLED_RATE
            ),
            cordoned_log_dirs=_names(dynamic.value(CORDONED_LOG_DIRS)),
        )

    @staticmethod
    def from_properties(props: Mapping[str, str]) -> DataPathConfig:
        values: dict[str, object] = {}
        for key, (default, minimum) in _INT_KEYS.items():
            values[key.replace(".", "_")] = _int(props, key, default, minimum)
        delay = LOG_SEGMENT_DELETE_DELAY_MS if LOG_SEGMENT_DELETE_DELAY_MS in props else None
        values["file_delete_delay_ms"] = _int(props, delay or FILE_DELETE_DELAY_MS, 60_000, 0)
        for key, flag in _BOOL_KEYS.items():
            values[key.replace(".", "_")] = _bool(props, key, flag)
        selector = props.get(REPLICA_SELECTOR_CLASS, DEFAULT_SELECTOR).strip() or DEFAULT_SELECTOR
        try:
            load_selector(selector)
        except SelectorPluginException as e:
            raise DataConfigException(str(e)) from None
        values["replica_selector_class"] = selector
        values["group_consumer_assignors"] = _assignors(props.get(GROUP_CONSUMER_ASSIGNORS))
        values["cordoned_log_dirs"] = _names(props.get(CORDONED_LOG_DIRS))
        values["group_consumer_migration_policy"] = _policy(
            props.get(GROUP_CONSUMER_MIGRATION_POLICY)
        )
        return DataPathConfig(**values)  # type: ignore[arg-type]


def _int(props: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    text = props.get(key)
    if text is None or not text.strip():
        return default
    return parse_int_config(
        key, text, minimum=minimum, type_name="LONG", error=DataConfigException, show_parsed=True
    )


_KAFKA_ASSIGNOR_CLASSES: Final = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def _assignors(text: str | None) -> tuple[str, ...]:
    """``group.consumer.assignors``: names (or Kafka's two class names), the first the
    default; every one must be a server-side assignor rackwise has."""
    if text is None or not text.strip():
        return DEFAULT_ASSIGNORS
    names = [
        _KAFKA_ASSIGNOR_CLASSES.get(n.strip(), n.strip()) for n in text.split(",") if n.strip()
    ]
    for name in names:
        if name not in DEFAULT_ASSIGNORS:
            raise DataConfigException(
                f"Invalid value {text} for configuration {GROUP_CONSUMER_ASSIGNORS}: unknown "
                f"assignor {name!r}; expected names among {', '.join(DEFAULT_ASSIGNORS)}"
            )
    return tuple(dict.fromkeys(names))


def _policy(text: str | None) -> str:
    """``group.consumer.migration.policy``, case-insensitive among Kafka's four."""
    if text is None or not text.strip():
        return MIGRATION_POLICIES[0]
    if text.strip().lower() not in MIGRATION_POLICIES:
        raise DataConfigException(
            f"Invalid value {text} for configuration {GROUP_CONSUMER_MIGRATION_POLICY}: String "
            f"must be one of (case insensitive): {', '.join(MIGRATION_POLICIES)}"
        )
    return text.strip().lower()


def _bool(props: Mapping[str, str], key: str, default: bool) -> bool:
    text = props.get(key)
    if text is None or not text.strip():
        return default
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise DataConfigException(
            f"Invalid value {text} for configuration {key}: Expected value to be either true "
            "or false"
        )
    return lowered == "true"


class TopicSettingsSource:
    """Each topic's :class:`TopicSettings` from the image and the broker's static keys."""

    def __init__(self, node_id: int, static: Mapping[str, str]) -> None:
        self._control = ConfigControl(ControllerConfig(node_id=node_id, static=static))

    def __call__(self, image: MetadataImage, topic: str) -> TopicSettings:
        overrides = image.topic_configs(topic)
        effective = {
            entry.name: entry.value
            for entry in self._control.effective_topic_configs(image, overrides)
            if entry.value is not None
        }
        return TopicSettings(
            log_config=LogConfig.from_topic_configs(effective),
            min_insync_replicas=int(effective.get("min.insync.replicas", "1")),
            min_insync_racks=int(effective.get("min.insync.racks", "1")),
            min_insync_racks_level=int(effective.get("min.insync.racks.level", "1")),
        )


def _names(text: str | None) -> tuple[str, ...]:
    """A list key's entries (comma-separated, blanks dropped)."""
    return tuple(n.strip() for n in (text or "").split(",") if n.strip())
