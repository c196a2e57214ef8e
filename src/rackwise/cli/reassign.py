"""``rackwise reassign``: Kafka's ``kafka-reassign-partitions.sh`` (``ReassignPartitionsCommand``):
``--generate`` a plan, ``--execute`` it (with ``--throttle`` and
``--replica-alter-log-dirs-throttle``, and AlterReplicaLogDirs for every replica given an
absolute directory), ``--verify`` it (clearing the throttles once it is done), ``--cancel`` it,
and ``--list`` the reassignments in flight, with Kafka's flags, checks, lines and exit codes.

Constraints
    * The flags are checked as Kafka's ``validateAndParseArgs`` checks them, in its order and
      with its messages (``Command must include exactly one action: --generate, --execute,
      --verify, --cancel, --list``, ``Missing required argument "[reassignment-json-file]"``,
      ``Option "[throttle]" can't be used with action "[verify]"``), each one line ``error:
      ...`` on stderr with exit status 1, without the usage text Kafka prints after them.
      ``--bootstrap-controller`` serves ``--cancel`` and ``--list`` only, as in Kafka.
    * Everything else is :mod:`rackwise.client.reassign_command`'s; a failure prints what
      Kafka's tool prints on stdout (``Error: ...`` or its terse messages, without the stack
      trace) and exits 1. SIGTERM ends an action with ``error: terminated`` and status 143,
      Ctrl-C with ``error: interrupted`` and 130.

Worked example
    ``rackwise reassign --bootstrap-server 127.0.0.1:9092 --execute --reassignment-json-file
    plan.json --throttle 1000000`` prints the current assignment to keep for a rollback, the
    warning to run ``--verify``, ``The inter-broker throttle limit was set to 1000000 B/s`` and
    ``Successfully started partition reassignments for foo-0,foo-1``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from rackwise.cli._signals import run_signalled
from rackwise.cli.errors import CommandError

HELP_TEXT: Final = "This tool helps to move topic partitions between replicas."
ACTIONS: Final = ("generate", "execute", "verify", "cancel", "list")
CLIENT_ID: Final = "reassign-partitions-tool"
REQUIRED: Final = {
    "verify": ("reassignment-json-file",),
    "generate": ("topics-to-move-json-file", "broker-list"),
    "execute": ("reassignment-json-file",),
    "cancel": ("reassignment-json-file",),
    "list": (),
}
PERMITTED: Final = {
    "verify": ("bootstrap-server", "command-config", "preserve-throttles"),
    "generate": ("bootstrap-server", "broker-list", "command-config", "disable-rack-aware"),
    "execute": ("additional", "bootstrap-server", "command-config", "throttle",
                "replica-alter-log-dirs-throttle", "timeout"),
    "cancel": ("command-config", "preserve-throttles", "timeout"),
    "list": ("command-config",),
}  # fmt: skip
"""Kafka's ``permittedArgs``; ``--cancel`` and ``--list`` take either bootstrap flag."""
VALUED: Final = (
    ("bootstrap-server", "HOST:PORT", "the server(s) to use for bootstrapping"),
    ("bootstrap-controller", "HOST:PORT", "the controller(s) to use (--cancel and --list)"),
    ("command-config", "FILE", "admin client properties (client.id, request.timeout.ms)"),
    ("reassignment-json-file", "FILE", "the reassignment JSON (replicas and log_dirs)"),
    ("topics-to-move-json-file", "FILE", 'the topics to move: {"topics":[{"topic":"foo"}]}'),
    ("broker-list", "IDS", 'the brokers to move the topics to, "0,1,2" (--generate)'),
    ("throttle", "B/S", "the inter-broker replication throttle, bytes/s (--execute)"),
    ("replica-alter-log-dirs-throttle", "B/S", "the throttle of moves between log dirs"),
    ("timeout", "MS", "how long to retry starting log dir moves (default 10000)"),
)
FLAGS: Final = (
    ("generate", "generate a candidate reassignment (nothing is moved)"),
    ("execute", "start the reassignment of --reassignment-json-file"),
    ("verify", "show how far it got; clears the throttles once done"),
    ("cancel", "cancel the reassignments of --reassignment-json-file"),
    ("list", "list the reassignments in flight"),
    ("disable-rack-aware", "rack-unaware placement (KIP-879's forceSimplePlacement)"),
    ("additional", "execute in addition to the reassignments in flight"),
    ("preserve-throttles", "leave the throttles as they are"),
)
LONG_OPTIONS: Final = {"throttle": -1, "replica-alter-log-dirs-throttle": -1, "timeout": 10_000}


class _Given(argparse.Action):
    """Stores the option and notes that it was given, in command-line order."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        ns: argparse.Namespace,
        values: Any,
        option: Any = None,
    ) -> None:
        setattr(ns, self.dest, True if self.nargs == 0 else values)
        given: list[str] = ns.given
        name = self.option_strings[0][2:]  # the flag's own name, even when abbreviated
        if name not in given:
            given.append(name)


def configure(parser: argparse.ArgumentParser) -> None:
    for name, metavar, text in VALUED:
        parser.add_argument(f"--{name}", action=_Given, metavar=metavar, help=text)
    for name, text in FLAGS:
        parser.add_argument(f"--{name}", action=_Given, nargs=0, default=False, help=text)
    parser.set_defaults(run=run, given=[], reassign_parser=parser)


def check_options(given: Sequence[str]) -> str:
    """Kafka's ``validateAndParseArgs`` over the options given, in their order; the action."""
    actions = [a for a in ACTIONS if a in given]
    if len(actions) != 1:
        listed = ", ".join(f"--{a}" for a in ACTIONS)
        raise CommandError(f"Command must include exactly one action: {listed}")
    (action,) = actions
    server, controller = "bootstrap-server" in given, "bootstrap-controller" in given
    if server and controller:
        raise CommandError(
            "Please don't specify both --bootstrap-server and --bootstrap-controller"
        )
    if not server and not controller:
        raise CommandError("Please specify either --bootstrap-server or --bootstrap-controller")
    for required in REQUIRED[action]:
        if required not in given:
            raise CommandError(f'Missing required argument "[{required}]"')
    permitted = set(REQUIRED[action]) | set(PERMITTED[action]) | {action}
    if action in ("cancel", "list"):
        permitted.add("bootstrap-server" if server else "bootstrap-controller")
    for option in given:
        if option not in permitted:
            raise CommandError(f'Option "[{option}]" can\'t be used with action "[{action}]"')
    return action


def _long(args: argparse.Namespace, name: str) -> int:
    """A ``Long`` option as joptsimple converts it."""
    value = getattr(args, name.replace("-", "_"))
    if value is None:
        return LONG_OPTIONS[name]
    try:
        number = int(value.strip()) if value.strip().lstrip("+-").isdigit() else None
    except ValueError:
        number = None
    if number is None or not -(2**63) <= number < 2**63:
        raise CommandError(f"Cannot parse argument '{value}' of option {name}")
    return number


def run(args: argparse.Namespace) -> int:
    if not args.given:
        parser: argparse.ArgumentParser = args.reassign_parser
        print(HELP_TEXT, file=sys.stderr)
        parser.print_help(sys.stderr)
        return 1
    action = check_options(args.given)
    numbers = {name: _long(args, name) for name in LONG_OPTIONS}
    from rackwise.cli._servers import check_bootstrap_servers  # noqa: PLC0415

    servers = check_bootstrap_servers(args.bootstrap_server or args.bootstrap_controller or "")
    from rackwise.client.command_config import CommandConfigError  # noqa: PLC0415
    from rackwise.client.reassign_text import ReassignFailure  # noqa: PLC0415

    try:
        config = _command_config(args.command_config)
        files = {
            name: _read(getattr(args, name))
            for name in ("reassignment_json_file", "topics_to_move_json_file")
            if getattr(args, name) is not None
        }
        return run_signalled(_run(action, args, servers, config, files, numbers))
    except ReassignFailure as e:
        print(e.printed, flush=True)
        return 1
    except CommandConfigError as e:
        raise CommandError(str(e)) from None


def _read(path: str) -> str:
    from rackwise.client.reassign_text import ReassignFailure  # noqa: PLC0415

    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        raise ReassignFailure(path) from None  # Java's NoSuchFileException names the path


def _command_config(path: str | None) -> dict[str, str]:
    from rackwise.client.command_config import read_command_config  # noqa: PLC0415
    from rackwise.client.reassign_text import ReassignFailure  # noqa: PLC0415

    if path is None:
        return {}
    try:
        return read_command_config(path, "reassign")
    except OSError as e:  # Java's FileNotFoundException: "path (No such file or directory)"
        raise ReassignFailure(f"{path} ({e.strerror})") from None


def _out(text: str, /, *, end: str = "\n") -> None:
    print(text, end=end, flush=True)


async def _run(
    action: str,
    args: argparse.Namespace,
    servers: str,
    config: dict[str, str],
    files: dict[str, str],
    numbers: dict[str, int],
) -> int:
    from rackwise.cli._servers import bootstrap_addresses  # noqa: PLC0415
    from rackwise.client import reassign_command as command  # noqa: PLC0415
    from rackwise.client.connections import Connections  # noqa: PLC0415

    timeout_ms = int(config.get("request.timeout.ms", command.DEFAULT_REQUEST_TIMEOUT_MS))
    connections = Connections(
        bootstrap_addresses(servers),
        timeout_s=max(timeout_ms, 1) / 1000,
        client_id=config.get("client.id", CLIENT_ID),
    )
    plan = files.get("reassignment_json_file", "")
    try:
        if action == "generate":
            await command.generate(
                connections,
                files["topics_to_move_json_file"],
                args.broker_list,
                _out,
                rack_aware=not args.disable_rack_aware,
            )
        elif action == "execute":
            await command.execute(
                connections,
                plan,
                _out,
                additional=args.additional,
                throttle=numbers["throttle"],
                log_dir_throttle=numbers["replica-alter-log-dirs-throttle"],
                timeout_ms=numbers["timeout"],
            )
        elif action == "verify":
            await command.verify(
                connections, plan, _out, preserve_throttles=args.preserve_throttles
            )
        elif action == "cancel":
            await command.cancel(
                connections,
                plan,
                _out,
                preserve_throttles=args.preserve_throttles,
                timeout_ms=numbers["timeout"],
            )
        else:
            await command.list_active(connections, _out)
    finally:
        await connections.close()
    return 0
