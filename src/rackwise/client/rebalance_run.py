"""``rackwise rebalance``'s driver: read a running cluster, plan it, and carry the plan out batch
by batch through :class:`rackwise.rebalance.Execution`, against a rackwise cluster or a Kafka
one (only admin APIs: the reads of :mod:`~rackwise.client.cluster_state` and the calls of
:mod:`~rackwise.client.reassign`).

Constraints
    * Every observation is a whole read of the cluster (:func:`read_cluster_async`), at most
      one every ``poll_s`` seconds; the actions of a step are carried out in its order, the
      reassignments of a batch in one AlterPartitionReassignments, then the moves between
      directories (retrying REPLICA_NOT_AVAILABLE until ``timeout_ms``).
    * Throttles are set per batch as Kafka's tool computes them (leaders on the current
      replicas, followers on the new ones, the rate on every broker involved) and all of them
      removed at the end, on a cancel too; so are those a run that died left behind (the
      topics' throttled-replica lists, and the rates on every broker, as ``--verify`` does).
      A rerun's ``--throttle`` applies to the moves it adopts.
    * A cancel (the task cancelled: Ctrl-C or SIGTERM in the command) cancels the reassignments
      in flight, sends directory moves back, removes the throttles, and waits (up to
      ``timeout_ms``) until the cluster lists no reassignment of the plan's partitions: Kafka
      puts each back on its original replicas, its leader among them.
    * Preferred leaders are not elected here (Kafka's ElectLeaders has no client in rackwise
      yet): a reordered replica list takes effect at the brokers' next preferred-leader check.

Worked example
    ``await run(bootstrap, {}, Options(throttle=10_000_000), print)`` prints one line per batch,
    ``batch 1: done, 52,428,800 bytes in 5.3 s (9,892,226 B/s; into broker 4 at 4,946,113 B/s
    of 10,000,000 per broker); 52,428,800 bytes done, 2 batches left, about 11 s``, and
    returns the execution, every move verified or refused.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rackwise.balance import Plan, Strategy, plan_cluster
from rackwise.client.cluster_state import (
    FOLLOWER_THROTTLED_KEY,
    LEADER_THROTTLED_KEY,
    ClusterSnapshot,
    addresses_of,
    read_cluster_async,
)
from rackwise.client.command_config import timeout_ms as config_timeout_ms
from rackwise.client.connections import Connections
from rackwise.client.reassign import (
    alter_reassignments,
    alter_replica_log_dirs,
    clear_throttles,
    set_throttles,
    throttle_configs,
)
from rackwise.client.reassign_text import Replica
from rackwise.client.rebalance_state import executor_state, plan_targets, planner_input
from rackwise.common import TopicPartition
from rackwise.rebalance import (
    Action,
    Cancel,
    ClearThrottles,
    Execution,
    Limits,
    Move,
    MoveDir,
    Reassign,
    Schedule,
    SetThrottles,
    Target,
    plan_batches,
)

CLIENT_ID = "rackwise-rebalance"


@dataclass(frozen=True, slots=True)
class Options:
    strategy: Strategy = "keep"
    throttle: int = -1
    limits: Limits = field(default_factory=Limits)
    poll_s: float = 1.0
    timeout_ms: int = 30_000


@dataclass(frozen=True, slots=True)
class Proposal:
    """One read of the cluster, its plan, the plan's targets and the batches they take."""

    snapshot: ClusterSnapshot
    plan: Plan
    targets: Mapping[TopicPartition, Target]
    schedule: Schedule


def propose(snapshot: ClusterSnapshot, options: Options) -> Proposal:
    plan = plan_cluster(planner_input(snapshot), options.strategy, clock=time.perf_counter)
    in_flight = {tp: Target(m.target) for tp, m in snapshot.reassignments.items()}
    targets = {**in_flight, **plan_targets(plan)}  # the plan reads a move in flight as done
    schedule = plan_batches(executor_state(snapshot), targets, options.limits)
    return Proposal(snapshot, plan, targets, schedule)


async def read(bootstrap: str, config: Mapping[str, str], options: Options) -> ClusterSnapshot:
    return await read_cluster_async(bootstrap, config, timeout_ms=options.timeout_ms)


@dataclass
class _Throttled:
    topics: set[str] = field(default_factory=set)
    brokers: set[int] = field(default_factory=set)


@dataclass
class _Progress:
    """The running batch: its number, start, bytes to copy, and the bytes each broker takes
    from another (what ``--throttle`` bounds, per broker), for the progress line."""

    out: Callable[[str], None]
    throttle: int
    clock: Callable[[], float] = time.monotonic
    batch: int = 0
    started: float = 0.0
    size: int = 0
    into: Counter[int] = field(default_factory=Counter)
    done_bytes: int = 0
    done_s: float = 0.0

    def begin(self, batch: int, moves: tuple[Move, ...]) -> None:
        self.batch, self.started = batch, self.clock()
        self.size = sum(max(m.source.size_bytes, 0) * len(m.incoming() or m.adding) for m in moves)
        self.into = Counter()
        for move in moves:
            for broker in move.adding:
                self.into[broker] += max(move.source.size_bytes, 0)
        self.out(f"batch {batch}: started {len(moves)} moves, {self.size:,} bytes to copy")

    def end(self, left: int) -> None:
        if not self.batch:
            return
        took = max(self.clock() - self.started, 1e-3)
        self.done_bytes += self.size
        self.done_s += took
        eta = left * self.done_s / max(self.batch, 1)
        self.out(
            f"batch {self.batch}: done, {self.size:,} bytes in {took:.1f} s"
            f" ({self._rates(took)}); {self.done_bytes:,} bytes done, {left} batches left,"
            f" about {eta:.0f} s"
        )
        self.batch = 0

    def _rates(self, took: float) -> str:
        """The batch's rate over all brokers, and the busiest broker's against the throttle,
        which Kafka applies to each broker on its own (a batch into several brokers may copy
        at several times the throttle)."""
        rate = f"{self.size / took:,.0f} B/s"
        if not self.into:
            return rate
        broker, taken = max(self.into.items(), key=lambda item: (item[1], -item[0]))
        against = f" of {self.throttle:,} per broker" if self.throttle >= 0 else ""
        return f"{rate}; into broker {broker} at {taken / took:,.0f} B/s{against}"


async def _carry_out(
    connections: Connections,
    actions: tuple[Action, ...] | list[Action],
    options: Options,
    throttled: _Throttled,
) -> list[str]:
    """Each action in turn; the failures, one line each."""
    failures: list[str] = []
    starts = {a.partition: list(a.replicas) for a in actions if isinstance(a, Reassign)}
    cancels = {a.partition: None for a in actions if isinstance(a, Cancel)}
    for action in actions:
        if isinstance(action, SetThrottles) and options.throttle >= 0:
            configs = throttle_configs(
                {m.partition: m.source.replicas for m in action.moves},
                {m.partition: m.target.replicas for m in action.moves},
            )
            await set_throttles(connections, configs, rate=options.throttle)
            throttled.topics |= set(configs.leader) | set(configs.follower)
            throttled.brokers |= configs.brokers
        elif isinstance(action, ClearThrottles) and (throttled.topics or throttled.brokers):
            await clear_throttles(connections, sorted(throttled.topics), sorted(throttled.brokers))
            throttled.topics.clear()
            throttled.brokers.clear()
    changes: dict[TopicPartition, list[int] | None] = {**starts, **cancels}
    for tp, error in (await alter_reassignments(connections, changes)).items():
        failures.append(f"{tp}: {error}")
    dirs = {
        Replica.of(a.partition.topic, a.partition.partition, a.broker): a.path
        for a in actions
        if isinstance(a, MoveDir)
    }
    if dirs:
        left = await alter_replica_log_dirs(connections, dirs, options.timeout_ms)
        failures += [f"{r.topic}-{r.partition}: log dir move on broker {r.broker}" for r in left]
    return failures


async def execute(
    bootstrap: str,
    config: Mapping[str, str],
    proposal: Proposal,
    options: Options,
    out: Callable[[str], None],
) -> Execution:
    """Carry ``proposal`` out (see the module docstring); cancelled, it cancels cleanly."""
    timeout_s = config_timeout_ms(dict(config), options.timeout_ms) / 1000
    connections = Connections(addresses_of(bootstrap), timeout_s=timeout_s, client_id=CLIENT_ID)
    state = executor_state(proposal.snapshot)
    execution = Execution(state, proposal.targets, options.limits)
    adopted = sum(e.adopted for e in execution.tracked.values())
    throttled = _left_throttled(proposal.snapshot)
    progress = _Progress(out, options.throttle)
    try:
        if adopted:
            out(f"adopted {adopted} reassignments already in flight")
            moves = tuple(e.move for e in execution.running() if e.move is not None)
            await _carry_out(connections, [SetThrottles(moves)], options, throttled)
            for move in moves:  # the throttles the run that started them set go at the end
                throttled.topics.add(move.partition.topic)
                throttled.brokers |= set(move.involved)
        await _loop(bootstrap, config, connections, execution, options, throttled, progress)
    except asyncio.CancelledError:
        await asyncio.shield(_cancel(bootstrap, config, connections, execution, options, throttled))
        raise
    finally:
        await connections.close()
    return execution


def _left_throttled(snapshot: ClusterSnapshot) -> _Throttled:
    """The throttles a run that died left (topics with throttled-replica lists): removed at the
    end, with the rates on every broker, as Kafka's ``--verify`` removes them."""
    keys = (LEADER_THROTTLED_KEY, FOLLOWER_THROTTLED_KEY)
    topics = {t for t, c in snapshot.topic_configs.items() if any(c.get(k) for k in keys)}
    return _Throttled(topics, set(snapshot.brokers) if topics else set())


async def _loop(
    bootstrap: str,
    config: Mapping[str, str],
    connections: Connections,
    execution: Execution,
    options: Options,
    throttled: _Throttled,
    progress: _Progress,
) -> None:
    while True:
        snapshot = await read(bootstrap, config, options)
        state = executor_state(snapshot)
        batch = execution.batch
        step = execution.step(state)
        if execution.batch != batch or step.done:
            left = len(plan_batches(state, _pending_targets(execution), options.limits).batches)
            progress.end(left)
            if execution.batch != batch:
                moves = tuple(e.move for e in execution.running() if e.move is not None)
                progress.begin(execution.batch, moves)
        for failure in await _carry_out(connections, step.actions, options, throttled):
            progress.out(f"failed: {failure}")
        if step.needs_plan:
            progress.out("the cluster changed under the plan; re-planning")
            execution.retarget(state, propose(snapshot, options).targets)
            continue
        if step.done:
            return
        await asyncio.sleep(options.poll_s)


def _pending_targets(execution: Execution) -> dict[TopicPartition, Target]:
    return {
        tp: execution.targets[tp]
        for tp, e in execution.tracked.items()
        if e.phase.value == "pending" and tp in execution.targets
    }


async def _cancel(
    bootstrap: str,
    config: Mapping[str, str],
    connections: Connections,
    execution: Execution,
    options: Options,
    throttled: _Throttled,
) -> None:
    """Cancel what is in flight, remove the throttles, wait until nothing of ours is listed."""
    await _carry_out(connections, execution.cancel(), options, throttled)
    deadline = time.monotonic() + options.timeout_ms / 1000
    while time.monotonic() < deadline:
        state = executor_state(await read(bootstrap, config, options))
        if execution.step(state).done:
            return
        await _carry_out(connections, [Cancel(tp) for tp in state.in_flight], options, throttled)
        await asyncio.sleep(min(options.poll_s, 0.2))


async def cancel_all(
    bootstrap: str, config: Mapping[str, str], execution: Execution, options: Options
) -> list[TopicPartition]:
    """``--cancel``: cancel the reassignments ``execution`` adopted and remove their throttles;
    the partitions cancelled."""
    timeout_s = config_timeout_ms(dict(config), options.timeout_ms) / 1000
    connections = Connections(addresses_of(bootstrap), timeout_s=timeout_s, client_id=CLIENT_ID)
    throttled = _Throttled()
    running = execution.running()
    for entry in running:
        throttled.topics.add(entry.partition.topic)
        if entry.move is not None:
            throttled.brokers |= set(entry.move.involved)
    try:
        await _cancel(bootstrap, config, connections, execution, options, throttled)
    finally:
        await connections.close()
    return [e.partition for e in running]
