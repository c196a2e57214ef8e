"""Partition reassignment (KIP-455): moving a partition's replicas to other brokers (Kafka's
``ReplicationControlManager.alterPartitionReassignments`` and ``listPartitionReassignments``,
``PartitionReassignmentReplicas``, ``PartitionReassignmentRevert`` and the reassignment half of
``PartitionChangeBuilder``).

Goals
    * AlterPartitionReassignments: give a partition a target replica list; the new replicas
      join, copy the log from the leader, and once they are all in sync the old ones leave, with
      the partition online throughout. A null target cancels the reassignment in progress and
      goes back to the original replicas.
    * ListPartitionReassignments: the partitions being reassigned, with their replicas and the
      replicas being added and removed.
    * Completion happens in whichever change sees the ISR reach the target (an AlterPartition
      from the leader, usually), as Kafka's builder completes it in every change it builds.

Constraints
    * Answers per partition, Kafka's: UNKNOWN_TOPIC_OR_PARTITION for a topic or partition the
      image lacks; INVALID_REPLICA_ASSIGNMENT for an empty target, a broker listed twice or a
      broker not registered; INVALID_REPLICATION_FACTOR when KIP-860's
      ``allow_replication_factor_change`` is false and the target's length is not the number of
      replicas the partition is headed for; NO_REASSIGNMENT_IN_PROGRESS for cancelling where
      there is nothing to cancel; INVALID_REPLICA_ASSIGNMENT for a cancel that would need an
      unclean election on a topic without ``unclean.leader.election.enable``.
    * State changes only through PartitionChangeRecords; the lists of adding and removing
      replicas live in the image (``PartitionRegistration``), so a restarted controller resumes
      every reassignment. ``Directories`` follows ``Replicas``: a kept replica keeps its
      directory, a new one gets its broker's default (UNASSIGNED for a broker of several
      directories: the broker chooses, and says so with AssignReplicasToDirs).
    * Listing scans the image (no index of reassigning partitions is kept): O(partitions) per
      ListPartitionReassignments, which is an operator's request, not a hot path.

Algorithm
    1. Start (Kafka's ``PartitionReassignmentReplicas``): ``removing`` = current - target and
       ``adding`` = target - current, both sorted; ``replicas`` = target followed by
       ``removing``. One record sets them.
    2. Every change built by :func:`build_change` first tries to complete: with a reassignment
       in progress, the target ISR without the removing replicas (and the replicas without
       them) must be non-empty, and that ISR must hold every remaining replica. Then
       ``replicas`` = target, the ISR is filtered to it, adding and removing are cleared.
    3. Then the election runs over the new replica order: the current leader stays if it is
       still in the ISR and may lead, else the first target replica in the ISR that may.
       When a replica leaves the replica list and the leader does not change, the record
       still names the leader, so that the leader epoch moves on (Kafka's
       ``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``).
    4. Cancel (Kafka's ``PartitionReassignmentRevert``): replicas = replicas - adding, ISR =
       ISR - adding; an ISR left empty takes the first original replica (unclean).

Worked example
    t-0 on [1], ISR [1], leader 1. Reassign to [2]: ``PartitionChangeRecord(replicas=[2, 1],
    removing=[1], adding=[2])`` (nobody has left yet). Broker 2 fetches and catches up;
    broker 1 asks AlterPartition ISR [1, 2]: the ISR without 1 is [2], which holds the replicas
    without 1, [2]: ``PartitionChangeRecord(isr=[2], leader=2, replicas=[2], removing=[],
    adding=[])``, answered NEW_LEADER_ELECTED. Broker 1 is no longer a replica and deletes its
    log.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rackwise.common import InvalidReplicationFactorException, RackwiseError
from rackwise.common.error_codes import NO_REASSIGNMENT_IN_PROGRESS
from rackwise.common.errors import UnknownTopicOrPartitionException
from rackwise.controller.brokers import default_dir, leader_acceptor
from rackwise.controller.domains import (
    LeaderOrder,
    RackRule,
    check_assignment_domains,
    leader_order,
)
from rackwise.controller.errors import (
    ApiError,
    InvalidReplicaAssignmentException,
)
from rackwise.controller.messages import (
    ListPartitionReassignmentsTopic,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
    ReassignablePartition,
    ReassignablePartitionResult,
    ReassignableTopic,
    ReassignableTopicResult,
)
from rackwise.controller.partition_change import Election, build_partition_change
from rackwise.controller.topics import check_manual_assignment
from rackwise.image import MetadataImage, PartitionRegistration
from rackwise.records.constants import NO_LEADER_CHANGE
from rackwise.records.metadata import PartitionChangeRecord
from rackwise.topology import LeadersPreference

TopicSettings = Callable[[MetadataImage, uuid.UUID], tuple[Election, int]]
"""A topic's election and effective minimum ISR (``ReplicationControl._topic_settings``)."""
DefaultDir = Callable[[int], uuid.UUID]
DomainRules = Callable[[MetadataImage, str], tuple[RackRule, LeadersPreference]]
"""A topic's ``min.insync.racks`` rule and ``leaders.preference``, by name."""
"""The directory a replica new to a broker gets (Kafka's ``DefaultDirProvider``)."""


class NoReassignmentInProgressException(RackwiseError):
    """Kafka's NO_REASSIGNMENT_IN_PROGRESS (85): a cancel where no reassignment runs."""

    error_code = NO_REASSIGNMENT_IN_PROGRESS
    default_message: ClassVar[str] = "No partition reassignment is in progress."


@dataclass(frozen=True, slots=True)
class ReassignmentReplicas:
    """Kafka's ``PartitionReassignmentReplicas``: the replica list during a reassignment (the
    target first, then the replicas being removed) and the replicas being added and removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @staticmethod
    def of(current: Sequence[int], target: Sequence[int]) -> ReassignmentReplicas:
        """The reassignment from ``current`` to ``target`` (module docstring, step 1)."""
        removing = tuple(sorted(set(current) - set(target)))
        adding = tuple(sorted(set(target) - set(current)))
        return ReassignmentReplicas((*target, *removing), adding, removing)

    @staticmethod
    def of_partition(partition: PartitionRegistration) -> ReassignmentReplicas:
        return ReassignmentReplicas(
            tuple(partition.replicas),
            tuple(partition.adding_replicas),
            tuple(partition.removing_replicas),
        )

    @property
    def is_in_progress(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """The replicas the partition is headed for."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def original(self) -> tuple[int, ...]:
        """The replicas before the reassignment (Kafka's ``originalReplicas``)."""
        return tuple(r for r in self.replicas if r not in self.adding)

    def maybe_complete(self, target_isr: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(replicas, ISR) once complete, or () and () while it is not (module docstring,
        step 2): Kafka's ``maybeCompleteReassignment``."""
        if not self.is_in_progress:
            return (), ()
        isr = tuple(r for r in target_isr if r not in self.removing)
        replicas = self.target
        if not isr or not replicas or not set(replicas) <= set(isr):
            return (), ()
        return replicas, isr


def is_reassigning(partition: PartitionRegistration) -> bool:
    return bool(partition.adding_replicas or partition.removing_replicas)


def _with_assignment(
    record: Any | None,
    partition: PartitionRegistration,
    topic_id: uuid.UUID,
    target: ReassignmentReplicas,
    default_directory: DefaultDir | None,
) -> Any | None:
    """``record`` (None: no change yet) with the replica, adding, removing and directory
    changes that take ``partition`` to ``target`` (Kafka's ``setAssignmentChanges``), and the
    leader epoch bump a leaving replica needs."""
    fields: dict[str, Any] = {}
    leader = NO_LEADER_CHANGE if record is None else record.leader
    if leader == NO_LEADER_CHANGE and not set(partition.replicas) <= set(target.replicas):
        fields["leader"] = partition.leader
    directories = dict(zip(partition.replicas, partition.directories, strict=True))
    new_directories: list[uuid.UUID] = []
    for replica in target.replicas:
        directory = directories.get(replica)
        if directory is None:
            if default_directory is None:
                raise RackwiseError(
                    f"BUG: replica {replica} is new to {partition} but no default directory"
                )
            directory = default_directory(replica)
        new_directories.append(directory)
    if tuple(new_directories) != tuple(partition.directories):
        fields["directories"] = tuple(new_directories)
    if target.replicas != tuple(partition.replicas):
        fields["replicas"] = target.replicas
    if target.removing != tuple(partition.removing_replicas):
        fields["removing_replicas"] = target.removing
    if target.adding != tuple(partition.adding_replicas):
        fields["adding_replicas"] = target.adding
    if not fields:
        return record
    if record is None:
        record = PartitionChangeRecord(partition_id=partition.partition_id, topic_id=topic_id)
    return dataclasses.replace(record, **fields)


def build_change(
    partition: PartitionRegistration,
    topic_id: uuid.UUID,
    is_acceptable_leader: Callable[[int], bool],
    *,
    target_isr: Sequence[int] | None = None,
    target: ReassignmentReplicas | None = None,
    election: Election = Election.ONLINE,
    elr_enabled: bool = False,
    min_isr: int = 1,
    unclean_shutdown_replicas: Collection[int] = (),
    target_leader_recovery_state: int | None = None,
    default_directory: DefaultDir | None = None,
    leader_order: LeaderOrder | None = None,
) -> Any | None:
    """:func:`~rackwise.controller.partition_change.build_partition_change` with reassignment:
    ``target`` (default: the partition's own lists) is completed if the target ISR allows it
    (module docstring, step 2), the election runs over its replica order, and the record
    carries the replica, adding, removing and directory changes. ``default_directory`` is
    needed only when ``target`` adds replicas."""
    if target is None:
        target = ReassignmentReplicas.of_partition(partition)
    isr = tuple(partition.isr if target_isr is None else target_isr)
    replicas, completed_isr = target.maybe_complete(isr)
    if replicas:
        target, isr = ReassignmentReplicas(replicas), completed_isr
    view = partition
    if target.replicas != tuple(partition.replicas):
        view = dataclasses.replace(partition, replicas=target.replicas)
    record = build_partition_change(
        view,
        topic_id,
        is_acceptable_leader,
        target_isr=isr,
        election=election,
        elr_enabled=elr_enabled,
        min_isr=min_isr,
        unclean_shutdown_replicas=unclean_shutdown_replicas,
        target_leader_recovery_state=target_leader_recovery_state,
        leader_order=leader_order,
    )
    return _with_assignment(record, partition, topic_id, target, default_directory)


# ---- AlterPartitionReassignments -------------------------------------------------------------


class _Reassigner:
    """One AlterPartitionReassignments against one image."""

    def __init__(
        self,
        image: MetadataImage,
        topic_settings: TopicSettings,
        elr_enabled: bool,
        allow_replication_factor_change: bool,
        domain_rules: DomainRules | None = None,
    ) -> None:
        self.image = image
        self.topic_settings = topic_settings
        self.domain_rules = domain_rules
        self.elr_enabled = elr_enabled
        self.allow_replication_factor_change = allow_replication_factor_change

    def reassign(self, topic_name: str, request: ReassignablePartition) -> Any | None:
        """The record for one partition (None: nothing changes), or raises its error."""
        topic = self.image.topic(topic_name)
        if topic is None:
            raise UnknownTopicOrPartitionException(f"Unable to find a topic named {topic_name}.")
        partition = topic.partitions.get(request.partition_index)
        if partition is None:
            raise UnknownTopicOrPartitionException(
                f"Unable to find partition {topic_name}:{request.partition_index}."
            )
        election, min_isr = self.topic_settings(self.image, topic.topic_id)
        if request.replicas is None:
            return self.cancel(topic_name, topic.topic_id, partition, election, min_isr)
        if not self.allow_replication_factor_change:
            heading = ReassignmentReplicas.of_partition(partition).target
            if len(heading) != len(request.replicas):
                raise InvalidReplicationFactorException(
                    f"The replication factor is changed from {len(heading)} to "
                    f"{len(request.replicas)}"
                )
        check_manual_assignment(self.image, request.replicas, None)
        order = None
        if self.domain_rules is not None:
            rule, preference = self.domain_rules(self.image, topic_name)
            rows = {request.partition_index: request.replicas}
            check_assignment_domains(self.image, topic_name, rows, rule, manual=True)
            order = leader_order(self.image, preference)
        return build_change(
            partition,
            topic.topic_id,
            leader_acceptor(self.image, partition),
            target=ReassignmentReplicas.of(partition.replicas, request.replicas),
            elr_enabled=self.elr_enabled,
            min_isr=min_isr,
            default_directory=lambda broker: default_dir(self.image, broker),
            leader_order=order,
        )

    def cancel(
        self,
        topic_name: str,
        topic_id: uuid.UUID,
        partition: PartitionRegistration,
        election: Election,
        min_isr: int,
    ) -> Any | None:
        """Kafka's ``cancelPartitionReassignment`` (module docstring, step 4); ``election`` is
        UNCLEAN where the topic allows unclean elections."""
        if not is_reassigning(partition):
            raise NoReassignmentInProgressException()
        ongoing = ReassignmentReplicas.of_partition(partition)
        replicas = ongoing.original
        isr = [r for r in partition.isr if r not in ongoing.adding]
        unclean = election is Election.UNCLEAN
        if not isr:
            if not replicas:
                raise InvalidReplicaAssignmentException(
                    "Invalid replica assignment: addingReplicas contains all replicas."
                )
            if not unclean:
                raise InvalidReplicaAssignmentException(
                    f"Unable to revert partition assignment for {topic_name}:"
                    f"{partition.partition_id} because it would require an unclean leader "
                    "election."
                )
            isr = [replicas[0]]
        return build_change(
            partition,
            topic_id,
            leader_acceptor(self.image, partition),
            target_isr=isr,
            target=ReassignmentReplicas(replicas),
            election=Election.UNCLEAN if unclean else Election.ONLINE,
            elr_enabled=self.elr_enabled,
            min_isr=min_isr,
        )


def alter_partition_reassignments(
    image: MetadataImage,
    topics: Sequence[ReassignableTopic],
    records: list[Any],
    *,
    topic_settings: TopicSettings,
    elr_enabled: bool,
    allow_replication_factor_change: bool = True,
    domain_rules: DomainRules | None = None,
) -> list[ReassignableTopicResult]:
    """One result per partition asked about, in request order; the record of each accepted
    partition is appended to ``records`` (module docstring). ``topic_settings`` gives a
    topic's election (UNCLEAN where ``unclean.leader.election.enable``) and minimum ISR;
    ``domain_rules`` its ``min.insync.racks`` (a target in fewer domains is
    INVALID_REPLICA_ASSIGNMENT) and ``leaders.preference``."""
    reassigner = _Reassigner(
        image, topic_settings, elr_enabled, allow_replication_factor_change, domain_rules
    )
    results: list[ReassignableTopicResult] = []
    for topic in topics:
        answers: list[ReassignablePartitionResult] = []
        for request in topic.partitions:
            try:
                record = reassigner.reassign(topic.name, request)
            except RackwiseError as e:
                answers.append(ReassignablePartitionResult(request.partition_index, ApiError.of(e)))
                continue
            if record is not None:
                records.append(record)
            answers.append(ReassignablePartitionResult(request.partition_index))
        results.append(ReassignableTopicResult(topic.name, tuple(answers)))
    return results


# ---- ListPartitionReassignments --------------------------------------------------------------


def _ongoing(partition: PartitionRegistration) -> OngoingPartitionReassignment:
    return OngoingPartitionReassignment(
        partition.partition_id,
        tuple(partition.replicas),
        tuple(partition.adding_replicas),
        tuple(partition.removing_replicas),
    )


def list_partition_reassignments(
    image: MetadataImage, topics: Iterable[ListPartitionReassignmentsTopic] | None
) -> list[OngoingTopicReassignment]:
    """The reassignments in progress: of every topic (``topics`` None; topics by name,
    partitions by id), or of the partitions named (in request order; unknown topics and
    partitions, and partitions not being reassigned, are left out, as Kafka leaves them)."""
    found: list[OngoingTopicReassignment] = []
    if topics is None:
        for name in sorted(image.topics_by_name):
            partitions = image.topics_by_name[name].partitions
            ongoing = tuple(_ongoing(partitions[p]) for p in sorted(partitions))
            ongoing = tuple(o for o in ongoing if o.adding_replicas or o.removing_replicas)
            if ongoing:
                found.append(OngoingTopicReassignment(name, ongoing))
        return found
    for asked in topics:
        topic = image.topic(asked.name)
        if topic is None:
            continue
        chosen = (topic.partitions.get(p) for p in asked.partition_indexes)
        ongoing = tuple(_ongoing(p) for p in chosen if p is not None and is_reassigning(p))
        if ongoing:
            found.append(OngoingTopicReassignment(asked.name, ongoing))
    return found
