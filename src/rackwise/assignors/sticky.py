"""Kafka's sticky assignors, exactly: ``sticky`` (eager), ``cooperative-sticky``, and the
leader-rack-aware form of the cooperative one.

Goals
-----
In falling priority: balance (member sizes differ by at most one where subscriptions allow),
stickiness (members keep what they owned), and locality (a partition goes to a member in one
of its racks, KIP-881; in the leader-rack-aware form, in its leader's rack).

Constraints
-----------
Ownership claims are settled as Kafka settles them: a partition claimed by two members goes to
the one with the higher generation, and claimed twice in one generation it is taken from both.
The cooperative assignor never gives a member a partition that another member must first
revoke: such a partition is left out of this round (a follow-up rebalance, which the consumer
triggers after revoking, assigns it), so no partition is revoked and added in one round.

Algorithm
---------
Members are read in the iteration order of Kafka's ``HashMap`` of subscriptions, which decides
ownership conflicts and which members keep one partition over ``minQuota``. When every member
subscribes to the same topics, Kafka's constrained builder runs
(:mod:`rackwise.assignors._constrained`); otherwise its general builder
(:mod:`rackwise.assignors._general`). Rack awareness is decided once for the group (see
:mod:`rackwise.assignors.racks`). ``sticky`` reads each member's ``owned`` partitions as the
previous assignment its user data carries; ``cooperative-sticky`` reads them as the partitions
it still owns and afterwards withholds each partition whose owner changes (the builder's list
of them, or, from the general builder, the partitions some member gives up and another gains).

Where Kafka's answer is invalid
-------------------------------
In two corners Kafka's code gives a member partitions of a topic it does not subscribe to: a
first member (in ``HashMap`` order) without topics makes the group look uniform to Kafka's
``allSubscriptionsEqual``, and the general builder moves a partition back to a previous owner
that no longer reads its topic. Kafka's algorithm always runs first; only when its answer gives
a member such a partition does it run again with both corners closed (the first member's topics
are the reference even when empty; such a move is skipped). In a third corner Kafka throws
``NullPointerException``: moving a partition back to a previous owner that the general builder
set aside; that move is always skipped. Every other answer is Kafka's, to the list order.

Worked example
--------------
Topic ``t`` with three partitions; ``c1`` owns ``t-0, t-1, t-2`` and ``c2`` joins, both at
generation 1. The constrained builder keeps ``t-0, t-1`` with ``c1`` (``maxQuota`` 2, one member
may have it) and gives ``t-2`` to ``c2``. ``sticky`` answers ``c1: t-0 t-1``, ``c2: t-2``;
``cooperative-sticky`` answers ``c1: t-0 t-1``, ``c2:`` nothing, since ``t-2`` changes owner;
after ``c1`` revokes it, the next round gives ``t-2`` to ``c2``.

The leader-rack-aware form (``leader-rack-aware-cooperative-sticky``) reduces each partition's
racks to its leader's (apache/kafka pull request 17571,
``LeaderRackAwareCooperativeStickyAssignor``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from rackwise.assignors._constrained import ConstrainedAssignmentBuilder
from rackwise.assignors._general import GeneralAssignmentBuilder
from rackwise.assignors._sticky_common import (
    Catalog,
    Locality,
    Ownership,
    build_localities,
    java_member_order,
    resolve_ownership,
)
from rackwise.assignors.model import Assignment, GroupSpec, Member, PartitionAssignor
from rackwise.common import TopicPartition


@dataclass(frozen=True, slots=True)
class StickyOutcome:
    """An assignment with what Kafka's sticky assignor knows about it afterwards.

    ``partitions_transferring_ownership`` is Kafka's field of that name: the partitions whose
    owner the constrained builder changed (new owner per partition), or ``None`` after the
    general builder, which does not track them. ``movements`` are the general builder's net
    moves of this rebalance as (partition, from, to), empty after the constrained builder.
    ``used_general_builder`` and ``rack_aware`` say which builder ran and whether rack awareness
    was on; ``withheld`` maps each partition a cooperative assignor left out of this round to
    the member that will get it once its owner has revoked it (empty for ``sticky``).
    """

    assignment: Assignment
    partitions_transferring_ownership: Mapping[TopicPartition, str] | None
    movements: tuple[tuple[TopicPartition, str, str], ...] = ()
    used_general_builder: bool = False
    rack_aware: bool = False
    withheld: Mapping[TopicPartition, str] = field(default_factory=dict)


class _AbstractStickyPartitionAssignor(PartitionAssignor):
    """Kafka's ``AbstractStickyAssignor``."""

    leader_only: ClassVar[bool] = False
    cooperative: ClassVar[bool] = False

    def assign(self, group: GroupSpec) -> Assignment:
        return self.assign_with_outcome(group).assignment

    def assign_with_outcome(self, group: GroupSpec) -> StickyOutcome:
        """The assignment of ``group`` and what Kafka's assignor knows about it afterwards."""
        members = java_member_order(group)
        subscribed = {t for m in members for t in m.topics}
        catalog = Catalog({t: p for t, p in group.partitions.items() if t in subscribed and p})
        racks, dcs = build_localities(
            catalog, members, leader_only=self.leader_only, prefer=group.prefer_rack_aware_logic
        )
        run = _Run(catalog, racks, dcs, members)
        raw, ownership, transferring, movements = run.build(as_kafka=True)
        if not _reads_its_topics(raw, catalog, members):
            raw, ownership, transferring, movements = run.build(as_kafka=False)
        assignment = {
            m.member_id: [catalog.tp(p) for p in raw.get(m.member_id, [])] for m in group.members
        }
        withheld: dict[TopicPartition, str] = {}
        if self.cooperative:
            owned_of = {m.member_id: m.owned for m in members}
            withheld = (
                dict(transferring)
                if transferring is not None
                else _changing_owner(assignment, owned_of)
            )
            for tp, member in withheld.items():
                assignment[member].remove(tp)
        return StickyOutcome(
            assignment,
            transferring,
            movements,
            used_general_builder=not ownership.all_equal,
            rack_aware=racks.enabled,
            withheld=withheld,
        )


class _Run:
    """One group's inputs to Kafka's builders, built once and run once or twice."""

    def __init__(
        self, catalog: Catalog, racks: Locality, dcs: Locality, members: Sequence[Member]
    ) -> None:
        self.catalog = catalog
        self.racks = racks
        self.dcs = dcs
        self.members = members

    def build(
        self, *, as_kafka: bool
    ) -> tuple[
        dict[str, list[int]],
        Ownership,
        dict[TopicPartition, str] | None,
        tuple[tuple[TopicPartition, str, str], ...],
    ]:
        catalog = self.catalog
        owned_of = {m.member_id: m.owned for m in self.members}
        ownership = resolve_ownership(catalog, self.members, owned_of, as_kafka=as_kafka)
        if not self.members:
            return {}, ownership, {}, ()
        if ownership.all_equal:
            builder = ConstrainedAssignmentBuilder(catalog, self.racks, self.dcs, ownership)
            raw, moved = builder.build()
            return raw, ownership, {catalog.tp(p): c for p, c in moved.items()}, ()
        general = GeneralAssignmentBuilder(
            catalog, self.racks, self.dcs, ownership, self.members, as_kafka=as_kafka
        )
        raw = general.build()
        movements = tuple(
            (catalog.tp(p), src, dst) for p, (src, dst) in general.movements.moves.items()
        )
        return raw, ownership, None, movements


def _reads_its_topics(
    raw: Mapping[str, list[int]], catalog: Catalog, members: Sequence[Member]
) -> bool:
    """Every member got only partitions of topics it subscribes to."""
    topics = {m.member_id: {catalog.topic_index.get(t) for t in m.topics} for m in members}
    return all(catalog.topic_of[p] in topics[m] for m, pids in raw.items() for p in pids)


def _changing_owner(
    assignment: Mapping[str, list[TopicPartition]], owned_of: Mapping[str, Sequence[TopicPartition]]
) -> dict[TopicPartition, str]:
    """Kafka's ``computePartitionsTransferringOwnership``: partitions a member gains that some
    member gives up."""
    added: dict[TopicPartition, str] = {}
    revoked: set[TopicPartition] = set()
    for member, parts in assignment.items():
        owned = owned_of.get(member, ())
        owned_set = set(owned)
        added.update((tp, member) for tp in parts if tp not in owned_set)
        assigned = set(parts)
        revoked.update(tp for tp in owned if tp not in assigned)
    return {tp: member for tp, member in added.items() if tp in revoked}


class StickyPartitionAssignor(_AbstractStickyPartitionAssignor):
    """Kafka's eager ``sticky`` assignor (``StickyAssignor``)."""

    name: ClassVar[str] = "sticky"


class CooperativeStickyPartitionAssignor(_AbstractStickyPartitionAssignor):
    """Kafka's ``cooperative-sticky`` assignor (``CooperativeStickyAssignor``)."""

    name: ClassVar[str] = "cooperative-sticky"
    cooperative: ClassVar[bool] = True


class LeaderRackAwareCooperativeStickyPartitionAssignor(CooperativeStickyPartitionAssignor):
    """``cooperative-sticky`` with each partition local only to its leader's rack."""

    name: ClassVar[str] = "leader-rack-aware-cooperative-sticky"
    leader_only: ClassVar[bool] = True
