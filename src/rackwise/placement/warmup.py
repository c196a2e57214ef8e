"""Compile the placement kernels once, at install time (``python -m rackwise.placement.warmup``),
so that the first large placement does not pay for it. The compiled code is cached on disk."""

from __future__ import annotations

from rackwise.common import JavaRandom
from rackwise.placement.model import BrokerInfo, ClusterView, PlacementSpec
from rackwise.placement.plugins import BUILT_IN


def main() -> None:
    brokers = [BrokerInfo(i, f"/dc{i % 3}/r{i % 2}", fenced=i == 5) for i in range(12)]
    spec = PlacementSpec(20_000, 3, start_index=0)
    for name, make in BUILT_IN.items():
        make(JavaRandom(1)).place(spec, ClusterView(brokers))
        print(f"compiled the {name} placement kernel")


if __name__ == "__main__":
    main()
