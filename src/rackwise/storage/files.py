"""A bounded cache of open files, shared by every log of a broker.

Goals
    A broker with 10,000 partitions (three files or more each) starts, serves and stops within
    a file-descriptor limit of 1024: files are opened when first used and at most
    ``max_open_files`` stay open; the least recently used is closed to make room.

Constraints
    Callers never hold a file object: they pass a path and an offset (``pread``/``pwrite``),
    so an evicted file reopens transparently and no file position is shared between threads.
    A file in use (leased) is never closed under its user; the bound may be exceeded by the
    leases in flight, never by idle files. Files are opened with ``O_CLOEXEC``.

Algorithm
    An ``OrderedDict`` from path to descriptor in use order, under one lock. :meth:`lease`
    moves the path to the recent end (opening it if needed) and counts the lease; opening
    past the bound closes idle descriptors from the old end. :meth:`forget` closes one path
    (before a file is deleted or renamed), :meth:`forget_under` every path below a directory.

Worked example
    With ``max_open_files=2``, reading a.log, b.log then c.log closes a.log's descriptor;
    reading a.log again reopens it and closes b.log's. The open count never exceeds 2.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

DEFAULT_MAX_OPEN_FILES: Final = 256


class RegionUnavailable(OSError):
    """A file region's bytes are gone: the file was removed or cut short before it was sent."""


class FileRegion:
    """``size`` bytes of a file from ``position``, to be sent to a socket with ``sendfile``
    (zero copy) or read when that cannot be done; ``len()`` is its size, so a writer of
    buffers can count it as one. The file is reached through the broker's :class:`FileCache`
    by path when the region is sent, so holding one holds no descriptor."""

    __slots__ = ("files", "path", "position", "size")

    def __init__(self, files: FileCache, path: Path, position: int, size: int) -> None:
        self.files, self.path, self.position, self.size = files, path, position, size

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"FileRegion({str(self.path)!r}, position={self.position}, size={self.size})"

    def __bytes__(self) -> bytes:
        return self.read()

    def split(self, size: int) -> tuple[FileRegion, FileRegion]:
        """The region's first ``size`` bytes and the rest, as two regions."""
        size = max(0, min(size, self.size))
        return (
            FileRegion(self.files, self.path, self.position, size),
            FileRegion(self.files, self.path, self.position + size, self.size - size),
        )

    def send(self, socket_fd: int) -> int:
        """``sendfile`` the region to the non-blocking socket ``socket_fd`` until it is all
        sent or the socket is full; how many bytes went. Any failure, of the file or of the
        socket, raises :class:`RegionUnavailable`: the response it belongs to cannot be
        completed, so its connection must close."""
        try:
            return self.files.sendfile(self.path, socket_fd, self.position, self.size)
        except RegionUnavailable:
            raise
        except OSError as e:
            raise RegionUnavailable(f"{self!r} cannot be sent: {e}") from e

    def read(self) -> bytes:
        """The region's bytes (a copy, for a socket that is not ready)."""
        try:
            data = self.files.read(self.path, self.position, self.size)
        except OSError as e:
            raise RegionUnavailable(f"{self!r} cannot be read: {e}") from e
        if len(data) < self.size:
            raise RegionUnavailable(f"{self.path} ends inside {self!r}")
        return data


class FileCache:
    """Open descriptors of at most ``max_open_files`` files (module docstring)."""

    def __init__(self, max_open_files: int = DEFAULT_MAX_OPEN_FILES) -> None:
        if max_open_files < 1:
            raise ValueError(f"max_open_files must be at least 1, not {max_open_files}")
        self.max_open_files = max_open_files
        self._fds: OrderedDict[str, int] = OrderedDict()
        self._leases: dict[str, int] = {}
        self._lock = threading.Lock()
        self.opened = 0
        """Descriptors opened so far (a measure of cache misses)."""
        self.most_open = 0
        """The largest number of descriptors open at once."""

    @property
    def num_open(self) -> int:
        return len(self._fds)

    @contextmanager
    def lease(self, path: Path, *, create: bool = False) -> Iterator[int]:
        """A descriptor of ``path`` (read-write), open for the duration of the block."""
        key, fd = self._acquire(path, create)
        try:
            yield fd
        finally:
            self._release(key)

    def _acquire(self, path: Path, create: bool = False) -> tuple[str, int]:
        """:meth:`lease` without a generator, for the reads and writes of every request: the
        key to :meth:`_release` and the descriptor."""
        key = str(path)
        with self._lock:
            fd = self._fds.get(key)
            if fd is None:
                self._evict(self.max_open_files - 1)
                flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if create else 0)
                fd = os.open(key, flags, 0o644)
                self._fds[key] = fd
                self.opened += 1
                self.most_open = max(self.most_open, len(self._fds))
            else:
                self._fds.move_to_end(key)
            self._leases[key] = self._leases.get(key, 0) + 1
        return key, fd

    def _release(self, key: str) -> None:
        with self._lock:
            left = self._leases[key] - 1
            if left:
                self._leases[key] = left
            else:
                del self._leases[key]
                self._evict(self.max_open_files)

    def _evict(self, keep: int) -> None:
        """Close idle descriptors, oldest first, until at most ``keep`` stay open."""
        while len(self._fds) > keep:
            victim = next((k for k in self._fds if k not in self._leases), None)
            if victim is None:
                return  # every open file is in use: the bound waits for a lease to end
            os.close(self._fds.pop(victim))

    def create(self, path: Path) -> None:
        """Create ``path`` empty (truncating what was there)."""
        self.forget(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        os.close(fd)

    def read(self, path: Path, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position`` (fewer only at the end of the file)."""
        key, fd = self._acquire(path)
        try:
            chunks = []
            while size > 0:
                chunk = os.pread(fd, size, position)
                if not chunk:
                    break
                chunks.append(chunk)
                position += len(chunk)
                size -= len(chunk)
        finally:
            self._release(key)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def write(
        self,
        path: Path,
        position: int,
        data: bytes | bytearray | memoryview,
        *,
        create: bool = False,
    ) -> None:
        """Write all of ``data`` at ``position`` (creating the file if ``create``)."""
        view = memoryview(data)
        key, fd = self._acquire(path, create)
        try:
            while view:
                written = os.pwrite(fd, view, position)
                view = view[written:]
                position += written
        finally:
            self._release(key)

    def sendfile(self, path: Path, socket_fd: int, position: int, size: int) -> int:
        """``sendfile`` ``size`` bytes of ``path`` from ``position`` to the non-blocking socket
        ``socket_fd`` until all are sent or the socket is full; how many bytes went."""
        done = 0
        key, fd = self._acquire(path)
        try:
            while done < size:
                try:
                    sent = os.sendfile(socket_fd, fd, position + done, size - done)
                except (BlockingIOError, InterruptedError):
                    break
                if sent == 0:
                    raise RegionUnavailable(f"{path} ends before byte {position + size}")
                done += sent
        finally:
            self._release(key)
        return done

    def truncate(self, path: Path, size: int) -> None:
        with self.lease(path) as fd:
            os.ftruncate(fd, size)

    def fsync(self, path: Path) -> None:
        with self.lease(path) as fd:
            os.fsync(fd)

    def size(self, path: Path) -> int:
        with self.lease(path) as fd:
            return os.fstat(fd).st_size

    def forget(self, path: Path) -> None:
        """Close ``path``'s descriptor if it is open (before the file is deleted or renamed)."""
        key = str(path)
        with self._lock:
            fd = self._fds.pop(key, None)
            if fd is not None:
                os.close(fd)

    def forget_under(self, directory: Path) -> None:
        """Close every descriptor of a file in ``directory``."""
        prefix = str(directory) + os.sep
        with self._lock:
            for key in [k for k in self._fds if k.startswith(prefix)]:
                os.close(self._fds.pop(key))

    def close_all(self) -> None:
        with self._lock:
            while self._fds:
                os.close(self._fds.popitem()[1])
