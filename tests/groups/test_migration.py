"""A group changing protocol (rackwise.groups.migration): which requests convert an empty
group, the tombstones they write (Kafka's keys), and the offsets that stay."""

from __future__ import annotations

from rackwise.common.error_codes import GROUP_ID_NOT_FOUND, INCONSISTENT_GROUP_PROTOCOL, NONE
from rackwise.groups.classic import ClassicGroup, Member, restored, stored
from rackwise.groups.consumer_coordinator import ConsumerGroups
from rackwise.groups.consumer_records import GroupEpoch, encode
from rackwise.groups.group_metadata import decode_metadata, encode_metadata
from rackwise.groups.migration import to_classic_group, to_consumer_group
from rackwise.groups.offsets import (
    CommittedOffset,
    GroupOffsets,
    encode_group_key,
    encode_key,
    encode_value,
)


def with_member() -> ClassicGroup:
    group = ClassicGroup("billing", generation=3, protocol_name="range")
    group.add(Member("m-1", None, "c", "/h", 1_000, 10_000, "consumer", (("range", b"s"),)))
    group.state = "Stable"
    return group


def test_a_joining_heartbeat_converts_an_empty_classic_group_with_its_records_tombstone() -> None:
    empty = ClassicGroup("billing", state="Empty", generation=4, protocol_type="consumer")
    assert to_consumer_group("billing", None, True, False).records == ()
    conversion = to_consumer_group("billing", empty, True, False)
    assert conversion.code == NONE
    assert conversion.records == ((bytes.fromhex("0002 0007") + b"billing", None),)
    # a heartbeat that does not join is not a consumer group's: Kafka's GroupIdNotFound
    assert to_consumer_group("billing", empty, False, False).code == GROUP_ID_NOT_FOUND
    # an Empty classic group beside a consumer group of its id: the consumer group is served
    assert to_consumer_group("billing", empty, False, True).records == ()


def test_a_classic_group_with_members_converts_only_as_the_policy_allows() -> None:
    # Kafka's validateOnlineUpgrade: the policy, the protocol type, group.consumer.max.size
    for policy in ("disabled", "downgrade"):
        refused = to_consumer_group("billing", with_member(), True, False, policy)
        assert (refused.code, refused.message) == (
            GROUP_ID_NOT_FOUND,
            "Group billing is not a consumer group.",
        )
        assert refused.refused and refused.records == () and not refused.upgrade
    assert to_consumer_group("billing", with_member(), True, False, "upgrade", 0).refused
    other = with_member()
    other.protocol_type = "connect"
    assert to_consumer_group("billing", other, True, False).refused
    # a heartbeat that does not join never converts
    assert to_consumer_group("billing", with_member(), False, False).refused
    for policy in ("bidirectional", "upgrade"):
        upgrade = to_consumer_group("billing", with_member(), True, False, policy)
        assert upgrade.upgrade and not upgrade.refused
        assert upgrade.records == ((bytes.fromhex("0002 0007") + b"billing", None),)


def test_a_join_converts_an_empty_consumer_group_and_the_tombstones_remove_it() -> None:
    assert to_classic_group("billing", None).records == ()
    assert to_classic_group("billing", 2).code == INCONSISTENT_GROUP_PROTOCOL
    conversion = to_classic_group("billing", 0)
    # ConsumerGroupTargetAssignmentMetadataKey (6), ConsumerGroupPartitionMetadataKey (4),
    # ConsumerGroupMetadataKey (3), in the order Kafka writes them
    assert [key[:2] for key, _ in conversion.records] == [b"\x00\x06", b"\x00\x04", b"\x00\x03"]
    assert all(value is None for _, value in conversion.records)
    shard = ConsumerGroups()
    shard.replay(*encode(GroupEpoch("billing", 5)))
    assert "billing" in shard.groups
    for key, value in conversion.records:
        shard.replay(key, value)
    assert "billing" not in shard.groups


def test_the_group_tombstone_of_a_conversion_leaves_the_committed_offsets() -> None:
    """Kafka keeps offsets apart from the group: its record's tombstone does not delete them,
    neither live nor when the partition is loaded again."""
    log = [
        (encode_key("billing", "orders", 0), encode_value(CommittedOffset(42))),
        (encode_group_key("billing"), encode_metadata(stored(with_member()))),
        (encode_group_key("billing"), None),
    ]
    state = GroupOffsets()
    for key, value in log:
        state.replay(key, value)
    assert state.has_group("billing") and state.offsets("billing")[("orders", 0)].offset == 42
    assert "billing" not in state.stored_metadata()
    assert restored("billing", decode_metadata(log[1][1] or b"")).generation == 3
    # a deletion still removes the group: its offsets' tombstones come first
    for key, value in state.deletion("billing"):
        state.replay(key, value)
    assert not state.has_group("billing")
