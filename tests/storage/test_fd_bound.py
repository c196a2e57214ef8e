"""Many partitions within a small file-descriptor limit: a child process lowers
RLIMIT_NOFILE, creates the partitions (three files each), appends to and reads each, shuts
down, starts up again and reads each again."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

CHILD = textwrap.dedent(
    """
    import json, os, resource, sys
    from pathlib import Path
    limit, partitions, max_open = (int(a) for a in sys.argv[1:4])
    root = Path(sys.argv[4])
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    from rackwise.storage.batch import build_batch
    from rackwise.storage.config import LogConfig
    from rackwise.storage.manager import LogManager

    def clock():
        return 1_700_000_000_000

    dirs = [root / "d1", root / "d2"]
    peak_fds = 0

    def fds():
        global peak_fds
        peak_fds = max(peak_fds, len(os.listdir("/proc/self/fd")))

    def read_each(manager):
        for p in range(partitions):
            log = manager.get("t", p)
            got = log.read(0, max_bytes=1000, max_offset=log.log_end_offset, min_one_batch=True)
            assert got.records.endswith(b"value-%d\\x00" % p), got.records
            if p % 97 == 0:
                fds()

    manager = LogManager(dirs, clock=clock, default_config=LogConfig(), max_open_files=max_open)
    manager.startup()
    for p in range(partitions):
        log = manager.get_or_create("t", p, topic_id=None, config=LogConfig())
        log.append_as_leader(
            build_batch([(b"k", b"value-%d" % p, ())], timestamp_ms=clock()), leader_epoch=0
        )
        if p % 97 == 0:
            fds()
    read_each(manager)
    most_open = manager.files.most_open
    manager.shutdown()
    manager = LogManager(dirs, clock=clock, default_config=LogConfig(), max_open_files=max_open)
    manager.startup()
    assert len(manager.logs()) == partitions
    assert all(log.log_end_offset == 1 for log in manager.logs())
    read_each(manager)
    most_open = max(most_open, manager.files.most_open)
    manager.shutdown()
    files = sum(1 for d in dirs for _ in d.glob("t-*/*.log"))
    print(json.dumps({"most_open": most_open, "peak_fds": peak_fds, "segments": files}))
    """
)


def _run(tmp_path: Path, *, limit: int, partitions: int, max_open: int) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(limit), str(partitions), str(max_open), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_few_hundred_partitions_within_128_descriptors(tmp_path: Path) -> None:
    result = _run(tmp_path, limit=128, partitions=300, max_open=64)
    assert result["segments"] == 300
    assert result["most_open"] <= 64
    assert result["peak_fds"] <= 128


@pytest.mark.slow  # 10,000 partitions, each created, fsynced and reopened: about a minute
def test_ten_thousand_partitions_within_1024_descriptors(tmp_path: Path) -> None:
    result = _run(tmp_path, limit=1024, partitions=10_000, max_open=512)
    assert result["segments"] == 10_000
    assert result["most_open"] <= 512
    assert result["peak_fds"] <= 1024
