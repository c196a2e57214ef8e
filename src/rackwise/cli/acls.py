"""``rackwise acls``: add, remove and list ACLs, as ``kafka-acls.sh`` (Kafka's ``AclCommand``)
does, with its options, its refusals of options that do not go together, and its output.

``--add`` prints ``Adding ACLs for resource `...`:`` and the entries for each resource, then
creates them; ``--remove`` asks ``Are you sure ...? (y/n)`` for each resource filter (``--force``
answers yes) and deletes them; ``--list`` prints ``Current ACLs for resource `...`:`` for each
pattern with ACLs (``--principal`` keeps one principal's, under ``ACLs for principal `...```).
A cluster that refuses prints ``Error while executing ACL command: <Kafka's exception>`` and
exits 1, as Kafka's tool does (without the stack trace).

Worked example
    ``rackwise acls --bootstrap-server localhost:9092 --add --allow-principal User:alice
    --consumer --topic orders --group billing`` gives alice READ and DESCRIBE on ``orders``
    and READ on the group ``billing``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rackwise.cli.errors import CommandError

CLIENT_ID = "rackwise-acls"


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--bootstrap-server", metavar="HOST:PORT", help="the brokers to connect to")
    add("--bootstrap-controller", metavar="HOST:PORT", help="the controllers to connect to")
    add("--command-config", metavar="FILE", help="admin client properties")
    for flag, text in (
        ("--add", "Indicates you are trying to add ACLs."),
        ("--remove", "Indicates you are trying to remove ACLs."),
        ("--list", "List ACLs for the specified resource."),
        ("--cluster", "Add/Remove cluster ACLs."),
        ("--producer", "Convenience option to add/remove ACLs for producer role."),
        ("--consumer", "Convenience option to add/remove ACLs for consumer role."),
        ("--idempotent", "Enable idempotence for the producer (with --producer)."),
        ("--force", "Assume Yes to all queries and do not prompt."),
    ):
        add(flag, action="store_true", help=text)
    for flag in (
        "--topic",
        "--group",
        "--transactional-id",
        "--allow-principal",
        "--deny-principal",
        "--allow-host",
        "--deny-host",
        "--operation",
        "--principal",
    ):
        add(flag, action="append", default=[], metavar=flag.strip("-").upper().replace("-", "_"))
    add(
        "--resource-pattern-type",
        default="LITERAL",
        metavar="TYPE",
        help="LITERAL (default), PREFIXED; ANY and MATCH for --list and --remove",
    )
    parser.set_defaults(run=run)


def _check(args: argparse.Namespace) -> None:
    """Kafka's ``AclCommandOptions.checkArgs``, with its messages."""
    if args.bootstrap_server and args.bootstrap_controller:
        raise CommandError(
            "Only one of --bootstrap-server or --bootstrap-controller must be specified"
        )
    if not args.bootstrap_server and not args.bootstrap_controller:
        raise CommandError("One of --bootstrap-server or --bootstrap-controller must be specified")
    if [args.add, args.remove, args.list].count(True) != 1:
        raise CommandError("Command must include exactly one action: --list, --add, --remove. ")
    if args.list:
        for flag in (
            "producer",
            "consumer",
            "allow_host",
            "allow_principal",
            "deny_host",
            "deny_principal",
        ):
            if getattr(args, flag):
                raise CommandError(
                    f'Option "[list]" can\'t be used with option "[{flag.replace("_", "-")}]"'
                )
    for role in ("producer", "consumer"):
        if getattr(args, role):
            for flag in ("operation", "deny_principal", "deny_host"):
                if getattr(args, flag):
                    raise CommandError(
                        f'Option "[{role}]" can\'t be used with option "[{flag.replace("_", "-")}]"'
                    )
    if args.principal and not args.list:
        raise CommandError("The --principal option is only available if --list is set")
    if args.producer and not args.topic:
        raise CommandError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise CommandError("The --idempotent option is only available if --producer is set")
    if args.consumer and (
        not args.topic or not args.group or args.cluster or args.transactional_id
    ):
        raise CommandError(
            "With --consumer you must specify a --topic and a --group and no --cluster or "
            "--transactional-id option should be specified."
        )


def run(args: argparse.Namespace) -> int:
    _check(args)
    from rackwise.cli._servers import bootstrap_addresses  # noqa: PLC0415
    from rackwise.client import acls  # noqa: PLC0415
    from rackwise.security.acl import PatternType  # noqa: PLC0415

    try:
        pattern_type = PatternType[args.resource_pattern_type.strip().upper()]
    except KeyError:
        raise CommandError(f"Unrecognized pattern type: {args.resource_pattern_type}") from None
    resources = acls.Resources(
        args.topic, args.group, args.transactional_id, args.cluster, pattern_type
    )
    principals = acls.Principals(
        args.allow_principal, args.deny_principal, args.allow_host, args.deny_host
    )
    try:
        operations = [acls.operation_of(o) for o in args.operation or ["All"]]
        plan = _plan(args, acls, resources, principals, operations)
    except acls.AclArgumentError as e:
        raise CommandError(str(e)) from None
    config = _command_config(args)
    servers = args.bootstrap_server or args.bootstrap_controller
    import asyncio  # noqa: PLC0415

    return asyncio.run(_execute(args, plan, bootstrap_addresses(servers), config))


def _command_config(args: argparse.Namespace) -> dict[str, str]:
    if not args.command_config:
        return {}
    from rackwise.client.command_config import read_command_config  # noqa: PLC0415

    return read_command_config(args.command_config, "acls")


def _plan(
    args: argparse.Namespace, acls: Any, resources: Any, principals: Any, operations: Any
) -> Any:
    from rackwise.security.acl import PatternType  # noqa: PLC0415

    if args.list:
        return resources.filters()
    if args.add and resources.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise acls.AclArgumentError(
            f"A '--resource-pattern-type' value of '{resources.pattern_type.name}' is not "
            "valid when adding acls."
        )
    if not resources.filters(idempotent=args.idempotent and args.producer):
        raise acls.AclArgumentError(
            "You must provide at least one resource: --topic <topic> or --cluster or --group "
            "<group> or --delegation-token <Delegation Token ID>"
        )
    plan = acls.entries_by_filter(
        resources,
        principals,
        operations,
        producer=args.producer,
        consumer=args.consumer,
        idempotent=args.idempotent,
    )
    if args.add and any(not entries for entries in plan.values()):
        raise acls.AclArgumentError(
            "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."
        )
    return plan


async def _execute(args: argparse.Namespace, plan: Any, servers: Any, config: Any) -> int:
    from rackwise.client import acls  # noqa: PLC0415
    from rackwise.client.command_config import timeout_ms  # noqa: PLC0415
    from rackwise.client.connections import Connections  # noqa: PLC0415
    from rackwise.client.group_values import GroupsError  # noqa: PLC0415

    timeout = max(timeout_ms(config, 30_000), 1) / 1000
    connections = Connections(
        servers, timeout_s=timeout, client_id=config.get("client.id", CLIENT_ID)
    )
    try:
        if args.add:
            await _add(connections, plan)
        elif args.remove:
            await _remove(connections, plan, force=args.force)
        else:
            await _list(connections, plan, args.principal)
    except (GroupsError, acls.AclsFailure) as e:
        print(f"Error while executing ACL command: {e.java_text}", flush=True)
        return 1
    finally:
        await connections.close()
    return 0


def _sorted(entries: Any) -> list[Any]:
    return sorted(entries, key=lambda e: (e.principal, e.host, e.permission, e.operation))


async def _add(connections: Any, plan: Any) -> None:
    from rackwise.client import acls  # noqa: PLC0415
    from rackwise.security.acl import AclBinding, ResourcePattern  # noqa: PLC0415

    for f in sorted(plan, key=acls.filter_text):
        pattern = ResourcePattern(f.resource_type, str(f.name), f.pattern_type)
        entries = _sorted(plan[f])
        print(acls.block(f"Adding ACLs for resource `{pattern}`", entries), flush=True)
        await acls.create(connections, [AclBinding(pattern, e) for e in entries])


async def _remove(connections: Any, plan: Any, *, force: bool) -> None:
    from rackwise.client import acls  # noqa: PLC0415

    for f in sorted(plan, key=acls.filter_text):
        entries = _sorted(plan[f])
        if entries:
            head = acls.block("Are you sure you want to remove ACLs", entries)
            question = f"{head} from resource filter `{acls.filter_text(f)}`? (y/n)"
            filters = [(f, _entry_filter(e)) for e in entries]
        else:
            question = (
                "Are you sure you want to delete all ACLs for resource filter "
                f"`{acls.filter_text(f)}`? (y/n)"
            )
            filters = [(f, acls.ANY_ENTRY)]
        if not force:
            print(question, flush=True)
            if sys.stdin.readline().strip().lower() != "y":
                continue
        await acls.delete(connections, filters)


def _entry_filter(entry: Any) -> Any:
    from rackwise.security.acl import AccessControlEntryFilter  # noqa: PLC0415

    return AccessControlEntryFilter(entry.principal, entry.host, entry.operation, entry.permission)


async def _list(connections: Any, filters: Any, principals: list[str]) -> None:
    from rackwise.client import acls  # noqa: PLC0415
    from rackwise.security.acl import ANY_BINDING  # noqa: PLC0415

    found: dict[Any, set[Any]] = {}
    for f in filters or [ANY_BINDING.pattern]:
        for pattern, entries in (await acls.describe(connections, f)).items():
            found.setdefault(pattern, set()).update(entries)
    groups: list[tuple[str | None, dict[Any, set[Any]]]] = [] if principals else [(None, found)]
    for principal in principals:
        keep = {p: {e for e in es if e.principal == principal.strip()} for p, es in found.items()}
        groups.append((principal.strip(), {p: es for p, es in keep.items() if es}))
    for who, resources in groups:
        if who is not None:
            print(f"ACLs for principal `{who}`")
        for pattern in sorted(resources):
            print(acls.block(f"Current ACLs for resource `{pattern}`", _sorted(resources[pattern])))
