"""ACL filters and validation: Kafka's ResourcePatternFilter and AclControlManager answers."""

from __future__ import annotations

import pytest

from rackwise.common.acl import AclOperation as Op
from rackwise.security.acl import (
    ANY_BINDING,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclPermissionType,
    InvalidAcl,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    validate_filter,
    validate_new,
)

T = ResourceType.TOPIC


def pattern(name: str, kind: PatternType = PatternType.LITERAL) -> ResourcePattern:
    return ResourcePattern(T, name, kind)


@pytest.mark.parametrize(
    ("filter_name", "filter_kind", "acl_name", "acl_kind", "expected"),
    [
        ("Name", PatternType.LITERAL, "Name", PatternType.LITERAL, True),
        ("Name", PatternType.LITERAL, "*", PatternType.LITERAL, False),
        ("Name", PatternType.PREFIXED, "Na", PatternType.PREFIXED, False),
        ("Na", PatternType.PREFIXED, "Na", PatternType.PREFIXED, True),
        ("Name", PatternType.ANY, "Name", PatternType.PREFIXED, True),
        ("Name", PatternType.ANY, "Na", PatternType.PREFIXED, False),
        ("Name", PatternType.MATCH, "Na", PatternType.PREFIXED, True),
        ("Name", PatternType.MATCH, "*", PatternType.LITERAL, True),
        ("Name", PatternType.MATCH, "Name", PatternType.LITERAL, True),
        ("Name", PatternType.MATCH, "Namex", PatternType.PREFIXED, False),
        (None, PatternType.PREFIXED, "x", PatternType.LITERAL, False),
        (None, PatternType.ANY, "x", PatternType.LITERAL, True),
    ],
)
def test_pattern_filters_match_as_kafkas(
    filter_name: str | None,
    filter_kind: PatternType,
    acl_name: str,
    acl_kind: PatternType,
    expected: bool,
) -> None:
    assert (
        ResourcePatternFilter(T, filter_name, filter_kind).matches(pattern(acl_name, acl_kind))
        is expected
    )


def test_entry_filters_and_the_any_filter() -> None:
    entry = AccessControlEntry("User:a", "*", Op.READ, AclPermissionType.ALLOW)
    binding = AclBinding(pattern("t"), entry)
    assert ANY_BINDING.matches(binding)
    deny_only = AclBindingFilter(
        ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY),
        AccessControlEntryFilter(None, None, Op.ANY, AclPermissionType.DENY),
    )
    assert not deny_only.matches(binding)
    assert not AccessControlEntryFilter("User:b", None, Op.ANY, AclPermissionType.ANY).matches(
        entry
    )


def test_strings_are_kafkas() -> None:
    binding = AclBinding(
        pattern("t", PatternType.PREFIXED),
        AccessControlEntry("User:a", "*", Op.READ, AclPermissionType.ALLOW),
    )
    assert (
        str(binding.pattern) == "ResourcePattern(resourceType=TOPIC, name=t, patternType=PREFIXED)"
    )
    assert str(binding.entry) == "(principal=User:a, host=*, operation=READ, permissionType=ALLOW)"


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        (
            (ResourceType.CLUSTER, "c", PatternType.LITERAL, "User:a", Op.ALTER),
            "The only valid name for the CLUSTER resource is kafka-cluster",
        ),
        ((T, "", PatternType.LITERAL, "User:a", Op.READ), "Invalid empty resource name"),
        (
            (ResourceType.ANY, "t", PatternType.LITERAL, "User:a", Op.READ),
            "Invalid resourceType ANY",
        ),
        ((T, "t", PatternType.MATCH, "User:a", Op.READ), "Invalid patternType MATCH"),
        ((T, "t", PatternType.LITERAL, "User:a", Op.ANY), "Invalid operation ANY"),
        (
            (T, "t", PatternType.LITERAL, "alice", Op.READ),
            "Could not parse principal from `alice` (no colon is present separating the "
            "principal type from the principal name)",
        ),
    ],
)
def test_invalid_acls_get_kafkas_messages(
    binding: tuple[ResourceType, str, PatternType, str, Op], message: str
) -> None:
    kind, name, pattern_type, principal, op = binding
    with pytest.raises(InvalidAcl) as caught:
        validate_new(
            AclBinding(
                ResourcePattern(kind, name, pattern_type),
                AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW),
            )
        )
    assert str(caught.value) == message


def test_unknown_filters_are_refused() -> None:
    unknown = AclBindingFilter(
        ResourcePatternFilter(T, None, PatternType.UNKNOWN), ANY_BINDING.entry
    )
    with pytest.raises(InvalidAcl, match=r"^Unknown patternFilter\.$"):
        validate_filter(unknown)
    validate_filter(ANY_BINDING)
