"""``rackwise log-dirs --describe``: where each replica lives on each broker and how big it is,
printed exactly as Kafka's ``kafka-log-dirs.sh --describe`` prints it (Kafka's
``LogDirsCommand``), or with ``--format kip113`` as KIP-113 specified the tool's output.

Goals
    A script written against ``kafka-log-dirs.sh`` reads this command's output unchanged: the
    two progress lines, then one line of JSON (:func:`rackwise.formats.log_dirs.format_log_dirs`,
    whose members come in Kafka's order), and on an unknown broker Kafka's error on stderr
    with exit status 1.

Constraints
    * The requests, the orders and the report are :mod:`rackwise.client.log_dirs`'s; this
      module reads the arguments and prints. ``--topic-list`` filters the answers, as the
      tool does.
    * ``--format kip113`` prints the progress lines, then one KIP-113 document per broker
      queried (``{"version":1,"log_dirs":[{"is_live":..,"path":..,"partitions":[{"topic":..,
      "partition":..,"size":..,"is_temporary":..}]}]}``), one line each, in the same order.

Worked example
    ``rackwise log-dirs --describe --bootstrap-server 127.0.0.1:9092 --broker-list 1,4`` on a
    cluster of brokers 1, 2 and 3 prints to stderr ``ERROR: The given brokers do not exist
    from --broker-list: 4. Current existent brokers: 1,2,3`` and exits 1; without
    ``--broker-list`` it prints ``Querying brokers for log directories information``,
    ``Received log directory information from brokers 1,2,3`` and the JSON.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from rackwise.cli.errors import CommandError
from rackwise.formats.log_dirs import QUERYING_LINE, RECEIVED_PREFIX, format_log_dirs

if TYPE_CHECKING:  # the client loads the wire protocol: imported when the command runs
    pass

KAFKA_FORMAT: Final = "kafka"
KIP113_FORMAT: Final = "kip113"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--describe",
        action="store_true",
        help="describe the log directories of the brokers (required)",
    )
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="HOST:PORT",
        help="the server(s) to use for bootstrapping",
    )
    parser.add_argument(
        "--broker-list",
        default="",
        metavar="IDS",
        help='the brokers to query, "0,1,2" (default: every broker of the cluster)',
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client properties (Kafka's keys, SSL and SASL too)",
    )
    parser.add_argument(
        "--topic-list",
        default="",
        metavar="TOPICS",
        help='the topics to show, "t1,t2" (default: every topic)',
    )
    parser.add_argument(
        "--format",
        choices=[KAFKA_FORMAT, KIP113_FORMAT],
        default=KAFKA_FORMAT,
        help="kafka (default: kafka-log-dirs.sh's JSON) or kip113 (one document per broker)",
    )
    parser.set_defaults(run=run)


def _split(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415  (kept out of the command's start-up)

    if not args.describe:
        raise CommandError('Missing required argument "[describe]"')
    try:
        brokers = [int(part) for part in _split(args.broker_list)]
    except ValueError:
        raise CommandError(f"--broker-list takes broker ids: {args.broker_list}") from None
    topics = frozenset(_split(args.topic_list))
    addresses = _addresses(args.bootstrap_server)
    from rackwise.client import log_dirs as calls  # noqa: PLC0415

    if args.command_config:
        from rackwise.client.command_config import read_command_config, timeout_ms  # noqa: PLC0415

        config = read_command_config(args.command_config, "log-dirs")
        settings = (config.get("client.id", calls.CLIENT_ID), timeout_ms(config, 30_000) / 1000)
    else:
        settings = (calls.CLIENT_ID, calls.TIMEOUT_S)

    async def main() -> int:
        calls.use_client_settings(*settings)
        return await describe(addresses, brokers, topics, args.format, sys.stdout, sys.stderr)

    return asyncio.run(main())


def _addresses(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in _split(bootstrap):
        host, _, port = item.strip().rpartition(":")
        if not host or not port.isdigit():
            raise CommandError(f"--bootstrap-server takes HOST:PORT[,HOST:PORT...]: {item}")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise CommandError("--bootstrap-server takes HOST:PORT[,HOST:PORT...]")
    return out


async def describe(
    addresses: Sequence[tuple[str, int]],
    brokers: Sequence[int],
    topics: frozenset[str],
    output_format: str,
    out: Any,
    err: Any,
) -> int:
    """The command: ``out`` gets the progress lines and the JSON, ``err`` the error for an
    unknown broker; the exit status."""
    from rackwise.client import log_dirs as calls  # noqa: PLC0415

    cluster = await calls.live_brokers(addresses)
    missing = calls.missing_brokers(brokers, cluster)
    if missing:
        print(
            "ERROR: The given brokers do not exist from --broker-list: "
            f"{calls.broker_set(missing)}. Current existent brokers: {calls.broker_set(cluster)}",
            file=err,
        )
        return 1
    queried = calls.brokers_to_query(brokers, cluster)
    print(QUERYING_LINE, file=out, flush=True)
    report = await calls.describe_brokers(cluster, queried, topics)
    print(RECEIVED_PREFIX + calls.broker_set(queried), file=out)
    if output_format == KIP113_FORMAT:
        for broker in report.brokers:
            print(calls.kip113_document(broker), file=out)
    else:
        print(format_log_dirs(report), file=out)
    return 0
