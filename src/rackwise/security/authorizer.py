"""The authorizer: may this principal, from this host, do this operation on this resource?
(Kafka's ``StandardAuthorizer`` and ``StandardAuthorizerData``.)

Goals
    Kafka's answers exactly, and fast with many ACLs: a check looks up the ACLs of the
    resource's literal name, of the ``*`` wildcard and of each prefix some PREFIXED ACL of that
    resource type has, and within each only the entries of the principal and of ``User:*``;
    the number of ACLs elsewhere costs it nothing.

Constraints
    * A super user (``super.users``, ``;``-separated principals) may do anything.
    * Among the ACLs that match the resource, principal (or ``User:*``) and host (or ``*``), a
      DENY wins over any ALLOW. An ALLOW of READ, WRITE, DELETE or ALTER allows DESCRIBE too,
      one of ALTER_CONFIGS allows DESCRIBE_CONFIGS; ALL is every operation, for both
      permissions. A DENY only denies the operation it names (or ALL).
    * No ALLOW matching: denied, unless the resource has no ACL at all (for anyone) and
      ``allow.everyone.if.no.acl.found=true``.
    * An :class:`Authorizer` is immutable; one is built from the image's ACLs
      (:meth:`Authorizer.build`), and rebuilt only when they change.

Worked example
    With ``User:alice ALLOW READ`` on the prefix ``pay-`` and ``User:* DENY READ`` on the
    literal ``pay-secret``, alice may READ and DESCRIBE ``pay-eu``; she may not READ
    ``pay-secret`` (DENY over ALLOW) but may DESCRIBE it (the DENY names READ only).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from rackwise.common.acl import AclOperation
from rackwise.security.acl import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclPermissionType,
    PatternType,
    ResourceType,
)

AUTHORIZER_CLASS: Final = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
"""The ``authorizer.class.name`` that turns authorization on."""

# Plain ints: an IntEnum hashes and compares in Python code, an int in C.
_ALL: Final = int(AclOperation.ALL)
_DESCRIBE: Final = int(AclOperation.DESCRIBE)
_DESCRIBE_CONFIGS: Final = int(AclOperation.DESCRIBE_CONFIGS)
_IMPLIES_DESCRIBE: Final = frozenset(
    int(op)
    for op in (
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    )
)
_IMPLIES_DESCRIBE_CONFIGS: Final = frozenset(
    {int(AclOperation.DESCRIBE_CONFIGS), int(AclOperation.ALTER_CONFIGS)}
)

_Entry = tuple[str, int, bool]
"""An ACL as a check reads it: host, operation code, allow (True) or deny."""
_ByPrincipal = dict[str, list[_Entry]]


def _result(entry: _Entry, host: str, operation: int) -> bool | None:
    """True: the entry allows; False: it denies; None: it says nothing about this action
    (Kafka's ``StandardAuthorizerData.findResult``, the principal already matched)."""
    acl_host, acl_operation, allow = entry
    if acl_host not in (WILDCARD, host):
        return None
    if acl_operation != _ALL:
        if not allow:
            if acl_operation != operation:
                return None
        elif operation == _DESCRIBE:
            if acl_operation not in _IMPLIES_DESCRIBE:
                return None
        elif operation == _DESCRIBE_CONFIGS:
            if acl_operation not in _IMPLIES_DESCRIBE_CONFIGS:
                return None
        elif acl_operation != operation:
            return None
    return allow


@dataclass(slots=True)
class _Section:
    """The ACLs of one resource type: by literal name and by prefix, each by principal."""

    literal: dict[str, _ByPrincipal] = field(default_factory=dict)
    prefixed: dict[str, _ByPrincipal] = field(default_factory=dict)
    prefix_lengths: tuple[int, ...] = ()

    def candidates(self, name: str) -> Iterable[_ByPrincipal]:
        """The ACL groups that cover resource ``name``."""
        literal = self.literal
        exact = literal.get(name)
        if exact is not None:
            yield exact
        if name != WILDCARD:
            wildcard = literal.get(WILDCARD)
            if wildcard is not None:
                yield wildcard
        prefixed = self.prefixed
        size = len(name)
        for length in self.prefix_lengths:
            if length > size:
                break
            group = prefixed.get(name[:length])
            if group is not None:
                yield group


@dataclass(frozen=True, slots=True)
class Authorizer:
    """The ACLs indexed for checks, with the authorizer's configuration."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    _sections: Mapping[ResourceType, _Section] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        acls: Iterable[AclBinding],
        *,
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> Authorizer:
        sections: dict[ResourceType, _Section] = {}
        for binding in acls:
            pattern, entry = binding.pattern, binding.entry
            section = sections.setdefault(pattern.resource_type, _Section())
            names = (
                section.literal
                if pattern.pattern_type == PatternType.LITERAL
                else (section.prefixed)
            )
            group = names.setdefault(pattern.name, {})
            allow = entry.permission == AclPermissionType.ALLOW
            group.setdefault(entry.principal, []).append((entry.host, int(entry.operation), allow))
        for section in sections.values():
            section.prefix_lengths = tuple(sorted({len(p) for p in section.prefixed}))
        return cls(frozenset(super_users), allow_everyone_if_no_acl_found, sections)

    def authorize(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """May ``principal`` from ``host`` do ``operation`` on the LITERAL resource ``name``?"""
        if principal in self.super_users:
            return True
        section = self._sections.get(resource_type)
        if section is None:
            return self.allow_everyone_if_no_acl_found
        found = allowed = False
        code = int(operation)
        for group in section.candidates(name):
            found = True
            for who in (principal, WILDCARD_PRINCIPAL):
                for entry in group.get(who, ()):
                    result = _result(entry, host, code)
                    if result is False:
                        return False
                    if result:
                        allowed = True
        return allowed or (not found and self.allow_everyone_if_no_acl_found)

    def authorized_operations(
        self,
        principal: str,
        host: str,
        resource_type: ResourceType,
        name: str,
        operations: Iterable[AclOperation],
    ) -> list[AclOperation]:
        """Those of ``operations`` the principal may do on ``name`` (KIP-430's answer)."""
        return [op for op in operations if self.authorize(principal, host, op, resource_type, name)]

    def authorize_by_resource_type(
        self, principal: str, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """May the principal do ``operation`` on at least one resource of the type, some ALLOW
        not covered by a DENY? (Kafka's ``Authorizer.authorizeByResourceType``, used by
        InitProducerId without a transactional id.)"""
        if principal in self.super_users:
            return True
        section = self._sections.get(resource_type)
        if section is None:
            return self.allow_everyone_if_no_acl_found
        kinds: dict[tuple[bool, bool], set[str]] = {}
        for literal, names in ((True, section.literal), (False, section.prefixed)):
            for name, group in names.items():
                for who in (principal, WILDCARD_PRINCIPAL):
                    for acl_host, acl_operation, allow in group.get(who, ()):
                        if acl_host not in (WILDCARD, host):
                            continue
                        if acl_operation in (operation, _ALL):
                            kinds.setdefault((literal, allow), set()).add(name)
        deny_literal = kinds.get((True, False), set())
        deny_prefix = kinds.get((False, False), set())
        if WILDCARD in deny_literal:
            return False
        if WILDCARD in kinds.get((True, True), set()):
            return True

        def denied(name: str, *, literal: bool) -> bool:
            return (literal and name in deny_literal) or any(
                name.startswith(p) for p in deny_prefix
            )

        return any(not denied(n, literal=False) for n in kinds.get((False, True), ())) or any(
            not denied(n, literal=True) for n in kinds.get((True, True), ())
        )


ALLOW_ALL: Final = Authorizer(allow_everyone_if_no_acl_found=True)
"""No ACL, everyone allowed: what a node without ``authorizer.class.name`` answers."""


def parse_super_users(value: str | None) -> frozenset[str]:
    """``super.users``: principals separated by ``;``, blanks around each ignored."""
    if not value:
        return frozenset()
    return frozenset(p.strip() for p in value.split(";") if p.strip())
