"""Structured logs: one JSON object per line, with the submission id on every line a job
writes (``submission_context``), whichever thread or queue runs the job.

``configure_logging(json_lines=True)`` is called by ``ppo-grader serve`` and
``ppo-grader worker`` (``PPO_GRADER_LOG_FORMAT=text`` gives the old human format).
"""

from __future__ import annotations

import contextvars
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

_submission_id: contextvars.ContextVar[int | None] = contextvars.ContextVar("submission_id", default=None)


@contextmanager
def submission_context(submission_id: int) -> Iterator[None]:
    """Every log line written inside this block (same thread or task) carries the id."""
    token = _submission_id.set(int(submission_id))
    try:
        yield
    finally:
        _submission_id.reset(token)


class SubmissionIdFilter(logging.Filter):
    """Adds ``record.submission_id`` (None outside a job) so every formatter can use it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "submission_id", None) is None:
            record.submission_id = _submission_id.get()
        return True


#: A form token in an address (``?csrf=...``): the upload form's token travels there, since
#: the body is read only once the sender is known; it is a credential, never logged.
_FORM_TOKEN = re.compile(r"(\bcsrf=)[^&\s\"']*")


def redact(text: str) -> str:
    """``text`` with any form token in it (``csrf=...``) replaced by ``csrf=[redacted]``."""
    return _FORM_TOKEN.sub(r"\1[redacted]", text) if "csrf=" in text else text


class RedactFormTokenFilter(logging.Filter):
    """Cuts form tokens out of every line (uvicorn's access log writes each request's address,
    query included), in its message and in its arguments, before any formatter sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: redact(v) if isinstance(v, str) else v for k, v in record.args.items()}
        return True


_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "submission_id"}


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "msg", "submission_id", "pid", ...extra, "exc"}``."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "submission_id": getattr(record, "submission_id", None),
            "pid": record.process,
        }
        for key, value in vars(record).items():  # extra={...} fields
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(json_lines: bool | None = None, level: int = logging.INFO) -> None:
    """Route every logger (ours, uvicorn's, procrastinate's) to stderr in one format."""
    if json_lines is None:
        json_lines = os.environ.get("PPO_GRADER_LOG_FORMAT", "json").lower() != "text"
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(SubmissionIdFilter())
    handler.addFilter(RedactFormTokenFilter())
    handler.setFormatter(
        JsonFormatter()
        if json_lines
        else logging.Formatter("%(levelname)s:     %(name)s: [submission %(submission_id)s] %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
