"""The :class:`~rackwise.client.groups.Transport` of the command line: rackwise's own
``KafkaConnection`` (:mod:`rackwise.net`), one connection per broker address, opened on first
use with its API versions negotiated, closed together at the end.

A request to no particular node goes to the first bootstrap server (of the addresses given,
at least one) that accepts a connection. A connection that fails is dropped and its error
becomes a retriable :class:`~rackwise.client.groups.GroupsError` (NETWORK_EXCEPTION, or
REQUEST_TIMED_OUT), so the caller's retries open it again; but while no broker has answered
yet, bootstrap servers that all refuse the connection (or cannot be resolved) are
:class:`BootstrapRefused`, which is not retried: a command given only dead addresses says so at
once instead of waiting out its timeout. A broker that speaks no version of
an API in the range asked for is UNSUPPORTED_VERSION, named with the address and the API.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from rackwise.client.groups import GroupsError, Node
from rackwise.common.error_codes import NETWORK_EXCEPTION, REQUEST_TIMED_OUT, UNSUPPORTED_VERSION
from rackwise.net import (
    DisconnectException,
    KafkaConnection,
    NetworkException,
    RequestTimedOutException,
)
from rackwise.protocol import ApiKey, ProtocolError

NO_VERSIONS: Final = (0, -1)


class BootstrapRefused(GroupsError):
    """Every bootstrap server refused the connection before any broker answered (see the
    module docstring): not retriable."""

    @property
    def is_retriable(self) -> bool:
        return False


class Connections:
    """Connections to a cluster's brokers, by address (see the module docstring)."""

    def __init__(
        self,
        bootstrap: Sequence[tuple[str, int]],
        *,
        timeout_s: float,
        client_id: str = "rackwise-consumer-groups",
    ) -> None:
        self.bootstrap = list(bootstrap)
        self.timeout_s = timeout_s
        self.client_id = client_id
        self._open: dict[tuple[str, int], KafkaConnection] = {}
        self._answered = False

    async def _connection(
        self, address: tuple[str, int], refused: list[str] | None = None
    ) -> KafkaConnection:
        """The open connection to ``address``, opened if need be; a connection that could not
        be opened at all (refused, unresolvable) is also added to ``refused``."""
        connection = self._open.get(address)
        if connection is not None and not connection.is_closed:
            return connection
        try:
            try:
                connection = await KafkaConnection.connect(
                    *address,
                    timeout_s=self.timeout_s,
                    client_id=self.client_id,
                    request_timeout_s=self.timeout_s,
                )
            except DisconnectException as e:
                if refused is not None:
                    refused.append(str(e))
                raise
            try:
                await connection.negotiate_versions(timeout_s=self.timeout_s)
            except BaseException:
                await connection.close()
                raise
        except NetworkException as e:
            raise _network_error(e) from None
        self._open[address] = connection
        self._answered = True
        return connection

    async def _any(self) -> KafkaConnection:
        for address in self._open:
            if not self._open[address].is_closed:
                return self._open[address]
        failure: GroupsError | None = None
        refused: list[str] = []
        for address in self.bootstrap:
            try:
                return await self._connection(address, refused)
            except GroupsError as e:
                failure = e
        assert failure is not None  # there is at least one bootstrap server
        if not self._answered and len(refused) == len(self.bootstrap):
            raise BootstrapRefused(NETWORK_EXCEPTION, "; ".join(refused))
        raise failure

    async def send(
        self,
        node: Node | None,
        api_key: int,
        values: Mapping[str, Any],
        *,
        min_version: int = 0,
        max_version: int | None = None,
    ) -> Any:
        connection = await (
            self._any() if node is None else self._connection((node.host, node.port))
        )
        host, port = connection.address
        low, _ = connection.api_versions.get(api_key, NO_VERSIONS)
        try:
            version = connection.version_for(api_key)
        except ProtocolError:
            version = -1
        if max_version is not None:
            version = min(version, max_version)
        if version < max(low, min_version):
            raise GroupsError(
                UNSUPPORTED_VERSION,
                f"{host}:{port} does not support {_api_name(api_key)} v{min_version} or later",
            )
        try:
            return await connection.request(api_key, dict(values), version=version)
        except NetworkException as e:
            self._open.pop((host, port), None)
            raise _network_error(e) from None

    async def close(self) -> None:
        """Close every connection opened, including one a request still running opens while
        this waits on another's close."""
        while self._open:
            _, connection = self._open.popitem()
            await connection.close()


def _network_error(error: NetworkException) -> GroupsError:
    code = REQUEST_TIMED_OUT if isinstance(error, RequestTimedOutException) else NETWORK_EXCEPTION
    return GroupsError(code, str(error))


def _api_name(api_key: int) -> str:
    try:
        return "".join(word.capitalize() for word in ApiKey(api_key).name.split("_"))
    except ValueError:
        return f"API {api_key}"
