"""``rackwise get-offsets``: the offsets of topic partitions, as ``kafka-get-offsets.sh``
(Kafka's ``GetOffsetShell``) prints them, one ``topic:partition:offset`` line each, sorted as
Kafka sorts them (``t-10`` before ``t-2``).

Flags are Kafka's: ``--topic`` (a regular expression) with ``--partitions 0,1``, or
``--topic-partitions 'orders:0-3,audit'``; ``--time`` ``latest`` (-1, the default),
``earliest`` (-2), ``max-timestamp`` (-3) or ms since the epoch; ``--exclude-internal-topics``;
``--command-config``. A refusal prints ``Error occurred: ...`` on stderr and exits 1, as the
tool does.

Worked example
    ``rackwise get-offsets --bootstrap-server 127.0.0.1:9092 --topic orders --time -2`` prints
    ``orders:0:0`` and ``orders:1:0``.
"""

from __future__ import annotations

import argparse
import sys

from rackwise.cli._admin import add_connection_options, admin_session, command_config
from rackwise.cli.errors import CommandError

CLIENT_ID = "GetOffsetShell"


def configure(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser, required=False)
    add = parser.add_argument
    add(
        "--topic-partitions",
        metavar="PATTERNS",
        help="topic-partition patterns, e.g. topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3",
    )
    add("--topic", metavar="TOPIC", help="the topic (a regular expression; default: all)")
    add("--partitions", metavar="IDS", help="comma-separated partition ids (default: all)")
    add(
        "--time",
        default="latest",
        metavar="TIME",
        help="<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp (default latest)",
    )
    add("--exclude-internal-topics", action="store_true", help="leave out internal topics")
    parser.set_defaults(run=run)  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from rackwise.client.partition_args import ToolError  # noqa: PLC0415

    try:
        lines = _offsets(args)
    except (CommandError, ToolError) as e:
        print(f"Error occurred: {e}", file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0


def _offsets(args: argparse.Namespace) -> list[str]:
    from rackwise.client.partition_args import (  # noqa: PLC0415
        PartitionFilter,
        ToolError,
        parse_time,
    )

    if not args.bootstrap_server:
        raise CommandError('Missing required argument "[bootstrap-server]"')
    config = command_config(args, "get-offsets")
    if args.topic_partitions is not None and (args.topic is not None or args.partitions):
        raise ToolError("--topic-partitions cannot be used with --topic or --partitions")
    timestamp = parse_time(args.time)
    if args.topic_partitions is not None:
        selected = PartitionFilter.of_patterns(args.topic_partitions)
    else:
        selected = PartitionFilter.of_topic(args.topic, args.partitions)

    async def ask() -> list[str]:
        from rackwise.client.partition_tools import get_offsets  # noqa: PLC0415

        async with admin_session(args, config, client_id=CLIENT_ID) as (_, admin):
            return await get_offsets(
                admin, selected, timestamp, exclude_internal=args.exclude_internal_topics
            )

    import asyncio  # noqa: PLC0415 - only once the arguments are checked

    return asyncio.run(ask())
