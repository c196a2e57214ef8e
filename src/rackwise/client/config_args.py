"""The arguments of ``kafka-configs.sh`` as Kafka's ``ConfigCommand`` reads and checks them:
the entity type and names, the ``--add-config`` syntax (square brackets for list values) and
the keys (``--command-config`` is :mod:`rackwise.client.command_config`'s). Pure, and light to
import, so that a bad argument is refused before the command loads its client.

Constraints
    * A bad argument raises :class:`ConfigsArgumentError` with the message Kafka's
      ``IllegalArgumentException`` carries (the tool prints it alone), in the order Kafka's
      ``checkArgs`` checks; where Kafka's message does not name the bad value (a malformed
      ``--add-config`` entry), the entry is added after it. Entity types Kafka knows but
      rackwise does not serve (clients, ips, broker-loggers, client-metrics, groups) are
      refused by name after Kafka's own checks; users are served for their SCRAM
      credentials (:mod:`rackwise.client.user_configs`).

Worked example
    ``parse_add_config("retention.ms=1000,cleanup.policy=[compact,delete]")`` is
    ``{"retention.ms": "1000", "cleanup.policy": "compact,delete"}``; ``parse_add_config("a=1,b")``
    raises ``requirement failed: Invalid entity config: all configs to be added must be in the
    format "key=val". Bad entry: 'b'``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Final

from rackwise.common.errors import RackwiseError
from rackwise.formats.properties import parse_properties

TOPICS: Final = "topics"
BROKERS: Final = "brokers"
KAFKA_ENTITY_TYPES: Final = (
    "topics", "clients", "users", "brokers", "ips", "broker-loggers", "client-metrics", "groups",
)  # fmt: skip
"""Kafka's ``BrokerSupportedConfigTypes``, in its order."""
USERS: Final = "users"
SERVED_ENTITY_TYPES: Final = (TOPICS, BROKERS, USERS)
BROKER_DEFAULT: Final = ""
"""The resource name of the cluster-wide broker default."""
CLIENT_ID: Final = "rackwise-configs"
DEFAULT_REQUEST_TIMEOUT_MS: Final = 30_000
# A comma or an equals sign outside square brackets (Kafka's lookahead).
_OUTSIDE_BRACKETS: Final = r"(?=[^\]]*(?:\[|$))"
_ENTRIES: Final = re.compile("," + _OUTSIDE_BRACKETS)
_KEY_VALUE: Final = re.compile(r"\s*=\s*" + _OUTSIDE_BRACKETS)
_KEY: Final = re.compile(r"[a-zA-Z0-9._-]*")
_INT: Final = re.compile(r"[+-]?[0-9]+")


class ConfigsArgumentError(RackwiseError):
    """A bad argument, worded as Kafka's tool words it."""


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


def entities(
    entity_types: Sequence[str],
    entity_names: Sequence[str],
    *,
    topic: str | None = None,
    broker: str | None = None,
    broker_defaults: bool = False,
) -> tuple[list[str], list[str]]:
    """The entity types and names given (Kafka's ``entityTypes`` and ``entityNames``): those
    of ``--entity-type`` and ``--entity-name``/``--entity-default``, then those of the
    specific flags ``--topic``, ``--broker`` and ``--broker-defaults``."""
    flags = [(TOPICS, topic), (BROKERS, broker)]
    types = [*entity_types, *(t for t, name in flags if name is not None)]
    names = [*entity_names, *(name for _, name in flags if name is not None)]
    if broker_defaults:
        types.append(BROKERS)
        names.append(BROKER_DEFAULT)
    return types, names


def check_entity_types(entity_types: Sequence[str], *, mixed: bool = False) -> None:
    """Kafka's checks of the entity types, in its order (``mixed``: both ``--entity-*`` and
    specific entity flags were given), then rackwise's refusal of the types it does not
    serve."""
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
    if mixed:
        raise ConfigsArgumentError(
            "--entity-{type,name,default} should not be used in conjunction with specific "
            "entity flags"
        )
    served = [t for t in entity_types if t not in SERVED_ENTITY_TYPES]
    if served:
        raise ConfigsArgumentError(
            f"Entity type {served[0]} is not served: rackwise configs handles "
            f"{', '.join(SERVED_ENTITY_TYPES[:-1])} and {SERVED_ENTITY_TYPES[-1]}"
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
        if entity_type in (BROKERS, USERS) and not has_name and not has_default:
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
    """Whether Java's ``Integer.parseInt`` reads ``text`` (no blanks, an optional sign)."""
    return _INT.fullmatch(text) is not None and -(2**31) <= int(text) < 2**31
