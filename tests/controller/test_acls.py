"""CreateAcls and DeleteAcls as records: Kafka's AclControlManager answers, and the image the
records make (every broker and controller replays them)."""

from __future__ import annotations

import random

from rackwise.common.acl import AclOperation as Op
from rackwise.common.error_codes import INVALID_REQUEST, NONE
from rackwise.controller.acls import create_acls, delete_acls
from rackwise.image import MetadataImage, replay
from rackwise.records.metadata import AccessControlEntryRecord, RemoveAccessControlEntryRecord
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
)


def binding(name: str, op: Op = Op.READ, kind: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(
        ResourcePattern(ResourceType.TOPIC, name, kind),
        AccessControlEntry("User:a", "*", op, AclPermissionType.ALLOW),
    )


def created(
    image: MetadataImage, bindings: list[AclBinding | InvalidAcl]
) -> tuple[MetadataImage, list[tuple[int, str | None]]]:
    records: list[object] = []
    outcomes = create_acls(image, bindings, random.Random(5).getrandbits, records)
    return replay(records, image), outcomes


def test_creations_write_one_record_per_new_acl_and_refuse_bad_ones() -> None:
    image, outcomes = created(
        MetadataImage(), [binding("t"), binding("t"), binding(""), InvalidAcl("bad code")]
    )
    assert outcomes == [
        (NONE, None),
        (NONE, None),
        (INVALID_REQUEST, "Invalid empty resource name"),
        (INVALID_REQUEST, "bad code"),
    ]
    assert list(image.acls.values()) == [binding("t")]
    again, outcomes = created(image, [binding("t")])
    assert outcomes == [(NONE, None)] and again.acls is image.acls  # nothing written


def test_deletes_match_filters_and_survive_a_snapshot() -> None:
    image, _ = created(
        MetadataImage(),
        [binding("t"), binding("t", Op.WRITE), binding("p-", kind=PatternType.PREFIXED)],
    )
    restored = replay(image.to_records())
    assert restored == image
    assert sum(isinstance(r, AccessControlEntryRecord) for r in image.to_records()) == 3
    writes = AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, "p-x", PatternType.MATCH),
        AccessControlEntryFilter(None, None, Op.ANY, AclPermissionType.ANY),
    )
    records: list[object] = []
    results = delete_acls(image, [writes, ANY_BINDING], records)
    assert results[0] == ((NONE, None), [binding("p-", kind=PatternType.PREFIXED)])
    assert len(results[1][1]) == 3
    assert len(records) == 3 and all(isinstance(r, RemoveAccessControlEntryRecord) for r in records)
    assert replay(records, image).acls == {}
    unknown = AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, None, PatternType.UNKNOWN), ANY_BINDING.entry
    )
    assert delete_acls(image, [unknown], []) == [((INVALID_REQUEST, "Unknown patternFilter."), [])]
