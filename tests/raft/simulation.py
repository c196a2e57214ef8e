"""A deterministic simulation of the quorum (in the spirit of Kafka's ``RaftEventSimulationTest``).

Voters are :class:`RaftClient` state machines over simulated disks; one seeded scheduler
delivers their messages late, twice, out of order or not at all, cuts the network into parts,
crashes voters (losing what was not flushed, sometimes halfway through carrying out the outputs
of one input) and restarts them, takes snapshots, and offers writes to whoever leads. Raft's
invariants are checked after every event; the first violation raises :class:`Violation` naming
the seed and the time. Everything comes from the seed, so a failing seed replays exactly.
"""

from __future__ import annotations

import heapq
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rackwise.raft import QuorumConfig, RaftClient, RaftLog, Role, Snapshot
from rackwise.raft.messages import (
    AppendBatches,
    Batch,
    Commit,
    ElectionState,
    InstallSnapshot,
    LeaderChange,
    Message,
    OffsetAndEpoch,
    Output,
    PersistElectionState,
    Send,
    TruncateTo,
)

SIM_CONFIG = QuorumConfig(
    request_timeout_ms=1000, fetch_max_batches=8, snapshot_chunk_bytes=256, retry_backoff_ms=20
)
"""Kafka's timings, with a shorter request timeout and small answers so that the simulation
exercises chunked snapshots and multi-round catch-up."""


class Violation(AssertionError):
    """An invariant that failed, with the seed that makes it fail again."""


@dataclass(frozen=True, slots=True)
class Faults:
    """How hostile the network and the machines are while faults are on."""

    drop: float = 0.05
    duplicate: float = 0.05
    max_delay_ms: int = 50
    crash_every_ms: int = 4000
    """Mean time between crashes (0: none)."""
    partition_every_ms: int = 5000
    """Mean time between network partitions (0: none)."""
    crash_mid_outputs: float = 0.3
    """Chance that a crash strikes while a voter carries out the outputs of one input."""

    @staticmethod
    def draw(rng: random.Random) -> Faults:
        return Faults(
            drop=rng.choice([0.0, 0.02, 0.1, 0.3]),
            duplicate=rng.choice([0.0, 0.05, 0.2]),
            max_delay_ms=rng.choice([1, 20, 100, 400]),
            crash_every_ms=rng.choice([0, 1500, 5000]),
            partition_every_ms=rng.choice([0, 2000, 6000]),
            crash_mid_outputs=rng.choice([0.0, 0.5]),
        )


@dataclass(slots=True)
class Disk:
    """What survives a crash: the election state, the snapshot and the flushed batches."""

    election: ElectionState = field(default_factory=lambda: ElectionState(0))
    snapshot: Snapshot | None = None
    durable: list[Batch] = field(default_factory=list)
    pending: list[Batch] = field(default_factory=list)

    def end_offset(self) -> int:
        batches = self.pending or self.durable
        if batches:
            return batches[-1].end_offset
        return self.snapshot.snapshot_id.offset if self.snapshot else 0

    def truncate(self, offset: int) -> None:
        self.durable = _cut(self.durable, offset)
        self.pending = _cut(self.pending, offset)

    def trim_before(self, offset: int) -> None:
        self.durable = [b for b in self.durable if b.end_offset > offset]
        self.pending = [b for b in self.pending if b.end_offset > offset]
        if self.durable and self.durable[0].base_offset < offset:
            first = self.durable[0]
            self.durable[0] = Batch(
                offset, first.epoch, first.records[offset - first.base_offset :], first.is_control
            )


def _cut(batches: list[Batch], offset: int) -> list[Batch]:
    kept = [b for b in batches if b.base_offset < offset]
    if kept and kept[-1].end_offset > offset:
        last = kept[-1]
        kept[-1] = Batch(
            last.base_offset,
            last.epoch,
            last.records[: offset - last.base_offset],
            last.is_control,
        )
    return kept


Entry = tuple[int, int, str]
"""A committed record: offset, epoch, value."""


@dataclass(slots=True)
class SimNode:
    node_id: int
    disk: Disk = field(default_factory=Disk)
    client: RaftClient | None = None
    incarnation: int = 0
    applied: list[Entry] = field(default_factory=list)
    flush_scheduled: bool = False
    tick_at: int | None = None

    @property
    def is_up(self) -> bool:
        return self.client is not None


class Simulation:
    """``num_voters`` voters under ``faults`` for ``fault_ms``, then a healed network."""

    def __init__(
        self,
        seed: int,
        num_voters: int,
        faults: Faults | None = None,
        config: QuorumConfig = SIM_CONFIG,
        client_factory: Callable[..., RaftClient] = RaftClient,
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.faults = faults if faults is not None else Faults.draw(self.rng)
        self.is_faulty = True
        self.config = config
        self.client_factory = client_factory
        self.voters = tuple(range(1, num_voters + 1))
        self.nodes = {v: SimNode(v) for v in self.voters}
        self.now_ms = 0
        self._events: list[tuple[int, int, str, Any]] = []
        self._seq = 0
        self.cut: set[frozenset[int]] = set()
        self.committed: list[Entry] = []
        self.leaders_by_epoch: dict[int, int] = {}
        self.trace: list[str] = []
        self.writes = 0
        for v in self.voters:
            self._restart(v)
        self._schedule(0, "write", None)
        self._schedule(self._exp(2000), "snapshot", None)
        if self.faults.crash_every_ms:
            self._schedule(self._exp(self.faults.crash_every_ms), "crash", None)
        if self.faults.partition_every_ms:
            self._schedule(self._exp(self.faults.partition_every_ms), "partition", None)

    # --- running ---------------------------------------------------------------------------

    def run_until(self, end_ms: int, stop: Callable[[], bool] | None = None) -> bool:
        """Process events up to ``end_ms`` (or until ``stop`` holds); whether ``stop`` held."""
        while self._events and self._events[0][0] <= end_ms:
            time_ms, _, kind, payload = heapq.heappop(self._events)
            self.now_ms = time_ms
            getattr(self, f"_on_{kind}")(payload)
            self.check_invariants()
            if stop is not None and stop():
                return True
        self.now_ms = max(self.now_ms, end_ms)
        return stop is not None and stop()

    def heal(self) -> None:
        """No more faults: every voter up, every link whole, nothing lost or repeated."""
        self.is_faulty = False
        self.cut.clear()
        for v in self.voters:
            if not self.nodes[v].is_up:
                self._restart(v)
        self.trace.append(f"{self.now_ms} heal")

    def leader(self) -> SimNode | None:
        """The voter leading the highest epoch any voter leads."""
        leaders = [
            n for n in self.nodes.values() if n.client is not None and n.client.role is Role.LEADER
        ]
        return max(leaders, key=lambda n: n.client.epoch if n.client else 0, default=None)

    def fail(self, message: str) -> None:
        raise Violation(f"seed {self.seed}, t={self.now_ms} ms: {message}")

    # --- events ----------------------------------------------------------------------------

    def _schedule(self, at_ms: int, kind: str, payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._events, (at_ms, self._seq, kind, payload))

    def _exp(self, mean_ms: int) -> int:
        return self.now_ms + 1 + int(self.rng.expovariate(1 / mean_ms))

    def _on_deliver(self, payload: tuple[int, int, Message]) -> None:
        source, dest, message = payload
        node = self.nodes[dest]
        if node.client is None:
            return
        self.trace.append(f"{self.now_ms} {source}->{dest} {message}")
        self._carry_out(node, node.client.handle_message(self.now_ms, source, message))

    def _on_tick(self, payload: tuple[int, int]) -> None:
        node_id, incarnation = payload
        node = self.nodes[node_id]
        if node.client is None or node.incarnation != incarnation:
            return
        node.tick_at = None
        self._carry_out(node, node.client.tick(self.now_ms))

    def _on_flush(self, payload: tuple[int, int]) -> None:
        node_id, incarnation = payload
        node = self.nodes[node_id]
        node.flush_scheduled = False
        if node.client is None or node.incarnation != incarnation:
            return
        node.disk.durable.extend(node.disk.pending)
        node.disk.pending = []
        self.trace.append(f"{self.now_ms} flush {node_id} to {node.disk.end_offset()}")
        self._carry_out(node, node.client.handle_flushed(self.now_ms, node.disk.end_offset()))

    def _on_write(self, _: None) -> None:
        self._schedule(self.now_ms + self.rng.randint(10, 150), "write", None)
        node = self.leader()
        if node is None or node.client is None:
            return
        count = self.rng.randint(1, 3)
        records = [f"w{self.writes}.{i}" for i in range(count)]
        self.writes += 1
        _, outputs = node.client.propose(self.now_ms, records)
        self.trace.append(f"{self.now_ms} write {records} to {node.node_id}")
        self._carry_out(node, outputs)

    def _on_snapshot(self, _: None) -> None:
        self._schedule(self._exp(2000), "snapshot", None)
        up = [n for n in self.nodes.values() if n.client is not None and n.applied]
        if not up:
            return
        node = self.rng.choice(up)
        assert node.client is not None
        end = node.client.applied_offset
        if end <= node.client.log.start_offset:
            return
        snapshot = Snapshot(node.client.snapshot_id_at(end), _encode(node.applied))
        node.disk.snapshot = snapshot
        node.disk.trim_before(end)
        self.trace.append(f"{self.now_ms} snapshot {node.node_id} at {snapshot.snapshot_id}")
        self._carry_out(node, node.client.snapshot_taken(self.now_ms, snapshot))

    def _on_crash(self, _: None) -> None:
        if not self.is_faulty:
            return
        self._schedule(self._exp(self.faults.crash_every_ms), "crash", None)
        node = self.nodes[self.rng.choice(self.voters)]
        if node.is_up:
            self._crash(node)
            self._schedule(self.now_ms + self.rng.randint(100, 4000), "restart", node.node_id)

    def _on_restart(self, node_id: int) -> None:
        if not self.nodes[node_id].is_up:
            self._restart(node_id)

    def _on_partition(self, _: None) -> None:
        if not self.is_faulty:
            return
        self._schedule(self._exp(self.faults.partition_every_ms), "partition", None)
        if self.cut:
            self.cut.clear()
            self.trace.append(f"{self.now_ms} network whole")
            return
        side = {v for v in self.voters if self.rng.random() < 0.5}
        self.cut = {frozenset((a, b)) for a in side for b in self.voters if b not in side}
        self.trace.append(f"{self.now_ms} partition {sorted(side)}")

    # --- voters ----------------------------------------------------------------------------

    def _crash(self, node: SimNode) -> None:
        node.client = None
        node.disk.pending = []  # never flushed: lost
        node.applied = []
        node.tick_at = None
        node.flush_scheduled = False
        self.trace.append(f"{self.now_ms} crash {node.node_id}")

    def _restart(self, node_id: int) -> None:
        node = self.nodes[node_id]
        node.incarnation += 1
        disk = node.disk
        log = RaftLog(disk.snapshot, disk.durable)
        node.client = self.client_factory(
            node_id,
            self.voters,
            self.config,
            disk.election,
            log,
            random.Random(self.rng.getrandbits(64)),
        )
        node.applied = _decode(disk.snapshot.payload) if disk.snapshot else []
        self._check_prefix(node, node.applied)
        self.trace.append(f"{self.now_ms} start {node_id} {disk.election}")
        self._carry_out(node, node.client.start(self.now_ms))

    def _carry_out(self, node: SimNode, outputs: list[Output]) -> None:
        crash_at = len(outputs)
        if self.is_faulty and outputs and self.rng.random() < self._mid_crash_chance():
            crash_at = self.rng.randrange(len(outputs))
        for i, output in enumerate(outputs):
            if i == crash_at:
                self._crash(node)
                self._schedule(self.now_ms + self.rng.randint(100, 3000), "restart", node.node_id)
                return
            self._carry_out_one(node, output)
        self._schedule_tick(node)

    def _mid_crash_chance(self) -> float:
        if not self.faults.crash_every_ms:
            return 0.0
        return self.faults.crash_mid_outputs * 200 / self.faults.crash_every_ms / 10

    def _carry_out_one(self, node: SimNode, output: Output) -> None:
        if isinstance(output, PersistElectionState):
            node.disk.election = output.state
        elif isinstance(output, Send):
            self._send(node.node_id, output.destination, output.message)
        elif isinstance(output, AppendBatches):
            node.disk.pending.extend(output.batches)
            if not node.flush_scheduled:
                node.flush_scheduled = True
                delay = self.rng.randint(1, 15)
                self._schedule(self.now_ms + delay, "flush", (node.node_id, node.incarnation))
        elif isinstance(output, TruncateTo):
            node.disk.truncate(output.offset)
        elif isinstance(output, InstallSnapshot):
            node.disk.snapshot = Snapshot(output.snapshot_id, output.payload)
            node.disk.durable, node.disk.pending = [], []
            node.applied = _decode(output.payload)
            self._check_prefix(node, node.applied)
        elif isinstance(output, Commit):
            self._apply(node, output)
        elif isinstance(output, LeaderChange):
            pass

    def _send(self, source: int, dest: int, message: Message) -> None:
        if self.is_faulty:
            if frozenset((source, dest)) in self.cut or self.rng.random() < self.faults.drop:
                return
            copies = 2 if self.rng.random() < self.faults.duplicate else 1
            max_delay = self.faults.max_delay_ms
        else:
            copies, max_delay = 1, 5
        for _ in range(copies):
            at = self.now_ms + self.rng.randint(1, max_delay)
            self._schedule(at, "deliver", (source, dest, message))

    def _schedule_tick(self, node: SimNode) -> None:
        if node.client is None:
            return
        deadline = node.client.next_deadline_ms()
        if deadline is None:
            return
        deadline = max(deadline, self.now_ms)
        if node.tick_at is None or deadline < node.tick_at:
            node.tick_at = deadline
            self._schedule(deadline, "tick", (node.node_id, node.incarnation))

    # --- invariants ------------------------------------------------------------------------

    def _apply(self, node: SimNode, commit: Commit) -> None:
        for batch in commit.batches:
            for i, record in enumerate(batch.records):
                entry = (batch.base_offset + i, batch.epoch, str(record))
                if node.applied and entry[0] <= node.applied[-1][0]:
                    self.fail(f"voter {node.node_id} applied {entry} after {node.applied[-1]}")
                n = len(node.applied)
                if n < len(self.committed):
                    if self.committed[n] != entry:
                        self.fail(
                            f"voter {node.node_id} committed {entry} where {self.committed[n]} "
                            "was committed before"
                        )
                elif self.committed and entry[0] <= self.committed[-1][0]:
                    self.fail(f"voter {node.node_id} skipped committed records before {entry}")
                else:
                    self.committed.append(entry)
                node.applied.append(entry)

    def _check_prefix(self, node: SimNode, entries: list[Entry]) -> None:
        if entries != self.committed[: len(entries)]:
            self.fail(f"voter {node.node_id} holds a state that is not a committed prefix")

    def check_invariants(self) -> None:
        for node in self.nodes.values():
            client = node.client
            if client is not None and client.role is Role.LEADER:
                known = self.leaders_by_epoch.setdefault(client.epoch, node.node_id)
                if known != node.node_id:
                    self.fail(f"voters {known} and {node.node_id} both lead epoch {client.epoch}")
        # Leader completeness binds the leader of the highest epoch ever led: every record was
        # committed in that epoch or an earlier one. A leader of an older epoch cut off from
        # the rest (still LEADER after the newer leader crashed) may lack later records.
        leader = self.leader()
        if (
            leader is not None
            and leader.client is not None
            and leader.client.epoch == max(self.leaders_by_epoch)
        ):
            self._check_leader_holds_committed(leader.node_id, leader.client)

    def _check_leader_holds_committed(self, node_id: int, client: RaftClient) -> None:
        log = client.log
        start = log.start_offset
        snap = _decode(log.snapshot.payload) if log.snapshot and self.committed else []
        in_snapshot = [e for e in self.committed if e[0] < start]
        if in_snapshot != snap[: len(in_snapshot)]:
            self.fail(f"leader {node_id}'s snapshot lacks committed records")
        held = {
            b.base_offset + i: (b.epoch, str(r))
            for b in log.batches
            if not b.is_control
            for i, r in enumerate(b.records)
        }
        for offset, epoch, value in self.committed:
            if offset >= start and held.get(offset) != (epoch, value):
                self.fail(
                    f"leader {node_id} (epoch {client.epoch}) lacks committed record "
                    f"{(offset, epoch, value)}: it holds {held.get(offset)}"
                )


def _encode(entries: list[Entry]) -> bytes:
    return json.dumps(entries).encode()


def _decode(payload: bytes) -> list[Entry]:
    return [(int(o), int(e), str(v)) for o, e, v in json.loads(payload)]


@dataclass(frozen=True, slots=True)
class Outcome:
    committed: int
    trace_length: int
    leader_epoch: int


def run_seed(
    seed: int,
    num_voters: int,
    *,
    fault_ms: int = 15_000,
    heal_ms: int = 20_000,
    client_factory: Callable[..., RaftClient] = RaftClient,
    faults: Faults | None = None,
) -> Simulation:
    """Faults for ``fault_ms``, then a healed network that must elect a leader and commit a
    new write on every voter within ``heal_ms``."""
    sim = Simulation(seed, num_voters, faults=faults, client_factory=client_factory)
    sim.run_until(fault_ms)
    sim.heal()
    mark = len(sim.committed)
    target: list[int] = []

    def progressed() -> bool:
        if len(sim.committed) <= mark + 1:
            return False
        if not target:
            target.append(len(sim.committed))
        return all(len(n.applied) >= target[0] for n in sim.nodes.values())

    if not sim.run_until(sim.now_ms + heal_ms, progressed):
        leader = sim.leader()
        sim.fail(
            f"no progress {heal_ms} ms after healing: leader "
            f"{leader.node_id if leader else None}, committed {len(sim.committed)} "
            f"(was {mark}), applied {[len(n.applied) for n in sim.nodes.values()]}"
        )
    return sim


__all__ = ["Faults", "OffsetAndEpoch", "Simulation", "Violation", "run_seed"]
