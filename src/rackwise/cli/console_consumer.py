"""``rackwise console-consumer``: records printed as ``kafka-console-consumer.sh`` (Kafka's
``ConsoleConsumer``) prints them, with its flags and checks: ``--topic`` or ``--include``,
``--partition`` with ``--offset``, ``--from-beginning``, ``--group``, ``--max-messages``,
``--timeout-ms``, ``--isolation-level``; ``--formatter`` with Kafka's class names
(``DefaultMessageFormatter``, ``LoggingMessageFormatter``, ``NoOpMessageFormatter``), its
properties from ``--formatter-config`` then ``--property`` (also named
``--formatter-property`` as in Kafka 4.x: ``print.key=true`` and the others of
:mod:`rackwise.client.console_format`), ``--key-deserializer`` and ``--value-deserializer``
(Kafka's class names), ``--skip-message-on-error``; the consumer's settings from
``--consumer.config`` (or ``--command-config``), then ``--consumer-property``.

A record the formatter refuses (an ``IntegerDeserializer`` over a key not 4 bytes long) ends
the command with Kafka's text and exit status 1, or, with ``--skip-message-on-error``, is
reported on stderr and skipped.

Ends with ``Processed a total of N messages`` on stderr, as Kafka's tool does, when the
messages asked for are read, when ``--timeout-ms`` passes without one, or on Ctrl-C.
"""

from __future__ import annotations

import argparse
import random
import sys

from rackwise.cli._admin import command_config, librdkafka_settings
from rackwise.cli._servers import check_bootstrap_servers, refuse_dead_bootstrap
from rackwise.cli.console_producer import key_values, number_flags, properties_file
from rackwise.cli.errors import CommandError
from rackwise.client.librdkafka_security import SECURITY_KEYS

FORMATTER = "org.apache.kafka.tools.consumer.DefaultMessageFormatter"


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: the server(s) to connect to")
    add("--topic", metavar="TOPIC", help="the topic to consume on")
    add("--include", metavar="REGEX", help="a regular expression of the topics to consume")
    add("--partition", type=int, metavar="ID", help="the partition to consume from")
    add("--offset", metavar="OFFSET", help="a non-negative offset, earliest or latest")
    add("--from-beginning", action="store_true", help="start with the earliest message")
    add("--group", metavar="GROUP", help="the consumer group id")
    add("--max-messages", default="-1", metavar="N", help="exit after N messages")
    add(
        "--timeout-ms",
        default="-1",
        metavar="MS",
        help="exit if no message is available for this long",
    )
    add(
        "--isolation-level",
        metavar="LEVEL",
        help="read_committed or read_uncommitted (the default)",
    )
    add("--formatter", default=FORMATTER, metavar="CLASS", help=f"(default {FORMATTER})")
    for flag in ("--property", "--formatter-property"):
        add(
            flag, action="append", default=[], metavar="KEY=VALUE", dest="property",
            help="formatter properties: print.key, print.timestamp, key.separator, ...",
        )  # fmt: skip
    add("--formatter-config", metavar="FILE", help="formatter properties file")
    add("--key-deserializer", metavar="CLASS", help="Kafka's deserializer class for keys")
    add("--value-deserializer", metavar="CLASS", help="Kafka's deserializer class for values")
    add("--skip-message-on-error", action="store_true", help="skip a record that fails")
    add(
        "--consumer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="consumer settings (Java names, as librdkafka reads them)",
    )
    add("--consumer.config", dest="consumer_config", metavar="FILE", help="consumer properties")
    add(
        "--command-config",
        metavar="FILE",
        help="client properties (Kafka's keys, SSL and SASL too)",
    )
    parser.set_defaults(run=run)  # fmt: skip


def _check(args: argparse.Namespace, extra: dict[str, str]) -> None:
    """Kafka's ``checkRequiredArgs`` and ``checkConsumerGroup``, in its order."""
    if (args.topic is None) == (args.include is None):
        raise CommandError("Exactly one of --include/--topic is required.")
    if args.partition is not None:
        if args.topic is None:
            raise CommandError("The topic is required when partition is specified.")
        if args.from_beginning and args.offset is not None:
            raise CommandError("Options from-beginning and offset cannot be specified together.")
    elif args.offset is not None:
        raise CommandError("The partition is required when offset is specified.")
    if not args.bootstrap_server:
        raise CommandError('Missing required argument "[bootstrap-server]"')
    groups = {g for g in (args.group, extra.get("group.id")) if g is not None}
    if len(groups) > 1:
        raise CommandError(
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. Detected group "
            f"ids: {', '.join(repr(g) for g in sorted(groups))}"
        )
    if groups and args.partition is not None:
        raise CommandError("Options group and partition cannot be specified together.")


def _offset(args: argparse.Namespace) -> int:
    if args.offset is None:
        return -2 if args.from_beginning else -1
    named = {"earliest": -2, "latest": -1}.get(args.offset.lower())
    if named is not None:
        return named
    try:
        offset = int(args.offset)
    except ValueError:
        offset = -1
    if offset < 0:
        raise CommandError(
            f"The provided offset value '{args.offset}' is incorrect. Valid values are "
            "'earliest', 'latest', or a non-negative long."
        )
    return offset


def _formatter_properties(args: argparse.Namespace) -> dict[str, str]:
    """Kafka's ``formatterArgs``: the file, the deserializer flags, then ``--property``."""
    properties = properties_file(args.formatter_config)
    for part in ("key", "value"):
        name = getattr(args, f"{part}_deserializer")
        if name:
            properties[f"{part}.deserializer"] = name
    return {**properties, **key_values(args.property, "--property")}


def run(args: argparse.Namespace) -> int:
    from rackwise.client.console import ConsumeError, consume  # noqa: PLC0415
    from rackwise.client.console_format import FormatError, create_formatter  # noqa: PLC0415

    extra = {
        **librdkafka_settings(properties_file(args.consumer_config)),
        **key_values(args.consumer_property, "--consumer-property"),
    }
    _check(args, extra)
    offset = _offset(args)
    number_flags(args, ("max-messages", "timeout-ms"))
    check_bootstrap_servers(args.bootstrap_server)
    config = command_config(args, "console-consumer")
    reset = extra.get("auto.offset.reset")
    if reset is not None and args.from_beginning and reset != "earliest":
        raise CommandError(
            f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}', "
            "please remove one option"
        )
    group = args.group or extra.get("group.id")
    settings = {
        "client.id": config.get("client.id", "console-consumer"),
        **librdkafka_settings({k: v for k, v in config.items() if k in SECURITY_KEYS}),
        "auto.offset.reset": "earliest" if args.from_beginning else "latest",
        "isolation.level": args.isolation_level or "read_uncommitted",
        **({} if group else {"enable.auto.commit": "false"}),
        **extra,
        "group.id": group or f"console-consumer-{random.randrange(100_000)}",
        "bootstrap.servers": args.bootstrap_server,
    }
    try:
        formatter = create_formatter(args.formatter, _formatter_properties(args), _log)
    except FormatError as e:
        raise CommandError(str(e)) from None
    refuse_dead_bootstrap(settings)
    count = 0

    def report(n: int) -> None:
        print(f"Processed a total of {n} messages", file=sys.stderr)

    try:
        count = consume(
            settings,
            sys.stdout.buffer,
            formatter,
            topics=None if args.topic is None else [args.topic],
            pattern=args.include,
            assignment=None if args.partition is None else (args.topic, args.partition, offset),
            max_messages=int(args.max_messages),
            timeout_ms=int(args.timeout_ms),
            skip_on_error=args.skip_message_on_error,
            log=_log,
        )
    except KeyboardInterrupt:
        report(count)
        raise
    except ConsumeError as e:
        report(e.count)
        raise CommandError(str(e)) from None
    report(count)
    return 0


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
