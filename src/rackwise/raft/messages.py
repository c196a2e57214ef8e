"""The quorum's messages and the state machine's outputs, as immutable values.

The requests and answers carry what Kafka's KRaft APIs carry (Vote 52, BeginQuorumEpoch 53,
EndQuorumEpoch 54, Fetch 1 with its KRaft fields, FetchSnapshot 59), reduced to one partition;
the wire layer maps them onto Kafka's messages. Two fields have no Kafka counterpart:
``FetchResponse.fetch_offset`` / ``last_fetched_epoch`` echo the request, so that a late or
duplicated answer is recognised as an answer to another request (on the wire, correlation ids
and one connection per peer do that).

Every answer carries the sender's epoch and the leader it knows, so the receiver learns of a
newer epoch from any of them (Kafka's ``leaderId`` / ``leaderEpoch`` fields).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

NO_LEADER: Final = -1
"""Leader id when none is known (Kafka's -1 in ``leaderId``)."""
NO_VOTE: Final = -1
"""``voted_id`` of a replica that has not voted in its epoch (Kafka's -1 in ``votedId``)."""
PRIMORDIAL_EPOCH: Final = 0
"""The epoch of an empty log; no leader ever has it (Kafka's ``lastFetchedEpoch`` of 0)."""


@dataclass(frozen=True, slots=True, order=True)
class OffsetAndEpoch:
    """An offset with the epoch of the record before it (Kafka's ``OffsetAndEpoch``), ordered
    by epoch first: a log ending in a later epoch is more up to date whatever its length."""

    epoch: int
    offset: int


@dataclass(frozen=True, slots=True)
class Batch:
    """Records appended together by the leader of ``epoch``; they take the offsets
    ``base_offset`` to :attr:`last_offset`. A control batch (``is_control``) is the leader's
    own mark at the start of its epoch (Kafka's LeaderChangeMessage); it holds no records for
    the state machine above the log and is never given to it."""

    base_offset: int
    epoch: int
    records: tuple[object, ...]
    is_control: bool = False

    def __post_init__(self) -> None:
        if not self.records:
            raise ValueError(f"BUG: an empty batch at offset {self.base_offset}")

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def end_offset(self) -> int:
        return self.base_offset + len(self.records)

    def rebased(self, base_offset: int, epoch: int) -> Batch:
        return Batch(base_offset, epoch, self.records, self.is_control)


@dataclass(frozen=True, slots=True)
class LeaderChangeMark:
    """The one record of a leader's control batch (Kafka's LeaderChangeMessage): who leads
    and the voters it counts on."""

    leader_id: int
    voters: tuple[int, ...]


# --- requests and answers ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """Vote (api 52). ``is_pre_vote`` asks whether the receiver *would* vote (KIP-996): it
    persists no vote on the receiver. ``candidate_epoch`` is Kafka's ``ReplicaEpoch``, the
    sender's current epoch: the new epoch a candidate stands in, or the epoch a prospective
    is in (a pre-vote does not raise it; a receiver in an older epoch moves to it).
    ``last_offset`` / ``last_offset_epoch`` are the sender's log end offset and the epoch of
    its last record."""

    candidate_epoch: int
    candidate_id: int
    last_offset_epoch: int
    last_offset: int
    is_pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error_code: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool
    is_pre_vote: bool = False
    candidate_epoch: int = PRIMORDIAL_EPOCH
    """The epoch the answer is for (the request's ``candidate_epoch``)."""


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """BeginQuorumEpoch (api 53): the new leader announces itself."""

    leader_epoch: int
    leader_id: int


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error_code: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """EndQuorumEpoch (api 54): the leader resigns; ``preferred_successors`` are the voters
    most up to date first, the first of which should stand at once."""

    leader_epoch: int
    leader_id: int
    preferred_successors: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error_code: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """Fetch (api 1) of the metadata log by a voter or an observer (``replica_id``; a broker's
    id, or -1 for a reader that is no replica): from ``fetch_offset``, whose previous record
    has ``last_fetched_epoch``; ``current_leader_epoch`` is the epoch the fetcher follows.
    Every record below ``fetch_offset`` is durable on a voter that fetches. The leader holds
    a fetch with nothing to send at most ``max_wait_ms`` (and its own fetch max wait)."""

    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int = 500


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """The answer to a fetch: records from ``fetch_offset``, or where the fetcher's log
    diverges from the leader's (``diverging_epoch``: truncate to that epoch's end offset), or
    the snapshot to load instead (``snapshot_id``)."""

    error_code: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    fetch_offset: int
    last_fetched_epoch: int
    batches: tuple[Batch, ...] = ()
    diverging_epoch: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """FetchSnapshot (api 59): ``snapshot_id`` from byte ``position``."""

    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    error_code: int
    leader_id: int
    leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    size: int
    """The whole snapshot's size in bytes."""
    chunk: bytes = b""


Message = (
    VoteRequest
    | VoteResponse
    | BeginQuorumEpochRequest
    | BeginQuorumEpochResponse
    | EndQuorumEpochRequest
    | EndQuorumEpochResponse
    | FetchRequest
    | FetchResponse
    | FetchSnapshotRequest
    | FetchSnapshotResponse
)


# --- outputs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What a voter persists before acting on it (Kafka's ``quorum-state`` file): its epoch,
    whom it voted for in that epoch (:data:`NO_VOTE`) and the leader it knows
    (:data:`NO_LEADER`)."""

    epoch: int
    voted_id: int = NO_VOTE
    leader_id: int = NO_LEADER


@dataclass(frozen=True, slots=True)
class PersistElectionState:
    """Write ``state`` durably before carrying out any later output (a vote is answered only
    once it is on disk)."""

    state: ElectionState


@dataclass(frozen=True, slots=True)
class Send:
    destination: int
    message: Message


@dataclass(frozen=True, slots=True)
class AppendBatches:
    """Append ``batches`` at the log's end and flush; report the flush with
    ``RaftClient.handle_flushed``."""

    batches: tuple[Batch, ...]


@dataclass(frozen=True, slots=True)
class TruncateTo:
    """Remove every record at ``offset`` or after (the uncommitted tail that diverges)."""

    offset: int


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """Replace the log by this snapshot (fetched from the leader): store it durably, drop
    every record, and start the log at ``snapshot_id.offset``. The state above the log is
    rebuilt from ``payload``."""

    snapshot_id: OffsetAndEpoch
    payload: bytes


@dataclass(frozen=True, slots=True)
class Commit:
    """Records now committed, to be applied in order: ``batches`` (no control batches) up to
    ``high_watermark``."""

    batches: tuple[Batch, ...]
    high_watermark: int


@dataclass(frozen=True, slots=True)
class LeaderChange:
    """The leader this replica knows changed (``leader_id`` may be :data:`NO_LEADER`)."""

    leader_id: int
    epoch: int


Output = (
    PersistElectionState
    | Send
    | AppendBatches
    | TruncateTo
    | InstallSnapshot
    | Commit
    | LeaderChange
)


@dataclass(slots=True)
class Outbox:
    """Outputs collected while one input is handled, in the order they must be carried out."""

    items: list[Output] = field(default_factory=list)

    def add(self, item: Output) -> None:
        self.items.append(item)

    def send(self, destination: int, message: Message) -> None:
        self.items.append(Send(destination, message))
