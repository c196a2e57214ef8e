"""Classic consumer groups: their members, states and generations (Kafka's ``ClassicGroup`` and
``ClassicGroupMember``, for the JoinGroup / SyncGroup / Heartbeat / LeaveGroup protocol), and
what of them the ``GroupMetadataValue`` record keeps in ``__consumer_offsets``.

Goals
    * :class:`ClassicGroup`: the rules Kafka's group coordinator applies to one group (which
      members there are, who leads, which protocol the group runs, whether every member has
      rejoined, and what a commit, a heartbeat or a sync is answered), which the
      rebalance rules (:mod:`rackwise.groups.classic_joins`,
      :mod:`rackwise.groups.classic_rebalance`) and a partition's classic groups
      (:mod:`rackwise.groups.classic_coordinator`) build on.
    * :func:`stored` / :func:`restored`: a group as its ``GroupMetadataValue`` keeps it, and
      the group a loaded one describes; the record's bytes are
      :mod:`rackwise.groups.group_metadata`'s.

Constraints
    * Pure: no clock and no event loop. A member's pending JoinGroup and SyncGroup answers are
      opaque slots (``join_waiter``, ``sync_waiter``) that the coordinator fills and empties;
      here only whether they are filled counts ("awaiting join" in Kafka's words).
    * States and transitions are Kafka's (``ClassicGroupState``): Empty, PreparingRebalance,
      CompletingRebalance, Stable and Dead; a transition Kafka does not allow raises.

Algorithm
    Each member lists its protocols in order of preference; ``supported`` counts, for each
    protocol name, how many members list it. A protocol every member lists is a candidate;
    :meth:`ClassicGroup.select_protocol` lets each member vote for its first candidate and
    takes the one with the most votes, ties going to the first in the order of Java's
    ``HashMap`` of the votes (so that a group picks what Kafka's coordinator would pick).

Worked example
    Two consumers join ``billing`` with ``[range, roundrobin]`` and ``[roundrobin, range]``.
    Both protocols are candidates; each gets one vote, and the tie goes to ``range`` (its
    ``String.hashCode`` puts it in an earlier bucket of a 16-bucket ``HashMap``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rackwise.common.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION,
    INCONSISTENT_GROUP_PROTOCOL,
    NONE,
    REBALANCE_IN_PROGRESS,
    UNKNOWN_MEMBER_ID,
)
from rackwise.common.java import java_string_hash
from rackwise.groups.group_metadata import (
    NO_TIMESTAMP,
    StoredGroup,
    StoredMember,
    subscription_topics,
)
from rackwise.groups.offsets import OffsetsFormatError

EMPTY: Final = "Empty"
PREPARING_REBALANCE: Final = "PreparingRebalance"
COMPLETING_REBALANCE: Final = "CompletingRebalance"
STABLE: Final = "Stable"
DEAD: Final = "Dead"

_VALID_PREVIOUS: Final = {
    # Kafka's ClassicGroupState.validPreviousStates
    EMPTY: frozenset({PREPARING_REBALANCE}),
    PREPARING_REBALANCE: frozenset({STABLE, COMPLETING_REBALANCE, EMPTY}),
    COMPLETING_REBALANCE: frozenset({PREPARING_REBALANCE}),
    STABLE: frozenset({COMPLETING_REBALANCE}),
    DEAD: frozenset({STABLE, PREPARING_REBALANCE, COMPLETING_REBALANCE, EMPTY, DEAD}),
}

CONSUMER_PROTOCOL_TYPE: Final = "consumer"
UNKNOWN_MEMBER: Final = ""
"""Kafka's ``UNKNOWN_MEMBER_ID``: the member id of a JoinGroup from a new member."""

Protocols = tuple[tuple[str, bytes], ...]
"""A member's protocols in its order of preference: (name, metadata)."""


@dataclass(eq=False, slots=True)
class Member:
    """One member of a classic group (Kafka's ``ClassicGroupMember``)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    assignment: bytes = b""
    is_new: bool = False
    """Joined in the current rebalance and not yet given a generation: its session may expire
    even while its JoinGroup waits."""
    join_waiter: Any = field(default=None, repr=False)
    """The member's JoinGroup waiting for the rebalance (set by the coordinator)."""
    sync_waiter: Any = field(default=None, repr=False)
    """The member's SyncGroup waiting for the leader's assignment (set by the coordinator)."""

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_waiter is not None

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka: a new member's session may run out while it waits to join; any other member
        waiting on a JoinGroup or SyncGroup counts as alive."""
        return not self.is_new and (self.awaiting_join or self.awaiting_sync)


def generate_member_id(
    client_id: str, instance_id: str | None, new_uuid: Callable[[], uuid.UUID] = uuid.uuid4
) -> str:
    """``<group.instance.id or client id>-<random UUID>``, as Kafka's ``generateMemberId``
    (``new_uuid`` makes the UUID: a seeded one in a simulation)."""
    return f"{instance_id if instance_id is not None else client_id}-{new_uuid()}"


class ClassicGroup:
    """One classic group's members and state (module docstring)."""

    def __init__(
        self,
        group_id: str,
        *,
        state: str = EMPTY,
        generation: int = 0,
        protocol_type: str | None = None,
        protocol_name: str | None = None,
        leader: str | None = None,
        state_timestamp_ms: int = NO_TIMESTAMP,
    ) -> None:
        self.group_id = group_id
        self.state = state
        self.previous_state = DEAD if state == DEAD else EMPTY
        self.generation = generation
        self.protocol_type = protocol_type
        self.protocol_name = protocol_name
        self.leader = leader
        self.state_timestamp_ms = state_timestamp_ms
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}
        """group.instance.id -> member id."""
        self.pending_join: set[str] = set()
        """Member ids handed out with MEMBER_ID_REQUIRED, not joined yet."""
        self.pending_sync: set[str] = set()
        """Members given this generation that have not sent their SyncGroup yet."""
        self.supported: dict[str, int] = {}
        self.new_member_added = False
        self.awaiting_join_count = 0

    # ---- members ------------------------------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader == member_id

    def add(self, member: Member, join_waiter: Any = None) -> None:
        """Add ``member`` (raises, changing nothing, if it cannot join: the caller checks
        :meth:`supports_protocols` first, as Kafka's does)."""
        if member.instance_id is not None and member.instance_id in self.static_members:
            raise ValueError(f"static member {member.instance_id} is already in the group")
        if self.members and self.protocol_type != member.protocol_type:
            raise ValueError("the group and the member's protocol types differ")
        if not self.supports_protocols(member.protocol_type, [n for n, _ in member.protocols]):
            raise ValueError("none of the member's protocols can be supported")
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader is None:
            self.leader = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, 1)
        member.join_waiter = join_waiter
        if member.awaiting_join:
            self.awaiting_join_count += 1
        self.pending_join.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        removed = self.members.pop(member_id, None)
        if removed is not None:
            self._count_protocols(removed, -1)
            if removed.awaiting_join:
                self.awaiting_join_count -= 1
            if removed.instance_id is not None:
                self.static_members.pop(removed.instance_id, None)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        self.pending_join.discard(member_id)
        self.pending_sync.discard(member_id)

    def update_member(
        self,
        member: Member,
        protocols: Protocols,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        join_waiter: Any,
    ) -> None:
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        self.set_join_waiter(member, join_waiter)

    def set_join_waiter(self, member: Member, join_waiter: Any) -> None:
        if join_waiter is not None and not member.awaiting_join:
            self.awaiting_join_count += 1
        elif join_waiter is None and member.awaiting_join:
            self.awaiting_join_count -= 1
        member.join_waiter = join_waiter

    def _count_protocols(self, member: Member, delta: int) -> None:
        for name, _ in member.protocols:
            self.supported[name] = self.supported.get(name, 0) + delta

    def replace_static_member(
        self, instance_id: str, old_id: str, new_id: str
    ) -> tuple[Member, Any, Any]:
        """Give the static member ``instance_id`` the id ``new_id`` in place of ``old_id``,
        keeping its protocols, timeouts and assignment (Kafka's ``replaceStaticMember``); the
        old id's waiting JoinGroup and SyncGroup are returned, for the caller to fence."""
        removed = self.members.pop(old_id, None)
        if removed is None:
            raise ValueError(f"group {self.group_id} has no member {old_id} to replace")
        if removed.awaiting_join:
            self.awaiting_join_count -= 1
        old_join, old_sync = removed.join_waiter, removed.sync_waiter
        removed.join_waiter = removed.sync_waiter = None  # answered by the caller, once
        replacement = Member(
            new_id,
            removed.instance_id,
            removed.client_id,
            removed.client_host,
            removed.rebalance_timeout_ms,
            removed.session_timeout_ms,
            removed.protocol_type,
            removed.protocols,
            assignment=removed.assignment,
        )
        self.members[new_id] = replacement
        if self.leader == old_id:
            self.leader = new_id
        self.static_members[instance_id] = new_id
        self.pending_sync.discard(old_id)
        return replacement, old_join, old_sync

    def static_member_id(self, instance_id: str) -> str | None:
        return self.static_members.get(instance_id)

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.awaiting_join_count and not self.pending_join

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else make the first member that did the leader;
        False if there is no leader or no member rejoined."""
        if self.leader is None:
            return False
        if self.members[self.leader].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader = member.member_id
                return True
        return False

    # ---- protocols ----------------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Whether a member of ``protocol_type`` listing ``names`` may join (Kafka's
        ``supportsProtocols``)."""
        names = list(names)
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        size = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported.get(n, 0) == size for n in names
        )

    def select_protocol(self) -> str:
        if not self.members:
            raise ValueError(f"group {self.group_id} has no members to select a protocol")
        size = len(self.members)
        candidates = {name for name, count in self.supported.items() if count == size}
        votes: dict[str, int] = {}
        for member in self.members.values():
            name = member.vote(candidates)
            votes[name] = votes.get(name, 0) + 1
        best = max(votes.values())
        tied = [name for name, count in votes.items() if count == best]
        return min(tied, key=_java_hashmap_slot)

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members subscribe to, for a group of protocol type ``consumer`` whose
        members' subscriptions parse (Kafka's ``computeSubscribedTopics``); else None."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(subscription_topics(member.metadata(self.protocol_name)))
        except (OffsetsFormatError, ValueError):
            return None
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        topics = self.subscribed_topics()
        if topics is None:
            return self.protocol_type == CONSUMER_PROTOCOL_TYPE
        return topic in topics

    # ---- state --------------------------------------------------------------------------------

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[PREPARING_REBALANCE]

    def transition_to(self, state: str, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[state]:
            raise ValueError(f"group {self.group_id} cannot go from {self.state} to {state}")
        self.previous_state = self.state
        self.state = state
        self.state_timestamp_ms = now_ms

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(EMPTY, now_ms)
        self.pending_sync.clear()

    def joined_members(self) -> list[tuple[str, str | None, bytes]]:
        """(member id, group.instance.id, metadata of the group's protocol) of every member: the
        leader's JoinGroup answer."""
        assert self.protocol_name is not None
        return [
            (m.member_id, m.instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        ]

    # ---- checks -------------------------------------------------------------------------------

    def member_error(self, member_id: str, instance_id: str | None) -> int:
        """NONE, FENCED_INSTANCE_ID or UNKNOWN_MEMBER_ID (Kafka's ``validateMember``)."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                return UNKNOWN_MEMBER_ID
            if existing != member_id:
                return FENCED_INSTANCE_ID
        return NONE if member_id in self.members else UNKNOWN_MEMBER_ID

    def _generation_error(self, member_id: str, instance_id: str | None, generation: int) -> int:
        """What a Heartbeat and a SyncGroup are refused with first: a Dead group, a member
        that is not this group's, a generation that is not its."""
        if self.state == DEAD:
            return COORDINATOR_NOT_AVAILABLE
        code = self.member_error(member_id, instance_id)
        if code == NONE and generation != self.generation:
            return ILLEGAL_GENERATION
        return code

    def heartbeat_error(self, member_id: str, instance_id: str | None, generation: int) -> int:
        """The answer to a Heartbeat (Kafka's ``classicGroupHeartbeatToClassicGroup``)."""
        code = self._generation_error(member_id, instance_id, generation)
        if code != NONE:
            return code
        if self.state == EMPTY:
            return UNKNOWN_MEMBER_ID
        if self.state == PREPARING_REBALANCE:
            return REBALANCE_IN_PROGRESS
        return NONE

    def sync_error(
        self,
        member_id: str,
        instance_id: str | None,
        generation: int,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> int:
        """Kafka's ``validateSyncGroup``, then REBALANCE_IN_PROGRESS while preparing one."""
        code = self._generation_error(member_id, instance_id, generation)
        if code != NONE:
            return code
        if (protocol_type is not None and protocol_type != self.protocol_type) or (
            protocol_name is not None and protocol_name != self.protocol_name
        ):
            return INCONSISTENT_GROUP_PROTOCOL
        if self.state == PREPARING_REBALANCE:
            return REBALANCE_IN_PROGRESS
        return NONE

    def commit_error(self, member_id: str, instance_id: str | None, generation: int) -> int:
        """Kafka's ``validateOffsetCommit`` for a commit that is not transactional."""
        if self.state == DEAD:
            return COORDINATOR_NOT_AVAILABLE
        if generation < 0 and self.state == EMPTY:
            return NONE
        if generation >= 0 or member_id or instance_id is not None:
            code = self.member_error(member_id, instance_id)
            if code != NONE:
                return code
            if generation != self.generation:
                return ILLEGAL_GENERATION
        elif self.state != EMPTY:
            return UNKNOWN_MEMBER_ID
        if self.state == COMPLETING_REBALANCE:
            return REBALANCE_IN_PROGRESS
        return NONE


def _java_hashmap_slot(name: str) -> int:
    """The bucket of ``name`` in a ``java.util.HashMap`` of the default 16 buckets."""
    h = java_string_hash(name) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 15


def stored(group: ClassicGroup, assignment: dict[str, bytes] | None = None) -> StoredGroup:
    """What Kafka stores of ``group`` (``newGroupMetadataRecord``): no members before a
    protocol is chosen (a new group), else each with its subscription and its assignment from
    ``assignment`` when given, else its own."""
    members = tuple(
        StoredMember(
            m.member_id,
            m.instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            m.metadata(group.protocol_name),
            (assignment or {}).get(m.member_id, m.assignment),
        )
        for m in group.members.values()
        if group.protocol_name is not None
    )
    return StoredGroup(
        group.protocol_type or "",
        group.generation,
        group.protocol_name,
        group.leader,
        group.state_timestamp_ms,
        members,
    )


def restored(group_id: str, value: StoredGroup) -> ClassicGroup:
    """The group a loaded ``GroupMetadataValue`` describes: Stable with its members, or Empty
    (Kafka's ``replay`` of the record at load)."""
    group = ClassicGroup(
        group_id,
        state=STABLE if value.members else EMPTY,
        generation=value.generation,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
        state_timestamp_ms=value.state_timestamp_ms,
    )
    for m in value.members:
        protocols: Protocols = ((value.protocol or "", m.subscription),)
        member = Member(
            m.member_id,
            m.instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            value.protocol_type,
            protocols,
            assignment=m.assignment,
        )
        group.add(member)
    if value.leader in group.members:
        group.leader = value.leader
    return group


def as_protocols(protocols: Sequence[Any]) -> Protocols:
    """A JoinGroup request's protocols as (name, metadata) pairs."""
    return tuple((str(p.name), bytes(p.metadata)) for p in protocols)
