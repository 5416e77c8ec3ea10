"""One writer per results store: a lock file beside the store, naming its holder.

The lock is ``<store>.lock``, held with ``flock`` (an exclusive lock of the open file, kept by the
kernel for as long as the holding process lives) and holding the holder's host, PID and the time it
was taken, so that a refused driver can say who has the store. It is released (and the file
removed) when the holder ends; a driver killed outright (SIGKILL, a lost node) loses its ``flock``
with its process, so the file it leaves behind is not a lock and the next driver takes it over.

On a shared file system (a cluster's home or scratch) ``flock`` is carried out by the file
system's lock manager across the nodes that mount it (NFS: as byte-range locks, since Linux 2.6.12;
Lustre with ``-o flock``; GPFS, BeeGFS). A file system mounted without locking makes every
``flock`` succeed: two drivers on one store are then not refused, and a store should not be shared
between drivers on such a mount.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import time
from pathlib import Path

from .errors import UsageError

__all__ = ["StoreLock", "StoreLockedError", "lock_path"]

log = logging.getLogger(__name__)


class StoreLockedError(UsageError):
    """Another driver holds the store."""


def lock_path(store: Path) -> Path:
    """The lock file of a store: ``<store>.lock`` beside it."""
    store = Path(store)
    return store.with_name(store.name + ".lock")


class StoreLock:
    """Exclusive lock of one store (a context manager)."""

    def __init__(self, store: Path):
        self.store = Path(store)
        self.path = lock_path(self.store)
        self.held = False
        self._made: list[Path] = []  # folders made for the lock, removed again if left empty
        self._fd = -1
        self._token = {"host": socket.gethostname(), "pid": os.getpid(),
                       "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")}

    def _describe(self, holder: dict) -> str:
        return (f"the driver on host {holder.get('host', '?')} with PID {holder.get('pid', '?')} "
                f"(since {holder.get('since', '?')})")

    def _read(self) -> dict:
        try:
            return json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return {}  # being written, or gone: the holder is unknown

    def acquire(self) -> StoreLock:
        """Take the lock, or raise :class:`StoreLockedError` naming the holder."""
        missing = [p for p in [self.path.parent, *self.path.parent.parents] if not p.exists()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._made = missing
        for _ in range(10):
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                holder = self._read()
                raise StoreLockedError(
                    f"the store {self.store} is in use by {self._describe(holder)}; wait for it "
                    "to finish, or stop it") from None
            try:
                same_file = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same_file = False
            if not same_file:  # released and removed by its holder meanwhile: open it afresh
                os.close(fd)
                continue
            previous = self._read()
            if previous.get("pid") is not None:
                log.warning("taking over %s, left by %s, which ended without releasing it",
                            self.path, self._describe(previous))
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(self._token).encode())
            self._fd = fd
            self.held = True
            return self
        raise StoreLockedError(f"could not take the lock {self.path}; try again")

    def release(self) -> None:
        """Remove the lock file and release the lock (in that order: a driver that opened the
        removed file finds it is no longer the lock file)."""
        if not self.held:
            return
        self.held = False
        self.path.unlink(missing_ok=True)
        os.close(self._fd)  # releases the flock
        for folder in self._made:  # innermost first
            try:
                folder.rmdir()
            except OSError:
                break  # not empty (the store was created there), or not ours to remove

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
