"""``rackwise acls``' work: the ACLs and filters its options stand for, the CreateAcls,
DeleteAcls and DescribeAcls requests, and the text ``kafka-acls.sh`` prints (Kafka's
``AclCommand``).

Constraints
    * ``--producer`` stands for WRITE, DESCRIBE and CREATE on each topic (WRITE and DESCRIBE on
      each transactional id, IDEMPOTENT_WRITE on the cluster with ``--idempotent``);
      ``--consumer`` for READ and DESCRIBE on each topic and READ on each group; otherwise
      ``--operation`` (default ``All``) for each resource, per principal and host.
    * Kafka prints its sets in hash order; here resources and entries are sorted, so that the
      same command prints the same text.
    * A refusal of the cluster raises :class:`AclsFailure` with Kafka's exception text.

Worked example
    ``--add --allow-principal User:alice --operation Read --topic t`` prints::

        Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)`:
         \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) <newline>
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.client.connections import Connections
from rackwise.common.acl import AclOperation
from rackwise.common.error_codes import NONE
from rackwise.common.error_table import describe as describe_error
from rackwise.protocol import ApiKey
from rackwise.security.acl import (
    CLUSTER_NAME,
    WILDCARD,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

SUPPORTED: Final[Mapping[ResourceType, frozenset[AclOperation]]] = {
    ResourceType.TOPIC: frozenset(
        {
            AclOperation.READ,
            AclOperation.WRITE,
            AclOperation.CREATE,
            AclOperation.DESCRIBE,
            AclOperation.DELETE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset(
        {AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE}
        | {AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    ),
    ResourceType.CLUSTER: frozenset(
        {
            AclOperation.CREATE,
            AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE,
            AclOperation.ALTER,
            AclOperation.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({AclOperation.DESCRIBE, AclOperation.WRITE}),
}
"""The operations each resource type takes (Kafka's ``AclEntry.supportedOperations``)."""


class AclArgumentError(ValueError):
    """Options that do not make sense together; the message is Kafka's."""


def operation_of(name: str) -> AclOperation:
    """``Read``, ``IdempotentWrite``, ``describe_configs``: Kafka's ``SecurityUtils.operation``."""
    snake = re.sub(r"([a-z])([A-Z])", r"\1_\2", name.strip()).upper()
    try:
        operation = AclOperation[snake]
    except KeyError:
        raise AclArgumentError(f"Unknown operation {name}") from None
    if operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise AclArgumentError(f"Unknown operation {name}")
    return operation


def camel(operation: AclOperation) -> str:
    """Kafka's ``SecurityUtils.operationName``: ``DESCRIBE_CONFIGS`` as ``DescribeConfigs``."""
    return "".join(part.capitalize() for part in operation.name.split("_"))


def filter_text(pattern: ResourcePatternFilter) -> str:
    """Kafka's ``ResourcePatternFilter.toString``."""
    name = "<any>" if pattern.name is None else pattern.name
    return (
        f"ResourcePattern(resourceType={pattern.resource_type.name}, name={name}, "
        f"patternType={pattern.pattern_type.name})"
    )


@dataclass(frozen=True, slots=True)
class Resources:
    """The resources the options name, as pattern filters of one pattern type."""

    topics: Sequence[str] = ()
    groups: Sequence[str] = ()
    transactional_ids: Sequence[str] = ()
    cluster: bool = False
    pattern_type: PatternType = PatternType.LITERAL

    def filters(self, *, idempotent: bool = False) -> list[ResourcePatternFilter]:
        kind = self.pattern_type
        out = [ResourcePatternFilter(ResourceType.TOPIC, t.strip(), kind) for t in self.topics]
        if kind == PatternType.LITERAL and (self.cluster or idempotent):
            out.append(
                ResourcePatternFilter(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
            )
        out += [ResourcePatternFilter(ResourceType.GROUP, g.strip(), kind) for g in self.groups]
        out += [
            ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, t, kind)
            for t in self.transactional_ids
        ]
        return out


@dataclass(frozen=True, slots=True)
class Principals:
    allow: Sequence[str] = ()
    deny: Sequence[str] = ()
    allow_hosts: Sequence[str] = ()
    deny_hosts: Sequence[str] = ()

    def entries(self, operations: Iterable[AclOperation]) -> set[AccessControlEntry]:
        ops = set(operations)
        out: set[AccessControlEntry] = set()
        for principals, hosts, permission in (
            (self.allow, self.allow_hosts, AclPermissionType.ALLOW),
            (self.deny, self.deny_hosts, AclPermissionType.DENY),
        ):
            host_set = {h.strip() for h in hosts} or ({WILDCARD} if principals else set())
            for principal in principals:
                text = principal.strip()
                if ":" not in text:
                    raise AclArgumentError(
                        f"expected a string in format principalType:principalName but got {text}"
                    )
                out |= {AccessControlEntry(text, h, op, permission) for op in ops for h in host_set}
        return out


def entries_by_filter(
    resources: Resources,
    principals: Principals,
    operations: Sequence[AclOperation],
    *,
    producer: bool = False,
    consumer: bool = False,
    idempotent: bool = False,
) -> dict[ResourcePatternFilter, set[AccessControlEntry]]:
    """Kafka's ``getResourceFilterToAcls``: the entries for each resource filter."""
    out: dict[ResourcePatternFilter, set[AccessControlEntry]] = {}
    filters = resources.filters(idempotent=idempotent and producer)
    if not producer and not consumer:
        for f in filters:
            out[f] = principals.entries(operations)
    if producer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                ops = {AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE}
                out[f] = principals.entries(ops)
            elif f.resource_type == ResourceType.TRANSACTIONAL_ID:
                out[f] = principals.entries({AclOperation.WRITE, AclOperation.DESCRIBE})
            elif f.resource_type == ResourceType.CLUSTER and idempotent:
                out[f] = principals.entries({AclOperation.IDEMPOTENT_WRITE})
    if consumer:
        for f in filters:
            if f.resource_type == ResourceType.TOPIC:
                ops = {AclOperation.READ, AclOperation.DESCRIBE}
                out[f] = principals.entries(ops) | out.get(f, set())
            elif f.resource_type == ResourceType.GROUP:
                out[f] = principals.entries({AclOperation.READ}) | out.get(f, set())
    for f, entries in out.items():
        valid = SUPPORTED.get(f.resource_type, frozenset()) | {AclOperation.ALL}
        if any(e.operation not in valid for e in entries):
            names = ", ".join(camel(op) for op in sorted(valid))
            raise AclArgumentError(
                f"ResourceType {f.resource_type.name} only supports operations {names}"
            )
    return out


def block(head: str, entries: Iterable[object]) -> str:
    """Kafka's ``head: <newline> <tab>entry<newline><tab>entry <newline>`` (println adds one
    more newline)."""
    return f"{head}: \n {chr(10).join(chr(9) + str(e) for e in entries)} \n"


# ---- requests ---------------------------------------------------------------------------------


class AclsFailure(Exception):
    """An ACL request the cluster refused: ``java_text`` is what Kafka's admin client says of
    it (``org.apache.kafka.common.errors.ClusterAuthorizationException: Cluster authorization
    failed.``)."""

    def __init__(self, code: int, message: str | None) -> None:
        error = describe_error(code)
        exception = error.exception if error is not None and error.exception else "KafkaException"
        text = message or (error.message if error is not None else None) or f"error {code}"
        self.code = code
        self.java_text = f"org.apache.kafka.common.errors.{exception}: {text}"
        super().__init__(self.java_text)


def _raise(code: int, message: str | None) -> None:
    if code != NONE:
        raise AclsFailure(code, message)


async def create(connections: Connections, bindings: Sequence[AclBinding]) -> None:
    creations = [
        {
            "resource_type": int(b.pattern.resource_type),
            "resource_name": b.pattern.name,
            "resource_pattern_type": int(b.pattern.pattern_type),
            "principal": b.entry.principal,
            "host": b.entry.host,
            "operation": int(b.entry.operation),
            "permission_type": int(b.entry.permission),
        }
        for b in bindings
    ]
    answer = await connections.send(
        None, ApiKey.CREATE_ACLS, {"creations": creations}, min_version=1
    )
    for result in answer.results:
        _raise(int(result.error_code), result.error_message)


def _filter_values(
    pattern: ResourcePatternFilter, entry: AccessControlEntryFilter
) -> dict[str, Any]:
    return {
        "resource_type_filter": int(pattern.resource_type),
        "resource_name_filter": pattern.name,
        "pattern_type_filter": int(pattern.pattern_type),
        "principal_filter": entry.principal,
        "host_filter": entry.host,
        "operation": int(entry.operation),
        "permission_type": int(entry.permission),
    }


ANY_ENTRY: Final = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)


async def delete(
    connections: Connections,
    filters: Sequence[tuple[ResourcePatternFilter, AccessControlEntryFilter]],
) -> None:
    values = [_filter_values(p, e) for p, e in filters]
    answer = await connections.send(None, ApiKey.DELETE_ACLS, {"filters": values}, min_version=1)
    for result in answer.filter_results:
        _raise(int(result.error_code), result.error_message)


async def describe(
    connections: Connections, pattern: ResourcePatternFilter
) -> dict[ResourcePattern, set[AccessControlEntry]]:
    answer = await connections.send(
        None, ApiKey.DESCRIBE_ACLS, _filter_values(pattern, ANY_ENTRY), min_version=1
    )
    _raise(int(answer.error_code), answer.error_message)
    out: dict[ResourcePattern, set[AccessControlEntry]] = {}
    for resource in answer.resources:
        key = ResourcePattern(
            ResourceType(int(resource.resource_type)),
            resource.resource_name,
            PatternType(int(resource.pattern_type)),
        )
        out.setdefault(key, set()).update(
            AccessControlEntry(
                a.principal,
                a.host,
                AclOperation(int(a.operation)),
                AclPermissionType(int(a.permission_type)),
            )
            for a in resource.acls
        )
    return out
