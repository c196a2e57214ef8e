"""A simulated cluster that carries out the executor's actions as Kafka's controller would, one
tick at a time, seeded, with failures injected from outside."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from rackwise.common import TopicPartition
from rackwise.rebalance import (
    Action,
    Cancel,
    ClearThrottles,
    ClusterState,
    ElectLeaders,
    InFlight,
    LogDir,
    MoveDir,
    PartitionState,
    Reassign,
    SetThrottles,
    domains,
    spread_floor,
)


@dataclass
class Sim:
    """The cluster: brokers up, partitions, log directories, reassignments in flight (with the
    ticks each has left), directory moves waiting, throttles set; ``problems`` collects every
    broken rule seen."""

    racks: dict[int, str | None]
    partitions: dict[TopicPartition, PartitionState]
    dirs: dict[tuple[int, str], LogDir]
    max_disk_use: float
    rng: random.Random
    flights: dict[TopicPartition, tuple[InFlight, int]] = field(default_factory=dict)
    dir_moves: dict[tuple[TopicPartition, int], tuple[str, int]] = field(default_factory=dict)
    throttled: bool = False
    lost: set[int] = field(default_factory=set)
    reassigned: list[TopicPartition] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, state: ClusterState, max_disk_use: float, seed: int) -> Sim:
        return cls(
            dict(state.racks),
            dict(state.partitions),
            dict(state.log_dirs),
            max_disk_use,
            random.Random(seed),
        )

    def observe(self) -> ClusterState:
        flights = {tp: f for tp, (f, _) in self.flights.items()}
        return ClusterState(dict(self.racks), dict(self.partitions), dict(self.dirs), flights)

    def apply(self, action: Action) -> None:
        if isinstance(action, Reassign):
            self._reassign(action.partition, action.replicas)
        elif isinstance(action, MoveDir):
            self.dir_moves[(action.partition, action.broker)] = (
                action.path,
                self.rng.randint(1, 3),
            )
        elif isinstance(action, Cancel):
            self._cancel(action.partition)
        elif isinstance(action, ElectLeaders):
            for tp in action.partitions:
                p = self.partitions.get(tp)
                if p is not None and p.replicas[0] in p.isr:
                    self.partitions[tp] = replace(p, leader=p.replicas[0])
        elif isinstance(action, SetThrottles):
            self.throttled = True
        elif isinstance(action, ClearThrottles):
            self.throttled = False

    def _reassign(self, tp: TopicPartition, replicas: tuple[int, ...]) -> None:
        p = self.partitions.get(tp)
        if p is None or tp in self.flights:
            self.problems.append(f"{tp}: reassigned while {'gone' if p is None else 'in flight'}")
            return
        self.reassigned.append(tp)
        if set(replicas) == set(p.replicas):
            dirs = tuple(p.dir_of(b) for b in replicas)
            self.partitions[tp] = replace(p, replicas=replicas, log_dirs=dirs)
            return
        self._judge(tp, p, replicas)
        adding = tuple(b for b in replicas if b not in p.replicas)
        removing = tuple(b for b in p.replicas if b not in replicas)
        union = replicas + removing
        dirs = tuple(p.dir_of(b) if b in p.replicas else None for b in union)
        self.partitions[tp] = replace(p, replicas=union, log_dirs=dirs)
        self.flights[tp] = (InFlight(union, adding, removing), self.rng.randint(1, 4))

    def _judge(self, tp: TopicPartition, p: PartitionState, target: tuple[int, ...]) -> None:
        """The rules, from their definitions, at the moment a move starts."""
        if set(p.isr) != set(p.replicas) or len(target) < p.min_insync:
            self.problems.append(f"{tp}: started with ISR {p.isr} toward {target}")
        tree = self.observe().tree
        floor = spread_floor(tree, len(target))
        before = domains(tree, p.replicas)
        for brokers in (target + tuple(b for b in p.replicas if b not in target), target):
            now = domains(tree, brokers)
            for level, wanted in floor.items():
                if now.get(level, 0) < min(wanted, before.get(level, 0)):
                    self.problems.append(f"{tp}: spread broken at level {level}: {brokers}")

    def _cancel(self, tp: TopicPartition) -> None:
        entry = self.flights.pop(tp, None)
        p = self.partitions.get(tp)
        if entry is None or p is None:
            return
        flight = entry[0]
        original = tuple(b for b in flight.replicas if b not in flight.adding)
        dirs = tuple(p.dir_of(b) for b in original)
        isr = tuple(b for b in p.isr if b in original)
        self.partitions[tp] = replace(p, replicas=original, log_dirs=dirs, isr=isr)
        for b in flight.adding:
            self.dir_moves.pop((tp, b), None)

    def tick(self) -> None:
        for tp, (flight, left) in list(self.flights.items()):
            if any(b in self.lost for b in flight.adding):
                continue  # a copy to a lost broker never ends
            if left > 1:
                self.flights[tp] = (flight, left - 1)
            else:
                self._complete(tp, flight)
        for (tp, broker), (path, left) in list(self.dir_moves.items()):
            p = self.partitions.get(tp)
            if p is None or broker not in p.replicas or tp in self.flights:
                continue
            if left > 1:
                self.dir_moves[(tp, broker)] = (path, left - 1)
                continue
            del self.dir_moves[(tp, broker)]
            self._relocate(tp, broker, path)
        self._check_disks()

    def _complete(self, tp: TopicPartition, flight: InFlight) -> None:
        del self.flights[tp]
        p = self.partitions[tp]
        target = flight.target
        dirs = tuple(p.dir_of(b) if b not in flight.adding else "/d0" for b in target)
        for b in flight.removing:
            self._use((b, p.dir_of(b) or "/d0"), -p.size_bytes)
        for b in flight.adding:
            path, _ = self.dir_moves.pop((tp, b), ("/d0", 0))
            dirs = tuple(path if x == b else d for x, d in zip(target, dirs, strict=True))
            self._use((b, path), p.size_bytes)
        leader = p.leader if p.leader in target else target[0]
        isr = tuple(b for b in target if b not in self.lost)
        self.partitions[tp] = replace(p, replicas=target, log_dirs=dirs, isr=isr, leader=leader)

    def _relocate(self, tp: TopicPartition, broker: int, path: str) -> None:
        p = self.partitions[tp]
        old = p.dir_of(broker) or "/d0"
        self._use((broker, old), -p.size_bytes)
        self._use((broker, path), p.size_bytes)
        dirs = tuple(
            path if b == broker else d for b, d in zip(p.replicas, p.log_dirs, strict=True)
        )
        self.partitions[tp] = replace(p, log_dirs=dirs)

    def _use(self, key: tuple[int, str], delta: int) -> None:
        disk = self.dirs.get(key)
        if disk is not None:
            self.dirs[key] = LogDir(disk.capacity, max(0, disk.used + delta))

    def _check_disks(self) -> None:
        incoming: dict[tuple[int, str], int] = {}
        for tp, (flight, _) in self.flights.items():
            for b in flight.adding:
                path, _ = self.dir_moves.get((tp, b), ("", 0))
                if path:
                    incoming[(b, path)] = (
                        incoming.get((b, path), 0) + self.partitions[tp].size_bytes
                    )
        for key, size in incoming.items():
            disk = self.dirs[key]
            if disk.used + size > self.max_disk_use * disk.capacity:
                self.problems.append(f"log dir {key} over its share: {disk.used} + {size}")

    def lose_broker(self, broker: int) -> None:
        self.racks.pop(broker, None)
        self.lost.add(broker)
        for tp, p in self.partitions.items():
            if broker in p.replicas:
                isr = tuple(b for b in p.isr if b != broker)
                leader = p.leader if p.leader != broker else (isr[0] if isr else -1)
                self.partitions[tp] = replace(p, isr=isr, leader=leader)

    def delete_topic(self, topic: str) -> None:
        for tp in [tp for tp in self.partitions if tp.topic == topic]:
            del self.partitions[tp]
            self.flights.pop(tp, None)
