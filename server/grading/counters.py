"""This process's own grading counters (Prometheus), kept in the grading package.

The worker counts verdicts here; ``server.health.metrics`` (the ``/metrics`` page) only reads them
through the default registry. Keeping the counter out of ``server.health.metrics`` means the worker
never imports the page, which imports ``server.state``, which imports the worker.
"""

from __future__ import annotations

from prometheus_client import Counter

from server.grading.persistence import Claimed

GRADED = Counter(
    "ppo_grader_process_graded_total",
    "Submissions this process finished, by exercise and verdict.",
    ["exercise", "verdict"],
)


def observe_verdict(claimed: Claimed, verdict: str) -> None:
    """Count a verdict stored by this process."""
    GRADED.labels(claimed.exercise, verdict).inc()
