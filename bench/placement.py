"""Placement benchmark: 1,000,000 and 100,000 partitions, RF 3, 1,000 brokers.

rack-aware and striped on 10 racks, multi-level on 3 data centres x 4 racks; start index 0.
Each figure is the median of 5 in-process runs after one warm-up (which also loads the compiled
kernels), with the peak memory the run allocated (tracemalloc). ``place_array`` is the placement
itself; ``place`` adds the conversion to Python lists that the list-returning API does.

    .venv/bin/python bench/placement.py [--json]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable

from rackwise.common import JavaRandom
from rackwise.placement import BrokerInfo, ClusterView, PlacementSpec, create_placer

NUM_BROKERS = 1_000
KAFKA_JAVA_1M_RACK_AWARE_S = 0.23  # Kafka's AdminUtils, fixed 6 GB heap, same kind of machine

CLUSTERS = {
    "rack-aware": [BrokerInfo(i, f"rack{i % 10}") for i in range(NUM_BROKERS)],
    "striped": [BrokerInfo(i, f"rack{i % 10}") for i in range(NUM_BROKERS)],
    "multi-level": [BrokerInfo(i, f"/dc{i % 3}/rack{i % 4}") for i in range(NUM_BROKERS)],
}


def _median_seconds(run: Callable[[], object], repeat: int = 5) -> float:
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _peak_mib(run: Callable[[], object]) -> float:
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def main() -> None:
    as_json = "--json" in sys.argv
    results = []
    for partitions in (1_000_000, 100_000):
        for name, brokers in CLUSTERS.items():
            cluster = ClusterView(brokers)
            spec = PlacementSpec(partitions, 3, start_index=0)

            def array(
                name: str = name, spec: PlacementSpec = spec, view: ClusterView = cluster
            ) -> object:
                placer = create_placer(name, random=JavaRandom(1))
                return placer.place_array(spec, view)  # type: ignore[attr-defined]

            def lists(
                name: str = name, spec: PlacementSpec = spec, view: ClusterView = cluster
            ) -> object:
                return create_placer(name, random=JavaRandom(1)).place(spec, view)

            row = {
                "placer": name,
                "partitions": partitions,
                "place_array_s": round(_median_seconds(array), 4),
                "place_s": round(_median_seconds(lists, repeat=3), 4),
                "peak_mib": round(_peak_mib(array), 1),
            }
            results.append(row)
            if not as_json:
                print(
                    f"{name:>12} {partitions:>9,} partitions: place_array "
                    f"{row['place_array_s']:.3f} s, place (lists) {row['place_s']:.3f} s, "
                    f"peak {row['peak_mib']:.1f} MiB",
                    file=sys.stderr,
                )
    if as_json:
        print(json.dumps({"cores": os.cpu_count(), "results": results}, indent=1))
        return
    print(
        f"\nmachine: {os.cpu_count()} cores; Kafka (Java) reference, 1M rack-aware: "
        f"{KAFKA_JAVA_1M_RACK_AWARE_S} s"
    )
    print(f"{'placer':>12} {'partitions':>10} {'place_array s':>14} {'place s':>8} {'peak MiB':>9}")
    for r in results:
        print(
            f"{r['placer']:>12} {r['partitions']:>10,} {r['place_array_s']:>14.3f} "
            f"{r['place_s']:>8.3f} {r['peak_mib']:>9.1f}"
        )


if __name__ == "__main__":
    main()
