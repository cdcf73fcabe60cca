"""Addresses of the site's pages, built in one place so every link (the shell's header, the board's
rows, the dashboard's tables) agrees with the routes the domains declare."""

from __future__ import annotations

from urllib.parse import quote, urlencode

DASHBOARD = "/dashboard"
LEARNERS = "/dashboard/learners"
#: The course page's staff form (``server.dashboard.staff``): add or remove a TA.
STAFF_FORM = "/dashboard/staff"
#: A course's regrade sets (``server.dashboard.regrades``).
REGRADES = "/dashboard/regrades"


def in_course(path: str, course: str | None, **params: object) -> str:
    """``path`` with its query: the course first (so a shared or bookmarked link shows the same
    class), then ``params`` that are not None."""
    query: dict[str, object] = {"course": course} if course is not None else {}
    query.update({k: v for k, v in params.items() if v is not None})
    return path + ("?" + urlencode(query) if query else "")


def exercise_url(slug: str, course: str | None = None) -> str:
    """The exercise page, in one course."""
    return in_course(f"/dashboard/exercises/{quote(slug, safe='')}", course)


def mistake_url(slug: str, mistake: str, course: str | None = None) -> str:
    """The learners who hit ``mistake`` (its id; for results stored before ids, its title) in ``slug``."""
    return in_course(f"/dashboard/exercises/{quote(slug, safe='')}/mistake", course, mistake=mistake)


def learner_url(name: str, course: str | None = None, page: int | None = None) -> str:
    """One learner's page (by login), in one course."""
    return in_course(f"{LEARNERS}/{quote(name, safe='')}", course, page=page)


def learners_url(course: str | None = None, page: int | None = None) -> str:
    """The course's learner list."""
    return in_course(LEARNERS, course, page=page)


def submission_url(submission_id: int) -> str:
    """One submission's page."""
    return f"/dashboard/submissions/{int(submission_id)}"


def starter_url(slug: str, suffix: str, course: str | None = None) -> str:
    """An exercise's starter to download (``suffix`` ``.py`` or ``.ipynb``), at the version the course serves."""
    return in_course(f"/dashboard/starter/{quote(slug, safe='')}{suffix}", course)


def regrade_url(set_id: int, course: str | None = None, **params: object) -> str:
    """One regrade set's page (its diff and forms), in one course."""
    return in_course(f"{REGRADES}/{int(set_id)}", course, **params)
