"""Replica selectors: which replica a consumer should fetch from (KIP-392's ``ReplicaSelector``,
``replica.selector.class``), with rackwise's multi-level selector for hierarchical racks
(KIP-879).

Goals
    * ``leader`` (Kafka's ``org.apache.kafka.common.replica.LeaderSelector``, the default):
      always the leader.
    * ``rack-aware`` (``org.apache.kafka.common.replica.RackAwareReplicaSelector``): among the
      replicas whose rack equals the consumer's ``client.rack`` exactly, the leader if it is
      one of them, else the most caught-up; the leader when none matches or the consumer gives
      no rack. Kafka's rule, kept exactly.
    * ``multi-level``: among the in-sync replicas, the one whose broker's rack path shares the
      longest prefix (in whole path components) with the consumer's ``client.rack``: a
      consumer in ``/dc1/r2`` reads from ``/dc1/r1`` rather than ``/dc2/r1``.
    * Any plug-in ``package.module:Class`` with a ``select(partition, client)`` method.

Constraints
    Pure: values in, a broker id out. Only replicas the leader may send a consumer to are
    offered (:class:`ReplicaView`: alive, holding the fetch offset); the leader is always one.

Algorithm (multi-level)
    Score each in-sync candidate by the number of leading path components its rack shares with
    the client's rack (``/dc1/r1`` vs ``/dc1/r2``: 1; a plain rack name is a one-component
    path, so plain names behave as an exact match). Keep the best score. Ties are broken by,
    in turn: the leader (it needs no redirect and is never behind); the highest log end offset
    (the least lag, so the fewest empty fetches); the most recent catch-up; the lowest broker
    id (so every fetch of a consumer picks the same replica, keeping its fetch position
    warm). A best score of 0 (nothing shared, or no client rack) gives the leader: a replica in
    another data centre is no nearer than the leader is.

Worked example
    Replicas 1 (``/dc1/r1``, leader), 3 (``/dc2/r1``), 5 (``/dc3/r1``); a consumer with
    ``client.rack=/dc2/r2``: scores 0, 1, 0, so broker 3. With ``client.rack=/dc9/r1``: all 0,
    so the leader, broker 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from rackwise.common.errors import RackwiseError
from rackwise.common.plugins import PluginMessages, load_plugin


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica a consumer could be sent to."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    last_caught_up_ms: int
    is_in_sync: bool


@dataclass(frozen=True, slots=True)
class PartitionView:
    """The candidates of one partition; ``leader`` is among ``replicas``."""

    leader: ReplicaView
    replicas: tuple[ReplicaView, ...]


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """The fetching consumer: its ``client.rack`` (``rack_id``; empty when unset)."""

    rack_id: str
    client_id: str = ""


class ReplicaSelector(Protocol):
    name: str

    def select(self, partition: PartitionView, client: ClientMetadata) -> int:
        """The broker id the consumer should fetch from."""
        ...


def _most_caught_up_key(replica: ReplicaView) -> tuple[int, int]:
    # Kafka's ReplicaView.comparator: log end offset, then the most recent catch-up.
    return (replica.log_end_offset, replica.last_caught_up_ms)


class LeaderSelector:
    """Always the leader (Kafka's ``LeaderSelector``)."""

    name = "leader"

    def select(self, partition: PartitionView, client: ClientMetadata) -> int:
        del client
        return partition.leader.broker_id


class RackAwareReplicaSelector:
    """Kafka's ``RackAwareReplicaSelector``: exact rack match (module docstring)."""

    name = "rack-aware"

    def select(self, partition: PartitionView, client: ClientMetadata) -> int:
        if not client.rack_id:
            return partition.leader.broker_id
        same_rack = [r for r in partition.replicas if r.rack == client.rack_id]
        if not same_rack:
            return partition.leader.broker_id
        if any(r.broker_id == partition.leader.broker_id for r in same_rack):
            return partition.leader.broker_id
        return max(same_rack, key=_most_caught_up_key).broker_id


def rack_components(rack: str | None) -> tuple[str, ...]:
    """A rack as path components: ``/dc1/r2`` -> ``("dc1", "r2")``; a plain name is one
    component; no rack is none."""
    if not rack:
        return ()
    return tuple(part for part in rack.split("/") if part)


def shared_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    """How many leading components ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class MultiLevelReplicaSelector:
    """The nearest in-sync replica by rack path (module docstring)."""

    name = "multi-level"

    def select(self, partition: PartitionView, client: ClientMetadata) -> int:
        client_path = rack_components(client.rack_id)
        leader_id = partition.leader.broker_id
        if not client_path:
            return leader_id
        candidates = [r for r in partition.replicas if r.is_in_sync or r.broker_id == leader_id]
        scored = [(shared_prefix(rack_components(r.rack), client_path), r) for r in candidates]
        best = max(score for score, _ in scored)
        if best == 0:
            return leader_id
        nearest = [r for score, r in scored if score == best]
        return min(
            nearest,
            key=lambda r: (
                r.broker_id != leader_id,
                -r.log_end_offset,
                -r.last_caught_up_ms,
                r.broker_id,
            ),
        ).broker_id


class SelectorPluginException(RackwiseError):
    """A ``replica.selector.class`` that cannot be loaded."""


BUILT_IN: Final[dict[str, type[ReplicaSelector]]] = {
    "leader": LeaderSelector,
    "org.apache.kafka.common.replica.LeaderSelector": LeaderSelector,
    "rack-aware": RackAwareReplicaSelector,
    "org.apache.kafka.common.replica.RackAwareReplicaSelector": RackAwareReplicaSelector,
    "multi-level": MultiLevelReplicaSelector,
}
DEFAULT_SELECTOR: Final = "org.apache.kafka.common.replica.LeaderSelector"
_CANNOT_LOAD: Final = (
    "Invalid value {path} for configuration replica.selector.class: cannot load it: {error}"
)
_MESSAGES: Final = PluginMessages(
    not_imported=_CANNOT_LOAD,
    no_class=_CANNOT_LOAD,
    not_constructed=_CANNOT_LOAD,
    no_method="Invalid value {path} for configuration replica.selector.class: "
    "{cls} has no select(partition, client) method",
)


def load_selector(name: str) -> ReplicaSelector:
    """The selector ``replica.selector.class`` names: a built-in (Kafka's class name or the
    short name) or a plug-in ``package.module:Class`` constructed without arguments."""
    text = name.strip()
    built_in = BUILT_IN.get(text)
    if built_in is not None:
        return built_in()
    module_name, sep, class_name = text.partition(":")
    if not sep or not module_name or not class_name:
        raise SelectorPluginException(
            f"Invalid value {name} for configuration replica.selector.class: expected one of "
            f"{', '.join(sorted(BUILT_IN))} or package.module:Class"
        )
    selector: ReplicaSelector = load_plugin(
        text,
        method="select",
        messages=_MESSAGES,
        error=SelectorPluginException,
        classes_only=False,
        shown=name,
    )
    return selector
