"""Preferred-leader election in the controller (Kafka's ``maybeBalancePartitionLeaders``): the
config keys, the schedule, the bound per run, and, over random clusters, that the first
replica leads wherever it may and nothing else changes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from rackwise.controller import (
    Controller,
    ControllerConfig,
    CreatableTopic,
    InvalidConfigurationException,
    ManualClock,
)
from rackwise.controller.alter_partition import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopic,
    IsrMember,
)
from rackwise.controller.brokers import is_active
from rackwise.controller.controller import BALANCE_RETRY_MS
from rackwise.records import PartitionChangeRecord
from rackwise.records.constants import LEADER_RECOVERED
from tests.controller.helpers import (
    check_invariants,
    heartbeat,
    new_controller,
    partitions,
    start_brokers,
)

INTERVAL_S = 300
BROKERS = (1, 2, 3, 4)


def _rejoin(controller: Controller, index: int) -> None:
    """The leader of t-``index`` adds every unfenced replica back to the ISR."""
    topic = controller.image.topic("t")
    assert topic is not None
    p = topic.partitions[index]
    isr = tuple(r for r in p.replicas if is_active(controller.image, r))
    if p.leader < 0 or set(isr) == set(p.isr):
        return
    data = AlterPartitionData(
        partition_index=index,
        leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
        new_isr=tuple(IsrMember(b) for b in isr),
        leader_recovery_state=LEADER_RECOVERED,
    )
    epoch = controller.image.brokers[p.leader].broker_epoch
    request = AlterPartitionRequest(
        p.leader, epoch, (AlterPartitionTopic(topic.topic_id, (data,)),)
    )
    ((result,),) = [t.partitions for t in controller.alter_partition(request)]
    assert result.error_code == 0, result


def _failed_over(clock: ManualClock | None = None, **changes: Any) -> Controller:
    """Brokers 1-3, "t" with 3 partitions led by 1, 2, 3; broker 1 fenced and back, in every
    ISR again: partition 0 is led by 2, its preferred replica 1 may lead."""
    controller = new_controller(clock=clock, **changes)
    start_brokers(controller, [1, 2, 3])
    assignments = {0: (1, 2, 3), 1: (2, 3, 1), 2: (3, 1, 2)}
    controller.create_topics([CreatableTopic("t", assignments=assignments)])
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    assert not heartbeat(controller, 1).is_fenced
    for index in range(3):
        _rejoin(controller, index)
    assert [p.leader for p in partitions(controller.image, "t")] == [2, 2, 3]
    return controller


def test_the_keys_with_kafkas_names_and_defaults() -> None:
    default = ControllerConfig.from_properties({})
    assert (default.auto_leader_rebalance_enable, default.leader_imbalance_check_interval_s) == (
        True,
        300,
    )
    cfg = ControllerConfig.from_properties(
        {
            "auto.leader.rebalance.enable": "false",
            "leader.imbalance.check.interval.seconds": "7",
            "leader.imbalance.per.broker.percentage": "25",
        }
    )
    assert (cfg.auto_leader_rebalance_enable, cfg.leader_imbalance_check_interval_s) == (False, 7)
    assert cfg.static["leader.imbalance.per.broker.percentage"] == "25"  # kept, not acted on


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"leader.imbalance.check.interval.seconds": "0"}, "Invalid value 0 for configuration "
         "leader.imbalance.check.interval.seconds: Value must be at least 1"),
        ({"auto.leader.rebalance.enable": "on"}, "Invalid value on for configuration "
         "auto.leader.rebalance.enable: Expected value to be either true or false"),
        ({"leader.imbalance.per.broker.percentage": "ten"}, "Invalid value ten for "
         "configuration leader.imbalance.per.broker.percentage: Not a number of type INT"),
    ],
)  # fmt: skip
def test_invalid_values_name_the_key(props: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigurationException, match=message) as caught:
        ControllerConfig.from_properties(props)
    assert caught.value.error_code == 40


def test_the_preferred_replica_leads_again_after_the_check_interval() -> None:
    clock = ManualClock(0)
    controller = _failed_over(clock, leader_imbalance_check_interval_s=INTERVAL_S)
    due = controller.next_balance_time_ms()
    assert due is not None and due <= clock() + INTERVAL_S * 1000
    before = partitions(controller.image, "t")
    assert controller.maybe_balance_partition_leaders(due - 1) == 0  # not yet
    clock.now_ms = due
    end = controller.end_offset
    assert controller.maybe_balance_partition_leaders() == 1
    after = partitions(controller.image, "t")
    assert [p.leader for p in after] == [1, 2, 3]
    assert after[0].leader_epoch == before[0].leader_epoch + 1
    assert after[0].isr == before[0].isr and after[1:] == before[1:]
    (batch,) = list(controller.log.read_from(end))
    topic = controller.image.topic("t")
    assert topic is not None
    change = PartitionChangeRecord(partition_id=0, topic_id=topic.topic_id, leader=1)
    assert list(batch.records) == [change]
    assert controller.next_balance_time_ms() is None  # balanced: nothing scheduled
    check_invariants(controller.image)


def test_disabled_it_never_schedules_and_never_writes() -> None:
    clock = ManualClock(0)
    controller = _failed_over(clock, auto_leader_rebalance_enable=False)
    assert controller.next_balance_time_ms() is None
    clock.advance(10 * INTERVAL_S * 1000)
    end = controller.end_offset
    assert controller.maybe_balance_partition_leaders() == 0
    assert controller.end_offset == end
    assert [p.leader for p in partitions(controller.image, "t")] == [2, 2, 3]


def test_an_ineligible_preferred_replica_is_left_alone_and_checked_again() -> None:
    """Broker 1 unfenced but not back in the ISR: no record; the next check is an interval
    later, and once it rejoins that check moves the leadership."""
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1, 2, 3])
    controller.create_topics([CreatableTopic("t", assignments={0: (1, 2, 3)})])
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    assert not heartbeat(controller, 1).is_fenced
    due = controller.next_balance_time_ms()
    assert due is not None
    clock.now_ms = due
    end = controller.end_offset
    assert controller.maybe_balance_partition_leaders() == 0
    assert controller.end_offset == end
    assert controller.next_balance_time_ms() == due + INTERVAL_S * 1000
    _rejoin(controller, 0)
    clock.now_ms = due + INTERVAL_S * 1000
    assert controller.maybe_balance_partition_leaders() == 1
    assert partitions(controller.image, "t")[0].leader == 1


def test_a_run_is_bounded_and_the_rest_follows_at_once() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1, 2])
    assignments = {i: (1, 2) for i in range(5)}
    controller.create_topics([CreatableTopic("t", assignments=assignments)])
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    assert not heartbeat(controller, 1).is_fenced
    for index in range(5):
        _rejoin(controller, index)
    records: list[Any] = []
    assert controller.replication.maybe_balance_partition_leaders(controller.state, records, 2)
    assert len(records) == 2
    records = []  # reaching the bound exactly counts as maybe more, as in Kafka
    assert controller.replication.maybe_balance_partition_leaders(controller.state, records, 5)
    records = []
    assert not controller.replication.maybe_balance_partition_leaders(controller.state, records, 6)
    assert len(records) == 5


def test_a_run_that_hits_the_bound_is_rescheduled_after_the_retry_delay() -> None:
    clock = ManualClock(0)
    controller = new_controller(clock=clock)
    start_brokers(controller, [1, 2])
    controller.create_topics([CreatableTopic("t", assignments={i: (1, 2) for i in range(3)})])
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    assert not heartbeat(controller, 1).is_fenced
    for index in range(3):
        _rejoin(controller, index)
    controller.replication.max_elections_per_imbalance = 2
    due = controller.next_balance_time_ms()
    assert due is not None
    clock.now_ms = due
    assert controller.maybe_balance_partition_leaders() == 2
    assert controller.next_balance_time_ms() == due + BALANCE_RETRY_MS
    clock.advance(BALANCE_RETRY_MS)
    assert controller.maybe_balance_partition_leaders() == 1
    assert [p.leader for p in partitions(controller.image, "t")] == [1, 1, 1]
    assert controller.next_balance_time_ms() is None


@st.composite
def _clusters(draw: st.DrawFn) -> tuple[dict[int, tuple[int, ...]], list[int], list[int], Any]:
    count = draw(st.integers(1, 10))
    rf = draw(st.sampled_from([1, 2, 3, 3]))
    assignments = {i: tuple(draw(st.permutations(BROKERS))[:rf]) for i in range(count)}
    fenced = draw(st.lists(st.sampled_from(BROKERS), unique=True, min_size=1, max_size=3))
    staying = draw(st.lists(st.sampled_from(fenced), unique=True, max_size=1))
    back = [b for b in fenced if b not in staying]
    often = st.sampled_from([True, True, True, False])
    rejoin = draw(st.lists(often, min_size=count, max_size=count))
    return assignments, fenced, back, rejoin


@settings(max_examples=150, deadline=None)
@given(cluster=_clusters(), elr=st.booleans())
def test_balancing_elects_every_eligible_preferred_replica_and_nothing_else(
    cluster: tuple[dict[int, tuple[int, ...]], list[int], list[int], list[bool]], elr: bool
) -> None:
    assignments, fenced, back, rejoin = cluster
    controller = new_controller(elr_enabled=elr)
    start_brokers(controller, BROKERS)
    (created,) = controller.create_topics([CreatableTopic("t", assignments=assignments)])
    assert created.error.error_code == 0, created
    for broker in fenced:
        assert heartbeat(controller, broker, want_fence=True).is_fenced
    for broker in back:
        assert not heartbeat(controller, broker).is_fenced
    for index, again in enumerate(rejoin):
        if again:
            _rejoin(controller, index)
    image = controller.image
    before = partitions(image, "t")
    records: list[Any] = []
    more = controller.replication.maybe_balance_partition_leaders(controller.state, records)
    assert not more
    event(f"{'some' if records else 'no'} leadership moved")
    controller._commit([records])  # the commit path the scheduled run takes
    after = partitions(controller.image, "t")
    for old, new in zip(before, after, strict=True):
        preferred = old.replicas[0]
        eligible = preferred in old.isr and is_active(image, preferred)
        if eligible:
            assert new.leader == preferred, (old, new)
        if not eligible or old.leader == preferred:
            assert new == old, (old, new)
            continue
        assert new.leader_epoch == old.leader_epoch + 1
        assert (new.isr, new.replicas, new.eligible_leader_replicas) == (
            old.isr,
            old.replicas,
            old.eligible_leader_replicas,
        )
    assert len(records) == sum(1 for o, n in zip(before, after, strict=True) if o != n)
    check_invariants(controller.image, elr=elr)
