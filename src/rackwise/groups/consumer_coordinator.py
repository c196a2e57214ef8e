"""The consumer groups (KIP-848) of one ``__consumer_offsets`` partition, pure (Kafka's
``GroupMetadataManager`` for consumer groups): heartbeats, timers and loaded records in;
answers, records to write and timers to set out.

Goals
    * :meth:`ConsumerGroups.heartbeat` is Kafka's ``consumerGroupHeartbeat``: join (epoch 0),
      leave (-1), a static member's temporary leave (-2), and otherwise a heartbeat that may
      change the member's subscription, bump the group epoch, compute a new target assignment
      and move the member one step towards it (:func:`rackwise.groups.consumer_member.reconcile`).
    * A large group's target (``offload_partitions``) is not computed within the heartbeat: the
      outcome carries an :class:`~rackwise.groups.consumer_target.AssignmentJob` for the driver
      to run elsewhere, and :meth:`ConsumerGroups.assigned` is the event of its result. Until
      then members reconcile towards the previous target (the group is ``Assigning``). One job
      per group is out at a time; a result whose group epoch has moved on (or whose members
      are not the group's: a static member replaced by another id) is stale: it is dropped
      and a job for the current epoch goes out instead. A member that joins a group
      whose first target is still being computed has no target epoch to take: it is answered
      the group epoch, waiting for partitions (``UNRELEASED_PARTITIONS``), and takes the
      target's epoch (never lower: a stale target is never installed) when it comes.
    * :meth:`ConsumerGroups.expire` fences a member whose session expired or who kept
      partitions past its rebalance timeout; :meth:`ConsumerGroups.on_loaded` gives the timers
      a new coordinator sets after replaying the records.

Constraints
    * Every change is a record: an answer's records are replayed here as they are made, and a
      coordinator that replays the same records (:meth:`ConsumerGroups.replay`) has the same
      groups. Timers, the leaders' racks last assigned with and the cache of the topics seen
      are not records; a new coordinator starts them afresh.
    * A group's epoch bumps when a member joins or leaves, a subscription changes, or the
      subscribed topics' metadata changes; for a leader-rack-aware assignor, also when a
      subscribed partition's leader has been in another rack for
      ``leader_rack_damping_ms``.
    * Rejoining (epoch 0) with the id of a member still in the group restarts that member
      with nothing owned, rather than fencing it until its session expires.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field, replace

from rackwise.assignors.server_registry import uses_leader_racks
from rackwise.common.error_codes import (
    FENCED_INSTANCE_ID,
    FENCED_MEMBER_EPOCH,
    GROUP_ID_NOT_FOUND,
    GROUP_MAX_SIZE_REACHED,
    ILLEGAL_GENERATION,
    STALE_MEMBER_EPOCH,
    UNKNOWN_MEMBER_ID,
    UNRELEASED_INSTANCE_ID,
)
from rackwise.groups.classic import ClassicGroup, stored
from rackwise.groups.consumer_group import ConsumerGroup
from rackwise.groups.consumer_member import (
    LEAVE_GROUP_EPOCH,
    LEAVE_GROUP_STATIC_EPOCH,
    STABLE,
    UNRELEASED_PARTITIONS,
    UNREVOKED_PARTITIONS,
    ConsumerMember,
    FencedMemberEpoch,
    check_epoch,
    metadata_record,
    reconcile,
)
from rackwise.groups.consumer_records import (
    CURRENT_ASSIGNMENT_KEY,
    GROUP_EPOCH_KEY,
    MEMBER_METADATA_KEY,
    TARGET_MEMBER_KEY,
    GroupEpoch,
    PartitionMetadata,
    Record,
    TargetMember,
    Tombstone,
    decode,
    encode,
    encode_tombstone,
)
from rackwise.groups.consumer_target import (
    AssignmentJob,
    AssignmentResult,
    LeaderRacks,
    assignment_job,
    compute,
    leader_racks,
    subscribed_topics,
    subscription_metadata,
    target_records,
)
from rackwise.groups.consumer_types import (
    MEMBER_TIMERS,
    REBALANCE,
    SESSION,
    ConsumerGroupConfig,
    GroupError,
    Heartbeat,
    HeartbeatAnswer,
    Timer,
    TopicsView,
    check_heartbeat,
)
from rackwise.groups.group_metadata import encode_metadata
from rackwise.groups.offsets import encode_group_key
from rackwise.groups.online_migration import consumer_records_of, downgrade

KeyValue = tuple[bytes, bytes | None]


@dataclass(slots=True)
class Outcome:
    answer: HeartbeatAnswer | None
    records: list[KeyValue] = field(default_factory=list)
    timers: list[Timer] = field(default_factory=list)
    jobs: list[AssignmentJob] = field(default_factory=list)
    """Targets to compute away from the loop; each result goes to ``ConsumerGroups.assigned``."""
    downgraded: ClassicGroup | None = None
    """The classic group that replaces a consumer group whose last consumer-protocol member
    left or was replaced (its ``GroupMetadataValue`` is among ``records``); the driver hands
    it to the classic groups once the records are written."""
    rebalance: bool = True
    """Whether ``downgraded`` prepares a rebalance (not after a replacement, as Kafka's)."""


@dataclass(slots=True)
class _Leaders:
    assigned: LeaderRacks
    moved_since_ms: int | None = None


class ConsumerGroups:
    """The consumer groups of one ``__consumer_offsets`` partition (module docstring)."""

    def __init__(self, config: ConsumerGroupConfig | None = None) -> None:
        self.config = config or ConsumerGroupConfig()
        self.groups: dict[str, ConsumerGroup] = {}
        self._seen: dict[str, int] = {}  # group -> the topics version its metadata was made of
        self._leaders: dict[str, _Leaders] = {}
        self._pending: dict[str, int] = {}  # group -> the epoch of the job out for it
        self._out: Outcome = Outcome(None)
        self._now_ms = 0
        self._rejoining: set[tuple[str, str]] = set()  # classic members with a join timer

    # ---- records ----------------------------------------------------------------------

    def replay(self, key: bytes, value: bytes | None) -> None:
        """Apply one loaded consumer group record (raises ``OffsetsFormatError``)."""
        self._apply(decode(key, value))

    def _apply(self, record: Record | Tombstone) -> None:
        group = self.groups.get(record.group)
        if group is None:
            if isinstance(record, Tombstone):
                return
            group = self.groups[record.group] = ConsumerGroup(record.group)
        group.replay(record)
        if isinstance(record, Tombstone) and record.kind == GROUP_EPOCH_KEY:
            del self.groups[record.group]

    def _emit(self, record: Record | Tombstone) -> None:
        self._apply(record)
        if isinstance(record, Tombstone):
            self._out.records.append((encode_tombstone(record), None))
        else:
            self._out.records.append(encode(record))

    def _timer(
        self, kind: str, group: str, member: str, deadline: int | None, epoch: int = 0
    ) -> None:
        self._out.timers.append(Timer(kind, group, member, deadline, epoch))

    def _begin(self) -> Outcome:
        self._out = Outcome(None)
        return self._out

    # ---- heartbeats --------------------------------------------------------------------

    def heartbeat(self, request: Heartbeat, now_ms: int, view: TopicsView) -> Outcome:
        """Answer one ConsumerGroupHeartbeat."""
        out = self._begin()
        self._now_ms = now_ms
        try:
            check_heartbeat(request, self.config.assignors)
            if request.member_epoch in (LEAVE_GROUP_EPOCH, LEAVE_GROUP_STATIC_EPOCH):
                out.answer = self._leave(request, view)
            else:
                out.answer = self._heartbeat(request, now_ms, view)
        except FencedMemberEpoch as e:
            out.answer = HeartbeatAnswer(FENCED_MEMBER_EPOCH, str(e))
        except GroupError as e:
            out.answer = HeartbeatAnswer(e.code, str(e))
        return out

    def _group(self, group_id: str, create: bool) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            if not create:
                raise GroupError(GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            group = ConsumerGroup(group_id)
        return group

    def _member(self, group: ConsumerGroup, request: Heartbeat) -> ConsumerMember:
        """The member the heartbeat is from: new, rejoining, replacing a static member, or
        known (with Kafka's checks of its epoch)."""
        joining = request.member_epoch == 0
        member_id = request.member_id or new_member_id()
        if request.instance_id is not None:
            return self._static_member(group, request, member_id)
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise GroupError(
                    UNKNOWN_MEMBER_ID,
                    f"Member {member_id} is not a member of group {group.group_id}.",
                )
            return ConsumerMember(member_id)
        if joining:
            return _restarted(member)
        check_epoch(member, request.member_epoch, request.owned)
        return member

    def _static_member(
        self, group: ConsumerGroup, request: Heartbeat, member_id: str
    ) -> ConsumerMember:
        instance = request.instance_id or ""
        existing = group.static_member(instance)
        if request.member_epoch == 0:
            if existing is None:
                return group.members.get(member_id) or ConsumerMember(member_id)
            if existing.member_id == member_id:
                return _restarted(existing)
            if existing.member_epoch != LEAVE_GROUP_STATIC_EPOCH:
                raise GroupError(
                    UNRELEASED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance} cannot join the "
                    f"group because the instance id is owned by {existing.member_id} member.",
                )
            return self._replace_static(group, existing, member_id)
        if existing is None:
            raise GroupError(UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
        if existing.member_id != member_id:
            raise GroupError(
                FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance} was fenced by member "
                f"{existing.member_id}.",
            )
        check_epoch(existing, request.member_epoch, request.owned)
        return existing

    def _replace_static(
        self, group: ConsumerGroup, old: ConsumerMember, member_id: str
    ) -> ConsumerMember:
        """Kafka's ``replaceMember``: the new member takes the old one's assignment."""
        target = dict(group.target(old.member_id))
        self._remove(group, old.member_id)
        new = replace(old, member_id=member_id, member_epoch=0, previous_epoch=0)
        self._emit(metadata_record(group.group_id, new))
        self._emit(TargetMember(group.group_id, member_id, target))
        self._emit(group.current_record(new))
        return new

    def _heartbeat(self, request: Heartbeat, now_ms: int, view: TopicsView) -> HeartbeatAnswer:
        joining = request.member_epoch == 0
        group = self._group(request.group_id, create=joining)
        member_id = request.member_id
        size = len(group.members)
        if size >= self.config.max_size and (not member_id or member_id not in group.members):
            raise GroupError(
                GROUP_MAX_SIZE_REACHED,
                "The consumer group has reached its maximum capacity of "
                f"{self.config.max_size} members.",
            )
        member = self._member(group, request)
        group = self.groups.get(group.group_id, group)
        updated = _updated(member, request)
        bump = self._store_member(group, member, updated, joining)
        group = self.groups[group.group_id]
        bump = self._refresh_metadata(group, view, now_ms, bump)
        epoch = group.epoch + 1 if bump else group.epoch
        if bump:
            self._emit(GroupEpoch(group.group_id, epoch))
        if epoch > group.target_epoch:
            self._assign(group, view, epoch)
        before = group.members[updated.member_id]
        if group.target_epoch == 0:  # the group's first target is being computed
            after = before
            if before.member_epoch == 0:
                after = replace(before, member_epoch=epoch, state=UNRELEASED_PARTITIONS)
        else:
            after = reconcile(
                before,
                group.target_epoch,
                group.target(updated.member_id),
                group.partition_epoch,
                request.owned,
            )
        if after != before or joining:
            self._emit(group.current_record(after))
            self._rebalance_timer(group.group_id, after, now_ms)
        self._timer(
            SESSION, group.group_id, after.member_id, now_ms + self.config.session_timeout_ms
        )
        full = joining or (
            request.rebalance_timeout_ms != -1
            and request.topic_names is not None
            and request.owned is not None
        )
        changed = after.assigned != member.assigned
        return HeartbeatAnswer(
            member_id=after.member_id,
            member_epoch=after.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
            assignment=after.assigned if full or changed else None,
        )

    def _assign(self, group: ConsumerGroup, view: TopicsView, epoch: int) -> None:
        """Compute the target for ``epoch`` now, or send a job out for it (module docstring)."""
        if group.group_id in self._pending:
            return  # its result comes back first, stale or not
        assignor = group.preferred_assignor(self.config.assignors[0])
        job = assignment_job(group, view, assignor, epoch)
        if job.partitions < self.config.offload_partitions:
            self._install(group, compute(job))
        else:
            self._pending[group.group_id] = epoch
            self._out.jobs.append(job)

    def _install(self, group: ConsumerGroup, result: AssignmentResult) -> None:
        for record in target_records(group, result):
            self._emit(record)
        self._leaders[group.group_id] = _Leaders(result.leaders)

    def assigned(self, result: AssignmentResult, view: TopicsView) -> Outcome:
        """A job's result is back: its target is installed if the group is still at the job's
        epoch; otherwise it is dropped and, if the group still needs one, a new job goes out.
        A result of no job out here (the coordinator reloaded meanwhile) is dropped."""
        out = self._begin()
        job = result.job
        if self._pending.get(job.group_id) != job.epoch:
            return out
        del self._pending[job.group_id]
        group = self.groups.get(job.group_id)
        if group is None or not group.members:
            return out
        if group.epoch != job.epoch or group.members.keys() != job.members.keys():
            # stale; a static member replaced meanwhile changes the ids, not the epoch
            if group.epoch > group.target_epoch:
                self._assign(group, view, group.epoch)
            return out
        try:
            self._install(group, result)
        except GroupError as e:
            out.answer = HeartbeatAnswer(e.code, str(e))  # the next heartbeat tries again
        return out

    def _store_member(
        self, group: ConsumerGroup, old: ConsumerMember, new: ConsumerMember, joining: bool
    ) -> bool:
        """Write the member's metadata if it changed; whether its subscription did."""
        known = group.members.get(new.member_id)
        if known is None or metadata_record(group.group_id, known) != metadata_record(
            group.group_id, new
        ):
            self._emit(metadata_record(group.group_id, new))
        if joining and known is not None and _assignment_of(known) != _assignment_of(new):
            self._emit(group.current_record(new))
        if known is None:
            return True
        return known.subscription() != new.subscription()

    def _refresh_metadata(
        self, group: ConsumerGroup, view: TopicsView, now_ms: int, bump: bool
    ) -> bool:
        """Recompute the subscribed topics' metadata when subscriptions or topics changed;
        whether the group epoch must bump."""
        changed = self._seen.get(group.group_id) != view.version
        if bump or changed:
            self._seen[group.group_id] = view.version
            topics = subscribed_topics(group.members.values(), view)
            metadata = subscription_metadata(topics, view)
            if metadata != group.topics:
                self._emit(PartitionMetadata(group.group_id, metadata))
                bump = True
        return self._leader_moved(group, view, now_ms, changed) or bump

    def _leader_moved(
        self, group: ConsumerGroup, view: TopicsView, now_ms: int, changed: bool
    ) -> bool:
        """Whether a subscribed partition's leader has been in another rack than the target
        was made with for the damping interval (leader-rack-aware assignors only)."""
        leaders = self._leaders.get(group.group_id)
        if leaders is not None and not changed and leaders.moved_since_ms is None:
            return False
        if group.epoch > group.target_epoch:
            return False  # the target being computed reads the leaders where they are now
        if not uses_leader_racks(group.preferred_assignor(self.config.assignors[0])):
            return False
        now = leader_racks((t.name for t in group.topics), view)
        if leaders is None:
            leaders = self._leaders[group.group_id] = _Leaders(now)
        if now == leaders.assigned:
            leaders.moved_since_ms = None
            return False
        if leaders.moved_since_ms is None:
            leaders.moved_since_ms = now_ms
        return now_ms - leaders.moved_since_ms >= self.config.leader_rack_damping_ms

    def _rebalance_timer(self, group_id: str, member: ConsumerMember, now_ms: int) -> None:
        if member.state == UNREVOKED_PARTITIONS:
            deadline = now_ms + member.rebalance_timeout_ms
            self._timer(REBALANCE, group_id, member.member_id, deadline, member.member_epoch)
        else:
            self._timer(REBALANCE, group_id, member.member_id, None)

    # ---- leaving and fencing -----------------------------------------------------------

    def _leave(self, request: Heartbeat, view: TopicsView) -> HeartbeatAnswer:
        group = self._group(request.group_id, create=False)
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise GroupError(
                    UNKNOWN_MEMBER_ID,
                    f"Member {request.member_id} is not a member of group {group.group_id}.",
                )
        else:
            member = group.static_member(request.instance_id)
            if member is None:
                raise GroupError(
                    UNKNOWN_MEMBER_ID, f"Instance id {request.instance_id} is unknown."
                )
            if member.member_id != request.member_id:
                raise GroupError(
                    FENCED_INSTANCE_ID,
                    f"Static member {request.member_id} with instance id {request.instance_id} "
                    f"was fenced by member {member.member_id}.",
                )
            if request.member_epoch == LEAVE_GROUP_STATIC_EPOCH:
                left = replace(member, member_epoch=LEAVE_GROUP_STATIC_EPOCH, revoking={})
                self._emit(group.current_record(left))
                return HeartbeatAnswer(
                    member_id=member.member_id, member_epoch=LEAVE_GROUP_STATIC_EPOCH
                )
        self._fence(group, member.member_id, view)
        return HeartbeatAnswer(member_id=request.member_id, member_epoch=request.member_epoch)

    def _remove(self, group: ConsumerGroup, member_id: str) -> None:
        for kind in (CURRENT_ASSIGNMENT_KEY, TARGET_MEMBER_KEY, MEMBER_METADATA_KEY):
            self._emit(Tombstone(kind, group.group_id, member_id))

    def _fence(self, group: ConsumerGroup, member_id: str, view: TopicsView) -> None:
        """Kafka's ``consumerGroupFenceMember``: the member's records go, the subscribed
        topics' metadata is recomputed without it, and the group epoch bumps; or, when only
        classic members are left and the policy allows it, the group becomes a classic one."""
        for kind in MEMBER_TIMERS:
            self._timer(kind, group.group_id, member_id, None)
        self._rejoining.discard((group.group_id, member_id))
        if self._to_classic(group, downgrade(group, member_id, view, self._now_ms, self.config)):
            return
        self._remove(group, member_id)
        metadata = subscription_metadata(subscribed_topics(group.members.values(), view), view)
        if metadata != group.topics:
            self._emit(PartitionMetadata(group.group_id, metadata))
        self._emit(GroupEpoch(group.group_id, group.epoch + 1))

    def _to_classic(
        self,
        group: ConsumerGroup,
        found: tuple[list[Tombstone], ClassicGroup] | None,
        *,
        rebalance: bool = True,
    ) -> bool:
        """Whether ``found`` (:func:`~rackwise.groups.online_migration.downgrade` or
        ``downgrade_replaced``) made the group a classic one (Kafka's
        ``convertToClassicGroup``), preparing a rebalance unless a member was replaced."""
        if found is None:
            return False
        self._out.rebalance = rebalance
        for member_id in group.members:
            for kind in MEMBER_TIMERS:
                self._timer(kind, group.group_id, member_id, None)
        for tombstone in found[0]:
            self._emit(tombstone)
        value = encode_metadata(stored(found[1]))
        self._out.records.append((encode_group_key(group.group_id), value))
        self._out.downgraded = found[1]
        self._pending.pop(group.group_id, None)
        return True

    def upgrade(self, classic: ClassicGroup, view: TopicsView, now_ms: int) -> Outcome:
        """The consumer group that takes over the classic group ``classic`` (Kafka's
        ``convertToConsumerGroup``): its records, and each member's session running with
        its classic session timeout; raises ``OffsetsFormatError`` when a member's embedded
        protocol does not parse."""
        out = self._begin()
        records = consumer_records_of(classic, view)
        for record in records:
            self._emit(record)
        for member in classic.members.values():
            deadline = now_ms + member.session_timeout_ms
            self._timer(SESSION, classic.group_id, member.member_id, deadline)
        return out

    def expire(self, timer: Timer, now_ms: int, view: TopicsView) -> Outcome:
        """A member's timer fired: fence the member if it still applies."""
        out = self._begin()
        self._now_ms = now_ms
        self._rejoining.discard((timer.group_id, timer.member_id))
        group = self.groups.get(timer.group_id)
        member = None if group is None else group.members.get(timer.member_id)
        if group is None or member is None:
            return out
        if timer.kind == REBALANCE and (
            member.member_epoch != timer.epoch or member.state != UNREVOKED_PARTITIONS
        ):
            return out
        self._fence(group, member.member_id, view)
        return out

    def on_loaded(self, now_ms: int) -> list[Timer]:
        """The timers a coordinator sets once it has replayed the partition's records."""
        out = self._begin()
        for group in self.groups.values():
            for member in group.members.values():
                timeout = self.config.session_timeout_ms
                if member.classic is not None:
                    timeout = member.classic.session_timeout_ms
                deadline = now_ms + timeout
                self._timer(SESSION, group.group_id, member.member_id, deadline)
                if member.state == UNREVOKED_PARTITIONS:
                    self._rebalance_timer(group.group_id, member, now_ms)
        return out.timers

    # ---- offsets ------------------------------------------------------------------------

    def commit_error(self, group_id: str, member_id: str, member_epoch: int) -> GroupError | None:
        """Kafka's ``ConsumerGroup.validateOffsetCommit`` for a consumer group: an epoch of -1
        is accepted while the group has no member; otherwise the member must be known and at
        its current epoch."""
        group = self.groups.get(group_id)
        if group is None or (member_epoch < 0 and not group.members):
            return None
        member = group.members.get(member_id)
        if member is None:
            return GroupError(
                UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
            )
        if member_epoch != member.member_epoch and member.classic is not None:
            return GroupError(
                ILLEGAL_GENERATION,
                f"The received generation id {member_epoch} does not match the expected "
                f"member epoch {member.member_epoch}.",
            )
        if member_epoch != member.member_epoch:
            return GroupError(
                STALE_MEMBER_EPOCH,
                f"The received member epoch {member_epoch} does not match the expected member "
                f"epoch {member.member_epoch}.",
            )
        return None


def _updated(member: ConsumerMember, request: Heartbeat) -> ConsumerMember:
    """The member with what the heartbeat changed (``maybeUpdate*``: ``None`` keeps)."""
    changes: dict[str, object] = {
        "client_id": request.client_id,
        "client_host": request.client_host,
        "classic": None,
    }
    for name, value in (
        ("instance_id", request.instance_id),
        ("rack_id", request.rack_id),
        ("server_assignor", request.server_assignor),
        ("topic_names", request.topic_names),
        ("topic_regex", request.topic_regex),
    ):
        if value is not None:
            changes[name] = value
    if request.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = request.rebalance_timeout_ms
    return replace(member, **changes)  # type: ignore[arg-type]


def new_member_id() -> str:
    """A member id as Kafka's coordinator makes one for a version-0 heartbeat
    (``Uuid.randomUuid().toString()``: 16 random bytes in URL-safe base64, unpadded)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _restarted(member: ConsumerMember) -> ConsumerMember:
    """A member rejoining with epoch 0: it owns nothing and starts at epoch 0."""
    return replace(member, member_epoch=0, previous_epoch=0, state=STABLE, assigned={}, revoking={})


def _assignment_of(m: ConsumerMember) -> tuple[object, ...]:
    return (m.member_epoch, m.previous_epoch, m.state, m.assigned, m.revoking)
