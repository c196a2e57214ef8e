"""Which replica a consumer reads from, on both sides of KIP-392's fetch from followers: the
leader names a preferred read replica among the followers that are in sync, and a follower
that a consumer reads from checks, at every fetch, that it still may serve it.

Goals
    * The leader (Kafka's ``ReplicaManager.findPreferredReadReplica``) offers the selector only
      the followers of the ISR that hold the fetch offset (KAFKA-14372), on unfenced brokers;
      besides Kafka's rule it leaves out a follower it is about to drop from the ISR (not
      caught up for ``replica.lag.time.max.ms``: the ISR check would remove it) and one a
      reassignment is removing, so a consumer is never sent to a replica that is leaving.
    * A follower answers a consumer's fetch with OFFSET_NOT_AVAILABLE once it is no longer a
      valid read replica: out of the ISR, on a fenced broker, or being removed by a
      reassignment (a replica no longer assigned here is NOT_LEADER_OR_FOLLOWER already, as in
      Kafka). Kafka's follower serves on in these cases, up to its own stale high watermark,
      and its consumers stay until their client's preferred-replica lease runs out (five
      minutes in librdkafka, ``metadata.max.age.ms`` in Kafka's consumer, KAFKA-14379); both
      clients answer OFFSET_NOT_AVAILABLE from a follower by going back to the leader at
      once (librdkafka's ``delegate_to_leader``, the Java consumer's
      ``clearPreferredReadReplica``), whose selector then chooses again.
    * A valid follower sends its consumer on (``preferred_read_replica``) when the selector,
      shown the in-sync replicas this follower knows of from the metadata image, names
      another: so a consumer that was moved away from its nearest replica comes back to it
      as soon as that replica is in the ISR again, instead of after the client's lease.

Constraints
    Pure functions of the hosted replicas' state (no I/O). A follower does not know the other
    replicas' positions: it shows them to the selector at its own high watermark (every
    member of the ISR holds at least that much) and caught up a millisecond before itself, so
    that among equally near replicas it keeps its consumer and only a nearer one (or the
    leader, where the selector prefers it) takes it away. Nor does it know their log start
    offsets: a consumer sent to a replica whose retention has already removed its offset is
    answered OFFSET_OUT_OF_RANGE there, as with a leader's choice made just before that
    replica's retention ran.

Worked example
    Leader 1 (``/dc2/r1``) of t-0, replicas [1, 2, 3] with 2 on ``/dc1/r1`` and 3 on
    ``/dc1/r2``; a consumer with ``client.rack=/dc1/r1`` reads from 2. Broker 2 is stopped:
    once it has not fetched for ``replica.lag.time.max.ms`` leader 1 names 3 instead, and the
    consumer, back at the leader after its fetch to 2 timed out, reads from 3. Broker 2
    resumes and is in the ISR again: at its next fetch from 3 the consumer is told
    ``preferred_read_replica=2`` and goes back to 2.
"""

from __future__ import annotations

from typing import Final

from rackwise.replica.errors import OffsetNotAvailableException
from rackwise.replica.hosting import HostedReplicas
from rackwise.replica.partition import Partition
from rackwise.replica.selector import (
    ClientMetadata,
    PartitionView,
    ReplicaSelector,
    ReplicaView,
)

NO_PREFERRED_REPLICA: Final = -1


def _unfenced(hosted: HostedReplicas, broker_id: int) -> bool:
    registration = hosted.image.brokers.get(broker_id)
    return registration is not None and not registration.fenced


def leader_choice(
    hosted: HostedReplicas,
    partition: Partition,
    client: ClientMetadata,
    selector: ReplicaSelector,
    fetch_offset: int,
) -> int:
    """The replica the leader sends a consumer fetching from ``fetch_offset`` to: a follower's
    id, or this broker's when the consumer should read here (module docstring)."""
    me = hosted.broker_id
    now = hosted.clock()
    state = partition.state
    lag_max_ms = hosted.config.replica_lag_time_max_ms
    leader_end = partition.log_end_offset
    leader = ReplicaView(me, hosted.racks.get(me), leader_end, now, True)
    views = [leader]
    for replica in state.replicas:
        follower = partition.followers.get(replica)
        if (
            follower is None
            or replica not in state.isr
            or replica in state.removing
            or not _unfenced(hosted, replica)
            or not follower.is_caught_up(leader_end, now, lag_max_ms)
            or follower.log_end_offset < fetch_offset
            or follower.log_start_offset > fetch_offset
        ):
            continue
        views.append(
            ReplicaView(
                replica,
                hosted.racks.get(replica),
                follower.log_end_offset,
                follower.last_caught_up_ms,
                True,
            )
        )
    chosen = selector.select(PartitionView(leader, tuple(views)), client)
    return chosen if any(v.broker_id == chosen for v in views) else me


def invalid_read_replica(hosted: HostedReplicas, partition: Partition) -> str | None:
    """Why this follower may no longer serve consumers (None: it may)."""
    me = hosted.broker_id
    state = partition.state
    fenced = not _unfenced(hosted, me)
    if not fenced and me in state.isr and me not in state.removing:
        return None
    where = f"{partition.topic}-{partition.index}"
    if fenced:
        reason = f"broker {me} is fenced"
    elif me not in state.isr:
        reason = f"broker {me} is not in the ISR {list(state.isr)} of {where}"
    else:
        reason = f"a reassignment is removing broker {me} from the replicas of {where}"
    return f"Offsets of {where} are not available from broker {me}: {reason}; read from the leader"


def follower_choice(
    hosted: HostedReplicas,
    partition: Partition,
    client: ClientMetadata,
    selector: ReplicaSelector,
) -> int:
    """For a consumer's fetch from this follower: OFFSET_NOT_AVAILABLE (raised) if it may not
    serve consumers, else the replica the consumer should move to, or
    :data:`NO_PREFERRED_REPLICA` to read here (module docstring)."""
    reason = invalid_read_replica(hosted, partition)
    if reason is not None:
        raise OffsetNotAvailableException(reason)
    me = hosted.broker_id
    state = partition.state
    now = hosted.clock()
    known = partition.high_watermark
    leader: ReplicaView | None = None
    views = []
    for replica in state.replicas:
        if replica not in state.isr or replica in state.removing:
            continue
        if not _unfenced(hosted, replica):
            continue
        if replica == me:
            view = ReplicaView(me, hosted.racks.get(me), partition.log_end_offset, now, True)
        else:
            view = ReplicaView(replica, hosted.racks.get(replica), known, now - 1, True)
        if replica == state.leader:
            leader = view
        views.append(view)
    if leader is None:
        return NO_PREFERRED_REPLICA  # no leader to read from: serve what is here
    chosen = selector.select(PartitionView(leader, tuple(views)), client)
    if chosen == me or not any(v.broker_id == chosen for v in views):
        return NO_PREFERRED_REPLICA
    return chosen


def may_serve(hosted: HostedReplicas, partition: Partition) -> bool:
    """Whether a consumer's waiting fetch from this replica may go on waiting: it is the
    leader, or a follower still valid as a read replica."""
    return partition.is_leader or invalid_read_replica(hosted, partition) is None
