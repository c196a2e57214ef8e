"""The broker's one way to the active controller (Kafka's ``NodeToControllerChannelManager``):
every part of the broker that talks to the controller (registration and heartbeats, ISR
changes, producer id blocks, forwarded writes, directory assignments, metadata fetches) gets
its connections here, and so follows the quorum's leader (the metadata fetch, an observer of
the quorum, follows the leader its Fetch answers name, and asks here when they name none it can
reach).

Goals
    With ``controller.quorum.voters`` naming 3 or 5 controllers, a broker's requests reach the
    leader, and move to the next leader when it changes, without any part of the broker
    knowing there is more than one controller.

Constraints
    A single controller is connected to directly, as before (it speaks no DescribeQuorum).
    The leader is found by asking the controllers (DescribeQuorum, api 55): the leader
    answers with no error, the others name it (``leaderId``, and its address in ``nodes``).
    A connection that carries a NOT_CONTROLLER (41) answer closes itself once that answer is
    handed over, so the part that got it reconnects (to the new leader) at its next request;
    the answer itself reaches the caller, which retries as it does any retriable error. A
    request that times out or loses its connection makes the channel forget the leader too
    (a paused leader still accepts connections, but another has taken over).

    A paused leader keeps its TCP connections open, so only a deadline notices it: the
    metadata fetch's, the quorum's fetch timeout past its long poll
    (:mod:`rackwise.broker.metadata_follower`). Once a leader is forgotten because a request
    timed out and the controllers then name another, every connection still open to the old
    one is abandoned (its waiting requests fail as disconnected, on whichever loop they run),
    so a forwarded write waiting there is retried on the new leader at once instead of
    waiting out its own timeout. A leader that was only slow, and is named again, keeps its
    connections.

Algorithm
    ``connect()``: if a leader is known, connect to it; else ask every controller at once for
    the quorum's state; connect to the first that answers that it leads, or else to the
    leader another names; when none knows a leader yet (an election), connect to the first
    controller that accepts (its NOT_CONTROLLER answers close that connection again, and the
    caller retries).

Worked example
    Controllers 1, 2, 3; 1 leads. The broker's heartbeats go to 1. 1 is killed: the heartbeat
    fails (connection lost), ``connect()`` forgets 1, asks 2 (NOT_LEADER_OR_FOLLOWER, leader
    unknown: an election is on) and 3 (the same), fails; a second later 2 answers that it
    leads, and the heartbeats go to 2. Had 1 been paused instead, the metadata fetch would
    have timed out 2.5 s after its last answer (0.5 s of long poll, 2 s of fetch timeout);
    once 2 says it leads, a CreateTopics forwarded to 1 meanwhile fails over to 2.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Final

from rackwise.common.error_codes import NOT_CONTROLLER
from rackwise.net import (
    DisconnectException,
    KafkaConnection,
    NetworkException,
    RequestTimedOutException,
)
from rackwise.protocol import ApiKey

LOG: Final = logging.getLogger("rackwise.broker")
NO_LEADER: Final = -1
DESCRIBE_QUORUM_VERSION: Final = 2
DISCOVERY_TIMEOUT_S: Final = 2.0
METADATA_TOPIC: Final = "__cluster_metadata"

Address = tuple[str, int]


def carries_not_controller(response: Any) -> bool:
    """Whether ``response`` (any controller API's answer) says NOT_CONTROLLER, at its top or
    for one of its items."""
    if int(getattr(response, "error_code", 0) or 0) == NOT_CONTROLLER:
        return True
    for name in ("topics", "results", "responses"):
        for item in getattr(response, name, None) or ():
            if int(getattr(item, "error_code", 0) or 0) == NOT_CONTROLLER:
                return True
    return False


class LeaderConnection(KafkaConnection):
    """A connection to the leader that closes itself after an answer saying it is not."""

    channel: ControllerChannel | None = None
    loop: asyncio.AbstractEventLoop | None = None

    async def send(
        self,
        body: Any,
        *,
        timeout_s: float | None = None,
        plain: bool = False,
        off_loop: bool = False,
    ) -> Any:
        try:
            response = await super().send(body, timeout_s=timeout_s, plain=plain, off_loop=off_loop)
        except NetworkException as e:
            # A leader that stopped answering (paused, cut off) may have been replaced.
            if self.channel is not None:
                self.channel.forget_leader(
                    self.address, timed_out=isinstance(e, RequestTimedOutException)
                )
            raise
        if carries_not_controller(response):
            if self.channel is not None:
                self.channel.forget_leader(self.address)
            asyncio.get_running_loop().create_task(self.close())
            self._fail_all(f"{self.address[0]}:{self.address[1]} is not the active controller")
        return response

    def abandon(self, reason: str) -> None:
        """Close at once, failing every request waiting (called on the connection's loop)."""
        self._fail_all(reason)


class ControllerChannel:
    """Connections to the active controller among ``addresses`` (``voters`` maps the voters'
    ids to addresses when they are known). Its parts may run on several loops (threads)."""

    def __init__(
        self,
        addresses: Sequence[Address],
        *,
        voters: Mapping[int, Address] | None = None,
        client_id: str,
        connect_timeout_s: float,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.addresses = list(addresses)
        self.tls = tls
        """The TLS of the controller listener (None: plaintext)."""
        self.voters = dict(voters or {})
        self.client_id = client_id
        self.connect_timeout_s = connect_timeout_s
        self.leader: Address | None = None
        self._unanswered: Address | None = None
        self._lock = threading.Lock()
        self._connections: weakref.WeakSet[LeaderConnection] = weakref.WeakSet()

    @property
    def is_quorum(self) -> bool:
        return len(self.addresses) > 1

    def forget_leader(self, address: Address | None = None, *, timed_out: bool = False) -> None:
        """Forget the leader (if it is ``address``); ``timed_out``: a request to it had no
        answer in time, so its connections are abandoned once another is found to lead."""
        with self._lock:
            if address is None or address == self.leader:
                self.leader = None
            if timed_out and address is not None:
                self._unanswered = address

    def _leader_found(self, leader: Address) -> None:
        """Record ``leader``; abandon the connections to the one that stopped answering."""
        with self._lock:
            self.leader = leader
            unanswered, self._unanswered = self._unanswered, None
            if unanswered is None or unanswered == leader:
                return
            stale = [c for c in self._connections if c.address == unanswered and not c.is_closed]
        LOG.info(
            "the active controller moved from %s:%d (no answer) to %s:%d: %d connection(s) to "
            "the old one abandoned",
            *unanswered,
            *leader,
            len(stale),
        )
        reason = f"{unanswered[0]}:{unanswered[1]} stopped answering; {leader[0]}:{leader[1]} leads"
        for connection in stale:
            if connection.loop is not None:
                with contextlib.suppress(RuntimeError):  # its loop has closed
                    connection.loop.call_soon_threadsafe(connection.abandon, reason)

    async def connect(self) -> KafkaConnection:
        """A connection to the active controller (see the module docstring)."""
        if not self.is_quorum:
            return await self.open(self.addresses[0])
        leader = self.leader
        if leader is not None:
            try:
                return await self.open(leader)
            except NetworkException:
                self.forget_leader(leader)
        try:
            leader = await self._find_leader()
            self._leader_found(leader)
            return await self.open(leader)
        except NetworkException as e:
            failure = e
        for address in self.addresses:  # no leader known: whoever answers, as before
            try:
                return await self.open(address)
            except NetworkException as e:
                failure = e
        raise failure

    async def open(self, address: Address) -> KafkaConnection:
        """A connection to the controller at ``address`` (the metadata fetch's, to the leader
        its answers named), which forgets it as the leader when it stops answering."""
        connection = await LeaderConnection.connect(
            address[0],
            address[1],
            timeout_s=self.connect_timeout_s,
            client_id=self.client_id,
            tls=self.tls,
        )
        assert isinstance(connection, LeaderConnection)
        if self.is_quorum:
            connection.channel = self
            connection.loop = asyncio.get_running_loop()
            with self._lock:
                self._connections.add(connection)
        return connection

    async def _find_leader(self) -> Address:
        """The leader, asking every controller at once: the first that says it leads, or else
        the one the others name."""
        asks = [asyncio.ensure_future(self._describe(address)) for address in self.addresses]
        named: Address | None = None
        try:
            for ask in asyncio.as_completed(asks):
                try:
                    address, (error, leader_id, endpoints) = await ask
                except (TimeoutError, NetworkException, AttributeError, IndexError) as e:
                    LOG.debug("a controller did not describe the quorum: %s", e)
                    continue
                if error == 0:
                    return address
                if leader_id != NO_LEADER:
                    named = endpoints.get(leader_id) or self.voters.get(leader_id) or named
        finally:
            for ask in asks:
                ask.cancel()
            await asyncio.gather(*asks, return_exceptions=True)
        if named is not None:
            return named
        raise DisconnectException("no controller knows the active controller yet")

    async def _describe(self, address: Address) -> tuple[Address, tuple[int, int, dict[int, Any]]]:
        connection = await KafkaConnection.connect(
            address[0],
            address[1],
            timeout_s=self.connect_timeout_s,
            client_id=self.client_id,
            tls=self.tls,
        )
        try:
            response = await connection.request(
                ApiKey.DESCRIBE_QUORUM,
                version=DESCRIBE_QUORUM_VERSION,
                timeout_s=DISCOVERY_TIMEOUT_S,
                topics=[{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}],
            )
        finally:
            await connection.close()
        part = response.topics[0].partitions[0]
        endpoints = {
            int(node.node_id): (str(node.listeners[0].host), int(node.listeners[0].port))
            for node in getattr(response, "nodes", None) or ()
            if node.listeners
        }
        return address, (int(part.error_code), int(part.leader_id), endpoints)
