"""The one error of this package: a learner's file, notebook or cells cannot be sent as they are."""

from __future__ import annotations


class SourceError(Exception):
    """What was given cannot be sent; ``message`` is one sentence fit for the learner (the CLI
    prints it as one red line and exits with :attr:`exit_code`, the upload form shows it)."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class OverCap(SourceError):
    """What was given is over one of the caps (a notebook's size, its cells): the upload form
    answers 413 for it, as for any body over a cap."""
