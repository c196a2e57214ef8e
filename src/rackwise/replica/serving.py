"""The requests this broker's replicas serve: appends (Produce, and a follower's fetched
batches), reads (Fetch, for consumers up to the high watermark and for followers up to the log
end), the checks of waiting produce and fetch requests, and offsets (ListOffsets,
OffsetForLeaderEpoch, DeleteRecords): the request side of Kafka's ``ReplicaManager``
(``appendRecords``, ``fetchMessages``, ``fetchOffsetForTimestamp``, ``deleteRecords``),
without its network side.

Goals
    Answer each partition's part of a request from the replica this broker hosts
    (:class:`~rackwise.replica.hosting.HostedReplicas`), with Kafka's errors: a follower's
    fetch is also its progress report to the leader; a consumer may read from a follower
    when the :class:`~rackwise.replica.selector.ReplicaSelector` names it, for as long as
    that follower stays a valid read replica (:mod:`rackwise.replica.read_replicas`); a
    follower that fetches from a diverging epoch is told where to truncate.

Constraints
    Single-threaded (the broker's request loop); no sockets; the clock is the hosted
    replicas'. Errors are raised as typed exceptions carrying Kafka's codes; the handlers turn
    them into per-partition error codes. Waiting requests (acks=all, a long poll) are checked
    with :meth:`ReplicaRequests.acks_all_outcome` and :meth:`ReplicaRequests.bytes_available`,
    which never raise.

Worked example
    Broker 1 leads t-0 (ISR [1, 2]) with a log end of 10 and a high watermark of 8. A
    consumer's read from offset 8 gets nothing yet; once broker 2 fetches from offset 10 (its
    progress report), the high watermark moves to 10 and ``bytes_available("t", 0, 8,
    False)`` is True. A follower fetching from offset 8 whose last fetched epoch is 3, where
    this log's epoch 3 ends at offset 6, gets ``diverging_epoch=(3, 6)`` and no records.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from rackwise.replica.errors import (
    NotLeaderOrFollowerException,
    OffsetNotAvailableException,
    OffsetOutOfRangeError,
)
from rackwise.replica.hosting import UNKNOWN_EPOCH, HostedReplicas, TopicSettings
from rackwise.replica.partition import Partition, RackRequirement
from rackwise.replica.read_replicas import (
    NO_PREFERRED_REPLICA,
    follower_choice,
    leader_choice,
    may_serve,
)
from rackwise.replica.selector import ClientMetadata, ReplicaSelector
from rackwise.storage.files import FileRegion
from rackwise.storage.log import LogAppendInfo

LOG: Final = logging.getLogger("rackwise.replica")


LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
MAX_TIMESTAMP: Final = -3
EARLIEST_LOCAL_TIMESTAMP: Final = -4
LATEST_TIERED_TIMESTAMP: Final = -5
CONSUMER_REPLICA_ID: Final = -1
"""A Fetch's or ListOffsets' replica id when a client, not a follower, sends it."""
DEBUG_REPLICA_ID: Final = -2
UNKNOWN_OFFSET: Final = -1
READ_UNCOMMITTED: Final = 0


@dataclass(frozen=True, slots=True)
class ReadResult:
    """One partition's part of a Fetch answer."""

    records: bytes | FileRegion
    """The batches, or where they lie in a segment file when the read was zero-copy."""
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    preferred_read_replica: int = NO_PREFERRED_REPLICA
    diverging_epoch: tuple[int, int] | None = None
    """(epoch, end offset) when a follower's last fetched epoch diverges from the leader."""


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    """ListOffsets for one partition: offset, timestamp, leader epoch (unknown: -1)."""

    offset: int
    timestamp: int
    leader_epoch: int


class ReplicaRequests:
    """The requests served from the replicas ``hosted`` holds (module docstring)."""

    def __init__(self, hosted: HostedReplicas) -> None:
        self.hosted = hosted

    # ---- Produce ------------------------------------------------------------------------------

    def append(
        self, topic: str, index: int, records: bytes | memoryview, required_acks: int
    ) -> LogAppendInfo:
        """Append a client's batches to the leader's log (errors as typed exceptions)."""
        partition = self.hosted.get(topic, index)
        settings = self.hosted.topic_settings[topic]
        return partition.append_as_leader(
            records,
            required_acks=required_acks,
            min_insync_replicas=settings.min_insync_replicas,
            now_ms=self.hosted.clock(),
            racks=self._racks(partition, settings),
        )

    def _racks(self, partition: Partition, settings: TopicSettings) -> RackRequirement | None:
        if settings.min_insync_racks <= 1:
            return None
        domains = self.hosted.isr_domains(partition, settings)
        return RackRequirement(settings.min_insync_racks, settings.min_insync_racks_level, domains)

    def acks_all_outcome(self, topic: str, index: int, required_offset: int) -> int | None:
        """None while an acks=all write ending before ``required_offset`` waits, else its
        error code."""
        partition = self.hosted.partitions.get((topic, index))
        if partition is None:
            return NotLeaderOrFollowerException.error_code
        settings = self.hosted.topic_settings[topic]
        return partition.acks_all_outcome(
            required_offset, settings.min_insync_replicas, self._racks(partition, settings)
        )

    # ---- the follower's side -------------------------------------------------------------------

    def append_as_follower(
        self,
        topic: str,
        index: int,
        records: bytes | memoryview,
        leader_high_watermark: int,
        leader_log_start_offset: int,
    ) -> bool:
        """Append batches fetched from the leader, take its high watermark (bounded by the
        local log end) and its log start offset (DeleteRecords and retention on the leader
        move the followers' too, as Kafka's ``processPartitionData``); whether the local high
        watermark or log start moved."""
        partition = self.hosted.partitions.get((topic, index))
        if partition is None or partition.is_leader:
            return False
        log = partition.log
        if records:
            log.append_as_follower(records)
        before = (log.high_watermark, log.log_start_offset)
        log.update_high_watermark(min(leader_high_watermark, log.log_end_offset))
        if log.log_start_offset < leader_log_start_offset <= log.high_watermark:
            log.maybe_increment_log_start_offset(leader_log_start_offset)
        return (log.high_watermark, log.log_start_offset) != before

    def truncate(self, topic: str, index: int, offset: int) -> None:
        """Truncate a follower's log to ``offset`` (a diverging epoch, or a leader whose log
        ends earlier). At or beyond the log end no record goes, but the leader epochs that
        start there do: a broker that led an epoch without appending to it keeps that epoch
        at its log end, and until it drops it the leader answers every fetch with the same
        diverging epoch (Kafka's ``truncateTo`` truncates the epoch cache either way)."""
        partition = self.hosted.partitions.get((topic, index))
        if partition is None or partition.is_leader:
            return
        if offset < partition.log_end_offset:
            LOG.info(
                "%s-%d: truncating from %d to %d to match the leader",
                topic,
                index,
                partition.log_end_offset,
                offset,
            )
        partition.log.truncate_to(offset)

    def reset_to(self, topic: str, index: int, offset: int) -> None:
        """Empty a follower's log and start it at ``offset`` (the leader's log starts later
        than this one ends)."""
        partition = self.hosted.partitions.get((topic, index))
        if partition is None or partition.is_leader:
            return
        LOG.info("%s-%d: log restarted at the leader's start offset %d", topic, index, offset)
        partition.log.truncate_fully_and_start_at(offset)

    # ---- Fetch -------------------------------------------------------------------------------

    def read(
        self,
        topic: str,
        index: int,
        *,
        fetch_offset: int,
        max_bytes: int,
        replica_id: int,
        current_leader_epoch: int,
        last_fetched_epoch: int,
        log_start_offset: int,
        min_one_batch: bool,
        client: ClientMetadata | None,
        selector: ReplicaSelector | None,
        zero_copy: bool = False,
    ) -> ReadResult:
        """One partition's records for a Fetch: from the leader for a follower (its fetch is
        also its progress report), from any replica for a consumer up to the high watermark,
        with a preferred read replica when the selector names another broker (the leader's
        choice, or a follower's sending its consumer to a nearer in-sync replica), and
        OFFSET_NOT_AVAILABLE from a follower that may no longer serve consumers; ``zero_copy``
        asks for a file region to ``sendfile`` where one pays (``PartitionLog.read``)."""
        partition = self.hosted.get(topic, index)
        is_follower = replica_id >= 0
        if is_follower or client is None or not client.rack_id:
            partition.require_leader()
        partition.check_leader_epoch(current_leader_epoch)
        log = partition.log
        if is_follower:
            diverging = self._diverging_epoch(partition, last_fetched_epoch, fetch_offset)
            if diverging is not None:
                return self._result(partition, b"", diverging_epoch=diverging)
            partition.update_follower(
                replica_id,
                fetch_offset=fetch_offset,
                log_start_offset=log_start_offset,
                now_ms=self.hosted.clock(),
                lag_max_ms=self.hosted.config.replica_lag_time_max_ms,
            )
            bound = log.log_end_offset
        else:
            if client is not None and selector is not None:
                preferred = self._read_replica(partition, client, selector, fetch_offset)
                if preferred != NO_PREFERRED_REPLICA:
                    return self._result(partition, b"", preferred_read_replica=preferred)
            bound = log.high_watermark
        if fetch_offset < log.log_start_offset or fetch_offset > log.log_end_offset:
            raise OffsetOutOfRangeError(
                f"Received request for offset {fetch_offset} for partition {topic}-{index}, "
                f"but we only have log segments in the range {log.log_start_offset} to "
                f"{log.log_end_offset}."
            )
        if fetch_offset > bound:  # a consumer ahead of the high watermark: nothing yet
            return self._result(partition, b"")
        chunk = log.read(
            fetch_offset,
            max_bytes=max_bytes,
            max_offset=bound,
            min_one_batch=min_one_batch,
            zero_copy=zero_copy,
        )
        return self._result(partition, chunk.records)

    def _result(
        self, partition: Partition, records: bytes | FileRegion, **extra: object
    ) -> ReadResult:
        log = partition.log
        return ReadResult(
            records=records,
            high_watermark=log.high_watermark,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            **extra,  # type: ignore[arg-type]
        )

    def _read_replica(
        self,
        partition: Partition,
        client: ClientMetadata,
        selector: ReplicaSelector,
        fetch_offset: int,
    ) -> int:
        """Where a consumer should read instead of here (:mod:`~rackwise.replica.read_replicas`):
        the leader's choice, or a follower's; OFFSET_NOT_AVAILABLE is raised by a follower
        that may no longer serve consumers."""
        if not partition.is_leader:
            return follower_choice(self.hosted, partition, client, selector)
        chosen = leader_choice(self.hosted, partition, client, selector, fetch_offset)
        return NO_PREFERRED_REPLICA if chosen == self.hosted.broker_id else chosen

    def _diverging_epoch(
        self, partition: Partition, last_fetched_epoch: int, fetch_offset: int
    ) -> tuple[int, int] | None:
        """Kafka's check in ``Partition.fetchRecords``: the follower's last fetched epoch ends
        earlier here (or is unknown), so it must truncate to (epoch, end offset) first."""
        if last_fetched_epoch < 0:
            return None
        epoch, end = partition.log.epochs.end_offset_for(
            last_fetched_epoch, partition.log.log_end_offset
        )
        if epoch < last_fetched_epoch or end < fetch_offset:
            return epoch, end
        return None

    def bytes_available(self, topic: str, index: int, fetch_offset: int, is_follower: bool) -> bool:
        """Whether a fetch from ``fetch_offset`` would get records now (a long poll's check)."""
        partition = self.hosted.partitions.get((topic, index))
        if partition is None:
            return True
        if not is_follower and not may_serve(self.hosted, partition):
            return True  # answered now: the consumer is sent back to the leader
        bound = partition.log_end_offset if is_follower else partition.high_watermark
        return bound > fetch_offset or fetch_offset > partition.log_end_offset

    # ---- ListOffsets, OffsetForLeaderEpoch, DeleteRecords -----------------------------------

    def list_offset(
        self, topic: str, index: int, timestamp: int, replica_id: int, current_leader_epoch: int
    ) -> OffsetAnswer:
        """ListOffsets for one partition, as Kafka's ``fetchOffsetForTimestamp`` (a client reads
        up to the high watermark; a follower up to the log end)."""
        partition = self.hosted.get(topic, index)
        partition.require_leader()
        partition.check_leader_epoch(current_leader_epoch)
        log = partition.log
        bound = log.log_end_offset if replica_id >= 0 else log.high_watermark
        epoch = partition.leader_epoch
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            start = log.log_start_offset
            return OffsetAnswer(start, -1, _epoch_at(partition, start))
        if timestamp in (LATEST_TIMESTAMP, LATEST_TIERED_TIMESTAMP):
            if replica_id < 0 and self._high_watermark_behind_epoch_start(partition):
                raise OffsetNotAvailableException(
                    f"Failed to fetch offsets for partition {topic}-{index} with leader "
                    f"epoch {epoch} as this partition's high watermark is behind the start "
                    "of the current leader epoch"
                )
            return OffsetAnswer(bound, -1, _epoch_at(partition, bound - 1))
        if timestamp == MAX_TIMESTAMP:
            found = log.max_timestamp_offset()
            if found is None or found[0] >= bound:
                return OffsetAnswer(UNKNOWN_OFFSET, -1, UNKNOWN_EPOCH)
            return OffsetAnswer(found[0], found[1], found[2])
        found = log.offset_for_timestamp(timestamp)
        if found is None or found[0] >= bound:
            return OffsetAnswer(UNKNOWN_OFFSET, -1, UNKNOWN_EPOCH)
        return OffsetAnswer(found[0], found[1], found[2])

    @staticmethod
    def _high_watermark_behind_epoch_start(partition: Partition) -> bool:
        for epoch, start in reversed(partition.log.epochs.epoch_entries):
            if epoch == partition.leader_epoch:
                return partition.high_watermark < start
        return False

    def end_offset_for_epoch(
        self, topic: str, index: int, epoch: int, current_leader_epoch: int, replica_id: int
    ) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset) for the requested epoch, from the leader
        (a follower's request) or any replica (a consumer's), as Kafka answers."""
        partition = self.hosted.get(topic, index)
        if replica_id >= 0:
            partition.require_leader()
        partition.check_leader_epoch(current_leader_epoch)
        log = partition.log
        return log.epochs.end_offset_for(epoch, log.log_end_offset)

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        """DeleteRecords on the leader: move the log start offset to ``offset`` (-1: the high
        watermark); the new low watermark follows once the followers move theirs."""
        partition = self.hosted.get(topic, index)
        partition.require_leader()
        log = partition.log
        target = log.high_watermark if offset == UNKNOWN_OFFSET else offset
        if target < 0 or target > log.high_watermark:
            raise OffsetOutOfRangeError(
                f"Cannot increment the log start offset to {target} of partition "
                f"{topic}-{index} since it is larger than the high watermark "
                f"{log.high_watermark}"
            )
        log.maybe_increment_log_start_offset(target)
        return target

    def low_watermark(self, topic: str, index: int) -> int:
        partition = self.hosted.get(topic, index)
        alive = [b for b, r in self.hosted.image.brokers.items() if not r.fenced]
        return partition.low_watermark(alive)


def _epoch_at(partition: Partition, offset: int) -> int:
    if offset < 0:
        return UNKNOWN_EPOCH
    epoch = partition.log.epochs.epoch_for_offset(offset)
    return UNKNOWN_EPOCH if epoch is None else epoch
