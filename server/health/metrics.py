"""Prometheus metrics.

Two sources, one page (``GET /metrics`` on the API):

* read from the database at scrape time, so they are right however many worker processes
  run on however many machines: ``ppo_grader_queue_depth{queue}``,
  ``ppo_grader_jobs_running``, ``ppo_grader_workers`` and the histograms
  ``ppo_grader_grading_seconds`` (claim to verdict) and
  ``ppo_grader_submit_to_verdict_seconds``, both by ``exercise`` and ``verdict``. The
  histograms are cumulative over the stored submissions (they never go down while rows
  are kept), computed with one grouped query.
* this process's own counters (``ppo_grader_process_graded_total``, kept in
  ``server.grading.counters`` so the worker never imports this page; the
  Python/process collectors). A procrastinate worker exposes its own with
  ``ppo-grader worker --metrics-port``.

The page is not public: with ``PPO_GRADER_METRICS_TOKEN`` set it wants that token as a bearer
token; without it, it answers loopback clients only.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import case, func, literal_column, select
from sqlalchemy.orm import Session

from server.deps import SettingsDep
from server.errors import NotAllowed, NotAuthenticated
from server.models import Status, Submission
from server.state import AppState

BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


def _seconds_between(dialect: str, start: Any, end: Any) -> Any:
    if dialect == "postgresql":
        return func.extract("epoch", end - start)
    return (func.julianday(end) - func.julianday(start)) * literal_column("86400.0")


def latency_histograms(session: Session) -> list[HistogramMetricFamily]:
    """Both latency histograms from the stored submissions, one grouped query."""
    dialect = session.get_bind().dialect.name
    spans = {
        "ppo_grader_grading_seconds": _seconds_between(dialect, Submission.started_at, Submission.finished_at),
        "ppo_grader_submit_to_verdict_seconds": _seconds_between(
            dialect, Submission.created_at, Submission.finished_at
        ),
    }
    columns: list[Any] = [Submission.exercise, Submission.verdict, func.count()]
    for span in spans.values():
        columns.append(func.coalesce(func.sum(span), 0.0))
        columns.extend(func.sum(case((span <= bound, 1), else_=0)) for bound in BUCKETS)
    rows = session.execute(
        select(*columns)
        .where(
            Submission.status == Status.DONE, Submission.started_at.is_not(None), Submission.finished_at.is_not(None)
        )
        .group_by(Submission.exercise, Submission.verdict)
    ).all()
    families = {
        "ppo_grader_grading_seconds": HistogramMetricFamily(
            "ppo_grader_grading_seconds", "Claim to stored verdict, seconds.", labels=["exercise", "verdict"]
        ),
        "ppo_grader_submit_to_verdict_seconds": HistogramMetricFamily(
            "ppo_grader_submit_to_verdict_seconds",
            "Submission accepted to stored verdict, seconds.",
            labels=["exercise", "verdict"],
        ),
    }
    width = 1 + len(BUCKETS)
    for row in rows:
        exercise, verdict, count = row[0], row[1] or "none", int(row[2])
        for index, name in enumerate(spans):
            values = row[3 + index * width : 3 + (index + 1) * width]
            total, cumulative = float(values[0] or 0), [int(v or 0) for v in values[1:]]
            buckets = [(repr(float(b)), c) for b, c in zip(BUCKETS, cumulative, strict=True)] + [("+Inf", count)]
            families[name].add_metric([exercise, verdict], buckets, total)
    return list(families.values())


class DatabaseCollector(Collector):
    """Queue depth, running jobs, live workers and latencies, read at scrape time."""

    def __init__(self, state: AppState) -> None:
        self._state = state

    def collect(self) -> Iterator[Any]:
        state = self._state
        with state.session_factory() as session:
            depth = GaugeMetricFamily("ppo_grader_queue_depth", "Jobs waiting, per queue.", labels=["queue"])
            for queue, count in state.queue.depth(session).items():
                depth.add_metric([queue], count)
            yield depth
            running = session.scalar(
                select(func.count()).select_from(Submission).where(Submission.status == Status.RUNNING)
            )
            yield GaugeMetricFamily("ppo_grader_jobs_running", "Submissions being graded now.", value=running or 0)
            yield GaugeMetricFamily(
                "ppo_grader_workers",
                "Live grading workers (threads in-process; worker processes with a fresh heartbeat).",
                value=state.workers.alive,
            )
            yield GaugeMetricFamily(
                "ppo_grader_long_polls_waiting",
                "Long polls (GET /submissions/{id}?wait=S) waiting for a verdict in this API process.",
                value=state.announcer.waiting(),
            )
            yield from latency_histograms(session)


router = APIRouter(tags=["metrics"])


#: Clients that may read /metrics when no token is configured.
_LOOPBACK = frozenset({"127.0.0.1", "::1"})


def require_metrics_access(request: Request, token: str | None) -> None:
    """The configured bearer token, compared in constant time; without one, a loopback client."""
    if token is not None:
        given = request.headers.get("authorization", "").encode()
        if not hmac.compare_digest(given, f"Bearer {token}".encode()):
            raise NotAuthenticated("/metrics needs Authorization: Bearer <PPO_GRADER_METRICS_TOKEN>.")
        return
    if request.client is None or request.client.host not in _LOOPBACK:
        raise NotAllowed(
            "/metrics answers loopback clients only; set PPO_GRADER_METRICS_TOKEN to read it from elsewhere."
        )


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request, settings: SettingsDep) -> Response:
    """Prometheus text format: the database view plus this process's own collectors."""
    require_metrics_access(request, settings.METRICS_TOKEN.get_secret_value() if settings.METRICS_TOKEN else None)
    state: AppState = request.app.state.grader
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector(state))
    body = generate_latest(registry) + generate_latest(REGISTRY)
    return Response(body, media_type=CONTENT_TYPE_LATEST)
