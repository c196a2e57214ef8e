"""What ``kafka-configs.sh`` asks a cluster and prints for topics, brokers and the broker
default (Kafka's ``ConfigCommand`` over its admin client): DescribeConfigs and
IncrementalAlterConfigs, and its lines; its arguments are :mod:`rackwise.client.config_args`'s.

Goals
    A script written against ``kafka-configs.sh --bootstrap-server`` for topics and brokers
    runs unchanged against ``rackwise configs`` and reads the same lines: ``Dynamic configs
    for topic t are:`` and one ``  k=v sensitive=false synonyms={...}`` per key,
    ``Completed updating config for topic t.``, and Kafka's message for each bad argument.

Constraints
    * A failure of the cluster raises :class:`ConfigsFailure` whose ``java_text`` is what
      Kafka prints below ``Error while executing config command with args '...'``
      (``java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.
      InvalidConfigurationException: Unknown topic config name: x``).
    * The requests go through :class:`~rackwise.client.connections.Connections`, as Kafka's
      admin client sends them: a broker's resource to that broker (found with
      DescribeCluster), a topic's and the broker default's to any broker. An alteration first
      describes the resource (without synonyms) so that a key to delete that is not set is
      refused before anything changes (``Invalid config(s): k``), then sends one
      IncrementalAlterConfigs of SET and DELETE operations.

Worked example
    Topic ``t`` with ``retention.ms=1000`` set: :meth:`ConfigsAdmin.dynamic` gives its one
    entry whose source is DYNAMIC_TOPIC_CONFIG, which :func:`header` and :func:`entry_line`
    print as ``Dynamic configs for topic t are:`` and ``  retention.ms=1000 sensitive=false
    synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, DEFAULT_CONFIG:...}`` (the synonyms in
    the broker's order); an IncrementalAlterConfigs answered INVALID_CONFIG raises
    :class:`ConfigsFailure` with ``java.util.concurrent.ExecutionException:
    org.apache.kafka.common.errors.InvalidConfigurationException: Unknown topic config name: x``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.client.config_args import BROKER_DEFAULT, BROKERS, TOPICS, ConfigsArgumentError
from rackwise.client.connections import Connections
from rackwise.client.groups import GroupsError, Node
from rackwise.common.error_codes import NONE, UNKNOWN_SERVER_ERROR
from rackwise.common.error_table import describe as describe_error
from rackwise.common.errors import RackwiseError
from rackwise.common.java import java_hashmap_order, java_string_hash
from rackwise.protocol import ApiKey

RESOURCE_TYPES: Final = {TOPICS: 2, BROKERS: 4}
"""ConfigResource.Type on the wire."""
CONFIG_SOURCES: Final = {
    0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG", 7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}  # fmt: skip
"""The wire's config source as the admin client's ``ConfigEntry.ConfigSource`` names it."""
TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
SET, DELETE = 0, 1
EXECUTION: Final = "java.util.concurrent.ExecutionException: "
ERRORS_PACKAGE: Final = "org.apache.kafka.common.errors."
_TOPIC_NAME: Final = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME: Final = 249


class ConfigsFailure(RackwiseError):
    """A request the cluster refused or did not answer; ``java_text`` is Kafka's exception."""

    def __init__(self, java_text: str) -> None:
        super().__init__(java_text)
        self.java_text = java_text


@dataclass(frozen=True, slots=True)
class Entry:
    """One config entry as DescribeConfigs gives it; sources by their Java name."""

    name: str
    value: str | None
    is_sensitive: bool
    source: str
    synonyms: tuple[tuple[str, str, str | None], ...]
    """(source, name, value) of each synonym, in the broker's order."""


def validate_topic(name: str) -> None:
    """Kafka's ``Topic.validate``, failing as its ``InvalidTopicException``."""
    if name in (".", ".."):
        message = 'Topic name cannot be "." or ".."'
    elif len(name) > MAX_TOPIC_NAME:
        message = (
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters, "
            f"topic name: {name}"
        )
    elif not _TOPIC_NAME.fullmatch(name):
        message = (
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )
    else:
        return
    raise ConfigsFailure(f"{ERRORS_PACKAGE}InvalidTopicException: {message}")


# ---- the lines ---------------------------------------------------------------------------------


def header(entity_type: str, name: str, *, describe_all: bool) -> str:
    """The line above an entity's configs."""
    if name == BROKER_DEFAULT:
        return f"Default configs for {entity_type} in the cluster are:"
    return f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {name} are:"


def entry_line(entry: Entry) -> str:
    """``  k=v sensitive=false synonyms={SOURCE:k=v, ...}``, ``null`` for a missing value."""
    synonyms = ", ".join(f"{s}:{n}={_java(v)}" for s, n, v in entry.synonyms)
    sensitive = "true" if entry.is_sensitive else "false"
    return f"  {entry.name}={_java(entry.value)} sensitive={sensitive} synonyms={{{synonyms}}}"


def completed_line(entity_type: str, name: str) -> str:
    if name == BROKER_DEFAULT:
        return f"Completed updating default config for {entity_type} in the cluster."
    return f"Completed updating config for {entity_type[:-1]} {name}."


def _java(value: str | None) -> str:
    return "null" if value is None else value


# ---- the cluster -------------------------------------------------------------------------------


def _failure(error: GroupsError) -> ConfigsFailure:
    """A connection's failure as the admin client's future fails."""
    return ConfigsFailure(EXECUTION + error.java_text)


def _refused(code: int, message: str | None) -> ConfigsFailure:
    """An error code a broker answered, as the exception Kafka's admin client makes of it
    (its default message when the broker gave none)."""
    known = describe_error(code) or describe_error(UNKNOWN_SERVER_ERROR)
    assert known is not None and known.exception is not None
    return ConfigsFailure(
        f"{EXECUTION}{ERRORS_PACKAGE}{known.exception}: {message or known.message}"
    )


class ConfigsAdmin:
    """DescribeConfigs and IncrementalAlterConfigs for one entity type, over ``connections``."""

    def __init__(self, connections: Connections, entity_type: str) -> None:
        self.connections = connections
        self.entity_type = entity_type

    async def _node(self, name: str) -> Node | None:
        """Where a resource's requests go: a broker's own, else any broker."""
        if self.entity_type != BROKERS or name == BROKER_DEFAULT:
            return None
        for node in await self._brokers():
            if node.id == int(name):
                return node
        raise ConfigsFailure(
            f"{EXECUTION}{ERRORS_PACKAGE}TimeoutException: Timed out waiting for a node "
            f"assignment. Call: describeConfigs (broker {name} is not in the cluster)"
        )

    async def _brokers(self) -> list[Node]:
        try:
            response = await self.connections.send(
                None,
                ApiKey.DESCRIBE_CLUSTER,
                {"include_cluster_authorized_operations": False, "endpoint_type": 1,
                 "include_fenced_brokers": False},
            )  # fmt: skip
        except GroupsError as e:
            raise _failure(e) from None
        if int(response.error_code) != NONE:
            raise _refused(int(response.error_code), response.error_message)
        return [Node(int(b.broker_id), str(b.host), int(b.port)) for b in response.brokers]

    async def entity_names(self) -> list[str]:
        """Every entity of the type, as the tool lists them when no name is given: each
        topic (internal ones too) in ``HashSet`` order, or each broker then the default."""
        if self.entity_type == BROKERS:
            return [str(node.id) for node in await self._brokers()] + [BROKER_DEFAULT]
        values = {"topics": None, "allow_auto_topic_creation": False,
                  "include_topic_authorized_operations": False}  # fmt: skip
        try:
            response = await self.connections.send(None, ApiKey.METADATA, values, min_version=1)
        except GroupsError as e:
            raise _failure(e) from None
        names = [str(t.name) for t in response.topics if int(t.error_code) == NONE]
        return java_hashmap_order(names, java_string_hash, exact=False)

    async def describe(self, name: str, *, synonyms: bool = True) -> list[Entry]:
        """The resource's entries, sorted by name."""
        if self.entity_type == TOPICS and name:
            validate_topic(name)
        resource = {"resource_type": RESOURCE_TYPES[self.entity_type], "resource_name": name,
                    "configuration_keys": None}  # fmt: skip
        values = {"resources": [resource], "include_synonyms": synonyms,
                  "include_documentation": False}  # fmt: skip
        try:
            response = await self.connections.send(
                await self._node(name), ApiKey.DESCRIBE_CONFIGS, values, min_version=1
            )
        except GroupsError as e:
            raise _failure(e) from None
        (result,) = response.results
        if int(result.error_code) != NONE:
            raise _refused(int(result.error_code), result.error_message)
        return sorted((_entry(c) for c in result.configs), key=lambda e: e.name)

    async def dynamic(self, name: str, *, describe_all: bool, synonyms: bool = True) -> list[Entry]:
        """What ``--describe`` prints of the resource: the keys set on it (with ``--all``,
        every key)."""
        entries = await self.describe(name, synonyms=synonyms)
        if describe_all:
            return entries
        return [e for e in entries if e.source == CONFIG_SOURCES[self._dynamic_source(name)]]

    def _dynamic_source(self, name: str) -> int:
        if self.entity_type == TOPICS:
            return TOPIC_CONFIG
        return DYNAMIC_DEFAULT_BROKER_CONFIG if name == BROKER_DEFAULT else DYNAMIC_BROKER_CONFIG

    async def alter(self, name: str, add: Mapping[str, str], delete: Sequence[str]) -> None:
        """Set ``add`` and delete ``delete`` on the resource, once every key to delete is set
        on it."""
        current = {e.name for e in await self.dynamic(name, describe_all=False, synonyms=False)}
        missing = [key for key in delete if key not in current]
        if missing:
            raise ConfigsArgumentError(f"Invalid config(s): {','.join(missing)}")
        operations = [{"name": k, "config_operation": SET, "value": v} for k, v in add.items()]
        operations += [{"name": k, "config_operation": DELETE, "value": ""} for k in delete]
        resource = {"resource_type": RESOURCE_TYPES[self.entity_type], "resource_name": name,
                    "configs": operations}  # fmt: skip
        try:
            response = await self.connections.send(
                await self._node(name),
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                {"resources": [resource], "validate_only": False},
            )
        except GroupsError as e:
            raise _failure(e) from None
        (result,) = response.responses
        if int(result.error_code) != NONE:
            raise _refused(int(result.error_code), result.error_message)


def _entry(config: Any) -> Entry:
    synonyms = tuple(
        (CONFIG_SOURCES.get(int(s.source), "UNKNOWN"), str(s.name), s.value)
        for s in config.synonyms
    )
    return Entry(
        str(config.name),
        config.value,
        bool(config.is_sensitive),
        CONFIG_SOURCES.get(int(config.config_source), "UNKNOWN"),
        synonyms,
    )
