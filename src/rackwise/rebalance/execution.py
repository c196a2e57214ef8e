"""Carrying a plan out, batch by batch, as a state machine driven by observations.

Each partition to move goes ``pending -> started -> in flight -> verified``, or ends ``refused``
(a safety rule it cannot pass, with the reason) or ``abandoned`` (its topic went away). The
driver calls :meth:`Execution.step` with each fresh :class:`ClusterState` and carries out the
:class:`Action` s it returns, in order; nothing here does I/O.

A step first reads what happened: a partition at its target with no reassignment in flight is
verified (one that got there without the executor, "already moved", too); a started move seen
in ListPartitionReassignments is in flight; a move whose new broker went down is cancelled and
waits for a new plan (:meth:`Execution.retarget`), as does, once, a move whose target broker is
not up when its batch would start; a started move that is neither in flight nor
done was cancelled from outside and goes back to pending, up to :data:`MAX_ATTEMPTS` times.
When the batch has nothing left running, the next one is chosen (:func:`~.batches.select`) from
the state as it is now, and its throttles, directory moves and reassignments are asked for; when
nothing is pending or running the throttles go (those of an earlier run that died too) and the
execution is done. Moves still held
then are refused with their last reason.

Resuming: an execution built from a state that has reassignments in flight adopts those whose
target is the plan's (and waits for the others to end before moving their partitions), so a
rerun after a crash never starts a move twice. :meth:`Execution.cancel` asks to cancel what is
in flight and to remove the throttles: Kafka's cancel puts each partition back on its original
replicas, and a reassignment that already ended stays on its target.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Final

from rackwise.common import TopicPartition
from rackwise.rebalance.batches import moves_for, select
from rackwise.rebalance.model import ClusterState, Limits, Move, Target, is_done
from rackwise.rebalance.safety import Hold

MAX_ATTEMPTS: Final = 3


class Phase(Enum):
    PENDING = "pending"
    STARTED = "started"
    IN_FLIGHT = "in flight"
    VERIFIED = "verified"
    REFUSED = "refused"
    ABANDONED = "abandoned"


RUNNING: Final = frozenset({Phase.STARTED, Phase.IN_FLIGHT})
ENDED: Final = frozenset({Phase.VERIFIED, Phase.REFUSED, Phase.ABANDONED})


@dataclass(frozen=True, slots=True)
class SetThrottles:
    """Throttle the replicas of ``moves`` (leaders on the current replicas, followers on the
    new ones), as Kafka's tool does for one reassignment."""

    moves: tuple[Move, ...]


@dataclass(frozen=True, slots=True)
class MoveDir:
    """AlterReplicaLogDirs: replica of ``partition`` on ``broker`` into ``path``."""

    partition: TopicPartition
    broker: int
    path: str


@dataclass(frozen=True, slots=True)
class Reassign:
    """AlterPartitionReassignments: ``partition`` onto ``replicas``."""

    partition: TopicPartition
    replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Cancel:
    """AlterPartitionReassignments with no replicas: cancel the reassignment of ``partition``."""

    partition: TopicPartition


@dataclass(frozen=True, slots=True)
class ElectLeaders:
    """A preferred leader election for ``partitions``."""

    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class ClearThrottles:
    """Remove every throttle this execution set."""


Action = SetThrottles | MoveDir | Reassign | Cancel | ElectLeaders | ClearThrottles


@dataclass(slots=True)
class Tracked:
    """One partition's progress: its move (as last started or chosen), phase, batch, the
    reason it is held or ended, how many times it was started, whether it was adopted."""

    partition: TopicPartition
    phase: Phase
    move: Move | None = None
    batch: int = 0
    note: Hold | str | None = None
    attempts: int = 0
    adopted: bool = False


@dataclass(frozen=True, slots=True)
class Step:
    """What one step asks for, what it saw (one line an event), and whether all has ended."""

    actions: tuple[Action, ...]
    events: tuple[str, ...]
    done: bool
    needs_plan: bool


class Execution:
    """The executor's state between two observations (see the module docstring)."""

    def __init__(
        self, state: ClusterState, targets: Mapping[TopicPartition, Target], limits: Limits
    ) -> None:
        self.limits = limits
        self.targets = dict(targets)
        self.batch = 0
        self.cancelled = False
        self.replanned: set[TopicPartition] = set()
        self.tracked: dict[TopicPartition, Tracked] = {}
        for move in moves_for(state, self.targets):
            self.tracked[move.partition] = Tracked(move.partition, Phase.PENDING, move)
        for tp, flight in state.in_flight.items():
            entry = self.tracked.get(tp)
            if entry is not None and flight.target == self.targets[tp].replicas:
                entry.phase, entry.adopted, entry.attempts = Phase.IN_FLIGHT, True, 1

    def retarget(self, state: ClusterState, targets: Mapping[TopicPartition, Target]) -> None:
        """A new plan: every partition off its new target and not running becomes pending (a
        refused or verified one too); running moves finish and meet their new target when next
        observed; a partition the new plan drops is abandoned."""
        self.targets = dict(targets)
        for move in moves_for(state, self.targets):
            entry = self.tracked.get(move.partition)
            if entry is None or entry.phase in ENDED:
                attempts = entry.attempts if entry else 0
                self.tracked[move.partition] = Tracked(
                    move.partition, Phase.PENDING, move, attempts=attempts
                )
            elif entry.phase == Phase.PENDING:
                entry.move, entry.note = move, None

    def running(self) -> list[Tracked]:
        return [e for e in self.tracked.values() if e.phase in RUNNING]

    def step(self, state: ClusterState) -> Step:
        events: list[str] = []
        actions: list[Action] = []
        needs_plan = self._observe(state, events, actions)
        if self.cancelled:
            done = not any(tp in state.in_flight for tp in self.tracked)
            return Step(tuple(actions), tuple(events), done, False)
        if not self.running():
            self._elect(state, actions)
            if not self._start(state, events, actions) and not self.running():
                if self._stale():
                    events.append("a target broker is not up; re-planning")
                    return Step(tuple(actions), tuple(events), False, True)
                self._end(events, actions)
                return Step(tuple(actions), tuple(events), True, needs_plan)
        return Step(tuple(actions), tuple(events), False, needs_plan)

    def cancel(self) -> list[Action]:
        """Cancel every reassignment in flight, send each directory move back to the directory
        it left (which is how Kafka stops one), and remove the throttles."""
        self.cancelled = True
        actions: list[Action] = []
        for entry in self.running():
            entry.phase, entry.note = Phase.PENDING, "cancelled"
            move = entry.move
            if move is None:
                continue
            if move.kind == "replica":
                actions.append(Cancel(entry.partition))
            for broker, _ in move.dir_moves:
                path = move.source.dir_of(broker)
                if path is not None:
                    actions.append(MoveDir(entry.partition, broker, path))
        return [*actions, ClearThrottles()]

    def _observe(self, state: ClusterState, events: list[str], actions: list[Action]) -> bool:
        needs_plan = False
        for tp, entry in self.tracked.items():
            if entry.phase in ENDED:
                continue
            now = state.partitions.get(tp)
            target = self.targets.get(tp)
            if now is None or target is None:
                was = entry.phase
                entry.phase, entry.note = Phase.ABANDONED, "topic deleted or dropped from the plan"
                if was in RUNNING and tp in state.in_flight:
                    actions.append(Cancel(tp))
                events.append(f"{tp}: abandoned: {entry.note}")
            elif tp in state.in_flight:
                needs_plan |= self._in_flight(state, entry, target, events, actions)
            elif is_done(now, target):
                entry.note = "already moved" if entry.phase == Phase.PENDING else entry.note
                entry.phase = Phase.VERIFIED
                events.append(f"{tp}: verified" + (f" ({entry.note})" if entry.note else ""))
            elif entry.phase in RUNNING and self._landed(entry, now.replicas):
                self._lost_dir_move(state, entry, events)  # else still copying
            elif entry.phase in RUNNING:
                entry.phase = Phase.PENDING
                if entry.attempts >= MAX_ATTEMPTS:
                    entry.phase, entry.note = Phase.REFUSED, Hold(str(tp), "failed", "no progress")
                events.append(f"{tp}: the reassignment ended before reaching its target")
        return needs_plan

    def _lost_dir_move(self, state: ClusterState, entry: Tracked, events: list[str]) -> None:
        """A directory move whose broker is lost never ends: the move waits on that broker
        as a pending one does (a new plan may put the replica elsewhere)."""
        assert entry.move is not None
        lost = [b for b, _ in entry.move.dir_moves if b not in state.racks]
        if lost:
            entry.phase = Phase.PENDING
            entry.note = Hold(str(entry.partition), "broker", f"broker {lost[0]} was lost")
            events.append(f"{entry.partition}: broker {lost[0]} was lost in a directory move")

    def _landed(self, entry: Tracked, replicas: tuple[int, ...]) -> bool:
        return entry.move is not None and replicas == entry.move.target.replicas

    def _in_flight(
        self,
        state: ClusterState,
        entry: Tracked,
        target: Target,
        events: list[str],
        actions: list[Action],
    ) -> bool:
        flight = state.in_flight[entry.partition]
        if entry.phase == Phase.PENDING:
            if flight.target != target.replicas:
                entry.note = Hold(
                    str(entry.partition), "failed", "another reassignment of it is in flight"
                )
                return False
            entry.phase, entry.adopted = Phase.IN_FLIGHT, True
        entry.phase = Phase.IN_FLIGHT
        lost = [b for b in flight.adding if b not in state.racks]
        if lost:
            actions.append(Cancel(entry.partition))
            entry.phase = Phase.PENDING
            entry.note = Hold(str(entry.partition), "broker", f"broker {lost[0]} was lost")
            events.append(f"{entry.partition}: cancelled, broker {lost[0]} was lost; re-planning")
            return True
        return False

    def _elect(self, state: ClusterState, actions: list[Action]) -> None:
        moved = [
            tp
            for tp, e in self.tracked.items()
            if e.phase == Phase.VERIFIED
            and e.batch == self.batch
            and tp in state.partitions
            and state.partitions[tp].leader != state.partitions[tp].replicas[0]
        ]
        if moved and self.batch:
            actions.append(ElectLeaders(tuple(sorted(moved))))

    def _start(self, state: ClusterState, events: list[str], actions: list[Action]) -> bool:
        pending = {tp for tp, e in self.tracked.items() if e.phase == Phase.PENDING}
        blocked = {tp for tp in pending if tp in state.in_flight}
        candidates = moves_for(state, {tp: self.targets[tp] for tp in pending - blocked})
        batch = select(state, candidates, (), self.limits)
        for hold in batch.held:
            self.tracked[_partition_of(hold, candidates)].note = hold
        if not batch.moves:
            return bool(blocked)
        self.batch += 1
        copies = tuple(m for m in batch.moves if m.kind == "replica")
        if copies:
            actions.append(SetThrottles(copies))
        for move in batch.moves:
            entry = self.tracked[move.partition]
            entry.phase, entry.move, entry.batch, entry.note = Phase.STARTED, move, self.batch, None
            entry.attempts += 1
            if move.kind != "dir":
                actions.append(Reassign(move.partition, move.target.replicas))
            for broker, path in move.incoming():
                actions.append(MoveDir(move.partition, broker, path))
        events.append(f"batch {self.batch}: {len(batch.moves)} moves started")
        return True

    def _stale(self) -> bool:
        """True, once per partition, when a pending move waits on a broker that is not up: a
        new plan may put it elsewhere (a second time it is refused)."""
        stale = {
            tp
            for tp, e in self.tracked.items()
            if e.phase == Phase.PENDING and isinstance(e.note, Hold) and e.note.rule == "broker"
        } - self.replanned
        self.replanned |= stale
        return bool(stale)

    def _end(self, events: list[str], actions: list[Action]) -> None:
        for entry in self.tracked.values():
            if entry.phase == Phase.PENDING:
                note = entry.note
                if not isinstance(note, Hold):
                    note = Hold(str(entry.partition), "failed", "never started")
                entry.phase, entry.note = Phase.REFUSED, note
                events.append(f"refused {note}")
        actions.append(ClearThrottles())  # also those a run that died before its end left

    def summary(self) -> dict[str, int]:
        counts = dict.fromkeys((p.value for p in Phase), 0)
        for entry in self.tracked.values():
            counts[entry.phase.value] += 1
        return counts


def _partition_of(hold: Hold, moves: list[Move]) -> TopicPartition:
    return next(m.partition for m in moves if str(m.partition) == hold.partition)
