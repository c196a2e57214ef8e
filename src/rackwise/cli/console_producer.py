"""``rackwise console-producer``: one record per line of standard input, as
``kafka-console-producer.sh`` (Kafka's ``ConsoleProducer``) sends them: ``--property
parse.key=true`` (``key.separator``, tab by default), ``parse.headers=true`` and the other
properties of Kafka's line reader (:mod:`rackwise.client.console`), ``--sync``,
``--compression-codec``, ``--request-required-acks`` (-1 by default), ``--producer-property``
and ``--command-config``.

A line the reader refuses ends the command with Kafka's message (``No key separator found on
line number 2: 'abc'``) and exit status 1; a record the cluster refused is named on stderr
and the command exits 1 once the input ends.
"""

from __future__ import annotations

import argparse
import sys

from rackwise.cli._admin import command_config
from rackwise.cli._servers import check_bootstrap_servers, refuse_dead_bootstrap
from rackwise.cli.errors import CommandError

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: the server(s) to connect to")
    add("--topic", metavar="TOPIC", help="REQUIRED: the topic to produce messages to")
    add(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="line reader properties: parse.key, key.separator, parse.headers, ...",
    )
    add(
        "--producer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="producer settings (Java names, as librdkafka reads them)",
    )
    add("--command-config", metavar="FILE", help="client properties (PLAINTEXT only)")
    add("--sync", action="store_true", help="send each message synchronously")
    add(
        "--compression-codec",
        nargs="?",
        const="gzip",
        default="none",
        metavar="CODEC",
        help="none, gzip (if given without a value), snappy, lz4 or zstd",
    )
    add("--request-required-acks", default="-1", metavar="ACKS", help="acks (default -1)")
    add("--timeout", type=int, default=1000, metavar="MS", help="linger.ms (default 1000)")
    add("--request-timeout-ms", type=int, default=1500, metavar="MS", help="(default 1500)")
    parser.set_defaults(run=run)  # fmt: skip


def key_values(entries: list[str], flag: str) -> dict[str, str]:
    """``KEY=VALUE`` entries (the value may hold ``=``)."""
    pairs = {}
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep:
            raise CommandError(f"Invalid {flag} entry, expected key=value: {entry}")
        pairs[key] = value
    return pairs


def run(args: argparse.Namespace) -> int:
    from rackwise.client.console import LineReader, produce  # noqa: PLC0415

    if not args.topic:
        raise CommandError('Missing required argument "[topic]"')
    if not args.bootstrap_server:
        raise CommandError('Missing required argument "[bootstrap-server]"')
    if args.compression_codec not in CODECS:
        raise CommandError(f"Unknown compression codec: {args.compression_codec}")
    check_bootstrap_servers(args.bootstrap_server)
    config = command_config(args, "console-producer")
    reader = LineReader(key_values(args.property, "--property"))
    settings = {
        "client.id": config.get("client.id", "console-producer"),
        "acks": args.request_required_acks,
        "compression.type": args.compression_codec,
        "linger.ms": args.timeout,
        "request.timeout.ms": int(config.get("request.timeout.ms", args.request_timeout_ms)),
        **key_values(args.producer_property, "--producer-property"),
        "bootstrap.servers": args.bootstrap_server,
    }
    refuse_dead_bootstrap(settings)
    failed = produce(
        settings,
        args.topic,
        sys.stdin,
        reader,
        sync=args.sync,
        warn=lambda text: print(f"error: {text}", file=sys.stderr),
    )
    return 1 if failed else 0
