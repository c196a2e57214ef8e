"""Log replication by fetch, on both sides (Kafka's ``KafkaRaftClient`` fetch and
fetch-snapshot handling).

Goals
    Followers pull the leader's log; a follower whose uncommitted tail diverges cuts it; one
    below the leader's log start loads the leader's snapshot; the leader counts each fetch as
    the fetcher's durable end offset and moves the high watermark.

Constraints
    One request in flight per follower; an answer is read only if it answers that request
    (same position, same epoch), so a late or repeated answer changes nothing. A follower
    fetches only once what it holds is flushed, so its fetch offset is durable. A follower
    never cuts below its high watermark: that would be losing a committed record.

Algorithm
    Leader, on Fetch: refuse an older epoch (FENCED_LEADER_EPOCH) or a newer one
    (UNKNOWN_LEADER_EPOCH); validate the position against the log (snapshot / diverging /
    valid); on valid record the fetch, move the high watermark, and answer with the batches
    from there, or hold the fetch (at most its max wait and ``fetch_max_wait_ms``) if there is
    none and the fetcher already knows the high watermark (a reader that is no replica, the
    high watermark is at or past its offset). Held fetches are answered when the high
    watermark moves, and the voters' also when a batch is appended.
    Follower, on the answer: an error retries after the retry backoff; a diverging epoch cuts
    the log (``truncate_to_end_offset``); a snapshot id starts a FetchSnapshot from byte 0;
    batches are appended and flushed, and the high watermark becomes the leader's, capped at
    the local end offset.

Worked example
    The leader (epoch 3) holds offsets 0-9, epoch 1 up to 5. A follower fetches at 8 after
    epoch 2 (records it got from a leader that lost its epoch). ``validate(8, 2)`` finds epoch
    1 ending at 5: the answer is ``diverging (1, 5)``; the follower cuts to 5 and fetches at
    5 after epoch 1, and receives 5-9.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from rackwise.common.error_codes import (
    FENCED_LEADER_EPOCH,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    POSITION_OUT_OF_RANGE,
    SNAPSHOT_NOT_FOUND,
    UNKNOWN_LEADER_EPOCH,
)
from rackwise.common.java import SupportsRandrange
from rackwise.raft.config import QuorumConfig
from rackwise.raft.leader import HeldFetch, LeaderState
from rackwise.raft.log import RaftLog, Snapshot, Validity
from rackwise.raft.messages import (
    AppendBatches,
    Batch,
    ElectionState,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    InstallSnapshot,
    OffsetAndEpoch,
    Output,
    Send,
    TruncateTo,
)
from rackwise.raft.roles import Role

LOG_FETCH: Final = -1
"""The position part of an in-flight Fetch's key (a FetchSnapshot's is the byte position)."""


@dataclass(slots=True)
class InFlight:
    """The one fetch a follower has out: what it asked (``key``) and when."""

    key: tuple[int, int, int]
    sent_ms: int


@dataclass(slots=True)
class SnapshotTransfer:
    snapshot_id: OffsetAndEpoch
    received: bytearray


class FetchMixin:
    """The fetch half of :class:`~rackwise.raft.client.RaftClient`."""

    node_id: int
    voters: tuple[int, ...]
    config: QuorumConfig
    random: SupportsRandrange
    log: RaftLog
    election: ElectionState
    role: Role
    leader: LeaderState | None
    high_watermark: int
    applied_offset: int
    out: list[Output]
    fetch_deadline_ms: int
    last_leader_contact_ms: int | None
    """When the leader last answered a fetch or announced itself (None: not since it
    was learned of, or since this voter started)."""
    inflight: InFlight | None
    fetch_backoff_until_ms: int | None
    transfer: SnapshotTransfer | None

    def _init_follower_fields(self) -> None:
        self.fetch_deadline_ms = 0
        self.last_leader_contact_ms = None
        self._reset_follower_fields()

    def _reset_follower_fields(self) -> None:
        self.inflight = None
        self.fetch_backoff_until_ms = None
        self.transfer = None

    def _follower_timers(self) -> list[int]:
        times = []
        if self.inflight is not None:
            times.append(self.inflight.sent_ms + self.config.request_timeout_ms)
        if self.fetch_backoff_until_ms is not None:
            times.append(self.fetch_backoff_until_ms)
        return times

    def _follower_timeouts(self, now_ms: int) -> None:
        if self.inflight and now_ms >= self.inflight.sent_ms + self.config.request_timeout_ms:
            self.inflight = None
        if self.fetch_backoff_until_ms is not None and now_ms >= self.fetch_backoff_until_ms:
            self.fetch_backoff_until_ms = None

    # --- follower side ---------------------------------------------------------------------

    def _maybe_send_fetch(self, now_ms: int) -> None:
        if self.inflight is not None or self.fetch_backoff_until_ms is not None:
            return
        if self.log.durable_end_offset < self.log.end_offset:
            return  # fetch again once what was received is durable
        epoch = self.election.epoch
        leader_id = self.election.leader_id
        if self.transfer is not None:
            position = len(self.transfer.received)
            sid = self.transfer.snapshot_id
            request: FetchRequest | FetchSnapshotRequest = FetchSnapshotRequest(
                self.node_id, epoch, sid, position
            )
            key = (sid.offset, sid.epoch, position)
        else:
            end = self.log.end_offset_and_epoch()
            request = FetchRequest(self.node_id, epoch, end.offset, end.epoch)
            key = (end.offset, end.epoch, LOG_FETCH)
        self.inflight = InFlight(key, now_ms)
        self.out.append(Send(leader_id, request))

    def _answers_inflight(self, source: int, key: tuple[int, int, int]) -> bool:
        return (
            self.role is Role.FOLLOWER
            and source == self.election.leader_id
            and self.inflight is not None
            and self.inflight.key == key
        )

    def _fetch_failed(self, now_ms: int) -> None:
        self.inflight = None
        self.fetch_backoff_until_ms = now_ms + self.config.retry_backoff_ms

    def _handle_fetch_response(self, now_ms: int, source: int, resp: FetchResponse) -> None:
        key = (resp.fetch_offset, resp.last_fetched_epoch, LOG_FETCH)
        if not self._answers_inflight(source, key):
            return
        if resp.error_code != NONE:
            self._fetch_failed(now_ms)
            return
        self.inflight = None
        self.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        self.last_leader_contact_ms = now_ms
        if resp.diverging_epoch is not None:
            self._truncate_diverging(resp.diverging_epoch)
        elif resp.snapshot_id is not None:
            self.transfer = SnapshotTransfer(resp.snapshot_id, bytearray())
        elif not resp.batches or resp.batches[0].base_offset == self.log.end_offset:
            # A valid position: this log matches the leader's up to its end, so the leader's
            # high watermark holds for it up to there.
            if resp.batches:
                self.log.append(resp.batches)
                self.out.append(AppendBatches(resp.batches))
            new_hw = min(resp.high_watermark, self.log.end_offset)
            self.high_watermark = max(self.high_watermark, new_hw)

    def _truncate_diverging(self, diverging: OffsetAndEpoch) -> None:
        before = self.log.end_offset
        offset = self.log.truncate_to_end_offset(diverging)
        if offset < self.high_watermark:
            raise ValueError(
                f"BUG: node {self.node_id} told to cut its log to {offset}, below its high "
                f"watermark {self.high_watermark}"
            )
        if offset < before:
            self.out.append(TruncateTo(offset))

    def _handle_fetch_snapshot_response(
        self, now_ms: int, source: int, resp: FetchSnapshotResponse
    ) -> None:
        sid = resp.snapshot_id
        if not self._answers_inflight(source, (sid.offset, sid.epoch, resp.position)):
            return
        if resp.error_code != NONE:
            self.transfer = None  # fetch again: the leader names its current snapshot
            self._fetch_failed(now_ms)
            return
        self.inflight = None
        self.fetch_deadline_ms = now_ms + self.config.fetch_timeout_ms
        self.last_leader_contact_ms = now_ms
        transfer = self.transfer
        assert transfer is not None
        transfer.received += resp.chunk
        if len(transfer.received) < resp.size:
            return
        snapshot = Snapshot(sid, bytes(transfer.received))
        self.transfer = None
        self.log.install_snapshot(snapshot)
        self.out.append(InstallSnapshot(sid, snapshot.payload))
        self.high_watermark = max(self.high_watermark, sid.offset)
        self.applied_offset = sid.offset

    # --- leader side -----------------------------------------------------------------------

    def _fetch_error(self, current_leader_epoch: int) -> int:
        """The error for a fetch in ``current_leader_epoch`` (NONE if this voter leads it)."""
        if current_leader_epoch < self.election.epoch:
            return FENCED_LEADER_EPOCH
        if current_leader_epoch > self.election.epoch:
            return UNKNOWN_LEADER_EPOCH
        if self.role is not Role.LEADER:
            return NOT_LEADER_OR_FOLLOWER
        return NONE

    def _handle_fetch_request(self, now_ms: int, req: FetchRequest) -> None:
        error = self._fetch_error(req.current_leader_epoch)
        if error != NONE:
            self._send_fetch_response(req, error)
            return
        leader = self.leader
        assert leader is not None
        if req.replica_id in leader.held:
            del leader.held[req.replica_id]  # a newer fetch replaces a held one
        verdict = self.log.validate(req.fetch_offset, req.last_fetched_epoch)
        if verdict.kind is Validity.SNAPSHOT:
            self._send_fetch_response(req, NONE, snapshot_id=verdict.offset_and_epoch)
            leader.record_contact(req.replica_id, now_ms)
            return
        if verdict.kind is Validity.DIVERGING:
            self._send_fetch_response(req, NONE, diverging=verdict.offset_and_epoch)
            leader.record_contact(req.replica_id, now_ms)
            return
        leader.record_fetch(req.replica_id, req.fetch_offset, self.log.end_offset, now_ms)
        if self._maybe_advance_high_watermark(now_ms):
            self._answer_fetch(now_ms, req)
            return
        progress = leader.replicas.get(req.replica_id)
        if progress is None:  # an untracked reader: only the high watermark can tell it more
            knows_hw = req.fetch_offset <= self.high_watermark
        else:
            knows_hw = progress.last_sent_high_watermark == self.high_watermark
        wait_ms = min(req.max_wait_ms, self.config.fetch_max_wait_ms)
        if req.fetch_offset == self.log.end_offset and knows_hw and wait_ms > 0:
            leader.held[req.replica_id] = HeldFetch(req, now_ms + wait_ms)
            return
        self._answer_fetch(now_ms, req)

    def _answer_fetch(self, now_ms: int, req: FetchRequest) -> None:
        """Answer a validated fetch with what the log holds from its offset."""
        leader = self.leader
        assert leader is not None
        snap = self.log.snapshot
        if snap is not None and req.fetch_offset < self.log.start_offset:
            self._send_fetch_response(req, NONE, snapshot_id=snap.snapshot_id)
            return
        batches = self.log.read(req.fetch_offset, self.config.fetch_max_batches)
        progress = leader.replicas.get(req.replica_id)
        if progress is not None:
            progress.last_sent_high_watermark = self.high_watermark
        self._send_fetch_response(req, NONE, batches=batches)

    def _answer_held_fetches(self, now_ms: int, *, voters_only: bool = False) -> None:
        """Answer the held fetches (``voters_only``: the voters', after an append: a voter
        needs the new batch to commit it, an observer can use it only once it is committed,
        so its fetch waits for the high watermark and gets batch and commit in one answer)."""
        if self.leader is None:
            return
        held = self.leader.held
        due = {r: h for r, h in held.items() if not voters_only or r in self.voters}
        for replica_id in sorted(due):
            del held[replica_id]
            self._answer_fetch(now_ms, due[replica_id].request)

    def _send_fetch_response(
        self,
        req: FetchRequest,
        error: int,
        *,
        batches: tuple[Batch, ...] = (),
        diverging: OffsetAndEpoch | None = None,
        snapshot_id: OffsetAndEpoch | None = None,
    ) -> None:
        response = FetchResponse(
            error,
            self.election.leader_id,
            self.election.epoch,
            self.high_watermark,
            req.fetch_offset,
            req.last_fetched_epoch,
            batches,
            diverging,
            snapshot_id,
        )
        self.out.append(Send(req.replica_id, response))

    def _handle_fetch_snapshot_request(self, now_ms: int, req: FetchSnapshotRequest) -> None:
        error = self._fetch_error(req.current_leader_epoch)
        snap = self.log.snapshot
        payload = b""
        if error == NONE:
            assert self.leader is not None
            self.leader.record_contact(req.replica_id, now_ms)
            if snap is None or snap.snapshot_id != req.snapshot_id:
                error = SNAPSHOT_NOT_FOUND
            elif req.position > len(snap.payload):
                error = POSITION_OUT_OF_RANGE
            else:
                end = req.position + self.config.snapshot_chunk_bytes
                payload = snap.payload[req.position : end]
        response = FetchSnapshotResponse(
            error,
            self.election.leader_id,
            self.election.epoch,
            req.snapshot_id,
            req.position,
            len(snap.payload) if snap is not None and error == NONE else 0,
            payload,
        )
        self.out.append(Send(req.replica_id, response))

    def _maybe_advance_high_watermark(self, now_ms: int) -> bool:
        """Move the leader's high watermark if a majority holds more; answer held fetches."""
        if self.leader is None:
            return False
        candidate = self.leader.high_watermark_candidate(self.high_watermark)
        if candidate is None:
            return False
        self.high_watermark = candidate
        self._answer_held_fetches(now_ms)
        return True
