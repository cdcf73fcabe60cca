"""Addresses of the site's pages, built in one place so every link (the shell's header, the board's
rows, the dashboard's tables) agrees with the routes the domains declare."""

from __future__ import annotations

from urllib.parse import quote, urlencode

DASHBOARD = "/dashboard"
LEARNERS = "/dashboard/learners"


def exercise_url(slug: str) -> str:
    """The exercise page."""
    return f"/dashboard/exercises/{quote(slug, safe='')}"


def misconception_url(slug: str, mistake: str) -> str:
    """The learners who hit ``mistake`` (its id; for results stored before ids, its title) in ``slug``."""
    return f"{exercise_url(slug)}/misconception?{urlencode({'mistake': mistake})}"


def learner_url(name: str) -> str:
    """One learner's page (by login)."""
    return f"{LEARNERS}/{quote(name, safe='')}"


def submission_url(submission_id: int) -> str:
    """One submission's page."""
    return f"/dashboard/submissions/{int(submission_id)}"


def regrade_url(set_id: int) -> str:
    """One regrade set's diff (instructors)."""
    return f"/dashboard/regrades/{int(set_id)}"
