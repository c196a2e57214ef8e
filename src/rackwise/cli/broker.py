"""``rackwise broker start --config FILE [--override KEY=VALUE]...``: run a broker process
(KIP-631) until SIGTERM or SIGINT. It prints one ready line on stdout once it listens (see
:mod:`rackwise.node.process`) and logs to stderr. ``--override`` is Kafka's
``kafka-server-start.sh --override``: the setting wins over the file's."""

from __future__ import annotations

import argparse


def add_override_arguments(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--override KEY=VALUE`` (repeatable) and a catch-all for stray arguments, so that
    :func:`rackwise.node.properties_file.parse_overrides` words their errors as Kafka does."""
    parser.add_argument(
        "--override",
        action="append",
        nargs="?",
        default=[],
        metavar="KEY=VALUE",
        help=help_text,
    )
    parser.add_argument("non_options", nargs="*", help=argparse.SUPPRESS)


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    start = actions.add_parser(
        "start",
        help="run a broker until SIGTERM or SIGINT",
        description="Run a broker: register with the controller, heartbeat, follow the "
        "metadata log and serve Kafka clients on its listeners.",
    )
    start.add_argument(
        "--config", required=True, metavar="FILE", help="the node's .properties file"
    )
    add_override_arguments(
        start, "a setting that wins over the file's (kafka-server-start.sh --override); repeatable"
    )
    start.set_defaults(run=run_start)


def run_start(args: argparse.Namespace) -> int:
    from rackwise.broker.server import main  # noqa: PLC0415
    from rackwise.node.properties_file import parse_overrides  # noqa: PLC0415

    overrides = parse_overrides(args.override, args.non_options)
    return main(args.config, overrides)
