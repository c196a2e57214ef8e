"""A group with members changing protocol online (rackwise.groups.online_migration) and the
classic members a consumer group serves meanwhile (rackwise.groups.consumer_classic), one of
Kafka's rules at a time: ``validateOnlineUpgrade``, ``ConsumerGroup.fromClassicGroup`` and
``createConsumerGroupRecords``, ``classicGroupJoinToConsumerGroup`` /
``classicGroupSyncToConsumerGroup`` / ``classicGroupHeartbeatToConsumerGroup`` /
``classicGroupLeaveToConsumerGroup``, ``validateOnlineDowngradeWithFencedMember`` and
``convertToClassicGroup`` with ``ClassicGroup.fromConsumerGroup``, and the
``ClassicMemberMetadata`` tagged field of ``ConsumerGroupMemberMetadataValue``."""

from __future__ import annotations

import struct
import uuid

import pytest

from rackwise.assignors.model import PartitionInfo
from rackwise.common.error_codes import (
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    MEMBER_ID_REQUIRED,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from rackwise.groups import consumer_classic
from rackwise.groups.classic import PREPARING_REBALANCE, STABLE, ClassicGroup, Member
from rackwise.groups.classic_coordinator import ClassicGroups
from rackwise.groups.classic_effects import JoinRequest
from rackwise.groups.consumer_coordinator import ConsumerGroups, Outcome
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_member import UNREVOKED_PARTITIONS
from rackwise.groups.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from rackwise.groups.consumer_records import (
    CURRENT_ASSIGNMENT_KEY,
    GROUP_EPOCH_KEY,
    ClassicMeta,
    CurrentAssignment,
    GroupEpoch,
    MemberMetadata,
    TargetMember,
    TargetMetadata,
    Tombstone,
    decode,
    encode,
    encode_tombstone,
)
from rackwise.groups.consumer_types import ConsumerGroupConfig, Heartbeat, TopicsView, TopicView
from rackwise.groups.group_metadata import decode_metadata
from rackwise.groups.online_migration import (
    can_upgrade,
    consumer_records_of,
    parse_policy,
    tombstones,
)
from rackwise.node.data_config import DataConfigException, DataPathConfig

T = uuid.UUID(int=0xA)
VIEW = TopicsView(1, {"t": TopicView("t", T, tuple(PartitionInfo(("/r",)) for _ in range(4)))})


def subscription(*topics: str, version: int = 0, owned: tuple[int, ...] | None = None) -> bytes:
    """A ``ConsumerProtocolSubscription`` as a classic client writes it."""
    out = struct.pack(">hi", version, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    out += struct.pack(">i", -1)
    if version >= 1:
        if owned is None:
            out += struct.pack(">i", 0)
        else:
            out += struct.pack(">ih", 1, 1) + b"t" + struct.pack(">i", len(owned))
            out += b"".join(struct.pack(">i", p) for p in owned)
    if version >= 2:
        out += struct.pack(">i", 7)
    if version >= 3:
        out += struct.pack(">h", 2) + b"/r"
    return out


def classic_group(generation: int = 4) -> ClassicGroup:
    group = ClassicGroup(
        "g", state=STABLE, generation=generation, protocol_type="consumer", protocol_name="range"
    )
    for name, parts in (("a", [0, 1]), ("b", [2, 3])):
        protocols = (("range", subscription("t")), ("roundrobin", subscription("t")))
        member = Member(name, None, f"c-{name}", "/h", 30_000, 6_000, "consumer", protocols)
        member.assignment = encode_assignment(0, {"t": parts})
        group.add(member)
    return group


def upgraded(config: ConsumerGroupConfig | None = None) -> ConsumerGroups:
    groups = ConsumerGroups(config)
    groups.upgrade(classic_group(), VIEW, 0)
    return groups


def join_request(member: str, version: int = 9, **extra: object) -> JoinRequest:
    fields: dict[str, object] = {
        "group_id": "g",
        "member_id": member,
        "instance_id": None,
        "protocol_type": "consumer",
        "protocols": (("range", subscription("t")),),
        "session_timeout_ms": 6_000,
        "rebalance_timeout_ms": 30_000,
        "client_id": "c",
        "client_host": "/h",
        "version": version,
    }
    fields.update(extra)
    return JoinRequest(**fields)  # type: ignore[arg-type]


def consumer_join(groups: ConsumerGroups, member: str = "new") -> None:
    request = Heartbeat("g", member, 0, rebalance_timeout_ms=5000, topic_names=("t",), owned=())
    out = groups.heartbeat(request, 0, VIEW)
    assert out.answer is not None and out.answer.error_code == NONE


def owners(groups: ConsumerGroups) -> dict[int, str]:
    return {p: m for (_, p), (m, _) in groups.groups["g"].owners.items()}


# ---- policy and records ------------------------------------------------------------------


def test_the_policy_parses_as_kafka_parses_it() -> None:
    # ConsumerGroupMigrationPolicy.parse: case-insensitive, anything else (or null) disabled
    assert [parse_policy(n) for n in ("Bidirectional", "UPGRADE", "downgrade", "x", None)] == [
        "bidirectional",
        "upgrade",
        "downgrade",
        "disabled",
        "disabled",
    ]
    assert DataPathConfig.from_properties({}).group_consumer_migration_policy == "bidirectional"
    config = DataPathConfig.from_properties({"group.consumer.migration.policy": "UpGrade"})
    assert config.group_consumer_migration_policy == "upgrade"
    with pytest.raises(DataConfigException) as raised:
        DataPathConfig.from_properties({"group.consumer.migration.policy": "sideways"})
    assert str(raised.value) == (
        "Invalid value sideways for configuration group.consumer.migration.policy: String must "
        "be one of (case insensitive): bidirectional, upgrade, downgrade, disabled"
    )


def test_a_classic_members_metadata_is_tagged_field_0_of_the_member_record() -> None:
    record = MemberMetadata(
        "g", "m", None, None, "c", "/h", ("t",), None, 5000, None,
        ClassicMeta(6000, (("range", b"\x01\x02"),)),
    )  # fmt: skip
    key, value = encode(record)
    plain_key, plain = encode(
        MemberMetadata("g", "m", None, None, "c", "/h", ("t",), None, 5000, None)
    )
    assert key == plain_key
    # the plain value ends with an empty tag buffer; the classic one with one tag: 0, its size,
    # the nullable struct's presence byte, session timeout, protocols (compact), struct tags
    struct_ = b"\x01" + struct.pack(">i", 6000) + b"\x02" + b"\x06range" + b"\x03\x01\x02\x00\x00"
    assert value == plain[:-1] + b"\x01\x00" + bytes([len(struct_)]) + struct_
    assert decode(key, value) == record
    assert decode(plain_key, plain).classic is None  # type: ignore[union-attr]


def test_the_embedded_protocol_reads_every_subscription_version() -> None:
    assert decode_subscription(subscription("t")).topics == ("t",)
    v3 = decode_subscription(subscription("t", version=3, owned=(1, 2)))
    assert (v3.version, v3.owned, v3.rack_id) == (3, (("t", (1, 2)),), "/r")
    assert decode_assignment(encode_assignment(1, {"t": [2, 0]})) == {"t": (0, 2)}
    assert decode_assignment(b"") == {}


# ---- upgrade ------------------------------------------------------------------------------


def test_only_a_consumer_protocol_group_within_the_size_limit_upgrades() -> None:
    group = classic_group()
    assert can_upgrade(group, "bidirectional", 2) and can_upgrade(group, "upgrade", 2)
    assert not can_upgrade(group, "downgrade", 2) and not can_upgrade(group, "disabled", 2)
    assert not can_upgrade(group, "bidirectional", 1)  # group.consumer.max.size
    group.protocol_type = "connect"
    assert not can_upgrade(group, "bidirectional", 2)


def test_the_consumer_group_made_from_a_classic_group_keeps_its_generation_and_partitions() -> None:
    records = consumer_records_of(classic_group(), VIEW)
    # createConsumerGroupRecords: metadata of each member, epoch, targets, target epoch,
    # current assignments, every member Stable at the generation with what it owned
    assert [type(r).__name__ for r in records] == [
        "MemberMetadata", "MemberMetadata", "GroupEpoch", "TargetMember", "TargetMember",
        "TargetMetadata", "CurrentAssignment", "CurrentAssignment",
    ]  # fmt: skip
    assert records[2] == GroupEpoch("g", 4) and records[5] == TargetMetadata("g", 4)
    assert records[3] == TargetMember("g", "a", {T: frozenset({0, 1})})
    assert records[7] == CurrentAssignment("g", "b", 4, 4, 0, {T: frozenset({2, 3})}, {})
    meta = records[0]
    assert isinstance(meta, MemberMetadata) and meta.classic is not None
    assert (meta.client_id, meta.topic_names, meta.rebalance_timeout_ms) == ("c-a", ("t",), 30_000)
    assert meta.classic.session_timeout_ms == 6_000
    assert [n for n, _ in meta.classic.protocols] == ["range", "roundrobin"]
    groups = upgraded()
    assert groups.groups["g"].state == "Stable" and owners(groups) == {
        0: "a",
        1: "a",
        2: "b",
        3: "b",
    }


def test_the_upgrade_sets_each_classic_members_session_with_its_own_timeout() -> None:
    out = ConsumerGroups().upgrade(classic_group(), VIEW, 100)
    assert {(t.member_id, t.deadline_ms) for t in out.timers} == {("a", 6100), ("b", 6100)}


def test_a_classic_member_revokes_by_rejoining_before_the_new_member_gets_its_partitions() -> None:
    groups = upgraded()
    consumer_join(groups)
    group = groups.groups["g"]
    assert group.epoch == 5 and group.target("new")  # the join bumped the epoch
    assert not group.members["new"].assigned  # a and b still own everything
    # classicGroupHeartbeatToConsumerGroup: member epoch behind the group's
    assert consumer_classic.heartbeat(groups, "g", "a", None, 4, 0)[0] == REBALANCE_IN_PROGRESS
    assert consumer_classic.heartbeat(groups, "g", "a", None, 3, 0)[0] == ILLEGAL_GENERATION
    # an eager client rejoins owning nothing: its revocation is done
    answer, out = consumer_classic.join(groups, join_request("a"), 0, VIEW)
    assert answer["error_code"] == NONE and answer["generation_id"] == 5
    assert (answer["leader"], answer["members"], answer["protocol_name"]) == ("", [], "range")
    assert out.records  # its metadata and assignment
    kept = group_of(groups).members["a"].assigned
    assert kept == group_of(groups).target("a")
    sync, _ = consumer_classic.sync(groups, "g", "a", None, 5, "consumer", "range", 0, VIEW)
    assert sync["error_code"] == NONE
    assert {p for ps in decode_assignment(sync["assignment"]).values() for p in ps} == set(kept[T])
    assert len(set(owners(groups))) == len(owners(groups))  # one owner each, by construction


def group_of(groups: ConsumerGroups) -> ConsumerGroup:
    return groups.groups["g"]


def test_a_classic_member_that_still_owns_what_it_must_give_up_stays_unrevoked() -> None:
    groups = upgraded()
    consumer_join(groups)
    group = group_of(groups)
    name = next(m for m in ("a", "b") if group.members[m].assigned[T] - group.target(m)[T])
    held = tuple(sorted(group.members[name].assigned[T]))
    # a cooperative client rejoins still owning what it had (subscription v1)
    still = (("range", subscription("t", version=1, owned=held)),)
    answer, _ = consumer_classic.join(groups, join_request(name, protocols=still), 0, VIEW)
    assert answer["generation_id"] == 4  # the epoch stays until it revokes
    assert group_of(groups).members[name].state == UNREVOKED_PARTITIONS
    assert consumer_classic.heartbeat(groups, "g", name, None, 4, 0)[0] == REBALANCE_IN_PROGRESS
    # throwIfRebalanceInProgress: not while the member still revokes
    sync, _ = consumer_classic.sync(groups, "g", name, None, 4, "consumer", "range", 0, VIEW)
    assert sync["error_code"] == NONE
    # once it rejoins owning only what it keeps, it moves to the group's epoch
    kept = tuple(sorted(group_of(groups).members[name].assigned[T]))
    after = (("range", subscription("t", version=1, owned=kept)),)
    answer, _ = consumer_classic.join(groups, join_request(name, protocols=after), 0, VIEW)
    assert answer["generation_id"] == 5


def test_the_classic_checks_answer_kafkas_errors() -> None:
    groups = upgraded()
    consumer_join(groups)
    new_id, _ = consumer_classic.join(groups, join_request(""), 0, VIEW)
    assert new_id["error_code"] == MEMBER_ID_REQUIRED and new_id["member_id"]
    other = join_request("x", protocol_type="connect")
    assert consumer_classic.join(groups, other, 0, VIEW)[0]["error_code"] == (
        INCONSISTENT_GROUP_PROTOCOL
    )
    unsupported = join_request("x", protocols=(("sticky", subscription("t")),))
    assert consumer_classic.join(groups, unsupported, 0, VIEW)[0]["error_code"] == (
        INCONSISTENT_GROUP_PROTOCOL
    )
    for member, generation, ptype, pname, code in (
        ("zz", 4, None, None, UNKNOWN_MEMBER_ID),
        ("new", 1, None, None, UNKNOWN_MEMBER_ID),  # does not use the classic protocol
        ("b", 3, None, None, ILLEGAL_GENERATION),
        ("b", 4, "connect", None, INCONSISTENT_GROUP_PROTOCOL),
        ("b", 4, "consumer", "roundrobin", INCONSISTENT_GROUP_PROTOCOL),
        ("b", 4, "consumer", "range", REBALANCE_IN_PROGRESS),  # the group epoch is ahead
    ):
        answer, _ = consumer_classic.sync(
            groups, "g", member, None, generation, ptype, pname, 0, VIEW
        )
        assert answer["error_code"] == code, (member, generation, ptype, pname)
    assert consumer_classic.heartbeat(groups, "g", "b", "i-1", 4, 0)[0] == UNKNOWN_MEMBER_ID


def test_a_static_classic_member_is_fenced_by_the_one_holding_its_instance_id() -> None:
    groups = upgraded()
    consumer_classic.join(groups, join_request("s-1", instance_id="i"), 0, VIEW)
    fenced = consumer_classic.join(groups, join_request("s-2", instance_id="i"), 0, VIEW)[0]
    assert fenced["error_code"] == FENCED_INSTANCE_ID


def test_a_classic_leave_removes_the_member_and_bumps_the_epoch_once() -> None:
    groups = upgraded()
    codes, out = consumer_classic.leave(groups, "g", [("a", None), ("zz", None)], VIEW)
    assert codes == [NONE, UNKNOWN_MEMBER_ID]
    assert "a" not in group_of(groups).members and group_of(groups).epoch == 5
    assert sum(1 for key, _ in out.records if key[:2] == b"\x00\x03") == 1


# ---- downgrade ----------------------------------------------------------------------------


def leave(groups: ConsumerGroups, member: str = "new") -> Outcome:
    return groups.heartbeat(Heartbeat("g", member, -1), 0, VIEW)


def test_the_last_consumer_protocol_member_leaving_makes_a_classic_group() -> None:
    groups = upgraded()
    consumer_join(groups)
    before = group_of(groups)
    expected = [encode_tombstone(t) for t in tombstones(before)]
    targets = {m: dict(before.target(m)) for m in ("a", "b")}
    out = leave(groups)
    assert "g" not in groups.groups
    classic = out.downgraded
    assert classic is not None and classic.state == STABLE and classic.generation == 5
    assert set(classic.members) == {"a", "b"} and classic.protocol_name == "range"
    for name, member in classic.members.items():  # the targets, in the members' version
        assert decode_assignment(member.assignment) == {"t": tuple(sorted(targets[name][T]))}
    # createGroupTombstoneRecords in Kafka's order, then the classic group's record
    assert [key for key, value in out.records[:-1]] == expected
    assert all(value is None for _, value in out.records[:-1])
    stored = decode_metadata(out.records[-1][1] or b"")
    assert (stored.protocol_type, stored.generation, stored.protocol) == ("consumer", 5, "range")
    assert {m.member_id for m in stored.members} == {"a", "b"}
    # the classic groups take it over: sessions and a rebalance the members rejoin for
    shard = ClassicGroups(0, 100)
    adopted = shard.adopt(classic, 0)
    assert classic.state == PREPARING_REBALANCE
    assert {t.key for t in adopted.timers} >= {("heartbeat", "g", "a"), ("heartbeat", "g", "b")}


def static_consumer_join(groups: ConsumerGroups, member: str, instance: str) -> None:
    request = Heartbeat(
        "g", member, 0, instance_id=instance, rebalance_timeout_ms=5000, topic_names=("t",),
        owned=(),
    )  # fmt: skip
    out = groups.heartbeat(request, 0, VIEW)
    assert out.answer is not None and out.answer.error_code == NONE


def test_a_static_classic_member_replacing_the_last_consumer_protocol_member_downgrades() -> None:
    groups = upgraded()
    static_consumer_join(groups, "n", "i")
    target = dict(group_of(groups).target("n"))
    answer, out = consumer_classic.join(groups, join_request("", instance_id="i"), 0, VIEW)
    assert answer["error_code"] == NONE
    joined = answer["member_id"]
    assert joined not in ("", "n")
    assert "g" not in groups.groups  # Kafka's convertToClassicGroup, in the same write
    classic = out.downgraded
    assert classic is not None and classic.state == STABLE and not out.rebalance
    assert set(classic.members) == {"a", "b", joined}
    assert classic.members[joined].instance_id == "i"
    # the joining member holds what the member it replaced was given
    assignment = decode_assignment(classic.members[joined].assignment)
    assert assignment == ({"t": tuple(sorted(target[T]))} if target.get(T) else {})
    stored = decode_metadata(out.records[-1][1] or b"")
    assert {m.member_id for m in stored.members} == {"a", "b", joined}
    # createGroupTombstoneRecordsWithReplacedMember: the joining member's records go with the
    # group's (the replaced one's went when it was replaced), the group's epoch last
    keys = [key for key, value in out.records if value is None]
    current = {m: encode_tombstone(Tombstone(CURRENT_ASSIGNMENT_KEY, "g", m)) for m in "abn"}
    current[joined] = encode_tombstone(Tombstone(CURRENT_ASSIGNMENT_KEY, "g", joined))
    assert {m: keys.count(k) for m, k in current.items()} == {"a": 1, "b": 1, "n": 1, joined: 1}
    assert keys[-1] == encode_tombstone(Tombstone(GROUP_EPOCH_KEY, "g"))
    # the classic groups take it over Stable: sessions run, nobody is told to rejoin
    shard = ClassicGroups(0, 100)
    adopted = shard.adopt(classic, 0, rebalance=out.rebalance)
    assert classic.state == STABLE
    assert {t.key for t in adopted.timers} >= {("heartbeat", "g", joined)}


def test_a_replacement_keeps_the_consumer_group_while_another_uses_its_protocol() -> None:
    groups = upgraded()
    static_consumer_join(groups, "n", "i")
    consumer_join(groups, "m")
    _, out = consumer_classic.join(groups, join_request("", instance_id="i"), 0, VIEW)
    assert out.downgraded is None and "m" in group_of(groups).members
    kept = upgraded(ConsumerGroupConfig(migration_policy="upgrade"))
    static_consumer_join(kept, "n", "i")
    _, out = consumer_classic.join(kept, join_request("", instance_id="i"), 0, VIEW)
    assert out.downgraded is None and "n" not in group_of(kept).members


@pytest.mark.parametrize("policy", ["upgrade", "disabled"])
def test_the_policy_can_keep_the_consumer_group(policy: str) -> None:
    groups = upgraded(ConsumerGroupConfig(migration_policy=policy))
    consumer_join(groups)
    out = leave(groups)
    assert out.downgraded is None and set(group_of(groups).members) == {"a", "b"}


def test_no_downgrade_while_a_consumer_protocol_member_stays_or_past_group_max_size() -> None:
    groups = upgraded()
    consumer_join(groups, "n1")
    consumer_join(groups, "n2")
    assert leave(groups, "n1").downgraded is None  # n2 still uses the consumer protocol
    small = upgraded(ConsumerGroupConfig(classic_max_size=1))
    consumer_join(small)
    assert leave(small).downgraded is None  # two classic members, group.max.size 1
    alone = ConsumerGroups()
    consumer_join(alone)
    assert leave(alone).downgraded is None  # nobody left to make a classic group of


def test_a_classic_group_released_to_a_consumer_group_tells_its_waiters_to_rejoin() -> None:
    shard = ClassicGroups(0, 100)
    group = classic_group()
    shard.groups["g"] = group
    group.members["a"].sync_waiter = "w"
    out = shard.release("g")
    assert out.answers == [("w", {**out.answers[0][1], "error_code": REBALANCE_IN_PROGRESS})]
    assert "g" not in shard.groups


def test_a_classic_member_that_does_not_rejoin_in_its_rebalance_timeout_is_fenced() -> None:
    groups = upgraded()
    consumer_join(groups)
    code, out = consumer_classic.heartbeat(groups, "g", "a", None, 4, 1_000)
    assert code == REBALANCE_IN_PROGRESS
    (join_timer,) = [t for t in out.timers if t.kind == "classic-join"]
    assert join_timer.deadline_ms == 31_000  # scheduleConsumerGroupJoinTimeoutIfAbsent
    _, again = consumer_classic.heartbeat(groups, "g", "a", None, 4, 2_000)
    assert not [t for t in again.timers if t.kind == "classic-join"]  # the deadline stays
    groups.expire(join_timer, 31_000, VIEW)
    assert "a" not in group_of(groups).members
    # a JoinGroup answered starts the sync timeout; the SyncGroup cancels it
    _, joined = consumer_classic.join(groups, join_request("b"), 0, VIEW)
    assert [(t.kind, t.deadline_ms) for t in joined.timers if t.kind.startswith("classic")] == [
        ("classic-join", None),
        ("classic-sync", 30_000),
    ]
    generation = group_of(groups).members["b"].member_epoch
    _, synced = consumer_classic.sync(groups, "g", "b", None, generation, None, None, 0, VIEW)
    assert ("classic-sync", None) in [(t.kind, t.deadline_ms) for t in synced.timers]


def test_consumer_group_describe_types_each_member_by_its_protocol() -> None:
    from rackwise.coordinator.consumer_apis import describe_group

    groups = upgraded()
    consumer_join(groups)
    described = describe_group(group_of(groups), "uniform", VIEW)
    # MemberType: 0 classic, 1 consumer (ConsumerGroupDescribeResponse v1)
    assert {m["member_id"]: m["member_type"] for m in described["members"]} == {
        "a": 0,
        "b": 0,
        "new": 1,
    }
