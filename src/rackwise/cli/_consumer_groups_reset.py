"""``rackwise consumer-groups --reset-offsets``: which partitions, which new offsets, as
Kafka's ``ConsumerGroupCommand.prepareOffsetsToReset`` decides them for one inactive group.

The scope is ``--all-topics`` (every partition the group committed) or ``--topic T`` /
``--topic T:0,1`` (repeatable); the scenario one of ``--to-offset``, ``--shift-by``,
``--to-datetime``, ``--by-duration``, ``--to-earliest``, ``--to-latest``, ``--to-current``,
or ``--from-file`` (a plan as ``--export`` writes it: ``topic,partition,offset`` lines when
one ``--group`` is given, else ``group,topic,partition,offset``; its offsets clamped as
``--to-offset``'s, and it needs no scope).
The computations are :mod:`rackwise.client.group_reports`'; the offsets of the logs come from
each partition's leader. The plan comes back in the order Kafka's ``HashMap`` prints it.
"""

from __future__ import annotations

import argparse
import csv
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from rackwise.cli._consumer_groups_options import scenario
from rackwise.cli.errors import CommandError
from rackwise.client import group_reports as reports
from rackwise.client.groups import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    NO_OFFSET,
    GroupsAdmin,
    GroupsError,
)
from rackwise.common import TopicPartition

_DURATION: Final = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)
_MS_PER_S: Final = 1000
_SECONDS: Final = {"D": 86_400, "H": 3_600, "M": 60}


def parse_duration_ms(text: str) -> int:
    """Java's ``Duration.parse`` (``PnDTnHnMn.nS``, signs allowed) in whole milliseconds."""
    match = _DURATION.fullmatch(text)
    if match is None or match.group(3) == "T" or not any(match.group(i) for i in (2, 4, 5, 6)):
        raise CommandError(
            "Executing consumer group command failed due to Text cannot be parsed to a Duration"
        )
    days, hours, minutes, seconds, fraction = (match.group(i) for i in (2, 4, 5, 6, 7))
    total = Decimal(0)
    for value, unit in ((days, "D"), (hours, "H"), (minutes, "M")):
        total += int(value or 0) * _SECONDS[unit]
    if seconds is not None:
        whole = int(seconds)
        part = Decimal(f"0.{fraction or 0}")
        total += whole - part if seconds.startswith("-") else whole + part
    if match.group(1) == "-":
        total = -total
    return int(total * _MS_PER_S)


async def partitions_to_reset(
    admin: GroupsAdmin, args: argparse.Namespace, group: str
) -> list[TopicPartition]:
    """Kafka's ``getPartitionsToReset``: the scope's partitions, the ones named with their
    partitions first."""
    if args.all_topics:
        return list(await admin.committed_offsets(group))
    if not args.topic:
        if args.from_file is not None:
            return []
        raise CommandError("One of the reset scopes should be defined: --all-topics, --topic.")
    named: list[TopicPartition] = []
    for argument in (t for t in args.topic if ":" in t):
        try:
            named += reports.parse_topic_partitions(argument)
        except reports.ResetError as e:
            raise CommandError(str(e)) from None
    whole = [t for t in args.topic if ":" not in t]
    for topic, found in (await admin.topic_partitions(whole)).items():
        if isinstance(found, GroupsError):
            raise found
        named += [TopicPartition(topic, p) for p in found]
    return named


async def prepare_offsets(
    admin: GroupsAdmin, args: argparse.Namespace, group: str, printer: Any, *, now_ms: int
) -> list[tuple[TopicPartition, int]]:
    """The new offsets of ``group``, as the reset report lists them. ``printer`` takes Kafka's
    messages (``say``: stdout, ``note``: stderr)."""
    partitions = await partitions_to_reset(admin, args, group)
    option = scenario(args)
    try:
        offsets = await _offsets(admin, args, option, group, partitions, printer, now_ms)
    except reports.ResetError as e:
        raise CommandError(str(e)) from None
    return [(tp, offsets[tp]) for tp in reports.hash_order(offsets)]


async def _offsets(
    admin: GroupsAdmin,
    args: argparse.Namespace,
    option: str,
    group: str,
    partitions: Sequence[TopicPartition],
    printer: Any,
    now_ms: int,
) -> dict[TopicPartition, int]:
    if option == "to_earliest":
        found = await admin.log_offsets(partitions, EARLIEST_TIMESTAMP)
        return reports.offsets_from_log(partitions, found, reports.STARTING)
    if option == "to_latest":
        found = await admin.log_offsets(partitions, LATEST_TIMESTAMP)
        return reports.offsets_from_log(partitions, found, reports.ENDING)
    if option == "to_current":
        committed = await admin.committed_offsets(group)
        missing = [tp for tp in partitions if committed.get(tp) is None]
        log_ends = await admin.log_offsets(missing, LATEST_TIMESTAMP) if missing else {}
        return reports.current_offsets(partitions, committed, log_ends)
    if option in ("to_datetime", "by_duration"):
        if option == "to_datetime":
            try:
                timestamp = reports.parse_datetime(args.to_datetime)
            except reports.ResetError as e:
                raise CommandError(f"Executing consumer group command failed due to {e}") from None
        else:
            timestamp = now_ms - parse_duration_ms(args.by_duration)
        return await _timestamp_offsets(admin, partitions, timestamp, printer)
    if option == "from_file":
        with open(args.from_file, encoding="utf-8") as plan_file:
            plan = parse_reset_plan(plan_file.read(), args.group or ())
        if group not in plan:
            printer.error(f"No reset plan for group {group} found")
            return {}
        return await _clamped(admin, plan[group], printer)
    if option == "to_offset":
        requested = dict.fromkeys(partitions, int(args.to_offset))
    else:
        committed = await admin.committed_offsets(group)
        requested = reports.shifted_offsets(partitions, committed, int(args.shift_by))
    return await _clamped(admin, requested, printer)


async def _clamped(
    admin: GroupsAdmin, requested: Mapping[TopicPartition, int], printer: Any
) -> dict[TopicPartition, int]:
    starts = await admin.log_offsets(list(requested), EARLIEST_TIMESTAMP)
    ends = await admin.log_offsets(list(requested), LATEST_TIMESTAMP)
    offsets, warnings = reports.clamp_offsets(requested, starts, ends)
    for warning in warnings:
        printer.note(f"WARN {warning}")
    return offsets


async def _timestamp_offsets(
    admin: GroupsAdmin, partitions: Sequence[TopicPartition], timestamp: int, printer: Any
) -> dict[TopicPartition, int]:
    """Kafka's ``getLogTimestampOffsets``: the first offset at or after ``timestamp``, or for a
    partition without one the log end, with Kafka's warning."""
    found = await admin.log_offsets(partitions, timestamp)
    empty = [tp for tp in partitions if found.get(tp) == NO_OFFSET]
    for tp in reports.hash_order(empty):
        printer.say(
            f"\nWarn: Partition {tp.partition} from topic {tp.topic} is empty. Falling back to "
            "latest known offset."
        )
    log_ends = await admin.log_offsets(empty, LATEST_TIMESTAMP) if empty else {}
    combined = {tp: log_ends[tp] if tp in log_ends else found.get(tp) for tp in partitions}
    return reports.offsets_from_log(partitions, combined, reports.BY_TIMESTAMP)


def _csv_record(line: str, columns: int) -> list[str] | None:
    """One CSV line of ``columns`` fields whose last two are a partition and an offset."""
    try:
        fields = next(csv.reader([line]))
    except (csv.Error, StopIteration):
        return None
    if len(fields) != columns:
        return None
    try:
        int(fields[-2])
        int(fields[-1])
    except ValueError:
        return None
    return fields


def parse_reset_plan(text: str, groups: Sequence[str]) -> dict[str, dict[TopicPartition, int]]:
    """``--from-file``'s plan (Kafka's ``parseResetPlan``): ``topic,partition,offset`` lines
    for the one ``--group`` given, when the first line reads so; else
    ``group,topic,partition,offset`` lines."""
    lines = text.split("\n")
    while lines and not lines[-1]:
        lines.pop()  # Java's String.split drops trailing empty strings
    single = len(groups) == 1 and bool(lines) and _csv_record(lines[0], 3) is not None
    plan: dict[str, dict[TopicPartition, int]] = {}
    for line in lines:
        fields = _csv_record(line, 3 if single else 4)
        if fields is None:
            raise CommandError(
                "Executing consumer group command failed due to a reset plan line that is not "
                f"{'topic,partition,offset' if single else 'group,topic,partition,offset'}: "
                f"{line!r}"
            )
        group = groups[0] if single else fields[0]
        topic, partition, offset = fields[-3:]
        plan.setdefault(group, {})[TopicPartition(topic, int(partition))] = int(offset)
    return plan


def _csv_field(value: object) -> str:
    text = str(value)
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def export_csv(
    plan: Mapping[str, Sequence[tuple[TopicPartition, int]]], *, single_group: bool
) -> str:
    """``--export``: ``topic,partition,offset`` lines for one ``--group``, else with the group
    first, as Kafka's CSV writer writes them."""
    lines = []
    for group, offsets in plan.items():
        for tp, offset in offsets:
            fields: tuple[object, ...] = (tp.topic, tp.partition, offset)
            if not single_group:
                fields = (group, *fields)
            lines.append(",".join(_csv_field(f) for f in fields) + "\n")
    return "".join(lines)
