"""The five actions of ``kafka-reassign-partitions.sh`` (Kafka's ``ReassignPartitionsCommand``)
over :mod:`rackwise.client.reassign`: ``--generate``, ``--execute``, ``--verify``, ``--cancel``
and ``--list``, each printing what Kafka's tool prints, in its order.

Constraints
    * Each action takes the open connections, its inputs and ``out`` (one call per line, or
      per block of lines, as the tool prints them). A failure raises
      :class:`~rackwise.client.reassign_text.ReassignFailure` carrying Kafka's text: a failed
      admin call as its ``ExecutionException`` prints (``org.apache.kafka.common.errors.
      UnknownTopicOrPartitionException: Topic quux not found.``).
    * ``--generate`` asks the cluster's own placer (KIP-879's CreateReplicaPlacement, one
      request per topic, ``forceSimplePlacement`` for ``--disable-rack-aware``); only a cluster
      that does not serve it (no CreateReplicaPlacement in its ApiVersions: Apache Kafka) gets
      the assignment computed here, by Kafka's own rack-aware algorithm
      (:class:`~rackwise.placement.RackAwareReplicaPlacer`) with a random start, as Kafka's tool
      computes it.
    * ``--verify`` clears the throttles once no reassignment is in flight in the cluster and
      every replica move of the file is done, on every live broker and every broker of the
      file, as Kafka's tool does (it cannot know which brokers were sources).

Worked example
    ``await execute(connections, text, out)`` for a file moving ``foo-0`` to brokers 1, 2, 4
    prints the current assignment (``Current partition replica assignment``, the JSON, ``Save
    this to use as the --reassignment-json-file option during rollback``) then ``Successfully
    started partition reassignment for foo-0``; ``await verify(...)`` later prints ``Status of
    partition reassignment:``, ``Reassignment of partition foo-0 is completed.``, an empty line
    (no replica moves) and the two ``Clearing ... throttles`` lines.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

from rackwise.client import reassign as calls
from rackwise.client.connections import Connections
from rackwise.client.group_values import GroupsError
from rackwise.client.reassign_files import Targets, parse_execute, parse_generate, parse_targets
from rackwise.client.reassign_text import (
    CANNOT_EXECUTE,
    NO_ACTIVE_MOVES,
    NO_ACTIVE_REASSIGNMENTS,
    RUN_VERIFY_WARNING,
    MoveState,
    PartitionState,
    ReassignFailure,
    Replica,
    clearing_lines,
    current_assignment_text,
    errors_text,
    generate_text,
    int_set,
    list_text,
    move_started_line,
    move_state,
    move_states_text,
    moves_timed_out_text,
    partition_states_text,
    started_text,
    throttle_configs,
    tp_key,
)
from rackwise.common import JavaRandom, RackwiseError, TopicPartition
from rackwise.common.error_codes import UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION
from rackwise.placement import BrokerInfo, ClusterView, PlacementSpec, RackAwareReplicaPlacer
from rackwise.protocol import ApiKey


class Out(Protocol):
    """Where the lines go: ``print`` to stdout, flushed."""

    def __call__(self, text: str, /, *, end: str = "\n") -> None: ...


NOT_ALL_RACKS = (
    "Not all brokers have rack information. Add --disable-rack-aware in command line to make "
    "replica assignment without rack information."
)


DEFAULT_REQUEST_TIMEOUT_MS: Final = 30_000


def _failed(error: calls.ReassignError) -> ReassignFailure:
    return ReassignFailure(error.java_text)


# ---- --generate --------------------------------------------------------------------------------


async def generate(
    connections: Connections, topics_text: str, broker_list: str, out: Out, *, rack_aware: bool
) -> dict[TopicPartition, tuple[int, ...]]:
    """``--generate``: the current and the proposed assignment of the topics over the brokers
    of ``--broker-list``; the proposed one."""
    broker_ids, topics = parse_generate(topics_text, broker_list)
    try:
        current = await calls.topic_replicas(connections, topics)
        proposed = await _place_in_cluster(connections, current, broker_ids, rack_aware)
        if proposed is None:
            cluster = await calls.brokers(connections)
            proposed = _place_here(current, cluster, broker_ids, rack_aware)
    except calls.ReassignError as e:
        raise _failed(e) from None
    out(generate_text(current, proposed))
    return proposed


def _by_topic(current: Mapping[TopicPartition, Sequence[int]]) -> dict[str, tuple[int, int]]:
    """Each topic's partition count and replication factor (of its partition 0)."""
    counts: dict[str, int] = {}
    for tp in current:
        counts[tp.topic] = counts.get(tp.topic, 0) + 1
    return {t: (n, len(current.get(TopicPartition(t, 0), ()))) for t, n in counts.items()}


async def _place_in_cluster(
    connections: Connections,
    current: Mapping[TopicPartition, Sequence[int]],
    broker_ids: Sequence[int],
    rack_aware: bool,
) -> dict[TopicPartition, tuple[int, ...]] | None:
    """The cluster's placer's answer for every topic, or None when it does not serve
    CreateReplicaPlacement."""
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    for topic, (partitions, factor) in _by_topic(current).items():
        values = {"num_partitions": partitions, "replication_factor": factor,
                  "force_simple_placement": not rack_aware, "node_id": list(broker_ids),
                  "timeout_ms": calls.DEFAULT_TIMEOUT_MS}  # fmt: skip
        try:
            response = await connections.send(None, ApiKey.CREATE_REPLICA_PLACEMENT, values)
        except GroupsError as e:
            if e.code == UNSUPPORTED_VERSION:
                return None
            raise calls.ReassignError(e.code, str(e)) from None
        code = int(response.error_code)
        if code:
            raise calls.ReassignError(code, response.error_message)
        for p in response.replica_placement:
            proposed[TopicPartition(topic, int(p.partition_id))] = tuple(int(r) for r in p.replicas)
    return proposed


def _place_here(
    current: Mapping[TopicPartition, Sequence[int]],
    cluster: Sequence[calls.Broker],
    broker_ids: Sequence[int],
    rack_aware: bool,
) -> dict[TopicPartition, tuple[int, ...]]:
    """Kafka's tool's own assignment: the brokers of the list that are live, with their racks
    (all or none), placed by ``AdminUtils.assignReplicasToBrokers`` from a random start."""
    wanted = set(broker_ids)
    brokers = [BrokerInfo(b.id, b.rack if rack_aware else None) for b in cluster if b.id in wanted]
    rackless = sum(1 for b in brokers if b.rack is None)
    if rack_aware and rackless not in (0, len(brokers)):
        raise ReassignFailure(NOT_ALL_RACKS)
    placer = RackAwareReplicaPlacer(JavaRandom(random.getrandbits(48)))
    proposed: dict[TopicPartition, tuple[int, ...]] = {}
    for topic, (partitions, factor) in _by_topic(current).items():
        try:
            placed = placer.place(PlacementSpec(partitions, factor), ClusterView(brokers))
        except RackwiseError as e:
            raise ReassignFailure(str(e)) from None
        for partition, replicas in enumerate(placed):
            proposed[TopicPartition(topic, partition)] = tuple(replicas)
    return proposed


# ---- --execute ---------------------------------------------------------------------------------


async def execute(
    connections: Connections,
    text: str,
    out: Out,
    *,
    additional: bool = False,
    throttle: int = -1,
    log_dir_throttle: int = -1,
    timeout_ms: int = 10_000,
) -> None:
    """``--execute``: check, print the current assignment, set the throttles, start the
    reassignments, then start the moves between directories."""
    targets = parse_execute(text)
    proposed = dict(targets.partitions)
    try:
        ongoing = await calls.list_reassignments(connections)
        if not additional and ongoing:
            raise ReassignFailure(CANNOT_EXECUTE, terse=True)
        live = {b.id for b in await calls.brokers(connections)}
        unknown = [b for b in int_set(r for rs in proposed.values() for r in rs) if b not in live]
        if unknown:
            raise ReassignFailure(f"Unknown broker id {unknown[0]}")
        current = await _current_replicas(connections, proposed)
        out(current_assignment_text(proposed, current))
        if throttle >= 0 or log_dir_throttle >= 0:
            out(RUN_VERIFY_WARNING)
            if throttle >= 0:
                throttles = throttle_configs(current, proposed, ongoing)
                await calls.set_throttles(connections, throttles, rate=throttle)
                out(f"The inter-broker throttle limit was set to {throttle} B/s")
            if log_dir_throttle >= 0:
                brokers = {r.broker for r in targets.log_dirs}
                await calls.set_throttles(
                    connections, log_dir_rate=log_dir_throttle, log_dir_brokers=brokers
                )
                out(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
        errors = await calls.alter_reassignments(connections, proposed)
    except calls.ReassignError as e:
        raise _failed(e) from None
    if errors:
        messages = {tp: str(e) for tp, e in errors.items()}
        raise ReassignFailure(errors_text("Error reassigning partition(s):", messages), terse=True)
    out(started_text(proposed))
    if targets.log_dirs:
        await _move(connections, targets.log_dirs, timeout_ms, out)


async def _current_replicas(
    connections: Connections, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, tuple[int, ...]]:
    """Kafka's ``getReplicaAssignmentForPartitions``."""
    wanted = set(partitions)
    found = await calls.topic_replicas(connections, sorted({tp.topic for tp in wanted}))
    current = {tp: r for tp, r in found.items() if tp in wanted}
    missing = [tp for tp in wanted if tp not in current]
    if missing:
        raise calls.ReassignError(
            UNKNOWN_TOPIC_OR_PARTITION,
            "Unable to find partition: " + ", ".join(str(tp) for tp in sorted(missing, key=tp_key)),
        )
    return current


async def _move(
    connections: Connections, moves: Mapping[Replica, str], timeout_ms: int, out: Out
) -> None:
    """Kafka's ``executeMoves``: AlterReplicaLogDirs retried until every move started."""

    def started(accepted: Mapping[Replica, str]) -> None:
        for replica in sorted(accepted):
            out(move_started_line(replica, accepted[replica]))

    try:
        pending = await calls.alter_replica_log_dirs(
            connections, moves, timeout_ms, on_started=started
        )
    except calls.LogDirMoveError as e:
        raise ReassignFailure(str(e)) from None
    except calls.ReassignError as e:
        raise _failed(e) from None
    if pending:
        raise ReassignFailure(moves_timed_out_text(pending), terse=True)


# ---- --verify, --cancel, --list ----------------------------------------------------------------


async def partition_states(
    connections: Connections, targets: Targets
) -> tuple[dict[TopicPartition, PartitionState], bool]:
    """Kafka's ``findPartitionReassignmentStates``: each partition's state, and whether any
    reassignment is in flight in the cluster."""
    ongoing = await calls.list_reassignments(connections)
    states: dict[TopicPartition, PartitionState] = {}
    rest = [(tp, target) for tp, target in targets.partitions if tp not in ongoing]
    found: dict[TopicPartition, tuple[int, ...]] = {}
    for topic in sorted({tp.topic for tp, _ in rest}):
        try:
            found.update(await calls.topic_replicas(connections, [topic]))
        except calls.ReassignError as e:
            if e.code != UNKNOWN_TOPIC_OR_PARTITION:
                raise
    for tp, target in targets.partitions:
        if tp in ongoing:
            states[tp] = PartitionState(ongoing[tp].replicas, target, False)
        else:
            states[tp] = PartitionState(found.get(tp, ()), target, True)
    return states, bool(ongoing)


async def move_states(
    connections: Connections, targets: Mapping[Replica, str]
) -> dict[Replica, MoveState]:
    """Kafka's ``findLogDirMoveStates``."""
    dirs = await calls.describe_replica_log_dirs(connections, targets)
    states = {}
    for replica, target in targets.items():
        info = dirs.get(replica)
        current, future = (info.current, info.future) if info is not None else (None, None)
        states[replica] = move_state(target, current, future, found=info is not None)
    return states


async def _clear_all(connections: Connections, targets: Targets, out: Out) -> None:
    brokers = [b.id for b in await calls.brokers(connections)]
    brokers += [r for _, replicas in targets.partitions for r in replicas]
    topics = [tp.topic for tp, _ in targets.partitions]
    broker_line, topic_line = clearing_lines(brokers, topics)
    out(broker_line)
    await calls.clear_throttles(connections, [], int_set(brokers))
    out(topic_line)
    await calls.clear_throttles(connections, list(dict.fromkeys(topics)), [])


async def verify(
    connections: Connections, text: str, out: Out, *, preserve_throttles: bool = False
) -> bool:
    """``--verify``: the states; the throttles cleared once all is done. True when done."""
    targets = parse_targets(text)
    try:
        states, parts_ongoing = await partition_states(connections, targets)
        out(partition_states_text(states))
        moves = await move_states(connections, targets.log_dirs)
        out(move_states_text(moves))
        moves_ongoing = not all(s.done for s in moves.values())
        if not parts_ongoing and not moves_ongoing and not preserve_throttles:
            await _clear_all(connections, targets, out)
    except calls.ReassignError as e:
        raise _failed(e) from None
    return not parts_ongoing and not moves_ongoing


async def cancel(
    connections: Connections,
    text: str,
    out: Out,
    *,
    preserve_throttles: bool = False,
    timeout_ms: int = 10_000,
) -> None:
    """``--cancel``: cancel the file's reassignments in flight, move back the replicas moving
    between directories, clear the throttles."""
    targets = parse_targets(text)
    try:
        ongoing = await calls.list_reassignments(connections, [tp for tp, _ in targets.partitions])
        # Kafka's Scala tool's test (KAFKA-8820): a replica being added or removed. Its Java
        # port lost the negation of the first half and skips a reassignment that only adds.
        cancelling = sorted((tp for tp, r in ongoing.items() if r.adding or r.removing), key=tp_key)
        if cancelling:
            errors = await calls.alter_reassignments(connections, dict.fromkeys(cancelling))
            if errors:
                plural = "" if len(errors) == 1 else "s"
                messages = {tp: str(e) for tp, e in errors.items()}
                heading = f"Error cancelling partition reassignment{plural} for:"
                raise ReassignFailure(errors_text(heading, messages), terse=True)
            plural = "" if len(cancelling) == 1 else "s"
            out(
                f"Successfully cancelled partition reassignment{plural} for: "
                + ",".join(map(str, cancelling))
            )
        else:
            out(NO_ACTIVE_REASSIGNMENTS)
        states = await move_states(connections, targets.log_dirs)
        moving = {r: s.current for r, s in states.items() if s.kind == "active" and s.current}
        if not moving:
            out(NO_ACTIVE_MOVES, end="")  # Kafka's tool ends this one without a newline
        else:
            await _move(connections, moving, timeout_ms, out)
        if not preserve_throttles:
            await _clear_all(connections, targets, out)
    except calls.ReassignError as e:
        raise _failed(e) from None


async def list_active(connections: Connections, out: Out) -> None:
    """``--list``."""
    try:
        out(list_text(await calls.list_reassignments(connections)))
    except calls.ReassignError as e:
        raise _failed(e) from None
