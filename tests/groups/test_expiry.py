"""What the coordinator removes on its own, as Kafka's ``cleanupGroupMetadata`` and
``onPartitionsDeleted`` decide it: each kind of group's retention, the offsets a live member
still reads, groups left with nothing, and a deleted topic's offsets."""

from __future__ import annotations

from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from rackwise.groups.classic import (
    COMPLETING_REBALANCE,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    Member,
)
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_records import (
    GROUP_EPOCH_KEY,
    PARTITION_METADATA_KEY,
    TARGET_METADATA_KEY,
    MemberMetadata,
    Tombstone,
    decode,
    key_kind,
)
from rackwise.groups.expiry import (
    consumer_group_records,
    consumer_group_tombstones,
    deleted_topics,
    expired,
)
from rackwise.groups.offsets import (
    CommittedOffset,
    GroupOffsets,
    encode_group_key,
    encode_key,
    encode_value,
)

DAY_MS = 24 * 3600 * 1000
WEEK_MS = 7 * DAY_MS
NOW = 100 * DAY_MS


def commit(
    state: GroupOffsets, group: str, topic: str, partition: int, at_ms: int, **kw: int
) -> None:
    value = CommittedOffset(offset=5, commit_timestamp_ms=at_ms, **kw)
    state.replay(encode_key(group, topic, partition), encode_value(value))


def subscribed(*topics: str) -> bytes:
    return bytes(
        ConsumerProtocolSubscription(
            topics=list(topics), user_data=None, owned_partitions=[], generation_id=-1, rack_id=None
        ).encode(version=0)
    )


def stable(group_id: str, protocol_type: str, *topics: str) -> ClassicGroup:
    group = ClassicGroup(group_id)
    member = Member("m", None, "c", "/h", 1, 1, protocol_type, (("range", subscribed(*topics)),))
    group.add(member, join_waiter=object())
    group.transition_to(PREPARING_REBALANCE, NOW - 20 * DAY_MS)
    group.init_next_generation(NOW - 20 * DAY_MS)
    group.set_join_waiter(member, None)
    group.transition_to(STABLE, NOW - 20 * DAY_MS)
    return group


def test_a_simple_groups_offsets_expire_a_retention_after_each_commit() -> None:
    state = GroupOffsets()
    commit(state, "simple", "orders", 0, NOW - WEEK_MS)  # exactly a week: expired
    commit(state, "simple", "orders", 1, NOW - WEEK_MS + 1)
    records, gone = expired(state, {}, NOW, WEEK_MS)
    assert records == [(encode_key("simple", "orders", 0), None)]
    assert gone == []
    # a week later the other goes too, and the group with it
    for key, value in records:
        state.replay(key, value)
    records, gone = expired(state, {}, NOW + DAY_MS, WEEK_MS)
    assert records == [
        (encode_key("simple", "orders", 1), None),
        (encode_group_key("simple"), None),
    ]
    assert gone == ["simple"]


def test_a_commit_that_asked_for_its_own_retention_expires_then() -> None:
    state = GroupOffsets()
    commit(state, "old", "orders", 0, NOW - 1000, expire_timestamp_ms=NOW - 1)
    commit(state, "old", "orders", 1, NOW - 2 * WEEK_MS, expire_timestamp_ms=NOW + 1)
    records, _ = expired(state, {}, NOW, WEEK_MS)
    assert records == [(encode_key("old", "orders", 0), None)]


def test_an_empty_group_counts_from_when_it_became_empty() -> None:
    state = GroupOffsets()
    commit(state, "left", "orders", 0, NOW - 30 * DAY_MS)
    group = ClassicGroup("left", protocol_type="consumer", state_timestamp_ms=NOW - DAY_MS)
    assert expired(state, {"left": group}, NOW, WEEK_MS) == ([], [])
    group.state_timestamp_ms = NOW - WEEK_MS
    records, gone = expired(state, {"left": group}, NOW, WEEK_MS)
    assert records == [
        (encode_key("left", "orders", 0), None),
        (encode_group_key("left"), None),
    ]
    assert gone == ["left"]


def test_an_empty_group_without_offsets_is_deleted() -> None:
    group = ClassicGroup("idle", protocol_type="consumer", state_timestamp_ms=NOW)
    assert expired(GroupOffsets(), {"idle": group}, NOW, WEEK_MS) == (
        [(encode_group_key("idle"), None)],
        ["idle"],
    )


def test_a_stable_consumer_group_keeps_what_its_members_read() -> None:
    state = GroupOffsets()
    commit(state, "live", "orders", 0, NOW - 30 * DAY_MS)
    commit(state, "live", "audit", 0, NOW - 30 * DAY_MS)
    commit(state, "live", "audit", 1, NOW - DAY_MS)
    group = stable("live", "consumer", "orders")
    records, gone = expired(state, {"live": group}, NOW, WEEK_MS)
    # orders is subscribed: kept however old; audit-0 is old enough; the group stays
    assert records == [(encode_key("live", "audit", 0), None)]
    assert gone == []


def test_other_live_groups_keep_their_offsets() -> None:
    state = GroupOffsets()
    commit(state, "connect", "orders", 0, NOW - 30 * DAY_MS)
    commit(state, "rebalancing", "orders", 0, NOW - 30 * DAY_MS)
    rebalancing = stable("rebalancing", "consumer", "payments")
    rebalancing.transition_to(PREPARING_REBALANCE, NOW)
    live = {"connect": stable("connect", "connect"), "rebalancing": rebalancing}
    assert expired(state, live, NOW, WEEK_MS) == ([], [])
    rebalancing.init_next_generation(NOW)
    assert rebalancing.state == COMPLETING_REBALANCE
    assert expired(state, live, NOW, WEEK_MS) == ([], [])


def test_a_deleted_topics_offsets_go_in_every_group() -> None:
    state = GroupOffsets()
    for group in ("a", "b"):
        commit(state, group, "orders", 0, NOW)
        commit(state, group, "orders", 1, NOW)
        commit(state, group, "payments", 0, NOW)
    assert deleted_topics(state, ["orders", "missing"]) == [
        (encode_key(g, "orders", p), None) for g in ("a", "b") for p in (0, 1)
    ]
    assert deleted_topics(state, []) == []


# ---- consumer-protocol (KIP-848) groups ------------------------------------------------------


def consumer_group(group_id: str, *members: tuple[tuple[str, ...], str | None]) -> ConsumerGroup:
    """A consumer group with one member for each (topic names, regular expression)."""
    group = ConsumerGroup(group_id, epoch=3)
    for i, (names, regex) in enumerate(members):
        group.replay(
            MemberMetadata(group_id, f"m{i}", None, None, "c", "/h", names, regex, -1, None)
        )
    return group


def test_a_consumer_groups_offsets_of_a_topic_it_reads_never_expire() -> None:
    state = GroupOffsets()
    commit(state, "kip848", "orders", 0, NOW - 30 * DAY_MS)
    commit(state, "kip848", "orders.eu", 0, NOW - 30 * DAY_MS)  # matched by the regex
    commit(state, "kip848", "stopped", 0, NOW - WEEK_MS)  # read no more: a week since its commit
    commit(state, "kip848", "stopped", 1, NOW - WEEK_MS + 1)
    group = consumer_group("kip848", (("orders",), None), ((), r"orders\..*"))
    records, gone = expired(state, {}, NOW, WEEK_MS, {"kip848": group})
    assert records == [(encode_key("kip848", "stopped", 0), None)]
    assert gone == []


def test_a_consumer_group_counts_from_each_commit_not_from_when_it_emptied() -> None:
    state = GroupOffsets()
    commit(state, "emptied", "orders", 0, NOW - WEEK_MS)
    commit(state, "emptied", "orders", 1, NOW - DAY_MS)
    records, gone = expired(state, {}, NOW, WEEK_MS, {"emptied": ConsumerGroup("emptied", 4)})
    assert records == [(encode_key("emptied", "orders", 0), None)]
    assert gone == []  # an offset is left: the group stays


def test_an_empty_consumer_group_goes_with_its_last_offset() -> None:
    state = GroupOffsets()
    commit(state, "gone", "orders", 0, NOW - WEEK_MS)
    records, gone = expired(state, {}, NOW, WEEK_MS, {"gone": ConsumerGroup("gone", 4)})
    kinds = [key_kind(key) for key, _ in records]
    # the offset, then Kafka's group tombstones: target assignment epoch, metadata, epoch
    assert records[0] == (encode_key("gone", "orders", 0), None)
    assert kinds[1:] == [TARGET_METADATA_KEY, PARTITION_METADATA_KEY, GROUP_EPOCH_KEY]
    assert all(value is None for _, value in records)
    assert [decode(key, None) for key, _ in records[1:]] == [
        Tombstone(kind, "gone") for kind in kinds[1:]
    ]
    assert gone == ["gone"]
    assert consumer_group_records(records) == records[1:]


def test_a_consumer_group_without_offsets_goes_only_when_empty() -> None:
    idle = ConsumerGroup("idle", 2)
    busy = consumer_group("busy", (("orders",), None))
    records, gone = expired(GroupOffsets(), {}, NOW, WEEK_MS, {"idle": idle, "busy": busy})
    assert gone == ["idle"]
    assert records == consumer_group_tombstones("idle")


def test_a_consumer_group_with_members_keeps_itself_when_its_offsets_expire() -> None:
    state = GroupOffsets()
    commit(state, "moved", "old", 0, NOW - WEEK_MS)
    group = consumer_group("moved", (("new",), None))
    records, gone = expired(state, {}, NOW, WEEK_MS, {"moved": group})
    assert records == [(encode_key("moved", "old", 0), None)]
    assert gone == []


def test_a_consumer_groups_member_with_a_bad_regex_matches_nothing() -> None:
    state = GroupOffsets()
    commit(state, "bad", "orders", 0, NOW - WEEK_MS)
    group = consumer_group("bad", ((), "(unclosed"))
    records, _ = expired(state, {}, NOW, WEEK_MS, {"bad": group})
    assert records == [(encode_key("bad", "orders", 0), None)]
