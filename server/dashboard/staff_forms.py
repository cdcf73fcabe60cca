"""The check every staff form of the dashboard makes before it acts: sent from this site's page
(Origin, and the form token bound to the session cookie), about a course the sender teaches."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.orm import Session

from server.courses.service import taught_course_named
from server.models import Course, User
from server.web.errors import PageError, PageNotFound
from server.web.responses import same_origin
from server.web.session import COOKIE_NAME, form_token_matches


def staff_form_course(
    request: Request, fields: dict[str, str], session: Session, secret: bytes, user: User, page_name: str
) -> Course:
    """The course a staff form names, once the form is known to come from this site's
    ``page_name`` page; a 403 page (reload ``page_name``) or a 404 page otherwise."""
    if not same_origin(request) or not form_token_matches(fields.get("csrf"), request.cookies.get(COOKIE_NAME), secret):
        raise PageError(
            403,
            "Form refused",
            "The form was not sent from this site's page (or it is out of date): "
            f"reload the {page_name} page and try again.",
            user,
        )
    slug = fields.get("course") or ""
    # A NUL is no slug: ``taught_course_named`` answers None, the same 404 as an unknown course.
    course = taught_course_named(session, user, slug)
    if course is None:
        raise PageNotFound(user, "No course by that name that you teach.")
    return course
