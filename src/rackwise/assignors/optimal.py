"""The rack-local-optimal assignor: the most partitions read in their leader's rack, provably,
among the perfectly balanced assignments.

Goals, in order (each one only among the assignments that are best for the ones before it):

1. Balance. When the ``N`` members subscribe to the same topics, each gets ``floor(P / N)`` or
   ``ceil(P / N)`` of their ``P`` partitions. When subscriptions differ, a member can only take
   partitions of its own topics, and balance means: the numbers of partitions per member have
   the least sum of squares. Equivalently, no partition can be handed along a chain of members
   that subscribe to it, from a member with ``a`` partitions to one with ``a - 2`` or fewer;
   such an assignment also has the least possible maximum, and with identical subscriptions it
   is exactly the floor-or-ceil rule.
2. Locality: the most partitions whose leader's rack equals the member's rack (the member then
   fetches from the leader in its own rack, which keeps Kafka's read-from-leader consistency and
   saves cross-rack traffic).
3. Data centre: racks may be paths (``/dc1/r2``). Among the partitions that cannot be read in the
   leader's rack, the most whose leader sits in the member's data centre, the first component of
   a path with at least two components (``/dc1/r2`` and ``/dc1/r7`` share ``dc1``), as
   :func:`rackwise.assignors.racks.data_centre` reads it for every assignor. A rack without
   ``/`` (``rack-a``) or with one component (``/r1``) names no data centre, so it only ever
   matches itself.
4. Stickiness: the most partitions kept by the member that owned them, where keeping costs
   nothing above. Ownership follows Kafka's sticky assignors: only members of the group's highest
   generation keep theirs, and a partition two of them claim is owned by neither.

Constraints: every partition of a subscribed, existing topic goes to exactly one member that
subscribes to its topic; every member appears in the result, sorted partitions, possibly none. A
partition without a leader, a leader broker without a rack, or a member without a rack is never
local (an empty ``client.rack`` is no rack, as in Kafka). The result is a pure function of the
group: no randomness, ties broken by sorted order. ``prefer_rack_aware_logic`` plays no part.

Algorithm: a minimum-cost flow on aggregated nodes, one flow problem per connected component of
the member-topic graph (members that share no topic, directly or through others, never compete):

- a *class* node per (subscribing members, leader rack, previous owner) supplies its partitions;
- a *hub* node per (subscribing members, member rack) stands for the members in that rack, who
  are interchangeable except for stickiness; a class sends to every hub at the cost of the
  leader-to-member tier (same rack 0, same data centre ``A``, elsewhere ``A + B``) plus 1, and to
  its previous owner directly without the 1;
- each member passes flow to the sink. With identical subscriptions a member takes ``q`` units
  and at most one more through a shared node limited to ``r`` (``P = q N + r``), so every flow is
  balanced. Otherwise unit ``k`` of a member costs ``W (2k - 1)`` (its squares), up to the largest
  load a water-filling assignment reaches, which bounds the balanced maximum.

``B > P`` and ``A > B P + P`` make the costs lexicographic: one partition more in its leader's
rack outweighs every data-centre and stickiness difference, one more in the data centre every
stickiness difference, and ``W`` outweighs all three. A minimum-cost flow is therefore optimal
for the goals in order: the locality it reaches is a proof of the optimum, which
:func:`optimal_locality` returns. The flows are integral and are expanded to concrete partitions
in sorted order: each class gives its owner its share first, then fills its hubs in hub order;
each hub deals its pool out to its members in member-id order. Size: classes x racks edges,
independent of how many partitions a class holds, so 100,000 partitions over 100 members or
10,000 over 1,000 solve in under a second each.

Worked example: topic ``t`` with leaders in racks ``a, a, a, b`` (partitions 0-3), ``c1`` in rack
``a`` and ``c2`` in rack ``b``, who owned ``t-0``. Balance gives each member 2. Rack ``b`` has one
leader, so ``c2`` takes ``t-3`` and one rack-``a`` partition: 3 of 4 local is the optimum. Which
rack-``a`` partition ``c2`` gets costs no locality, so it keeps ``t-0``::

    c1: [t-1, t-2]    c2: [t-0, t-3]    optimal_locality = 3
"""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from rackwise.assignors.model import Assignment, GroupSpec, Member, PartitionAssignor
from rackwise.assignors.racks import data_centre
from rackwise.common import TopicPartition

SAME_RACK: Final = 0
SAME_DATA_CENTRE: Final = 1
ELSEWHERE: Final = 2

_SINK: Final = ("sink",)
_EXTRA: Final = ("extra",)


def locality_tier(leader_rack: str | None, member_rack: str | None) -> int:
    """``SAME_RACK``, ``SAME_DATA_CENTRE`` or ``ELSEWHERE`` for a member reading from a leader."""
    if not leader_rack or not member_rack:
        return ELSEWHERE
    if leader_rack == member_rack:
        return SAME_RACK
    dc = data_centre(leader_rack)
    if dc is not None and dc == data_centre(member_rack):
        return SAME_DATA_CENTRE
    return ELSEWHERE


@dataclass(frozen=True, slots=True)
class LocalityOptimum:
    """The optimal assignment and what it achieves.

    ``num_rack_local`` is the proven maximum of partitions read in their leader's rack over all
    balanced assignments; ``num_data_centre_local`` counts the others read in the leader's data
    centre; ``num_kept`` the partitions that stay with their previous owner.
    """

    assignment: Assignment
    num_partitions: int
    num_rack_local: int
    num_data_centre_local: int
    num_kept: int


class RackLocalOptimalPartitionAssignor(PartitionAssignor):
    """Balanced first, then the most partitions in their leader's rack (see the module)."""

    name = "rack-local-optimal"

    def assign(self, group: GroupSpec) -> Assignment:
        return solve_rack_local_optimal(group).assignment


def optimal_locality(group: GroupSpec) -> int:
    """The most partitions any balanced assignment of ``group`` reads in the leader's rack."""
    return solve_rack_local_optimal(group).num_rack_local


@dataclass(frozen=True, slots=True)
class _Class:
    """Partitions alike for the flow: same subscribers, leader rack and previous owner."""

    eligible: tuple[str, ...]
    leader_rack: str | None
    owner: str | None
    partitions: tuple[TopicPartition, ...]


def solve_rack_local_optimal(group: GroupSpec) -> LocalityOptimum:
    """Solve ``group`` for the goals of the module, in order."""
    members = {m.member_id: m for m in sorted(group.members, key=lambda m: m.member_id)}
    subscribers = _subscribers(group, members.values())
    owners = _previous_owners(group, members.values())
    classes = _classes(group, subscribers, owners)
    assignment: dict[str, list[TopicPartition]] = {member_id: [] for member_id in members}
    tiers = [0, 0, 0]
    kept = 0
    for component in _components(classes):
        for member_id, c, parts in _solve_component(component, members):
            assignment[member_id].extend(parts)
            tiers[locality_tier(c.leader_rack, members[member_id].rack)] += len(parts)
            kept += len(parts) if c.owner == member_id else 0
    for parts in assignment.values():
        parts.sort()
    total = sum(len(c.partitions) for c in classes)
    if sum(tiers) != total:
        raise AssertionError(f"BUG: {sum(tiers)} partitions assigned of {total}")
    return LocalityOptimum(
        assignment=assignment,
        num_partitions=total,
        num_rack_local=tiers[SAME_RACK],
        num_data_centre_local=tiers[SAME_DATA_CENTRE],
        num_kept=kept,
    )


def _subscribers(group: GroupSpec, members: Iterable[Member]) -> dict[str, tuple[str, ...]]:
    """Topic -> the sorted ids of the members that subscribe to it, for topics with partitions."""
    out: dict[str, list[str]] = defaultdict(list)
    for member in members:
        for topic in sorted(set(member.topics)):
            if group.partition_count(topic) > 0:
                out[topic].append(member.member_id)
    return {topic: tuple(ids) for topic, ids in sorted(out.items())}


def _previous_owners(group: GroupSpec, members: Iterable[Member]) -> dict[str, dict[int, str]]:
    """Topic -> partition -> the member that keeps its claim, by the rules of Kafka's sticky
    assignors: only members of the highest generation count, and a partition two of them claim
    is owned by neither. A claim on a partition that does not exist or whose topic the member
    no longer subscribes to is void."""
    members = list(members)
    if not members:
        return {}
    top = max(m.generation for m in members)
    claims: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for member in members:
        if member.generation != top:
            continue
        topics = set(member.topics)
        for tp in set(member.owned):
            if tp.topic in topics and 0 <= tp.partition < group.partition_count(tp.topic):
                claims[tp.topic][tp.partition].append(member.member_id)
    return {
        topic: {p: ids[0] for p, ids in by_partition.items() if len(ids) == 1}
        for topic, by_partition in claims.items()
    }


def _classes(
    group: GroupSpec,
    subscribers: Mapping[str, tuple[str, ...]],
    owners: Mapping[str, Mapping[int, str]],
) -> list[_Class]:
    grouped: dict[tuple[int, str | None, str | None], list[TopicPartition]] = {}
    eligible_sets: dict[tuple[str, ...], int] = {}
    for topic, eligible in subscribers.items():
        eligible_id = eligible_sets.setdefault(eligible, len(eligible_sets))
        owner_of = owners.get(topic, {})
        for index, info in enumerate(group.partitions[topic]):
            key = (eligible_id, info.leader_rack, owner_of.get(index))
            grouped.setdefault(key, []).append(TopicPartition(topic, index))
    by_id = {i: eligible for eligible, i in eligible_sets.items()}
    return [
        _Class(by_id[eligible_id], rack, owner, tuple(parts))
        for (eligible_id, rack, owner), parts in sorted(grouped.items(), key=lambda kv: kv[1][0])
    ]


def _components(classes: Sequence[_Class]) -> list[list[_Class]]:
    """The classes grouped by connected component of members (union-find over members)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for c in classes:
        root = find(c.eligible[0])
        for member_id in c.eligible[1:]:
            other = find(member_id)
            if other != root:
                parent[max(root, other)] = min(root, other)
                root = min(root, other)
    out: dict[str, list[_Class]] = {}
    for c in classes:
        out.setdefault(find(c.eligible[0]), []).append(c)
    return [out[root] for root in sorted(out)]


def _solve_component(
    classes: Sequence[_Class], members: Mapping[str, Member]
) -> list[tuple[str, _Class, Sequence[TopicPartition]]]:
    """(member, class, partitions of that class the member gets), for one component."""
    import networkx as nx  # noqa: PLC0415  (a tenth of a second: only when this assignor runs)

    ids = sorted({m for c in classes for m in c.eligible})
    total = sum(len(c.partitions) for c in classes)
    graph = nx.MultiDiGraph()
    hubs = _add_classes(graph, classes, members, total)
    for hub, hub_members in hubs.items():
        for member_id in hub_members:
            graph.add_edge(hub, ("member", member_id), weight=0)
    if all(c.eligible == tuple(ids) for c in classes):
        _add_even_loads(graph, ids, total)
    else:
        _add_square_loads(graph, classes, ids, total)
    graph.add_node(_SINK, demand=total)
    _, flow = nx.network_simplex(graph)
    return _expand(classes, hubs, flow)


def _add_classes(
    graph: Any, classes: Sequence[_Class], members: Mapping[str, Member], total: int
) -> dict[tuple[object, ...], list[str]]:
    """Class nodes with their supplies, hub nodes, and the edges between; returns hub -> its
    members (sorted). Hubs are keyed by (subscribers, member rack) in first-seen order."""
    b = total + 1
    a = b * total + total + 1
    tier_cost = {SAME_RACK: 0, SAME_DATA_CENTRE: a, ELSEWHERE: a + b}
    hubs: dict[tuple[object, ...], list[str]] = {}
    hubs_of: dict[tuple[str, ...], list[tuple[object, ...]]] = {}
    for c in classes:
        if c.eligible not in hubs_of:
            racks: dict[str | None, list[str]] = {}
            for member_id in c.eligible:
                racks.setdefault(members[member_id].rack, []).append(member_id)
            keys: list[tuple[object, ...]] = []
            for rack, ids in sorted(racks.items(), key=lambda kv: kv[1][0]):
                key: tuple[object, ...] = ("hub", len(hubs), rack)
                hubs[key] = ids
                keys.append(key)
            hubs_of[c.eligible] = keys
    for index, c in enumerate(classes):
        node = ("class", index)
        graph.add_node(node, demand=-len(c.partitions))
        if c.owner is not None:
            tier = locality_tier(c.leader_rack, members[c.owner].rack)
            graph.add_edge(node, ("member", c.owner), weight=tier_cost[tier])
        for hub in hubs_of[c.eligible]:
            tier = locality_tier(c.leader_rack, members[hubs[hub][0]].rack)
            graph.add_edge(node, hub, weight=tier_cost[tier] + 1)
    return hubs


def _add_even_loads(graph: Any, ids: Sequence[str], total: int) -> None:
    """Identical subscriptions: each member takes q, and r of them one more (P = q N + r)."""
    base, extra = divmod(total, len(ids))
    for member_id in ids:
        if base:
            graph.add_edge(("member", member_id), _SINK, capacity=base, weight=0)
        if extra:
            graph.add_edge(("member", member_id), _EXTRA, capacity=1, weight=0)
    if extra:
        graph.add_edge(_EXTRA, _SINK, capacity=extra, weight=0)


def _add_square_loads(
    graph: Any, classes: Sequence[_Class], ids: Sequence[str], total: int
) -> None:
    """Different subscriptions: unit k of a member costs W (2k - 1), so a flow's balance cost is
    W times the sum of squared loads; units stop at the water-filling maximum (a bound on the
    balanced maximum) or at what the member may take."""
    b = total + 1
    a = b * total + total + 1
    w = total * (a + b + 1) + 1
    bound = _water_filling_max(classes)
    may_take: dict[str, int] = defaultdict(int)
    for c in classes:
        for member_id in c.eligible:
            may_take[member_id] += len(c.partitions)
    for member_id in ids:
        for k in range(1, min(bound, may_take[member_id]) + 1):
            graph.add_edge(("member", member_id), _SINK, capacity=1, weight=w * (2 * k - 1))


def _water_filling_max(classes: Sequence[_Class]) -> int:
    """The largest load of a greedy assignment: the classes with the fewest subscribers first,
    each poured onto its least-loaded subscribers. Any balanced assignment's maximum is at most
    this, since balanced assignments have the least maximum of all."""
    loads: dict[str, int] = defaultdict(int)
    for c in sorted(classes, key=lambda c: (len(c.eligible), c.partitions[0])):
        heap = [(loads[m], m) for m in c.eligible]
        heapq.heapify(heap)
        for _ in range(len(c.partitions)):
            load, member_id = heapq.heappop(heap)
            heapq.heappush(heap, (load + 1, member_id))
        for load, member_id in heap:
            loads[member_id] = load
    return max(loads.values())


def _expand(
    classes: Sequence[_Class],
    hubs: Mapping[tuple[object, ...], Sequence[str]],
    flow: Mapping[Any, Mapping[Any, Mapping[int, int]]],
) -> list[tuple[str, _Class, Sequence[TopicPartition]]]:
    """Integral flows to concrete partitions, in sorted order."""
    out: list[tuple[str, _Class, Sequence[TopicPartition]]] = []
    pools: dict[tuple[object, ...], list[tuple[int, TopicPartition]]] = {}
    for index, c in enumerate(classes):
        position = 0
        for target, by_key in flow[("class", index)].items():
            amount = sum(by_key.values())
            chunk = c.partitions[position : position + amount]
            position += amount
            if target[0] == "member":
                out.append((target[1], c, chunk))
            else:
                pools.setdefault(target, []).extend((index, tp) for tp in chunk)
        if position != len(c.partitions):
            raise AssertionError(f"BUG: class {index} sent {position} of {len(c.partitions)}")
    for hub, pool in pools.items():
        position = 0
        for member_id in hubs[hub]:
            amount = sum(flow[hub][("member", member_id)].values())
            dealt = pool[position : position + amount]
            for index, pieces in itertools.groupby(dealt, key=lambda piece: piece[0]):
                out.append((member_id, classes[index], [tp for _, tp in pieces]))
            position += amount
        if position != len(pool):
            raise AssertionError(f"BUG: hub {hub} dealt {position} of {len(pool)}")
    return out
