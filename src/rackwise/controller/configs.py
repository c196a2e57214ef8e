"""Dynamic configuration of topics and brokers, as ConfigRecords (Kafka's
``ConfigurationControlManager`` with the checks of its ``ControllerConfigurationValidator``).

A topic's keys are checked against :data:`~rackwise.controller.configschema.TOPIC_CONFIGS`
(an unknown key or a bad value is INVALID_CONFIG, in Kafka's words). Broker keys are not
checked here: a broker checks its own keys before it forwards a change, as Kafka's do; the
controller checks only that the resource names a broker (or "", the cluster-wide default).

APPEND and SUBTRACT apply to LIST keys only, of topics or of brokers (the broker's types are
:data:`~rackwise.controller.broker_configschema.BROKER_CONFIGS`), starting from the key's
default when it is not set. Each resource succeeds or fails as a whole; resources are
independent. A change that sets a
topic key to its current value writes nothing; a broker key is written even then, as Kafka
does (KAFKA-14136: it makes brokers reload the value).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rackwise.common.errors import (
    InvalidConfigurationException,
    InvalidRequestException,
    RackwiseError,
    UnknownTopicOrPartitionException,
)
from rackwise.controller.broker_configschema import BROKER_CONFIGS
from rackwise.controller.config import ControllerConfig
from rackwise.controller.configschema import (
    TOPIC_CONFIGS,
    check_topic_config,
    is_list_key,
    split_list,
    synonym_value,
)
from rackwise.controller.domains import RackRule, check_assignment_domains
from rackwise.controller.errors import SUCCESS, ApiError, BrokerIdNotRegisteredException
from rackwise.controller.messages import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsResourceResult,
    ConfigEntry,
    ConfigSource,
    DescribeConfigsResult,
)
from rackwise.controller.names import validate_topic_name
from rackwise.image import ConfigResource, MetadataImage
from rackwise.records.constants import BROKER_RESOURCE, TOPIC_RESOURCE
from rackwise.records.metadata import ConfigRecord

CLUSTER_DEFAULT = ""
"""The BROKER resource name of the cluster-wide default broker configuration."""


def is_sensitive(key: str) -> bool:
    """Whether a broker key holds a secret (Kafka's PASSWORD type), which is never shown."""
    return key.endswith((".password", ".secret")) or key.endswith("jaas.config")


def _is_broker_list_key(name: str) -> bool:
    key = BROKER_CONFIGS.get(name)
    return key is not None and key.type == "LIST"


def _default(resource: ConfigResource, name: str) -> str | None:
    """The default of key ``name`` of ``resource``'s type (APPEND and SUBTRACT start from it)."""
    if resource.resource_type == TOPIC_RESOURCE:
        return TOPIC_CONFIGS[name].default
    key = BROKER_CONFIGS.get(name)
    return None if key is None else key.default


class ConfigControl:
    """Alters and describes configurations; the static configuration is the node's own."""

    def __init__(self, config: ControllerConfig) -> None:
        self.config = config

    # ---- reading ---------------------------------------------------------------------------

    @staticmethod
    def _keys(image: MetadataImage, resource_type: int, name: str) -> Mapping[str, str]:
        return image.configs.get(ConfigResource(resource_type, name), {})

    def topic_entry(
        self, image: MetadataImage, key: str, overrides: Mapping[str, str]
    ) -> ConfigEntry:
        """The effective value of topic key ``key`` given the topic's ``overrides``: the
        override, the cluster-wide dynamic synonym, the static synonym, or the default."""
        if key in overrides:
            return ConfigEntry(key, overrides[key], ConfigSource.TOPIC_CONFIG)
        spec = TOPIC_CONFIGS[key]
        layers = (
            (
                self._keys(image, BROKER_RESOURCE, str(self.config.node_id)),
                ConfigSource.DYNAMIC_BROKER_CONFIG,
            ),
            (
                self._keys(image, BROKER_RESOURCE, CLUSTER_DEFAULT),
                ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            ),
            (self.config.static, ConfigSource.STATIC_BROKER_CONFIG),
        )
        for configs, source in layers:
            value = synonym_value(spec, configs)
            if value is not None:
                return ConfigEntry(key, value, source)
        return ConfigEntry(key, spec.default, ConfigSource.DEFAULT_CONFIG)

    def topic_value(self, image: MetadataImage, topic: str, key: str) -> str:
        """The effective value of ``key`` for the existing topic ``topic``."""
        entry = self.topic_entry(image, key, image.topic_configs(topic))
        return entry.value if entry.value is not None else TOPIC_CONFIGS[key].default

    def effective_topic_configs(
        self, image: MetadataImage, overrides: Mapping[str, str]
    ) -> tuple[ConfigEntry, ...]:
        """Every topic key's effective value for a topic with ``overrides``, by name."""
        return tuple(self.topic_entry(image, key, overrides) for key in sorted(TOPIC_CONFIGS))

    def _broker_entries(self, image: MetadataImage, name: str) -> list[ConfigEntry]:
        layers: list[tuple[Mapping[str, str], ConfigSource]] = []
        if name and name == str(self.config.node_id):
            layers.append((self.config.static, ConfigSource.STATIC_BROKER_CONFIG))
        layers.append(
            (
                self._keys(image, BROKER_RESOURCE, CLUSTER_DEFAULT),
                ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
            )
        )
        if name:
            layers.append(
                (self._keys(image, BROKER_RESOURCE, name), ConfigSource.DYNAMIC_BROKER_CONFIG)
            )
        merged: dict[str, ConfigEntry] = {}
        for configs, source in layers:  # later layers win
            for key, value in configs.items():
                hidden = is_sensitive(key)
                merged[key] = ConfigEntry(key, None if hidden else value, source, False, hidden)
        return [merged[key] for key in sorted(merged)]

    def describe_configs(
        self, image: MetadataImage, resources: Mapping[ConfigResource, Sequence[str] | None]
    ) -> list[DescribeConfigsResult]:
        """Each resource's configuration (only ``keys`` when given), or its error."""
        results = []
        for resource, keys in resources.items():
            try:
                self._check_resource(image, resource)
                if resource.resource_type == TOPIC_RESOURCE:
                    overrides = image.topic_configs(resource.name)
                    entries = list(self.effective_topic_configs(image, overrides))
                else:
                    entries = self._broker_entries(image, resource.name)
            except RackwiseError as e:
                results.append(DescribeConfigsResult(resource, ApiError.of(e)))
                continue
            if keys:
                wanted = set(keys)
                entries = [e for e in entries if e.name in wanted]
            results.append(DescribeConfigsResult(resource, SUCCESS, tuple(entries)))
        return results

    # ---- checking --------------------------------------------------------------------------

    def _check_name(self, resource: ConfigResource) -> None:
        if resource.resource_type == TOPIC_RESOURCE:
            if not resource.name:
                raise InvalidRequestException("Default topic resources are not allowed.")
            validate_topic_name(resource.name)
        elif resource.resource_type == BROKER_RESOURCE:
            if resource.name:
                try:
                    broker_id = int(resource.name, 10)
                except ValueError:
                    raise InvalidRequestException(
                        "Unable to parse broker name as a base 10 number."
                    ) from None
                if broker_id < 0:
                    raise InvalidRequestException("Invalid negative broker ID.")
        else:
            raise InvalidRequestException(f"Unknown resource type {resource.resource_type}")

    def _check_resource(self, image: MetadataImage, resource: ConfigResource) -> None:
        """The resource's name is valid and it exists (Kafka's validator, then its
        existence checker)."""
        self._check_name(resource)
        self._check_exists(image, resource)

    def _check_exists(self, image: MetadataImage, resource: ConfigResource) -> None:
        if resource.resource_type == TOPIC_RESOURCE:
            if resource.name not in image.topics_by_name:
                raise UnknownTopicOrPartitionException(
                    f"The topic '{resource.name}' does not exist."
                )
        elif resource.name:
            node = int(resource.name)
            if node not in image.brokers and node not in self.config.controller_ids:
                raise BrokerIdNotRegisteredException(f"No node with id {node} found.")

    def check_topic_configs(self, configs: Mapping[str, str | None]) -> None:
        """Raise INVALID_CONFIG for null values or keys and values ``LogConfig`` refuses."""
        nulls = [key for key, value in configs.items() if value is None]
        if nulls:
            raise InvalidConfigurationException(
                f"Null value not supported for topic configs: {','.join(nulls)}"
            )
        for key, value in configs.items():
            assert value is not None
            check_topic_config(key, value)

    # ---- altering --------------------------------------------------------------------------

    @staticmethod
    def config_records(resource: ConfigResource, changes: Mapping[str, str | None]) -> list[Any]:
        return [
            ConfigRecord(
                resource_type=resource.resource_type,
                resource_name=resource.name,
                name=key,
                value=changes[key],
            )
            for key in sorted(changes)
        ]

    def _new_value(
        self, resource: ConfigResource, change: AlterableConfig, current: str | None
    ) -> str | None:
        if change.op == AlterConfigOp.SET:
            return change.value
        if change.op == AlterConfigOp.DELETE:
            return None
        is_topic = resource.resource_type == TOPIC_RESOURCE
        splittable = is_list_key(change.name) if is_topic else _is_broker_list_key(change.name)
        if not splittable:
            raise InvalidConfigurationException(
                f"Can't {change.op.name} to key {change.name} because its type is not LIST."
            )
        if current is None:
            current = _default(resource, change.name)
        parts = split_list(current or "")
        for item in (change.value or "").split(","):
            if change.op == AlterConfigOp.APPEND and item not in parts:
                parts.append(item)
            elif change.op == AlterConfigOp.SUBTRACT and item in parts:
                parts.remove(item)
        return ",".join(parts)

    def _alter_one(
        self,
        image: MetadataImage,
        resource: ConfigResource,
        wanted: Mapping[str, str | None],
        implicit_deletes: Sequence[str],
    ) -> list[Any]:
        current = dict(self._keys(image, resource.resource_type, resource.name))
        is_broker = resource.resource_type == BROKER_RESOURCE
        changes = {
            key: value for key, value in wanted.items() if is_broker or current.get(key) != value
        }
        self._check_name(resource)
        if resource.resource_type == TOPIC_RESOURCE:
            result = dict(current)
            for key, value in changes.items():
                if value is None:
                    result.pop(key, None)
                else:
                    result[key] = value
            for key in implicit_deletes:
                result.pop(key, None)
            self.check_topic_configs(result)
        self._check_exists(image, resource)
        if resource.resource_type == TOPIC_RESOURCE:
            self._check_domains(image, resource.name, result)
        changes.update({key: None for key in implicit_deletes if key in current})
        return self.config_records(resource, changes)

    def _check_domains(self, image: MetadataImage, name: str, overrides: Mapping[str, str]) -> None:
        """Refuse a ``min.insync.racks`` the topic's current assignment cannot meet."""
        topic = image.topic(name)
        if topic is None:
            return
        values = {e.name: e.value for e in self.effective_topic_configs(image, overrides)}
        rows = {p: r.replicas for p, r in topic.partitions.items()}
        check_assignment_domains(image, name, rows, RackRule.of(values), manual=False)

    def incremental_alter_configs(
        self,
        image: MetadataImage,
        changes: Mapping[ConfigResource, Sequence[AlterableConfig]],
        records: list[Any],
    ) -> list[AlterConfigsResourceResult]:
        """IncrementalAlterConfigs: each resource's SET / DELETE / APPEND / SUBTRACT operations
        as ConfigRecords appended to ``records`` (none for a resource that fails)."""
        results = []
        for resource, ops in changes.items():
            try:
                current = self._keys(image, resource.resource_type, resource.name)
                wanted: dict[str, str | None] = {}
                for change in ops:
                    base = (
                        wanted[change.name] if change.name in wanted else current.get(change.name)
                    )
                    wanted[change.name] = self._new_value(resource, change, base)
                made = self._alter_one(image, resource, wanted, ())
            except RackwiseError as e:
                results.append(AlterConfigsResourceResult(resource, ApiError.of(e)))
                continue
            records.extend(made)
            results.append(AlterConfigsResourceResult(resource))
        return results

    def alter_configs(
        self,
        image: MetadataImage,
        configs: Mapping[ConfigResource, Mapping[str, str]],
        records: list[Any],
    ) -> list[AlterConfigsResourceResult]:
        """The legacy AlterConfigs: each resource's keys become exactly ``configs[resource]``
        (keys not named are deleted)."""
        results = []
        for resource, wanted in configs.items():
            current = self._keys(image, resource.resource_type, resource.name)
            dropped = [key for key in sorted(current) if key not in wanted]
            try:
                made = self._alter_one(image, resource, dict(wanted), dropped)
            except RackwiseError as e:
                results.append(AlterConfigsResourceResult(resource, ApiError.of(e)))
                continue
            records.extend(made)
            results.append(AlterConfigsResourceResult(resource))
        return results
