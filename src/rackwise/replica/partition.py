"""One partition's replica on this broker: leader or follower state, the high watermark, and
what the ISR should be (Kafka's ``Partition`` with its ``Replica`` states).

Goals
    * As leader: append client batches at the current leader epoch; track each follower's log
      end offset from its fetches; move the high watermark to the smallest log end offset of
      the in-sync replicas (and of any caught-up replica about to join them, as Kafka waits on
      its "maximal ISR"), so that every replica agrees below it; say which followers should
      join or leave the ISR.
    * As follower: accept the leader's batches as they are; the high watermark is the leader's,
      bounded by the local log end.
    * Answer with Kafka's errors: NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH,
      UNKNOWN_LEADER_EPOCH, NOT_ENOUGH_REPLICAS (checked before an acks=all append).

Constraints
    No I/O of its own beyond the log's, no clock of its own: every method that depends on time
    takes ``now_ms``. The replica set, ISR and epochs come only from the metadata image
    (:meth:`apply_registration`); the ISR itself changes only through the controller, so the
    ISR planned here (:meth:`isr_plan`) is a request, not a state.

Algorithm
    A follower is *caught up* at a fetch when its fetch offset reaches the leader's log end
    offset at that moment; ``last_caught_up_ms`` is then the fetch time; a fetch that reaches
    the log end offset the leader had at the follower's previous fetch sets it to that
    previous fetch's time (Kafka's ``Replica.updateFetchStateOrThrow``). A follower outside
    the ISR joins when its log end offset has reached the high watermark and the start of the
    current leader epoch, as reported by a fetch since the partition last changed (one put out
    of the ISR, say for a failed directory, is not taken back on its last report); a member
    of the ISR leaves when it has not been caught up for ``replica.lag.time.max.ms`` (Kafka's
    ``isFollowerInSync`` / ``getOutOfSyncReplicas``).

Worked example
    Leader 1 of t-0 (replicas [1, 2, 3], ISR [1, 2, 3]) appends 10 records: log end 10, high
    watermark 0. Broker 2 fetches from 10 (it has them all): its log end is 10, but 3's is 0,
    so the high watermark stays 0. Broker 3 fetches from 10: the high watermark becomes 10 and
    an acks=all produce waiting for offset 10 completes. If broker 3 then stops fetching, after
    ``replica.lag.time.max.ms`` the ISR plan is [1, 2].
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from rackwise.common.errors import FencedLeaderEpochException
from rackwise.replica.errors import (
    NotEnoughReplicasException,
    NotLeaderOrFollowerException,
    UnknownLeaderEpochException,
)
from rackwise.storage.log import LogAppendInfo, PartitionLog

NO_LEADER: Final = -1
NO_EPOCH: Final = -1
"""A request's ``current_leader_epoch`` when the client does not say it (no check)."""
UNKNOWN_OFFSET: Final = -1
NEVER_MS: Final = -1
"""``last_caught_up_ms`` of a follower that has never been caught up."""


@dataclass(slots=True)
class FollowerState:
    """What the leader knows of one follower, from its fetches (soft state: never logged)."""

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    log_start_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = NEVER_MS
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = NEVER_MS

    def is_caught_up(self, leader_log_end_offset: int, now_ms: int, lag_max_ms: int) -> bool:
        """Kafka's ``ReplicaState.isCaughtUp``: at the log end now, or caught up recently."""
        return self.log_end_offset == leader_log_end_offset or (
            self.last_caught_up_ms != NEVER_MS and now_ms - self.last_caught_up_ms <= lag_max_ms
        )


@dataclass(frozen=True, slots=True)
class RackRequirement:
    """``min.insync.racks`` at ``min.insync.racks.level`` against the failure domains the
    current ISR spans at that level."""

    required: int
    level: int
    domains: int

    @property
    def met(self) -> bool:
        return self.domains >= self.required


@dataclass(frozen=True, slots=True)
class PartitionState:
    """The partition as the metadata image gives it."""

    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing: tuple[int, ...] = ()
    """The replicas a reassignment is taking away (they leave once the new ones are in sync)."""


@dataclass(slots=True)
class Partition:
    """One partition's replica on this broker (see the module docstring)."""

    topic: str
    index: int
    broker_id: int
    log: PartitionLog
    state: PartitionState
    followers: dict[int, FollowerState] = field(default_factory=dict)
    lag_max_ms: int = 30_000
    """``replica.lag.time.max.ms``: how recently a follower outside the ISR must have been
    caught up for the high watermark to wait for it (it is about to join)."""
    eligible: frozenset[int] | None = None
    """The brokers that may join an ISR (registered, unfenced, not shutting down: Kafka's
    ``isReplicaIsrEligible``); None: every broker."""

    @property
    def is_leader(self) -> bool:
        return self.state.leader == self.broker_id

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    # ---- metadata ----------------------------------------------------------------------------

    def apply_registration(self, state: PartitionState, now_ms: int) -> bool:
        """Take the image's view of the partition; whether this broker became leader at a new
        epoch (the caller then resets what it holds for the old one)."""
        previous = self.state
        self.state = state
        became_leader = state.leader == self.broker_id and (
            previous.leader != self.broker_id or previous.leader_epoch != state.leader_epoch
        )
        if became_leader:
            # A new leader epoch starts at the current log end (Kafka's makeLeader).
            self.log.epochs.assign(state.leader_epoch, self.log.log_end_offset)
            self.followers = {
                r: FollowerState(r, last_caught_up_ms=now_ms if r in state.isr else NEVER_MS)
                for r in state.replicas
                if r != self.broker_id
            }
        elif state.leader == self.broker_id:
            for r in state.replicas:
                if r != self.broker_id and r not in self.followers:
                    self.followers[r] = FollowerState(r)
                follower = self.followers.get(r)
                if follower is not None and r in state.isr and r not in previous.isr:
                    # It joined the ISR, so it was caught up when the controller agreed.
                    follower.last_caught_up_ms = max(follower.last_caught_up_ms, now_ms)
                elif follower is not None and r not in state.isr and state != previous:
                    # Outside the ISR at a new partition state, it joins only on a fetch
                    # received from now on (Kafka's ``resetReplicaState``), not on what it
                    # reported before: a replica whose directory failed has stopped fetching.
                    follower.last_fetch_ms = NEVER_MS
                    if r in previous.isr:
                        # It left the ISR: the controller judged it out of sync.
                        follower.last_caught_up_ms = NEVER_MS
            for r in list(self.followers):
                if r not in state.replicas:
                    del self.followers[r]
        else:
            self.followers = {}
        if self.is_leader:
            self.maybe_increment_high_watermark(now_ms, self.lag_max_ms)
        return became_leader

    def check_leader_epoch(self, requested: int) -> None:
        """Kafka's ``Partition.checkCurrentLeaderEpoch``."""
        if requested == NO_EPOCH:
            return
        if requested < self.state.leader_epoch:
            raise FencedLeaderEpochException(
                f"The leader epoch in the request {requested} is older than the current "
                f"leader epoch {self.state.leader_epoch} of {self.topic}-{self.index}"
            )
        if requested > self.state.leader_epoch:
            raise UnknownLeaderEpochException(
                f"The leader epoch in the request {requested} is newer than the current "
                f"leader epoch {self.state.leader_epoch} of {self.topic}-{self.index}"
            )

    def require_leader(self) -> None:
        if not self.is_leader:
            raise NotLeaderOrFollowerException(
                f"Leader not local for partition {self.topic}-{self.index} on broker "
                f"{self.broker_id}"
            )

    # ---- the leader's appends -----------------------------------------------------------------

    def append_as_leader(
        self,
        records: bytes | memoryview,
        *,
        required_acks: int,
        min_insync_replicas: int,
        now_ms: int,
        racks: RackRequirement | None = None,
    ) -> LogAppendInfo:
        """Append a client's batches; NOT_ENOUGH_REPLICAS first when acks=all and the ISR is
        smaller than ``min.insync.replicas`` (Kafka's ``appendRecordsToLeader``), or spans
        fewer failure domains than ``racks`` asks."""
        self.require_leader()
        if required_acks == -1 and len(self.state.isr) < min_insync_replicas:
            raise NotEnoughReplicasException(
                f"The size of the current ISR {list(self.state.isr)} is insufficient to "
                f"satisfy the min.isr requirement of {min_insync_replicas} for partition "
                f"{self.topic}-{self.index}"
            )
        if required_acks == -1 and racks is not None and not racks.met:
            raise NotEnoughReplicasException(
                f"The current ISR {list(self.state.isr)} spans {racks.domains} failure "
                f"domain(s) at level {racks.level}, fewer than the min.insync.racks "
                f"requirement of {racks.required} for partition {self.topic}-{self.index}"
            )
        info = self.log.append_as_leader(records, leader_epoch=self.state.leader_epoch)
        self.maybe_increment_high_watermark(now_ms, self.lag_max_ms)
        return info

    def acks_all_outcome(
        self,
        required_offset: int,
        min_insync_replicas: int,
        racks: RackRequirement | None = None,
    ) -> int | None:
        """For an acks=all write ending before ``required_offset``: None while waiting, else
        Kafka's error code (0, NOT_ENOUGH_REPLICAS_AFTER_APPEND 20, NOT_LEADER_OR_FOLLOWER 6)
        (``Partition.checkEnoughReplicasReachOffset``); 20 also when the ISR that reached
        the offset spans fewer failure domains than ``racks`` asks."""
        if not self.is_leader:
            return NotLeaderOrFollowerException.error_code
        if self.log.high_watermark < required_offset:
            return None
        if racks is not None and not racks.met:
            return 20
        return 0 if len(self.state.isr) >= min_insync_replicas else 20

    # ---- the followers' fetches ---------------------------------------------------------------

    def update_follower(
        self,
        replica_id: int,
        *,
        fetch_offset: int,
        log_start_offset: int,
        now_ms: int,
        lag_max_ms: int,
    ) -> bool:
        """Record a follower's fetch (its log end is its fetch offset); whether the high
        watermark moved."""
        follower = self.followers.get(replica_id)
        if follower is None:
            raise NotLeaderOrFollowerException(
                f"Replica {replica_id} is not a replica of {self.topic}-{self.index}"
            )
        leader_end = self.log.log_end_offset
        if fetch_offset >= leader_end:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, now_ms)
        elif fetch_offset >= follower.last_fetch_leader_log_end_offset >= 0:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.log_end_offset = fetch_offset
        follower.log_start_offset = log_start_offset
        follower.last_fetch_ms = now_ms
        follower.last_fetch_leader_log_end_offset = leader_end
        return self.maybe_increment_high_watermark(now_ms, lag_max_ms)

    def maybe_increment_high_watermark(self, now_ms: int, lag_max_ms: int) -> bool:
        """Kafka's ``maybeIncrementLeaderHW``: the smallest log end among the ISR and the
        caught-up followers that may join it (whatever moved it: a follower's fetch, an
        append, a new image; otherwise a replica being added by a reassignment, caught up
        but not yet in the ISR, could miss acknowledged records and then lead); only ever
        forward."""
        if not self.is_leader:
            return False
        leader_end = self.log.log_end_offset
        candidate = leader_end
        for follower in self.followers.values():
            counts = follower.broker_id in self.state.isr or (
                lag_max_ms > 0
                and (self.eligible is None or follower.broker_id in self.eligible)
                and follower.is_caught_up(leader_end, now_ms, lag_max_ms)
            )
            if counts and follower.log_end_offset < candidate:
                candidate = max(follower.log_end_offset, 0)
        if candidate > self.log.high_watermark:
            self.log.update_high_watermark(candidate)
            return True
        return False

    def low_watermark(self, alive: Sequence[int]) -> int:
        """Kafka's ``lowWatermarkIfLeader``: the smallest log start offset among this replica
        and the followers on live brokers (one not heard from yet counts as unknown, -1, so a
        DeleteRecords waits for it)."""
        low = self.log.log_start_offset
        for follower in self.followers.values():
            if follower.broker_id in alive and follower.log_start_offset < low:
                low = follower.log_start_offset
        return low

    # ---- the ISR --------------------------------------------------------------------------------

    def isr_plan(self, now_ms: int, lag_max_ms: int, eligible: Sequence[int]) -> tuple[int, ...]:
        """The ISR this leader wants: followers that fell behind leave, caught-up eligible
        ones join (in replica order after the members); the current ISR when nothing
        changes."""
        if not self.is_leader:
            return self.state.isr
        leader_end = self.log.log_end_offset
        epoch_start = self._leader_epoch_start()
        keep = [
            r
            for r in self.state.isr
            if r == self.broker_id
            or (
                r in self.followers
                and self.followers[r].is_caught_up(leader_end, now_ms, lag_max_ms)
            )
        ]
        join = [
            r
            for r in self.state.replicas
            if r not in self.state.isr
            and r in self.followers
            and r in eligible
            and self._is_follower_in_sync(self.followers[r], epoch_start)
        ]
        return (*keep, *join)

    def has_joiner(self) -> bool:
        """Whether a follower outside the ISR is now in sync (so the ISR should grow)."""
        if not self.is_leader or len(self.state.isr) == len(self.state.replicas):
            return False
        epoch_start = self._leader_epoch_start()
        return any(
            self._is_follower_in_sync(f, epoch_start)
            for r, f in self.followers.items()
            if r not in self.state.isr
        )

    def _leader_epoch_start(self) -> int:
        entries = self.log.epochs.epoch_entries
        for epoch, start in reversed(entries):
            if epoch == self.state.leader_epoch:
                return start
        return self.log.log_end_offset

    def _is_follower_in_sync(self, follower: FollowerState, epoch_start: int) -> bool:
        """Kafka's ``isFollowerInSync``: at or past the high watermark and past the start of
        the current leader epoch, as of a fetch since the partition last changed (Kafka asks
        only as a fetch arrives)."""
        return (
            follower.last_fetch_ms != NEVER_MS
            and follower.log_end_offset >= self.log.high_watermark
            and follower.log_end_offset >= epoch_start
        )
