"""The ACLs of the image: AccessControlEntryRecord to :class:`~rackwise.security.acl.AclBinding`
and back (Kafka's ``StandardAcl.fromRecord`` and ``StandardAclWithId.toRecord``).

Worked example
    ``AccessControlEntryRecord(id=I, resource_type=2, resource_name="t", pattern_type=3,
    principal="User:a", host="*", operation=3, permission_type=3)`` is the binding "User:a may
    READ the topic t from any host", kept in ``MetadataImage.acls[I]``.
"""

from __future__ import annotations

import uuid
from typing import Any

from rackwise.common.acl import AclOperation
from rackwise.records.metadata import AccessControlEntryRecord
from rackwise.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)


def binding_of(record: Any) -> AclBinding:
    """The ACL an AccessControlEntryRecord holds; ValueError for a code Kafka does not know."""
    return AclBinding(
        ResourcePattern(
            ResourceType(record.resource_type),
            record.resource_name,
            PatternType(record.pattern_type),
        ),
        AccessControlEntry(
            record.principal,
            record.host,
            AclOperation(record.operation),
            AclPermissionType(record.permission_type),
        ),
    )


def record_of(acl_id: uuid.UUID, binding: AclBinding) -> Any:
    """The AccessControlEntryRecord that creates ``binding`` under ``acl_id``."""
    pattern, entry = binding.pattern, binding.entry
    return AccessControlEntryRecord(
        id=acl_id,
        resource_type=int(pattern.resource_type),
        resource_name=pattern.name,
        pattern_type=int(pattern.pattern_type),
        principal=entry.principal,
        host=entry.host,
        operation=int(entry.operation),
        permission_type=int(entry.permission),
    )
