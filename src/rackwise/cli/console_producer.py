"""``rackwise console-producer``: one record per line of standard input, as
``kafka-console-producer.sh`` (Kafka's ``ConsoleProducer``) sends them: ``--property
parse.key=true`` (``key.separator``, tab by default), ``parse.headers=true`` and the other
properties of Kafka's line reader (:mod:`rackwise.client.console`), also named
``--reader-property`` as in Kafka 4.x, and read from ``--reader-config``; ``--line-reader``
takes Kafka's reader class, ``org.apache.kafka.tools.LineMessageReader``. The producer's
settings come from ``--producer.config`` (or ``--command-config``), then
``--producer-property``, then the flags that stand for settings, as Kafka merges them:
``--sync``, ``--compression-codec``, ``--request-required-acks`` (-1 by default),
``--timeout`` (``linger.ms``), ``--request-timeout-ms``, ``--message-send-max-retries``
(``retries``), ``--retry-backoff-ms``, ``--batch-size`` and ``--max-partition-memory-bytes``
(``batch.size``), ``--max-memory-bytes``, ``--metadata-expiry-ms``, ``--socket-buffer-size``
and ``--max-block-ms``, each given to librdkafka under its own name for the setting.

A number flag with another value is refused as Kafka refuses it (``Cannot parse argument
'abc' of option batch-size``).

A line the reader refuses ends the command with Kafka's message (``No key separator found on
line number 2: 'abc'``) and exit status 1; a record the cluster refused is named on stderr
and the command exits 1 once the input ends.
"""

from __future__ import annotations

import argparse
import sys
from typing import Final

from rackwise.cli._admin import command_config, librdkafka_settings
from rackwise.cli._servers import check_bootstrap_servers, refuse_dead_bootstrap
from rackwise.cli.errors import CommandError
from rackwise.client.librdkafka_security import SECURITY_KEYS

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
LINE_READER = "org.apache.kafka.tools.LineMessageReader"

SETTING_FLAGS: Final = (
    # (flag, Kafka's default, librdkafka's setting, the factor to librdkafka's unit)
    ("timeout", 1000, "linger.ms", 1),
    ("request-timeout-ms", 1500, "request.timeout.ms", 1),
    ("message-send-max-retries", 3, "retries", 1),
    ("retry-backoff-ms", 100, "retry.backoff.ms", 1),
    ("socket-buffer-size", 102_400, "socket.send.buffer.bytes", 1),
    ("max-memory-bytes", 33_554_432, "queue.buffering.max.kbytes", 1024),
    ("batch-size", 16_384, "batch.size", 1),
    ("max-partition-memory-bytes", 16_384, "batch.size", 1),
    ("metadata-expiry-ms", 300_000, "metadata.max.age.ms", 1),
    ("max-block-ms", 60_000, None, 1),  # librdkafka never blocks a send: checked, not passed
)
"""The flags that stand for a producer setting, in the order Kafka merges them."""
CLIENT_KEYS: Final = ("client.id", "request.timeout.ms", "retry.backoff.ms")
"""The ``--command-config`` keys the producer takes (the others are the admin client's)."""


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: the server(s) to connect to")
    add("--topic", metavar="TOPIC", help="REQUIRED: the topic to produce messages to")
    for flag in ("--property", "--reader-property"):
        add(
            flag, action="append", default=[], metavar="KEY=VALUE", dest="property",
            help="line reader properties: parse.key, key.separator, parse.headers, ...",
        )  # fmt: skip
    add("--reader-config", metavar="FILE", help="line reader properties file")
    add("--line-reader", default=LINE_READER, metavar="CLASS", help=f"(default {LINE_READER})")
    add(
        "--producer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="producer settings (Java names, as librdkafka reads them)",
    )
    add("--producer.config", dest="producer_config", metavar="FILE", help="producer properties")
    add(
        "--command-config",
        metavar="FILE",
        help="client properties (Kafka's keys, SSL and SASL too)",
    )
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
    for flag, default, setting, _ in SETTING_FLAGS:
        add(f"--{flag}", metavar="N", help=f"{setting or flag} (default {default})")
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


def properties_file(path: str | None) -> dict[str, str]:
    """The Java properties file at ``path`` (none without a path)."""
    if path is None:
        return {}
    from rackwise.formats.properties import parse_properties  # noqa: PLC0415

    try:
        with open(path, encoding="utf-8") as file:
            return parse_properties(file.read())
    except OSError as e:
        raise CommandError(f"{path}: {e.strerror or e}") from None


def number_flags(args: argparse.Namespace, flags: tuple[str, ...]) -> dict[str, int | None]:
    """The whole numbers the flags were given (None where not given), refused as Kafka's
    option parser refuses another value."""
    given = {}
    for flag in flags:
        text = getattr(args, flag.replace("-", "_"))
        try:
            given[flag] = None if text is None else int(text)
        except ValueError:
            raise CommandError(f"Cannot parse argument '{text}' of option {flag}") from None
    return given


def producer_settings(args: argparse.Namespace, config: dict[str, str]) -> dict[str, object]:
    """The producer's settings as Kafka's ``producerProps`` merges them: the file, the
    ``--producer-property`` entries, then each setting flag given, or its default where the
    setting is not set yet."""
    if args.compression_codec not in CODECS:
        raise CommandError(f"Unknown compression codec: {args.compression_codec}")
    numbers = number_flags(args, tuple(flag for flag, *_ in SETTING_FLAGS))
    settings: dict[str, object] = {
        **{k: v for k, v in config.items() if k in CLIENT_KEYS},
        **librdkafka_settings({k: v for k, v in config.items() if k in SECURITY_KEYS}),
        **librdkafka_settings(properties_file(args.producer_config)),
        **key_values(args.producer_property, "--producer-property"),
        "bootstrap.servers": args.bootstrap_server,
        "compression.type": args.compression_codec,
    }
    settings.setdefault("client.id", "console-producer")
    if args.request_required_acks is not None:
        settings["acks"] = args.request_required_acks
    for flag, default, setting, factor in SETTING_FLAGS:
        value = numbers[flag]
        if setting is not None and (value is not None or setting not in settings):
            settings[setting] = (default if value is None else value) // factor
    return settings


def run(args: argparse.Namespace) -> int:
    from rackwise.client.console import LineReader, produce  # noqa: PLC0415

    if not args.topic:
        raise CommandError('Missing required argument "[topic]"')
    if not args.bootstrap_server:
        raise CommandError('Missing required argument "[bootstrap-server]"')
    check_bootstrap_servers(args.bootstrap_server)
    settings = producer_settings(args, command_config(args, "console-producer"))
    if args.line_reader.strip() != LINE_READER:
        raise CommandError(
            f"java.lang.ClassNotFoundException: {args.line_reader} (the line reader is "
            f"{LINE_READER})"
        )
    reader = LineReader(
        {**properties_file(args.reader_config), **key_values(args.property, "--property")}
    )
    refuse_dead_bootstrap({"bootstrap.servers": args.bootstrap_server})
    failed = produce(
        settings,
        args.topic,
        sys.stdin,
        reader,
        sync=args.sync,
        warn=lambda text: print(f"error: {text}", file=sys.stderr),
    )
    return 1 if failed else 0
