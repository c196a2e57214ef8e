"""What a broker answers to DescribeConfigs, from its metadata image and its own static
configuration (pure: image and request in, response message out; Kafka's ``ConfigHelper``).
Changes (IncrementalAlterConfigs, AlterConfigs) are :mod:`rackwise.broker.alter_configs`'s.

Goals
    * kafka-python, librdkafka and aiokafka read a topic's every key with its effective value
      and source, and a broker's every key (all that Kafka 4's ``KafkaConfig`` defines, not only
      those in its ``.properties``) with its value, source, type and whether it is read-only,
      as a KRaft broker of Kafka shows them.

Constraints
    * Topic resources: every key of the topic schema, the topic's override else the broker's
      (dynamic, then static) synonym else the default. Broker resources: this broker's id
      lists every non-internal key plus any key set in a layer; "" lists the cluster-wide
      dynamic defaults only. Read-only means not dynamically updatable; passwords and keys of
      unknown type are hidden (Kafka's ``maybeSensitive``). BROKER_LOGGER resources are
      answered empty. An item that fails carries its own error (UNKNOWN_TOPIC_OR_PARTITION,
      INVALID_TOPIC_EXCEPTION, INVALID_REQUEST); the others are answered.

Algorithm
    A broker key's value and source come from its layers (:mod:`rackwise.node.dynamic_config`):
    the first of this broker's dynamic values, the cluster default, the static properties and
    the default that sets it; its synonyms (when asked) list every layer's value of the key
    and of its synonyms (``log.retention.ms``, ``.minutes``, ``.hours``) from the key's own
    first entry on, as Kafka's ``configSynonyms`` does.

Worked example
    Broker 1 started with ``log.retention.ms=1000`` and topic ``t`` overriding
    ``retention.ms=5``: DescribeConfigs of ``t`` with synonyms shows ``retention.ms=5``
    (TOPIC_CONFIG) with synonyms ``retention.ms=5`` (TOPIC_CONFIG), ``log.retention.ms=1000``
    (STATIC_BROKER_CONFIG) and the default; of broker ``1`` shows ``log.retention.ms=1000``
    (STATIC_BROKER_CONFIG, dynamic so not read-only) and ``log.dirs`` (read-only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

from rackwise.broker.metadata_apis import BrokerInfo
from rackwise.common.error_codes import NONE, UNKNOWN_TOPIC_OR_PARTITION
from rackwise.common.errors import InvalidRequestException, InvalidTopicException, RackwiseError
from rackwise.controller.broker_configschema import (
    BROKER_CONFIGS,
    UNKNOWN_CONFIG_TYPE,
    broker_key,
    broker_synonyms,
    is_sensitive,
)
from rackwise.controller.config import ControllerConfig
from rackwise.controller.configs import ConfigControl
from rackwise.controller.configschema import TOPIC_CONFIGS
from rackwise.controller.errors import ApiError
from rackwise.controller.messages import ConfigEntry, ConfigSource
from rackwise.controller.names import invalid_topic_reason
from rackwise.image import ConfigResource, MetadataImage
from rackwise.node.dynamic_config import ConfigLayers, current_value, layers_of, static_layer
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.records.constants import BROKER_LOGGER_RESOURCE, BROKER_RESOURCE, TOPIC_RESOURCE

CONFIG_TYPES: Final = MappingProxyType(
    {"BOOLEAN": 1, "STRING": 2, "INT": 3, "SHORT": 4, "LONG": 5, "DOUBLE": 6, "LIST": 7}
)
"""Kafka's ``DescribeConfigsResponse.ConfigType`` ids by ``ConfigDef.Type`` name (0 unknown)."""


def describe_configs(body: Any, image: MetadataImage, info: BrokerInfo) -> Response:
    """DescribeConfigs of topic and broker resources (Kafka's ``ConfigHelper``): a topic's
    every key with its effective value and source; the broker's own configuration (its static
    properties and the dynamic keys set for it or the cluster), or the cluster-wide dynamic
    defaults for the name ""; synonyms when asked."""
    include_synonyms = bool(getattr(body, "include_synonyms", False))
    control = ConfigControl(ControllerConfig(node_id=info.node_id, static=info.static_config))
    results: list[dict[str, Any]] = []
    # A resource named twice is answered once, as Kafka's controller does.
    unique: dict[tuple[int, str], Any] = {}
    for resource in body.resources:
        unique.setdefault((int(resource.resource_type), str(resource.resource_name)), resource)
    for resource in unique.values():
        resource_type = int(resource.resource_type)
        name = str(resource.resource_name)
        keys = resource.configuration_keys
        try:
            if resource_type == TOPIC_RESOURCE:
                entries = _topic_entries(image, control, info, name, include_synonyms)
            elif resource_type == BROKER_RESOURCE:
                entries = _broker_entries(image, info, name, include_synonyms)
            elif resource_type == BROKER_LOGGER_RESOURCE:
                _check_broker_name(info, name, allow_default=False)
                entries = []
            else:
                raise InvalidRequestException(f"Unsupported resource type: {resource_type}")
        except RackwiseError as e:
            error = ApiError.of(e)
            results.append(
                {
                    "error_code": error.error_code,
                    "error_message": error.message,
                    "resource_type": resource_type,
                    "resource_name": name,
                    "configs": [],
                }
            )
            continue
        if keys:
            wanted = set(keys)
            entries = [e for e in entries if e["name"] in wanted]
        results.append(
            {
                "error_code": NONE,
                "error_message": None,
                "resource_type": resource_type,
                "resource_name": name,
                "configs": entries,
            }
        )
    version = int(type(body).__version__)
    return make(
        response_class(ApiKey.DESCRIBE_CONFIGS, version), {"throttle_time": 0, "results": results}
    )


class _UnknownTopic(RackwiseError):
    error_code = UNKNOWN_TOPIC_OR_PARTITION


def _topic_entries(
    image: MetadataImage, control: ConfigControl, info: BrokerInfo, name: str, synonyms: bool
) -> list[dict[str, Any]]:
    reason = invalid_topic_reason(name)
    if reason is not None:
        raise InvalidTopicException(f"Topic name is invalid: {reason}")
    if name not in image.topics_by_name:
        raise _UnknownTopic()
    overrides = image.topic_configs(name)
    entries = []
    for entry in control.effective_topic_configs(image, overrides):
        spec = TOPIC_CONFIGS[entry.name]
        entries.append(
            _entry(
                entry,
                CONFIG_TYPES.get(spec.type, 0),
                _topic_synonyms(image, info, entry, overrides) if synonyms else [],
            )
        )
    return entries


def _layers(
    image: MetadataImage, info: BrokerInfo, name: str
) -> list[tuple[Mapping[str, str], ConfigSource]]:
    """The broker configuration layers, most specific first, for broker ``name`` ("" for the
    cluster-wide default)."""
    layers: list[tuple[Mapping[str, str], ConfigSource]] = []
    if name:
        layers.append(
            (
                image.configs.get(ConfigResource(BROKER_RESOURCE, name), {}),
                ConfigSource.DYNAMIC_BROKER_CONFIG,
            )
        )
    layers.append(
        (
            image.configs.get(ConfigResource(BROKER_RESOURCE, ""), {}),
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        )
    )
    if name:
        layers.append((info.static_config, ConfigSource.STATIC_BROKER_CONFIG))
    return layers


def _topic_synonyms(
    image: MetadataImage, info: BrokerInfo, entry: ConfigEntry, overrides: Mapping[str, str]
) -> list[dict[str, Any]]:
    """A topic key's synonyms, most specific first: the topic's override, then each
    broker-level synonym in each layer that sets it, then the default."""
    spec = TOPIC_CONFIGS[entry.name]
    out: list[dict[str, Any]] = []
    if entry.name in overrides:
        out.append(
            {
                "name": entry.name,
                "value": overrides[entry.name],
                "source": ConfigSource.TOPIC_CONFIG,
            }
        )
    for synonym, _factor in spec.synonyms:
        for configs, source in _layers(image, info, str(info.node_id)):
            if synonym in configs:
                out.append({"name": synonym, "value": configs[synonym], "source": int(source)})
    default_name = spec.synonyms[0][0] if spec.synonyms else entry.name
    if not spec.synonyms or spec.synonyms[0][1] == 1:
        out.append(
            {"name": default_name, "value": spec.default, "source": ConfigSource.DEFAULT_CONFIG}
        )
    return out


def _check_broker_name(info: BrokerInfo, name: str, *, allow_default: bool) -> None:
    if not name:
        if allow_default:
            return
        raise InvalidRequestException("Broker id must not be empty")
    try:
        broker_id = int(name)
    except ValueError:
        raise InvalidRequestException(f"Broker id must be an integer, but it is: {name}") from None
    if broker_id != info.node_id:
        expected = f"{info.node_id} or empty string" if allow_default else f"{info.node_id}"
        raise InvalidRequestException(
            f"Unexpected broker id, expected {expected}, but received {name}"
        )


_DEFAULTS: Final = MappingProxyType(
    {
        name: key.default
        for name, key in BROKER_CONFIGS.items()
        if key.has_default and not key.is_dynamic_only
    }
)
"""Kafka's ``KafkaConfig.defaultValues``: every key with a default (null included)."""
LISTED_KEYS: Final = frozenset(
    name for name, key in BROKER_CONFIGS.items() if not key.is_internal and not key.is_dynamic_only
)
"""The keys DescribeConfigs of a broker always lists (Kafka's ``nonInternalValues``)."""


def _broker_synonyms(
    layers: ConfigLayers, name: str, hidden: bool
) -> list[tuple[str, str | None, ConfigSource]]:
    """Every layer's value of ``name`` and its synonyms, most specific first, from ``name``'s
    own first entry on (Kafka's ``ConfigHelper.configSynonyms``)."""
    names = broker_synonyms(name, match_listener_override=True)
    found: list[tuple[str, str | None, ConfigSource]] = []
    sources: tuple[tuple[Mapping[str, str | None], ConfigSource], ...] = (
        (layers.broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (layers.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (layers.static, ConfigSource.STATIC_BROKER_CONFIG),
        (_DEFAULTS, ConfigSource.DEFAULT_CONFIG),
    )
    for configs, source in sources:
        found.extend(
            (synonym, None if hidden else configs[synonym], source)
            for synonym in names
            if synonym in configs
        )
    while found and found[0][0] != name:
        found.pop(0)
    return found


def broker_entry(
    layers: ConfigLayers, name: str, *, per_broker: bool, synonyms: bool
) -> dict[str, Any]:
    """One key of a broker's DescribeConfigs (Kafka's ``createBrokerConfigEntry``): its value
    as the broker holds it (for the cluster default: as stored), the source of the most
    specific layer that sets it, its type, read-only unless dynamic, secret when a password
    or of unknown type."""
    spec = broker_key(name)
    hidden = is_sensitive(name)
    value = current_value(layers, name) if per_broker else layers.cluster_default.get(name)
    chain = _broker_synonyms(layers, name, hidden)
    if not per_broker:
        chain = [s for s in chain if s[2] == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG]
    source = chain[0][2] if chain else ConfigSource.DEFAULT_CONFIG
    exact = BROKER_CONFIGS.get(name)
    entry = ConfigEntry(
        name,
        None if hidden else value,
        source,
        is_read_only=exact is None or not exact.is_dynamic,
        is_sensitive=hidden,
    )
    shown = [{"name": n, "value": v, "source": int(s)} for n, v, s in chain] if synonyms else []
    return _entry(entry, UNKNOWN_CONFIG_TYPE if spec is None else spec.config_type_id, shown)


def _broker_entries(
    image: MetadataImage, info: BrokerInfo, name: str, synonyms: bool
) -> list[dict[str, Any]]:
    """The broker's configuration: every key Kafka lists and every key set in a layer; for
    the cluster default (""), the keys set there."""
    _check_broker_name(info, name, allow_default=True)
    layers = layers_of(image, info.node_id, static_layer(info.static_config))
    per_broker = bool(name)
    keys = LISTED_KEYS | set(layers.merged) if per_broker else set(layers.cluster_default)
    return [
        broker_entry(layers, key, per_broker=per_broker, synonyms=synonyms) for key in sorted(keys)
    ]


def _entry(
    entry: ConfigEntry, config_type: int, synonyms: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    return {
        "name": entry.name,
        "value": entry.value,
        "read_only": entry.is_read_only,
        "config_source": int(entry.source),
        "is_sensitive": entry.is_sensitive,
        "synonyms": [dict(s, source=int(s["source"])) for s in synonyms],
        "config_type": config_type,
        "documentation": None,
    }
