"""The uniform server-side assignors: Kafka's ``uniform`` and rackwise's ``rack-aware-uniform``.

``uniform``, when every member subscribes to the same topics, is Kafka's
``UniformHomogeneousAssignmentBuilder`` step for step: each member in the spec's order gets a
quota (the total divided by the members, the first ``total % members`` one more), keeps its
current partitions up to the quota in the order it holds them, and the members with room then
take the free partitions in topic order (Java's ``HashSet`` order of the topic ids) and
partition order. When subscriptions differ it is rackwise's own balanced sticky rule, not
Kafka's heterogeneous builder: owners keep what they still subscribe to, free partitions go to
the least-loaded subscriber, and a partition then moves from a member to a subscriber with two
fewer until none can (so no subscriber of a topic has two partitions fewer than one that
holds a partition of it).

``rack-aware-uniform`` keeps the same quotas (balance first) and chooses locally within them: a
member past its quota keeps its nearest partitions, and a free partition goes to the member
with room nearest to one of its replicas in the rack tree: ``/dc1/r2`` prefers a replica in
``/dc1/r2``, then in ``/dc1``, then anywhere; plain rack names match only themselves.

Worked example
    Members ``a`` (``/dc1/r1``) and ``b`` (``/dc2/r1``), topic ``t`` with partition 0 on
    ``/dc2/r1`` and partition 1 on ``/dc1/r1``: ``uniform`` gives ``a`` {0} and ``b`` {1};
    ``rack-aware-uniform`` gives ``a`` {1} and ``b`` {0}.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence

from rackwise.assignors.model import PartitionInfo
from rackwise.assignors.server import (
    PartitionAssignorException,
    ServerAssignment,
    ServerAssignor,
    ServerGroupSpec,
    ServerMember,
)
from rackwise.common.java import java_hashmap_order

Partition = tuple[str, int]


def java_uuid_hash(topic_id: uuid.UUID) -> int:
    """Kafka's ``Uuid.hashCode()``: the two halves' xor, folded to 32 bits."""
    hilo = (topic_id.int >> 64) ^ (topic_id.int & ((1 << 64) - 1))
    folded = ((hilo >> 32) ^ hilo) & 0xFFFFFFFF
    return folded - (1 << 32) if folded >= 1 << 31 else folded


def topic_order(spec: ServerGroupSpec, topics: frozenset[str]) -> list[str]:
    """The topics as Kafka iterates a ``HashSet`` of their ids (``new HashSet<>(ids)``)."""
    missing = sorted(t for t in topics if t not in spec.topic_ids or t not in spec.partitions)
    if missing:
        raise PartitionAssignorException(
            f"Members are subscribed to topic {missing[0]} which doesn't exist in the topic "
            "metadata."
        )
    by_id = {spec.topic_ids[t]: t for t in sorted(topics)}
    initial = max(int(len(by_id) / 0.75) + 1, 16)
    return [by_id[i] for i in java_hashmap_order(list(by_id), java_uuid_hash, initial=initial)]


def _components(rack: str | None) -> tuple[str, ...]:
    if not rack:
        return ()
    return tuple(rack[1:].split("/")) if rack.startswith("/") else (rack,)


def nearness(member_rack: str | None, racks: Sequence[str | None]) -> int:
    """How many leading components the member's rack shares with the nearest of ``racks``."""
    mine = _components(member_rack)
    best = 0
    for rack in racks:
        theirs = _components(rack)
        shared = 0
        for a, b in zip(mine, theirs, strict=False):
            if a != b:
                break
            shared += 1
        best = max(best, shared)
    return best


Nearness = Callable[[ServerMember, Partition], int]


def _replica_nearness(spec: ServerGroupSpec) -> Nearness:
    def near(member: ServerMember, tp: Partition) -> int:
        info: PartitionInfo = spec.partitions[tp[0]][tp[1]]
        return nearness(member.rack, info.replica_racks)

    return near


def _homogeneous(spec: ServerGroupSpec, near: Nearness | None) -> ServerAssignment:
    members = spec.members
    topics = topic_order(spec, members[0].topics)
    if not topics:
        return {m.member_id: {} for m in members}
    owned = {(t, p) for m in members for t, ps in m.assigned.items() for p in ps}
    free = [(t, p) for t in topics for p in range(len(spec.partitions[t])) if (t, p) not in owned]
    total = sum(len(spec.partitions[t]) for t in topics)
    minimum, extra = divmod(total, len(members))
    kept: dict[str, list[Partition]] = {}
    room: dict[str, int] = {}
    for m in members:
        quota = minimum + (1 if extra > 0 else 0)
        extra -= 1 if extra > 0 else 0
        mine = [(t, p) for t, ps in m.assigned.items() if t in m.topics for p in ps]
        if near is not None:
            mine.sort(key=lambda tp, m=m: -near(m, tp))  # type: ignore[misc]
        kept[m.member_id], excess = mine[:quota], mine[quota:]
        free += excess
        room[m.member_id] = quota - len(kept[m.member_id])
    if near is None:
        it = iter(free)
        for m in members:
            for _ in range(room[m.member_id]):
                tp = next(it, None)
                if tp is None:
                    break
                kept[m.member_id].append(tp)
        if next(it, None) is not None:
            raise PartitionAssignorException("Partitions were left unassigned")
    else:
        _fill_nearest(members, free, room, kept, spec)
    return {m: _as_assignment(tps) for m, tps in kept.items()}


def _fill_nearest(
    members: Sequence[ServerMember],
    free: list[Partition],
    room: dict[str, int],
    kept: dict[str, list[Partition]],
    spec: ServerGroupSpec,
) -> None:
    """Give each free partition to the member with room nearest to one of its replicas: an
    index from each rack prefix to the members with room under it."""
    under: dict[tuple[str, ...], dict[str, None]] = {}
    prefixes: dict[str, list[tuple[str, ...]]] = {}
    for m in members:
        comps = _components(m.rack)
        own = [comps[:i] for i in range(len(comps), -1, -1)]
        prefixes[m.member_id] = own
        if room[m.member_id] > 0:
            for prefix in own:
                under.setdefault(prefix, {})[m.member_id] = None
    for tp in sorted(free):
        racks = [_components(r) for r in spec.partitions[tp[0]][tp[1]].replica_racks]
        chosen = _nearest_with_room(under, racks)
        if chosen is None:
            raise PartitionAssignorException("Partitions were left unassigned")
        kept[chosen].append(tp)
        room[chosen] -= 1
        if room[chosen] == 0:
            for prefix in prefixes[chosen]:
                under[prefix].pop(chosen, None)


def _nearest_with_room(
    under: dict[tuple[str, ...], dict[str, None]], racks: Sequence[tuple[str, ...]]
) -> str | None:
    for depth in range(max((len(r) for r in racks), default=0), 0, -1):
        for rack in racks:
            if len(rack) >= depth and (found := under.get(rack[:depth])):
                return next(iter(found))
    anywhere = under.get(())
    return next(iter(anywhere)) if anywhere else None


def _heterogeneous(spec: ServerGroupSpec, near: Nearness | None) -> ServerAssignment:
    for m in spec.members:
        topic_order(spec, m.topics)
    subscribers: dict[str, list[ServerMember]] = {}
    for m in spec.members:
        for t in sorted(m.topics):
            subscribers.setdefault(t, []).append(m)
    owner: dict[Partition, ServerMember] = {}
    load = {m.member_id: 0 for m in spec.members}
    for m in spec.members:
        for t, ps in m.assigned.items():
            if t in m.topics:
                for p in ps:
                    if p < len(spec.partitions[t]) and (t, p) not in owner:
                        owner[(t, p)] = m
                        load[m.member_id] += 1

    def best(tp: Partition) -> ServerMember:
        return min(
            subscribers[tp[0]],
            key=lambda m: (load[m.member_id], -near(m, tp) if near else 0, m.member_id),
        )

    for t in sorted(subscribers, key=lambda t: (len(subscribers[t]), t)):
        for p in range(len(spec.partitions[t])):
            if (t, p) not in owner:
                owner[(t, p)] = chosen = best((t, p))
                load[chosen.member_id] += 1
    moved = True
    while moved:
        moved = False
        for tp in sorted(owner):
            source, target = owner[tp], best(tp)
            if load[target.member_id] + 2 <= load[source.member_id]:
                owner[tp] = target
                load[source.member_id] -= 1
                load[target.member_id] += 1
                moved = True
    out: dict[str, list[Partition]] = {m.member_id: [] for m in spec.members}
    for tp, m in owner.items():
        out[m.member_id].append(tp)
    return {m: _as_assignment(tps) for m, tps in out.items()}


def _as_assignment(tps: Sequence[Partition]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for t, p in tps:
        out.setdefault(t, set()).add(p)
    return {t: frozenset(ps) for t, ps in out.items()}


class UniformAssignor(ServerAssignor):
    """Kafka's ``uniform`` (module docstring)."""

    name = "uniform"

    def assign(self, spec: ServerGroupSpec) -> ServerAssignment:
        if not spec.members:
            return {}
        if spec.homogeneous:
            return _homogeneous(spec, None)
        return _heterogeneous(spec, None)


class RackAwareUniformAssignor(ServerAssignor):
    """``rack-aware-uniform``: ``uniform``'s balance, then the nearest replica (module
    docstring)."""

    name = "rack-aware-uniform"

    def assign(self, spec: ServerGroupSpec) -> ServerAssignment:
        if not spec.members:
            return {}
        near = _replica_nearness(spec)
        if spec.homogeneous:
            return _homogeneous(spec, near)
        return _heterogeneous(spec, near)
