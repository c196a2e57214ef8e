"""Choosing a placer by name, loading plug-ins, and checking what a plug-in returns.

``broker.replica.placer`` (KIP-879) names the placer: one of the built-in names or a class as
``package.module:ClassName``. A plug-in is any class whose instances have
``place(spec, cluster, broker_ids=None)``; it may return None to defer to Kafka's rack-unaware
placement. Its answer is checked before anyone sees it: the right number of partitions and of
replicas, only candidate brokers, no broker twice in a partition, and existing replicas kept.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from rackwise.common import PlacerPluginException, RandomSource
from rackwise.common.plugins import PluginMessages, load_plugin
from rackwise.placement.admin import RackAwareReplicaPlacer, RackUnawareReplicaPlacer
from rackwise.placement.model import ClusterView, PlacementSpec, ReplicaPlacer
from rackwise.placement.multilevel import MultiLevelReplicaPlacer
from rackwise.placement.striped import StripedReplicaPlacer

REPLICA_PLACER_CONFIG: Final = "broker.replica.placer"
DEFAULT_REPLICA_PLACER: Final = "striped"
"""Kafka's KRaft controller places with the striped placer."""

BUILT_IN: Final[dict[str, Callable[[RandomSource | None], ReplicaPlacer]]] = {
    RackUnawareReplicaPlacer.name: RackUnawareReplicaPlacer,
    RackAwareReplicaPlacer.name: RackAwareReplicaPlacer,
    StripedReplicaPlacer.name: StripedReplicaPlacer,
    MultiLevelReplicaPlacer.name: MultiLevelReplicaPlacer,
}


def create_placer(name_or_path: str, *, random: RandomSource | None = None) -> ReplicaPlacer:
    """The placer named by ``name_or_path``: a built-in name or ``package.module:ClassName``.

    ``random`` is the placer's source of random draws (a :class:`rackwise.common.JavaRandom`
    reproduces Kafka exactly); built-in placers default to ``JavaRandom(0)``. A plug-in class is
    constructed with ``random=`` if its constructor takes it, else with no arguments.
    """
    if name_or_path in BUILT_IN:
        return BUILT_IN[name_or_path](random)
    if ":" not in name_or_path:
        known = ", ".join(sorted(BUILT_IN))
        raise PlacerPluginException(
            f"Unknown replica placer {name_or_path!r}: expected one of {known} "
            "or a plug-in class as package.module:ClassName"
        )
    return CheckedPlacer(_load(name_or_path, random), name_or_path, random)


_MESSAGES: Final = PluginMessages(
    not_imported="Replica placer plug-in {path!r} cannot be imported: {error}",
    no_class="Replica placer plug-in {path!r}: module {module!r} has no class {cls!r}",
    not_constructed="Replica placer plug-in {path!r} cannot be constructed: {error}",
    no_method="Replica placer plug-in {path!r} has no place method",
)


def _load(path: str, random: RandomSource | None) -> Any:
    return load_plugin(
        path,
        method="place",
        messages=_MESSAGES,
        error=PlacerPluginException,
        construct=lambda cls: _construct(cls, random),
    )


def _construct(cls: Any, random: RandomSource | None) -> Any:
    """``cls(random=random)``, or ``cls()`` when its constructor does not take ``random``."""
    try:
        return cls(random=random)
    except TypeError:
        return cls()


class CheckedPlacer(ReplicaPlacer):
    """A plug-in behind the checks; None from the plug-in defers to ``rack-unaware``."""

    name = "plug-in"

    def __init__(self, plugin: Any, path: str, random: RandomSource | None) -> None:
        self.plugin = plugin
        self.path = path
        self._fallback = RackUnawareReplicaPlacer(random)

    def place(
        self,
        spec: PlacementSpec,
        cluster: ClusterView,
        broker_ids: Sequence[int] | None = None,
    ) -> list[list[int]]:
        candidates = [b.id for b in cluster.select(broker_ids)]
        try:
            answer = self.plugin.place(spec, cluster, broker_ids)
        except PlacerPluginException:
            raise
        except Exception as e:
            raise PlacerPluginException(
                f"Replica placer plug-in {self.path!r} failed: {type(e).__name__}: {e}"
            ) from e
        if answer is None:
            return self._fallback.place(spec, cluster, broker_ids)
        return check_placement(answer, spec, cluster, candidates, self.path)


def check_placement(
    answer: Any,
    spec: PlacementSpec,
    cluster: ClusterView,
    candidates: Sequence[int],
    who: str,
) -> list[list[int]]:
    """``answer`` as replica lists, or an error that says which partition is wrong and why."""
    rows = list(answer)
    if len(rows) != spec.num_partitions:
        raise PlacerPluginException(
            f"Replica placer {who!r} returned {len(rows)} partitions, "
            f"expected {spec.num_partitions}"
        )
    allowed = set(candidates)
    existing = cluster.topic_assignment(spec.topic)
    out: list[list[int]] = []
    for offset, row in enumerate(rows):
        pid = spec.first_partition + offset
        replicas = [int(r) for r in row]
        problem = _row_problem(replicas, spec.replication_factor, allowed, existing.get(pid, ()))
        if problem:
            raise PlacerPluginException(f"Replica placer {who!r}: partition {pid} {problem}")
        out.append(replicas)
    return out


def _row_problem(replicas: list[int], rf: int, allowed: set[int], existing: Sequence[int]) -> str:
    if len(replicas) != rf:
        return f"has {len(replicas)} replicas {replicas}, expected {rf}"
    for broker in replicas:
        if broker not in allowed:
            return f"uses broker {broker}, which is not a candidate broker"
    if len(set(replicas)) != len(replicas):
        twice = next(b for b in replicas if replicas.count(b) > 1)
        return f"places broker {twice} twice in {replicas}"
    if replicas[: len(existing)] != list(existing):
        return f"moves existing replicas {list(existing)} (got {replicas})"
    return ""
