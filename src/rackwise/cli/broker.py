"""``rackwise broker start --config FILE``: run a broker process (KIP-631) until SIGTERM or
SIGINT. It prints one ready line on stdout once it listens (see :mod:`rackwise.node.process`)
and logs to stderr."""

from __future__ import annotations

import argparse


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
    start.set_defaults(run=run_start)


def run_start(args: argparse.Namespace) -> int:
    from rackwise.node.broker import main  # noqa: PLC0415

    return main(args.config)
