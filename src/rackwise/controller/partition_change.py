"""One partition's change as a PartitionChangeRecord (Kafka's ``PartitionChangeBuilder``).

Goals
    Given a partition and a target ISR (the ISR without a fenced broker, say), produce the one
    record that moves the partition there and keeps it online: elect a leader that may lead,
    keep the current leader when it still may, and record only the fields that change (no
    record at all when nothing does). Replaying the record bumps the partition epoch, and the
    leader epoch when the leader changes (see :func:`rackwise.image.delta._merge`).

Constraints
    A new leader comes from the target ISR (or, when the ISR is empty, from the eligible leader
    replicas of KIP-966) and must pass ``is_acceptable_leader`` (registered, unfenced, not
    shutting down, its log directory online). Only an UNCLEAN election may take another replica,
    which then becomes the whole ISR and is marked RECOVERING. Reassignments are not modelled:
    replicas and the adding / removing lists never change here. The metadata version is one
    that writes PartitionChangeRecord v2 and does not bump the leader epoch on an ISR shrink.

Algorithm (Kafka's ``build``)
    1. With ELR enabled and the target ISR below ``min_isr``, the ELR becomes the current ISR
       and ELR minus the target ISR (and minus brokers that shut down uncleanly). At or above
       ``min_isr`` it is cleared.
    2. Elect: the current leader if still valid, else the first valid replica in replica order
       (with a ``leaders.preference``, in preference order: ``leader_order``),
       else the last known leader (ELR mode, ISR and ELR empty), else for UNCLEAN the first
       acceptable replica, else no leader (-1). A leader taken from the ELR becomes the ISR.
    3. Write the ELR if it changed; write the ISR if it changed and is not empty (empty only
       with ELR enabled); with ELR, remember the leader in ``last_known_elr`` when the ISR
       empties, and forget it once a leader is back.
    4. Write the target leader recovery state (an AlterPartition's) if it is not the
       partition's.
    Sets iterate in ``java.util.HashSet`` order, as Kafka's do, so the lists come out in the
    same order as Kafka writes them.

Worked example
    Replicas [1, 2, 3], ISR [1, 2, 3], leader 1; broker 1 is fenced: target ISR [2, 3], leader
    1 is no longer acceptable, 2 is the first valid replica: ``PartitionChangeRecord(isr=[2, 3],
    leader=2)``. Then 2 and 3 are fenced too, ELR on and ``min.insync.replicas`` 1: fencing 3
    last gives ISR [], ELR [3], leader -1, last known ELR [3]; when 3 is unfenced it is elected
    from the ELR: ISR [3], ELR [], leader 3, last known ELR [].
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Collection, Sequence
from typing import Any

from rackwise.common.java import java_hashmap_order
from rackwise.image import PartitionRegistration
from rackwise.records.constants import (
    LEADER_RECOVERING,
    NO_LEADER,
    NO_LEADER_CHANGE,
    NO_RECOVERY_STATE_CHANGE,
)
from rackwise.records.metadata import PartitionChangeRecord


class Election(enum.Enum):
    """Kafka's ``PartitionChangeBuilder.Election``."""

    PREFERRED = "preferred"
    """Elect the preferred replica (the first) if it is valid."""
    ONLINE = "online"
    """Keep the partition online with a leader from the ISR (or ELR)."""
    UNCLEAN = "unclean"
    """As ONLINE, but take any acceptable replica rather than go offline."""


def _hash_order(values: Sequence[int]) -> list[int]:
    """The iteration order of a ``HashSet<Integer>`` filled with ``values`` in order."""
    return java_hashmap_order(list(values), lambda v: v, exact=False)


class _Builder:
    def __init__(
        self,
        partition: Any,
        is_acceptable_leader: Callable[[int], bool],
        target_isr: Sequence[int],
        election: Election,
        elr_enabled: bool,
        min_isr: int,
        unclean_shutdown: Collection[int],
        leader_order: Callable[[Sequence[int]], list[int]] | None = None,
    ) -> None:
        self.partition = partition
        self.leader_order = leader_order
        self.acceptable = is_acceptable_leader
        self.target_isr = list(target_isr)
        self.target_elr = list(partition.eligible_leader_replicas or ())
        self.election = election
        self.elr_enabled = elr_enabled
        self.min_isr = min_isr
        self.unclean_shutdown = set(unclean_shutdown)
        self.fields: dict[str, Any] = {}

    @property
    def replicas(self) -> tuple[int, ...]:
        return tuple(self.partition.replicas)

    @property
    def last_known(self) -> tuple[int, ...]:
        return tuple(self.partition.last_known_elr or ())

    def populate_target_elr(self) -> None:
        if not self.elr_enabled:
            return
        if len(self.target_isr) >= self.min_isr:
            self.target_elr = []
            return
        isr = set(self.target_isr)
        inserted = [*self.target_elr, *self.partition.isr]
        self.target_elr = [
            r for r in _hash_order(inserted) if r not in isr and r not in self.unclean_shutdown
        ]

    def is_valid_new_leader(self, replica: int) -> bool:
        eligible = replica in self.target_isr or (
            not self.target_isr and replica in self.target_elr
        )
        return eligible and self.acceptable(replica)

    def can_elect_last_known_leader(self) -> bool:
        if not self.elr_enabled or self.target_elr or self.target_isr:
            return False
        return len(self.last_known) == 1 and self.acceptable(self.last_known[0])

    def elect(self) -> tuple[int, bool]:
        """(new leader, whether the election was unclean)."""
        leader = self.partition.leader
        order = (
            list(self.replicas) if self.leader_order is None else self.leader_order(self.replicas)
        )
        if self.election is Election.PREFERRED:
            # Kafka's: the first replica only; with a leaders.preference, the first valid one
            # in preference order (the most preferred domain with an in-sync replica).
            for replica in order if self.leader_order is not None else order[:1]:
                if self.is_valid_new_leader(replica):
                    return replica, False
        if self.is_valid_new_leader(leader):
            return leader, False
        for replica in order:
            if self.is_valid_new_leader(replica):
                return replica, False
        if self.can_elect_last_known_leader():
            return self.last_known[0], True
        if self.election is Election.UNCLEAN:
            for replica in self.replicas:
                if self.acceptable(replica):
                    return replica, True
        return NO_LEADER, False

    def try_election(self) -> None:
        node, unclean = self.elect()
        if node == self.partition.leader:
            return
        if node in self.target_elr:
            self.target_isr = [node]
            self.target_elr = [r for r in self.target_elr if r != node]
        self.fields["leader"] = node
        if unclean:
            self.fields["isr"] = (node,)
            if self.partition.leader_recovery_state != LEADER_RECOVERING:
                self.fields["leader_recovery_state"] = LEADER_RECOVERING

    def update_record_elr(self) -> None:
        if "isr" in self.fields or not self.elr_enabled:
            self.target_elr = []
        if tuple(self.target_elr) != tuple(self.partition.eligible_leader_replicas or ()):
            self.fields["eligible_leader_replicas"] = tuple(self.target_elr)

    def update_isr(self) -> None:
        if "isr" in self.fields:
            return
        if (self.target_isr or self.elr_enabled) and tuple(self.target_isr) != tuple(
            self.partition.isr
        ):
            self.fields["isr"] = tuple(self.target_isr)

    def update_last_known_leader(self) -> None:
        if not self.elr_enabled:
            return
        partition = self.partition
        new_leader = self.fields.get("leader", NO_LEADER_CHANGE)
        isr = self.fields.get("isr")
        if isr is not None and not isr and self.last_known != (partition.leader,):
            self.fields["last_known_elr"] = (partition.leader,)
        elif (
            new_leader >= 0 or NO_LEADER not in (partition.leader, new_leader)
        ) and self.last_known:
            self.fields["last_known_elr"] = ()

    def build(self) -> dict[str, Any]:
        self.populate_target_elr()
        self.try_election()
        self.update_record_elr()
        self.update_isr()
        self.update_last_known_leader()
        return self.fields


def build_partition_change(
    partition: PartitionRegistration,
    topic_id: uuid.UUID,
    is_acceptable_leader: Callable[[int], bool],
    *,
    target_isr: Sequence[int] | None = None,
    election: Election = Election.ONLINE,
    elr_enabled: bool = False,
    min_isr: int = 1,
    unclean_shutdown_replicas: Collection[int] = (),
    target_leader_recovery_state: int | None = None,
    leader_order: Callable[[Sequence[int]], list[int]] | None = None,
) -> Any | None:
    """The PartitionChangeRecord that moves ``partition`` to ``target_isr`` (default: its
    current ISR) and elects as the module docstring says, or None if nothing changes. A
    ``target_leader_recovery_state`` (an AlterPartition's; default: the partition's) that
    differs from the partition's is written, as the last step. ``leader_order`` (a topic's
    ``leaders.preference``) reorders the replicas an election tries, most preferred first."""
    builder = _Builder(
        partition,
        is_acceptable_leader,
        partition.isr if target_isr is None else target_isr,
        election,
        elr_enabled,
        min_isr,
        unclean_shutdown_replicas,
        leader_order,
    )
    fields = builder.build()
    if (
        target_leader_recovery_state is not None
        and target_leader_recovery_state != partition.leader_recovery_state
    ):
        fields["leader_recovery_state"] = target_leader_recovery_state
    if not fields:
        return None
    return PartitionChangeRecord(
        partition_id=partition.partition_id,
        topic_id=topic_id,
        isr=fields.get("isr"),
        leader=fields.get("leader", NO_LEADER_CHANGE),
        leader_recovery_state=fields.get("leader_recovery_state", NO_RECOVERY_STATE_CHANGE),
        eligible_leader_replicas=fields.get("eligible_leader_replicas"),
        last_known_elr=fields.get("last_known_elr"),
    )
