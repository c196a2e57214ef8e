"""What ``kafka-reassign-partitions.sh`` reads and prints, pure (Kafka's
``ReassignPartitionsCommand``): its reading of the two JSON files with its own checks and
messages, the replication throttles it computes, the states of partitions and replica moves,
and its lines.

Goals
    A script written against Kafka's tool reads ``rackwise reassign`` unchanged: the same
    lines, in the same order, and the same refusals, so a plan made by either tool runs on the
    other.

Constraints
    * The files are read as Kafka's tool reads them (a missing ``version`` is 1, a missing
      ``partitions`` or ``topics`` list is empty, ``log_dirs`` optional), then Kafka's checks
      run in its order and with its words (:class:`ReassignFailure`). What Kafka leaves to the
      cluster (a negative partition, a relative directory) is refused next by
      :func:`rackwise.formats.reassignment.parse_reassignment`'s checks, which name the field.
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

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from rackwise.common import RackwiseError, TopicPartition
from rackwise.common.java import java_hashmap_order, java_string_hash, java_string_key
from rackwise.formats.reassignment import (
    ANY_LOG_DIR,
    Reassignment,
    format_reassignment,
    parse_reassignment,
)
from rackwise.formats.reassignment import PartitionReassignment as Entry

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


def _duplicates(values: Sequence[int]) -> list[int]:
    return int_set(v for i, v in enumerate(values) if v in values[:i])


def _java_list(values: Iterable[object]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


# ---- the files ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Targets:
    """A reassignment file as Kafka reads it: each partition's target replicas in file order
    (repeats kept, to be checked) and the replicas given an absolute directory."""

    partitions: tuple[tuple[TopicPartition, tuple[int, ...]], ...]
    log_dirs: Mapping[Replica, str]


def _load(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ReassignFailure(f"{e.msg} at line {e.lineno} column {e.colno}") from None


def _version(root: object, what: str) -> None:
    if not isinstance(root, dict):
        raise ReassignFailure(f"Expected JSON object, received {_kind(root)}")
    version = root.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise ReassignFailure(f"Not supported version field value {version}")
    if not isinstance(root.get(what, []), list):
        raise ReassignFailure(f"Expected JSON array, received {_kind(root[what])}")


def _kind(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, int | float) else "null"
    )


def parse_targets(text: str) -> Targets:
    """Kafka's ``parsePartitionReassignmentData``: the file read, each replica list paired with
    its directories (``Size of replicas list ... is different from size of log dirs list``),
    then every entry checked by the format's own rules."""
    root = _load(text)
    _version(root, "partitions")
    assert isinstance(root, dict)
    partitions: list[tuple[TopicPartition, tuple[int, ...]]] = []
    log_dirs: dict[Replica, str] = {}
    for item in root.get("partitions", []):
        if not isinstance(item, dict) or not {"topic", "partition", "replicas"} <= item.keys():
            missing = next(
                k
                for k in ("topic", "partition", "replicas")
                if not isinstance(item, dict) or k not in item
            )
            raise ReassignFailure(f"No such field exists: `{missing}`")
        tp = TopicPartition(str(item["topic"]), _int(item["partition"]))
        replicas = tuple(_int(r) for r in _array(item["replicas"]))
        dirs = [str(d) for d in _array(item.get("log_dirs", [ANY_LOG_DIR] * len(replicas)))]
        if len(dirs) != len(replicas):
            raise ReassignFailure(
                f"Size of replicas list {_java_list(replicas)} is different from size of log "
                f"dirs list {_java_list(dirs)} for partition {tp}"
            )
        partitions.append((tp, replicas))
        for broker, log_dir in zip(replicas, dirs, strict=True):
            if log_dir != ANY_LOG_DIR:
                log_dirs[Replica.of(tp.topic, tp.partition, broker)] = log_dir
    return Targets(tuple(partitions), log_dirs)


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReassignFailure(f"Expected `int` value, received {_kind(value)}")
    return value


def _array(value: object) -> list[object]:
    if not isinstance(value, list):
        raise ReassignFailure(f"Expected JSON array, received {_kind(value)}")
    return value


def parse_execute(text: str) -> Targets:
    """Kafka's ``parseExecuteAssignmentArgs``: :func:`parse_targets`, then its refusals of an
    empty list, an empty replica list, a partition given twice and a broker given twice in one
    list, then the format's own checks of every entry (non-negative ids, absolute paths)."""
    targets = parse_targets(text)
    parts = targets.partitions
    if not parts:
        raise ReassignFailure("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise ReassignFailure("Partition replica list cannot be empty")
    tps = [tp for tp, _ in parts]
    repeated = java_hashmap_order(
        list(dict.fromkeys(tp for i, tp in enumerate(tps) if tp in tps[:i])), tp_hash, exact=False
    )
    if repeated:
        raise ReassignFailure(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(str(tp) for tp in repeated)
        )
    duplicated = [(tp, _duplicates(replicas)) for tp, replicas in parts if _duplicates(replicas)]
    if duplicated:
        detail = ". ".join(
            f"{tp} contains multiple entries for {','.join(map(str, d))}" for tp, d in duplicated
        )
        raise ReassignFailure(
            f"Partition replica lists may not contain duplicate entries: {detail}"
        )
    try:
        parse_reassignment(text)
    except ValueError as e:
        raise ReassignFailure(str(e)) from None
    return targets


def parse_generate(text: str, broker_list: str) -> tuple[list[int], list[str]]:
    """Kafka's ``parseGenerateAssignmentArgs``: the brokers of ``--broker-list`` and the topics
    of ``--topics-to-move-json-file``, each without repeats."""
    brokers = []
    for part in broker_list.split(","):
        try:
            brokers.append(parse_java_int(part))
        except ValueError:
            raise ReassignFailure(f'For input string: "{part}"') from None
    repeated = _duplicates(brokers)
    if repeated:
        raise ReassignFailure(f"Broker list contains duplicate entries: {_java_list(repeated)}")
    root = _load(text)
    _version(root, "topics")
    assert isinstance(root, dict)
    topics = []
    for item in root.get("topics", []):
        if not isinstance(item, dict) or "topic" not in item:
            raise ReassignFailure("No such field exists: `topic`")
        if not isinstance(item["topic"], str):
            raise ReassignFailure(f"Expected `String` value, received {_kind(item['topic'])}")
        topics.append(item["topic"])
    twice = string_set(t for i, t in enumerate(topics) if t in topics[:i])
    if twice:
        raise ReassignFailure(
            f"List of topics to reassign contains duplicate entries: {_java_list(twice)}"
        )
    return brokers, topics


def parse_java_int(text: str) -> int:
    """Java's ``Integer.parseInt``: an optional sign and ASCII digits, within 32 bits."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise ValueError(text)
    value = int(text)
    if not -(2**31) <= value < 2**31:
        raise ValueError(text)
    return value


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
