"""Listening sockets for :mod:`rackwise.net.server`: bound as asyncio binds them (every address
a host resolves to, ``SO_REUSEADDR``, IPv6 sockets IPv6-only), but accepted by the server
itself, so that it decides what an ``accept`` failure means (:data:`RESOURCE_ERRNOS`)."""

from __future__ import annotations

import asyncio
import errno
import socket
from typing import Any, Final

LISTEN_BACKLOG: Final = 100
"""Connections the system queues before they are accepted (asyncio's default)."""
RESOURCE_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""``accept`` failures that mean the process or the system is out of descriptors or memory."""


async def listen(host: str, port: int) -> list[socket.socket]:
    """Listening sockets for every address ``host`` resolves to, all on one port (the one the
    system chose for the first when ``port`` is 0)."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    seen: set[Any] = set()
    try:
        for family, kind, proto, _, address in infos:
            if address in seen:
                continue
            seen.add(address)
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


def peer_address(address: Any) -> tuple[str, str]:
    """``(ip, "ip:port")`` of an accepted peer."""
    if isinstance(address, tuple) and len(address) >= 2:
        return str(address[0]), f"{address[0]}:{address[1]}"
    return str(address), str(address)
