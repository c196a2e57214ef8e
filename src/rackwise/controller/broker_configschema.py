"""The broker configuration keys and the checks Kafka's broker makes of a dynamic change to
them (Kafka's ``KafkaConfig`` definitions, ``DynamicBrokerConfig`` and ``DynamicConfig.Broker``,
``ConfigAdminManager``).

Goals
    * Know every broker key a Kafka 4 broker knows: its type, its default, whether it can be
      changed without a restart and at which level (Kafka's update modes: ``read-only``,
      ``per-broker``, ``cluster-wide``), so that DescribeConfigs lists them all and
      IncrementalAlterConfigs and AlterConfigs refuse what Kafka refuses, in Kafka's words.
    * Merge the layers of a broker's configuration as Kafka does: a per-broker dynamic value
      over the cluster-wide dynamic default over the static ``.properties`` over the default,
      a key set in a higher layer hiding its synonyms below (``log.retention.ms`` set
      dynamically hides a static ``log.retention.hours``).

Constraints
    Pure: strings in, strings or typed errors out. The key table is data
    (:mod:`rackwise.controller.broker_config_table`). A change is refused with
    INVALID_REQUEST carrying Kafka's ``ConfigException`` message (Kafka's broker wraps it so,
    KAFKA-13609); an APPEND or SUBTRACT to a key that is not a LIST is INVALID_CONFIG. Keys
    Kafka does not know are accepted in a dynamic change and never checked, as Kafka's
    ``DynamicConfig.Broker.validate`` allows custom keys; their values are shown as secrets,
    since their type is unknown. Kafka's reconfiguration checks past the key's own type and
    range (a thread count changed by more than half, for one) are not made.

Algorithm
    :func:`check_dynamic_change`, in Kafka's order: keys that are not dynamic ("Cannot update
    these configs dynamically: Set(log.dirs)"); security keys without a listener prefix; each
    value parsed by its type and checked by its validator (a ``listener.name.<l>.`` prefix is
    checked as the key it overrides); at the cluster level, the keys that are only per broker.
    :func:`merge_layers` replays Kafka's ``overrideProps``: each key of a higher layer first
    removes its synonyms (:func:`broker_synonyms`), then is set.

Worked example
    ``check_dynamic_change({"replica.alter.log.dirs.io.max.bytes.per.second": "-1"}, True)``
    raises INVALID_REQUEST "Invalid value -1 for configuration
    replica.alter.log.dirs.io.max.bytes.per.second: Value must be at least 0";
    ``check_dynamic_change({"log.dirs": "/x"}, False)`` raises "Cannot update these configs
    dynamically: Set(log.dirs)". Static ``log.retention.hours=1`` with a cluster default
    ``log.retention.ms=5000`` merge to ``{"log.retention.ms": "5000"}``.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from rackwise.common.errors import InvalidConfigurationException, InvalidRequestException
from rackwise.controller.broker_config_table import KAFKA_PACKAGE, LONG_DEFAULTS, TABLE
from rackwise.topology import InvalidLeadersPreferenceException, parse_leaders_preference

DEFAULT_LEADERS_PREFERENCE: Final = "default.leaders.preference"
"""rackwise's broker default of the topic key ``leaders.preference``."""


class UpdateMode(enum.Enum):
    """Whether and where a broker key can be changed without a restart (Kafka's words)."""

    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


CONFIG_TYPE_IDS: Final = MappingProxyType(
    {
        "BOOLEAN": 1,
        "STRING": 2,
        "INT": 3,
        "SHORT": 4,
        "LONG": 5,
        "DOUBLE": 6,
        "LIST": 7,
        "CLASS": 8,
        "PASSWORD": 9,
    }
)
"""Kafka's ``DescribeConfigsResponse.ConfigType`` ids by ``ConfigDef.Type`` name."""
UNKNOWN_CONFIG_TYPE: Final = 0
"""The ``ConfigType`` of a key Kafka does not define."""

_MODES: Final = {
    "R": UpdateMode.READ_ONLY,
    "B": UpdateMode.PER_BROKER,
    "C": UpdateMode.CLUSTER_WIDE,
}
_NULL: Final = "~"
_REQUIRED: Final = "!"
_LONG: Final = "*"
_BITS: Final = {"SHORT": 15, "INT": 31, "LONG": 63}


@dataclass(frozen=True, slots=True)
class BrokerConfigKey:
    """One broker key: its ``ConfigDef.Type`` name, its default as Kafka prints it (None: null
    or required), its update mode, and its validator (bounds, allowed values; None: none)."""

    name: str
    type: str
    default: str | None
    mode: UpdateMode
    has_default: bool = True
    is_internal: bool = False
    is_dynamic_only: bool = False
    """Not a ``KafkaConfig`` key (the broker quota keys): listed only once set."""
    is_rackwise: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None

    @property
    def is_dynamic(self) -> bool:
        return self.mode is not UpdateMode.READ_ONLY

    @property
    def config_type_id(self) -> int:
        return CONFIG_TYPE_IDS.get(self.type, UNKNOWN_CONFIG_TYPE)


def _expand(text: str) -> str:
    return KAFKA_PACKAGE + text[1:] if text.startswith("$") else text


def _row(line: str) -> BrokerConfigKey:
    name, kind, default_text, mode_text, *rest = line.split("|")
    validator = rest[0] if rest else ""
    if default_text == _LONG:
        default_text = LONG_DEFAULTS[name]
    default = None if default_text in (_NULL, _REQUIRED) else _expand(default_text)
    minimum = maximum = None
    choices = None
    if validator.startswith(">="):
        minimum = float(validator[2:])
    elif validator.startswith("in:"):
        choices = tuple(validator[3:].split(","))
    elif ".." in validator:
        low, high = validator.split("..")
        minimum, maximum = float(low), float(high)
    flags = mode_text[1:]
    return BrokerConfigKey(
        name,
        kind,
        default,
        _MODES[mode_text[0]],
        has_default=default_text != _REQUIRED,
        is_internal="i" in flags,
        is_dynamic_only="d" in flags,
        is_rackwise="r" in flags,
        minimum=minimum,
        maximum=maximum,
        choices=choices,
    )


BROKER_CONFIGS: Final[Mapping[str, BrokerConfigKey]] = MappingProxyType(
    {key.name: key for key in map(_row, TABLE.splitlines())}
)
"""Every broker key, by name (module docstring)."""

DYNAMIC_SECURITY_CONFIGS: Final = frozenset(
    {
        "ssl.keystore.type",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.key.password",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.keystore.certificate.chain",
        "ssl.keystore.key",
        "ssl.truststore.certificates",
    }
)
"""Kafka's ``SslConfigs.RECONFIGURABLE_CONFIGS``: dynamic only with a listener prefix."""
CLUSTER_LEVEL_LISTENER_CONFIGS: Final = frozenset(
    {"max.connections", "max.connection.creation.rate", "num.network.threads"}
)
LISTENER_MECHANISM_CONFIGS: Final = (
    "sasl.jaas.config",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.server.callback.handler.class",
    "connections.max.reauth.ms",
)
_LISTENER_PREFIX: Final = re.compile(r"listener\.name\.[^.]*\.(.*)")
_SYNONYM_GROUPS: Final = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def broker_key(name: str) -> BrokerConfigKey | None:
    """The key ``name``, or the key a ``listener.name.<listener>.`` prefix overrides, or None
    (Kafka's ``KafkaConfig.configType`` lookup)."""
    key = BROKER_CONFIGS.get(name)
    if key is not None:
        return key
    for synonym in broker_synonyms(name, match_listener_override=True)[1:]:
        key = BROKER_CONFIGS.get(synonym)
        if key is not None:
            return key
    return None


def is_sensitive(name: str) -> bool:
    """Whether DescribeConfigs hides the value of ``name``: a PASSWORD, or a key of unknown
    type (Kafka's ``KafkaConfig.maybeSensitive``)."""
    key = broker_key(name)
    return key is None or key.type == "PASSWORD"


def broker_synonyms(name: str, *, match_listener_override: bool) -> list[str]:
    """The keys that set the same value as ``name``, most specific first (Kafka's
    ``DynamicBrokerConfig.brokerConfigSynonyms``)."""
    for group in _SYNONYM_GROUPS:
        if name in group:
            return list(group)
    if name == "log.flush.interval.ms":
        return [name, "log.flush.scheduler.interval.ms"]
    if match_listener_override:
        match = _LISTENER_PREFIX.fullmatch(name)
        if match is not None:
            base = match.group(1)
            mechanism = next((m for m in LISTENER_MECHANISM_CONFIGS if base.endswith(m)), None)
            return [name, mechanism or base]
    return [name]


def merge_layers(*layers: Mapping[str, str]) -> dict[str, str]:
    """The layers merged, lowest first: each key of a later layer removes its synonyms from
    what came before, then is set (Kafka's ``overrideProps``)."""
    merged: dict[str, str] = {}
    for layer in layers:
        for key, value in layer.items():
            for synonym in broker_synonyms(key, match_listener_override=False):
                merged.pop(synonym, None)
            merged[key] = value
    return merged


# ---- values ------------------------------------------------------------------------------------


def _invalid(name: str, value: object, reason: str) -> InvalidConfigurationException:
    return InvalidConfigurationException(
        f"Invalid value {value} for configuration {name}: {reason}"
    )


def _number_text(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(number)


def _parse_number(key: BrokerConfigKey, name: str, value: str) -> int | float:
    text = value.strip()
    try:
        number: int | float = float(text) if key.type == "DOUBLE" else int(text)
    except ValueError:
        raise _invalid(name, value, f"Not a number of type {key.type}") from None
    if key.type == "DOUBLE":
        if math.isnan(number):
            raise _invalid(name, value, f"Not a number of type {key.type}")
        return number
    bits = _BITS[key.type]
    if not -(2**bits) <= number < 2**bits:
        raise _invalid(name, value, f"Not a number of type {key.type}")
    return number


def _check_range(key: BrokerConfigKey, name: str, number: float) -> None:
    shown = _number_text(number)
    if key.minimum is not None and number < key.minimum:
        raise _invalid(name, shown, f"Value must be at least {_number_text(key.minimum)}")
    if key.maximum is not None and number > key.maximum:
        raise _invalid(name, shown, f"Value must be no more than {_number_text(key.maximum)}")


def _check_choices(key: BrokerConfigKey, name: str, parts: Iterable[str], value: str) -> None:
    if key.choices is None:
        return
    for part in parts:
        if part not in key.choices:
            allowed = ", ".join(key.choices)
            raise _invalid(name, value, f"String must be one of: {allowed}")


def parse_value(name: str, value: str) -> str:
    """``value`` of broker key ``name`` as Kafka holds it once parsed (``" 16 "`` is ``16``,
    ``"a, b"`` is ``a,b``, ``"TRUE"`` is ``true``); raises INVALID_CONFIG with Kafka's
    ``ConfigDef`` message when its type or validator refuses it. A key Kafka does not know is
    returned as given."""
    key = broker_key(name)
    if key is None:
        return value
    if key.type in _BITS or key.type == "DOUBLE":
        number = _parse_number(key, name, value)
        _check_range(key, name, number)
        return str(number) if isinstance(number, int) else repr(number)
    if key.type == "BOOLEAN":
        lowered = value.strip().lower()
        if lowered not in ("true", "false"):
            raise _invalid(name, value, "Expected value to be either true or false")
        return lowered
    if key.type == "LIST":
        parts = [part.strip() for part in value.split(",")] if value.strip() else []
        _check_choices(key, name, parts, value)
        return ",".join(parts)
    if key.type in ("STRING", "CLASS", "PASSWORD"):
        text = value.strip()
        _check_choices(key, name, [text], value)
        if name == DEFAULT_LEADERS_PREFERENCE:
            try:
                text = str(parse_leaders_preference(text))
            except InvalidLeadersPreferenceException as e:
                raise _invalid(name, value, str(e)) from None
        return text
    return value


def is_list_key(name: str) -> bool:
    """Whether APPEND and SUBTRACT apply to broker key ``name``; raises INVALID_CONFIG for a
    key Kafka does not know."""
    key = broker_key(name)
    if key is None:
        raise InvalidConfigurationException(f"Unknown config name: {name}")
    return key.type == "LIST"


# ---- dynamic changes ---------------------------------------------------------------------------


def scala_set(names: Iterable[str]) -> str:
    """Names as Kafka's broker prints a Scala ``Set`` in its messages: ``Set(a, b)``."""
    return f"Set({', '.join(names)})"


def non_dynamic_keys(names: Iterable[str]) -> list[str]:
    """The Kafka keys among ``names`` that cannot change without a restart."""
    return [
        name
        for name in names
        if (key := BROKER_CONFIGS.get(name)) is not None and not key.is_dynamic
    ]


def per_broker_keys(names: Iterable[str]) -> list[str]:
    """The keys among ``names`` that can only be set for one broker, not the cluster."""
    out = []
    for name in names:
        key = BROKER_CONFIGS.get(name)
        if key is not None and key.mode is UpdateMode.PER_BROKER:
            out.append(name)
            continue
        match = _LISTENER_PREFIX.fullmatch(name)
        if match is not None and match.group(1) not in CLUSTER_LEVEL_LISTENER_CONFIGS:
            out.append(name)
    return out


def _base_name(name: str) -> str:
    match = _LISTENER_PREFIX.fullmatch(name)
    return match.group(1) if match is not None else name


def check_dynamic_change(props: Mapping[str, str], per_broker: bool) -> None:
    """Raise INVALID_REQUEST unless ``props`` may be a broker's dynamic configuration
    (``per_broker``) or the cluster's default one (Kafka's ``validateConfigs``)."""
    fixed = non_dynamic_keys(props)
    if fixed:
        raise InvalidRequestException(
            f"Cannot update these configs dynamically: {scala_set(fixed)}"
        )
    bare = [name for name in props if name in DYNAMIC_SECURITY_CONFIGS]
    if bare:
        raise InvalidRequestException(
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {scala_set(bare)}"
        )
    for name, value in props.items():
        base = _base_name(name)
        key = BROKER_CONFIGS.get(base)
        if key is None or not key.is_dynamic:
            continue
        try:
            parse_value(base, value)
        except InvalidConfigurationException as e:
            raise InvalidRequestException(str(e)) from None
    if not per_broker:
        only_per_broker = per_broker_keys(props)
        if only_per_broker:
            raise InvalidRequestException(
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {scala_set(only_per_broker)}"
            )


def usable_dynamic_layer(configs: Mapping[str, str], per_broker: bool) -> dict[str, str]:
    """The part of a stored dynamic configuration a broker applies: keys that are not
    dynamic, values their type refuses and, at the cluster level, per-broker keys are left
    out (Kafka's ``fromPersistentProps``)."""
    out: dict[str, str] = {}
    for name, value in configs.items():
        if name in DYNAMIC_SECURITY_CONFIGS or non_dynamic_keys([name]):
            continue
        if not per_broker and per_broker_keys([name]):
            continue
        base = _base_name(name)
        if broker_key(base) is not None:
            try:
                parse_value(base, value)
            except InvalidConfigurationException:
                continue
        out[name] = value
    return out
