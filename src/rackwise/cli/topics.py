"""``rackwise topics``: Kafka's ``kafka-topics.sh`` over kafka-python's admin client, with its
flags, its checks and their wording, and its ``--list`` and ``--describe`` output line for line.

``--topic`` is a regular expression for ``--describe``, ``--alter`` and ``--delete`` (commas
mean "or", as in Kafka's include lists), and a plain name for ``--create``. Kafka prints
nothing after ``--alter`` and ``--delete``, and neither does this. Errors are one line
``error: ...`` with exit status 1; a broker's refusal is worded as the broker worded it.
``--timeout-ms`` (not a Kafka flag) bounds the wait for a broker and for each request.
"""

from __future__ import annotations

import argparse
import base64
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from rackwise.cli._servers import check_bootstrap_servers
from rackwise.cli.errors import CommandError

if TYPE_CHECKING:  # the admin client loads the wire protocol: imported when a command runs
    from rackwise.client.admin import Admin, PartitionDescription, TopicDescription

DEFAULT_TIMEOUT_MS: Final = 30_000
"""The admin client's own default (``rackwise.client.admin.DEFAULT_TIMEOUT_MS``), spelled out
here so that ``--help`` need not load the client."""
MIN_ISR: Final = "min.insync.replicas"
MIN_RACKS: Final = "min.insync.racks"
MIN_RACKS_LEVEL: Final = "min.insync.racks.level"
"""The topic configs the under- and at-min-ISR reports read."""

ACTIONS = ("create", "list", "alter", "describe", "delete")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
MAX_REPLICATION_FACTOR = 32767
"""Java's Short.MAX_VALUE: a replication factor travels as an int16."""

# Options and the actions they go with (Kafka's TopicCommandOptions.checkInvalidArgs).
_VALID_WITH = {
    "config": ("create",),
    "partitions": ("alter", "create"),
    "replication_factor": ("create",),
    "replica_assignment": ("alter", "create"),
    "if_exists": ("alter", "delete", "describe"),
    "if_not_exists": ("create",),
    "exclude_internal": ("list", "describe"),
    "under_replicated_partitions": ("describe",),
    "unavailable_partitions": ("describe",),
    "under_min_isr_partitions": ("describe",),
    "at_min_isr_partitions": ("describe",),
    "topics_with_overrides": ("describe",),
}
REPORTS: Final = (
    "under_replicated_partitions", "under_min_isr_partitions", "at_min_isr_partitions",
    "unavailable_partitions",
)  # fmt: skip
"""The partition reports, in Kafka's order of checks; none goes with --topics-with-overrides."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: a broker")
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client properties (Kafka's keys, SSL and SASL too)",
    )
    for action, text in (
        ("create", "Create a new topic."),
        ("list", "List all available topics."),
        ("alter", "Alter the number of partitions and replica assignment."),
        ("describe", "List details for the given topics."),
        ("delete", "Delete a topic."),
    ):
        parser.add_argument(f"--{action}", action="store_true", help=text)
    parser.add_argument("--topic", metavar="TOPIC", help="a name, or a regex except for --create")
    parser.add_argument("--partitions", type=int, metavar="N", help="# of partitions")
    parser.add_argument("--replication-factor", type=int, metavar="R", help="replication factor")
    parser.add_argument(
        "--replica-assignment",
        metavar="1:2,2:3,...",
        help="replicas per partition: broker ids joined by ':', partitions by ','",
    )
    parser.add_argument(
        "--config", action="append", default=None, metavar="NAME=VALUE", help="a topic config"
    )
    parser.add_argument("--if-exists", action="store_true", help="only if the topic exists")
    parser.add_argument("--if-not-exists", action="store_true", help="only if it does not")
    parser.add_argument("--exclude-internal", action="store_true", help="leave internal topics")
    parser.add_argument(
        "--under-replicated-partitions", action="store_true", help="only under-replicated ones"
    )
    parser.add_argument(
        "--unavailable-partitions", action="store_true", help="only partitions without leader"
    )
    parser.add_argument(
        "--under-min-isr-partitions",
        action="store_true",
        help="only partitions whose ISR is smaller than min.insync.replicas",
    )
    parser.add_argument(
        "--at-min-isr-partitions",
        action="store_true",
        help="only partitions whose ISR is min.insync.replicas exactly",
    )
    parser.add_argument(
        "--topics-with-overrides",
        action="store_true",
        help="only topics with configs overriding the defaults, without their partitions",
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"wait for a broker and each request (default {DEFAULT_TIMEOUT_MS})",
    )
    parser.set_defaults(run=run)


# -- checks and parsing (pure) -----------------------------------------------------------------


def check_args(args: argparse.Namespace) -> str:
    """The one action asked for, after Kafka's checks of the options that go with it."""
    chosen = [action for action in ACTIONS if getattr(args, action)]
    if len(chosen) != 1:
        raise CommandError(
            "Command must include exactly one action: --list, --describe, --create, --alter "
            "or --delete"
        )
    action = chosen[0]
    if not args.bootstrap_server:
        raise CommandError("--bootstrap-server must be specified")
    if action not in ("list", "describe") and args.topic is None:
        raise CommandError('Missing required argument "[topic]"')
    if action == "alter" and args.partitions is None:
        raise CommandError('Missing required argument "[partitions]"')
    for option, actions in _VALID_WITH.items():
        if _given(args, option) and action not in actions:
            raise CommandError(
                f'Option "[{_flag(option)}]" can\'t be used with option "[{action}]"'
            )
    for report in REPORTS:
        if _given(args, report) and args.topics_with_overrides:
            raise CommandError(
                f'Option "[{_flag(report)}]" can\'t be used with option "[topics-with-overrides]"'
            )
    if action == "create" and args.replica_assignment is not None:
        for other in ("partitions", "replication_factor"):
            if _given(args, other):
                raise CommandError(
                    f'Option "[replica-assignment]" can\'t be used with option "[{_flag(other)}]"'
                )
    return action


def _given(args: argparse.Namespace, option: str) -> bool:
    value = getattr(args, option)
    return value not in (None, False)


def _flag(option: str) -> str:
    return option.replace("_", "-")


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``0:1,1:2`` as ``{0: [0, 1], 1: [1, 2]}`` (Kafka's ``parseReplicaAssignment``)."""
    assignment: dict[int, list[int]] = {}
    for partition, entry in enumerate(text.split(",")):
        brokers = []
        for part in entry.split(":"):
            try:
                brokers.append(int(part.strip()))
            except ValueError:
                raise CommandError(f'For input string: "{part.strip()}"') from None
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise CommandError(
                "Partition replica lists may not contain duplicate entries: "
                + ",".join(map(str, duplicates))
            )
        assignment[partition] = brokers
        if len(brokers) != len(assignment[0]):
            raise CommandError(
                f"Partition {partition} has different replication factor: "
                f"[{', '.join(map(str, brokers))}]"
            )
    return assignment


def parse_configs(entries: Sequence[str] | None) -> dict[str, str]:
    """``--config name=value`` entries as a mapping, spaces around ``=`` and the ends dropped."""
    configs: dict[str, str] = {}
    for entry in entries or ():
        parts = re.split(r"\s*=\s*", entry)
        if len(parts) != 2:
            raise CommandError(
                "requirement failed: Invalid topic config: all configs to be added must be in "
                'the format "key=val".'
            )
        configs[parts[0].strip()] = parts[1].strip()
    return configs


def topic_filter(raw: str) -> re.Pattern[str]:
    """Kafka's include list: commas mean "or", spaces and surrounding quotes are dropped, and a
    topic must match the whole expression."""
    regex = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", raw.strip().replace(",", "|")))
    regex = regex.replace(" ", "")
    try:
        return re.compile(regex)
    except re.error:
        raise CommandError(f"{regex} is an invalid regex.") from None


def select_topics(
    names: Iterable[str], raw_filter: str | None, *, exclude_internal: bool
) -> list[str]:
    """The topics, sorted, that ``--topic`` (if any) names, less internal ones if asked."""
    pattern = None if raw_filter is None else topic_filter(raw_filter)
    return [
        name
        for name in sorted(names)
        if (pattern is None or pattern.fullmatch(name))
        and not (exclude_internal and name in INTERNAL_TOPICS)
    ]


def describe_lines(
    topic: TopicDescription,
    configs: Mapping[str, str],
    *,
    with_topic_line: bool = True,
    partition_filter: Callable[[PartitionDescription], bool] | None = None,
) -> list[str]:
    """``--describe``'s lines for one topic: the topic line, then one line per partition."""
    lines = []
    if with_topic_line:
        topic_id = "" if topic.topic_id is None else f"\tTopicId: {_java_uuid(topic.topic_id)}"
        config_text = ",".join(f"{k}={v}" for k, v in configs.items())
        lines.append(
            f"Topic: {topic.name}{topic_id}\tPartitionCount: {len(topic.partitions)}"
            f"\tReplicationFactor: {topic.replication_factor}\tConfigs: {config_text}"
        )
    for partition in topic.partitions:
        if partition_filter is not None and not partition_filter(partition):
            continue
        lines.append(partition_line(topic.name, partition))
    return lines


def partition_line(topic: str, p: PartitionDescription) -> str:
    """One partition as ``kafka-topics --describe`` prints it."""
    leader = "none" if p.leader is None else str(p.leader)
    return (
        f"\tTopic: {topic}\tPartition: {p.partition}\tLeader: {leader}"
        f"\tReplicas: {_ids(p.replicas)}\tIsr: {_ids(p.isr)}"
        f"\tElr: {_ids(p.elr)}\tLastKnownElr: {_ids(p.last_known_elr)}"
    )


def _ids(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def _java_uuid(value: uuid.UUID) -> str:
    """A topic id as Kafka prints it (``Uuid.toString``): URL-safe base64 of its 16 bytes,
    unpadded."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


# -- the actions -------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    action = check_args(args)
    if action == "create":
        _check_create(args)
    check_bootstrap_servers(args.bootstrap_server)  # where Kafka's admin client checks it
    from rackwise.client.command_config import read_command_config, timeout_ms  # noqa: PLC0415

    config = read_command_config(args.command_config, "topics") if args.command_config else {}
    from rackwise.client.admin import Admin  # noqa: PLC0415 - see TYPE_CHECKING above

    with Admin(
        args.bootstrap_server,
        timeout_ms=timeout_ms(config, args.timeout_ms),
        client_id=config.get("client.id", "rackwise-admin"),
    ) as admin:
        if action == "create":
            return _create(admin, args)
        if action == "list":
            topics = select_topics(
                admin.list_topics(), args.topic, exclude_internal=args.exclude_internal
            )
            print("\n".join(topics))
            return 0
        topics = select_topics(admin.list_topics(), args.topic, exclude_internal=False)
        if args.topic is not None and not topics and not args.if_exists:
            raise CommandError(f"Topic '{args.topic}' does not exist as expected")
        if action == "describe":
            topics = select_topics(topics, None, exclude_internal=args.exclude_internal)
            return _describe(admin, topics, args)
        if action == "alter":
            return _alter(admin, topics, args)
        if topics:
            admin.delete_topics(topics)
        return 0


def _check_create(args: argparse.Namespace) -> None:
    rf = args.replication_factor
    if rf is not None and not 1 <= rf <= MAX_REPLICATION_FACTOR:
        raise CommandError(
            f"The replication factor must be between 1 and {MAX_REPLICATION_FACTOR} inclusive"
        )
    if args.partitions is not None and args.partitions < 1:
        raise CommandError("The partitions must be greater than 0")


def _create(admin: Admin, args: argparse.Namespace) -> int:
    from rackwise.client.admin import BROKER_DEFAULT, AdminError  # noqa: PLC0415

    name = args.topic
    if "_" in name or "." in name:
        print(
            "WARNING: Due to limitations in metric names, topics with a period ('.') or "
            "underscore ('_') could collide. To avoid issues it is best to use either, but "
            "not both."
        )
    configs = parse_configs(args.config)
    assignment = (
        None
        if args.replica_assignment is None
        else parse_replica_assignment(args.replica_assignment)
    )
    # check_args refuses --partitions and --replication-factor beside --replica-assignment.
    partitions = BROKER_DEFAULT if args.partitions is None else args.partitions
    rf = BROKER_DEFAULT if args.replication_factor is None else args.replication_factor
    try:
        admin.create_topic(
            name,
            num_partitions=partitions,
            replication_factor=rf,
            assignments=assignment,
            configs=configs,
        )
    except AdminError as e:
        if args.if_not_exists and e.name == "TOPIC_ALREADY_EXISTS":
            return 0
        raise
    print(f"Created topic {name}.")
    return 0


def _alter(admin: Admin, topics: list[str], args: argparse.Namespace) -> int:
    assignment = (
        None
        if args.replica_assignment is None
        else parse_replica_assignment(args.replica_assignment)
    )
    for topic in admin.describe_topics(topics):
        new = None
        if assignment is not None:
            start = len(topic.partitions)
            new = [replicas for p, replicas in sorted(assignment.items()) if p >= start]
        admin.create_partitions(topic.name, args.partitions, new)
    return 0


def _describe(admin: Admin, topics: list[str], args: argparse.Namespace) -> int:
    """Kafka's ``describeTopic``: a topic line unless a partition report is asked for (and
    with ``--topics-with-overrides`` only for a topic with overrides, without partitions);
    a partition line for each partition every report asked for selects."""
    if not topics:
        return 0
    described = admin.describe_topics(topics)
    reports = any(getattr(args, r) for r in REPORTS)
    names = [t.name for t in described]
    configs = {} if reports else admin.topic_configs(names)
    brokers = admin.brokers() if reports else []
    live = {b.id for b in brokers if not b.is_fenced}
    # below min.insync.racks counts as under min ISR
    keys = [MIN_ISR, *((MIN_RACKS, MIN_RACKS_LEVEL) if args.under_min_isr_partitions else ())]
    wants_min_isr = args.under_min_isr_partitions or args.at_min_isr_partitions
    effective = admin.effective_int_configs(names, keys) if wants_min_isr else {}
    min_isr = {name: values[MIN_ISR] for name, values in effective.items()}
    rack_rules = {
        name: (values[MIN_RACKS], values[MIN_RACKS_LEVEL])
        for name, values in effective.items()
        if MIN_RACKS in values
    }
    racks: dict[int, str | None] = {}
    if any(required > 1 for required, _ in rack_rules.values()):
        racks = {b.id: b.rack for b in brokers}

    def wanted(topic: str) -> Callable[[PartitionDescription], bool]:
        rule = rack_rules.get(topic, (1, 1))
        return lambda p: (
            not reports
            or partition_reported(args, p, live, min_isr.get(topic, 1))
            or (args.under_min_isr_partitions and below_min_racks(p, racks, rule))
        )

    for topic in described:
        if args.topics_with_overrides and not configs.get(topic.name):
            continue
        lines = describe_lines(
            topic,
            configs.get(topic.name, {}),
            with_topic_line=not reports,
            partition_filter=(lambda p: False)
            if args.topics_with_overrides
            else wanted(topic.name),
        )
        for line in lines:
            print(line)
    return 0


def _nothing(_: PartitionDescription) -> bool:
    return False


def below_min_racks(
    p: PartitionDescription, racks: Mapping[int, str | None], rule: tuple[int, int]
) -> bool:
    """Whether ``p``'s ISR spans fewer failure domains than its ``min.insync.racks`` (at
    ``min.insync.racks.level``) asks for."""
    from rackwise.topology import count_domains  # noqa: PLC0415

    required, level = rule
    return required > 1 and count_domains(p.isr, racks, level) < required


def partition_reported(
    args: argparse.Namespace, p: PartitionDescription, live: set[int], min_isr: int
) -> bool:
    """Whether one of the partition reports asked for selects ``p`` (Kafka's
    ``PartitionDescription`` checks)."""
    no_leader = p.leader is None
    return bool(
        (args.under_replicated_partitions and len(p.isr) < len(p.replicas))
        or (args.unavailable_partitions and (no_leader or p.leader not in live))
        or (args.under_min_isr_partitions and (no_leader or len(p.isr) < min_isr))
        or (args.at_min_isr_partitions and len(p.isr) == min_isr)
    )
