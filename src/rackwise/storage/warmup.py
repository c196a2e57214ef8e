"""Compile the record walk once, at install time (``python -m rackwise.storage.warmup``), so
that no broker pays for it; the compiled code is cached on disk."""

from __future__ import annotations

from rackwise.storage.records_kernel import scan_records


def main() -> None:
    scan_records()
    print("compiled the record walk kernel")


if __name__ == "__main__":
    main()
