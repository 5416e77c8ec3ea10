"""One writer per results store: a lock file beside the store, naming its holder.

The lock is ``<store>.lock``, created with ``O_CREAT | O_EXCL`` (atomic on local file systems and
on NFS v3 and later), holding the holder's host, PID, process start time and the time it was
taken. It is removed when the holder ends normally or by an exception; a driver killed outright
(SIGKILL, a lost node) leaves it behind:

- on the same host, a lock whose process is gone (or whose PID now belongs to another process:
  the start times differ) is stale and is taken over, with a warning;
- from another host, liveness cannot be checked: the lock is refused, naming the host and PID and
  saying to delete the lock file once that driver is known to be gone.

On a shared file system (a cluster's home or scratch) the lock works across the nodes that mount
it, as long as the file system honours ``O_EXCL`` (NFS v3+, Lustre, GPFS, BeeGFS do); clocks only
appear in the message, never in the decision.
"""

from __future__ import annotations

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


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux ``/proc``), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22, counted after the command name


def _alive(pid: int, started: str | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        pass
    now = _start_time(pid)
    return started is None or now is None or now == started


class StoreLock:
    """Exclusive lock of one store (a context manager)."""

    def __init__(self, store: Path):
        self.store = Path(store)
        self.path = lock_path(self.store)
        self.held = False
        self._made: list[Path] = []  # folders made for the lock, removed again if left empty
        self._token = {"host": socket.gethostname(), "pid": os.getpid(),
                       "process_start": _start_time(os.getpid()),
                       "since": time.strftime("%Y-%m-%d %H:%M:%S %Z")}

    def _describe(self, holder: dict) -> str:
        return (f"the driver on host {holder.get('host', '?')} with PID {holder.get('pid', '?')} "
                f"(since {holder.get('since', '?')})")

    def _read(self) -> dict | None:
        try:
            return json.loads(self.path.read_text() or "{}")
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}  # being written, or damaged: treated as held by an unknown driver

    def acquire(self) -> StoreLock:
        """Take the lock, or raise :class:`StoreLockedError` naming the holder."""
        missing = [p for p in [self.path.parent, *self.path.parent.parents] if not p.exists()]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._made = missing
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._read()
                if holder is None:
                    continue  # released meanwhile: try again
                same_host = holder.get("host") == self._token["host"]
                if same_host and isinstance(holder.get("pid"), int) and not _alive(
                        holder["pid"], holder.get("process_start")):
                    log.warning("removing the stale lock %s of %s: that process is gone",
                                self.path, self._describe(holder))
                    self.path.unlink(missing_ok=True)
                    continue
                how = ("wait for it to finish, or stop it" if same_host else
                       f"wait for it to finish; if it is gone, delete {self.path}")
                raise StoreLockedError(
                    f"the store {self.store} is in use by {self._describe(holder)}; {how}")
            with os.fdopen(fd, "w") as f:
                json.dump(self._token, f)
            self.held = True
            return self
        raise StoreLockedError(f"could not take the lock {self.path}; try again")

    def release(self) -> None:
        """Remove the lock if it is still ours."""
        if not self.held:
            return
        self.held = False
        holder = self._read()
        if holder and holder.get("pid") == self._token["pid"] and holder.get(
                "host") == self._token["host"]:
            self.path.unlink(missing_ok=True)
        for folder in self._made:  # innermost first
            try:
                folder.rmdir()
            except OSError:
                break  # not empty (the store was created there), or not ours to remove

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
