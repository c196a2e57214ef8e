"""Properties every assignor keeps on random groups: validity, balance, stickiness, the
cooperative two-round handover, and rack preference that never costs balance."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.assignors import GroupSpec, Member, PartitionInfo, create_assignor
from rackwise.assignors import properties as props
from rackwise.assignors.sticky import StickyOutcome, _AbstractStickyPartitionAssignor
from rackwise.common import TopicPartition

ALL = (
    "range",
    "sticky",
    "cooperative-sticky",
    "leader-rack-aware-range",
    "leader-rack-aware-cooperative-sticky",
)
RACKS = ["a", "b", "/dc1/r1", "/dc1/r2", "/dc2/r1", None]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def partition_infos(draw: st.DrawFn) -> PartitionInfo:
    if draw(st.integers(0, 9)) == 0:
        return PartitionInfo((), has_leader=False)
    return PartitionInfo(tuple(draw(st.lists(st.sampled_from(RACKS), min_size=1, max_size=3))))


@st.composite
def groups(draw: st.DrawFn, *, uniform: bool | None = None, owned: bool = True) -> GroupSpec:
    topics = [f"t{i}" for i in range(draw(st.integers(1, 3)))]
    partitions = {t: draw(st.lists(partition_infos(), max_size=8)) for t in topics}
    every = [TopicPartition(t, p) for t in topics for p in range(len(partitions[t]))]
    same = draw(st.booleans()) if uniform is None else uniform
    shared = tuple(draw(st.lists(st.sampled_from(topics), min_size=1, unique=True)))
    members = []
    for i in range(draw(st.integers(1, 6))):
        subscribed = shared if same else tuple(draw(st.lists(st.sampled_from(topics), unique=True)))
        had = (
            tuple(draw(st.lists(st.sampled_from(every), unique=True, max_size=4)))
            if owned and every
            else ()
        )
        members.append(
            Member(
                f"m{i}",
                subscribed,
                had,
                rack=draw(st.sampled_from(RACKS)),
                group_instance_id=draw(st.sampled_from([None, f"i{i}"])),
                generation=draw(st.sampled_from([-1, 1, 2])) if had else -1,
            )
        )
    return GroupSpec(partitions, tuple(members), prefer_rack_aware_logic=draw(st.booleans()))


def _without_racks(group: GroupSpec) -> GroupSpec:
    partitions = {
        t: [PartitionInfo((None,) * len(p.replica_racks), p.has_leader) for p in ps]
        for t, ps in group.partitions.items()
    }
    return replace(group, partitions=partitions)


def _all_partitions(group: GroupSpec) -> set[TopicPartition]:
    subscribed = {t for m in group.members for t in m.topics}
    return {TopicPartition(t, p) for t in subscribed for p in range(group.partition_count(t))}


def _topic_counts(
    group: GroupSpec, assignment: dict[str, list[TopicPartition]]
) -> dict[str, list[int]]:
    """Per topic, the sorted numbers of its partitions that its subscribers got."""
    counts = {}
    for t in group.partitions:
        readers = [m.member_id for m in group.members if t in m.topics]
        counts[t] = sorted(sum(tp.topic == t for tp in assignment[m]) for m in readers)
    return counts


@SETTINGS
@given(groups())
def test_every_assignor_gives_a_valid_answer_for_every_member(group: GroupSpec) -> None:
    for name in ALL:
        assignment = create_assignor(name).assign(group)
        assert list(assignment) == [m.member_id for m in group.members]
        assert props.valid(group, assignment), name
        assert create_assignor(name).assign(group) == assignment, "not deterministic"


@SETTINGS
@given(groups())
def test_eager_assignors_assign_everything(group: GroupSpec) -> None:
    for name in ("range", "sticky", "leader-rack-aware-range"):
        assert props.complete(group, create_assignor(name).assign(group)), name


@SETTINGS
@given(groups())
def test_cooperative_assignors_withhold_only_partitions_changing_owner(group: GroupSpec) -> None:
    for name in ("cooperative-sticky", "leader-rack-aware-cooperative-sticky"):
        assignor = create_assignor(name)
        assert isinstance(assignor, _AbstractStickyPartitionAssignor)
        outcome = assignor.assign_with_outcome(group)
        assigned = {tp for parts in outcome.assignment.values() for tp in parts}
        assert assigned | set(outcome.withheld) == _all_partitions(group)
        assert props.cooperative_no_partition_revoked_and_added_in_same_round(
            group, outcome.assignment
        )
        owners = {tp for m in group.members for tp in m.owned}
        assert set(outcome.withheld) <= owners


@SETTINGS
@given(groups())
def test_range_rack_preference_never_costs_balance(group: GroupSpec) -> None:
    plain = _topic_counts(group, create_assignor("range").assign(_without_racks(group)))
    for name in ("range", "leader-rack-aware-range"):
        assert _topic_counts(group, create_assignor(name).assign(group)) == plain, name


@SETTINGS
@given(groups(uniform=True))
def test_sticky_with_one_subscription_is_fully_balanced_with_or_without_racks(
    group: GroupSpec,
) -> None:
    plain = sorted(map(len, create_assignor("sticky").assign(_without_racks(group)).values()))
    fresh = replace(
        group, members=tuple(replace(m, owned=(), generation=-1) for m in group.members)
    )
    for name in ("sticky", "cooperative-sticky", "leader-rack-aware-cooperative-sticky"):
        sticky = create_assignor(name).assign(group if name == "sticky" else fresh)
        assert props.fully_balanced(sticky), name
        assert sorted(map(len, sticky.values())) == plain, name


@SETTINGS
@given(groups(uniform=False))
def test_sticky_with_different_subscriptions_is_balanced_as_kafka_defines_it(
    group: GroupSpec,
) -> None:
    for name in ("sticky",):
        assert props.kafka_balance(create_assignor(name).assign(group)), name
        assert props.kafka_balance(create_assignor(name).assign(_without_racks(group))), name


@SETTINGS
@given(groups(uniform=True))
def test_members_keep_what_they_owned_up_to_their_quota(group: GroupSpec) -> None:
    # One generation, no conflicting claims, no racks: each member keeps at least
    # min(owned, minQuota) of its partitions.
    seen: set[TopicPartition] = set()
    members = []
    for m in group.members:
        mine = tuple(tp for tp in m.owned if tp not in seen and tp.topic in m.topics)
        seen.update(mine)
        members.append(replace(m, owned=mine, generation=1))
    stable = _without_racks(replace(group, members=tuple(members)))
    total = len(_all_partitions(stable))
    min_quota = total // len(members)
    assignment = create_assignor("sticky").assign(stable)
    for m in members:
        kept = len(set(m.owned) & set(assignment[m.member_id]))
        assert kept >= min(len(m.owned), min_quota)


@SETTINGS
@given(groups())
def test_cooperative_handover_completes_within_a_few_rounds(group: GroupSpec) -> None:
    """Each round's assignment is what members then own (Kafka's test harness allows four
    follow-up rounds); no round revokes and adds a partition at once, and the last round is
    complete and balanced as Kafka defines it."""
    for name in ("cooperative-sticky", "leader-rack-aware-cooperative-sticky"):
        assignor = create_assignor(name)
        assert isinstance(assignor, _AbstractStickyPartitionAssignor)
        current = group
        outcome: StickyOutcome | None = None
        for generation in range(2, 7):
            outcome = assignor.assign_with_outcome(current)
            assert props.cooperative_no_partition_revoked_and_added_in_same_round(
                current, outcome.assignment
            )
            members = tuple(
                replace(m, owned=tuple(outcome.assignment[m.member_id]), generation=generation)
                for m in current.members
            )
            current = replace(current, members=members)
            if not outcome.withheld:
                break
        assert outcome is not None and not outcome.withheld, name
        assert props.complete(current, outcome.assignment)
        assert props.kafka_balance(outcome.assignment)


@SETTINGS
@given(groups())
def test_sticky_moves_never_go_both_ways(group: GroupSpec) -> None:
    assignor = create_assignor("sticky")
    assert isinstance(assignor, _AbstractStickyPartitionAssignor)
    outcome = assignor.assign_with_outcome(group)
    assert props.kafka_is_sticky(outcome.movements)
    assert outcome.used_general_builder or not outcome.movements
    moved = Counter(tp for tp, _, _ in outcome.movements)
    assert all(n == 1 for n in moved.values())
