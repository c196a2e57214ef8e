"""Whether a partition can survive losing any one data centre, and at what replication factor
(pure).

Goals
    A partition is *protected* against losing a top-level domain (a data centre) when the
    replicas outside it are at least ``min.insync.replicas`` and lie in at least
    ``min.insync.racks`` distinct domains at ``min.insync.racks.level``: it can then still take
    acks=all writes. :func:`is_protected` judges one placement; :func:`protectable` says whether
    any placement of ``rf`` replicas (one per broker) protects the partition against the loss
    of every top-level domain; :func:`smallest_protecting_rf` gives the smallest factor that
    can, or None when no factor can (fewer top-level domains than ``min.insync.racks + 1`` at
    level 1, say). :func:`loss_tree` builds their input from brokers' racks.

Constraints
    The tree is given as counts: ``tree[t]`` holds the broker counts of the level-L domains
    inside top-level domain t (at level 1 the one domain is t itself). A level-L domain lies in
    exactly one top-level domain, so losing t loses its domains whole.

    :func:`protectable` is exact without a search. Fix ``A = rf - min.insync.replicas`` (no
    top-level domain may hold more, or its loss leaves too few) and ``B``, the most level-L
    domains one top-level domain may use. Top-level domain t then uses at most
    ``d_t = min(n_t, B, A)`` domains and holds at most ``h_t = min(A, its d_t largest counts)``
    replicas; the partition is protectable for this B exactly when ``sum h_t >= rf`` (there is
    room) and ``min(rf, sum d_t) - B >= min.insync.racks`` (losing the busiest top-level domain
    leaves enough domains; using fewer domains in some top-level domain to land on exactly rf
    replicas keeps both bounds). It is protectable when some B in ``0 .. max n_t`` works.

Worked example
    Three data centres of two racks of two brokers, ``min.insync.replicas=2`` and
    ``min.insync.racks=2`` at level 1: ``tree = [[4], [4], [4]]``. RF 3 (one per data centre)
    is protected: losing one leaves 2 replicas in 2 data centres. Two data centres
    ``[[4], [4]]`` cannot protect it at any factor: losing one leaves one data centre.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from rackwise.topology.domains import domain_at

LossTree = Sequence[Sequence[int]]
"""Per top-level domain, the broker counts of its domains at ``min.insync.racks.level``."""


def is_protected(
    counts: Mapping[tuple[str, str], int], min_insync_replicas: int, min_insync_racks: int
) -> bool:
    """Whether replicas counted by (top-level domain, level-L domain) survive the loss of each
    top-level domain: at least ``min_insync_replicas`` of them left, in at least
    ``min_insync_racks`` level-L domains. A top-level domain without replicas counts too."""
    held = {key: n for key, n in counts.items() if n > 0}
    total = sum(held.values())
    tops = {top for top, _ in held}
    if not tops:
        return min_insync_replicas <= 0 and min_insync_racks <= 0
    for lost in tops:
        left = total - sum(n for (top, _), n in held.items() if top == lost)
        domains = sum(1 for top, _ in held if top != lost)
        if left < min_insync_replicas or domains < min_insync_racks:
            return False
    return True  # losing a top-level domain that holds nothing leaves everything


def protectable(rf: int, tree: LossTree, min_insync_replicas: int, min_insync_racks: int) -> bool:
    """Whether some placement of ``rf`` replicas, one per broker, is protected against losing
    any one top-level domain of ``tree`` (module docstring)."""
    sizes = [sorted((c for c in top if c > 0), reverse=True) for top in tree]
    sizes = [top for top in sizes if top]
    if rf < 1 or rf > sum(sum(top) for top in sizes):
        return False
    most = rf - min_insync_replicas
    if most < 0:
        return False
    widest = max(len(top) for top in sizes)
    for b in range(widest + 1):
        room = 0
        domains = 0
        for top in sizes:
            d = min(len(top), b, most)
            domains += d
            room += min(most, sum(top[:d]))
        if room >= rf and min(rf, domains) - b >= min_insync_racks:
            return True
    return False


def smallest_protecting_rf(
    tree: LossTree, min_insync_replicas: int, min_insync_racks: int, *, start: int = 1
) -> int | None:
    """The smallest replication factor from ``start`` up that :func:`protectable` accepts, or
    None when none does (up to the number of brokers)."""
    brokers = sum(sum(top) for top in tree)
    for rf in range(max(start, 1), brokers + 1):
        if protectable(rf, tree, min_insync_replicas, min_insync_racks):
            return rf
    return None


def loss_tree(brokers: Iterable[tuple[int, str | None]], level: int) -> list[list[int]]:
    """The :data:`LossTree` of ``(broker id, rack)`` pairs at ``level``, top-level domains and
    their domains in sorted order (a broker without a rack is a top-level domain of its own)."""
    nested: dict[str, dict[str, int]] = {}
    for broker, rack in brokers:
        top = domain_at(rack, 1, broker_id=broker)
        inner = domain_at(rack, level, broker_id=broker)
        nested.setdefault(top, {})
        nested[top][inner] = nested[top].get(inner, 0) + 1
    return [[nested[top][d] for d in sorted(nested[top])] for top in sorted(nested)]
