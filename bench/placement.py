"""Placement benchmark: 1,000,000 and 100,000 partitions, RF 3, 1,000 brokers, every built-in
placer, against Kafka's 0.23 s for a million partitions.

rack-unaware, rack-aware and striped on 10 racks, multi-level on 3 data centres x 4 racks; start
index 0. Each figure is the median of 5 in-process runs after one warm-up (which also loads the
compiled kernels), with the peak memory the run allocated (tracemalloc). ``place_array`` is the
placement itself; ``place`` is the public API, which returns Python lists (built with the cyclic
collector paused), as wall time and as this process's CPU time; the load average before the first
run is printed too, since the machine may be shared.

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
REPEAT = 5
KAFKA_JAVA_1M_S = 0.23  # Kafka's AdminUtils, rack-aware, fixed 6 GB heap, same kind of machine

TEN_RACKS = [BrokerInfo(i, f"rack{i % 10}") for i in range(NUM_BROKERS)]
CLUSTERS = {
    "rack-unaware": TEN_RACKS,
    "rack-aware": TEN_RACKS,
    "striped": TEN_RACKS,
    "multi-level": [BrokerInfo(i, f"/dc{i % 3}/rack{i % 4}") for i in range(NUM_BROKERS)],
}


def _median_seconds(run: Callable[[], object]) -> tuple[float, float]:
    """The median wall time and the median CPU time of this process, in seconds."""
    run()
    wall, cpu = [], []
    for _ in range(REPEAT):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        del result  # freeing a million lists is not part of the next run
    return statistics.median(wall), statistics.median(cpu)


def _peak_mib(run: Callable[[], object]) -> float:
    tracemalloc.start()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


def _measure(name: str, partitions: int) -> dict[str, object]:
    cluster = ClusterView(CLUSTERS[name])
    spec = PlacementSpec(partitions, 3, start_index=0)

    def array() -> object:
        placer = create_placer(name, random=JavaRandom(1))
        return placer.place_array(spec, cluster)  # type: ignore[attr-defined]

    def lists() -> object:
        return create_placer(name, random=JavaRandom(1)).place(spec, cluster)

    place_s, place_cpu_s = _median_seconds(lists)
    return {
        "placer": name,
        "partitions": partitions,
        "place_array_s": round(_median_seconds(array)[0], 4),
        "place_s": round(place_s, 4),
        "place_cpu_s": round(place_cpu_s, 4),
        "within_kafka": partitions != 1_000_000 or place_s <= KAFKA_JAVA_1M_S,
        "peak_mib": round(_peak_mib(array), 1),
    }


def main() -> None:
    as_json = "--json" in sys.argv
    load = os.getloadavg()[0]
    results = []
    for partitions in (1_000_000, 100_000):
        for name in CLUSTERS:
            row = _measure(name, partitions)
            results.append(row)
            if not as_json:
                print(
                    f"{name:>12} {partitions:>9,} partitions: place_array "
                    f"{row['place_array_s']:.3f} s, place {row['place_s']:.3f} s, "
                    f"peak {row['peak_mib']:.1f} MiB",
                    file=sys.stderr,
                )
    if as_json:
        document = {"cores": os.cpu_count(), "load_before": load, "results": results}
        print(json.dumps(document, indent=1))
        return
    print(
        f"\nmachine: {os.cpu_count()} cores, load average {load:.2f} before the runs; "
        f"Kafka (Java), 1M partitions: {KAFKA_JAVA_1M_S} s"
    )
    print(
        f"{'placer':>12} {'partitions':>10} {'place_array s':>14} {'place s':>8} "
        f"{'(cpu s)':>8} {'peak MiB':>9}  within Kafka's time"
    )
    for r in results:
        verdict = "" if r["partitions"] != 1_000_000 else ("yes" if r["within_kafka"] else "NO")
        line = (
            f"{r['placer']:>12} {r['partitions']:>10,} {r['place_array_s']:>14.3f} "
            f"{r['place_s']:>8.3f} {r['place_cpu_s']:>8.3f} {r['peak_mib']:>9.1f}  {verdict}"
        )
        print(line.rstrip())


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
