"""``rackwise consumer-groups``: Kafka's ``kafka-consumer-groups.sh``
(``ConsumerGroupCommand``): list, describe, delete consumer groups and their offsets, and reset
their offsets, with Kafka's flags, checks, messages and tables.

Goals
    An operator's ``kafka-consumer-groups.sh`` command line works unchanged against a rackwise
    cluster and prints what Kafka's tool prints: ``--list`` (``--state``, ``--type``),
    ``--describe`` (offsets and lag, ``--members [--verbose]``, ``--state``), ``--delete``,
    ``--delete-offsets``, ``--reset-offsets`` (``--dry-run`` by default, ``--execute``,
    ``--export``, ``--from-file``).

Constraints
    * The requests are :class:`rackwise.client.groups.GroupsAdmin`'s, over rackwise's own
      connections (:mod:`rackwise.client.connections`); ``--timeout`` (ms, default 5000)
      bounds each call and its retries, as it bounds the Java tool's admin calls.
    * Flags, option-combination errors and their wording are Kafka's
      (``ConsumerGroupCommandOptions.checkArgs``); they are one line ``error: ...``, exit 1,
      without the usage text Kafka prints after them. Where Kafka lists a ``HashSet`` of
      options the options come in the order Kafka declares them.
    * Tables are :mod:`rackwise.formats.consumer_groups`; Kafka's messages go where Kafka
      prints them (``Error: ...`` on stdout, ``has no active members`` and ``is rebalancing``
      on stderr). Unlike Kafka's tool, which exits 0 after printing ``Error: ...``, this
      exits 1 when it printed one. A failure of the cluster ends the command with
      ``error: Executing consumer group command failed due to ...`` and Kafka's exception.
    * ``--json`` prints the rows of the table (or the listing, the reset plan, the statuses)
      as one JSON document, a list of objects with snake_case keys; messages then all go to
      stderr.
    * ``--command-config`` is read by :mod:`rackwise.client.command_config`: Kafka's client
      keys, SSL and SASL among them, any other key refused by name.
    * The tool followed is Kafka's Java ``ConsumerGroupCommand`` of late 2024 (trunk before
      4.0). Two of its outputs are not copied: ``--members --verbose`` prints
      ``topic(0,1)`` as the tool did before its Java port dropped the topic names, and a
      partly failed ``--delete`` lists the deleted groups as ``'a', 'b'`` (the Java port
      prints ``'a'b', '``).

Algorithm
    Check the arguments as Kafka does; open the connections; run the one action against the
    cluster (:class:`~rackwise.client.groups.GroupsAdmin`), shape the answers
    (:mod:`rackwise.client.group_reports`) and print them.

Worked example
    ``rackwise consumer-groups --bootstrap-server 127.0.0.1:9092 --describe --group billing``
    prints a blank line, then ``GROUP  TOPIC  PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG
    CONSUMER-ID  HOST  CLIENT-ID`` (padded) and one row per partition; for a group without
    members it first says on stderr ``Consumer group 'billing' has no active members.``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any, Final, TextIO

from rackwise.cli._consumer_groups_options import (
    NO_VALUE,
    add_options,
    check_args,
    parse_states,
    parse_types,
)
from rackwise.cli.errors import CommandError
from rackwise.client.command_config import read_command_config

if TYPE_CHECKING:  # the client loads the wire protocol: imported when the command runs
    from rackwise.client.groups import GroupDescription, GroupsAdmin

JAVA_GROUP_STATES: Final = {
    s.lower(): s
    for s in (
        "Unknown", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
        "Assigning", "Reconciling",
    )
}  # fmt: skip
REBALANCING: Final = frozenset(
    {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}
)
INACTIVE: Final = frozenset({"Empty", "Dead"})
TYPE_NAMES: Final = {"consumer": "Consumer", "classic": "Classic", "share": "Share"}


def configure(parser: argparse.ArgumentParser) -> None:
    add_options(parser)
    parser.set_defaults(run=run)


class Printer:
    """Where the command's output goes: Kafka's stdout and stderr lines, or with ``--json``
    the rows collected for one document (messages then to stderr); counts the ``Error:``
    lines for the exit status."""

    def __init__(self, *, as_json: bool, out: TextIO, err: TextIO) -> None:
        self.as_json = as_json
        self.out = out
        self.err = err
        self.rows: list[Any] = []
        self.num_errors = 0

    def text(self, text: str) -> None:
        if not self.as_json:
            self.out.write(text)

    def error(self, message: str) -> None:
        """Kafka's ``printError``: a blank line and ``Error: ...`` on stdout."""
        self.num_errors += 1
        print(f"\nError: {message}", file=self.err if self.as_json else self.out)

    def note(self, message: str) -> None:
        """A line Kafka prints on stderr."""
        print(message, file=self.err)

    def say(self, message: str) -> None:
        """A line Kafka prints on stdout (on stderr with ``--json``)."""
        print(message, file=self.err if self.as_json else self.out)

    def finish(self) -> int:
        if self.as_json:
            print(json.dumps(self.rows), file=self.out)
        return 1 if self.num_errors else 0


def run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415  (kept out of the command's start-up)

    action = check_args(args, warn=lambda text: print(text, file=sys.stderr))
    config = (
        read_command_config(args.command_config, "consumer-groups") if args.command_config else {}
    )
    printer = Printer(as_json=args.json, out=sys.stdout, err=sys.stderr)
    return asyncio.run(_run(action, args, printer, config))


async def _run(
    action: str, args: argparse.Namespace, printer: Printer, config: dict[str, str]
) -> int:
    from rackwise.cli._servers import bootstrap_addresses  # noqa: PLC0415
    from rackwise.client.connections import Connections  # noqa: PLC0415
    from rackwise.client.groups import GroupsAdmin, GroupsError  # noqa: PLC0415

    # --timeout bounds every call, as the tool sets it on every admin call's options (which
    # makes the admin client's default.api.timeout.ms moot); request.timeout.ms one request.
    timeout_ms = max(int(args.timeout), 1)
    request_timeout_ms = int(config.get("request.timeout.ms", timeout_ms))
    connections = Connections(
        bootstrap_addresses(args.bootstrap_server),
        timeout_s=max(request_timeout_ms, 1) / 1000,
        client_id=config.get("client.id", "rackwise-consumer-groups"),
    )
    admin = GroupsAdmin(connections, timeout_ms=timeout_ms)
    try:
        if action == "list":
            await _list(admin, args, printer)
        elif action == "describe":
            await _describe(admin, args, printer)
        elif action == "delete":
            await _delete(admin, args, printer)
        elif action == "delete_offsets":
            await _delete_offsets(admin, args, printer)
        else:
            await _reset(admin, args, printer)
    except GroupsError as e:
        raise CommandError(
            f"Executing consumer group command failed due to {e.java_text}"
        ) from None
    finally:
        await connections.close()
    return printer.finish()


async def _group_ids(admin: GroupsAdmin, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return [g.group_id for g in await admin.list_groups()]
    return list(args.group)


# ---- --list -----------------------------------------------------------------------------------


async def _list(admin: GroupsAdmin, args: argparse.Namespace, printer: Printer) -> None:
    from rackwise.formats.consumer_groups import (  # noqa: PLC0415
        GroupListing,
        listing_json,
        listing_text,
    )

    include_type, include_state = args.type is not None, args.state is not None
    states = parse_states(args.state) if _has_value(args.state) else []
    types = parse_types(args.type) if _has_value(args.type) else []
    listed = await admin.list_groups(states, [t.lower() for t in types])
    listings = [
        GroupListing(
            g.group_id,
            TYPE_NAMES.get(g.type.lower(), "Unknown"),
            JAVA_GROUP_STATES.get(g.state.lower(), "Unknown"),
        )
        for g in listed
    ]
    flags = {"include_type": include_type, "include_state": include_state}
    printer.rows += listing_json(listings, **flags)
    printer.text(listing_text(listings, **flags))


def _has_value(value: Any) -> bool:
    return value is not None and value is not NO_VALUE and value != ""


# ---- --describe -------------------------------------------------------------------------------


def _state_of(description: GroupDescription) -> str:
    state = JAVA_GROUP_STATES.get(description.state.lower(), "Unknown")
    if state == "Unknown":
        raise CommandError(
            "Executing consumer group command failed due to Expected a valid consumer group "
            f"state, but found '{description.state}'."
        )
    return state


def should_print(printer: Printer, group: str, state: str, num_rows: int) -> bool:
    """Kafka's ``shouldPrintMemberState``: its message for the group's state, and whether
    there is anything to print."""
    if state == "Dead":
        printer.error(f"Consumer group '{group}' does not exist.")
    elif state == "Empty":
        printer.note(f"\nConsumer group '{group}' has no active members.")
    elif state in REBALANCING:
        printer.note(f"\nWarning: Consumer group '{group}' is rebalancing.")
    return state != "Dead" and num_rows > 0


async def _describe(admin: GroupsAdmin, args: argparse.Namespace, printer: Printer) -> None:
    from rackwise.client import group_reports as reports  # noqa: PLC0415
    from rackwise.client.groups import LATEST_TIMESTAMP, GroupsError  # noqa: PLC0415
    from rackwise.formats import consumer_groups as tables  # noqa: PLC0415

    described = await admin.describe_groups(await _group_ids(admin, args))
    for answer in described.values():
        if isinstance(answer, GroupsError):
            raise answer
    for group in reports.tree_order(described):
        description = described[group]
        assert not isinstance(description, GroupsError)
        state = _state_of(description)
        if args.members:
            members = reports.member_rows(description)
            should_print(printer, group, state, len(members))
            printer.rows += tables.members_json(members, verbose=args.verbose)
            printer.text(tables.members_text(members, verbose=args.verbose))
        elif args.state is not None:
            row = reports.state_row(description)
            if should_print(printer, group, state, 1):
                printer.rows += tables.state_json([row])
                printer.text(tables.state_text(row, verbose=args.verbose))
        else:
            committed = await admin.committed_offsets(group)
            wanted = reports.partitions_to_describe(description, committed)
            log_ends = await admin.log_offsets(wanted, LATEST_TIMESTAMP) if wanted else {}
            rows = reports.offset_rows(description, committed, log_ends)
            if should_print(printer, group, state, len(rows)):
                printer.rows += tables.offsets_json(rows)
                printer.text(tables.offsets_text(rows))


# ---- --delete and --delete-offsets ------------------------------------------------------------


async def _delete(admin: GroupsAdmin, args: argparse.Namespace, printer: Printer) -> None:
    from rackwise.client.group_reports import group_hash_order  # noqa: PLC0415

    groups = await _group_ids(admin, args)
    results = await admin.delete_groups(groups)
    order = group_hash_order(results)
    printer.rows += [{"group": g, "error": _java_text(results[g])} for g in order]
    succeeded = [g for g in order if results[g] is None]
    failed = [g for g in order if results[g] is not None]
    if not failed:
        printer.text(
            f"Deletion of requested consumer groups ('{', '.join(succeeded)}') was successful.\n"
        )
        return
    printer.error("Deletion of some consumer groups failed:")
    for group in failed:
        error = results[group]
        assert error is not None
        printer.text(f"* Group '{group}' could not be deleted due to: {error.java_text}\n")
    if succeeded:
        deleted = ", ".join(f"'{g}'" for g in succeeded)
        printer.text(f"\nThese consumer groups were deleted successfully: {deleted}\n")


_TOP_LEVEL_MESSAGES: Final = {
    24: "'{group}' is not valid.",
    69: "'{group}' does not exist.",
    30: "Access to '{group}' is not authorized.",
    68: "Deleting offsets of a consumer group '{group}' is forbidden if the group is not empty.",
    86: "Encounter some partition level error, see the follow-up details:",
    29: "Encounter some partition level error, see the follow-up details:",
    3: "Encounter some partition level error, see the follow-up details:",
}


async def _delete_offsets(admin: GroupsAdmin, args: argparse.Namespace, printer: Printer) -> None:
    from rackwise.client.group_reports import hash_order, parse_topic_partitions  # noqa: PLC0415
    from rackwise.client.groups import GroupsError  # noqa: PLC0415
    from rackwise.common import TopicPartition  # noqa: PLC0415
    from rackwise.formats.consumer_groups import (  # noqa: PLC0415
        delete_offsets_json,
        delete_offsets_text,
    )
    from rackwise.protocol import error_name  # noqa: PLC0415

    if len(args.group) > 1:  # joptsimple's valueOf of a repeated option
        raise CommandError(
            "Executing consumer group command failed due to Found multiple arguments for option "
            "group, but you asked for only one"
        )
    group, topics = args.group[0], list(args.topic)
    results: dict[TopicPartition, str | None] = {}
    partitions = [tp for t in topics if ":" in t for tp in _parsed(parse_topic_partitions, t)]
    whole = [t for t in dict.fromkeys(topics) if ":" not in t]
    for topic, found in (await admin.topic_partitions(whole)).items():
        if isinstance(found, GroupsError):
            results[TopicPartition(topic, -1)] = found.java_text
        else:
            partitions += [TopicPartition(topic, p) for p in found]
    partitions = hash_order(partitions)
    code, per_partition = await admin.delete_offsets(group, partitions)
    failing = [per_partition[tp] for tp in partitions if per_partition.get(tp, 0) != 0]
    top_level = code if code != 0 else (failing[0] if failing else 0)
    for tp in partitions:
        own = per_partition.get(tp, 0)
        error = code if code != 0 else own
        results[tp] = None if error == 0 else GroupsError(error).java_text
    if top_level == 0:
        printer.text(
            f"Request succeed for deleting offsets with topic {', '.join(topics)} group {group}\n"
        )
    else:
        template = _TOP_LEVEL_MESSAGES.get(top_level)
        printer.error(
            template.format(group=group)
            if template is not None
            else f"Encounter some unknown error: {error_name(top_level)}"
        )
    printer.rows += delete_offsets_json(results)
    printer.text(delete_offsets_text(results))


def _parsed(parse: Any, argument: str) -> Any:
    try:
        return parse(argument)
    except ValueError as e:
        raise CommandError(str(e)) from None


# ---- --reset-offsets --------------------------------------------------------------------------


async def _reset(admin: GroupsAdmin, args: argparse.Namespace, printer: Printer) -> None:
    from rackwise.cli._consumer_groups_reset import export_csv, prepare_offsets  # noqa: PLC0415
    from rackwise.client.group_reports import group_hash_order  # noqa: PLC0415
    from rackwise.client.groups import GroupsError  # noqa: PLC0415
    from rackwise.common import TopicPartition  # noqa: PLC0415
    from rackwise.formats.consumer_groups import reset_plan_json, reset_plan_text  # noqa: PLC0415

    described = await admin.describe_groups(await _group_ids(admin, args))
    plan: dict[str, list[tuple[TopicPartition, int]]] = {}
    for group in group_hash_order(described):
        description = described[group]
        if isinstance(description, GroupsError):
            raise description
        state = JAVA_GROUP_STATES.get(description.state.lower(), description.state)
        if state not in INACTIVE:
            printer.error(
                f"Assignments can only be reset if the group '{group}' is inactive, but the "
                f"current state is {state}."
            )
            plan[group] = []
            continue
        offsets = await prepare_offsets(
            admin, args, group, printer, now_ms=time.time_ns() // 1_000_000
        )
        if args.execute:
            await admin.alter_offsets(group, dict(offsets))
        plan[group] = offsets
    printer.rows += reset_plan_json(plan)
    if args.export:
        printer.text(export_csv(plan, single_group=len(args.group or ()) == 1) + "\n")
    else:
        printer.text(reset_plan_text(plan))


def _java_text(error: Any) -> str | None:
    return None if error is None else str(error.java_text)
