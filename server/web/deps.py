"""The HTML pages' authorization, as named dependency types (the JSON API's are in ``server.deps``).

A page asks for who may see it, and never checks a result's type::

    def learners_page(user: WebInstructor, ...) -> Response: ...

- ``WebUser``: the owner of a live web session (any role), else ``LoginRequired``: the login form,
  coming back to this page afterwards (``server.web.errors``).
- ``WebSender``: the same, looked up in a database session closed before the route runs (the
  upload form, whose body may arrive slowly).
- ``WebInstructorSender``: ``WebSender`` for a teacher (a learner gets ``PageNotFound``): the bulk
  CSV forms of ``server.dashboard.extensions``.
- ``WebInstructor``: the same, if they teach (instructor and admin accounts, course staff from an LMS); a learner gets
  ``PageNotFound``, the same 404 as for another learner's page (nothing says the page exists).

Every request re-reads the session's token row (``server.web.session.user_for_cookie``), so a
revoked or rotated token ends its web sessions at once.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from server.deps import SessionDep, StateDep
from server.models import User
from server.web.errors import LoginRequired, PageNotFound
from server.web.responses import teaches
from server.web.session import COOKIE_NAME, user_for_cookie


def get_web_user(request: Request, session: SessionDep, state: StateDep) -> User:
    """The user (any role) the session cookie belongs to while its token is live and the
    session not logged out; else ``LoginRequired``."""
    cookie = request.cookies.get(COOKIE_NAME)
    user = user_for_cookie(session, cookie, state.settings.secret_bytes)
    if user is None:
        raise LoginRequired(session_ended=bool(cookie))
    return user


WebUser = Annotated[User, Depends(get_web_user)]


def get_web_sender(request: Request, state: StateDep) -> User:
    """``get_web_user``, in a database session of its own that is closed before the route
    runs: for a route that then waits on the network (the upload form's body), so a slow
    sender holds no database connection. The user comes back detached (its columns loaded)."""
    with state.session_factory() as session:
        user = get_web_user(request, session, state)
        session.expunge(user)
    return user


#: The live session's user for a route that must not hold a database session (``get_web_sender``).
WebSender = Annotated[User, Depends(get_web_sender)]


def get_web_instructor_sender(request: Request, state: StateDep) -> User:
    """``get_web_sender`` for a page only its teachers may post to (the bulk CSV forms):
    ``PageNotFound`` for a learner, decided in the same closed session, before the body is read."""
    with state.session_factory() as session:
        user = get_web_user(request, session, state)
        if not teaches(session, user):
            raise PageNotFound(user)
        session.expunge(user)
    return user


#: ``WebInstructor`` for a route that waits on a large body holding no database session.
WebInstructorSender = Annotated[User, Depends(get_web_instructor_sender)]


def get_web_instructor(user: WebUser, session: SessionDep) -> User:
    """The logged-in user if they teach: an instructor or admin account, or the instructor of
    a course (LMS staff); ``PageNotFound`` for a learner. Each page then shows only the
    courses they teach (``server.courses.page_course.pick_page_course``)."""
    if not teaches(session, user):
        raise PageNotFound(user)
    return user


WebInstructor = Annotated[User, Depends(get_web_instructor)]
