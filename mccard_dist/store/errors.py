"""The store's refusals that are not about versions: a path holding another grid or no store
(:class:`StoreMismatchError`), and a lost or damaged chunk (:class:`StoreDamagedError`). A leaf:
every module of the store may raise them."""

from __future__ import annotations

from ..errors import UsageError

__all__ = ["StoreDamagedError", "StoreMismatchError"]


class StoreMismatchError(ValueError, UsageError):
    """The store at the path was written by a different grid (or is not a results store)."""


class StoreDamagedError(UsageError):
    """A chunk of the store is lost or damaged (a resume repairs it); ``detail``: what is wrong
    with the chunk, when one chunk is meant."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail
