"""``rackwise leader-election``: elect partitions' preferred (or, with ``unclean``, any)
leaders, as ``kafka-leader-election.sh`` (Kafka's ``LeaderElectionCommand``) does: its flags
(``--election-type``, ``--topic`` with ``--partition``, ``--all-topic-partitions`` or
``--path-to-json-file``, ``--admin.config``, here also ``--command-config``), its checks and
its lines.

Prints ``Successfully completed leader election (PREFERRED) for partitions orders-0,
orders-1``, ``Valid replica already elected for partitions ...``, and one ``Error completing
leader election (PREFERRED) for partition: orders-2: ...`` line per failure, after which it
ends with ``N replica(s) could not be elected`` and exit status 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rackwise.cli._admin import add_connection_options, admin_session, command_config
from rackwise.cli.errors import CommandError

TIMEOUT_MS = 30_000
CLIENT_ID = "rackwise-leader-election"
_CHOICES = ("preferred", "unclean")


def _election_type(text: str) -> str:
    if text.lower() not in _CHOICES:
        raise argparse.ArgumentTypeError(f"Cannot parse argument '{text}' of option election-type")
    return text.upper()


def _partition(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"Cannot parse argument '{text}' of option partition"
        ) from None


def configure(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser, required=False)
    add = parser.add_argument
    add(
        "--admin.config",
        dest="admin_config",
        metavar="FILE",
        help="admin client properties (Kafka's name for --command-config)",
    )
    add(
        "--election-type",
        type=_election_type,
        metavar="TYPE",
        help="REQUIRED: preferred or unclean",
    )
    add("--topic", metavar="TOPIC", help="the topic of the partition to elect a leader for")
    add("--partition", type=_partition, metavar="ID", help="the partition (with --topic)")
    add("--all-topic-partitions", action="store_true", help="every eligible partition")
    add(
        "--path-to-json-file",
        metavar="FILE",
        help='the partitions: {"partitions": [{"topic": "foo", "partition": 1}]}',
    )
    parser.set_defaults(run=run)  # fmt: skip


def _check(args: argparse.Namespace) -> None:
    """Kafka's ``validate``, in its order."""
    missing = [
        flag
        for flag, value in (
            ("bootstrap-server", args.bootstrap_server),
            ("election-type", args.election_type),
        )
        if not value
    ]
    if missing:
        raise CommandError(f"Missing required option(s): {', '.join(missing)}")
    chosen = [args.topic is not None, args.all_topic_partitions, args.path_to_json_file is not None]
    if sum(chosen) != 1:
        raise CommandError(
            "One and only one of the following options is required: topic, "
            "all-topic-partitions, path-to-json-file"
        )
    if args.topic is not None and args.partition is None:
        raise CommandError("Missing required option(s): partition")
    if args.topic is None and args.partition is not None:
        raise CommandError("Option partition is only allowed if topic is used")


def run(args: argparse.Namespace) -> int:
    from rackwise.client.partition_args import parse_election_json  # noqa: PLC0415
    from rackwise.common import TopicPartition  # noqa: PLC0415

    _check(args)
    if args.admin_config and not args.command_config:
        args.command_config = args.admin_config
    config = command_config(args, "leader-election")
    config.setdefault("request.timeout.ms", str(TIMEOUT_MS // 2))
    partitions = None
    if args.path_to_json_file is not None:
        text = Path(args.path_to_json_file).read_text(encoding="utf-8")
        partitions = parse_election_json(text)
    elif args.topic is not None:
        partitions = [TopicPartition(args.topic, args.partition)]

    async def elect() -> tuple[list[str], int]:
        from rackwise.client.partition_tools import elect_leaders  # noqa: PLC0415

        async with admin_session(args, config, client_id=CLIENT_ID) as (connections, _):
            return await elect_leaders(connections, args.election_type, partitions, TIMEOUT_MS)

    import asyncio  # noqa: PLC0415 - only once the arguments are checked

    lines, failed = asyncio.run(elect())
    for line in lines:
        print(line)
    if failed:
        print(f"error: {failed} replica(s) could not be elected", file=sys.stderr)
        return 1
    return 0
