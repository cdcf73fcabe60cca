"""The course the dashboard's class pages show, as a dependency (``DashboardCourse``).

``?course=<slug>`` picks one of the courses the instructor teaches (admins: any) and is
remembered in a cookie (path ``/dashboard``) for the next pages; without it, the course picked
before; without that, the most recent course they teach (so after logging in an instructor
lands on their newest course, not the empty default one). Every link a page draws carries
``?course=``, so a shared or bookmarked link shows the same class. A course asked for by name
that the viewer does not teach is a 404; a stale cookie falls back to the most recent course.

A learner's pages (``learner_course``) show one of their own courses: ``?course=``, else the
most recent one they are in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from server.courses.service import courses_of, default_course, taught_course_ids, taught_course_named
from server.deps import SessionDep
from server.models import DEFAULT_COURSE_ID, Course, User
from server.web.deps import WebInstructor
from server.web.errors import PageNotFound

#: Remembers the course an instructor picked, so every dashboard page shows the same class.
COURSE_COOKIE = "ppo_course"


@dataclass(frozen=True)
class PageCourse:
    """The course a staff page is about (its page course); ``picked``: named by this request's ``?course=``."""

    course: Course
    picked: bool

    def remember(self, response: Response, request: Request) -> Response:
        """Keep the course the viewer picked with ``?course=`` for the next dashboard pages."""
        if self.picked:
            response.set_cookie(
                COURSE_COOKIE,
                self.course.slug,
                httponly=True,
                samesite="strict",
                path="/dashboard",
                secure=request.url.scheme == "https",
            )
        return response


def pick_page_course(request: Request, session: Session, user: User) -> PageCourse:
    """``?course=``, else the course picked before, else the default; ``PageNotFound`` for a
    course asked for by name that ``user`` does not teach."""
    asked = request.query_params.get("course")
    slug = asked or request.cookies.get(COURSE_COOKIE)
    course = taught_course_named(session, user, slug) if slug else None
    if course is not None:
        return PageCourse(course, picked=bool(asked))
    if asked:
        raise PageNotFound(user, "No course by that name that you teach.")
    return PageCourse(most_recent_course(session, user), picked=False)


def most_recent_course(session: Session, user: User) -> Course:
    """The newest course ``user`` teaches (admins: the newest course), else the default course."""
    taught = taught_course_ids(session, user)
    query = select(Course).where(Course.id != DEFAULT_COURSE_ID).order_by(Course.created_at.desc(), Course.id.desc())
    if taught is not None:
        query = query.where(Course.id.in_(taught))
    return session.scalars(query.limit(1)).first() or default_course(session)


def learner_course(request: Request, session: Session, viewer: User, owner: User) -> Course:
    """The course a learner's page shows: ``?course=`` (one ``owner`` is in and ``viewer`` may
    read), else the most recent of ``owner``'s courses that ``viewer`` may read (their own,
    or one the instructor teaches); ``PageNotFound`` when there is none."""
    asked = request.query_params.get("course")
    mine = [course for course, _role in courses_of(session, owner)]
    taught = None if viewer.id == owner.id else taught_course_ids(session, viewer)
    visible = [c for c in mine if taught is None or c.id in taught]
    if asked:
        found = next((c for c in visible if c.slug == asked[:64]), None)
        if found is None:
            raise PageNotFound(viewer, "No course by that name here.")
        return found
    if not visible:
        raise PageNotFound(viewer)
    return max(visible, key=lambda c: (c.id != DEFAULT_COURSE_ID, c.created_at, c.id))


def get_dashboard_course(request: Request, session: SessionDep, user: WebInstructor) -> PageCourse:
    """A logged-in instructor's course for the class pages (the login form or a 404 otherwise)."""
    return pick_page_course(request, session, user)


DashboardCourse = Annotated[PageCourse, Depends(get_dashboard_course)]
