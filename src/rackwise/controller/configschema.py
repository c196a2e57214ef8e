"""The topic configuration keys, their types, defaults and broker-level synonyms (Kafka's
``LogConfig`` and ``ServerTopicConfigSynonyms``), and the checks Kafka's ``ConfigDef`` makes.

A topic's effective value of a key is, first found: the topic's own override, then the
broker-level synonym set dynamically for the whole cluster, then the synonym in the node's
static configuration, then the key's default. Synonyms in hours or minutes are converted to
the key's milliseconds.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from rackwise.common.errors import InvalidConfigurationException
from rackwise.topology import InvalidLeadersPreferenceException, parse_leaders_preference

_LONG_MAX: Final = str(2**63 - 1)
_HOUR_MS: Final = 3_600_000
_MINUTE_MS: Final = 60_000

INT: Final = "INT"
LONG: Final = "LONG"
DOUBLE: Final = "DOUBLE"
BOOLEAN: Final = "BOOLEAN"
STRING: Final = "STRING"
LIST: Final = "LIST"

LEADERS_PREFERENCE: Final = "leaders.preference"
MIN_INSYNC_RACKS: Final = "min.insync.racks"
MIN_INSYNC_RACKS_LEVEL: Final = "min.insync.racks.level"

_COMPRESSION: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One topic configuration key: its type (Kafka's ``ConfigDef.Type`` name), default, bounds
    (None: unbounded), allowed values (None: any) and broker-level synonyms with the factor
    that converts each to this key's unit."""

    name: str
    type: str
    default: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    synonyms: tuple[tuple[str, int], ...] = ()


TOPIC_CONFIGS: Final[Mapping[str, ConfigKey]] = {
    k.name: k
    for k in (
        ConfigKey(
            "cleanup.policy",
            LIST,
            "delete",
            choices=("compact", "delete"),
            synonyms=(("log.cleanup.policy", 1),),
        ),
        ConfigKey(
            "compression.type",
            STRING,
            "producer",
            choices=_COMPRESSION,
            synonyms=(("compression.type", 1),),
        ),
        ConfigKey("compression.gzip.level", INT, "-1", minimum=-1, maximum=9),
        ConfigKey("compression.lz4.level", INT, "9", minimum=1, maximum=17),
        ConfigKey("compression.zstd.level", INT, "3", minimum=-131072, maximum=22),
        ConfigKey(
            "delete.retention.ms",
            LONG,
            "86400000",
            minimum=0,
            synonyms=(("log.cleaner.delete.retention.ms", 1),),
        ),
        ConfigKey(
            "file.delete.delay.ms",
            LONG,
            "60000",
            minimum=0,
            synonyms=(("log.segment.delete.delay.ms", 1),),
        ),
        ConfigKey(
            "flush.messages",
            LONG,
            _LONG_MAX,
            minimum=1,
            synonyms=(("log.flush.interval.messages", 1),),
        ),
        ConfigKey("flush.ms", LONG, _LONG_MAX, minimum=0, synonyms=(("log.flush.interval.ms", 1),)),
        ConfigKey("follower.replication.throttled.replicas", LIST, ""),
        ConfigKey(
            "index.interval.bytes",
            INT,
            "4096",
            minimum=0,
            synonyms=(("log.index.interval.bytes", 1),),
        ),
        ConfigKey("leader.replication.throttled.replicas", LIST, ""),
        ConfigKey(
            "local.retention.bytes",
            LONG,
            "-2",
            minimum=-2,
            synonyms=(("log.local.retention.bytes", 1),),
        ),
        ConfigKey(
            "local.retention.ms", LONG, "-2", minimum=-2, synonyms=(("log.local.retention.ms", 1),)
        ),
        ConfigKey(
            "max.compaction.lag.ms",
            LONG,
            _LONG_MAX,
            minimum=1,
            synonyms=(("log.cleaner.max.compaction.lag.ms", 1),),
        ),
        ConfigKey(
            "max.message.bytes", INT, "1048588", minimum=0, synonyms=(("message.max.bytes", 1),)
        ),
        ConfigKey(
            "message.timestamp.after.max.ms",
            LONG,
            _LONG_MAX,
            minimum=0,
            synonyms=(("log.message.timestamp.after.max.ms", 1),),
        ),
        ConfigKey(
            "message.timestamp.before.max.ms",
            LONG,
            _LONG_MAX,
            minimum=0,
            synonyms=(("log.message.timestamp.before.max.ms", 1),),
        ),
        ConfigKey(
            "message.timestamp.type",
            STRING,
            "CreateTime",
            choices=("CreateTime", "LogAppendTime"),
            synonyms=(("log.message.timestamp.type", 1),),
        ),
        ConfigKey(
            "min.cleanable.dirty.ratio",
            DOUBLE,
            "0.5",
            minimum=0,
            maximum=1,
            synonyms=(("log.cleaner.min.cleanable.ratio", 1),),
        ),
        ConfigKey(
            "min.compaction.lag.ms",
            LONG,
            "0",
            minimum=0,
            synonyms=(("log.cleaner.min.compaction.lag.ms", 1),),
        ),
        ConfigKey(
            "leaders.preference",
            STRING,
            "none",
            synonyms=(("default.leaders.preference", 1),),
        ),
        ConfigKey("min.insync.racks", INT, "1", minimum=1, synonyms=(("min.insync.racks", 1),)),
        ConfigKey(
            "min.insync.racks.level",
            INT,
            "1",
            minimum=1,
            synonyms=(("min.insync.racks.level", 1),),
        ),
        ConfigKey(
            "min.insync.replicas", INT, "1", minimum=1, synonyms=(("min.insync.replicas", 1),)
        ),
        ConfigKey("preallocate", BOOLEAN, "false", synonyms=(("log.preallocate", 1),)),
        ConfigKey("remote.storage.enable", BOOLEAN, "false"),
        ConfigKey("retention.bytes", LONG, "-1", synonyms=(("log.retention.bytes", 1),)),
        ConfigKey(
            "retention.ms",
            LONG,
            "604800000",
            minimum=-1,
            synonyms=(
                ("log.retention.ms", 1),
                ("log.retention.minutes", _MINUTE_MS),
                ("log.retention.hours", _HOUR_MS),
            ),
        ),
        ConfigKey(
            "segment.bytes", INT, "1073741824", minimum=14, synonyms=(("log.segment.bytes", 1),)
        ),
        ConfigKey(
            "segment.index.bytes",
            INT,
            "10485760",
            minimum=4,
            synonyms=(("log.index.size.max.bytes", 1),),
        ),
        ConfigKey(
            "segment.jitter.ms",
            LONG,
            "0",
            minimum=0,
            synonyms=(("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", _HOUR_MS)),
        ),
        ConfigKey(
            "segment.ms",
            LONG,
            "604800000",
            minimum=1,
            synonyms=(("log.roll.ms", 1), ("log.roll.hours", _HOUR_MS)),
        ),
        ConfigKey(
            "unclean.leader.election.enable",
            BOOLEAN,
            "false",
            synonyms=(("unclean.leader.election.enable", 1),),
        ),
    )
}
"""Every topic configuration key Kafka's ``LogConfig`` defines (but the ones Kafka 4 removed),
by name, and rackwise's own: ``min.insync.racks`` and ``min.insync.racks.level`` (an acks=all
write needs an ISR over that many failure domains at that level of the rack tree) and
``leaders.preference`` (where leaders go, :mod:`rackwise.topology.domains`)."""


def _invalid(key: str, value: str, reason: str) -> InvalidConfigurationException:
    return InvalidConfigurationException(f"Invalid value {value} for configuration {key}: {reason}")


def _number(key: ConfigKey, value: str) -> float:
    parse: Callable[[str], float] = float if key.type == DOUBLE else int
    try:
        number = parse(value.strip())
    except ValueError:
        raise _invalid(key.name, value, f"Not a number of type {key.type}") from None
    if key.type == DOUBLE and not math.isfinite(number):
        raise _invalid(key.name, value, f"Not a number of type {key.type}")
    bits = 31 if key.type == INT else 63
    if key.type != DOUBLE and not -(2**bits) <= number < 2**bits:
        raise _invalid(key.name, value, f"Not a number of type {key.type}")
    return number


THROTTLED_REPLICA_KEYS: Final = frozenset(
    {"leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)


def _check_throttled_replicas(name: str, value: str) -> None:
    """Kafka's ``ThrottledReplicaListValidator``: ``*``, or ``partition:broker`` items (a
    blank item passes); the message shows the list as Java prints it."""
    trimmed = value.strip()
    items = [item.strip() for item in re.split(r"\s*,\s*", trimmed)] if trimmed else []
    if "".join(items) == "*" or all(re.fullmatch(r"([0-9]+:[0-9]+)?", i) for i in items):
        return
    reason = (
        f"{name} must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )
    raise _invalid(name, "[" + ", ".join(items) + "]", reason)


def _bound_text(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def check_topic_config(name: str, value: str) -> None:
    """Raise :class:`InvalidConfigurationException` unless ``value`` is valid for topic key
    ``name`` (Kafka's ``LogConfig.validate``, one key at a time)."""
    key = TOPIC_CONFIGS.get(name)
    if key is None:
        raise InvalidConfigurationException(f"Unknown topic config name: {name}")
    if key.type in (INT, LONG, DOUBLE):
        number = _number(key, value)
        if key.minimum is not None and number < key.minimum:
            raise _invalid(name, value, f"Value must be at least {_bound_text(key.minimum)}")
        if key.maximum is not None and number > key.maximum:
            raise _invalid(name, value, f"Value must be no more than {_bound_text(key.maximum)}")
    elif name in THROTTLED_REPLICA_KEYS:
        _check_throttled_replicas(name, value)
    elif name == LEADERS_PREFERENCE:
        try:
            parse_leaders_preference(value)
        except InvalidLeadersPreferenceException as e:
            raise _invalid(name, value, str(e)) from None
    elif key.type == BOOLEAN:
        if value.strip().lower() not in ("true", "false"):
            raise _invalid(name, value, "Expected value to be either true or false")
    elif key.choices is not None:
        parts = split_list(value) if key.type == LIST else [value.strip()]
        for part in parts:
            if part not in key.choices:
                allowed = ", ".join(key.choices)
                raise _invalid(name, value, f"String must be one of: {allowed}")


def split_list(value: str) -> list[str]:
    """A LIST value's items: comma separated, blanks dropped (Kafka's ``ConfigDef`` LIST)."""
    return [part.strip() for part in value.split(",") if part.strip()]


def is_list_key(name: str) -> bool:
    """Whether APPEND and SUBTRACT apply to topic key ``name``."""
    key = TOPIC_CONFIGS.get(name)
    return key is not None and key.type == LIST


def synonym_value(key: ConfigKey, configs: Mapping[str, str]) -> str | None:
    """The value of the first of ``key``'s broker-level synonyms set in ``configs``, in the
    key's unit, or None."""
    for synonym, factor in key.synonyms:
        text = configs.get(synonym)
        if text is None:
            continue
        if factor == 1:
            return text
        try:
            return str(int(text.strip()) * factor)
        except ValueError:
            return None
    return None
