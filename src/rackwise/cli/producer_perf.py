"""``rackwise producer-perf-test``: Kafka's ``kafka-producer-perf-test.sh`` with its flags and
its output lines, on confluent-kafka (:mod:`rackwise.client.producer_perf` does the work).
``--producer-props`` and ``--producer.config`` take the Java client's keys, mapped to
librdkafka's (:mod:`rackwise.client.perf_config`); ``--json`` prints the final figures as one
JSON object. Transactions are refused."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rackwise.cli._servers import refuse_dead_bootstrap
from rackwise.client.producer_perf import (
    DEFAULT_PAYLOAD_DELIMITER,
    ProducerPerfOptions,
    run_producer_perf,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "This tool is used to verify the producer performance (Kafka's "
        "kafka-producer-perf-test.sh). Transactions are not supported."
    )
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="the server(s) to connect to; wins over bootstrap.servers in the properties",
    )
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="produce to this topic")
    parser.add_argument(
        "--num-records", required=True, type=int, metavar="NUM-RECORDS", help="records to send"
    )
    payload = parser.add_mutually_exclusive_group(required=True)
    payload.add_argument(
        "--record-size", type=int, metavar="RECORD-SIZE", help="record size in bytes"
    )
    payload.add_argument(
        "--payload-file",
        type=Path,
        metavar="PAYLOAD-FILE",
        help="UTF-8 text file of payloads, one picked at random per record",
    )
    payload.add_argument(
        "--payload-monotonic",
        action="store_true",
        help="each payload is the record's number (0, 1, 2, ...)",
    )
    parser.add_argument(
        "--payload-delimiter",
        default=DEFAULT_PAYLOAD_DELIMITER,
        metavar="PAYLOAD-DELIMITER",
        help="regular expression between payloads in --payload-file (default: \\n)",
    )
    parser.add_argument(
        "--throughput",
        required=True,
        type=float,
        metavar="THROUGHPUT",
        help="throttle to about THROUGHPUT records/sec; -1 not to throttle",
    )
    parser.add_argument(
        "--producer-props",
        nargs="+",
        action="extend",
        metavar="PROP-NAME=PROP-VALUE",
        help="Java producer settings (bootstrap.servers, acks, linger.ms, ...); they win over "
        "--producer.config",
    )
    parser.add_argument(
        "--producer.config",
        "--command-config",
        dest="producer_config",
        type=Path,
        metavar="CONFIG-FILE",
        help="producer config properties file",
    )
    parser.add_argument(
        "--print-metrics", action="store_true", help="print librdkafka's statistics at the end"
    )
    parser.add_argument(
        "--transactional-id", metavar="TRANSACTIONAL-ID", help="refused: no transactions"
    )
    parser.add_argument(
        "--transaction-duration-ms",
        type=int,
        metavar="TRANSACTION-DURATION",
        help="refused: no transactions",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the final figures as one JSON object"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    config = None
    if args.producer_config is not None:
        from rackwise.node.properties_file import load_properties  # noqa: PLC0415

        config = load_properties(args.producer_config)
    options = ProducerPerfOptions(
        topic=args.topic,
        num_records=args.num_records,
        throughput=args.throughput,
        record_size=args.record_size,
        payload_file=args.payload_file,
        payload_delimiter=args.payload_delimiter,
        payload_monotonic=args.payload_monotonic,
        producer_props=args.producer_props,
        producer_config=config,
        print_metrics=args.print_metrics,
        transactional_id=args.transactional_id,
        transaction_duration_ms=args.transaction_duration_ms,
        json=args.json,
        bootstrap_server=args.bootstrap_server,
    )
    return run_producer_perf(
        options, out=sys.stdout, err=sys.stderr, before_connecting=refuse_dead_bootstrap
    )
