"""``rackwise consumer-perf-test``: Kafka's ``kafka-consumer-perf-test.sh`` with its flags and
its output lines, on confluent-kafka (:mod:`rackwise.client.consumer_perf` does the work).
As Kafka's tool, the consumer subscribes to the topic in ``--group`` and reads the partitions
the group assigns it, from the beginning where the group has no committed offset
(``--from-latest``: from the end); ``rebalance.time.ms`` is the time the group's rebalances
took. ``--json`` prints the summary as one JSON object."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rackwise.cli._servers import refuse_dead_bootstrap
from rackwise.client.consumer_perf import (
    DEFAULT_FETCH_SIZE,
    DEFAULT_REPORTING_INTERVAL_MS,
    DEFAULT_SOCKET_BUFFER_SIZE,
    DEFAULT_TIMEOUT_MS,
    ConsumerPerfOptions,
    run_consumer_perf,
)
from rackwise.client.perf_output import DEFAULT_DATE_FORMAT


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "This tool is used to verify the consumer performance (Kafka's "
        "kafka-consumer-perf-test.sh): it subscribes to the topic in a consumer group and "
        "reads the partitions the group assigns it."
    )
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: brokers")
    parser.add_argument("--topic", metavar="TOPIC", help="REQUIRED: the topic to consume from")
    parser.add_argument(
        "--messages", type=int, metavar="COUNT", help="REQUIRED: the number of records to read"
    )
    parser.add_argument(
        "--group", metavar="GID", help="the consumer group to join (default perf-consumer-<random>)"
    )
    parser.add_argument(
        "--fetch-size",
        type=int,
        default=DEFAULT_FETCH_SIZE,
        metavar="SIZE",
        help=f"max.partition.fetch.bytes (default {DEFAULT_FETCH_SIZE})",
    )
    parser.add_argument(
        "--from-latest",
        action="store_true",
        help="with no committed offset, start at the end of a partition, not its beginning",
    )
    parser.add_argument(
        "--socket-buffer-size",
        type=int,
        default=DEFAULT_SOCKET_BUFFER_SIZE,
        metavar="SIZE",
        help=f"the TCP receive buffer (default {DEFAULT_SOCKET_BUFFER_SIZE})",
    )
    parser.add_argument(
        "--consumer.config",
        "--command-config",
        dest="consumer_config",
        type=Path,
        metavar="CONFIG-FILE",
        help="consumer config properties file (Java client keys)",
    )
    parser.add_argument(
        "--print-metrics", action="store_true", help="print librdkafka's statistics at the end"
    )
    parser.add_argument(
        "--show-detailed-stats",
        action="store_true",
        help="print a line every reporting interval instead of the summary",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        nargs="?",
        const=DEFAULT_TIMEOUT_MS,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"the most time between records, in ms (default {DEFAULT_TIMEOUT_MS})",
    )
    parser.add_argument(
        "--reporting-interval",
        default=DEFAULT_REPORTING_INTERVAL_MS,
        metavar="INTERVAL_MS",
        help=f"ms between detailed lines (default {DEFAULT_REPORTING_INTERVAL_MS})",
    )
    parser.add_argument(
        "--date-format",
        default=DEFAULT_DATE_FORMAT,
        metavar="FORMAT",
        help=f"java.text.SimpleDateFormat pattern (default {DEFAULT_DATE_FORMAT})",
    )
    parser.add_argument("--hide-header", action="store_true", help="do not print the header")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    config = None
    if args.consumer_config is not None:
        from rackwise.node.properties_file import load_properties  # noqa: PLC0415

        config = load_properties(args.consumer_config)
    options = ConsumerPerfOptions(
        bootstrap_server=args.bootstrap_server,
        topic=args.topic,
        messages=args.messages,
        group=args.group,
        fetch_size=args.fetch_size,
        from_latest=args.from_latest,
        socket_buffer_size=args.socket_buffer_size,
        consumer_config=config,
        print_metrics=args.print_metrics,
        show_detailed_stats=args.show_detailed_stats,
        timeout_ms=args.timeout,
        reporting_interval=args.reporting_interval,
        date_format=args.date_format,
        hide_header=args.hide_header,
        json=args.json,
    )
    return run_consumer_perf(
        options, out=sys.stdout, err=sys.stderr, before_connecting=refuse_dead_bootstrap
    )
