"""How the assignors read racks: which racks a partition counts as local, Kafka's rule for
switching rack awareness on (KIP-881), and the data-centre tier of hierarchical rack paths.

Partition racks
---------------
KIP-881 (Kafka's ``range``, ``sticky`` and ``cooperative-sticky``) counts a partition as local
to every rack that holds one of its replicas, since a consumer may fetch from a follower in its
own rack. The leader-rack-aware assignors count only the leader's rack, since their consumers
fetch from the leader; a partition without a leader (or whose leader's broker has no rack) then
has no rack at all and is assigned as a rack-unaware assignor would.

When rack awareness applies (Kafka's ``useRackAwareAssignment``)
----------------------------------------------------------------
Never when no consumer has a rack (an empty ``client.rack`` counts as none), nor when no
consumer rack holds any replica. Otherwise always when ``prefer_rack_aware_logic`` is set
(Kafka's test switch), and else only when the partitions do not all have the same set of racks
(if every partition is on every rack, any assignment is already local).

Data centres
------------
A rack written as a path, ``/dc1/r2``, lies in the data centre named by its first component
(``dc1``); a path of one component (``/r2``) or a plain name (``r2``, as Kafka's racks are) has
no data centre. Where an assignor would give a partition to a consumer outside its racks, it
first tries a consumer in one of the partition's data centres, under the same balance limits
and with the same switch rule applied to data centres. Plain racks never share a data centre,
so for them the assignors behave exactly as Kafka's.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from rackwise.assignors.model import Member, PartitionInfo
from rackwise.common import TopicPartition
from rackwise.topology import InvalidRackPathException, parse_rack_path

NO_RACKS: frozenset[str] = frozenset()


def consumer_rack(member: Member) -> str | None:
    """The member's rack, ``None`` for none (Kafka ignores an empty ``client.rack``)."""
    return member.rack or None


def partition_racks(info: PartitionInfo, *, leader_only: bool) -> frozenset[str]:
    """The racks in which ``info`` counts as local: its leader's alone, or every replica's."""
    if leader_only:
        rack = info.leader_rack
        return NO_RACKS if rack is None else frozenset((rack,))
    return frozenset(r for r in info.replica_racks if r is not None)


def data_centre(rack: str | None) -> str | None:
    """The data centre of a rack path (``/dc1/r2`` -> ``dc1``); ``None`` for a plain rack name,
    a one-component path or a malformed path."""
    if rack is None or not rack.startswith("/"):
        return None
    try:
        parts = parse_rack_path(rack, broker_id=-1)
    except InvalidRackPathException:
        return None
    return parts[0] if len(parts) >= 2 else None


def data_centres(racks: Iterable[str]) -> frozenset[str]:
    """The data centres of ``racks`` (racks without one contribute nothing)."""
    return frozenset(dc for dc in map(data_centre, racks) if dc is not None)


def use_rack_aware_assignment(
    consumer_racks: Collection[str],
    all_partition_racks: Collection[str],
    racks_per_partition: Iterable[frozenset[str]],
    *,
    prefer_rack_aware_logic: bool,
) -> bool:
    """Kafka's ``AbstractPartitionAssignor.useRackAwareAssignment``."""
    if not consumer_racks or not set(consumer_racks) & set(all_partition_racks):
        return False
    if prefer_rack_aware_logic:
        return True
    everywhere = frozenset(all_partition_racks)
    return any(racks != everywhere for racks in racks_per_partition)


def leader_rack_changes(
    before: Mapping[str, Sequence[PartitionInfo]], after: Mapping[str, Sequence[PartitionInfo]]
) -> list[TopicPartition]:
    """The partitions in both ``before`` and ``after`` whose leader rack differs (a partition
    without a leader has none), in topic and partition order: what a leader-rack-aware
    assignment made with ``before`` no longer reflects."""
    changed = []
    for topic in sorted(before.keys() & after.keys()):
        old, new = before[topic], after[topic]
        for p in range(min(len(old), len(new))):
            if old[p].leader_rack != new[p].leader_rack:
                changed.append(TopicPartition(topic, p))
    return changed
