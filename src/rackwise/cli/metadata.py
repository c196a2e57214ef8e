"""``rackwise metadata dump``: the metadata log's records and the image they make, as Kafka's
``kafka-dump-log --cluster-metadata-decoder`` and ``kafka-metadata-shell`` show them.

The log is opened read-only (no lock, nothing repaired), so a running controller's log can be
dumped; damage found is reported on stderr and left out. JSON is the default; ``table`` is for
a person at a terminal; ``parquet`` writes the tables the fleet pipeline reads (schemas in
:mod:`rackwise.metalog.export`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from rackwise.cli._table import render
from rackwise.cli.errors import CommandError

if TYPE_CHECKING:  # the metadata log loads the records' codecs: imported when the command runs
    from rackwise.metalog import LoadedImage, MetadataLog


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", parser_class=type(parser))
    actions.required = True
    dump = actions.add_parser(
        "dump",
        help="print or export the records and the image",
        description="Print or export a metadata log's records and the image they make.",
    )
    dump.add_argument("--dir", required=True, metavar="DIR", help="the log (metadata.log.dir)")
    dump.add_argument(
        "--format",
        choices=["json", "table", "parquet"],
        default="json",
        help="json (default), table, or parquet (needs --out)",
    )
    dump.add_argument(
        "--out", metavar="PATH", help="a file for json or table, a directory for parquet"
    )
    dump.add_argument(
        "--section",
        choices=["all", "records", "image"],
        default="all",
        help="what to print: records, the image, or both (default)",
    )
    dump.set_defaults(run=run_dump)


def run_dump(args: argparse.Namespace) -> int:
    from rackwise.metalog import FileMetadataLog, load_image  # noqa: PLC0415
    from rackwise.metalog.export import write_parquet  # noqa: PLC0415

    if args.format == "parquet" and args.out is None:
        raise CommandError("--format parquet writes a directory of tables: give it --out PATH")
    check_log_directory(Path(args.dir))
    with FileMetadataLog(args.dir, read_only=True) as log:
        for event in log.recovery_events:
            print(f"warning: {event}", file=sys.stderr)
        loaded = load_image(log)
        if args.format == "parquet":
            counts = write_parquet(log, loaded.image, Path(args.out))
            summary = ", ".join(f"{n} {name}" for name, n in counts.items())
            print(f"wrote {summary} under {args.out}")
            return 0
        if args.out is None:
            _write(sys.stdout, args, log, loaded)
        else:
            with open(args.out, "w", encoding="utf-8") as out:
                _write(out, args, log, loaded)
    return 0


def check_log_directory(directory: Path) -> None:
    """Refuse a directory that holds no metadata log (no segment, no snapshot), such as a
    cluster's or a node's directory instead of its ``metadata/``, naming the logs below it."""
    from rackwise.metalog.segment import segment_name  # noqa: PLC0415
    from rackwise.metalog.snapshots import SNAPSHOT_SUFFIX  # noqa: PLC0415

    if not directory.is_dir() or _holds_log(directory):
        return  # opening the log says that a missing directory does not exist
    below = sorted(
        str(d)
        for d in [directory / "metadata", *directory.glob("*/metadata")]
        if d.is_dir() and _holds_log(d)
    )
    hint = f"; the logs below it: {', '.join(below)}" if below else ""
    raise CommandError(
        f"--dir {directory}: no metadata log is there (no {segment_name(0)} segment or "
        f"{SNAPSHOT_SUFFIX} snapshot){hint}"
    )


def _holds_log(directory: Path) -> bool:
    from rackwise.metalog.segment import parse_segment_name  # noqa: PLC0415
    from rackwise.metalog.snapshots import parse_snapshot_name  # noqa: PLC0415

    return any(
        parse_segment_name(p.name) is not None or parse_snapshot_name(p.name) is not None
        for p in directory.iterdir()
    )


def _write(out: TextIO, args: argparse.Namespace, log: MetadataLog, loaded: LoadedImage) -> None:
    if args.format == "json":
        _write_json(out, args.section, log, loaded)
    else:
        _write_tables(out, args.section, log, loaded)


def _summary(log: MetadataLog, loaded: LoadedImage) -> dict[str, Any]:
    snapshot = loaded.snapshot_id
    return {
        "directory": str(getattr(log, "directory", "")),
        "start_offset": log.start_offset,
        "end_offset": log.end_offset,
        "latest_epoch": log.latest_epoch,
        "snapshot": None
        if snapshot is None
        else {
            "end_offset": snapshot.end_offset,
            "epoch": snapshot.epoch,
            "records": loaded.num_snapshot_records,
        },
        "events": [str(e) for e in log.recovery_events],
    }


def _write_json(out: TextIO, section: str, log: MetadataLog, loaded: LoadedImage) -> None:
    """One JSON document, written as it is produced (a million records need not be held)."""
    from rackwise.image.tables import image_tables  # noqa: PLC0415
    from rackwise.metalog.export import record_rows  # noqa: PLC0415

    out.write('{\n  "log": ' + json.dumps(_summary(log, loaded)))
    if section in ("all", "records"):
        out.write(',\n  "records": ')
        _write_array(out, record_rows(log), "  ")
    if section in ("all", "image"):
        out.write(',\n  "image": {\n    "features": ')
        out.write(json.dumps(dict(sorted(loaded.image.features.items()))))
        for name, rows in image_tables(loaded.image).items():
            out.write(f',\n    "{name}": ')
            _write_array(out, rows, "    ")
        out.write("\n  }")
    out.write("\n}\n")


def _write_array(out: TextIO, rows: Iterable[Any], indent: str) -> None:
    out.write("[")
    separator = "\n"
    for row in rows:
        out.write(separator + indent + "  " + json.dumps(row))
        separator = ",\n"
    out.write("\n" + indent + "]" if separator != "\n" else "]")


def _write_tables(out: TextIO, section: str, log: MetadataLog, loaded: LoadedImage) -> None:
    from rackwise.image.tables import image_tables  # noqa: PLC0415
    from rackwise.metalog.export import record_rows  # noqa: PLC0415

    summary = _summary(log, loaded)
    snapshot = summary["snapshot"]
    out.write(
        f"log {summary['directory']}: offsets {summary['start_offset']} to "
        f"{summary['end_offset']}, epoch {summary['latest_epoch']}, "
        + (
            f"snapshot at offset {snapshot['end_offset']} (epoch {snapshot['epoch']}, "
            f"{snapshot['records']} records)\n"
            if snapshot
            else "no snapshot\n"
        )
    )
    if section in ("all", "records"):
        rows = [
            (
                "snapshot" if r["offset"] is None else r["offset"],
                r["epoch"],
                r["type"],
                r["version"],
                json.dumps(r["data"]),
            )
            for r in record_rows(log)
        ]
        out.write("\n" + render(["offset", "epoch", "type", "version", "record"], rows) + "\n")
    if section in ("all", "image"):
        tables = image_tables(loaded.image)
        views = {
            "brokers": ["broker_id", "rack", "broker_epoch", "fenced", "listeners", "log_dirs"],
            "topics": ["topic", "topic_id", "partitions", "replication_factor"],
            "partitions": ["topic", "partition", "leader", "replicas", "isr", "leader_epoch"],
            "configs": ["resource_type", "resource_name", "name", "value"],
        }
        for name, columns in views.items():
            rows = [tuple(_cell(row[c]) for c in columns) for row in tables[name]]
            out.write("\n" + render(columns, rows) + "\n")


def _cell(value: Any) -> Any:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return value
