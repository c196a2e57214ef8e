"""``rackwise configs``: Kafka's ``kafka-configs.sh`` (``ConfigCommand``) for topics, brokers,
the broker default and users' SCRAM credentials: ``--describe`` (``--all``) and ``--alter``
(``--add-config``, ``--add-config-file``, ``--delete-config``) of ``--entity-type
topics|brokers|users`` with ``--entity-name`` or ``--entity-default`` (or ``--topic``,
``--broker``, ``--broker-defaults``), with Kafka's flags, checks, lines and exit codes.

Constraints
    * The checks are :mod:`rackwise.client.config_args`'s, the requests and the lines
      :mod:`rackwise.client.configs`'s (loaded once the arguments pass); this module reads
      the arguments, runs the checks in Kafka's order and prints.
    * Kafka's messages for bad input are one line ``error: ...``, exit 1, without the usage
      text Kafka prints after some of them. A failure of the cluster is Kafka's first two
      lines joined in one: ``error: Error while executing config command with args '...':
      java.util.concurrent.ExecutionException: org.apache.kafka.common.errors...``.

Worked example
    ``rackwise configs --bootstrap-server 127.0.0.1:9092 --entity-type topics --entity-name
    orders --alter --add-config retention.ms=1000`` prints ``Completed updating config for
    topic orders.``; ``--describe`` of it then prints ``Dynamic configs for topic orders
    are:`` and ``  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:...}``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rackwise.cli.errors import CommandError

if TYPE_CHECKING:
    from rackwise.client.configs import ConfigsAdmin
    from rackwise.client.connections import Connections


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--bootstrap-server", metavar="HOST:PORT", help="the Kafka servers to connect to")
    add("--command-config", metavar="FILE", help="admin client properties (Kafka's keys)")
    add("--describe", action="store_true", help="list configs for the given entity")
    add("--alter", action="store_true", help="alter the configuration for the entity")
    add("--all", action="store_true", help="with --describe: every config, not only dynamic")
    add(
        "--entity-type",
        action="append",
        default=[],
        metavar="TYPE",
        help="topics, brokers or users",
    )
    add(
        "--entity-name",
        action="append",
        dest="entity_names",
        metavar="NAME",
        help="a topic's name, a broker's id or a user's name",
    )
    add(
        "--entity-default",
        action="append_const",
        const="",
        dest="entity_names",
        help="the default of every broker",
    )
    add(
        "--add-config",
        metavar="K=V,...",
        help="configs to set: 'k1=v1,k2=[v1,v2,v2],k3=v3' (brackets group a list value)",
    )
    add("--add-config-file", metavar="FILE", help="a .properties file of configs to set")
    add(
        "--delete-config",
        action="append",
        default=[],
        metavar="K,...",
        help="config keys to remove: 'k1,k2'",
    )
    add("--topic", metavar="NAME", help="the topic's name (--entity-type topics --entity-name)")
    add("--broker", metavar="ID", help="the broker's id (--entity-type brokers --entity-name)")
    add(
        "--broker-defaults",
        action="store_true",
        help="the config defaults for all brokers (--entity-type brokers --entity-default)",
    )
    parser.set_defaults(run=run, entity_names=None)


def _check_args(args: argparse.Namespace) -> tuple[str, list[str]]:
    """Kafka's ``ConfigCommandOptions.checkArgs``, in its order; the entity type and names."""
    from rackwise.cli._servers import check_bootstrap_servers  # noqa: PLC0415
    from rackwise.client import config_args  # noqa: PLC0415

    if args.describe == args.alter:
        raise CommandError("Command must include exactly one action: --describe, --alter")
    if args.describe:
        for flag, given in (
            ("alter", args.alter),
            ("add-config", args.add_config is not None),
            ("delete-config", bool(args.delete_config)),
        ):
            if given:
                raise CommandError(f'Option "[describe]" can\'t be used with option "[{flag}]"')
    generic = bool(args.entity_type or args.entity_names)
    types, names = config_args.entities(
        args.entity_type,
        args.entity_names or [],
        topic=args.topic,
        broker=args.broker,
        broker_defaults=args.broker_defaults,
    )
    specific = len(types) > len(args.entity_type)
    config_args.check_entity_types(types, mixed=generic and specific)
    if args.bootstrap_server is None:
        raise CommandError(
            "One of the required --bootstrap-server or --bootstrap-controller arguments must "
            "be specified"
        )
    check_bootstrap_servers(args.bootstrap_server)
    config_args.check_entity_names(types[0], names, alter=args.alter)
    if args.alter:
        if args.add_config is not None and args.add_config_file is not None:
            raise CommandError("Only one of --add-config or --add-config-file must be specified")
        if args.add_config is None and args.add_config_file is None and not args.delete_config:
            raise CommandError(
                "At least one of --add-config, --add-config-file, or --delete-config must be "
                "specified with --alter"
            )
    return types[0], names


def run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415  (kept out of the command's start-up)

    from rackwise.client import config_args  # noqa: PLC0415
    from rackwise.client.command_config import read_command_config  # noqa: PLC0415

    entity_type, names = _check_args(args)
    config: dict[str, str] = {}
    if args.command_config is not None:
        config = read_command_config(args.command_config, "configs")
    if args.alter:
        config_args.check_one_name(names)
    from rackwise.client import configs  # noqa: PLC0415

    try:
        return asyncio.run(_run(args, config, entity_type, names))
    except configs.ConfigsFailure as e:
        raise CommandError(
            f"Error while executing config command with args '{_command_line()}': {e.java_text}"
        ) from None


def _command_line() -> str:
    """The command's own arguments, as Kafka's tool repeats them."""
    argv = sys.argv[1:]
    return " ".join(argv[argv.index("configs") + 1 :] if "configs" in argv else argv)


async def _run(
    args: argparse.Namespace, config: dict[str, str], entity_type: str, names: list[str]
) -> int:
    from rackwise.cli._servers import bootstrap_addresses  # noqa: PLC0415
    from rackwise.client import config_args, configs  # noqa: PLC0415
    from rackwise.client.connections import Connections  # noqa: PLC0415

    timeout_ms = int(config.get("request.timeout.ms", config_args.DEFAULT_REQUEST_TIMEOUT_MS))
    connections = Connections(
        bootstrap_addresses(args.bootstrap_server),
        timeout_s=max(timeout_ms, 1) / 1000,
        client_id=config.get("client.id", config_args.CLIENT_ID),
    )
    admin = configs.ConfigsAdmin(connections, entity_type)
    try:
        if entity_type == config_args.USERS:
            await _users(connections, args, names)
        elif args.alter:
            await _alter(admin, args, names[0])
        else:
            await _describe(admin, names[0] if names else None, describe_all=args.all)
    finally:
        await connections.close()
    return 0


async def _users(connections: Connections, args: argparse.Namespace, names: list[str]) -> None:
    """SCRAM credentials: ``--alter`` of one user, ``--describe`` of the users named (all)."""
    from rackwise.client import config_args, configs, user_configs  # noqa: PLC0415

    if not args.alter:
        for line in await user_configs.describe(connections, [n for n in names if n]):
            print(line)
        return
    if args.add_config_file is not None:
        add = config_args.configs_to_add(None, Path(args.add_config_file).read_text("utf-8"))
    else:
        add = config_args.configs_to_add(args.add_config, None)
    delete = config_args.configs_to_delete(args.delete_config)
    upsertions, deletions = user_configs.check_user_configs(names[0], add, delete)
    await user_configs.alter(connections, names[0], upsertions, deletions)
    print(configs.completed_line(config_args.USERS, names[0]))


async def _describe(admin: ConfigsAdmin, name: str | None, *, describe_all: bool) -> None:
    from rackwise.client import configs  # noqa: PLC0415

    for entity in [name] if name is not None else await admin.entity_names():
        print(configs.header(admin.entity_type, entity, describe_all=describe_all), flush=True)
        for entry in await admin.dynamic(entity, describe_all=describe_all):
            print(configs.entry_line(entry))


async def _alter(admin: ConfigsAdmin, args: argparse.Namespace, name: str) -> None:
    from rackwise.client import config_args, configs  # noqa: PLC0415

    file_text = None
    if args.add_config_file is not None:
        file_text = Path(args.add_config_file).read_text(encoding="utf-8")
    add = config_args.configs_to_add(args.add_config, file_text)
    delete = config_args.configs_to_delete(args.delete_config)
    await admin.alter(name, add, delete)
    print(configs.completed_line(admin.entity_type, name))
