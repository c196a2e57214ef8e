"""What ``kafka-configs.sh`` checks, asks a cluster and prints for topics, brokers and the
broker default (Kafka's ``ConfigCommand`` over its admin client): the checks of its
arguments, its ``--add-config`` syntax, DescribeConfigs and IncrementalAlterConfigs, and its
lines.

Goals
    A script written against ``kafka-configs.sh --bootstrap-server`` for topics and brokers
    runs unchanged against ``rackwise configs`` and reads the same lines: ``Dynamic configs
    for topic t are:`` and one ``  k=v sensitive=false synonyms={...}`` per key,
    ``Completed updating config for topic t.``, and Kafka's message for each bad argument.

Constraints
    * A bad argument raises :class:`ConfigsArgumentError` with the message Kafka's
      ``IllegalArgumentException`` carries (the tool prints it alone); where Kafka's message
      does not name the bad value (a malformed ``--add-config`` entry), the entry is added
      after it. Entity types Kafka knows but rackwise does not serve (users, clients, ips,
      broker-loggers, client-metrics, groups) are refused by name after Kafka's own checks.
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
    * ``--command-config`` serves ``client.id``, ``request.timeout.ms`` and
      ``security.protocol=PLAINTEXT`` (``bootstrap.servers`` is accepted and the flag wins);
      any other key is refused by name: rackwise speaks PLAINTEXT only.

Worked example
    ``parse_add_config("retention.ms=1000,cleanup.policy=[compact,delete]")`` is
    ``{"retention.ms": "1000", "cleanup.policy": "compact,delete"}``; describing topic ``t``
    with ``retention.ms=1000`` set prints ``Dynamic configs for topic t are:`` and
    ``  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000,
    DEFAULT_CONFIG:log.retention.ms=null}`` (as the broker gives the synonyms).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.client.connections import Connections
from rackwise.client.groups import GroupsError, Node
from rackwise.common.error_codes import NONE, UNKNOWN_SERVER_ERROR
from rackwise.common.error_table import describe as describe_error
from rackwise.common.errors import RackwiseError
from rackwise.common.java import java_hashmap_order, java_string_hash
from rackwise.formats.properties import parse_properties
from rackwise.protocol import ApiKey

TOPICS: Final = "topics"
BROKERS: Final = "brokers"
KAFKA_ENTITY_TYPES: Final = (
    "topics", "clients", "users", "brokers", "ips", "broker-loggers", "client-metrics", "groups",
)  # fmt: skip
"""Kafka's ``BrokerSupportedConfigTypes``, in its order."""
SERVED_ENTITY_TYPES: Final = (TOPICS, BROKERS)
BROKER_DEFAULT: Final = ""
"""The resource name of the cluster-wide broker default."""
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
COMMAND_CONFIG_KEYS: Final = frozenset(
    {"bootstrap.servers", "client.id", "request.timeout.ms", "security.protocol"}
)
CLIENT_ID: Final = "rackwise-configs"
DEFAULT_REQUEST_TIMEOUT_MS: Final = 30_000
EXECUTION: Final = "java.util.concurrent.ExecutionException: "
ERRORS_PACKAGE: Final = "org.apache.kafka.common.errors."
# A comma or an equals sign outside square brackets (Kafka's lookahead).
_OUTSIDE_BRACKETS: Final = r"(?=[^\]]*(?:\[|$))"
_ENTRIES: Final = re.compile("," + _OUTSIDE_BRACKETS)
_KEY_VALUE: Final = re.compile(r"\s*=\s*" + _OUTSIDE_BRACKETS)
_KEY: Final = re.compile(r"[a-zA-Z0-9._-]*")
_TOPIC_NAME: Final = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME: Final = 249


class ConfigsArgumentError(RackwiseError):
    """A bad argument, worded as Kafka's tool words it."""


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


# ---- the arguments -----------------------------------------------------------------------------


def parse_add_config(text: str) -> dict[str, str]:
    """``--add-config``'s pairs: entries split at commas outside square brackets, each split
    at its ``=``; brackets dropped from values (``k=[a,b]`` is ``a,b``), blanks trimmed."""
    entries = _ENTRIES.split(text)
    while len(entries) > 1 and not entries[-1]:  # Java's split drops trailing empty strings
        entries.pop()
    pairs = {}
    for entry in entries:
        parts = _KEY_VALUE.split(entry)
        if len(parts) != 2:
            raise ConfigsArgumentError(
                "requirement failed: Invalid entity config: all configs to be added must be "
                f'in the format "key=val". Bad entry: {entry!r}'
            )
        pairs[parts[0].strip()] = re.sub(r"[\[\]]", "", parts[1]).strip()
    return pairs


def configs_to_add(add_config: str | None, file_text: str | None) -> dict[str, str]:
    """The keys to set: those of the ``--add-config-file`` text, then ``--add-config``'s;
    every key checked as Kafka checks it."""
    pairs = parse_properties(file_text) if file_text is not None else {}
    if add_config is not None:
        pairs.update(parse_add_config(add_config))
    for key in pairs:
        if not _KEY.fullmatch(key):
            raise ConfigsArgumentError(f"Invalid character found for config key: {key}")
    return pairs


def configs_to_delete(values: Iterable[str]) -> list[str]:
    """``--delete-config``'s keys (each flag's value split at commas), trimmed."""
    return [key.strip() for value in values for key in value.split(",")]


def check_entity_types(entity_types: Sequence[str]) -> None:
    """Kafka's checks of ``--entity-type``, in its order, then rackwise's refusal of the
    types it does not serve."""
    repeated = sorted({t for t in entity_types if entity_types.count(t) > 1})
    if repeated:
        raise ConfigsArgumentError(f"Duplicate entity type(s) specified: {','.join(repeated)}")
    for entity_type in entity_types:
        if entity_type not in KAFKA_ENTITY_TYPES:
            raise ConfigsArgumentError(
                f"Invalid entity type {entity_type}, the entity type must be one of "
                f"{', '.join(KAFKA_ENTITY_TYPES)} with a --bootstrap-server or "
                "--bootstrap-controller argument"
            )
    if not entity_types:
        raise ConfigsArgumentError("At least one entity type must be specified")
    if len(entity_types) > 1 and set(entity_types) != {"users", "clients"}:
        raise ConfigsArgumentError(
            "Only 'users' and 'clients' entity types may be specified together"
        )
    served = [t for t in entity_types if t not in SERVED_ENTITY_TYPES]
    if served:
        raise ConfigsArgumentError(
            f"Entity type {served[0]} is not served: rackwise configs handles "
            f"{' and '.join(SERVED_ENTITY_TYPES)}"
        )


def check_entity_names(entity_type: str, names: Sequence[str], *, alter: bool) -> None:
    """Kafka's checks of ``--entity-name`` and ``--entity-default`` (given as ``""``) for
    ``entity_type``: broker ids, and the names each action needs."""
    has_name = any(names)
    if has_name and entity_type == BROKERS:
        for name in names:
            if name and not _is_int(name):
                raise ConfigsArgumentError(
                    f"The entity name for {entity_type} must be a valid integer broker id, "
                    f"but it is: {name}"
                )
    has_default = BROKER_DEFAULT in names
    if not alter and has_default and entity_type != BROKERS:
        raise ConfigsArgumentError(
            f"--entity-default must not be specified with --describe of {entity_type}"
        )
    if alter:
        if entity_type == BROKERS and not has_name and not has_default:
            raise ConfigsArgumentError(
                "An entity-name or default entity must be specified with --alter of users, "
                "clients, brokers or ips"
            )
        if entity_type == TOPICS and not has_name:
            raise ConfigsArgumentError(
                f"An entity name must be specified with --alter of {entity_type}"
            )


def check_one_name(names: Sequence[str]) -> None:
    """An alteration names one entity per entity type (Kafka checks this once connected)."""
    if len(names) != 1:
        raise ConfigsArgumentError("An entity name must be specified for every entity type")


def _is_int(text: str) -> bool:
    try:
        value = int(text)
    except ValueError:
        return False
    return -(2**31) <= value < 2**31 and text.strip() == text


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


def command_config(text: str, path: str) -> dict[str, str]:
    """``--command-config``'s properties, once every key is one this command serves."""
    config = parse_properties(text)
    refused = sorted(k for k in config if k not in COMMAND_CONFIG_KEYS)
    protocol = config.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol != "PLAINTEXT":
        refused.insert(0, f"security.protocol={protocol}")
    if refused:
        raise ConfigsArgumentError(
            f"--command-config {path}: not served: {', '.join(refused)} (rackwise configs "
            f"connects over PLAINTEXT and reads only {', '.join(sorted(COMMAND_CONFIG_KEYS))})"
        )
    timeout = config.get("request.timeout.ms", str(DEFAULT_REQUEST_TIMEOUT_MS)).strip()
    if not timeout.isdigit():
        raise ConfigsArgumentError(
            f"--command-config {path}: request.timeout.ms must be a number of ms: {timeout}"
        )
    return config


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
