"""One writer per results store: lock files naming their holder, held with ``flock``.

``<store>.lock`` beside the store guards its creation; ``<store>/.lock`` inside it is taken as soon
as the store exists (:meth:`StoreLock.hold_store`), so deleting the file beside a running store
frees nothing. Both hold the holder's host, PID, start time and the store's resolved path, so a
refused driver can say who has the store, and a lock file that came with a copy of the store
(``cp -r`` while its driver ran) is told from one its driver left behind; both are found from the
store's resolved path. A driver checks before each write that
the file inside is still the one it locked (:meth:`StoreLock.check_held`). A driver killed outright
loses its ``flock`` with its process, so the next driver takes its files over. On a shared file
system ``flock`` works through its lock manager (NFS, Lustre with ``-o flock``, GPFS, BeeGFS); a
mount without locking lets every ``flock`` succeed, and two drivers on one store are not refused.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import time
from pathlib import Path

from .errors import StoreAccessError, UsageError

__all__ = ["INNER_LOCK", "StoreLock", "StoreLockedError", "lock_path", "store_driver"]

log = logging.getLogger(__name__)

#: the lock file inside a store
INNER_LOCK = ".lock"


class StoreLockedError(UsageError):
    """Another driver holds the store."""


def lock_path(store: Path) -> Path:
    """The lock file beside a store: ``<resolved store>.lock``."""
    store = Path(store).resolve()
    return store.with_name(store.name + ".lock")


class _LockFile:
    """One ``flock``-ed file holding its holder's identity."""

    def __init__(self, path: Path, token: dict):
        self.path = path
        self.token = token
        self.fd = -1

    def read(self) -> dict:
        try:
            return json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return {}  # being written, or gone: the holder is unknown

    def take(self) -> dict | None:
        """Lock the file; returns None, or the holder (a dict) if another process has it."""
        for _ in range(10):
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return self.read()
            try:
                same_file = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same_file = False
            if not same_file:  # released and removed by its holder meanwhile: open it afresh
                os.close(fd)
                continue
            _say_taken_over(self.path, self.read(), self.token)
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(self.token).encode())
            self.fd = fd
            return None
        return {}

    def is_ours(self) -> bool:
        """Whether the file at the path is still the one this process locked."""
        try:
            mine, there = os.fstat(self.fd), os.stat(self.path)
        except (FileNotFoundError, OSError):
            return False
        return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)

    def release(self) -> None:
        """Remove the file if it is still ours, then release the lock."""
        if self.fd < 0:
            return
        if self.is_ours():  # a file put there since is another driver's lock
            self.path.unlink(missing_ok=True)
        os.close(self.fd)
        self.fd = -1


def _alive_here(holder: dict) -> bool:
    """Whether the holder's process still runs on this host (another host's cannot be asked)."""
    if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
        return False
    try:
        os.kill(holder["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _say_taken_over(path: Path, previous: dict, token: dict) -> None:
    """Log why a lock file that names a holder was free to take: it was made for another path
    (the store was copied or moved), or its holder ended, or its holder runs but holds no
    ``flock`` on this file."""
    if previous.get("pid") is None:
        return
    made_for = previous.get("store")
    if made_for is not None and made_for != token["store"]:
        still = " (still running there)" if _alive_here(previous) else ""
        log.info("%s came with a copy (or move) of the store %s, locked there by %s%s; this "
                 "store is a separate one, so the lock is taken for it", path, made_for,
                 _describe(previous), still)
    elif _alive_here(previous):
        log.warning("taking over %s, left by %s, which still runs but does not hold it: the store "
                    "was copied or moved while it ran, or this file system does not support "
                    "flock (then two drivers are not kept apart)", path, _describe(previous))
    else:
        log.warning("taking over %s, left by %s, which ended without releasing it", path,
                    _describe(previous))


def _describe(holder: dict) -> str:
    return (f"the driver on host {holder.get('host', '?')} with PID {holder.get('pid', '?')} "
            f"(since {holder.get('since', '?')})")


def store_driver(store: Path) -> tuple[bool | None, str]:
    """Whether a driver runs on the store, read from its lock files without taking them or
    writing: ``(True, who)`` while the process a lock file names runs on this host, ``(None,
    who)`` for a holder on another host (which this host cannot ask), ``(False, "")`` when no
    lock file names a process that runs (a driver killed outright leaves its files behind,
    naming a process that has ended). A file that came with a copy of the store is not its."""
    store = Path(store).resolve()
    for path in (store / INNER_LOCK, lock_path(store)):
        holder = _LockFile(path, {}).read()
        if holder.get("pid") is None or holder.get("store", str(store)) != str(store):
            continue
        if holder.get("host") != socket.gethostname():
            return None, _describe(holder)
        if _alive_here(holder):
            return True, _describe(holder)
    return False, ""


class StoreLock:
    """Exclusive lock of one store (a context manager)."""

    def __init__(self, store: Path):
        self.store = Path(store).resolve()
        self.path = lock_path(self.store)
        self.held = False
        self._made: list[Path] = []  # folders made for the lock, removed again if left empty
        token = {"host": socket.gethostname(), "pid": os.getpid(),
                 "since": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "store": str(self.store)}
        self._beside = _LockFile(self.path, token)
        self._inside = _LockFile(self.store / INNER_LOCK, token)

    def _refuse(self, holder: dict):
        who = _describe(holder) if holder else "another driver"
        return StoreLockedError(f"the store {self.store} is in use by {who}; wait for it to "
                                "finish, or stop it")

    def acquire(self) -> StoreLock:
        """Take the lock, or raise :class:`StoreLockedError` naming the holder."""
        missing = [p for p in [self.path.parent, *self.path.parent.parents] if not p.exists()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            holder = self._beside.take()
        except OSError as exc:
            if not (self.store.is_dir() and exc.errno in (errno.EACCES, errno.EPERM,
                                                          errno.EROFS)):
                raise StoreAccessError(
                    f"store: cannot create the lock file {self.path} ({exc.strerror or exc}); "
                    "set store.root (or store.path) to a writable folder") from None
            holder = None  # a store in a folder this process cannot write: the inner lock only
        self._made = missing
        if holder is not None:
            raise self._refuse(holder)
        self.held = True
        try:
            self.hold_store()
        except BaseException:
            self.release()
            raise
        return self

    def hold_store(self) -> None:
        """Also lock the file inside the store, once the store exists (a no-op before)."""
        if self._inside.fd >= 0 or not self.store.is_dir():
            return
        try:
            holder = self._inside.take()
        except OSError as exc:
            raise StoreAccessError(
                f"store: cannot create the lock file {self._inside.path} ({exc.strerror or exc}); "
                "the store must be writable") from None
        if holder is not None:
            raise self._refuse(holder)

    def check_held(self) -> None:
        """Raise :class:`StoreLockedError` if the lock file inside the store is no longer the
        one this driver locked (deleted or replaced): another driver may be writing."""
        if self._inside.fd < 0 or self._inside.is_ours():
            return
        raise StoreLockedError(
            f"the lock file {self._inside.path} was deleted or replaced while this driver ran, "
            "so another driver may be writing to the store; stopped (the cells written so far "
            "are kept): rerun the same command once no other driver uses the store")

    def release(self) -> None:
        """Release both locks and remove their files."""
        if not self.held:
            return
        self.held = False
        self._inside.release()
        self._beside.release()
        for folder in self._made:  # innermost first
            try:
                folder.rmdir()
            except OSError:
                break  # not empty (the store was created there), or not ours to remove

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
