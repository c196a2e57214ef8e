"""``rackwise placement``: ask a running cluster where its configured replica placer
(``broker.replica.placer``) would put a topic's replicas, with KIP-879's CreateReplicaPlacement
(api key 1000 in rackwise), and print the answer as the reassignment JSON that
``kafka-reassign-partitions --execute`` reads. Nothing is created or moved."""

from __future__ import annotations

import argparse

from rackwise.cli._servers import check_bootstrap_servers
from rackwise.cli.errors import CommandError
from rackwise.cli.topics import DEFAULT_TIMEOUT_MS
from rackwise.formats.reassignment import (
    PartitionReassignment,
    Reassignment,
    format_reassignment,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT", help="a broker")
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client properties (Kafka's keys, SSL and SASL too)",
    )
    parser.add_argument("--partitions", required=True, type=int, metavar="N")
    parser.add_argument("--replication-factor", required=True, type=int, metavar="R")
    parser.add_argument(
        "--force-simple-placement",
        action="store_true",
        help="Kafka's rack-unaware placement instead of the configured placer",
    )
    parser.add_argument(
        "--broker-ids", default=None, metavar="1,2,3", help="the brokers to place on (default: all)"
    )
    parser.add_argument(
        "--topic", default="topic", metavar="NAME", help="the topic named in the JSON"
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"wait for a broker and for the answer (default {DEFAULT_TIMEOUT_MS})",
    )
    parser.set_defaults(run=run)


def parse_broker_ids(text: str | None) -> list[int]:
    """``1,2,3`` as broker ids; None (no flag) is every usable broker, an empty list."""
    if text is None:
        return []
    ids = []
    for part in text.split(","):
        try:
            ids.append(int(part))
        except ValueError:
            raise CommandError(f"--broker-ids: {part.strip()!r} is not a broker id") from None
    return ids


def reassignment_of(topic: str, placed: list[tuple[int, tuple[int, ...]]]) -> Reassignment:
    """The placer's answer as a reassignment document for ``topic``."""
    return Reassignment(
        tuple(PartitionReassignment(topic, partition, replicas) for partition, replicas in placed)
    )


def run(args: argparse.Namespace) -> int:
    if args.partitions < 1:
        raise CommandError(f"--partitions must be at least 1, not {args.partitions}")
    if args.replication_factor < 1:
        raise CommandError(
            f"--replication-factor must be at least 1, not {args.replication_factor}"
        )
    broker_ids = parse_broker_ids(args.broker_ids)
    check_bootstrap_servers(args.bootstrap_server)
    from rackwise.client.command_config import read_command_config, timeout_ms  # noqa: PLC0415

    config = read_command_config(args.command_config, "placement") if args.command_config else {}
    from rackwise.client.admin import Admin  # noqa: PLC0415 - loads the wire protocol

    with Admin(
        args.bootstrap_server,
        timeout_ms=timeout_ms(config, args.timeout_ms),
        client_id=config.get("client.id", "rackwise-admin"),
    ) as admin:
        placed = admin.create_replica_placement(
            args.partitions,
            args.replication_factor,
            force_simple_placement=args.force_simple_placement,
            broker_ids=broker_ids,
        )
    print(format_reassignment(reassignment_of(args.topic, placed)))
    return 0
