"""``rackwise metadata-quorum --bootstrap-server HOST:PORT describe --status | --replication``:
the controller quorum as ``kafka-metadata-quorum.sh`` prints it (Kafka's
``MetadataQuorumCommand``): DescribeQuorum (api 55), which a broker forwards to the active
controller, and DescribeCluster for the cluster id. ``--bootstrap-controller`` asks a
controller directly, its DescribeCluster for the controller endpoints (KIP-919); a server
that does not serve DescribeCluster is refused for ``--status``, naming the address. The
requests and the text are :mod:`rackwise.client.quorum`'s; this module reads the arguments and
prints."""

from __future__ import annotations

import argparse
import time

from rackwise.cli._servers import check_bootstrap_servers
from rackwise.cli.errors import CommandError


def configure(parser: argparse.ArgumentParser) -> None:
    servers = parser.add_mutually_exclusive_group()
    servers.add_argument("--bootstrap-server", metavar="HOST:PORT", help="a broker to ask")
    servers.add_argument("--bootstrap-controller", metavar="HOST:PORT", help="a controller to ask")
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client properties (Kafka's keys, SSL and SASL too)",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    describe = actions.add_parser("describe", help="describe the metadata quorum")
    describe.add_argument(
        "--status",
        action="store_true",
        help="A short summary of the quorum status and the other provides detailed "
        "information about the status of replication.",
    )
    describe.add_argument(
        "--replication",
        action="store_true",
        help="Detailed information about the status of replication",
    )
    describe.add_argument(
        "--human-readable",
        action="store_true",
        help="Human-readable output (relative times) with --replication",
    )
    describe.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415  (kept out of the command's start-up)

    if args.status and args.replication:
        raise CommandError(
            "Only one of --status or --replication should be specified with describe sub-command"
        )
    if not (args.status or args.replication):
        raise CommandError(
            "One of --status or --replication must be specified with describe sub-command"
        )
    if args.status and args.human_readable:
        raise CommandError("The option --human-readable is only supported along with --replication")
    if not (args.bootstrap_server or args.bootstrap_controller):
        raise CommandError("One of --bootstrap-server or --bootstrap-controller must be specified")
    from rackwise.client.command_config import read_command_config, timeout_ms  # noqa: PLC0415
    from rackwise.client.quorum import (  # noqa: PLC0415
        describe_quorum,
        replication_table,
        status_text,
    )

    config = (
        read_command_config(args.command_config, "metadata-quorum") if args.command_config else {}
    )
    servers = check_bootstrap_servers(args.bootstrap_server or args.bootstrap_controller)
    cluster_id, info = asyncio.run(
        describe_quorum(
            servers,
            cluster_id=bool(args.status),
            controller=args.bootstrap_server is None,
            timeout_s=timeout_ms(config, 10_000) / 1000,
        )
    )
    if args.status:
        assert cluster_id is not None  # asked for
        print(status_text(cluster_id, info))
    else:
        print(replication_table(info, args.human_readable, time.time_ns() // 1_000_000))
    return 0
