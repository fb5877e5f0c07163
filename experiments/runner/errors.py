"""Errors a user of the command line can fix: the CLI prints them as one line on stderr and exits
with status 2 (``--debug`` shows the traceback instead)."""

from __future__ import annotations

__all__ = ["CheckpointError", "UserError"]


class UserError(Exception):
    """An expected error with a one-line message saying what to do (a flag, a path)."""


class CheckpointError(UserError, ValueError):
    """Checkpoints that cannot be resumed (another configuration, an unreadable record, no
    valid step) or that a run would silently replace."""
