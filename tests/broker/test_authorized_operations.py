"""Authorized operations (KIP-430) as a Kafka broker without an authorizer answers them: every
operation the resource supports, through the wire and back."""

from __future__ import annotations

import pytest

from rackwise.broker.metadata_apis import (
    CLUSTER_OPERATIONS,
    OPERATIONS_NOT_ASKED,
    TOPIC_OPERATIONS,
    AclOperation,
    describe_cluster,
    metadata,
    operations_field,
)
from tests.broker.test_broker_apis import through_the_wire

METADATA, DESCRIBE_CLUSTER = 3, 60


def test_the_bit_sets_are_kafkas() -> None:
    # AclEntry.supportedOperations(TOPIC / CLUSTER), as Utils.to32BitField packs them.
    # Bits 3-8, 10, 11 (READ .. DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS) and 5, 7-12.
    assert TOPIC_OPERATIONS == 3576
    assert CLUSTER_OPERATIONS == 8096
    assert operations_field([AclOperation.READ, AclOperation.READ]) == 8
    assert OPERATIONS_NOT_ASKED == -(2**31)


@pytest.mark.parametrize("version", range(3))
def test_describe_cluster_answers_every_cluster_operation_when_asked(version: int) -> None:
    asked = through_the_wire(
        describe_cluster, DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": True}
    )
    assert asked.cluster_authorized_operations == CLUSTER_OPERATIONS
    not_asked = through_the_wire(describe_cluster, DESCRIBE_CLUSTER, version, {})
    assert not_asked.cluster_authorized_operations == OPERATIONS_NOT_ASKED


@pytest.mark.parametrize("version", range(8, 14))
def test_metadata_answers_topic_and_cluster_operations_when_asked(version: int) -> None:
    flags = {"include_topic_authorized_operations": True}
    if version <= 10:
        flags["include_cluster_authorized_operations"] = True
    asked = through_the_wire(metadata, METADATA, version, {"topics": None, **flags})
    assert {t.name: t.topic_authorized_operations for t in asked.topics} == {
        "a": TOPIC_OPERATIONS,
        "t": TOPIC_OPERATIONS,
    }
    if version <= 10:  # the field left the response in v11
        assert asked.cluster_authorized_operations == CLUSTER_OPERATIONS
    not_asked = through_the_wire(metadata, METADATA, version, {"topics": None})
    assert {t.topic_authorized_operations for t in not_asked.topics} == {OPERATIONS_NOT_ASKED}
    if version <= 10:
        assert not_asked.cluster_authorized_operations == OPERATIONS_NOT_ASKED


def test_metadata_answers_topic_operations_for_an_unknown_topic_too() -> None:
    # Kafka sets them on every topic asked for by name, errors included.
    response = through_the_wire(
        metadata,
        METADATA,
        12,
        {
            "topics": [{"name": "missing", "topic_id": None}],
            "include_topic_authorized_operations": True,
        },
    )
    (topic,) = response.topics
    assert (int(topic.error_code), topic.topic_authorized_operations) == (3, TOPIC_OPERATIONS)
