"""``rackwise controller start --config FILE [--override KEY=VALUE]...``: run a controller
process (KIP-631) until SIGTERM or SIGINT. It prints one ready line on stdout once it listens
(see :mod:`rackwise.node.process`) and logs to stderr. ``--override`` is Kafka's
``kafka-server-start.sh --override``: the setting wins over the file's."""

from __future__ import annotations

import argparse

from rackwise.cli.broker import add_override_arguments


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    start = actions.add_parser(
        "start",
        help="run a controller until SIGTERM or SIGINT",
        description="Run a controller: its metadata log, brokers' registrations and heartbeats, "
        "and the admin writes brokers forward.",
    )
    start.add_argument(
        "--config", required=True, metavar="FILE", help="the node's .properties file"
    )
    add_override_arguments(
        start, "a setting that wins over the file's (kafka-server-start.sh --override); repeatable"
    )
    start.set_defaults(run=run_start)


def run_start(args: argparse.Namespace) -> int:
    from rackwise.controller_node.server import run_controller  # noqa: PLC0415
    from rackwise.node.properties_file import parse_overrides  # noqa: PLC0415

    overrides = parse_overrides(args.override, args.non_options)
    return run_controller(args.config, overrides)
