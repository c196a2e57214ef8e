"""A seeded simulation of the consumer group coordinator: clients that follow KIP-848 (drop
what a heartbeat's answer no longer assigns, report what they own, rejoin when fenced, give
everything up when they have not been answered for their rebalance timeout), a coordinator
that fails over by replaying its records, topics that grow and whose replicas and leaders
move, members that join, leave, crash, pause and lose answers. With ``offload`` every target after a
group's first is a job computed "elsewhere": its result comes back to
:meth:`ConsumerGroups.assigned` after a random delay, often after the group epoch moved on
(stale, so dropped and asked again); a result from before a failover is dropped, as the
driver drops it.

Checked after every step: no partition is owned by two clients that are running (a stalled
client does nothing, not even consume, and heartbeats first when it resumes), nor by two
members in the coordinator's view (replay raises on that); a client's member epoch never
goes back while it stays in the group; a coordinator that replays the records has the same
groups. :func:`Simulation.settle` then runs fault-free heartbeats until the group is stable
with every subscribed partition owned.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field, replace

from rackwise.assignors.model import PartitionInfo
from rackwise.common.error_codes import NONE
from rackwise.groups.consumer_coordinator import ConsumerGroups, Outcome
from rackwise.groups.consumer_group import EMPTY_STATE, STABLE_STATE
from rackwise.groups.consumer_target import AssignmentJob, compute
from rackwise.groups.consumer_types import (
    ConsumerGroupConfig,
    Heartbeat,
    Timer,
    TopicsView,
    TopicView,
)

GROUP = "g"
REBALANCE_TIMEOUT_MS = 5000
RACKS = ("/dc1/r1", "/dc1/r2", "/dc2/r1", "/dc2/r2")
CONFIG = ConsumerGroupConfig(
    heartbeat_interval_ms=1000, session_timeout_ms=10_000, leader_rack_damping_ms=3000
)
ASSIGNORS = (
    "uniform",
    "range",
    "rack-aware-uniform",
    "leader-rack-aware-range",
    "leader-rack-aware-cooperative-sticky",
    "rack-local-optimal",
)


@dataclass
class Client:
    member_id: str
    topics: tuple[str, ...]
    rack: str
    assignor: str | None
    instance_id: str | None = None
    epoch: int = 0
    owned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    last_answer_ms: int = 0
    paused_until_ms: int = 0
    joined: bool = False


class Simulation:
    def __init__(self, seed: int, offload: bool = False) -> None:
        self.rng = random.Random(seed)
        self.config = replace(CONFIG, offload_partitions=0) if offload else CONFIG
        self.now = 0
        self.version = 1
        self.topics: dict[str, TopicView] = {}
        for name in ("a", "b"):
            self.topics[name] = TopicView(
                name,
                uuid.UUID(int=self.rng.getrandbits(128)),
                tuple(self._partition() for _ in range(self.rng.randint(1, 6))),
            )
        self.log: list[tuple[bytes, bytes | None]] = []
        self.coordinator = ConsumerGroups(self.config)
        self.jobs: list[tuple[int, ConsumerGroups, AssignmentJob]] = []
        """(when its result comes back, the coordinator it is for, the job)"""
        self.results = {"installed": 0, "stale": 0, "dropped": 0}
        self.timers: dict[tuple[str, str, str], Timer] = {}
        self.clients: list[Client] = []
        self.next_id = 0

    def _partition(self) -> PartitionInfo:
        return PartitionInfo(tuple(self.rng.sample(RACKS, 2)))

    @property
    def view(self) -> TopicsView:
        return TopicsView(self.version, dict(self.topics))

    # ---- the coordinator's side -------------------------------------------------------

    def _take(self, out: Outcome) -> None:
        self.log.extend(out.records)
        for job in out.jobs:
            self.jobs.append((self.now + self.rng.randint(0, 4000), self.coordinator, job))
        for timer in out.timers:
            key = (timer.kind, timer.group_id, timer.member_id)
            if timer.deadline_ms is None:
                self.timers.pop(key, None)
            else:
                self.timers[key] = timer

    def fire_timers(self) -> None:
        for key, timer in sorted(self.timers.items()):
            if timer.deadline_ms is not None and timer.deadline_ms <= self.now:
                self.timers.pop(key, None)
                self._take(self.coordinator.expire(timer, self.now, self.view))

    def deliver_results(self, everything: bool = False) -> None:
        """Hand back the results whose time has come (all of them with ``everything``)."""
        due = [j for j in self.jobs if everything or j[0] <= self.now]
        self.jobs = [j for j in self.jobs if j not in due]
        for _, coordinator, job in due:
            if coordinator is not self.coordinator:
                self.results["dropped"] += 1
                continue
            group = coordinator.groups.get(job.group_id)
            stale = group is None or (group.epoch, set(group.members)) != (
                job.epoch,
                set(job.members),
            )
            self.results["stale" if stale else "installed"] += 1
            self._take(coordinator.assigned(compute(job), self.view))
            if not stale:
                assert group is not None and group.target_epoch == job.epoch

    def fail_over(self) -> None:
        fresh = ConsumerGroups(self.config)
        for key, value in self.log:
            fresh.replay(key, value)
        old = self.coordinator.groups.get(GROUP)
        new = fresh.groups.get(GROUP)
        if old is not None and new is not None:
            assert new.members == old.members
            assert new.targets == old.targets
            assert (new.epoch, new.target_epoch, new.topics) == (
                old.epoch,
                old.target_epoch,
                old.topics,
            )
            assert new.owners == old.owners
        self.coordinator = fresh
        self.timers = {}
        for timer in fresh.on_loaded(self.now):
            self.timers[(timer.kind, timer.group_id, timer.member_id)] = timer

    # ---- the clients' side --------------------------------------------------------------

    def join(self) -> None:
        self.next_id += 1
        static = self.rng.random() < 0.3
        self.clients.append(
            Client(
                member_id=f"m{self.next_id}",
                topics=tuple(sorted(self.rng.sample(["a", "b"], self.rng.randint(1, 2)))),
                rack=self.rng.choice(RACKS),
                assignor=self.rng.choice((None, *ASSIGNORS)) if not self.clients else None,
                instance_id=f"i{self.next_id}" if static else None,
            )
        )

    def heartbeat(
        self, client: Client, *, lose_answer: bool = False, epoch: int | None = None
    ) -> None:
        sent_epoch = client.epoch if epoch is None else epoch
        request = Heartbeat(
            GROUP,
            client.member_id,
            sent_epoch,
            instance_id=client.instance_id,
            rack_id=client.rack,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            topic_names=client.topics,
            server_assignor=client.assignor,
            owned=tuple((t, tuple(sorted(ps))) for t, ps in client.owned.items()),
        )
        out = self.coordinator.heartbeat(request, self.now, self.view)
        self._take(out)
        answer = out.answer
        assert answer is not None
        if lose_answer or sent_epoch < 0:
            return
        if answer.error_code != NONE:
            client.owned, client.epoch = {}, 0
            return
        assert answer.member_epoch >= client.epoch or client.epoch == 0, (answer, client)
        client.epoch = answer.member_epoch
        client.last_answer_ms = self.now
        if answer.assignment is not None:
            client.owned = {t: ps for t, ps in answer.assignment.items() if ps}
        client.joined = True

    def client_timeouts(self) -> None:
        """A client unanswered for its rebalance timeout stops consuming what it owns, as a
        consumer does once ``max.poll.interval.ms`` (its rebalance timeout) passes: by then
        the coordinator may have fenced it."""
        for c in self.clients:
            if c.owned and self.now - c.last_answer_ms >= REBALANCE_TIMEOUT_MS:
                c.owned, c.epoch = {}, 0

    def check(self) -> None:
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for c in self.clients:
            if c.paused_until_ms > self.now:
                continue  # a stalled client consumes nothing; it heartbeats first on resuming
            for t, ps in c.owned.items():
                for p in ps:
                    assert (t, p) not in seen, f"{(t, p)} owned by {seen[(t, p)]} and {c.member_id}"
                    seen[(t, p)] = c.member_id

    # ---- faults ------------------------------------------------------------------------

    def step(self) -> None:
        self.now += self.rng.randint(100, 1500)
        self.client_timeouts()
        self.fire_timers()
        self.deliver_results()
        roll = self.rng.random()
        live = [c for c in self.clients if c.paused_until_ms <= self.now]
        if roll < 0.08 or not self.clients:
            self.join()
        elif roll < 0.12 and live:
            c = self.rng.choice(live)
            self.heartbeat(c, epoch=-2 if c.instance_id and self.rng.random() < 0.5 else -1)
            self.clients.remove(c)
            if c.instance_id is not None and self.rng.random() < 0.7:
                self.next_id += 1
                self.clients.append(
                    Client(f"m{self.next_id}", c.topics, c.rack, None, instance_id=c.instance_id)
                )
        elif roll < 0.15 and live:
            self.clients.remove(self.rng.choice(live))  # a crash: nothing more is heard
        elif roll < 0.19 and live:
            self.rng.choice(live).paused_until_ms = self.now + self.rng.randint(2000, 15000)
        elif roll < 0.22:
            self._grow()
        elif roll < 0.26:
            self._move_replicas()
        elif roll < 0.29:
            self.fail_over()
        for c in list(self.clients):
            if c.paused_until_ms <= self.now:
                self.heartbeat(c, lose_answer=self.rng.random() < 0.05)
        self.check()

    def _grow(self) -> None:
        name = self.rng.choice(sorted(self.topics))
        t = self.topics[name]
        more = tuple(self._partition() for _ in range(self.rng.randint(1, 3)))
        self.topics[name] = TopicView(name, t.topic_id, t.partitions + more)
        self.version += 1

    def _move_replicas(self) -> None:
        name = self.rng.choice(sorted(self.topics))
        t = self.topics[name]
        parts = list(t.partitions)
        i = self.rng.randrange(len(parts))
        parts[i] = self._partition()
        self.topics[name] = TopicView(name, t.topic_id, tuple(parts))
        self.version += 1

    def settle(self, rounds: int = 60) -> None:
        """Heartbeat without faults until the group is stable (failing if it never is)."""
        for c in self.clients:
            c.paused_until_ms = 0
        for _ in range(rounds):
            self.now += 1000
            self.client_timeouts()
            self.fire_timers()
            self.deliver_results(everything=True)
            for c in list(self.clients):
                self.heartbeat(c)
            self.check()
            group = self.coordinator.groups.get(GROUP)
            if not self.clients and (group is None or group.state == EMPTY_STATE):
                return
            if group is not None and group.state == STABLE_STATE and self._settled(group):
                return
        raise AssertionError(f"the group is not stable: {self.coordinator.groups.get(GROUP)}")

    def _settled(self, group) -> bool:  # type: ignore[no-untyped-def]
        live = {c.member_id for c in self.clients}
        if set(group.members) != live:
            return False
        wanted = {t for c in self.clients for t in c.topics}
        every = {
            (self.topics[t].topic_id, p)
            for t in wanted
            for p in range(len(self.topics[t].partitions))
        }
        owned = {(t, p) for c in self.clients for t, ps in c.owned.items() for p in ps}
        return owned == every
