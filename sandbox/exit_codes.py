"""Every exit code a job's child process can end with, in one place.

The harness (inside the jail) ends with one of the first four; the host (the fork that sets up
the jail around it) adds the rest. A code at or above ``ABORTED`` means "the grader's fault" only
while the setup byte has not been sent: after it, any exit is the learner's
(:mod:`sandbox.verdicts` maps codes and signals to verdicts).
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """The child's exit status, as both sides of the jail read it."""

    OK = 0
    SYNTAX = 10
    IMPORT = 11
    MISSING = 12
    ABORTED = 20
    OUT_OF_MEMORY = 21
    HARNESS_FAILED = 22
    SANDBOX_SETUP = 23
