"""``rackwise dump-log --files F1,F2``: a broker's segment files and indexes printed as
``kafka-dump-log.sh`` (Kafka's ``DumpLogSegments``) prints them: ``Dumping F`` then, for a
``.log``, its batches (records too with ``--deep-iteration``, keys and values too with
``--print-data-log``, which implies it), for an ``.index`` its offsets and positions, for a
``.timeindex`` its timestamps and offsets. The metadata log's segments are Kafka v2 batches as
well: with ``--cluster-metadata-decoder`` their records' values print as the metadata records'
JSON, as Kafka's decoder prints them. The lines are :mod:`rackwise.client.dump_log`'s.

Worked example
    ``rackwise dump-log --files data/1/orders-0/00000000000000000000.log --print-data-log``
    prints ``Dumping ...``, ``Log starting offset: 0``, then for each batch ``baseOffset: 0
    lastOffset: 9 count: 10 ...`` and its records ``| offset: 0 CreateTime: ... key: k0
    payload: v0``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rackwise.cli.errors import CommandError


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--files",
        metavar="FILES",
        help="REQUIRED: the comma-separated data and index log files to dump",
    )
    add(
        "--print-data-log",
        action="store_true",
        help="print the records' keys and values (implies --deep-iteration)",
    )
    add("--deep-iteration", action="store_true", help="print each record, not only batches")
    add(
        "--cluster-metadata-decoder",
        action="store_true",
        help="decode the records as cluster metadata records (implies --print-data-log)",
    )
    parser.set_defaults(run=run)  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from rackwise.client import dump_log  # noqa: PLC0415

    if not args.files:
        raise CommandError('Missing required argument "[files]"')
    print_data = args.print_data_log or args.cluster_metadata_decoder
    for name in args.files.split(","):
        path = Path(name)
        print(f"Dumping {name}")
        deep = args.deep_iteration or print_data
        if path.suffix == ".log":
            decode = dump_log.metadata_payload if args.cluster_metadata_decoder else None
            dump_log.dump_segment(path, print, deep=deep, print_data=print_data, decode=decode)
        elif path.suffix == ".index":
            dump_log.dump_offset_index(path, print)
        elif path.suffix == ".timeindex":
            dump_log.dump_time_index(path, print)
        else:
            print(f"Ignoring unknown file {name}", file=sys.stderr)
    return 0
