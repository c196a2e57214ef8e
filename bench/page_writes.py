"""What a write into the page cache costs on this machine: into pages the kernel has to find,
and into pages a file just gave back.

Every byte a broker stores is copied into the page cache once (``pwrite``), and at RF 3 each
record is stored three times, so the cost of that copy bounds the data path and the
benchmark's ceiling alike. On a virtual machine it is not one figure: a page the guest has not
touched lately can cost the host a fault as well, so writing to fresh pages may cost several
times what rewriting recently freed ones does. This measures both, in this process, with the
kernel's own accounting of system time:

  fresh     ``--files`` files of ``--mib`` MiB each, written one after another and kept until
            the end (every write needs pages the file system has not just given back)
  reused    the same amount written again, each file deleted before the next is written (the
            next one's pages are the ones just freed)

    .venv/bin/python bench/page_writes.py [--mib 1024] [--files 3] [--chunk-kib 1024] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _write(path: Path, size: int, chunk: bytes) -> tuple[float, float]:
    """Write ``size`` bytes to a new file; (seconds of wall time, seconds of system time)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_stime
    started = time.monotonic()
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    try:
        position = 0
        while position < size:
            position += os.pwrite(fd, chunk, position)
    finally:
        os.close(fd)
    return time.monotonic() - started, resource.getrusage(resource.RUSAGE_SELF).ru_stime - before


def _figures(runs: list[tuple[float, float]], size: int) -> dict[str, float]:
    gib = size * len(runs) / 2**30
    return {
        "gib": round(gib, 2),
        "mb_per_s": round(size * len(runs) / sum(w for w, _ in runs) / 1e6, 1),
        "system_s_per_gib": round(sum(s for _, s in runs) / gib, 3),
    }


def measure(directory: Path, mib: int, files: int, chunk_kib: int) -> dict[str, Any]:
    size = mib * 2**20
    chunk = os.urandom(chunk_kib * 1024)
    kept = [directory / f"fresh-{i}" for i in range(files)]
    fresh = [_write(path, size, chunk) for path in kept]
    for path in kept:
        path.unlink()
    reused = []
    for i in range(files):
        path = directory / f"reused-{i}"
        reused.append(_write(path, size, chunk))
        path.unlink()
    out = {"fresh": _figures(fresh, size), "reused": _figures(reused, size)}
    out["fresh_over_reused"] = round(
        out["fresh"]["system_s_per_gib"] / max(out["reused"]["system_s_per_gib"], 1e-6), 1
    )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=1024, help="size of each file (MiB)")
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--chunk-kib", type=int, default=1024, help="bytes per pwrite (KiB)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (a temporary one)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    for name in ("mib", "files", "chunk_kib"):
        value = getattr(args, name)
        if value < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, not {value}")
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="page-writes-") as work:
        out = measure(Path(work), args.mib, args.files, args.chunk_kib)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{'pages':<8}{'GiB':>6}{'MB/s':>10}{'system s per GiB':>19}")
    for kind in ("fresh", "reused"):
        row = out[kind]
        print(f"{kind:<8}{row['gib']:>6}{row['mb_per_s']:>10,.1f}{row['system_s_per_gib']:>19}")
    print(f"fresh pages cost {out['fresh_over_reused']}x the system time of reused ones")
    return 0


if __name__ == "__main__":
    from _signals import stopping

    raise SystemExit(stopping(main))
