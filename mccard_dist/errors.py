"""Errors that mean "the input needs changing", not "the software is wrong".

The command-line tools print their message (one or two lines naming what to change) without a
traceback; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

__all__ = ["ClusterError", "StoreAccessError", "UsageError"]


class UsageError(Exception):
    """Input the user can fix; the message says what to change."""


class ClusterError(UsageError):
    """The configured cluster cannot be reached or started (no scheduler, no batch system)."""


class StoreAccessError(UsageError):
    """The store's location cannot be written (or read)."""
