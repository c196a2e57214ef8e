"""A seeded simulation of the classic group coordinator (:class:`ClassicGroups`, pure) with its
own clock, timers and log: eager consumers of the classic protocol (JoinGroup, SyncGroup with
the leader's range assignment, Heartbeat every second, LeaveGroup) that join, leave, crash,
stall past their session, restart as the same static member, and a coordinator that fails
over by loading the group's records from the log, with writes lost or failing on the way.

Checked after every step: a coordinator's generation never goes back while it lives, nor
below the last generation whose assignment reached a member; no partition is given to two
members of one generation (a static member replacing itself counts as one); a Stable group's
members own disjoint assignments; the group's counts (members waiting on a JoinGroup, static
members) agree with its members. :meth:`Simulation.settle` then runs without faults until the
group is Stable with every running client in its generation and every subscribed partition
assigned once.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from rackwise.common.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    MEMBER_ID_REQUIRED,
    NONE,
    UNKNOWN_MEMBER_ID,
)
from rackwise.groups.classic import STABLE
from rackwise.groups.classic_coordinator import ClassicGroups, ClassicOutcome, Write
from rackwise.groups.classic_effects import JoinRequest, TimerKey
from rackwise.groups.offsets import GroupOffsets

GROUP = "g"
TOPICS = {"a": 4, "b": 3}
SESSION_MS = 10_000
REBALANCE_MS = 5_000
HEARTBEAT_MS = 1_000


@dataclass(eq=False)
class Client:
    """A consumer of the classic protocol, eager: it gives up its partitions when it rejoins."""

    name: str
    topics: tuple[str, ...]
    instance_id: str | None
    member_id: str = ""
    generation: int = -1
    state: str = "idle"  # idle (to join), joining, syncing, stable, dead
    owned: frozenset[str] = frozenset()
    next_heartbeat_ms: int = 0
    paused_until_ms: int = 0
    joined: dict[str, Any] = field(default_factory=dict)

    @property
    def identity(self) -> str:
        return self.instance_id or self.member_id


def metadata(topics: tuple[str, ...]) -> bytes:
    return ",".join(topics).encode()


def range_assignment(members: list[dict[str, Any]]) -> dict[str, bytes]:
    """The leader's assignment: each topic's partitions in ranges over its subscribers."""
    owned: dict[str, list[str]] = {m["member_id"]: [] for m in members}
    for topic, count in TOPICS.items():
        subscribers = sorted(
            m["member_id"] for m in members if topic in m["metadata"].decode().split(",")
        )
        for i, member in enumerate(subscribers):
            share, extra = divmod(count, len(subscribers))
            start = i * share + min(i, extra)
            end = start + share + (1 if i < extra else 0)
            owned[member] += [f"{topic}-{p}" for p in range(start, end)]
    return {m: ",".join(ps).encode() for m, ps in owned.items()}


def partitions(assignment: bytes) -> frozenset[str]:
    return frozenset(p for p in assignment.decode().split(",") if p)


class Simulation:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = 0
        self.initial_delay_ms = self.rng.choice((0, 0, 3_000))
        self.log: list[tuple[bytes, bytes | None]] = []
        self.coordinator = self._new_coordinator()
        self.timers: dict[TimerKey, int] = {}
        self.writes: list[Write] = []
        self.waiting: dict[object, tuple[Client, str]] = {}
        self.clients: list[Client] = []
        self.handed: dict[int, dict[str, str]] = {}
        """generation -> partition -> the identity it was given to."""
        self.highest_handed = 0
        self.highest_seen = 0
        self.next_name = 0

    def _new_coordinator(self) -> ClassicGroups:
        return ClassicGroups(
            self.initial_delay_ms,
            max_size=100,
            new_uuid=lambda: uuid.UUID(int=self.rng.getrandbits(128)),
        )

    # ---- the coordinator's driver ---------------------------------------------------------

    def carry(self, out: ClassicOutcome) -> None:
        for timer in out.timers:
            if timer.delay_ms is None:
                self.timers.pop(timer.key, None)
            else:
                self.timers[timer.key] = self.now + timer.delay_ms
        self.writes.extend(out.writes)
        for waiter, answer in out.answers:
            assert waiter in self.waiting, f"a request answered twice: {answer}"
            client, kind = self.waiting.pop(waiter)
            if kind == "join":
                self.on_join(client, answer)
            else:
                self.on_sync(client, answer)

    def fire_due(self) -> None:
        while True:
            due = [(at, key) for key, at in self.timers.items() if at <= self.now]
            if not due:
                return
            _, key = min(due)
            del self.timers[key]
            self.carry(self.coordinator.fire(key, self.now))

    def finish_writes(self, faults: bool) -> None:
        while self.writes and (not faults or self.rng.random() < 0.7):
            write = self.writes.pop(0)
            code = NONE
            if faults and self.rng.random() < 0.05:
                code = COORDINATOR_NOT_AVAILABLE
            else:
                self.log.extend(write.records)
            self.carry(self.coordinator.written(write.token, code, self.now))

    def fail_over(self) -> None:
        """The coordinator's broker dies: the writes in flight reach the log or not, the next
        leader loads the log; the clients' waiting requests are answered NOT_COORDINATOR."""
        for write in self.writes:
            if self.rng.random() < 0.5:
                self.log.extend(write.records)
        self.writes.clear()
        old = self.coordinator.unload()
        self.timers.clear()
        self.coordinator = self._new_coordinator()
        self.highest_seen = 0
        state = GroupOffsets()
        for key, value in self.log:
            state.replay(key, value)
        self.carry(self.coordinator.load(state.stored_metadata()))
        self.carry(ClassicOutcome(answers=old.answers))

    # ---- the clients ----------------------------------------------------------------------

    def join(self, client: Client) -> None:
        client.owned = frozenset()  # eager: everything is given up before joining
        client.state = "joining"
        waiter = object()
        self.waiting[waiter] = (client, "join")
        request = JoinRequest(
            group_id=GROUP,
            member_id=client.member_id,
            instance_id=client.instance_id,
            protocol_type="consumer",
            protocols=(("range", metadata(client.topics)),),
            session_timeout_ms=SESSION_MS,
            rebalance_timeout_ms=REBALANCE_MS,
            client_id=client.name,
            client_host="/127.0.0.1",
            version=9,
        )
        self.carry(self.coordinator.join(request, waiter, self.now))

    def on_join(self, client: Client, answer: dict[str, Any]) -> None:
        if client.state == "dead":
            return
        code = answer["error_code"]
        client.next_heartbeat_ms = self.now + HEARTBEAT_MS
        if code == MEMBER_ID_REQUIRED:
            client.member_id = answer["member_id"]
            self.join(client)
        elif code == NONE:
            client.member_id = answer["member_id"]
            client.generation = answer["generation_id"]
            client.state = "syncing"
            assignments: dict[str, bytes] = {}
            if answer["members"] and not answer["skip_assignment"]:
                assignments = range_assignment(answer["members"])
            waiter = object()
            self.waiting[waiter] = (client, "sync")
            out = self.coordinator.sync(
                GROUP,
                client.member_id,
                client.instance_id,
                client.generation,
                "consumer",
                answer["protocol_name"],
                assignments,
                waiter,
            )
            self.carry(out)
        else:
            self.rejoin(client, code)

    def on_sync(self, client: Client, answer: dict[str, Any]) -> None:
        if client.state == "dead":
            return
        code = answer["error_code"]
        if code != NONE:
            self.rejoin(client, code)
            return
        client.state = "stable"
        client.owned = partitions(answer["assignment"])
        client.next_heartbeat_ms = self.now + HEARTBEAT_MS
        given = self.handed.setdefault(client.generation, {})
        for p in client.owned:
            holder = given.setdefault(p, client.identity)
            assert holder == client.identity, (
                f"generation {client.generation}: {p} given to {holder} and {client.identity}"
            )
        self.highest_handed = max(self.highest_handed, client.generation)

    def rejoin(self, client: Client, code: int) -> None:
        if code == FENCED_INSTANCE_ID:  # another process took its group.instance.id
            client.state = "dead"
            client.owned = frozenset()
            return
        if code == UNKNOWN_MEMBER_ID:
            client.member_id = ""
        client.generation = -1
        client.state = "idle"
        client.owned = frozenset()

    def act(self, client: Client) -> None:
        if client.state == "dead" or client.paused_until_ms > self.now:
            return
        if client.state == "idle":
            self.join(client)
        elif client.state == "stable" and client.next_heartbeat_ms <= self.now:
            client.next_heartbeat_ms = self.now + HEARTBEAT_MS
            code, out = self.coordinator.heartbeat(
                GROUP, client.member_id, client.instance_id, client.generation
            )
            self.carry(out)
            if code != NONE:
                self.rejoin(client, code)
                if client.state == "idle":
                    self.join(client)

    def new_client(self, instance_id: str | None = None) -> Client:
        self.next_name += 1
        topics = self.rng.choice((("a",), ("b",), ("a", "b"), ("a", "b")))
        client = Client(f"c{self.next_name}", topics, instance_id)
        self.clients.append(client)
        return client

    # ---- steps ----------------------------------------------------------------------------

    def running(self) -> list[Client]:
        return [c for c in self.clients if c.state != "dead"]

    def step(self) -> None:
        self.now += self.rng.randint(0, 1_500)
        self.fire_due()
        roll = self.rng.random()
        running = self.running()
        if roll < 0.12 or not running:
            static = self.rng.random() < 0.4
            taken = {c.instance_id for c in running}
            free = [f"pod-{i}" for i in range(4) if f"pod-{i}" not in taken]
            self.new_client(self.rng.choice(free) if static and free else None)
        elif roll < 0.17:
            self.leave(self.rng.choice(running))
        elif roll < 0.22:
            self.rng.choice(running).state = "dead"  # a crash: its session runs out
        elif roll < 0.27:
            client = self.rng.choice(running)
            client.paused_until_ms = self.now + self.rng.randint(2_000, 2 * SESSION_MS)
        elif roll < 0.31:
            self.restart_static()
        elif roll < 0.34:
            self.fail_over()
        self.finish_writes(faults=True)
        for client in list(self.running()):
            self.act(client)
        self.check()

    def leave(self, client: Client) -> None:
        client.state = "dead"
        client.owned = frozenset()
        if client.member_id:
            _, _, out = self.coordinator.leave(
                GROUP, [(client.member_id, client.instance_id)], self.now
            )
            self.carry(out)

    def restart_static(self) -> None:
        """A static member's process dies and starts again: same group.instance.id, no id."""
        static = [c for c in self.running() if c.instance_id is not None]
        if static:
            old = self.rng.choice(static)
            old.state = "dead"
            old.owned = frozenset()
            self.new_client(old.instance_id).topics = old.topics

    # ---- what must hold ---------------------------------------------------------------------

    def check(self) -> None:
        group = self.coordinator.groups.get(GROUP)
        if group is None:
            return
        assert group.generation >= self.highest_seen, "the generation went back"
        assert group.generation >= self.highest_handed or group.state != STABLE, (
            f"Stable at generation {group.generation} after {self.highest_handed} was handed out"
        )
        self.highest_seen = group.generation
        waiting = sum(1 for m in group.members.values() if m.awaiting_join)
        assert group.awaiting_join_count == waiting
        statics = {m.instance_id: m.member_id for m in group.members.values() if m.instance_id}
        assert group.static_members == statics
        assert group.leader is None or group.leader in group.members
        if group.state == STABLE:
            seen: set[str] = set()
            for member in group.members.values():
                mine = partitions(member.assignment)
                assert not mine & seen, f"Stable generation {group.generation}: {mine & seen}"
                seen |= mine

    def settle(self, limit_ms: int = 120_000) -> None:
        """No more faults: every paused client resumes, and the group must end Stable with the
        running clients as its members and every subscribed partition assigned once."""
        for client in self.clients:
            client.paused_until_ms = 0
        deadline = self.now + limit_ms
        while self.now < deadline:
            self.now += 250
            self.fire_due()
            self.finish_writes(faults=False)
            for client in list(self.running()):
                self.act(client)
            self.check()
            if self.settled():
                return
        group = self.coordinator.groups.get(GROUP)
        raise AssertionError(
            f"not settled: group {group and (group.state, group.generation, sorted(group.members))}"
            f", clients {[(c.name, c.state, c.member_id, c.generation) for c in self.running()]}"
        )

    def settled(self) -> bool:
        group = self.coordinator.groups.get(GROUP)
        running = self.running()
        if not running:
            return True
        if group is None or group.state != STABLE or self.writes:
            return False
        if {c.member_id for c in running} != set(group.members):
            return False
        if any(c.state != "stable" or c.generation != group.generation for c in running):
            return False
        owned = [p for c in running for p in c.owned]
        wanted = {t for c in running for t in c.topics}
        every = {f"{t}-{p}" for t in wanted for p in range(TOPICS[t])}
        assert len(owned) == len(set(owned)) and set(owned) == every, (owned, every)
        return True


def sweep(seeds: int, steps: int = 300) -> list[tuple[int, str]]:
    """Run ``seeds`` simulations of ``steps`` faulty steps each, then settle: the failures."""
    failures: list[tuple[int, str]] = []
    for seed in range(seeds):
        try:
            sim = Simulation(seed)
            for _ in range(steps):
                sim.step()
            sim.settle()
        except AssertionError as e:
            failures.append((seed, str(e)))
    return failures


if __name__ == "__main__":  # python -m tests.groups.classic_sim [seeds]
    import logging
    import sys

    logging.disable(logging.WARNING)
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    found = sweep(count)
    print(f"{count} seeds x 300 steps: {len(found)} failures", *found[:5], sep="\n")
