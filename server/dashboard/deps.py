"""The course the dashboard's class pages show, as a dependency (``DashboardCourse``).

``?course=<slug>`` picks one of the courses the instructor teaches (admins: any) and is
remembered in a cookie (path ``/dashboard``) for the next pages; without it, the course picked
before; without that, the default course. A course asked for by name that the viewer does not
teach is a 404; a stale cookie falls back to the default course.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from server.courses.service import default_course, taught_course_named
from server.deps import SessionDep
from server.models import Course, User
from server.web.deps import WebInstructor
from server.web.errors import PageNotFound

#: Remembers the course an instructor picked, so every dashboard page shows the same class.
COURSE_COOKIE = "ppo_course"


@dataclass(frozen=True)
class ShownCourse:
    """The course a class page shows; ``picked``: named by this request's ``?course=``."""

    course: Course
    picked: bool

    def remember(self, response: Response, request: Request) -> Response:
        """Keep the course the viewer picked with ``?course=`` for the next dashboard pages."""
        if self.picked:
            response.set_cookie(COURSE_COOKIE, self.course.slug, httponly=True, samesite="strict", path="/dashboard",
                                secure=request.url.scheme == "https")
        return response


def shown_course(request: Request, session: Session, user: User) -> ShownCourse:
    """``?course=``, else the course picked before, else the default; ``PageNotFound`` for a
    course asked for by name that ``user`` does not teach."""
    asked = request.query_params.get("course")
    slug = asked or request.cookies.get(COURSE_COOKIE)
    course = taught_course_named(session, user, slug) if slug else None
    if course is not None:
        return ShownCourse(course, picked=bool(asked))
    if asked:
        raise PageNotFound(user, "No course by that name that you teach.")
    return ShownCourse(default_course(session), picked=False)


def get_dashboard_course(request: Request, session: SessionDep, user: WebInstructor) -> ShownCourse:
    """A logged-in instructor's course for the class pages (the login form or a 404 otherwise)."""
    return shown_course(request, session, user)


DashboardCourse = Annotated[ShownCourse, Depends(get_dashboard_course)]
