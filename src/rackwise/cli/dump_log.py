"""``rackwise dump-log --files F1,F2``: a broker's segment files and indexes printed as
``kafka-dump-log.sh`` (Kafka's ``DumpLogSegments``) prints them: ``Dumping F`` then, for a
``.log``, its batches (records too with ``--deep-iteration``, keys and values too with
``--print-data-log``, which implies it; ``--skip-record-metadata`` prints the keys and values
alone, ``--max-bytes`` only the batches within a file's first bytes), for an ``.index`` its
offsets and positions, for a ``.timeindex`` its timestamps and offsets (each entry checked
against the segment; ``--verify-index-only`` prints the checks alone,
``--index-sanity-check`` makes the broker's start-up check), for a ``.snapshot`` its
producers, for a ``.txnindex`` its aborted transactions. The decoders print the records as
Kafka's do: ``--cluster-metadata-decoder`` the metadata log's records as JSON,
``--offsets-decoder`` the ``__consumer_offsets`` keys and values as JSON. rackwise keeps no
transaction log, so ``--transaction-log-decoder`` is refused, naming why. The lines are
:mod:`rackwise.client.dump_log`'s and :mod:`rackwise.client.dump_files`'; what the checks
find is printed on stderr after every file, as Kafka prints it.

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
from typing import Any, Final

from rackwise.cli.errors import CommandError

INT_MAX: Final = 2**31 - 1
DECODERS: Final = ("offsets_decoder", "transaction_log_decoder", "cluster_metadata_decoder")


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
    add("--skip-record-metadata", action="store_true", help="print records' keys and values only")
    add("--verify-index-only", action="store_true", help="check the indexes, print no entry")
    add(
        "--index-sanity-check",
        action="store_true",
        help="make the broker's start-up check of the indexes only",
    )
    add(
        "--max-message-size",
        default=str(5 * 1024 * 1024),
        metavar="SIZE",
        help="size of the largest batch (default 5242880)",
    )
    add(
        "--max-bytes",
        default=str(INT_MAX),
        metavar="SIZE",
        help="read only the batches within a .log file's first SIZE bytes",
    )
    add(
        "--offsets-decoder",
        action="store_true",
        help="decode the records as __consumer_offsets keys and values",
    )
    add(
        "--transaction-log-decoder",
        action="store_true",
        help="decode the records as __transaction_state records",
    )
    add(
        "--cluster-metadata-decoder",
        action="store_true",
        help="decode the records as cluster metadata records (implies --print-data-log)",
    )
    parser.set_defaults(run=run)  # fmt: skip


def _size(flag: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CommandError(f"Cannot parse argument '{text}' of option {flag}") from None


def _parser(args: argparse.Namespace) -> Any:
    from rackwise.client import dump_log  # noqa: PLC0415

    if args.transaction_log_decoder:
        raise CommandError(
            "--transaction-log-decoder: rackwise keeps no transaction log (its brokers run no "
            "transaction coordinator, so there is no __transaction_state topic to decode)"
        )
    if args.offsets_decoder:
        from rackwise.client.dump_offsets import offsets_key_value  # noqa: PLC0415

        return lambda record: offsets_key_value(record.offset, record.key, record.value)
    if args.cluster_metadata_decoder:
        return dump_log.metadata_parser
    return dump_log.text_parser


def run(args: argparse.Namespace) -> int:
    from rackwise.client import dump_files  # noqa: PLC0415

    if not args.files:
        raise CommandError('Missing required argument "[files]"')
    max_bytes = _size("max-bytes", args.max_bytes)
    max_message_size = _size("max-message-size", args.max_message_size)
    parse = _parser(args)
    problems = dump_files.IndexProblems()
    gaps: dict[str, list[tuple[int, int]]] = {}
    try:
        for name in args.files.split(","):
            print(f"Dumping {name}")
            _dump(Path(name), args, parse, problems, gaps, max_bytes, max_message_size)
    except (dump_files.DumpError, OSError) as e:
        message = f"{e.filename}: {e.strerror}" if isinstance(e, OSError) else str(e)
        raise CommandError(message) from None
    finally:
        sys.stdout.flush()
        problems.report(_err)
        for name, pairs in gaps.items():
            _err(f"Non-consecutive offsets in {name}")
            for first, second in reversed(pairs):
                _err(f"  {first} is followed by {second}")
    return 0


def _dump(
    path: Path,
    args: argparse.Namespace,
    parse: Any,
    problems: Any,
    gaps: dict[str, list[tuple[int, int]]],
    max_bytes: int,
    max_message_size: int,
) -> None:
    from rackwise.client import dump_files, dump_log  # noqa: PLC0415

    print_data = args.print_data_log or any(getattr(args, d) for d in DECODERS)
    checks = {"sanity_only": args.index_sanity_check, "verify_only": args.verify_index_only}
    suffix = path.suffix
    if suffix == ".log":
        dump_log.dump_segment(
            path, print, deep=args.deep_iteration or print_data, print_data=print_data,
            parse=parse, skip_metadata=args.skip_record_metadata, max_bytes=max_bytes, gaps=gaps,
        )  # fmt: skip
    elif suffix == ".index":
        dump_files.dump_offset_index(
            path, print, problems, max_message_size=max_message_size, **checks
        )
    elif suffix == ".timeindex":
        dump_files.dump_time_index(path, print, problems, **checks)
    elif suffix == ".snapshot":
        dump_files.dump_producer_snapshot(path, print, _err)
    elif suffix == ".txnindex":
        dump_files.dump_txn_index(path, print)
    else:
        _err(f"Ignoring unknown file {path}")


def _err(text: str) -> None:
    print(text, file=sys.stderr)
