"""Kafka's ACL model: resource patterns, access control entries, bindings and the filters
DescribeAcls and DeleteAcls carry (Kafka's ``ResourcePattern``, ``AccessControlEntry``,
``AclBinding`` and their ``*Filter`` twins).

Constraints
    * The codes are Kafka's (the wire and the metadata records carry them); the names print as
      Kafka's enums print, and the ``str()`` of a pattern or an entry is Kafka's ``toString``,
      which ``kafka-acls.sh`` shows.
    * A filter's ``None`` name, principal or host matches any; ANY matches any type, operation
      or permission; a MATCH pattern filter matches the literal name, the ``*`` wildcard and
      every prefix of the name (Kafka's ``ResourcePatternFilter.matches``).
    * :func:`validate_new` refuses what Kafka's ``AclControlManager.validateNewAcl`` and
      ``AclApis`` refuse, with their messages (an :class:`InvalidAcl`, INVALID_REQUEST).

Worked example
    ``AclBinding(ResourcePattern(TOPIC, "pay-", PREFIXED), AccessControlEntry("User:alice",
    "*", READ, ALLOW))`` lets alice read ``pay-eu`` and ``pay-us``; the filter
    ``AclBindingFilter(ResourcePatternFilter(TOPIC, "pay-eu", MATCH), ANY_ENTRY)`` finds it,
    ``ResourcePatternFilter(TOPIC, "pay-eu", LITERAL)`` does not.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from rackwise.common.acl import AclOperation

WILDCARD: Final = "*"
"""The resource name, principal name or host that stands for every one."""
CLUSTER_NAME: Final = "kafka-cluster"
"""The one name of the CLUSTER resource."""
WILDCARD_PRINCIPAL: Final = "User:*"


class ResourceType(IntEnum):
    """Kafka's ``ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    """Kafka's ``PatternType`` codes: ACLs are LITERAL or PREFIXED, filters may say ANY or
    MATCH too."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclPermissionType(IntEnum):
    """Kafka's ``AclPermissionType`` codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class InvalidAcl(ValueError):
    """An ACL or a filter Kafka refuses with INVALID_REQUEST; the message is Kafka's."""


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission.name})"
        )


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        kind = self.pattern_type
        if kind not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if kind in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD)
        return self.name.startswith(pattern.name)

    @property
    def is_unknown(self) -> bool:
        return (
            self.pattern_type == PatternType.UNKNOWN or (self.resource_type) == ResourceType.UNKNOWN
        )


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def matches(self, entry: AccessControlEntry) -> bool:
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and self.operation in (AclOperation.ANY, entry.operation)
            and self.permission in (AclPermissionType.ANY, entry.permission)
        )

    @property
    def is_unknown(self) -> bool:
        return (
            self.operation == AclOperation.UNKNOWN or (self.permission) == AclPermissionType.UNKNOWN
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern: ResourcePatternFilter
    entry: AccessControlEntryFilter

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)


ANY_BINDING: Final = AclBindingFilter(
    ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
    AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
)
"""The filter every ACL matches."""


def validate_new(binding: AclBinding) -> None:
    """Raise :class:`InvalidAcl` for an ACL Kafka refuses to create, with Kafka's message."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise InvalidAcl(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not pattern.name:
        raise InvalidAcl("Invalid empty resource name")
    if pattern.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise InvalidAcl(f"Invalid resourceType {pattern.resource_type.name}")
    if pattern.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise InvalidAcl(f"Invalid patternType {pattern.pattern_type.name}")
    if entry.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise InvalidAcl(f"Invalid operation {entry.operation.name}")
    if entry.permission not in (AclPermissionType.DENY, AclPermissionType.ALLOW):
        raise InvalidAcl(f"Invalid permissionType {entry.permission.name}")
    if ":" not in entry.principal:
        raise InvalidAcl(
            f"Could not parse principal from `{entry.principal}` (no colon is present "
            "separating the principal type from the principal name)"
        )


def validate_filter(binding_filter: AclBindingFilter) -> None:
    """Raise :class:`InvalidAcl` for a DeleteAcls filter Kafka refuses."""
    if binding_filter.pattern.is_unknown:
        raise InvalidAcl("Unknown patternFilter.")
    if binding_filter.entry.is_unknown:
        raise InvalidAcl("Unknown entryFilter.")
