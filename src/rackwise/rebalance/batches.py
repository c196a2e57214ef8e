"""Batches of moves within the limits, and the whole sequence of batches for a dry run.

A batch holds at most ``concurrency_per_broker`` replica moves involving any one broker (as a
source, a destination or a replica that stays), at most ``intra_per_broker`` moves between the
directories of any one broker, and at most ``max_leader_moves`` leader moves; moves already in
flight count against the same limits. A copy whose directory its broker chooses (``"any"``)
counts against every directory of that broker. Moves are taken in the order given (the plan's);
a move that breaks a safety rule (:mod:`~rackwise.rebalance.safety`) is held with its reason,
and one that only finds its brokers busy waits for the next batch.

:func:`plan_batches` plays the batches out on a copy of the state, each batch finishing before
the next starts (replicas at their targets and in sync, bytes moved between directories), until
every move has run or nothing more can start; what is left is refused with the last reason it
was held for. That is the dry run's schedule and what the executor aims at.

Example: with ``concurrency_per_broker=1``, moves ``a-0`` and ``a-1`` both involving broker 1
go into two batches; a move whose target has one replica under ``min.insync.replicas=2`` is
refused in ``min-insync``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from rackwise.common import TopicPartition
from rackwise.rebalance.model import ClusterState, Limits, LogDir, Move, Target, is_done
from rackwise.rebalance.safety import Hold, check


@dataclass(slots=True)
class Load:
    """What the moves running (or chosen) keep busy: replica moves and directory moves per
    broker, leader moves, and the bytes on their way to each directory."""

    replica: Counter[int] = field(default_factory=Counter)
    intra: Counter[int] = field(default_factory=Counter)
    leaders: int = 0
    incoming: Counter[tuple[int, str]] = field(default_factory=Counter)

    def add(self, move: Move, dirs: Iterable[tuple[int, str]]) -> None:
        self.replica.update(move.involved)
        self.intra.update(b for b, _ in move.dir_moves)
        self.leaders += move.kind == "leader"
        size = max(move.source.size_bytes, 0)
        for key in move.landing(dirs):
            self.incoming[key] += size

    def fits(self, move: Move, limits: Limits) -> bool:
        if any(self.replica[b] >= limits.concurrency_per_broker for b in move.involved):
            return False
        if any(self.intra[b] >= limits.intra_per_broker for b, _ in move.dir_moves):
            return False
        return move.kind != "leader" or self.leaders < limits.max_leader_moves


@dataclass(frozen=True, slots=True)
class Batch:
    """The moves to start together, and the moves held back this time with the reason."""

    moves: tuple[Move, ...]
    held: tuple[Hold, ...]


def load_of(moves: Iterable[Move], dirs: Iterable[tuple[int, str]]) -> Load:
    load = Load()
    known = list(dirs)
    for move in moves:
        load.add(move, known)
    return load


def select(
    state: ClusterState, candidates: Sequence[Move], running: Iterable[Move], limits: Limits
) -> Batch:
    """The next batch from ``candidates`` (in order), given the moves ``running``."""
    load = load_of(running, state.log_dirs)
    chosen: list[Move] = []
    held: list[Hold] = []
    for move in candidates:
        hold = check(state, move, load.incoming, limits.max_disk_use)
        if hold is not None:
            held.append(hold)
        elif load.fits(move, limits):
            load.add(move, state.log_dirs)
            chosen.append(move)
    return Batch(tuple(chosen), tuple(held))


def moves_for(state: ClusterState, targets: Mapping[TopicPartition, Target]) -> list[Move]:
    """A move for every partition of ``state`` whose target differs from where it is, in
    partition order; targets of partitions the state does not hold are dropped."""
    out = []
    for tp in sorted(targets):
        source = state.partitions.get(tp)
        target = targets[tp]
        if source is not None and not is_done(source, target):
            out.append(Move(tp, source, target))
    return out


def finish(state: ClusterState, moves: Iterable[Move]) -> ClusterState:
    """``state`` after ``moves`` have run: each partition on its target, all in sync, its
    leader the preferred one, and its bytes moved from the directories left to those reached."""
    partitions = dict(state.partitions)
    dirs = dict(state.log_dirs)
    for move in moves:
        source, target = move.source, move.target
        paths = tuple(
            source.dir_of(b) if path == "any" and b in source.replicas else path
            for b, path in zip(target.replicas, target.log_dirs, strict=True)
        )
        size = max(source.size_bytes, 0)
        for broker, path in zip(source.replicas, source.log_dirs, strict=True):
            if path is not None and (broker, path) not in zip(target.replicas, paths, strict=True):
                _shift(dirs, (broker, path), -size)
        for broker, path in zip(target.replicas, paths, strict=True):
            if path not in (None, "any") and (broker, path) not in zip(
                source.replicas, source.log_dirs, strict=True
            ):
                _shift(dirs, (broker, path), size)
        partitions[move.partition] = replace(
            source,
            replicas=target.replicas,
            log_dirs=tuple(None if p == "any" else p for p in paths),
            isr=target.replicas,
            leader=target.replicas[0],
        )
    return ClusterState(state.racks, partitions, dirs, state.in_flight)


def _shift(dirs: dict[tuple[int, str], LogDir], key: tuple[int, str], delta: int) -> None:
    disk = dirs.get(key)
    if disk is not None:
        dirs[key] = LogDir(disk.capacity, max(0, disk.used + delta))


@dataclass(frozen=True, slots=True)
class Schedule:
    """The batches in order, and the moves refused with the reason each was last held for."""

    batches: tuple[tuple[Move, ...], ...]
    refused: tuple[Hold, ...]


def plan_batches(
    state: ClusterState, targets: Mapping[TopicPartition, Target], limits: Limits
) -> Schedule:
    """Every batch needed to bring ``state`` to ``targets``, played out one after another."""
    pending = moves_for(state, targets)
    batches: list[tuple[Move, ...]] = []
    while pending:
        batch = select(state, pending, (), limits)
        if not batch.moves:
            return Schedule(tuple(batches), batch.held)
        batches.append(batch.moves)
        state = finish(state, batch.moves)
        pending = moves_for(state, {m.partition: m.target for m in pending})
    return Schedule(tuple(batches), ())
