"""The ACL APIs from real admin clients: with no authorizer, creating, deleting and listing
ACLs fail as against a Kafka cluster without ``authorizer.class.name``: SECURITY_DISABLED,
with Kafka's message, one result per ACL asked for."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaAdminClient
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafka.admin import ResourceType as KafkaPythonResourceType
from kafka.errors import SecurityDisabledError

from tests.interop.conftest import Cluster

SECURITY_DISABLED = 54


def test_confluent_kafka_is_told_security_is_disabled(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    bindings = [
        AclBinding(ResourceType.TOPIC, name, ResourcePatternType.LITERAL, "User:billing", "*",
                   AclOperation.READ, AclPermissionType.ALLOW)
        for name in ("orders", "payments")
    ]  # fmt: skip
    created = admin.create_acls(bindings, request_timeout=30)
    assert len(created) == 2
    for future in created.values():
        with pytest.raises(KafkaException) as caught:
            future.result(timeout=30)
        assert caught.value.args[0].code() == SECURITY_DISABLED
        assert "No Authorizer is configured." in caught.value.args[0].str()
    anything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                AclOperation.ANY, AclPermissionType.ANY)  # fmt: skip
    (deleted,) = admin.delete_acls([anything], request_timeout=30).values()
    with pytest.raises(KafkaException) as caught:
        deleted.result(timeout=30)
    assert caught.value.args[0].code() == SECURITY_DISABLED


def test_kafka_python_is_told_security_is_disabled(cluster: Cluster) -> None:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)
    try:
        acl = ACL("User:billing", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(KafkaPythonResourceType.TOPIC, "orders"))  # fmt: skip
        assert admin.create_acls([acl]) == {"succeeded": [], "failed": [SecurityDisabledError]}
        anything = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                             ResourcePatternFilter(KafkaPythonResourceType.ANY, None,
                                                   ACLResourcePatternType.ANY))  # fmt: skip
        ((asked, matched, error),) = admin.delete_acls([anything])
        assert (asked, matched, error) == (anything, [], SecurityDisabledError)
        with pytest.raises(SecurityDisabledError, match="No Authorizer is configured on the"):
            admin.describe_acls(anything)
    finally:
        admin.close()
