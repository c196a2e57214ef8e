"""What a failover and a topic deletion cost the thread that asks for them: a broker's request
loop, which also answers its heartbeats.

A log manager (real files, real fsyncs) holds ``--partitions`` logs in one directory. Two
figures, each the time the calling thread spends, then the time until the files are all on
disk (the manager's own thread done):

  new leader epoch   every partition takes a new leader epoch (a broker becoming leader of
                     all of them), which changes each ``leader-epoch-checkpoint``
  delete             every partition is deleted (a topic deletion): renamed, its directory's
                     checkpoints rewritten, its files removed

    .venv/bin/python bench/failover_loop_time.py [--partitions N] [--rounds R] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rackwise.storage.batch import build_batch
from rackwise.storage.config import LogConfig
from rackwise.storage.manager import LogManager


def _now_ms() -> int:
    return int(time.time() * 1000)


def _drain(manager: LogManager) -> None:
    """Wait for the manager's thread: everything asked of it so far is done."""
    manager._flusher.submit(lambda: None).result(600)


def _timed(work: Callable[[], None], manager: LogManager) -> tuple[float, float]:
    start = time.perf_counter()
    work()
    caller = time.perf_counter() - start
    _drain(manager)
    return caller, time.perf_counter() - start


def one_round(partitions: int, work_dir: Path) -> dict[str, float]:
    config = LogConfig()
    manager = LogManager(
        [work_dir / "data"], clock=_now_ms, default_config=config, max_open_files=256
    )
    manager.startup()
    record = build_batch([(None, b"x" * 100, ())], timestamp_ms=_now_ms())
    logs = [manager.get_or_create("t", p, topic_id=None, config=config) for p in range(partitions)]
    for log in logs:
        log.append_as_leader(record, leader_epoch=0)
    _drain(manager)

    def new_epoch() -> None:
        for log in logs:
            log.epochs.assign(1, log.log_end_offset)

    def delete() -> None:
        for p in range(partitions):
            manager.delete("t", p)

    epoch_caller, epoch_total = _timed(new_epoch, manager)
    delete_caller, delete_total = _timed(delete, manager)
    manager.shutdown()
    return {
        "new_epoch_caller_ms": epoch_caller * 1000,
        "new_epoch_on_disk_ms": epoch_total * 1000,
        "delete_caller_ms": delete_caller * 1000,
        "delete_on_disk_ms": delete_total * 1000,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rounds = []
    for i in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="failover-") as work:
            rounds.append(one_round(args.partitions, Path(work)))
        print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)
    medians = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    if args.json:
        print(json.dumps({"partitions": args.partitions, "median": medians, "rounds": rounds}))
        return 0
    print(f"{args.partitions} partitions, median of {args.rounds} rounds (ms)")
    print(f"{'':18}{'calling thread':>16}{'until on disk':>16}")
    for name, key in (("new leader epoch", "new_epoch"), ("delete", "delete")):
        caller, total = medians[f"{key}_caller_ms"], medians[f"{key}_on_disk_ms"]
        print(f"{name:18}{caller:16,.0f}{total:16,.0f}")
    return 0


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
