"""Wire types for health."""

from __future__ import annotations

from pydantic import BaseModel


class QueueDepth(BaseModel):
    """How many submissions wait and how many are being graded."""

    queued: int
    running: int


class Health(BaseModel):
    """``GET /health``."""

    status: str
    version: str
    queue: QueueDepth
    workers: int
