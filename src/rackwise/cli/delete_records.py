"""``rackwise delete-records --offset-json-file FILE``: delete the records of partitions
below an offset, as ``kafka-delete-records.sh`` (Kafka's ``DeleteRecordsCommand``) does and
prints it.

The file is Kafka's: ``{"partitions": [{"topic": "orders", "partition": 0, "offset": 5}],
"version": 1}`` (an offset of -1 deletes up to the high watermark). The command prints
``Executing records delete operation``, ``Records delete operation completed:``, then one
``partition: orders-0\\tlow_watermark: 5`` line per partition, or ``partition: orders-0\\terror:
...`` with Kafka's exception for a partition the cluster refused.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rackwise.cli._admin import add_connection_options, admin_session, command_config
from rackwise.cli.errors import CommandError

CLIENT_ID = "rackwise-delete-records"
TIMEOUT_MS = 30_000


def configure(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser, required=False)
    parser.add_argument(
        "--offset-json-file",
        metavar="FILE",
        help='REQUIRED: {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], '
        '"version": 1}',
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rackwise.client.partition_args import parse_offset_json  # noqa: PLC0415

    missing = [
        f'"[{flag}]"'
        for flag, value in (
            ("bootstrap-server", args.bootstrap_server),
            ("offset-json-file", args.offset_json_file),
        )
        if not value
    ]
    if missing:
        raise CommandError(f"Missing required argument {', '.join(missing)}")
    config = command_config(args, "delete-records")
    offsets = parse_offset_json(Path(args.offset_json_file).read_text(encoding="utf-8"))

    async def delete() -> list[str]:
        from rackwise.client.partition_tools import delete_records  # noqa: PLC0415

        async with admin_session(args, config, client_id=CLIENT_ID) as (connections, admin):
            print("Executing records delete operation", flush=True)
            lines = await delete_records(connections, admin, offsets, TIMEOUT_MS)
            print("Records delete operation completed:")
            return lines

    import asyncio  # noqa: PLC0415 - only once the arguments are checked

    for line in asyncio.run(delete()):
        print(line)
    return 0
