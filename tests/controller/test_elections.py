"""ElectLeaders in the controller (Kafka's ``ReplicationControlManager.electLeaders``): the
preferred and the unclean election, and Kafka's per-partition answers."""

from __future__ import annotations

import pytest

from rackwise.common.errors import InvalidRequestException
from rackwise.controller import Controller, CreatableTopic
from rackwise.controller.alter_partition import (
    AlterPartitionData,
    AlterPartitionRequest,
    AlterPartitionTopic,
    IsrMember,
)
from rackwise.controller.elections import ElectionType
from rackwise.records.constants import LEADER_RECOVERED
from tests.controller.helpers import check_invariants, heartbeat, partitions
from tests.controller.test_preferred_leaders import _failed_over

NOT_NEEDED = (84, "Leader election not needed for topic partition.")
PREFERRED = ElectionType.PREFERRED
UNCLEAN = ElectionType.UNCLEAN


def test_a_preferred_election_moves_leadership_to_the_first_replica_once() -> None:
    controller = _failed_over()
    results = controller.elect_leaders(PREFERRED, {"t": [0, 1], "nope": [0]})
    assert results == [
        ("t", [(0, 0, None), (1, *NOT_NEEDED)]),
        ("nope", [(0, 3, "No such topic as nope")]),
    ]
    assert [p.leader for p in partitions(controller.image, "t")] == [1, 2, 3]
    assert controller.elect_leaders(PREFERRED, {"t": [0, 7]}) == [
        ("t", [(0, *NOT_NEEDED), (7, 3, "No such partition as t-7")])
    ]
    check_invariants(controller.image)


def test_every_partition_lists_only_the_partitions_that_needed_an_election() -> None:
    controller = _failed_over()
    assert controller.elect_leaders(PREFERRED, None) == [("t", [(0, 0, None)])]
    assert controller.elect_leaders(PREFERRED, None) == [("t", [])]


def test_a_preferred_replica_that_may_not_lead_is_not_available() -> None:
    controller = _failed_over()
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    before = controller.end_offset
    assert controller.elect_leaders(PREFERRED, {"t": [0]}) == [
        ("t", [(0, 80, "The preferred leader was not available.")])
    ]
    assert controller.end_offset == before  # nothing written


def _leaderless(controller: Controller) -> None:
    """ "u"-0 on brokers 1 and 2, its ISR shrunk to 1, then broker 1 fenced: no leader, and
    broker 2, alive but out of the ISR, may lead only in an unclean election."""
    controller.create_topics([CreatableTopic("u", assignments={0: (1, 2)})])
    topic = controller.image.topic("u")
    assert topic is not None
    p = topic.partitions[0]
    shrink = AlterPartitionData(
        partition_index=0,
        leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
        new_isr=(IsrMember(1),),
        leader_recovery_state=LEADER_RECOVERED,
    )
    epoch = controller.image.brokers[1].broker_epoch
    controller.alter_partition(
        AlterPartitionRequest(1, epoch, (AlterPartitionTopic(topic.topic_id, (shrink,)),))
    )
    assert heartbeat(controller, 1, want_fence=True).is_fenced
    (u0,) = partitions(controller.image, "u")
    assert u0.leader == -1 and 2 not in u0.isr


def test_an_unclean_election_takes_a_live_replica_outside_the_isr() -> None:
    controller = _failed_over()
    _leaderless(controller)
    assert controller.elect_leaders(PREFERRED, {"u": [0]}) == [
        ("u", [(0, 80, "The preferred leader was not available.")])
    ]
    assert controller.elect_leaders(UNCLEAN, {"u": [0], "t": [0]}) == [
        ("u", [(0, 0, None)]),
        ("t", [(0, *NOT_NEEDED)]),  # it has a leader, if not its preferred one
    ]
    (u0,) = partitions(controller.image, "u")
    assert (u0.leader, u0.isr) == (2, (2,))
    check_invariants(controller.image)


def test_an_unclean_election_with_no_live_replica_finds_no_leader() -> None:
    controller = _failed_over()
    _leaderless(controller)
    assert heartbeat(controller, 2, want_fence=True).is_fenced
    assert controller.elect_leaders(UNCLEAN, {"u": [0]}) == [
        ("u", [(0, 83, "Eligible topic partition leaders are not available.")])
    ]


def test_an_unknown_election_type_is_an_invalid_request() -> None:
    with pytest.raises(InvalidRequestException, match="Unknown election type 2"):
        ElectionType.of(2)
    assert ElectionType.of(1) is UNCLEAN
