"""``--out DIR``: an output directory one run owns, written beside the old one and swapped in.

Goals
    ``DIR`` holds exactly one run's outputs, never a mix of two: a file an earlier run wrote
    (a cluster's ``reassignment.json`` that this run has no reason to write) must not survive
    to look current. A run that fails or is interrupted leaves ``DIR`` as it was. A directory
    that is not a rackwise output is never written into or deleted.
Constraints
    ``DIR`` may be missing, empty, a previous rackwise output, or anything else. The outputs
    are many files written over seconds or minutes (by Spark's executors too), so they cannot
    be written in place atomically; a rename within one file system can.
Algorithm
    1. :func:`check_output_dir`: ``DIR`` is missing, an empty directory, or a rackwise output:
       it holds :data:`MARKER_FILE`, which every run writes, or (written before the marker
       existed) only the names a pipeline run writes (``summary.json``, ``audit/``,
       ``rejected/``, ..., cluster directories holding only ``reassignment.json``). Anything
       else is refused with one line naming it, before any work.
    2. The run writes into a new directory beside ``DIR`` (``.<name>.rackwise-new-<token>``,
       same parent, so same file system), then writes :data:`MARKER_FILE` into it last.
    3. Swap: where the system can, ``DIR`` and the new directory are exchanged in one step
       (Linux ``renameat2(RENAME_EXCHANGE)``); else ``DIR`` is renamed away
       (``.<name>.rackwise-old-<token>``) and the new directory renamed to ``DIR``. The old
       output is then deleted.
    4. On any error or interrupt before the swap the new directory is deleted.
Crash points
    ``written`` (new directory complete, not swapped): ``DIR`` is the old output; the next run
    deletes the leftover. ``exchanged`` (``DIR`` is the new output; the old one, beside it,
    not yet deleted): the next run deletes the leftover. ``moved_away`` (no exchange: the old
    output renamed away, the new one not yet renamed in): ``DIR`` is missing, the old output
    is beside it; the next run deletes it and writes ``DIR`` afresh. In no case does ``DIR``
    hold files of two runs. A leftover is known by its name, ``<token>`` being the writer's
    process id and a random part: one whose process is still running is left alone.
Worked example
    ``rackwise pipeline plan --out /tmp/p`` planned clusters ``a`` and ``b`` yesterday (so
    ``/tmp/p/a/reassignment.json`` and ``/tmp/p/b/reassignment.json``); today ``b`` needs no
    change. The run writes ``/tmp/.p.rackwise-new-4242-1a2b3c4d/`` with
    ``a/reassignment.json`` only, exchanges it with ``/tmp/p``, and deletes the old one:
    ``b``'s file is gone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import json
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from rackwise.common import InvalidRequestException

MARKER_FILE: Final = "rackwise-output.json"
"""Written last into every output directory: ``{"written_by": "rackwise pipeline",
"command": ..., "engine": ..., ...}``."""
WRITTEN_BY: Final = "rackwise pipeline"
NEW_TAG: Final = "rackwise-new"
OLD_TAG: Final = "rackwise-old"
LEGACY_FILES: Final = frozenset(
    {
        "summary.json",
        "plan_summary.json",
        "report.html",
        "rejected.jsonl",
        "audit",
        "plan",
        "rejected",
    }
)
"""The names a pipeline run wrote at the top of its output before :data:`MARKER_FILE`."""
_REASSIGNMENT: Final = "reassignment.json"
_AT_FDCWD: Final = -100
_RENAME_EXCHANGE: Final = 2

CrashHook = Callable[[str], None]
"""Called with each crash point's name as the swap passes it (tests raise there)."""


class OutputDirectoryException(InvalidRequestException):
    """``--out`` names a directory this run may not write: not empty and not a rackwise
    output, or not a directory."""


def is_rackwise_output(path: Path) -> bool:
    """Whether ``path`` (an existing directory) is a pipeline run's output (see the module
    notes, step 1)."""
    marker = path / MARKER_FILE
    if marker.is_file():
        try:
            content = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(content, dict) and content.get("written_by") == WRITTEN_BY
    entries = list(path.iterdir())
    known = [e for e in entries if e.name in LEGACY_FILES]
    clusters = [
        e for e in entries if e.is_dir() and [c.name for c in e.iterdir()] == [_REASSIGNMENT]
    ]
    has_summary = any(e.name in ("summary.json", "rejected.jsonl") for e in known)
    return has_summary and len(known) + len(clusters) == len(entries)


def check_output_dir(path: Path) -> None:
    """Refuse an ``--out`` this run may not replace (see the module notes, step 1)."""
    if not path.exists():
        if not path.parent.is_dir():
            raise OutputDirectoryException(
                f"--out {path}: its parent directory {path.parent} does not exist"
            )
        return
    if not path.is_dir():
        raise OutputDirectoryException(f"--out {path}: not a directory")
    if any(path.iterdir()) and not is_rackwise_output(path):
        raise OutputDirectoryException(
            f"--out {path}: the directory is not empty and is not a rackwise output (no "
            f"{MARKER_FILE}); give a new or empty directory"
        )


def _leftovers(path: Path) -> list[Path]:
    """Directories a run that died left beside ``path`` (not those of a run still going: the
    writer's process id is in the name)."""
    prefixes = (f".{path.name}.{NEW_TAG}-", f".{path.name}.{OLD_TAG}-")
    found = [p for p in path.parent.iterdir() if p.name.startswith(prefixes) and p.is_dir()]
    return [p for p in found if not _is_running(p.name.rsplit("-", 2)[-2])]


def _is_running(pid_text: str) -> bool:
    """Whether the process ``pid_text`` names is alive (and not this one)."""
    if not pid_text.isdigit() or int(pid_text) == os.getpid():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class NewOutput:
    """The directory a run writes into (``path``), and what its marker will say besides the
    command (``notes``)."""

    path: Path
    notes: dict[str, Any] = field(default_factory=dict)


@contextmanager
def owned_output(out: Path, command: str, *, crash: CrashHook | None = None) -> Iterator[NewOutput]:
    """Yield a new directory beside ``out`` to write into; when the block ends normally, swap
    it in as ``out`` (the previous output deleted); when it raises (an interrupt too), delete
    it and leave ``out`` as it was."""
    out = Path(os.path.realpath(out))
    check_output_dir(out)
    for leftover in _leftovers(out):
        shutil.rmtree(leftover, ignore_errors=True)
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    new = NewOutput(out.parent / f".{out.name}.{NEW_TAG}-{token}")
    new.path.mkdir()
    try:
        yield new
        marker = {"written_by": WRITTEN_BY, "command": command, **new.notes}
        (new.path / MARKER_FILE).write_text(json.dumps(marker, sort_keys=True) + "\n")
        _hook(crash, "written")
        check_output_dir(out)
        _swap(new.path, out, out.parent / f".{out.name}.{OLD_TAG}-{token}", crash)
    except BaseException:
        shutil.rmtree(new.path, ignore_errors=True)
        raise


def _hook(crash: CrashHook | None, point: str) -> None:
    if crash is not None:
        crash(point)


def _swap(new: Path, out: Path, old: Path, crash: CrashHook | None) -> None:
    """Put ``new`` in place of ``out``; delete what ``out`` was."""
    if not out.exists():
        new.rename(out)
        return
    if _exchange(new, out):
        _hook(crash, "exchanged")
        shutil.rmtree(new, ignore_errors=True)
        return
    out.rename(old)
    _hook(crash, "moved_away")
    new.rename(out)
    shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Exchange two paths in one step (Linux ``renameat2``); False where the system cannot."""
    libc_name = ctypes.util.find_library("c")
    if libc_name is None:
        return False
    libc = ctypes.CDLL(libc_name, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(
        _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), ctypes.c_uint(_RENAME_EXCHANGE)
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(b))
