"""The seeded consumer group simulation (tests/groups/consumer_sim.py) with a group that
migrates online: it starts as a classic group of classic clients whose assignment the
consumer group takes over (``ConsumerGroups.upgrade``), then consumer-protocol clients join
and classic ones (new ones too) keep being served beside them, through JoinGroup, SyncGroup,
Heartbeat and LeaveGroup (rackwise.groups.consumer_classic), eager ones giving everything up
before they rejoin and cooperative ones reporting what they own.

The policy is ``upgrade``, so the group stays a consumer group whoever leaves (the downgrade
hands the group to the classic coordinator, a process the unit tests cover). Checked after
every step as in the consumer simulation: no partition owned by two running clients of
either protocol, a coordinator that replays the records (``ClassicMemberMetadata``
included) has the same group; then it settles with every subscribed partition owned.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from rackwise.common.error_codes import MEMBER_ID_REQUIRED, NONE, REBALANCE_IN_PROGRESS
from rackwise.groups import consumer_classic
from rackwise.groups.classic import STABLE, ClassicGroup, Member
from rackwise.groups.classic_effects import JoinRequest
from rackwise.groups.consumer_group import STABLE_STATE
from rackwise.groups.consumer_protocol import decode_assignment, encode_assignment
from tests.groups.consumer_sim import CONFIG, GROUP, Simulation

SESSION_MS = 6000


@dataclass
class ClassicClient:
    member_id: str
    cooperative: bool
    generation: int = -1
    owned: dict[uuid.UUID, frozenset[int]] = field(default_factory=dict)
    needs_join: bool = True


def _subscription(topics: tuple[str, ...], owned: list[tuple[str, list[int]]] | None) -> bytes:
    """A ``ConsumerProtocolSubscription``: version 0 (eager) or 1 with owned partitions."""
    out = struct.pack(">hi", 0 if owned is None else 1, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    out += struct.pack(">i", -1)
    if owned is not None:
        out += struct.pack(">i", len(owned))
        for t, ps in owned:
            out += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(ps))
            out += b"".join(struct.pack(">i", p) for p in ps)
    return out


class MigrationSimulation(Simulation):
    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.config = replace(CONFIG, migration_policy="upgrade")
        self.coordinator = type(self.coordinator)(self.config)
        self.classic: list[ClassicClient] = []
        self._upgrade()

    def _names(self) -> dict[uuid.UUID, str]:
        return {t.topic_id: name for name, t in self.topics.items()}

    def _upgrade(self) -> None:
        """A classic group of 2 or 3 members at generation 3, its partitions dealt out."""
        group = ClassicGroup(
            GROUP, state=STABLE, generation=3, protocol_type="consumer", protocol_name="range"
        )
        count = self.rng.randint(2, 3)
        parts = [(n, p) for n, t in sorted(self.topics.items()) for p in range(len(t.partitions))]
        for i in range(count):
            self.next_id += 1
            client = ClassicClient(f"c{self.next_id}", cooperative=self.rng.random() < 0.5)
            mine = parts[i::count]
            by_name: dict[str, list[int]] = {}
            for name, p in mine:
                by_name.setdefault(name, []).append(p)
            protocols = (("range", _subscription(("a", "b"), None)),)
            member = Member(
                client.member_id, None, "c", "/h", 5000, SESSION_MS, "consumer", protocols
            )
            member.assignment = encode_assignment(0, by_name)
            group.add(member)
            client.generation, client.needs_join = 3, False
            client.owned = {self.topics[n].topic_id: frozenset(ps) for n, ps in by_name.items()}
            self.classic.append(client)
        self._take(self.coordinator.upgrade(group, self.view, self.now))

    # ---- classic clients ----------------------------------------------------------------

    def _owned_by_name(self, client: ClassicClient) -> list[tuple[str, list[int]]]:
        names = self._names()
        return [(names[t], sorted(ps)) for t, ps in client.owned.items() if t in names]

    def _lost(self, client: ClassicClient) -> None:
        client.owned, client.generation, client.needs_join = {}, -1, True
        client.member_id = ""

    def classic_turn(self, client: ClassicClient) -> None:
        group = self.coordinator.groups.get(GROUP)
        if group is None or (client.needs_join and not group.members):
            # an empty consumer group gives way to a classic group on a JoinGroup: the client
            # leaves this simulation, which follows the consumer group
            self.classic.remove(client)
            return
        if client.needs_join:
            self._rejoin(client)
            return
        code, out = consumer_classic.heartbeat(
            self.coordinator, GROUP, client.member_id, None, client.generation, self.now
        )
        self._take(out)
        if code != NONE:
            if (
                code != REBALANCE_IN_PROGRESS
            ):  # REBALANCE_IN_PROGRESS keeps the member; others fence it
                self._lost(client)
            client.needs_join = True

    def _rejoin(self, client: ClassicClient) -> None:
        if not client.cooperative:
            client.owned = {}  # eager: everything is revoked before the JoinGroup
        owned = self._owned_by_name(client) if client.cooperative else None
        request = JoinRequest(
            GROUP, client.member_id, None, "consumer",
            (("range", _subscription(("a", "b"), owned)),),
            SESSION_MS, 5000, "c", "/h", 9,
        )  # fmt: skip
        answer, out = consumer_classic.join(self.coordinator, request, self.now, self.view)
        self._take(out)
        if answer["error_code"] == MEMBER_ID_REQUIRED:
            client.member_id = answer["member_id"]
            return
        if answer["error_code"] != NONE:
            self._lost(client)
            return
        client.generation = answer["generation_id"]
        self._sync(client)

    def _sync(self, client: ClassicClient) -> None:
        answer: dict[str, Any]
        answer, out = consumer_classic.sync(
            self.coordinator, GROUP, client.member_id, None, client.generation,
            "consumer", "range", self.now, self.view,
        )  # fmt: skip
        self._take(out)
        if answer["error_code"] != NONE:
            client.needs_join = True
            if answer["error_code"] != REBALANCE_IN_PROGRESS:
                self._lost(client)
            return
        given = decode_assignment(answer["assignment"])
        client.owned = {self.topics[n].topic_id: frozenset(ps) for n, ps in given.items() if ps}
        client.needs_join = False

    def classic_leave(self, client: ClassicClient) -> None:
        self.classic.remove(client)
        if client.member_id and GROUP in self.coordinator.groups:
            _, out = consumer_classic.leave(
                self.coordinator, GROUP, [(client.member_id, None)], self.view
            )
            self._take(out)

    # ---- the steps ----------------------------------------------------------------------

    def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.04 and self.classic:
            self.classic_leave(self.rng.choice(self.classic))
        elif roll < 0.06 and self.classic:
            self.classic.remove(self.rng.choice(self.classic))  # a crash
        elif roll < 0.09:
            self.classic.append(ClassicClient("", cooperative=self.rng.random() < 0.5))
        super().step()
        for client in list(self.classic):
            self.classic_turn(client)
        self.check()

    def check(self) -> None:
        super().check()
        seen: dict[tuple[uuid.UUID, int], str] = {}
        running = [c for c in self.clients if c.paused_until_ms <= self.now]
        for who, owned in [(c.member_id, c.owned) for c in running] + [
            (c.member_id, c.owned) for c in self.classic
        ]:
            for t, ps in owned.items():
                for p in ps:
                    assert (t, p) not in seen, f"{(t, p)} owned by {seen[(t, p)]} and {who}"
                    seen[(t, p)] = who

    def settle(self, rounds: int = 80) -> None:
        for c in self.clients:
            c.paused_until_ms = 0
        for _ in range(rounds):
            self.now += 1000
            self.client_timeouts()
            self.fire_timers()
            self.deliver_results(everything=True)
            for c in list(self.clients):
                self.heartbeat(c)
            for client in list(self.classic):
                self.classic_turn(client)
            self.check()
            group = self.coordinator.groups.get(GROUP)
            if group is None or not group.members:
                if not self.clients and not self.classic:
                    return
                continue
            if group.state == STABLE_STATE and self._all_settled(group):
                return
        raise AssertionError(f"the group is not stable: {self.coordinator.groups.get(GROUP)}")

    def _all_settled(self, group: Any) -> bool:
        live = {c.member_id for c in self.clients} | {c.member_id for c in self.classic}
        if set(group.members) != live or any(c.needs_join for c in self.classic):
            return False
        wanted = {"a", "b"} if self.classic else {t for c in self.clients for t in c.topics}
        every = {
            (self.topics[t].topic_id, p)
            for t in wanted
            for p in range(len(self.topics[t].partitions))
        }
        owned = {
            (t, p) for c in [*self.clients, *self.classic] for t, ps in c.owned.items() for p in ps
        }
        return owned == every
