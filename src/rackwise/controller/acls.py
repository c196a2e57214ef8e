"""The ACLs' commands: CreateAcls and DeleteAcls as records (Kafka's ``AclControlManager``).

Constraints
    * A creation Kafka refuses gets INVALID_REQUEST with Kafka's message
      (:func:`~rackwise.security.acl.validate_new`); one that exists already succeeds and
      writes nothing; each new ACL gets a fresh random id.
    * A delete filter removes every ACL it matches (each reported once per filter that matched
      it, its record written once); an UNKNOWN filter gets INVALID_REQUEST.
    * At most :data:`~rackwise.controller.config.MAX_RECORDS_PER_USER_OP` records per request,
      as Kafka bounds them (the caller refuses a larger batch).

Worked example
    Creating ``User:a ALLOW READ`` on topic ``t`` twice in one request writes one
    AccessControlEntryRecord and answers both creations with success.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from rackwise.common.error_codes import INVALID_REQUEST, NONE
from rackwise.image import MetadataImage
from rackwise.image.acls import record_of
from rackwise.records.metadata import RemoveAccessControlEntryRecord
from rackwise.security.acl import (
    AclBinding,
    AclBindingFilter,
    InvalidAcl,
    validate_filter,
    validate_new,
)

Outcome = tuple[int, str | None]
"""An error code and its message (NONE, None: success)."""


def create_acls(
    image: MetadataImage,
    bindings: Sequence[AclBinding | InvalidAcl],
    bits: Callable[[int], int],
    records: list[Any],
) -> list[Outcome]:
    """One outcome per creation; the records of the new ACLs appended to ``records``; ids
    are random version-4 ids (``bits(128)``) no other ACL has."""
    existing = set(image.acls.values())
    taken = set(image.acls)
    results: list[Outcome] = []
    for binding in bindings:
        try:
            if isinstance(binding, InvalidAcl):
                raise binding
            validate_new(binding)
        except InvalidAcl as e:
            results.append((INVALID_REQUEST, str(e)))
            continue
        if binding not in existing:
            existing.add(binding)
            acl_id = uuid.UUID(int=bits(128), version=4)
            while acl_id in taken:
                acl_id = uuid.UUID(int=bits(128), version=4)
            taken.add(acl_id)
            records.append(record_of(acl_id, binding))
        results.append((NONE, None))
    return results


def delete_acls(
    image: MetadataImage, filters: Sequence[AclBindingFilter], records: list[Any]
) -> list[tuple[Outcome, list[AclBinding]]]:
    """Per filter, its outcome and the ACLs it matched; one removal record per ACL matched."""
    removed: set[uuid.UUID] = set()
    results: list[tuple[Outcome, list[AclBinding]]] = []
    for binding_filter in filters:
        try:
            validate_filter(binding_filter)
        except InvalidAcl as e:
            results.append(((INVALID_REQUEST, str(e)), []))
            continue
        matched = []
        for acl_id in sorted(image.acls):
            binding = image.acls[acl_id]
            if binding_filter.matches(binding):
                matched.append(binding)
                if acl_id not in removed:
                    removed.add(acl_id)
                    records.append(RemoveAccessControlEntryRecord(id=acl_id))
        results.append(((NONE, None), matched))
    return results
