"""The authorizer's answers: Kafka's StandardAuthorizer cases as data, and properties that hold
for any set of ACLs (a DENY never grants, an ALLOW never revokes, order does not matter)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common.acl import AclOperation as Op
from rackwise.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from rackwise.security.authorizer import Authorizer, parse_super_users

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED


def acl(
    name: str,
    op: Op,
    permission: AclPermissionType = ALLOW,
    principal: str = "User:alice",
    *,
    kind: PatternType = LITERAL,
    host: str = "*",
    resource: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(
        ResourcePattern(resource, name, kind), AccessControlEntry(principal, host, op, permission)
    )


def allowed(acls: list[AclBinding], op: Op, name: str, **kw: object) -> bool:
    principal = str(kw.pop("principal", "User:alice"))
    host = str(kw.pop("host", "192.168.1.1"))
    resource = kw.pop("resource", TOPIC)
    assert isinstance(resource, ResourceType)
    authorizer = Authorizer.build(acls, **kw)  # type: ignore[arg-type]
    return authorizer.authorize(principal, host, op, resource, name)


CASES = [
    # (acls, operation, topic, allowed) — StandardAuthorizerTest's cases and their like.
    ([acl("foo", Op.READ)], Op.READ, "foo", True),
    ([acl("foo", Op.READ)], Op.WRITE, "foo", False),
    ([acl("foo", Op.READ)], Op.READ, "foobar", False),
    ([acl("foo", Op.READ, kind=PREFIXED)], Op.READ, "foobar", True),
    ([acl("foo", Op.READ, kind=PREFIXED)], Op.READ, "fo", False),
    ([acl("*", Op.READ)], Op.READ, "anything", True),
    ([acl("foo", Op.ALL)], Op.ALTER_CONFIGS, "foo", True),
    ([acl("foo", Op.READ, principal="User:*")], Op.READ, "foo", True),
    ([acl("foo", Op.READ, principal="User:bob")], Op.READ, "foo", False),
    ([acl("foo", Op.READ, host="192.168.1.1")], Op.READ, "foo", True),
    ([acl("foo", Op.READ, host="192.168.1.2")], Op.READ, "foo", False),
    # implied operations
    ([acl("foo", Op.WRITE)], Op.DESCRIBE, "foo", True),
    ([acl("foo", Op.DELETE)], Op.DESCRIBE, "foo", True),
    ([acl("foo", Op.ALTER)], Op.DESCRIBE, "foo", True),
    ([acl("foo", Op.CREATE)], Op.DESCRIBE, "foo", False),
    ([acl("foo", Op.ALTER_CONFIGS)], Op.DESCRIBE_CONFIGS, "foo", True),
    ([acl("foo", Op.DESCRIBE_CONFIGS)], Op.ALTER_CONFIGS, "foo", False),
    # DENY over ALLOW, and a DENY denies only what it names
    ([acl("foo", Op.READ), acl("foo", Op.READ, DENY)], Op.READ, "foo", False),
    ([acl("foo", Op.READ), acl("foo", Op.READ, DENY)], Op.DESCRIBE, "foo", True),
    ([acl("foo", Op.ALL), acl("foo", Op.ALL, DENY, "User:*")], Op.DESCRIBE, "foo", False),
    ([acl("f", Op.READ, kind=PREFIXED), acl("foo", Op.READ, DENY)], Op.READ, "foo", False),
    ([acl("f", Op.READ, kind=PREFIXED), acl("foo", Op.READ, DENY)], Op.READ, "fob", True),
    (
        [acl("foo", Op.READ), acl("fo", Op.READ, DENY, kind=PREFIXED)],
        Op.READ,
        "foo",
        False,
    ),
    ([acl("foo", Op.READ), acl("*", Op.READ, DENY)], Op.READ, "foo", False),
    # ACLs of other resources or types say nothing
    ([acl("foo", Op.READ, resource=GROUP)], Op.READ, "foo", False),
]


@pytest.mark.parametrize(("acls", "op", "name", "expected"), CASES)
def test_kafka_cases(acls: list[AclBinding], op: Op, name: str, expected: bool) -> None:
    assert allowed(acls, op, name) is expected


def test_super_users_may_do_anything_even_when_denied() -> None:
    acls = [acl("foo", Op.ALL, DENY, "User:*")]
    supers = parse_super_users(" User:admin ; User:broker;")
    assert supers == {"User:admin", "User:broker"}
    assert allowed(acls, Op.WRITE, "foo", principal="User:admin", super_users=supers)
    assert not allowed(acls, Op.WRITE, "foo", super_users=supers)


def test_allow_everyone_only_where_the_resource_has_no_acl() -> None:
    acls = [acl("foo", Op.READ, principal="User:bob")]
    assert allowed(acls, Op.READ, "bar", allow_everyone_if_no_acl_found=True)
    assert not allowed(acls, Op.READ, "foo", allow_everyone_if_no_acl_found=True)
    assert allowed([], Op.READ, "foo", allow_everyone_if_no_acl_found=True)
    assert not allowed([], Op.READ, "foo")


def test_authorized_operations_and_by_resource_type() -> None:
    authorizer = Authorizer.build([acl("foo", Op.WRITE), acl("foo", Op.READ, DENY)])
    ops = [Op.READ, Op.WRITE, Op.DESCRIBE, Op.DELETE]
    assert authorizer.authorized_operations("User:alice", "h", TOPIC, "foo", ops) == [
        Op.WRITE,
        Op.DESCRIBE,
    ]
    by_type = Authorizer.build([acl("p", Op.WRITE, kind=PREFIXED)]).authorize_by_resource_type
    assert by_type("User:alice", "h", Op.WRITE, TOPIC)
    assert not by_type("User:bob", "h", Op.WRITE, TOPIC)
    covered = Authorizer.build(
        [acl("pay", Op.WRITE, kind=PREFIXED), acl("pa", Op.WRITE, DENY, kind=PREFIXED)]
    )
    assert not covered.authorize_by_resource_type("User:alice", "h", Op.WRITE, TOPIC)


# ---- properties ----------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "ab", "abc", "b", "*"])
OPS = st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALL, Op.ALTER_CONFIGS])
ACL = st.builds(
    acl,
    NAMES,
    OPS,
    st.sampled_from([ALLOW, DENY]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    kind=st.sampled_from([LITERAL, PREFIXED]),
    host=st.sampled_from(["*", "10.0.0.1", "10.0.0.2"]),
)
ACTION = st.tuples(
    st.sampled_from([Op.READ, Op.WRITE, Op.DESCRIBE, Op.DESCRIBE_CONFIGS]),
    st.sampled_from(["a", "ab", "abc", "b", "c"]),
    st.sampled_from(["User:alice", "User:bob"]),
    st.sampled_from(["10.0.0.1", "10.0.0.2"]),
)


def check(acls: list[AclBinding], action: tuple[Op, str, str, str]) -> bool:
    op, name, principal, host = action
    return Authorizer.build(acls).authorize(principal, host, op, TOPIC, name)


@settings(max_examples=300, deadline=None)
@given(st.lists(ACL, max_size=8), ACL, ACTION)
def test_a_deny_never_grants_and_an_allow_never_revokes(
    acls: list[AclBinding], extra: AclBinding, action: tuple[Op, str, str, str]
) -> None:
    before = check(acls, action)
    after = check([*acls, extra], action)
    if extra.entry.permission == DENY:
        assert after <= before
    else:
        assert after >= before


@settings(max_examples=200, deadline=None)
@given(st.lists(ACL, max_size=10), ACTION, st.randoms(use_true_random=False))
def test_order_does_not_matter(
    acls: list[AclBinding], action: tuple[Op, str, str, str], rng: random.Random
) -> None:
    shuffled = list(acls)
    rng.shuffle(shuffled)
    assert check(acls, action) == check(shuffled, action)


def reference(acls: list[AclBinding], action: tuple[Op, str, str, str]) -> bool:
    """The rules read straight off Kafka's documentation, with no index."""
    op, name, principal, host = action
    implied = {
        Op.DESCRIBE: {Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
        Op.DESCRIBE_CONFIGS: {Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS},
    }
    verdicts = set()
    for binding in acls:
        pattern, entry = binding.pattern, binding.entry
        if pattern.pattern_type == LITERAL:
            covers = pattern.name in (name, "*")
        else:
            covers = name.startswith(pattern.name)
        if not covers or entry.principal not in (principal, "User:*"):
            continue
        if entry.host not in ("*", host):
            continue
        if entry.permission == DENY:
            applies = entry.operation in (op, Op.ALL)
        else:
            applies = entry.operation == Op.ALL or entry.operation in implied.get(op, {op})
        if applies:
            verdicts.add(entry.permission)
    return DENY not in verdicts and ALLOW in verdicts


@settings(max_examples=400, deadline=None)
@given(st.lists(ACL, max_size=10), ACTION)
def test_the_index_answers_as_a_scan_of_every_acl(
    acls: list[AclBinding], action: tuple[Op, str, str, str]
) -> None:
    assert check(acls, action) == reference(acls, action)
