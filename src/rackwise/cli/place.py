"""``rackwise place``: place a topic's replicas with Kafka's placers or the multi-level placer
and print the reassignment JSON that ``kafka-reassign-partitions --execute`` reads."""

from __future__ import annotations

import argparse
import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from rackwise.cli._table import render
from rackwise.cli.errors import CommandError
from rackwise.common import InvalidFormatException, JavaRandom
from rackwise.formats.brokers import parse_broker_list
from rackwise.formats.reassignment import (
    PartitionReassignment,
    Reassignment,
    format_reassignment,
    parse_reassignment,
)

if TYPE_CHECKING:  # placement loads numpy: imported when the command runs
    from rackwise.placement import BrokerInfo, PlacementSpec

T = TypeVar("T")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--brokers", required=True, metavar="FILE", help="broker list JSON")
    parser.add_argument("--partitions", required=True, type=int, metavar="N")
    parser.add_argument("--replication-factor", required=True, type=int, metavar="R")
    parser.add_argument("--topic", default=None, metavar="NAME", help="default: topic")
    parser.add_argument(
        "--placer",
        default="rack-aware",
        metavar="NAME",
        help="rack-unaware, rack-aware (default), striped, multi-level or pkg.mod:Class",
    )
    parser.add_argument(
        "--disable-rack-aware", action="store_true", help="ignore racks (rack-unaware placement)"
    )
    parser.add_argument("--start-index", type=int, default=-1, metavar="I", help="-1: random")
    parser.add_argument("--start-partition", type=int, default=None, metavar="P")
    parser.add_argument("--seed", type=int, default=None, metavar="S", help="java.util.Random seed")
    parser.add_argument("--broker-ids", default=None, metavar="1,2,3", help="candidate brokers")
    parser.add_argument(
        "--existing", default=None, metavar="FILE", help="the topic's reassignment JSON today"
    )
    parser.add_argument(
        "--summary", action="store_true", help="print replicas and leaders per broker and rack"
    )
    parser.add_argument("--json", action="store_true", help="with --summary: print it as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rackwise.placement import BrokerInfo, ClusterView, create_placer  # noqa: PLC0415

    if args.json and not args.summary:
        raise CommandError("--json prints the --summary table as JSON: give --summary too")
    entries = _read(args.brokers, "--brokers", parse_broker_list)
    brokers = [BrokerInfo(b.id, b.rack, b.fenced) for b in entries]
    existing = _read_existing(args.existing, args.topic)
    topic = args.topic or (existing.partitions[0].topic if existing.partitions else "topic")
    spec = _spec(args, topic, existing)
    current = {e.topic_partition: e.replicas for e in existing.partitions if e.topic == topic}
    seed = args.seed if args.seed is not None else secrets.randbits(63)
    placer_name = "rack-unaware" if args.disable_rack_aware else args.placer
    placer = create_placer(placer_name, random=JavaRandom(seed))
    cluster = ClusterView(brokers, current)
    placed = placer.place(spec, cluster, _broker_ids(args.broker_ids))
    if placed is None:  # only a raw plug-in may defer; create_placer wraps plug-ins
        raise CommandError(f"placer {placer_name!r} returned no placement")
    if args.summary:
        print(_summary(brokers, placed, as_json=args.json))
        return 0
    document = Reassignment(
        tuple(
            PartitionReassignment(topic, spec.first_partition + i, tuple(replicas))
            for i, replicas in enumerate(placed)
        )
    )
    print(format_reassignment(document))
    return 0


def _read(path: str, flag: str, parse: Callable[[str], T]) -> T:
    """The file ``path`` parsed; a document that does not parse is an error naming the file."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        return parse(text)
    except InvalidFormatException as e:
        raise CommandError(f"{flag} {path}: {e}") from None


def _read_existing(path: str | None, topic: str | None) -> Reassignment:
    if path is None:
        return Reassignment()
    existing = _read(path, "--existing", parse_reassignment)
    topics = sorted({e.topic for e in existing.partitions})
    if topic is None and len(topics) > 1:
        raise CommandError(f"--existing holds several topics ({', '.join(topics)}): pass --topic")
    if topic is not None and existing.partitions and topic not in topics:
        raise CommandError(f"--existing has no partition of topic {topic!r}")
    return existing


def _spec(args: argparse.Namespace, topic: str, existing: Reassignment) -> PlacementSpec:
    """What to place. With ``--existing``, ``--partitions`` is the topic's new partition count:
    the partitions beyond today's are placed, or all of them when the replication factor grows."""
    from rackwise.placement import PlacementSpec  # noqa: PLC0415

    mine = [e for e in existing.partitions if e.topic == topic]
    if not mine:
        start = args.start_partition if args.start_partition is not None else 0
        return PlacementSpec(
            args.partitions, args.replication_factor, start, args.start_index, topic
        )
    rf_now = max(len(e.replicas) for e in mine)
    if args.replication_factor < rf_now:
        raise CommandError(
            f"--replication-factor {args.replication_factor} is below the topic's current "
            f"replication factor {rf_now}"
        )
    count_now = max(e.partition for e in mine) + 1
    if args.partitions < count_now:
        raise CommandError(
            f"--partitions {args.partitions} is below the topic's current {count_now} partitions"
        )
    if args.replication_factor > rf_now:
        start = 0
    else:
        start = args.start_partition if args.start_partition is not None else count_now
    if args.partitions - start <= 0:
        raise CommandError(
            f"nothing to place: topic {topic!r} already has {count_now} partitions with "
            f"replication factor {rf_now}"
        )
    return PlacementSpec(
        args.partitions - start, args.replication_factor, start, args.start_index, topic
    )


def _broker_ids(text: str | None) -> list[int] | None:
    if text is None:
        return None
    ids = []
    for part in text.split(","):
        try:
            ids.append(int(part))
        except ValueError:
            raise CommandError(f"--broker-ids: {part.strip()!r} is not a broker id") from None
    return ids


def _summary(brokers: list[BrokerInfo], placed: list[list[int]], *, as_json: bool) -> str:
    from rackwise.topology import RackTree, as_rack_path, node_loads  # noqa: PLC0415

    tree = RackTree.build([(b.id, as_rack_path(b.rack), b.fenced) for b in brokers])
    loads = node_loads(tree, placed)
    if as_json:
        return json.dumps(
            [
                {
                    "level": load.level,
                    "node": load.node,
                    "broker": load.broker,
                    "brokers": load.num_brokers,
                    "replicas": load.replicas,
                    "leaders": load.leaders,
                }
                for load in loads
            ]
        )
    rows = [
        (
            load.level,
            load.node if load.broker is None else f"broker {load.broker}",
            "" if load.broker is None else load.node,
            load.num_brokers,
            load.replicas,
            load.leaders,
        )
        for load in loads
    ]
    return render(["level", "node", "rack", "brokers", "replicas", "leaders"], rows)
