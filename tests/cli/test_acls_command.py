"""``rackwise acls``' refusals of options, before any connection, with kafka-acls.sh's
messages: one line on standard error and exit status 1. (Its output against a cluster is in
tests/security/test_authorization_processes.py.)"""

from __future__ import annotations

import pytest

from rackwise.client.acls import Principals, Resources, camel, entries_by_filter, operation_of
from rackwise.common.acl import AclOperation
from rackwise.security.acl import PatternType, ResourceType
from tests.command_line import rackwise

SERVER = ("--bootstrap-server", "127.0.0.1:1")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--list",), "One of --bootstrap-server or --bootstrap-controller must be specified"),
        (
            (*SERVER, "--bootstrap-controller", "127.0.0.1:2", "--list"),
            "Only one of --bootstrap-server or --bootstrap-controller must be specified",
        ),
        (SERVER, "Command must include exactly one action: --list, --add, --remove. "),
        (
            (*SERVER, "--add", "--topic", "t"),
            "You must specify one of: --allow-principal, --deny-principal when trying to add "
            "ACLs.",
        ),
        (
            (*SERVER, "--add", "--allow-principal", "User:a", "--resource-pattern-type", "MATCH",
             "--topic", "t"),
            "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls.",
        ),
        (
            (*SERVER, "--add", "--allow-principal", "User:a", "--operation", "Write",
             "--group", "g"),
            "ResourceType GROUP only supports operations All, Read, Delete, Describe, "
            "DescribeConfigs, AlterConfigs",
        ),
        ((*SERVER, "--list", "--producer"),
         'Option "[list]" can\'t be used with option "[producer]"'),
        ((*SERVER, "--add", "--producer", "--allow-principal", "User:a"),
         "With --producer you must specify a --topic"),
        ((*SERVER, "--add", "--idempotent", "--topic", "t"),
         "The --idempotent option is only available if --producer is set"),
        ((*SERVER, "--add", "--allow-principal", "User:a"),
         "You must provide at least one resource: --topic <topic> or --cluster or --group "
         "<group> or --delegation-token <Delegation Token ID>"),
    ],
)  # fmt: skip
def test_options_kafka_refuses(args: tuple[str, ...], message: str) -> None:
    done = rackwise("acls", *args)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"error: {message.rstrip()}\n"  # one line, trimmed


def test_producer_and_consumer_stand_for_kafkas_operations() -> None:
    resources = Resources(["t"], ["g"], ["tx"], pattern_type=PatternType.PREFIXED)
    principals = Principals(["User:a"], allow_hosts=["10.0.0.1"])
    plan = entries_by_filter(resources, principals, [], producer=True, consumer=True)
    by_type = {
        f.resource_type: sorted(e.operation.name for e in entries) for f, entries in plan.items()
    }
    assert by_type == {
        ResourceType.TOPIC: ["CREATE", "DESCRIBE", "READ", "WRITE"],
        ResourceType.GROUP: ["READ"],
        ResourceType.TRANSACTIONAL_ID: ["DESCRIBE", "WRITE"],
    }
    assert {e.host for entries in plan.values() for e in entries} == {"10.0.0.1"}
    assert operation_of("IdempotentWrite") == AclOperation.IDEMPOTENT_WRITE
    assert operation_of("describe_configs") == AclOperation.DESCRIBE_CONFIGS
    assert camel(AclOperation.CLUSTER_ACTION) == "ClusterAction"
