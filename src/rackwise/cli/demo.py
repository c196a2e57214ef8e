"""``rackwise demo``: a stretch cluster of 3 data centres x 2 racks x 2 brokers, one topic placed
by Kafka's rack-aware placer and by the multi-level placer, side by side."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rackwise.cli._table import render

if TYPE_CHECKING:
    from rackwise.placement import BrokerInfo


def stretch_cluster() -> list[BrokerInfo]:
    """Brokers 1-12, four in each data centre, two in each rack."""
    from rackwise.placement import BrokerInfo  # noqa: PLC0415  (numpy: not at start-up)

    return [
        BrokerInfo(dc * 4 + rack * 2 + host + 1, f"/dc{dc + 1}/rack{rack + 1}")
        for dc in range(3)
        for rack in range(2)
        for host in range(2)
    ]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--partitions", type=int, default=12, metavar="N")
    parser.add_argument("--replication-factor", type=int, default=3, metavar="R")
    parser.add_argument("--seed", type=int, default=42, metavar="S")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from rackwise.common import JavaRandom  # noqa: PLC0415
    from rackwise.placement import ClusterView, PlacementSpec, create_placer  # noqa: PLC0415
    from rackwise.topology import RackTree, node_loads, spread_violations  # noqa: PLC0415

    brokers = stretch_cluster()
    cluster = ClusterView(brokers)
    spec = PlacementSpec(args.partitions, args.replication_factor, start_index=-1)
    results = {
        name: create_placer(name, random=JavaRandom(args.seed)).place(spec, cluster) or []
        for name in ("rack-aware", "multi-level")
    }
    tree = RackTree.build([(b.id, b.rack, b.fenced) for b in brokers])
    dc_of = {b.id: (b.rack or "").split("/")[1] for b in brokers}
    print(
        f"Stretch cluster: 3 data centres x 2 racks x 2 brokers; {args.partitions} partitions, "
        f"RF {args.replication_factor}, seed {args.seed}\n"
    )
    rows = []
    for pid in range(args.partitions):
        row: list[object] = [pid]
        for name in results:
            replicas = results[name][pid]
            row += [",".join(map(str, replicas)), " ".join(dc_of[b] for b in replicas)]
        rows.append(row)
    print(render(["partition", "rack-aware", "data centres", "multi-level", "data centres"], rows))
    print()
    summary = []
    for load in node_loads(tree, results["rack-aware"]):
        if load.broker is not None or load.level == 0:
            continue
        other = next(x for x in node_loads(tree, results["multi-level"]) if x.node == load.node)
        summary.append(
            [load.level, load.node, load.replicas, load.leaders, other.replicas, other.leaders]
        )
    print("Per level (replicas / leaders under each node):")
    print(render(["level", "node", "rack-aware", "leaders", "multi-level", "leaders"], summary))
    print()
    for name, placed in results.items():
        bad = spread_violations(tree, placed)
        partitions = sorted({v.partition for v in bad})
        print(
            f"{name:>11}: {len(partitions)} of {args.partitions} partitions spread less evenly "
            "than the topology allows"
            + (f" (partition {bad[0].partition}, under {bad[0].node})" if bad else "")
        )
    return 0
