"""What ``kafka-reassign-partitions.sh`` prints and computes, pure (Kafka's
``ReassignPartitionsCommand``): its failures, the replication throttles it computes, the states
of partitions and replica moves, and its lines (its files are
:mod:`rackwise.client.reassign_files`'s).

Goals
    A script written against Kafka's tool reads ``rackwise reassign`` unchanged: the same
    lines, in the same order, and the same refusals, so a plan made by either tool runs on the
    other.

Constraints
    * Lists are ordered as Kafka orders them: partitions by topic (Java ``String.compareTo``)
      then partition, replicas by broker, then topic, then partition; a throttle list is a
      ``TreeSet`` of ``partition:broker`` strings, so ``10:1`` sorts before ``2:1``.
    * A set Kafka prints from a ``HashSet`` (the brokers and topics whose throttles are
      cleared, the duplicates of a list) is printed in that set's iteration order.

Worked example
    Partition ``foo-0`` on brokers 1, 2, 3 moving to 1, 2, 4: :func:`throttle_configs` gives
    ``leader.replication.throttled.replicas`` ``0:1,0:2,0:3`` and
    ``follower.replication.throttled.replicas`` ``0:4`` for topic ``foo``, and the rates go on
    brokers 1, 2, 3 and 4; once it is done, :func:`partition_states_text` prints ``Status of
    partition reassignment:`` and ``Reassignment of partition foo-0 is completed.``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from rackwise.common import RackwiseError, TopicPartition
from rackwise.common.java import java_hashmap_order, java_string_hash, java_string_key
from rackwise.formats.reassignment import PartitionReassignment as Entry
from rackwise.formats.reassignment import Reassignment, format_reassignment

LEADER_RATE: Final = "leader.replication.throttled.rate"
FOLLOWER_RATE: Final = "follower.replication.throttled.rate"
LOG_DIR_RATE: Final = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS: Final = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS: Final = "follower.replication.throttled.replicas"
BROKER_THROTTLES: Final = (LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE)
TOPIC_THROTTLES: Final = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

CANNOT_EXECUTE: Final = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. The "
    "--additional flag can also be used to change the throttle by resubmitting the current "
    "reassignment."
)
RUN_VERIFY_WARNING: Final = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure "
    "the throttle is removed."
)
NO_ACTIVE_REASSIGNMENTS: Final = "None of the specified partition reassignments are active."
NO_ACTIVE_MOVES: Final = "None of the specified partition moves are active."
ERRORS: Final = "org.apache.kafka.common.errors."


class ReassignFailure(RackwiseError):
    """The tool stops: ``text`` is what Kafka's tool prints (on stdout), ``terse`` whether it
    prints it alone (its ``TerseException``) or after ``Error: `` (any other failure)."""

    def __init__(self, text: str, *, terse: bool = False) -> None:
        super().__init__(text)
        self.text = text
        self.terse = terse

    @property
    def printed(self) -> str:
        return self.text if self.terse else f"Error: {self.text}"


@dataclass(frozen=True, slots=True, order=True)
class Replica:
    """Kafka's ``TopicPartitionReplica``, ordered as the tool sorts them (broker first)."""

    broker: int
    topic_key: bytes = field(repr=False, compare=True)
    partition: int
    topic: str = field(compare=False)

    @classmethod
    def of(cls, topic: str, partition: int, broker: int) -> Replica:
        return cls(broker, java_string_key(topic), partition, topic)

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}-{self.broker}"


def tp_key(tp: TopicPartition) -> tuple[bytes, int]:
    """Kafka's ``compareTopicPartitions``."""
    return java_string_key(tp.topic), tp.partition


def tp_hash(tp: TopicPartition) -> int:
    """``TopicPartition.hashCode()`` as a signed 32-bit int."""
    h = (31 * (31 + tp.partition) + java_string_hash(tp.topic)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def int_set(values: Iterable[int]) -> list[int]:
    """A ``HashSet<Integer>`` of ``values`` in its iteration order."""
    return java_hashmap_order(list(dict.fromkeys(values)), lambda i: i, exact=False)


def string_set(values: Iterable[str]) -> list[str]:
    """A ``HashSet<String>`` of ``values`` in its iteration order."""
    return java_hashmap_order(list(dict.fromkeys(values)), java_string_hash, exact=False)


def duplicates(values: Sequence[int]) -> list[int]:
    return int_set(v for i, v in enumerate(values) if v in values[:i])


def java_list(values: Iterable[object]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


# ---- the lines ---------------------------------------------------------------------------------


def reassignment_json(parts: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's ``formatAsReassignmentJson`` without directories."""
    return format_reassignment(
        Reassignment(tuple(Entry(tp.topic, tp.partition, tuple(r)) for tp, r in parts.items()))
    )


def current_assignment_text(
    proposed: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
) -> str:
    """What ``--execute`` prints first: the current replicas of the partitions to move."""
    moving = {tp: r for tp, r in current.items() if tp in proposed}
    return (
        f"Current partition replica assignment\n\n{reassignment_json(moving)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback"
    )


def generate_text(
    current: Mapping[TopicPartition, Sequence[int]],
    proposed: Mapping[TopicPartition, Sequence[int]],
) -> str:
    """``--generate``'s two sections."""
    return (
        f"Current partition replica assignment\n{reassignment_json(current)}\n\n"
        f"Proposed partition reassignment configuration\n{reassignment_json(proposed)}"
    )


def started_text(parts: Iterable[TopicPartition]) -> str:
    ordered = sorted(parts, key=tp_key)
    plural = "" if len(ordered) == 1 else "s"
    return f"Successfully started partition reassignment{plural} for " + ",".join(map(str, ordered))


def errors_text(heading: str, errors: Mapping[TopicPartition, str]) -> str:
    """``Error reassigning partition(s):`` and one ``foo-0: message`` line per partition."""
    return heading + "\n" + "\n".join(f"{tp}: {errors[tp]}" for tp in sorted(errors, key=tp_key))


def move_started_line(replica: Replica, log_dir: str) -> str:
    return (
        f"Successfully started moving log directory to {log_dir} for replica "
        f"{replica.topic}-{replica.partition} with broker {replica.broker} "
    )


def moves_timed_out_text(pending: Iterable[Replica]) -> str:
    ordered = sorted(pending)
    plural = "" if len(ordered) == 1 else "s"
    return f"Timed out before log directory move{plural} could be started for: " + ",".join(
        map(str, ordered)
    )


@dataclass(frozen=True, slots=True)
class OngoingReassignment:
    """A reassignment in flight, as ListPartitionReassignments gives it (Kafka's admin
    ``PartitionReassignment``): every replica, those being added and those being removed."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


def list_text(ongoing: Mapping[TopicPartition, OngoingReassignment]) -> str:
    """``--list``: ``Current partition reassignments:`` and one line per partition."""
    lines = []
    for tp in sorted(ongoing, key=tp_key):
        r = ongoing[tp]
        line = f"{tp}: replicas: {','.join(map(str, r.replicas))}."
        if r.adding:
            line += f" adding: {','.join(map(str, r.adding))}."
        if r.removing:
            line += f" removing: {','.join(map(str, r.removing))}."
        lines.append(line)
    if not lines:
        return "No partition reassignments found."
    return "Current partition reassignments:\n" + "\n".join(lines)


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Kafka's ``PartitionReassignmentState``."""

    current: tuple[int, ...]
    target: tuple[int, ...]
    done: bool


def partition_states_text(states: Mapping[TopicPartition, PartitionState]) -> str:
    lines = ["Status of partition reassignment:"]
    for tp in sorted(states, key=tp_key):
        state = states[tp]
        if not state.done:
            lines.append(f"Reassignment of partition {tp} is still in progress.")
        elif state.current == state.target:
            lines.append(f"Reassignment of partition {tp} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp}, but replica set is "
                f"{','.join(map(str, state.current))} rather than "
                f"{','.join(map(str, state.target))}."
            )
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class MoveState:
    """Kafka's ``LogDirMoveState``: ``kind`` is ``missing-replica`` (the broker does not
    answer for it), ``missing-log-dir`` (in no live directory), ``active`` (a future replica
    in ``future``), ``cancelled`` (in ``current``, not the target, no move) or ``completed``."""

    kind: str
    target: str
    current: str | None = None
    future: str | None = None

    @property
    def done(self) -> bool:
        return self.kind != "active"


def move_state(target: str, current: str | None, future: str | None, *, found: bool) -> MoveState:
    """Kafka's ``findLogDirMoveStates`` for one replica."""
    if not found:
        return MoveState("missing-replica", target)
    if current is None:
        return MoveState("missing-log-dir", target)
    if future is None:
        kind = "completed" if current == target else "cancelled"
        return MoveState(kind, target, current)
    return MoveState("active", target, current, future)


def move_states_text(states: Mapping[Replica, MoveState]) -> str:
    lines = []
    for r in sorted(states):
        s, p = states[r], f"Partition {r.topic}-{r.partition}"
        if s.kind == "missing-log-dir":
            lines.append(
                f"{p} is not found in any live log dir on broker {r.broker}. There is likely an "
                "offline log directory on the broker."
            )
        elif s.kind == "missing-replica":
            lines.append(f"{p} cannot be found in any live log directory on broker {r.broker}.")
        elif s.kind == "active" and s.future == s.target:
            lines.append(f"Reassignment of replica {r} is still in progress.")
        elif s.kind == "active":
            lines.append(
                f"{p} on broker {r.broker} is being moved to log dir {s.future} instead of "
                f"{s.target}."
            )
        elif s.kind == "cancelled":
            lines.append(
                f"{p} on broker {r.broker} is not being moved from log dir {s.current} to "
                f"{s.target}."
            )
        else:
            lines.append(f"Reassignment of replica {r} completed successfully.")
    return "\n".join(lines)


def clearing_lines(brokers: Iterable[int], topics: Iterable[str]) -> list[str]:
    """The two lines of clearing the throttles, the sets in ``HashSet`` order."""
    b, t = int_set(brokers), string_set(topics)
    return [
        f"Clearing broker-level throttles on broker{'' if len(b) == 1 else 's'} "
        + ",".join(map(str, b)),
        f"Clearing topic-level throttles on topic{'' if len(t) == 1 else 's'} " + ",".join(t),
    ]


# ---- the throttles -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Move:
    """Kafka's ``PartitionMove``: the replicas a partition is copied from and to."""

    sources: frozenset[int]
    destinations: frozenset[int]


@dataclass(frozen=True, slots=True)
class ThrottleConfigs:
    """The throttles of a reassignment: each topic's ``leader.`` and
    ``follower.replication.throttled.replicas`` value, and the brokers whose rates are set."""

    leader: Mapping[str, str]
    follower: Mapping[str, str]
    brokers: frozenset[int]


def move_map(
    ongoing: Mapping[TopicPartition, OngoingReassignment],
    proposed: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
) -> dict[TopicPartition, Move]:
    """Kafka's ``calculateProposedMoveMap``: every reassignment in flight (sources: its replicas
    but the adding ones), then each proposed one, from the sources of the one in flight if any,
    else from its current replicas."""
    moves = {
        tp: Move(frozenset(r.replicas) - frozenset(r.adding), frozenset(r.adding))
        for tp, r in ongoing.items()
    }
    for tp, replicas in proposed.items():
        if tp in moves:
            sources = moves[tp].sources
        elif tp in current:
            sources = frozenset(current[tp])
        else:
            raise ReassignFailure(f"Trying to reassign a topic partition {tp} with 0 replicas")
        moves[tp] = Move(sources, frozenset(replicas) - sources)
    return moves


def throttle_configs(
    current: Mapping[TopicPartition, Sequence[int]],
    proposed: Mapping[TopicPartition, Sequence[int]],
    ongoing: Mapping[TopicPartition, OngoingReassignment] | None = None,
) -> ThrottleConfigs:
    """The throttled-replica lists as Kafka's tool computes them (``calculateLeaderThrottles``,
    ``calculateFollowerThrottles``): leaders on the sources (the current replicas), followers
    on the destinations that are not sources, each list sorted as strings; and the brokers
    involved (``calculateReassigningBrokers``). ``ongoing`` are the reassignments already in
    flight, whose partitions are throttled too."""
    moves = move_map(ongoing or {}, proposed, current)
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    for tp, move in moves.items():
        leader.setdefault(tp.topic, set()).update(f"{tp.partition}:{b}" for b in move.sources)
        follower.setdefault(tp.topic, set()).update(
            f"{tp.partition}:{b}" for b in move.destinations if b not in move.sources
        )
    brokers = frozenset().union(*(m.sources | m.destinations for m in moves.values()))
    return ThrottleConfigs(
        {t: ",".join(sorted(v)) for t, v in leader.items()},
        {t: ",".join(sorted(v)) for t, v in follower.items()},
        brokers,
    )
