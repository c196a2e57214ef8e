"""What the admin commands over rackwise's own client share: ``--bootstrap-server`` and
``--command-config`` read and checked, then a session of
:class:`~rackwise.client.connections.Connections` and
:class:`~rackwise.client.groups.GroupsAdmin` that is closed however the command ends, and a
cluster's refusal turned into one line.

The client modules are imported when a session opens, so that a command's ``--help`` and its
refusals of bad arguments cost no protocol code.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from rackwise.cli._servers import bootstrap_addresses
from rackwise.cli.errors import CommandError

if TYPE_CHECKING:
    from rackwise.client.connections import Connections
    from rackwise.client.groups import GroupsAdmin


def add_connection_options(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``--bootstrap-server`` and ``--command-config``."""
    parser.add_argument(
        "--bootstrap-server",
        required=required,
        metavar="HOST:PORT",
        help="REQUIRED: the server(s) to connect to, HOST1:PORT1,HOST2:PORT2",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client properties (Kafka's keys, SSL and SASL too)",
    )


def command_config(args: argparse.Namespace, tool: str) -> dict[str, str]:
    """The ``--command-config`` file's properties, checked; empty without the flag."""
    from rackwise.client.command_config import read_command_config  # noqa: PLC0415

    path = getattr(args, "command_config", None)
    return read_command_config(path, tool) if path else {}


def librdkafka_settings(props: dict[str, str]) -> dict[str, str]:
    """``props`` (a client properties file) with the Java security keys in librdkafka's
    terms; one that cannot be honoured is one error line."""
    from rackwise.client.librdkafka_security import (  # noqa: PLC0415
        SecurityConfigError,
        with_librdkafka_security,
    )

    try:
        return with_librdkafka_security(props)
    except SecurityConfigError as e:
        raise CommandError(str(e)) from None


@asynccontextmanager
async def admin_session(
    args: argparse.Namespace,
    config: dict[str, str],
    *,
    client_id: str,
    default_timeout_ms: int = 30_000,
) -> AsyncIterator[tuple[Connections, GroupsAdmin]]:
    """Connections to the cluster and the admin calls over them, for the block; a failure of
    the cluster becomes one :class:`CommandError` line with Kafka's exception."""
    from rackwise.client.command_config import timeout_ms  # noqa: PLC0415
    from rackwise.client.connections import Connections  # noqa: PLC0415
    from rackwise.client.groups import GroupsAdmin, GroupsError  # noqa: PLC0415

    timeout = max(timeout_ms(config, default_timeout_ms), 1)
    connections = Connections(
        bootstrap_addresses(args.bootstrap_server),
        timeout_s=timeout / 1000,
        client_id=config.get("client.id", client_id),
    )
    try:
        yield connections, GroupsAdmin(connections, timeout_ms=timeout)
    except GroupsError as e:
        raise CommandError(e.java_text) from None
    finally:
        await connections.close()
