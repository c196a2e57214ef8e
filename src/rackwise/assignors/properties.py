"""Properties of an assignment, as Kafka's assignor tests define them, for tests and reports.

* :func:`valid`: every assigned partition exists and belongs to a topic its member subscribes
  to, and no partition has two members (the validity half of Kafka's
  ``verifyValidityAndBalance``, plus existence).
* :func:`complete`: every partition of every subscribed topic is assigned.
* :func:`fully_balanced`: member sizes differ by at most one (Kafka's ``isFullyBalanced``).
* :func:`kafka_balance`: no two members whose sizes differ by two or more were given partitions
  of a common topic (the balance half of ``verifyValidityAndBalance``).
* :func:`cooperative_no_partition_revoked_and_added_in_same_round`: no partition that one
  member gives up is given to another in the same round.
* :func:`kafka_is_sticky`: no partition of a topic moved from ``a`` to ``b`` while another
  moved from ``b`` to ``a`` (Kafka's ``isSticky`` over the general builder's moves).
* :func:`no_partition_assigned_twice`.
* :func:`rack_mismatch_count`: partitions whose member has a rack in which the partition has
  no replica (or, ``leader_only``, not its leader), as Kafka's ``verifyRackAssignment`` counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from rackwise.assignors.model import GroupSpec
from rackwise.assignors.racks import partition_racks
from rackwise.common import TopicPartition

AssignmentView = Mapping[str, Sequence[TopicPartition]]


def no_partition_assigned_twice(assignment: AssignmentView) -> bool:
    """No partition appears twice, whether in one member's list or in two."""
    counts = Counter(tp for parts in assignment.values() for tp in parts)
    return all(n == 1 for n in counts.values())


def valid(group: GroupSpec, assignment: AssignmentView) -> bool:
    """Each partition exists, is of a topic its member subscribes to, and has one member."""
    topics = {m.member_id: set(m.topics) for m in group.members}
    for member, parts in assignment.items():
        for tp in parts:
            if tp.topic not in topics.get(member, ()):
                return False
            if not 0 <= tp.partition < group.partition_count(tp.topic):
                return False
    return no_partition_assigned_twice(assignment)


def complete(group: GroupSpec, assignment: AssignmentView) -> bool:
    """Every partition of every subscribed topic that exists is assigned."""
    subscribed = {t for m in group.members for t in m.topics}
    assigned = {tp for parts in assignment.values() for tp in parts}
    return all(
        TopicPartition(t, p) in assigned
        for t in subscribed
        for p in range(group.partition_count(t))
    )


def fully_balanced(assignment: AssignmentView) -> bool:
    """Kafka's ``isFullyBalanced``: the largest and smallest member differ by at most one."""
    sizes = [len(parts) for parts in assignment.values()]
    return not sizes or max(sizes) - min(sizes) <= 1


def kafka_balance(assignment: AssignmentView) -> bool:
    """The balance check of Kafka's ``verifyValidityAndBalance``: two members whose sizes
    differ by two or more share no topic (else a partition could have moved)."""
    by_size: dict[int, set[str]] = {}
    for parts in assignment.values():
        by_size.setdefault(len(parts), set()).update(tp.topic for tp in parts)
    sizes = sorted(by_size)
    # Topics per size; a topic held at sizes s and s' with |s - s'| >= 2 breaks balance.
    lowest: dict[str, int] = {}
    highest: dict[str, int] = {}
    for size in sizes:
        for topic in by_size[size]:
            lowest.setdefault(topic, size)
            highest[topic] = size
    return all(highest[t] - lowest[t] <= 1 for t in lowest)


def cooperative_no_partition_revoked_and_added_in_same_round(
    group: GroupSpec, assignment: AssignmentView
) -> bool:
    """No partition is both given up by its owner and given to someone else in this round."""
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    owned = {m.member_id: m.owned for m in group.members}
    for member, parts in assignment.items():
        mine = set(parts)
        had = set(owned.get(member, ()))
        added |= mine - had
        revoked |= had - mine
    return not added & revoked


def kafka_is_sticky(movements: Iterable[tuple[TopicPartition, str, str]]) -> bool:
    """Kafka's ``isSticky``: within a topic, no two partitions moved in opposite directions
    between the same two members."""
    pairs = {(tp.topic, src, dst) for tp, src, dst in movements}
    return not any((topic, dst, src) in pairs for topic, src, dst in pairs)


def rack_mismatch_count(
    group: GroupSpec, assignment: AssignmentView, *, leader_only: bool = False
) -> int:
    """Partitions assigned to a member with a rack that the partition is not local to."""
    racks = {m.member_id: m.rack for m in group.members}
    count = 0
    for member, parts in assignment.items():
        rack = racks.get(member)
        if rack is None:
            continue
        for tp in parts:
            infos = group.partitions.get(tp.topic, ())
            if tp.partition >= len(infos):
                continue
            if rack not in partition_racks(infos[tp.partition], leader_only=leader_only):
                count += 1
    return count


def sizes_between(assignment: AssignmentView, low: int, high: int) -> bool:
    """Every member has from ``low`` to ``high`` partitions."""
    return all(low <= len(parts) <= high for parts in assignment.values())


PROPERTIES = {
    "valid": lambda g, a, outcome: valid(g, a),
    "complete": lambda g, a, outcome: complete(g, a),
    "fully_balanced": lambda g, a, outcome: fully_balanced(a),
    "kafka_balance": lambda g, a, outcome: kafka_balance(a),
    "cooperative_no_partition_revoked_and_added_in_same_round": (
        lambda g, a, outcome: cooperative_no_partition_revoked_and_added_in_same_round(g, a)
    ),
    "kafka_isSticky": lambda g, a, outcome: kafka_is_sticky(getattr(outcome, "movements", ())),
    "no_partition_assigned_twice": lambda g, a, outcome: no_partition_assigned_twice(a),
}
"""The checks by the names Kafka's tests (and the golden cases) give them:
``check(group, assignment, outcome)``, where ``outcome`` is a sticky assignor's
:class:`~rackwise.assignors.sticky.StickyOutcome` or ``None``."""
